//! Every screen looked at and audited (issue 26 §2, §5): one window session goes through each
//! screen and state a new user meets — the empty chat, a chat with a tool call waiting for
//! approval and one done, an MCP App on its card (the npm example server-basic-vanillajs), the
//! chat's tools panel, the servers list and a server's form, the import panel, settings, models,
//! the catalog, the shortcuts sheet, the conversations browser and its search results — at the
//! default window size, at the minimum one and in the dark theme, and writes a screenshot of each
//! (`target/screenshots/screen-*.png`, looked at by a person). What a screenshot cannot show a
//! person is checked here: nothing of a screen is wider than the window (no horizontal
//! scrolling), a server card's buttons stay on one line at the default size, and axe-core (npm,
//! `tests/e2e/package.json`) finds no serious or critical violation of WCAG 2.2 A/AA and its best
//! practices (contrast included) in any of them.

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

/// The window's size from inside (what the page gets).
async fn set_size(c: &fantoccini::Client, w: u32, h: u32) {
    c.set_window_size(w, h).await.unwrap();
    wait_until(
        c,
        &format!(
            "Math.abs(window.outerWidth - {w}) < 40 && Math.abs(window.outerHeight - {h}) < 60"
        ),
    )
    .await;
}

/// Closes every open dialog (as Esc would, one by one).
async fn close_dialogs(c: &fantoccini::Client) {
    c.execute(
        "document.querySelectorAll('dialog[open]').forEach((d) => d.close());",
        vec![],
    )
    .await
    .unwrap();
}

/// Nothing on the page, nor in an open dialog, is wider than its box (no sideways scrolling);
/// the offending elements, when there are.
async fn overflowing(c: &fantoccini::Client) -> Value {
    c.execute(
        r#"const out = [];
           const roots = [document.documentElement, ...document.querySelectorAll('dialog[open]')];
           for (const r of roots) {
             if (r.scrollWidth > r.clientWidth + 1) {
               out.push(`${r.tagName}#${r.id} ${r.scrollWidth} > ${r.clientWidth}`);
               // the outermost elements that stick out, to name in the failure
               const right = r.getBoundingClientRect().left + r.clientWidth;
               for (const e of r.querySelectorAll('*')) {
                 const b = e.getBoundingClientRect();
                 if (b.width && b.right > right + 1 && !(e.parentElement && e.parentElement.getBoundingClientRect().right > right + 1)) {
                   out.push(`${e.tagName}.${e.className} ${Math.round(b.right)}`);
                 }
               }
             }
           }
           return out;"#,
        vec![],
    )
    .await
    .unwrap()
}

/// axe-core's source, installed by `make test-deps`.
fn axe_source() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `make test-deps` (scripts/install-deps.sh --test) to install axe-core",
            p.display()
        )
    })
}

