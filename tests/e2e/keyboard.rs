//! Keyboard only: start a chat and send, approve and deny a tool call, open settings, add a server,
//! search conversations and open one, change the model, the shortcuts sheet, the next and
//! previous conversation; each shortcut shown on its control (tooltip, aria-keyshortcuts). Every
//! key goes to the focused element (as a keyboard does); after each step the focus is somewhere
//! visible, never lost behind a dialog, and Esc closes what it should.

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

const TAB: &str = "\u{E004}";
const SHIFT: &str = "\u{E008}";
const ENTER: &str = "\u{E007}";
const ESC: &str = "\u{E00C}";
const CTRL: &str = "\u{E009}";
const ALT: &str = "\u{E00A}";
const DOWN: &str = "\u{E015}";
const UP: &str = "\u{E013}";

/// Types `keys` as a keyboard does, into whatever has the focus (WebDriver's key actions, not
/// an element's send-keys, which types into the element it is given). Ctrl, Shift and Alt stay
/// down until the end of `keys`.
async fn press(c: &fantoccini::Client, keys: &str) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let modifiers: Vec<char> = keys
        .chars()
        .filter(|k| [CTRL, SHIFT, ALT].iter().any(|m| m.starts_with(*k)))
        .collect();
    let mut actions = KeyActions::new("keyboard".into());
    for k in keys.chars() {
        actions = actions.then(KeyAction::Down { value: k });
        if !modifiers.contains(&k) {
            actions = actions.then(KeyAction::Up { value: k });
        }
    }
    for m in modifiers.iter().rev() {
        actions = actions.then(KeyAction::Up { value: *m });
    }
    c.perform_actions(actions).await.unwrap();
}

/// What has the focus: `#id`, else `tag.class`, with `[data-action]`/`[data-act]` when it has one.
async fn focused(c: &fantoccini::Client) -> String {
    c.execute(
        "const a = document.activeElement;
         if (!a || a === document.body) return 'body';
         const act = a.dataset.action ?? a.dataset.act;
         return (a.id ? '#' + a.id : a.tagName.toLowerCase() + '.' + [...a.classList].join('.'))
           + (act ? `[${act}]` : '');",
        vec![],
    )
    .await
    .unwrap()
    .as_str()
    .unwrap()
    .to_string()
}

