//! A hostile app page (tests/fixtures/hostile_app_server.py) next to the built-in calculator: it
//! tries to leave its frame, open a window, read the window, use storage, reach the network or
//! the IPC, and call tools it may not; it never answers its teardown, and it makes its frame
//! navigate elsewhere.

use std::time::{Duration, Instant};

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

/// The page's report, the `ui/message` it wrote ("report:" and JSON) into the message box.
async fn report(c: &fantoccini::Client) -> Value {
    wait_until(
        c,
        "document.querySelector('#input').value.includes('report:')",
    )
    .await;
    let text = c
        .execute("return document.querySelector('#input').value;", vec![])
        .await
        .unwrap();
    let text = text.as_str().unwrap();
    let json = &text[text.find("report:").unwrap() + 7..];
    serde_json::from_str(json.lines().next().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_hostile_app_reaches_nothing_beyond_its_frame() {
    // a listener the page tries to reach: nothing must arrive
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("secret-ran");
    let home = app_home_with_calculator(&fake, "evil", hostile_server(port, &marker));
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 2).await;
    let before = c.current_url().await.unwrap();
    let windows = c.windows().await.unwrap().len();
    send_and_allow(&c, "show it").await;
    wait_css(&c, ".tool-card.ok iframe.app-frame").await;
    let report = report(&c).await;
    assert_eq!(report["tauri"], "undefined", "{report}");
    assert_eq!(report["ipc"], "undefined", "{report}");
    assert_eq!(report["parent"], "blocked", "{report}");
    assert_eq!(report["storage"], "blocked", "{report}");
    assert_eq!(report["fetch"], "blocked", "{report}");
    assert_eq!(report["top"], "blocked", "{report}");
    // no allow-popups: window.open gives nothing
    assert_eq!(report["windowOpen"], "blocked", "{report}");
    assert_eq!(c.windows().await.unwrap().len(), windows);
    // WebKit exposes its message handler to every frame; what the page sent through it, in
    // Tauri's own shape but without the window's invoke key (renaming this conversation), was
    // dropped: the store agrees
    assert_eq!(report["webkitIpc"], "present", "{report}");
    let titles = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             window.__TAURI__.core.invoke('list_conversations').then((l) => done(l.map((x) => x.title)));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(titles, json!(["show it"]), "the store agrees");
    // tools it may not call: the calculator's (which runs, by either name) and its own
    // model-only one; refused before anything runs or asks (no card)
    for (key, tool) in [("add", "add"), ("calculatorAdd", "calculator__add")] {
        assert_eq!(
            report[key],
            format!("refused: The app cannot call \"{tool}\": evil offers no such tool to apps."),
            "{report}"
        );
    }
    assert_eq!(
        report["secret"],
        "refused: The app cannot call \"secret\": evil offers no such tool to apps.",
        "{report}"
    );
    assert_refused_call_left_nothing(&c, &marker).await;
    // the window is where it was, nothing reached the listener, no script ran in the window
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(c.current_url().await.unwrap(), before);
    assert!(listener.accept().is_err(), "the page reached the network");
    assert_eq!(
        c.execute("return window.__pwned ?? null;", vec![])
            .await
            .unwrap(),
        Value::Null
    );

    // closed by the user, it never answers its teardown: its frame goes after the wait anyway
    assert_eq!(frame_state(&c).await, json!("ready"));
    click(&c, ".tool-card [data-action='close-app']").await;
    let asked = Instant::now();
    assert_eq!(frame_state(&c).await, json!("closing"));
    wait_until(&c, "!document.querySelector('iframe.app-frame')").await;
    assert!(
        asked.elapsed() >= Duration::from_millis(2500),
        "removed after {:?}, before its time to answer was over",
        asked.elapsed()
    );
    let log = wait_for_log(&c, "evil", "app closed").await;
    assert!(
        log.iter().any(|l| {
            l.starts_with(
            "[switchboard] app closed (the user closed it): it did not answer the teardown within 3"
        )
        }),
        "{log:#?}"
    );
    wait_css(&c, ".tool-card [data-action='show-app']").await;

    // the frame navigates itself: to another mcpapp: address (none it may know), to http, to its
    // own address again (which would be served)
    for (button, url) in [
        ("#nav-app", "mcpapp://localhost/v/ffff"),
        ("#nav-http", "http://127.0.0.1"),
        ("#nav-self", "its own address"),
    ] {
        show_app_again(&c).await;
        in_frame_until(
            &c,
            "document.querySelector('#state').textContent === 'done'",
        )
        .await;
        let before = server_log(&c, "evil").await;
        click_in_app(&c, button).await;
        // the frame shows the one page it was given: anything else loaded in it closes it
        wait_until(&c, "!document.querySelector('iframe.app-frame')").await;
        assert_eq!(
            text_content(&c, ".tool-card .app-box .field-error").await,
            "The app loaded another page in its frame, so it was closed.",
            "after {url}…"
        );
        // its server's log says so, in a line after what it had: its last (the wait fails if not)
        let closed = "[switchboard] app closed (it loaded another page): it was not asked (it had not started, or had left its page)";
        wait_for_log_where(&c, "evil", closed, |log| {
            log != before.as_slice() && log.last().is_some_and(|l| l == closed)
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(listener.accept().is_err(), "the frame reached the network");
    assert_eq!(c.current_url().await.unwrap(), before);
    c.close().await.unwrap();
}

/// Allowed the network in its server's settings, the same page reaches the origin it declares
/// (and only because it declared it: the policy lists exactly that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_reaches_the_origins_it_declares_when_its_server_is_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let scratch = tempfile::tempdir().unwrap();
    let mut server = hostile_server(port, &scratch.path().join("secret-ran"));
    server.app_network = true;
    let home = app_home_with(&fake, "evil", server);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    // the listener answers whatever comes, so the page's fetch completes
    let served = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 2048];
        let n = std::io::Read::read(&mut s, &mut buf).unwrap_or(0);
        let _ = std::io::Write::write_all(
            &mut s,
            b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&buf[..n]).to_string()
    });
    send_and_allow(&c, "show it").await;
    let report = report(&c).await;
    let request = served.join().unwrap();
    assert!(
        request.contains("/steal") || request.contains("/pixel"),
        "{request}"
    );
    assert_eq!(report["fetch"], "sent", "{report}");
    // still in its frame
    assert_eq!(report["parent"], "blocked", "{report}");
    assert_eq!(report["tauri"], "undefined", "{report}");
    assert_eq!(report["windowOpen"], "blocked", "{report}");
    c.close().await.unwrap();
}
