//! Every screen looked at (issue 26 §5): one window session goes through each screen and state a
//! new user meets — the empty chat, a chat with a tool call waiting for approval and one done,
//! the servers list and a server's form, the import panel, settings, models, the catalog, the
//! shortcuts sheet, the conversations browser with search results — at the default window size,
//! at the minimum one and in the dark theme, and writes a screenshot of each (`target/screenshots/screen-*.png`,
//! looked at by a person). What a screenshot cannot show a person is checked here: nothing of a
//! screen is wider than the window (no horizontal scrolling), and a server card's buttons stay
//! on one line at the default size.

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

async fn shot(c: &fantoccini::Client, size: &str, name: &str) {
    let over = overflowing(c).await;
    assert_eq!(over, json!([]), "{name} at {size}: wider than the window");
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
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "catalogRegistry": "http://127.0.0.1:9"}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 3).await;

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
        shot(&c, size, "empty-chat").await;

        send(&c, "what is 2+40?").await;
        wait_answer(&c, "Done:").await;
        send(&c, "save a note").await;
        wait_css(&c, ".tool-card.awaiting .approval").await;
        shot(&c, size, "chat-approval").await;
        click(&c, ".approval [data-action='deny']").await;
        wait_until(&c, "!document.querySelector('.tool-card.awaiting')").await;

        click(&c, "#servers-button").await;
        wait_css(&c, "#servers-list .server").await;
        shot(&c, size, "servers").await;
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
        shot(&c, size, "server-form").await;
        close_dialogs(&c).await;
        click(&c, "#servers-button").await;
        click(&c, "#server-import").await;
        wait_css(&c, "#import-panel:not([hidden])").await;
        shot(&c, size, "import").await;
        close_dialogs(&c).await;

        click(&c, "#settings-button").await;
        wait_css(&c, "#settings-dialog[open]").await;
        shot(&c, size, "settings").await;
        close_dialogs(&c).await;

        click(&c, "#models-button").await;
        wait_css(&c, "#models-dialog[open]").await;
        shot(&c, size, "models").await;
        close_dialogs(&c).await;

        click(&c, "#catalog-button").await;
        wait_until(
            &c,
            "document.querySelector('#catalog-status').textContent.includes('cannot be reached')",
        )
        .await;
        shot(&c, size, "catalog").await;
        close_dialogs(&c).await;

        click(&c, "#shortcuts-button").await;
        wait_css(&c, "#shortcuts-dialog[open]").await;
        shot(&c, size, "shortcuts").await;
        close_dialogs(&c).await;

        click(&c, "#library-toggle").await;
        let s = wait_css(&c, "#search").await;
        s.clear().await.unwrap();
        s.send_keys("note").await.unwrap();
        wait_css(&c, "#conversation-list .hit").await;
        shot(&c, size, "library-search").await;
        s.clear().await.unwrap();
        click(&c, "#library-toggle").await;
    }
    c.close().await.unwrap();
}
