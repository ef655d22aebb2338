//! Desktop notifications, through a real notification server (dunst on the test's X display, on
//! a session bus of the test's own; dbus-monitor writes down every call to it): a finished reply
//! and an approval waiting are notified while the window is not focused, not while it is, not
//! when turned off; clicking one (dunstctl's default action) brings the window to its chat.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

/// The summaries (titles) of the notifications the app sent so far, in order (dbus-monitor's
/// `Notify` calls: app name, replaces id, icon, summary, body, …).
fn notified(home: &Path) -> Vec<(String, String)> {
    let log = std::fs::read_to_string(home.join(NOTIFY_LOG)).unwrap_or_default();
    let mut out = Vec::new();
    let mut lines = log.lines();
    while let Some(l) = lines.next() {
        if !(l.starts_with("method call") && l.contains("member=Notify")) {
            continue;
        }
        let strings: Vec<String> = lines
            .by_ref()
            .take(5)
            .filter_map(|l| {
                let l = l.trim();
                l.strip_prefix("string \"")
                    .map(|s| s.trim_end_matches('"').to_string())
            })
            .collect();
        // app name, icon, summary, body
        if strings.len() >= 4 {
            out.push((strings[2].clone(), strings[3].clone()));
        }
    }
    out
}

async fn wait_notified(home: &Path, n: usize) -> Vec<(String, String)> {
    let t = Instant::now();
    loop {
        let got = notified(home);
        if got.len() >= n {
            return got;
        }
        assert!(t.elapsed() < WAIT, "{n} notifications never came: {got:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn dunstctl(home: &Path, args: &[&str]) -> String {
    let bus = std::fs::read_to_string(home.join(NOTIFY_BUS_FILE)).unwrap();
    let out = std::process::Command::new("dunstctl")
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", bus.trim())
        .output()
        .expect("dunstctl (make test-deps installs dunst)");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Waits until the window's focus is as wanted (the page's own view of it).
async fn wait_focus(c: &fantoccini::Client, focused: bool) {
    wait_until(c, &format!("document.hasFocus() === {focused}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver, WebKitWebDriver and dunst: run via `make test`"]
async fn a_reply_and_an_approval_are_notified_while_the_window_is_away_and_a_click_opens_the_chat()
{
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let text = last["content"].as_str().unwrap_or_default().to_string();
        if text.contains("note") {
            return Stream::new()
                .tool_call(
                    "w",
                    "files__write_file",
                    json!({"path": "n.txt", "content": "hi"}),
                )
                .done()
                .reply();
        }
        Stream::new().text("Here you are.").done().reply()
    });
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": crate::support::fake_ollama::MODEL}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch_with_notifications(home.path()).await;
    wait_servers(&c, 3).await;

    // focused: a finished reply says nothing
    x_focus_app(true);
    wait_focus(&c, true).await;
    send(&c, "first question").await;
    wait_css(&c, ".msg.assistant.complete").await;
    let first = c
        .execute(
            "return document.querySelector('.conv.active').dataset.id;",
            vec![],
        )
        .await
        .unwrap();

    // away: the next reply is notified, with the chat's title
    x_focus_app(false);
    wait_focus(&c, false).await;
    send(&c, "second question").await;
    let got = wait_notified(home.path(), 1).await;
    assert_eq!(
        got.len(),
        1,
        "the reply while focused was not notified: {got:?}"
    );
    assert_eq!(got[0].0, "A reply is ready");
    assert_eq!(got[0].1, text_content(&c, "#chat-title").await);

    // an approval waiting while away
    send(&c, "save a note").await;
    wait_css(&c, ".tool-card.awaiting .approval").await;
    let got = wait_notified(home.path(), 2).await;
    assert_eq!(got[1].0, "Approval needed");
    assert!(got[1].1.contains("files › write_file"), "{got:?}");
    click(&c, ".tool-card.awaiting [data-action='deny']").await;
    wait_notified(home.path(), 3).await; // the reply after the denial

    // a click on the notification brings the window to its chat, from another chat
    x_focus_app(true);
    click(&c, "#new-chat").await;
    wait_until(
        &c,
        "document.querySelector('#chat-title').textContent === 'New chat'",
    )
    .await;
    x_focus_app(false);
    wait_focus(&c, false).await;
    dunstctl(home.path(), &["action", "0"]);
    wait_until(
        &c,
        &format!("document.querySelector('.conv.active')?.dataset.id === {first}"),
    )
    .await;
    wait_focus(&c, true).await;

    // turned off in Settings → This window: no notification for that kind
    click(&c, "#settings-button").await;
    click(&c, "#set-notify-turnFinished").await;
    click(&c, "#settings-cancel").await;
    let before = notified(home.path()).len();
    x_focus_app(false);
    wait_focus(&c, false).await;
    send(&c, "third question").await;
    wait_until(
        &c,
        "document.querySelectorAll('.msg.assistant.complete').length >= 5",
    )
    .await;
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    // and one that is on still comes, so the off one had its chance to arrive first
    send(&c, "one more note").await;
    wait_css(&c, ".tool-card.awaiting .approval").await;
    let got = wait_notified(home.path(), before + 1).await;
    assert_eq!(
        got[before..]
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>(),
        ["Approval needed"],
        "the finished reply was not notified"
    );
}
