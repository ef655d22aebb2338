//! The window's own state (tauri-plugin-store, `window-state.json`): size, place, theme, sidebar
//! width, the open conversation and its drafts come back after a quit and after a SIGKILL; a file
//! that cannot be read is set aside with a note.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{self, FakeOllama, Stream};

async fn input_value(c: &fantoccini::Client) -> String {
    c.execute("return document.querySelector('#input').value;", vec![])
        .await
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn wait_geometry(want: (i32, i32, u32, u32)) {
    let t = Instant::now();
    while x_window_geometry() != want {
        assert!(
            t.elapsed() < WAIT,
            "the window is at {:?}, not {want:?}",
            x_window_geometry()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn the_window_comes_back_as_it_was_after_a_quit_and_after_a_kill() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|_req: &Value| Stream::new().text("Noted.").done().reply());
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": fake_ollama::MODEL}).to_string(),
    )
    .unwrap();

    // ---- first run: a conversation, a theme, a size, a sidebar width, two drafts ----
    let App { c, driver } = App::launch(home.path()).await;
    send(&c, "remember this chat").await;
    wait_css(&c, ".msg.assistant.complete").await;
    // the sidebar lists it (and marks it) once the turn's title is in
    wait_css(&c, ".conv.active").await;
    let conversation = c
        .execute(
            "return document.querySelector('.conv.active')?.dataset.id ?? null;",
            vec![],
        )
        .await
        .unwrap();
    let conversation: i64 = conversation
        .as_str()
        .and_then(|s| s.parse().ok())
        .or(conversation.as_i64())
        .expect("the new conversation is active in the sidebar");

    x_move_resize(40, 30, 900, 640);
    wait_geometry((40, 30, 900, 640)).await;
    wait_stored(home.path(), "the window's size", |v| {
        v["window"]["width"] == 900 && v["window"]["height"] == 640 && v["window"]["x"] == 40
    })
    .await;

    // the theme, in Settings → This window (applied at once)
    click(&c, "#settings-button").await;
    c.execute(
        "const s = document.querySelector('#set-theme'); s.value = 'dark'; s.dispatchEvent(new Event('change'));",
        vec![],
    )
    .await
    .unwrap();
    click(&c, "#settings-cancel").await;
    assert_eq!(
        c.execute("return document.documentElement.dataset.theme;", vec![])
            .await
            .unwrap(),
        json!("dark")
    );
    // the sidebar, one step wider by keyboard on its edge
    // (focused as Tab would: WebKitWebDriver will not send keys to a separator itself)
    wait_css(&c, "#sidebar-resizer").await;
    c.execute(
        "document.querySelector('#sidebar-resizer').focus();",
        vec![],
    )
    .await
    .unwrap();
    assert_eq!(
        c.execute("return document.activeElement.id;", vec![])
            .await
            .unwrap(),
        json!("sidebar-resizer")
    );
    c.active_element()
        .await
        .unwrap()
        .send_keys("\u{E014}\u{E014}") // → →
        .await
        .unwrap();
    let width = wait_stored(home.path(), "the sidebar's width", |v| {
        v["sidebarWidth"].as_u64().is_some()
    })
    .await["sidebarWidth"]
        .as_u64()
        .unwrap();
    assert!(width > 260, "wider than the default: {width}");

    // a draft in the open conversation, then one in a new chat; switching keeps each
    let input = wait_css(&c, "#input").await;
    input.send_keys("a half-written thought").await.unwrap();
    c.active_element()
        .await
        .unwrap()
        .send_keys("\u{E009}n") // Ctrl+N: new chat
        .await
        .unwrap();
    wait_until(
        &c,
        "document.querySelector('#chat-title').textContent === 'New chat'",
    )
    .await;
    assert_eq!(
        input_value(&c).await,
        "",
        "a new chat has its own (empty) draft"
    );
    wait_css(&c, "#input")
        .await
        .send_keys("for a new chat")
        .await
        .unwrap();
    click(&c, &format!(".conv[data-id='{conversation}']")).await;
    wait_until(
        &c,
        "document.querySelector('#input').value === 'a half-written thought'",
    )
    .await;
    wait_stored(home.path(), "both drafts", |v| {
        v["drafts"][conversation.to_string()]["text"] == "a half-written thought"
            && v["drafts"]["new"]["text"] == "for a new chat"
    })
    .await;
    wait_stored(home.path(), "the open conversation", |v| {
        v["open"]["conversationId"] == conversation
    })
    .await;

    // ---- killed (SIGKILL: nothing runs at exit) ----
    App { c, driver }.kill().await;

    // ---- second run: all of it back ----
    let App { c, driver } = App::launch(home.path()).await;
    wait_until(
        &c,
        "document.querySelector('#input').value === 'a half-written thought'",
    )
    .await;
    assert_eq!(
        c.execute(
            "return document.querySelector('.conv.active')?.dataset.id;",
            vec![]
        )
        .await
        .unwrap()
        .to_string()
        .trim_matches('"'),
        conversation.to_string(),
        "the conversation that was open is open"
    );
    assert_eq!(
        c.execute("return document.documentElement.dataset.theme;", vec![])
            .await
            .unwrap(),
        json!("dark")
    );
    assert_eq!(
        c.execute(
            "return Math.round(document.querySelector('#sidebar').getBoundingClientRect().width);",
            vec![]
        )
        .await
        .unwrap(),
        json!(width)
    );
    wait_geometry((40, 30, 900, 640)).await;
    screenshot(&c, "window-restored-dark.png").await;
    c.active_element()
        .await
        .unwrap()
        .send_keys("\u{E009}n")
        .await
        .unwrap();
    wait_until(
        &c,
        "document.querySelector('#input').value === 'for a new chat'",
    )
    .await;

    // sending clears a draft
    wait_css(&c, "#input")
        .await
        .send_keys("\u{E007}")
        .await
        .unwrap();
    wait_css(&c, ".msg.assistant.complete").await;
    wait_stored(home.path(), "no draft for the new chat", |v| {
        v["drafts"].get("new").is_none()
    })
    .await;

    // ---- quit as a person does (the window's close button), third run ----
    x_move_resize(60, 50, 820, 600);
    wait_stored(home.path(), "the window's new size", |v| {
        v["window"]["width"] == 820 && v["window"]["x"] == 60
    })
    .await;
    x_close_window();
    let t = Instant::now();
    while driver
        .app_processes()
        .iter()
        .any(|(_, l)| l == "main (switchboard)")
    {
        assert!(t.elapsed() < WAIT, "the app did not quit");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(c);
    drop(driver);
    let App { c, driver: _driver } = App::launch(home.path()).await;
    wait_geometry((60, 50, 820, 600)).await;
    // the last conversation open was the one just sent: open again, its draft empty
    wait_until(&c, "!!document.querySelector('.conv.active')").await;
    assert_eq!(input_value(&c).await, "");
    assert_eq!(
        c.execute("return document.documentElement.dataset.theme;", vec![])
            .await
            .unwrap(),
        json!("dark")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_unreadable_window_state_is_set_aside_with_a_note() {
    // a model that answers, so that the banner is the note's, not an unreachable server's
    let fake = FakeOllama::start().await;
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": fake_ollama::MODEL}).to_string(),
    )
    .unwrap();
    let cut_short = br#"{"theme": "dark", "drafts": {"new": {"te"#;
    std::fs::write(config_dir.join("window-state.json"), cut_short).unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    wait_until(&c, "!document.querySelector('#banner').hidden").await;
    let banner = text_content(&c, "#banner").await;
    assert!(banner.contains("set aside"), "{banner}");
    let aside: Vec<_> = std::fs::read_dir(&config_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("window-state.json.unreadable-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "the unreadable file is kept aside");
    assert_eq!(std::fs::read(aside[0].path()).unwrap(), cut_short);
    assert!(
        banner.contains(&*aside[0].file_name().to_string_lossy()),
        "{banner}"
    );
    // the window works with the defaults (the theme follows the desktop's scheme), and writes a
    // good file again
    assert_eq!(
        c.execute(
            "return [document.querySelector('#set-theme').value, document.documentElement.dataset.theme \
             === (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light')];",
            vec![]
        )
        .await
        .unwrap(),
        json!(["system", true])
    );
    wait_css(&c, "#input")
        .await
        .send_keys("a fresh start")
        .await
        .unwrap();
    wait_stored(home.path(), "the new draft", |v| {
        v["drafts"]["new"]["text"] == "a fresh start"
    })
    .await;
}
