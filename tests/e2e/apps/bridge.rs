//! The host side of the apps bridge against the official MCP Apps SDK: the page of
//! tests/fixtures/sdk_app_server.py is built on the `App` class of npm
//! @modelcontextprotocol/ext-apps, so what it shows is what the SDK made of what the host sent.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;

/// The SDK fixture: it answers its teardown after `delay_ms`; `secret` writes `marker` if it runs.
fn sdk_server(delay_ms: u64, marker: &std::path::Path) -> switchboard_engine::mcp::ServerConfig {
    let sdk = crate::support::repo_dir().join(
        "tests/servers/node_modules/@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js",
    );
    assert!(
        sdk.exists(),
        "{} is missing: run scripts/install-deps.sh --test",
        sdk.display()
    );
    switchboard_engine::mcp::ServerConfig::new(
        crate::support::pypi_server("python").to_str().unwrap(),
        &[
            crate::support::fixture("sdk_app_server.py")
                .to_str()
                .unwrap(),
            sdk.to_str().unwrap(),
            &delay_ms.to_string(),
            marker.to_str().unwrap(),
        ],
    )
}

/// The model calls the fixture's `show` (topic "bridges") when the user writes; a fresh app home
/// with the fixture as server `sdk` (`delay_ms` and `marker` as for [`sdk_server`]).
fn sdk_app_home(fake: &FakeOllama, delay_ms: u64, marker: &std::path::Path) -> tempfile::TempDir {
    fake.set_responder(calls_with("sdk__show", json!({"topic": "bridges"})));
    app_home_with(fake, "sdk", sdk_server(delay_ms, marker))
}

/// The app frame's height as the window set it.
async fn frame_height(c: &fantoccini::Client) -> String {
    let v = c
        .execute(
            "return document.querySelector('iframe.app-frame').style.height;",
            vec![],
        )
        .await
        .unwrap();
    v.as_str().unwrap().to_string()
}

/// Clicks `button` inside the app, then waits in the window until `condition` holds.
async fn in_app(c: &fantoccini::Client, button: &str, condition: &str) {
    click_in_app(c, button).await;
    wait_until(c, condition).await;
}

