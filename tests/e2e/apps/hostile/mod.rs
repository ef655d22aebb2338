//! A hostile app page (tests/fixtures/hostile_app_server.py) next to the built-in calculator, by
//! concern: `escape` (it tries to leave its frames, open a window, read the window and the other
//! app shown, reach the IPC, write a message for the user nobody asked for, never answers its
//! teardown, makes its frame navigate elsewhere), `calls` (its calls asked about once, in its
//! name, on its card, and the display modes around a waiting question), `network` (the origins
//! it may reach, and its card's notes when it does not start or what it loads never comes).

mod calls;
mod escape;
mod network;

use serde_json::{json, Value};

use super::*;

fn hostile_server(port: u16, marker: &std::path::Path) -> switchboard_engine::mcp::ServerConfig {
    switchboard_engine::mcp::ServerConfig::new(
        crate::support::pypi_server("python").to_str().unwrap(),
        &[
            crate::support::fixture("hostile_app_server.py")
                .to_str()
                .unwrap(),
            &port.to_string(),
            marker.to_str().unwrap(),
        ],
    )
}

/// A loopback listener for what the page must not reach, and its port: it never blocks, so
/// `accept` says at once whether anything arrived.
fn watched_listener() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// The report (JSON in `#report`) of app `n`'s page, once it is done.
async fn report(c: &fantoccini::Client, n: u16) -> Value {
    enter_app(c, n).await;
    wait_until(
        c,
        "document.querySelector('#state')?.textContent === 'done'",
    )
    .await;
    let text = text_content(c, "#report").await;
    leave_app(c).await;
    serde_json::from_str(&text).unwrap()
}

/// `#id`'s text in the first app's page, once `condition` (there) holds.
async fn app_text_when(c: &fantoccini::Client, id: &str, condition: &str) -> String {
    enter_app(c, 0).await;
    wait_until(c, condition).await;
    let text = text_content(c, &format!("#{id}")).await;
    leave_app(c).await;
    text
}

/// The model shows the page twice (two calls in one reply): two apps of the same server.
/// Waits until the app's sneaky messages have been tried at least `at_least` times, and checks
/// that every one was refused: the message box still holds only what the user `typed`, and no
/// app draft shows. Returns how many tries there were.
async fn all_refused(c: &fantoccini::Client, at_least: u64, typed: &str) -> u64 {
    let tried = app_text_when(
        c,
        "sneaky",
        &format!(
            "Number((document.querySelector('#sneaky')?.textContent ?? '0/0').split('/')[1]) >= {at_least}"
        ),
    )
    .await;
    let (refused, tries) = tried.split_once('/').unwrap();
    assert_eq!(refused, tries, "{tried}");
    let value = c
        .execute("return document.querySelector('#input').value;", vec![])
        .await
        .unwrap();
    assert_eq!(value, typed);
    assert_eq!(count(c, ".app-draft").await, 0);
    tries.parse().unwrap()
}

fn shows_twice(req: &Value) -> crate::support::fake_ollama::Reply {
    use crate::support::fake_ollama::{last_message, Stream};
    if last_message(req)["role"] == "user" {
        Stream::new()
            .tool_calls(&[
                ("a", "evil__show", json!({})),
                ("b", "evil__show", json!({})),
            ])
            .done()
            .reply()
    } else {
        Stream::new().text("Shown.").done().reply()
    }
}
