//! Desktop notifications, through a real notification server (dunst on the test's X display, on
//! a session bus of the test's own; dbus-monitor writes down every call to it): a finished reply,
//! an approval waiting and a crashed server are notified while the window is not focused, not
//! while it is, not when turned off; clicking one (dunstctl's default action) brings the window
//! to its chat.

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
    wait_notified_for(home, n, WAIT).await
}

async fn wait_notified_for(home: &Path, n: usize, limit: Duration) -> Vec<(String, String)> {
    let t = Instant::now();
    loop {
        let got = notified(home);
        if got.len() >= n {
            return got;
        }
        assert!(t.elapsed() < limit, "{n} notifications never came: {got:?}");
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
    let App { c, driver } = App::launch_with_notifications(home.path()).await;
    wait_servers(&c, 3).await;

    // focused: a finished reply says nothing
    x_focus_app(true);
    wait_focus(&c, true).await;
    send(&c, "first question").await;
    wait_css(&c, ".msg.assistant.complete").await;
    wait_css(&c, ".conv.active").await; // the list refreshes after the turn
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

    // a server that crashes while away (the calculator, killed)
    x_focus_app(false);
    wait_focus(&c, false).await;
    let before = notified(home.path()).len();
    let calculator = driver
        .app_processes()
        .into_iter()
        .find(|(_, label)| label == "server: calculator")
        .expect("the calculator server's process")
        .0;
    unsafe {
        libc::kill(calculator, libc::SIGKILL);
    }
    let got = wait_notified(home.path(), before + 1).await;
    assert_eq!(got[before].0, "MCP server “calculator” stopped", "{got:?}");
    assert!(got[before].1.contains("stopped unexpectedly"), "{got:?}");
    wait_servers(&c, 3).await; // restarted
    x_focus_app(true);
    wait_focus(&c, true).await;

    // turned off in Settings → This window: no notification for that kind
    click(&c, "#settings-button").await;
    c.execute(
        "const d = document.querySelector('#settings-dialog'); d.scrollTop = d.scrollHeight;",
        vec![],
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    screenshot(&c, "settings-notifications.png").await;
    click(&c, "#set-notify-turnFinished").await;
    click(&c, "#settings-cancel").await;
    let before = notified(home.path()).len();
    x_focus_app(false);
    wait_focus(&c, false).await;
    let replies = c
        .execute(
            "return document.querySelectorAll('.msg.assistant.complete').length;",
            vec![],
        )
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    send(&c, "third question").await;
    wait_until(
        &c,
        &format!("document.querySelectorAll('.msg.assistant.complete').length > {replies}"),
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

/// A task that completes after its turn (the app was killed while it ran; the next run follows
/// it) is notified while the window is away, naming its chat; a click opens that chat, where its
/// result waits to be sent to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver, WebKitWebDriver and dunst: run via `make test`"]
async fn a_task_that_completes_after_its_turn_is_notified_and_a_click_opens_its_chat() {
    let (_server, port) = crate::support::tasks_server();
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        if last_message(req)["role"] == "user" {
            // long enough to outlast a kill and a start on a busy machine
            let args = json!({"a": 40, "b": 2, "seconds": 25});
            return Stream::new()
                .tool_call("t", "tasks__slow_sum", args)
                .done()
                .reply();
        }
        Stream::new().text("Done.").done().reply()
    });
    let home = crate::cards::tasks_home(&fake, port, "tasks__slow_sum");

    let App { c, driver } = App::launch_with_servers(home.path(), 1).await;
    send(&c, "add 40 and 2, slowly").await;
    wait_css(&c, ".tool-card.running[data-task='working']").await;
    let title = text_content(&c, "#chat-title").await;
    App { c, driver }.kill().await;

    let App { c, driver: _driver } = App::launch_with_notifications(home.path()).await;
    x_focus_app(false);
    wait_focus(&c, false).await;
    click(&c, "#new-chat").await;
    let got = wait_notified_for(home.path(), 1, Duration::from_secs(60)).await;
    assert_eq!(got[0].0, "A task completed", "{got:?}");
    assert!(got[0].1.contains(&title), "{got:?} names {title}");
    dunstctl(home.path(), &["action", "0"]);
    wait_focus(&c, true).await;
    wait_css(&c, ".tool-card.ok").await;
    assert_eq!(text_content(&c, ".tool-card .result").await, "42");
    wait_css(&c, ".late-result").await;
}