/// Waits inside the app until `#id`'s text starts with `prefix`; its text.
async fn app_text(c: &fantoccini::Client, id: &str, prefix: &str) -> String {
    enter_app(c, 0).await;
    wait_until(
        c,
        &format!(
            "(document.getElementById({})?.textContent ?? '').startsWith({})",
            json!(id),
            json!(prefix)
        ),
    )
    .await;
    let text = text_content(c, &format!("#{id}")).await;
    leave_app(c).await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_sdk_app_gets_its_context_and_input_and_what_it_asks_goes_through_the_window() {
    let fake = FakeOllama::start().await;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("secret-ran");
    let home = sdk_app_home(&fake, 0, &marker);
    // the stand-in browser: an xdg-open on the app's PATH that writes down what it was given
    let browser = StandInBrowser::install(home.path());
    let App { c, driver: _driver } =
        App::launch_with_env(home.path(), &[("PATH", &browser.path)]).await;
    wait_servers(&c, 1).await;
    show_app(&c, "show me bridges").await;

    // what the SDK's App made of the host context, the tool's input and its result
    let context: Value = serde_json::from_str(&app_text(&c, "context", "{").await).unwrap();
    let width = c
        .execute(
            "return Math.round(document.querySelector('iframe.app-frame').clientWidth);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        context,
        json!({
            "theme": "light",
            "displayMode": "inline",
            "availableDisplayModes": ["inline", "fullscreen", "pip"],
            "containerDimensions": {"width": width, "maxHeight": 6000},
            "platform": "desktop",
            "tool": "show",
            "host": "switchboard",
        })
    );
    assert_eq!(app_text(&c, "input", "{").await, r#"{"topic":"bridges"}"#);
    assert_eq!(app_text(&c, "result", "shown").await, "shown: bridges");

    // its size, as the SDK's autoResize reports it: the frame is exactly that tall (its border
    // added, as it is border-box), so the page never scrolls inside it; tall, it grows past what
    // used to be an 800 px limit
    let no_scrollbar = "document.documentElement.scrollHeight <= window.innerHeight";
    in_app(
        &c,
        "#grow",
        "parseInt(document.querySelector('iframe.app-frame').style.height) > 2000",
    )
    .await;
    in_frame_until(&c, no_scrollbar).await;
    in_app(
        &c,
        "#shrink",
        "parseInt(document.querySelector('iframe.app-frame').style.height) < 2000",
    )
    .await;
    in_frame_until(&c, no_scrollbar).await;
    let content = frame_height(&c).await;
    let px: u32 = content.trim_end_matches("px").parse().unwrap();
    assert!((62..600).contains(&px), "{content}");
    let inner = c
        .execute(
            "const f = document.querySelector('iframe.app-frame'); return [f.offsetHeight - f.clientHeight, parseInt(f.style.height) - f.clientHeight];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        inner,
        json!([2, 2]),
        "the frame's own border, added to the app's height"
    );

    // a link goes through the link dialog; cancelled, the app is told it did not open
    in_app(
        &c,
        "#open-link",
        "!!document.querySelector('#link-dialog[open]')",
    )
    .await;
    assert_eq!(
        text_content(&c, "#link-url").await,
        "https://docs.example/apps?from=app"
    );
    screenshot(&c, "app-link.png").await;
    click(&c, "#link-cancel").await;
    assert_eq!(app_text(&c, "link", "refused").await, "refused");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(browser.opened(), "", "cancelled: nothing opened");
    // opened: the browser gets it, the app is told
    in_app(
        &c,
        "#open-link",
        "!!document.querySelector('#link-dialog[open]')",
    )
    .await;
    click(&c, "#link-open").await;
    assert_eq!(app_text(&c, "link", "opened").await, "opened");
    assert_eq!(
        browser.wait_opened(1).await,
        "https://docs.example/apps?from=app\n"
    );

    // a tool of its own server that only the model may call: refused, nothing runs or asks
    click_in_app(&c, "#secret").await;
    assert_eq!(
        app_text(&c, "secret-result", "refused").await,
        "refused: The app cannot call \"secret\": sdk offers no such tool to apps."
    );
    assert_refused_call_left_nothing(&c, &marker).await;
    screenshot(&c, "app-bridge.png").await;
    // its server's resources, read and listed through the host
    in_app(&c, "#read", "true").await;
    assert_eq!(
        app_text(&c, "read-result", "hello").await,
        "hello from the server"
    );
    click_in_app(&c, "#list").await;
    let listed = app_text(&c, "list-result", "notes://").await;
    assert!(
        listed.split(' ').any(|u| u == "notes://greeting"),
        "{listed}"
    );

    // context for the model: it goes with the next request, marked as the app's
    click_in_app(&c, "#model-context").await;
    assert_eq!(app_text(&c, "model-context-result", "given").await, "given");
    let asked = fake.chat_requests().len();
    fake.set_responder(|_: &Value| {
        crate::support::fake_ollama::Stream::new()
            .text("Noted.")
            .done()
            .reply()
    });
    send(&c, "go on").await;
    wait_css(&c, ".msg.assistant.complete:last-of-type").await;
    let t = std::time::Instant::now();
    while fake.chat_requests().len() == asked {
        assert!(t.elapsed() < WAIT, "the model was not asked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sent = fake.chat_requests().last().cloned().unwrap();
    let system = sent["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(
        system.ends_with("[From the app “sdk-fixture” of sdk]\nThe reader is at the part about bridges.\n{\"part\":2}"),
        "{system}"
    );

    // full screen, asked by the app: the window's frame covers the window, the app hears its
    // fixed size; back inline from the card
    click_in_app(&c, "#fullscreen").await;
    assert_eq!(app_text(&c, "mode", "f").await, "fullscreen");
    wait_css(
        &c,
        ".app-box.app-fullscreen iframe.app-frame[data-mode='fullscreen']",
    )
    .await;
    let changed: Value = serde_json::from_str(&app_text(&c, "changed", "{").await).unwrap();
    assert_eq!(changed["displayMode"], "fullscreen", "{changed}");
    screenshot(&c, "app-fullscreen.png").await;
    click(&c, ".app-box [data-action='app-inline']").await;
    wait_css(&c, ".tool-card iframe.app-frame[data-mode='inline']").await;
    // picture in picture is not among the modes it declares: not offered
    let pip = c
        .execute(
            "return document.querySelector('.app-box [data-action=\"app-pip\"]').hidden;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(pip, json!(true));

    // a message it writes after the user's click: in the message box, marked as the app's
    user_click_in_app(&c, "#say").await;
    assert_eq!(app_text(&c, "said", "sent").await, "sent");
    wait_until(
        &c,
        "document.querySelector('#input').value === 'Tell me more about bridges.'",
    )
    .await;
    assert_eq!(
        text_content(&c, ".app-draft").await,
        "✎ Written by the app “sdk-fixture” of sdk: read it, then send it if you want to."
    );

    // a size below the smallest: the smallest (last, as a 60 px frame is hard to click in)
    in_app(
        &c,
        "#tiny",
        "document.querySelector('iframe.app-frame').style.height === '62px'",
    )
    .await;
    c.close().await.unwrap();
}

/// `ui/resource-teardown` before a frame goes, whatever the reason, its answer waited for: the
/// page's own log line (sent from its onteardown) comes before the host's note that it answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_is_told_before_its_frame_goes_and_its_answer_is_waited_for() {
    let fake = FakeOllama::start().await;
    let scratch = tempfile::tempdir().unwrap();
    let home = sdk_app_home(&fake, 1500, &scratch.path().join("m"));
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    show_app(&c, "show me bridges").await;
    wait_css(&c, "#conversation-list .conv").await;

    // the conversation is left: the chat is empty at once, the page is asked and waited for
    click(&c, "#new-chat").await;
    wait_css(&c, "#messages .empty-state").await;
    let closing = c
        .execute(
            "const f = document.querySelector('#messages .app-closing iframe.app-frame');
             return [f?.dataset.state ?? null, document.querySelectorAll('.tool-card').length];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(closing, json!(["closing", 0]));
    let log = wait_for_log(&c, "sdk", "app closed").await;
    let asked = log
        .iter()
        .position(|l| l == "[app] [info] teardown asked: its conversation is no longer shown")
        .unwrap_or_else(|| panic!("{log:#?}"));
    let closed = log
        .iter()
        .position(|l| {
            l.starts_with(
                "[switchboard] app closed (its conversation is no longer shown): it answered the teardown in",
            )
        })
        .unwrap_or_else(|| panic!("{log:#?}"));
    assert!(asked < closed, "{log:#?}");
    let ms: u64 = log[closed]
        .rsplit_once(" in ")
        .unwrap()
        .1
        .trim_end_matches(" ms")
        .parse()
        .unwrap();
    assert!((1500..3000).contains(&ms), "{}", log[closed]);
    wait_until(&c, "!document.querySelector('iframe.app-frame')").await;

    // back in the conversation, shown again and closed by the user: asked too
    click(&c, "#conversation-list .conv").await;
    show_app_again(&c).await;
    click(&c, ".tool-card [data-action='close-app']").await;
    assert_eq!(frame_state(&c).await, json!("closing"));
    let log = wait_for_log(
        &c,
        "sdk",
        "[switchboard] app closed (the user closed it): it answered the teardown in",
    )
    .await;
    assert!(
        log.iter()
            .any(|l| l == "[app] [info] teardown asked: the user closed it"),
        "{log:#?}"
    );
    wait_until(&c, "!document.querySelector('iframe.app-frame')").await;
    wait_css(&c, ".tool-card [data-action='show-app']").await;

    // the app asks to be closed itself (requestTeardown): asked, then gone, the card says so
    show_app_again(&c).await;
    in_app(&c, "#done", "!document.querySelector('iframe.app-frame')").await;
    assert_eq!(
        text_content(&c, ".tool-card .app-box .field-error").await,
        "The app closed itself."
    );
    wait_for_log(
        &c,
        "sdk",
        "[switchboard] app closed (it asked to be closed): it answered the teardown in",
    )
    .await;
    c.close().await.unwrap();
}

/// Closing the window while an app is shown: the app is told first, and the window waits for
/// its answer (the app's log: its line, then the host's, in the app's log file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn closing_the_window_tells_its_apps_first() {
    let fake = FakeOllama::start().await;
    let scratch = tempfile::tempdir().unwrap();
    let home = sdk_app_home(&fake, 800, &scratch.path().join("m"));
    let App { c, driver } =
        App::launch_with_env(home.path(), &[("SWITCHBOARD_LOG", "warn,apps=info")]).await;
    wait_servers(&c, 1).await;
    show_app(&c, "show me bridges").await;
    // quit as a person does, with the window's close button
    x_close_window();
    let logs = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("logs");
    let read = || {
        std::fs::read_dir(&logs)
            .map(|d| {
                d.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
                    .collect::<String>()
            })
            .unwrap_or_default()
    };
    let t = std::time::Instant::now();
    while !read().contains("sdk's app closed (the window is closing)") {
        assert!(t.elapsed() < WAIT, "{}", read());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = read();
    let asked = log
        .find("sdk's app: [info] teardown asked: the window is closing")
        .unwrap_or_else(|| panic!("{log}"));
    let closed = log
        .find("sdk's app closed (the window is closing): it answered the teardown in")
        .unwrap_or_else(|| panic!("{log}"));
    assert!(asked < closed, "{log}");
    drop(driver);
}