/// Runs axe over the page as it is now; the serious and critical violations, a line each
/// (rule, impact, what it says, the elements), prefixed with `state`.
async fn audit(c: &fantoccini::Client, state: &str) -> Vec<String> {
    let loaded = c
        .execute("return typeof window.axe;", vec![])
        .await
        .unwrap();
    if loaded != json!("object") {
        let src = axe_source();
        c.execute(&format!("{src}\n;return typeof window.axe;"), vec![])
            .await
            .unwrap();
    }
    // two frames, so what was just shown is laid out (and its transitions done)
    let v = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             requestAnimationFrame(() => requestAnimationFrame(() => {
               window.axe.run(document, {
                 iframes: false, // an app's page is its server's, audited by its authors
                 runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
                 resultTypes: ['violations'],
               }).then((r) => done(r.violations
                   .filter((v) => v.impact === 'serious' || v.impact === 'critical')
                   .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                     nodes: v.nodes.slice(0, 6).map((n) => n.target.join(' ') + (n.failureSummary ? ' — ' + n.failureSummary.replace(/\\s+/g, ' ') : '')) }))))
                 .catch((e) => done([{ id: 'axe-error', impact: 'critical', help: String(e), nodes: [] }]));
             }));",
            vec![],
        )
        .await
        .unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|v| {
            format!(
                "[{state}] {} ({}): {}\n    {}",
                v["id"].as_str().unwrap_or_default(),
                v["impact"].as_str().unwrap_or_default(),
                v["help"].as_str().unwrap_or_default(),
                v["nodes"]
                    .as_array()
                    .map(|n| n
                        .iter()
                        .map(|n| n.as_str().unwrap_or_default().to_string())
                        .collect::<Vec<_>>()
                        .join("\n    "))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// Checks the screen as it is now: nothing wider than the window (at once), and axe's serious and
/// critical violations, added to `found` (all are listed at the end); then its screenshot.
async fn shot(c: &fantoccini::Client, size: &str, name: &str, found: &mut Vec<String>) {
    let over = overflowing(c).await;
    assert_eq!(over, json!([]), "{name} at {size}: wider than the window");
    found.extend(audit(c, &format!("{size} {name}")).await);
    screenshot(c, &format!("screen-{size}-{name}.png")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn every_screen_at_the_default_and_the_minimum_size() {
    let fake = FakeOllama::start().await;
    // a sum done at once, then a file write that waits for approval
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let asked = last["content"].as_str().unwrap_or_default().to_string();
        if last["role"] == "tool" {
            return Stream::new()
                .text("Done: ")
                .text(last["content"].as_str().unwrap_or_default())
                .done()
                .reply();
        }
        if asked.contains("time") {
            return Stream::new()
                .tool_call("t1", "basic-vanillajs__get-time", json!({}))
                .done()
                .reply();
        }
        if asked.contains("save") {
            Stream::new()
                .tool_call(
                    "w1",
                    "files__write_file",
                    json!({"path": "note.txt", "content": "hello"}),
                )
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call("a1", "calculator__add", json!({"a": 2, "b": 40}))
                .done()
                .reply()
        }
    });
    // the built-in servers, and an MCP Apps example
    let builtin = switchboard_engine::mcp::McpConfig::default_builtin();
    let mut servers: Vec<(&str, switchboard_engine::mcp::ServerConfig)> = builtin
        .servers
        .iter()
        .map(|(name, config)| (name.as_str(), config.clone()))
        .collect();
    servers.push((
        "basic-vanillajs",
        crate::apps::example_server("basic-vanillajs", &[]),
    ));
    let home = home_with_servers(
        json!({"llmUrl": fake.url, "catalogRegistry": "http://127.0.0.1:9"}),
        servers,
    );
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 4).await;

    let mut found = Vec::new();
    for (size, w, h) in [
        ("default", 1100, 760),
        ("minimum", 640, 420),
        ("dark", 1100, 760),
    ] {
        set_size(&c, w, h).await;
        if size == "dark" {
            // the theme as Settings → This window sets it
            c.execute(
                "const s = document.querySelector('#set-theme'); s.value = 'dark'; s.dispatchEvent(new Event('change'));",
                vec![],
            )
            .await
            .unwrap();
            wait_until(&c, "document.documentElement.dataset.theme === 'dark'").await;
        }
        click(&c, "#new-chat").await;
        shot(&c, size, "empty-chat", &mut found).await;

        send(&c, "what is 2+40?").await;
        wait_answer(&c, "Done:").await;
        send(&c, "save a note").await;
        wait_css(&c, ".tool-card.awaiting .approval").await;
        shot(&c, size, "chat-approval", &mut found).await;
        click(&c, ".approval [data-action='deny']").await;
        wait_until(&c, "!document.querySelector('.tool-card.awaiting')").await;

        // an MCP App on its card (its call asks first)
        send(&c, "what time is it?").await;
        wait_css(&c, ".tool-card.awaiting .approval").await;
        click(&c, ".tool-card.awaiting [data-action='allowOnce']").await;
        wait_until(
            &c,
            "document.querySelector('.tool-card iframe.app-frame')?.dataset.state === 'ready'",
        )
        .await;
        // its reply, after the sum's and the denied write's
        wait_until(
            &c,
            "[...document.querySelectorAll('.msg.assistant.complete')].filter((m) => m.textContent.includes('Done:')).length === 3",
        )
        .await;
        c.execute(
            "document.querySelector('.tool-card iframe.app-frame').scrollIntoView({block: 'center'});",
            vec![],
        )
        .await
        .unwrap();
        shot(&c, size, "app-card", &mut found).await;

        click(&c, "#tools-button").await;
        wait_css(&c, "#tools-panel:not([hidden])").await;
        shot(&c, size, "tools-panel", &mut found).await;
        click(&c, "#tools-button").await;

        click(&c, "#servers-button").await;
        wait_css(&c, "#servers-list .server").await;
        shot(&c, size, "servers", &mut found).await;
        if size == "default" {
            // a card's buttons on one line (they wrapped, Delete alone on the second)
            let lines: Value = c
                .execute(
                    r#"return [...document.querySelectorAll('#servers-list .server')].map((s) => {
                         const tops = new Set([...s.querySelectorAll('.server-actions > button')]
                           .filter((b) => b.offsetParent).map((b) => Math.round(b.getBoundingClientRect().top)));
                         return tops.size;
                       });"#,
                    vec![],
                )
                .await
                .unwrap();
            assert!(
                lines
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|n| n.as_u64() <= Some(1)),
                "a server card's buttons wrap: {lines}"
            );
        }
        click(&c, "#servers-list .server [data-act='edit']").await;
        wait_css(&c, "#server-form:not([hidden])").await;
        shot(&c, size, "server-form", &mut found).await;
        close_dialogs(&c).await;
        click(&c, "#servers-button").await;
        click(&c, "#server-import").await;
        wait_css(&c, "#import-panel:not([hidden])").await;
        shot(&c, size, "import", &mut found).await;
        close_dialogs(&c).await;

        click(&c, "#settings-button").await;
        wait_css(&c, "#settings-dialog[open]").await;
        shot(&c, size, "settings", &mut found).await;
        close_dialogs(&c).await;

        click(&c, "#models-button").await;
        wait_css(&c, "#models-dialog[open]").await;
        shot(&c, size, "models", &mut found).await;
        close_dialogs(&c).await;

        click(&c, "#catalog-button").await;
        wait_until(
            &c,
            "document.querySelector('#catalog-status').textContent.includes('cannot be reached')",
        )
        .await;
        shot(&c, size, "catalog", &mut found).await;
        close_dialogs(&c).await;

        click(&c, "#shortcuts-button").await;
        wait_css(&c, "#shortcuts-dialog[open]").await;
        shot(&c, size, "shortcuts", &mut found).await;
        close_dialogs(&c).await;

        click(&c, "#library-toggle").await;
        wait_css(&c, "body.library").await;
        shot(&c, size, "library", &mut found).await;
        let s = wait_css(&c, "#search").await;
        s.clear().await.unwrap();
        s.send_keys("note").await.unwrap();
        wait_css(&c, "#conversation-list .hit").await;
        shot(&c, size, "library-search", &mut found).await;
        s.clear().await.unwrap();
        // as a person's Backspace would: the list shows every conversation again
        c.execute(
            "document.querySelector('#search').dispatchEvent(new Event('input'));",
            vec![],
        )
        .await
        .unwrap();
        wait_until(&c, "!document.querySelector('#conversation-list .hit')").await;
        click(&c, "#library-toggle").await;
    }
    c.close().await.unwrap();
    assert!(
        found.is_empty(),
        "axe-core: {} serious or critical violations\n{}",
        found.len(),
        found.join("\n")
    );
}
