//! The hostile page and the network: the origins it may reach, and what its card says when what
//! it loads does not come.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;

/// Its server allowed the network: the page reaches the origins it declares that the user saw
/// when allowing them, and no other (an origin it names later stays closed, and its card says so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_reaches_only_the_origins_the_user_saw_and_allowed() {
    let (listener, port) = watched_listener();
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let scratch = tempfile::tempdir().unwrap();
    let mut server = hostile_server(port, &scratch.path().join("m"));
    server.app_network = true;
    // the user saw (and allowed) only evil.example: the page's address was added later
    server.app_origins = vec!["https://evil.example".into()];
    let home = app_home_with(&fake, "evil", server);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    send_and_allow(&c, "show it").await;
    let unseen = report(&c, 0).await;
    assert_eq!(unseen["fetch"], "blocked", "{unseen}");
    assert_eq!(unseen["undeclared"], "blocked", "{unseen}");
    let note = c
        .execute(
            "return document.querySelector('.tool-card .app-network')?.dataset.origins ?? null;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(note, json!(format!("http://127.0.0.1:{port}")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        listener.accept().is_err(),
        "the page reached an origin the user never saw"
    );
    c.close().await.unwrap();

    // the user saw it too: now it is reached (and only because it was declared and seen)
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let mut server = hostile_server(port, &scratch.path().join("m"));
    server.app_network = true;
    server.app_origins = vec![
        format!("http://127.0.0.1:{port}"),
        "https://evil.example".into(),
    ];
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
    let report = report(&c, 0).await;
    let request = served.join().unwrap();
    assert!(
        request.contains("/steal") || request.contains("/pixel"),
        "{request}"
    );
    assert_eq!(report["fetch"], "sent", "{report}");
    // an address it did not declare stays closed
    assert_eq!(report["undeclared"], "blocked", "{report}");
    // still in its frame
    assert_eq!(report["window"], "blocked", "{report}");
    assert_eq!(report["tauri"], "undefined", "{report}");
    assert_eq!(report["windowOpen"], "blocked", "{report}");
    assert_eq!(
        c.execute(
            "return document.querySelector('.tool-card .app-network');",
            vec![]
        )
        .await
        .unwrap(),
        Value::Null
    );
    c.close().await.unwrap();
}

/// A page that has not started after 10 s (its library is on a site it may not reach, as an
/// app's CDN offline): its card says so, instead of leaving an empty frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_that_does_not_start_is_said_on_its_card() {
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__stuck"));
    let scratch = tempfile::tempdir().unwrap();
    let home = app_home_with(&fake, "evil", hostile_server(9, &scratch.path().join("m")));
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    send_and_allow(&c, "show the stuck one").await;
    wait_css(&c, ".tool-card iframe.app-frame").await;
    assert_eq!(count(&c, ".app-slow").await, 0);
    wait_css(&c, ".tool-card .app-box .app-slow").await;
    assert_eq!(frame_state(&c).await, json!("loading"));
    assert!(
        text_content(&c, ".app-slow")
            .await
            .starts_with("The app has not started yet: it may be waiting for "),
        "{}",
        text_content(&c, ".app-slow").await
    );
    screenshot(&c, "app-not-started.png").await;
    c.close().await.unwrap();
}

/// A page that starts, but what it loads from a site it may reach never comes (the site closes
/// every connection unanswered, as an unreachable one fails): its card says which addresses did
/// not come, instead of leaving a frame that shows nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_whose_data_never_comes_is_said_on_its_card() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // every connection is closed at once, unanswered
    std::thread::spawn(move || {
        for s in listener.incoming() {
            drop(s);
        }
    });
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__offline"));
    let scratch = tempfile::tempdir().unwrap();
    let mut server = hostile_server(port, &scratch.path().join("m"));
    server.app_network = true;
    server.app_origins = vec![format!("http://127.0.0.1:{port}")];
    let home = app_home_with(&fake, "evil", server);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    send_and_allow(&c, "show the offline one").await;
    wait_css(&c, ".tool-card .app-box .app-load-failed").await;
    let urls = c
        .execute(
            "return document.querySelector('.tool-card .app-load-failed').dataset.urls;",
            vec![],
        )
        .await
        .unwrap();
    let urls = urls.as_str().unwrap_or_default();
    assert!(
        urls.contains(&format!("http://127.0.0.1:{port}/data.json")),
        "{urls}"
    );
    // the picture too, once the browser has given up on it
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = c
            .execute(
                "return document.querySelector('.tool-card .app-load-failed').dataset.urls;",
                vec![],
            )
            .await
            .unwrap();
        if now.as_str().unwrap_or_default().contains("/tile.png") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the picture was never said: {now}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // it started, and nothing of it was refused by its policy
    assert_eq!(frame_state(&c).await, json!("ready"));
    assert_eq!(count(&c, ".app-csp").await, 0);
    assert_eq!(count(&c, ".app-slow").await, 0);
    assert!(
        text_content(&c, ".app-load-failed")
            .await
            .starts_with("Some of what the app loads did not come: "),
        "{}",
        text_content(&c, ".app-load-failed").await
    );
    screenshot(&c, "app-load-failed.png").await;
    // a page that never says its size: back from each mode it has the height it had in the chat
    every_display_mode(&c).await;
    c.close().await.unwrap();
}
