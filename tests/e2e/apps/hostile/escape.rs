//! The hostile page tries to get out of its frames.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_hostile_app_reaches_nothing_beyond_its_frame() {
    // a listener the page tries to reach: nothing must arrive
    let (listener, port) = watched_listener();
    let fake = FakeOllama::start().await;
    fake.set_responder(shows_twice);
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("secret-ran");
    let home = app_home_with_calculator(&fake, "evil", hostile_server(port, &marker));
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 2).await;
    let before = c.current_url().await.unwrap();
    let windows = c.windows().await.unwrap().len();
    send(&c, "show it").await;
    for done in 1..=2 {
        wait_css(&c, ".tool-card .approval").await;
        click(&c, ".tool-card .approval [data-action='allowOnce']").await;
        wait_until(
            &c,
            &format!("document.querySelectorAll('.tool-card.ok').length >= {done}"),
        )
        .await;
    }
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card iframe.app-frame').length === 2",
    )
    .await;
    // two apps, two origins of their own, neither the window's
    let origins = c
        .execute(
            "return [...document.querySelectorAll('iframe.app-frame')].map((f) => new URL(f.src).host);",
            vec![],
        )
        .await
        .unwrap();
    assert_ne!(origins[0], origins[1], "{origins}");
    for n in 0..2 {
        let report = report(&c, n).await;
        assert_eq!(report["tauri"], "undefined", "{report}");
        assert_eq!(report["ipc"], "undefined", "{report}");
        // its parent is the page between it and the window; the window is out of reach, from
        // its own code or run in its parent's
        assert_eq!(report["parent"], "the page between", "{report}");
        assert_eq!(report["window"], "blocked", "{report}");
        assert_eq!(report["windowViaParent"], "blocked", "{report}");
        // the other app shown is there, and unreadable
        assert_eq!(report["otherApps"], 1, "{report}");
        assert_eq!(report["otherAppsRead"], 0, "{report}");
        // storage of its own: a fresh origin, nobody else's data in it
        assert_eq!(report["storageBefore"], 0, "{report}");
        assert_eq!(report["fetch"], "blocked", "{report}");
        assert_eq!(report["undeclared"], "blocked", "{report}");
        assert_eq!(report["top"], "blocked", "{report}");
        // no allow-popups: window.open gives nothing
        assert_eq!(report["windowOpen"], "blocked", "{report}");
        // WebKit exposes its message handler to every frame; what the page sent through it, in
        // Tauri's own shape but without the window's invoke key (renaming this conversation),
        // was dropped: the store agrees (below)
        assert_eq!(report["webkitIpc"], "present", "{report}");
        // tools it may not call: the calculator's (which runs, by either name) and its own
        // model-only one; refused before anything runs or asks
        for (key, tool) in [("add", "add"), ("calculatorAdd", "calculator__add")] {
            assert_eq!(
                report[key],
                format!(
                    "refused: The app cannot call \"{tool}\": evil offers no such tool to apps."
                ),
                "{report}"
            );
        }
        assert_eq!(
            report["secret"],
            "refused: The app cannot call \"secret\": evil offers no such tool to apps.",
            "{report}"
        );
        // a message nobody asked for: refused
        assert!(
            report["message"]
                .as_str()
                .unwrap()
                .starts_with("refused: Message sending denied"),
            "{report}"
        );
        // a link or full screen nobody asked for: refused, no link dialog, still inline
        assert!(
            report["openLink"]
                .as_str()
                .unwrap()
                .starts_with("refused: Opening a link denied"),
            "{report}"
        );
        assert_eq!(report["fullscreen"], "inline", "{report}");
    }
    assert_eq!(count(&c, "#link-dialog[open]").await, 0);
    assert_eq!(count(&c, ".app-box.app-fullscreen").await, 0);
    assert_eq!(c.windows().await.unwrap().len(), windows);
    let titles = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             window.__TAURI__.core.invoke('list_conversations').then((l) => done(l.map((x) => x.title)));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(titles, json!(["show it"]), "the store agrees");
    assert!(!marker.exists(), "the model-only tool ran");
    assert_eq!(count(&c, ".tool-card").await, 2);
    assert_eq!(count(&c, ".app-approval").await, 0);
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
    // what its policy refused is said on its card and in its server's log
    wait_css(&c, ".tool-card .app-box .app-csp").await;
    let log = wait_for_log(&c, "evil", "by its Content-Security-Policy").await;
    // on each app's card, each thing refused once, however often the page tried it
    let listed = c
        .execute(
            "return [...document.querySelectorAll('.tool-card')].map((card) => \
             [...card.querySelectorAll('.app-violations li')].map((li) => li.textContent));",
            vec![],
        )
        .await
        .unwrap();
    let cards: Vec<Vec<String>> = serde_json::from_value(listed).unwrap();
    for listed in &cards {
        let distinct: std::collections::BTreeSet<&String> = listed.iter().collect();
        assert!(!listed.is_empty(), "{cards:#?}");
        assert_eq!(distinct.len(), listed.len(), "{cards:#?}");
    }
    assert!(
        log.iter().any(|l| l.starts_with(&format!(
            "[switchboard] its app was refused http://127.0.0.1:{port}/steal"
        ))),
        "{log:#?}"
    );
    screenshot(&c, "app-hostile.png").await;

    // the user clicks and types in the window while the page keeps writing messages: none lands
    click(&c, "#input").await;
    c.find(fantoccini::Locator::Css("#input"))
        .await
        .unwrap()
        .send_keys("typing here")
        .await
        .unwrap();
    // (not on a card's summary: that folds the card, and the app's frame with it)
    click(&c, "#chat-title").await;
    click(&c, "#input").await;
    let tries = all_refused(&c, 8, "typing here").await;
    // the same with the pointer resting on the app while the user types in the window and then
    // pauses: the page pulls the focus into itself all the time, which must not pass for a click
    c.execute(
        "document.querySelector('iframe.app-frame').scrollIntoView({ block: 'center' });",
        vec![],
    )
    .await
    .unwrap();
    let frame = c
        .find(fantoccini::Locator::Css("iframe.app-frame"))
        .await
        .unwrap();
    use fantoccini::actions::InputSource;
    c.perform_actions(fantoccini::actions::MouseActions::new("mouse".into()).then(
        fantoccini::actions::PointerAction::MoveToElement {
            element: frame,
            duration: None,
            x: 0.0,
            y: 0.0,
        },
    ))
    .await
    .unwrap();
    let hovered = c
        .execute(
            "return document.querySelector('iframe.app-frame').matches(':hover');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(hovered, json!(true));
    c.find(fantoccini::Locator::Css("#input"))
        .await
        .unwrap()
        .send_keys(" and more")
        .await
        .unwrap();
    all_refused(&c, tries + 12, "typing here and more").await;
    // its card says they were held (one note however many), and the user's click there takes
    // the latest into the message box, as the app's
    assert_eq!(count(&c, ".app-held").await, 1);
    assert_eq!(
        text_content(&c, ".app-held").await,
        "The app’s message was held: you had used the window just before, so the click may not have been in the app. Click in the app again in a moment, or put it in the message box"
    );
    click(&c, ".app-held [data-action='take-message']").await;
    wait_until(
        &c,
        r"/^typing here and more\nsneaky \d+$/.test(document.querySelector('#input').value)",
    )
    .await;
    assert_eq!(count(&c, ".app-held").await, 0);
    assert_eq!(count(&c, ".app-draft").await, 1);
    // a click in the app: its message lands in the message box, marked as the app's. The click
    // counts once the window has had no input of its own for the browser's activation time
    // (5 s), so that the activation cannot be the window's typing
    tokio::time::sleep(Duration::from_millis(5500)).await;
    click_in_app(&c, "#say").await;
    // (its own timer's messages may land with it now: they follow the user's click in it)
    wait_until(
        &c,
        "document.querySelector('#input').value.startsWith('typing here and more\\n') && document.querySelector('#input').value.includes('\\nhello from the app')",
    )
    .await;
    assert_eq!(
        text_content(&c, ".app-draft").await,
        "✎ Written by the app “evil” of evil: read it, then send it if you want to."
    );

    // closed by the user, it never answers its teardown: its frame goes after the wait anyway
    assert_eq!(frame_state(&c).await, json!("ready"));
    click(&c, ".tool-card [data-action='close-app']").await;
    let asked = Instant::now();
    assert_eq!(frame_state(&c).await, json!("closing"));
    wait_until(
        &c,
        "document.querySelectorAll('iframe.app-frame').length === 1",
    )
    .await;
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
    c.close().await.unwrap();
}

/// Its frame navigates itself: to another mcpapp: address (none it may know), to http, to its
/// own address again (which would be served): each closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_frame_that_loads_another_page_is_closed() {
    let (listener, port) = watched_listener();
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let scratch = tempfile::tempdir().unwrap();
    let home = app_home_with(
        &fake,
        "evil",
        hostile_server(port, &scratch.path().join("m")),
    );
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    let before = c.current_url().await.unwrap();
    send_and_allow(&c, "show it").await;
    wait_app_ready(&c).await;
    for (button, url) in [
        ("#nav-app", "mcpapp://ffff…/app"),
        ("#nav-http", "http://127.0.0.1"),
        ("#nav-self", "its own address"),
    ] {
        in_frame_until(
            &c,
            "document.querySelector('#state').textContent === 'done'",
        )
        .await;
        let before_log = server_log(&c, "evil").await;
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
            log != before_log.as_slice() && log.last().is_some_and(|l| l == closed)
        })
        .await;
        show_app_again(&c).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(listener.accept().is_err(), "the frame reached the network");
    assert_eq!(c.current_url().await.unwrap(), before);
    c.close().await.unwrap();
}