/// The focused element shows it has the focus (an outline or a ring), and is not hidden behind
/// an open modal dialog (it is inside the top one, when one is open).
async fn assert_focus_visible(c: &fantoccini::Client) {
    let v = c
        .execute(
            "const a = document.activeElement;
             if (!a || a === document.body) return 'nothing has the focus';
             const s = getComputedStyle(a);
             const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
             if (!ring) return 'no visible focus on ' + a.outerHTML.slice(0, 120);
             const dialogs = [...document.querySelectorAll('dialog[open]')];
             const top = dialogs[dialogs.length - 1];
             if (top && !top.contains(a)) return 'focus behind the dialog ' + top.id;
             return 'ok';",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(v, json!("ok"));
}

/// Presses Tab until the focused element matches `css`, at most `max` times; each stop's focus
/// must be visible.
async fn tab_to(c: &fantoccini::Client, css: &str, max: usize) {
    tab_on(c, TAB, css, max).await
}

/// [`tab_to`] backwards (Shift+Tab).
async fn tab_back_to(c: &fantoccini::Client, css: &str, max: usize) {
    tab_on(c, &format!("{SHIFT}{TAB}"), css, max).await
}

async fn tab_on(c: &fantoccini::Client, keys: &str, css: &str, max: usize) {
    let mut seen = Vec::new();
    for _ in 0..max {
        press(c, keys).await;
        assert_focus_visible(c).await;
        let on = c
            .execute(
                "return document.activeElement.matches(arguments[0]);",
                vec![json!(css)],
            )
            .await
            .unwrap();
        if on == json!(true) {
            return;
        }
        seen.push(focused(c).await);
    }
    panic!("Tab never reached {css}; it went through {seen:?}");
}

fn script(fake: &FakeOllama) {
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let text = last["content"].as_str().unwrap_or_default().to_string();
        if last["role"] == "tool" {
            return Stream::new().text("Done.").done().reply();
        }
        if text.contains("note") {
            return Stream::new()
                .tool_call(
                    "w",
                    "files__write_file",
                    json!({"path": "k.txt", "content": "keys"}),
                )
                .done()
                .reply();
        }
        Stream::new()
            .text(&format!("You said: {text}"))
            .done()
            .reply()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn everything_a_chat_needs_works_from_the_keyboard_alone() {
    let fake = FakeOllama::start().await;
    fake.set_models(&[crate::support::fake_ollama::MODEL, "other-model:1b"]);
    script(&fake);
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": crate::support::fake_ollama::MODEL}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 3).await;
    let note = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("files/k.txt");

    // ---- the shortcuts are shown where their controls are: tooltip and aria-keyshortcuts ----
    let shown = c
        .execute(
            "return [['#new-chat', 'Ctrl+N', 'Control+N'], ['#search', 'Ctrl+K', 'Control+K'],
                     ['#settings-button', 'Ctrl+,', 'Control+Comma'],
                     ['#shortcuts-button', 'Ctrl+/', 'Control+Slash'],
                     ['.model-picker', 'Ctrl+M', null], ['#model-select', null, 'Control+M'],
                     ['#input', null, 'Control+L'], ['#send', 'Enter', null], ['#stop', 'Esc', null]]
               .filter(([css, title, aria]) => {
                 const e = document.querySelector(css);
                 return !e || (title && !(e.title ?? '').includes(title))
                   || (aria && e.getAttribute('aria-keyshortcuts') !== aria);
               }).map(([css]) => css);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(shown, json!([]), "controls whose shortcut is not shown");

    // ---- start a chat and send: the message box has the focus from the start ----
    assert_eq!(focused(&c).await, "#input");
    press(&c, &format!("hello from the keys{ENTER}")).await;
    wait_css(&c, ".msg.assistant.complete").await;
    assert_eq!(
        focused(&c).await,
        "#input",
        "back in the message box after the reply"
    );

    // ---- approve a tool call: the question takes the focus; Tab to Allow once, Enter ----
    press(&c, &format!("save a note{ENTER}")).await;
    wait_css(&c, ".tool-card.awaiting .approval").await;
    wait_until(&c, "document.activeElement.classList.contains('approval')").await;
    assert_focus_visible(&c).await;
    // a new question ignores keys for its first moments (they were meant for the message box)
    wait_css(&c, ".approval.question:not(.fresh)").await;
    tab_to(&c, "[data-action='allowOnce']", 3).await;
    press(&c, ENTER).await;
    wait_css(&c, ".tool-card.ok").await;
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "keys");
    std::fs::remove_file(&note).unwrap();

    // ---- deny one ----
    press(&c, &format!("{CTRL}l")).await; // Ctrl+L: the message box
    assert_eq!(focused(&c).await, "#input");
    press(&c, &format!("another note{ENTER}")).await;
    wait_until(&c, "document.activeElement.classList.contains('approval')").await;
    wait_css(&c, ".tool-card.awaiting .approval.question:not(.fresh)").await;
    tab_to(&c, "[data-action='deny']", 6).await;
    press(&c, ENTER).await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.error').length === 1",
    )
    .await;
    assert!(!note.exists(), "a denied call never runs");
    wait_until(&c, "!document.querySelector('#send').hidden").await;

    // ---- settings: Ctrl+, opens them with the focus inside; Esc closes, focus comes back ----
    press(&c, &format!("{CTRL}l")).await;
    press(&c, &format!("{CTRL},")).await;
    wait_css(&c, "#settings-dialog[open]").await;
    assert_focus_visible(&c).await;
    press(&c, ESC).await;
    wait_until(&c, "!document.querySelector('#settings-dialog').open").await;
    assert_eq!(
        focused(&c).await,
        "#input",
        "the focus goes back where it was"
    );

    // ---- the shortcuts sheet: Ctrl+/ and Esc ----
    press(&c, &format!("{CTRL}/")).await;
    wait_css(&c, "#shortcuts-dialog[open]").await;
    let sheet = text_content(&c, "#shortcuts-dialog").await;
    for line in [
        "New chat",
        "Search conversations",
        "Settings",
        "Stop the reply",
        "Next conversation",
        "Go to the message box",
    ] {
        assert!(sheet.contains(line), "the sheet lists {line}: {sheet}");
    }
    assert_focus_visible(&c).await;
    press(&c, ESC).await;
    wait_until(&c, "!document.querySelector('#shortcuts-dialog').open").await;

    // ---- add a server: Tab to MCP servers, + Add server, the form, Enter saves ----
    press(&c, &format!("{CTRL}l")).await;
    tab_back_to(&c, "#servers-button", 20).await;
    press(&c, ENTER).await;
    wait_css(&c, "#servers-dialog[open]").await;
    tab_to(&c, "#server-add", 10).await;
    press(&c, ENTER).await;
    wait_css(&c, "#server-form:not([hidden])").await;
    assert_eq!(
        focused(&c).await,
        "#srv-name",
        "the form starts at its first field"
    );
    press(&c, "calc2").await;
    tab_to(&c, "#srv-command", 4).await;
    let bin = crate::support::switchboard_bin();
    press(&c, bin.to_str().unwrap()).await;
    tab_to(&c, "#srv-args", 2).await;
    press(&c, &format!("mcp-server{ENTER}calculator")).await; // Enter: a new line in the box
    tab_to(&c, "#server-save", 40).await;
    press(&c, ENTER).await;
    wait_css(&c, ".server[data-name='calc2']").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('4/4 servers')",
    )
    .await;
    assert_focus_visible(&c).await;
    press(&c, ESC).await;
    wait_until(&c, "!document.querySelector('#servers-dialog').open").await;

    // ---- search conversations and open one: Ctrl+K, type, Enter ----
    press(&c, &format!("{CTRL}n")).await;
    wait_until(
        &c,
        "document.querySelector('#chat-title').textContent === 'New chat'",
    )
    .await;
    press(&c, &format!("{CTRL}k")).await;
    assert_eq!(focused(&c).await, "#search");
    press(&c, "keys").await;
    wait_css(&c, ".hit").await;
    press(&c, ENTER).await;
    wait_until(
        &c,
        "document.querySelector('#chat-title').textContent !== 'New chat'",
    )
    .await;
    wait_css(&c, ".msg.user").await;
    // Esc in the search box clears it: the list is back, the open chat marked
    press(&c, &format!("{CTRL}k")).await;
    assert_eq!(focused(&c).await, "#search");
    press(&c, ESC).await;
    wait_css(&c, ".conv.active").await;

    // ---- next and previous conversation: Alt+↓ / Alt+↑ (the sidebar's order, newest first) ----
    let opened = c
        .execute(
            "return document.querySelector('.conv.active').dataset.id;",
            vec![],
        )
        .await
        .unwrap();
    press(&c, &format!("{CTRL}n")).await;
    wait_until(
        &c,
        "document.querySelector('#chat-title').textContent === 'New chat'",
    )
    .await;
    press(&c, &format!("a second chat{ENTER}")).await;
    wait_until(&c, "document.querySelectorAll('.conv').length === 2 && !!document.querySelector('.conv.active')").await;
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    let second = c
        .execute(
            "return document.querySelector('.conv.active').dataset.id;",
            vec![],
        )
        .await
        .unwrap();
    assert_ne!(second, opened);
    press(&c, &format!("{ALT}{DOWN}")).await;
    wait_until(
        &c,
        &format!("document.querySelector('.conv.active')?.dataset.id === {opened}"),
    )
    .await;
    // (the message box is empty: Up alone would edit the last message, Alt+Up does not)
    press(&c, &format!("{ALT}{UP}")).await;
    wait_until(
        &c,
        &format!("document.querySelector('.conv.active')?.dataset.id === {second}"),
    )
    .await;

    // ---- change the model: Ctrl+M, ↓ ----
    press(&c, &format!("{CTRL}m")).await;
    assert_eq!(focused(&c).await, "#model-select");
    assert_focus_visible(&c).await;
    let before = c
        .execute(
            "return document.querySelector('#model-select').value;",
            vec![],
        )
        .await
        .unwrap();
    press(&c, DOWN).await;
    wait_until(
        &c,
        &format!("document.querySelector('#model-select').value !== {before}"),
    )
    .await;
}
