//! Accessibility, measured: axe-core (npm, tests/e2e/package.json) injected into the real window
//! through WebDriver (its source as a script: the window's CSP allows no script from elsewhere)
//! audits every screen and state, in the light and the dark theme, at the default window size
//! and the smallest (light); each state's screenshot is written for a person to look at. A serious or critical
//! violation fails the test, listed with the elements it found.

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

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
pub async fn audit(c: &fantoccini::Client, state: &str) -> Vec<String> {
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

/// The fake model: "note" → files__write_file (asks first); "time" → the app example's tool;
/// anything else → a short reply with a code block and a link.
fn script(fake: &FakeOllama) {
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let text = last["content"].as_str().unwrap_or_default().to_string();
        if last["role"] == "tool" {
            return Stream::new().text("Done: ").text(&text).done().reply();
        }
        if text.contains("note") {
            return Stream::new()
                .tool_call("w", "files__write_file", json!({"path": "n.txt", "content": "hi"}))
                .done()
                .reply();
        }
        if text.contains("time") {
            return Stream::new()
                .tool_call("t", "basic-vanillajs__get-time", json!({}))
                .done()
                .reply();
        }
        Stream::new()
            .text("Here is **Markdown**, `code`, a [link](https://example.com) and:\n\n```\nlet x = 1;\n```\n")
            .done()
            .reply()
    });
}

async fn set_theme(c: &fantoccini::Client, theme: &str) {
    click(c, "#settings-button").await;
    wait_css(c, "#settings-dialog[open]").await;
    c.execute(
        "const s = document.querySelector('#set-theme'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));",
        vec![json!(theme)],
    )
    .await
    .unwrap();
    click(c, "#settings-cancel").await;
}

/// Audits the page as it is now, and writes its screenshot as `screen-<pass>-<state>.png` (the
/// screenshot pass of every state, looked at by a person: README, Screens).
async fn look(c: &fantoccini::Client, pass: &str, state: &str) -> Vec<String> {
    let file: String = format!("screen-{pass}-{state}.png")
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '.' || ch == '-' {
                ch
            } else {
                '-'
            }
        })
        .collect();
    screenshot(c, &file).await;
    audit(c, &format!("{pass}: {state}")).await
}

/// Opens a dialog by clicking `button`, looks at it, closes it with Esc.
async fn audit_dialog(
    c: &fantoccini::Client,
    button: &str,
    dialog: &str,
    pass: &str,
    state: &str,
) -> Vec<String> {
    click(c, button).await;
    wait_css(c, &format!("{dialog}[open]")).await;
    let found = look(c, pass, state).await;
    c.active_element()
        .await
        .unwrap()
        .send_keys("\u{E00C}")
        .await
        .unwrap();
    wait_until(c, &format!("!document.querySelector('{dialog}').open")).await;
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn every_screen_has_no_serious_accessibility_violation_in_either_theme() {
    let fake = FakeOllama::start().await;
    script(&fake);
    let mut servers: Vec<(String, switchboard_engine::mcp::ServerConfig)> =
        switchboard_engine::mcp::McpConfig::default_builtin()
            .servers
            .into_iter()
            .collect();
    let app = crate::support::app_server("basic-vanillajs");
    servers.push((
        "basic-vanillajs".into(),
        switchboard_engine::mcp::ServerConfig::new("node", &[app.to_str().unwrap(), "--stdio"]),
    ));
    let home = home_with_servers(
        json!({"llmUrl": fake.url, "model": crate::support::fake_ollama::MODEL}),
        servers
            .iter()
            .map(|(n, s)| (n.as_str(), s.clone()))
            .collect(),
    );
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 4).await;
    let mut found = Vec::new();

    // light and dark at the default size (1100×760), and light at the smallest (640×420)
    for (theme, small) in [("light", false), ("light", true), ("dark", false)] {
        set_theme(&c, theme).await;
        if small {
            x_move_resize(0, 0, 640, 420);
        } else {
            x_move_resize(0, 0, 1100, 760);
        }
        let pass = format!("{theme}-{}", if small { "smallest" } else { "default" });
        let p = pass.as_str();
        // the empty chat
        click(&c, "#new-chat").await;
        found.extend(look(&c, p, "empty chat").await);

        // a chat with a tool card, an MCP App on its card, and an approval waiting
        send(&c, "what time is it").await;
        wait_css(&c, ".tool-card.awaiting .approval").await;
        found.extend(look(&c, p, "approval waiting").await);
        click(&c, ".tool-card.awaiting [data-action='allowOnce']").await;
        wait_css(&c, ".tool-card.ok iframe.app-frame").await;
        wait_until(&c, "!document.querySelector('#send').hidden").await;
        found.extend(look(&c, p, "MCP App card").await);
        send(&c, "save a note").await;
        wait_css(&c, ".tool-card.awaiting .approval").await;
        found.extend(look(&c, p, "tool cards and a destructive approval waiting").await);
        click(&c, ".tool-card.awaiting [data-action='deny']").await;
        wait_until(&c, "!document.querySelector('#send').hidden").await;
        send(&c, "and a reply with Markdown").await;
        wait_until(&c, "!document.querySelector('#send').hidden && document.querySelectorAll('.msg.assistant.complete').length >= 3").await;
        found.extend(look(&c, p, "a finished chat").await);

        // the dialogs
        found.extend(audit_dialog(&c, "#settings-button", "#settings-dialog", p, "settings").await);
        found.extend(
            audit_dialog(&c, "#shortcuts-button", "#shortcuts-dialog", p, "shortcuts").await,
        );
        found.extend(
            audit_dialog(
                &c,
                "#chat-settings-button",
                "#chat-settings-dialog",
                p,
                "chat settings",
            )
            .await,
        );
        found.extend(audit_dialog(&c, "#debug-button", "#debug-dialog", p, "debug").await);
        found.extend(audit_dialog(&c, "#models-button", "#models-dialog", p, "models").await);
        click(&c, "#servers-button").await;
        wait_css(&c, "#servers-dialog[open] .server").await;
        found.extend(look(&c, p, "servers").await);
        click(&c, ".server[data-name='files'] [data-act='edit']").await;
        wait_css(&c, "#server-form:not([hidden])").await;
        found.extend(look(&c, p, "a server's detail").await);
        click(&c, "#server-cancel").await;
        click(&c, "#server-import").await;
        wait_css(&c, "#import-panel:not([hidden])").await;
        found.extend(look(&c, p, "import").await);
        click(&c, "#import-cancel").await;
        click(&c, "#servers-close").await;

        // the model picker, the tools panel
        c.execute("document.querySelector('#model-select').focus();", vec![])
            .await
            .unwrap();
        found.extend(look(&c, p, "model picker").await);
        click(&c, "#tools-button").await;
        wait_css(&c, "#tools-panel:not([hidden])").await;
        found.extend(look(&c, p, "tools panel").await);
        click(&c, "#tools-button").await;

        // the conversations browser, and search results
        click(&c, "#library-toggle").await;
        wait_until(&c, "document.body.classList.contains('library')").await;
        found.extend(look(&c, p, "conversations browser").await);
        click(&c, "#library-toggle").await;
        let search = wait_css(&c, "#search").await;
        search.send_keys("note").await.unwrap();
        wait_css(&c, ".hit").await;
        found.extend(look(&c, p, "search results").await);
        search.send_keys("\u{E00C}").await.unwrap();
    }
    assert!(
        found.is_empty(),
        "{} serious or critical accessibility violations:\n{}",
        found.len(),
        found.join("\n")
    );
}
