//! A hostile app page (tests/fixtures/hostile_app_server.py) next to the built-in calculator: it
//! tries to leave its frames, open a window, read the window and the other app shown, reach the
//! network or the IPC, call tools it may not, and write a message for the user nobody asked for;
//! its allowed calls are asked about once, in its name, on its card; it never answers its
//! teardown, and it makes its frame navigate elsewhere.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_hostile_app_reaches_nothing_beyond_its_frame() {
    // a listener the page tries to reach: nothing must arrive
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
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

/// The app's own calls: asked about once (three at once, one question), on its card, in its
/// name; allowed for the app, they run without asking and without cards; arguments that do not
/// fit are refused unasked; turned off in the chat, refused; an app-only read-only tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_apps_calls_are_asked_once_in_its_name_on_its_card() {
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let scratch = tempfile::tempdir().unwrap();
    let home = app_home_with(&fake, "evil", hostile_server(9, &scratch.path().join("m")));
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    show_app(&c, "show it").await;
    report(&c, 0).await;
    // its height in the chat, which it has again when it comes back from the other modes
    let inline_height = c
        .execute(
            "return document.querySelector('iframe.app-frame').style.height;",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        inline_height.as_str().unwrap().ends_with("px"),
        "{inline_height}"
    );
    // full screen from its card's button: the question about its call shows with it, in sight
    // and answerable (the rest of the card stays in the chat, under the app)
    click(&c, ".app-box [data-action='app-fullscreen']").await;
    wait_css(
        &c,
        ".app-box.app-fullscreen iframe.app-frame[data-mode='fullscreen']",
    )
    .await;
    click_in_app(&c, "#peek").await;
    wait_css(&c, ".tool-card .app-box .app-approval").await;
    let seen = c
        .execute(
            "const a = document.querySelector('.app-approval');
             const r = a.getBoundingClientRect();
             const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
             return [r.height > 0 && r.top >= 0 && r.bottom <= innerHeight, a.contains(hit),
                     !!document.querySelector('.app-box.app-fullscreen')];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(seen, json!([true, true, true]));
    assert_eq!(
        text_content(&c, ".app-approval .approval-question").await,
        "The app “evil” of evil wants to run evil › peek with these arguments:"
    );
    // one question for its three calls, which says so, no card of their own
    wait_until(
        &c,
        "document.querySelector('.app-approval .app-waiting')?.dataset.waiting === '3'",
    )
    .await;
    assert_eq!(
        text_content(&c, ".app-approval .app-waiting").await,
        "3 calls of the app to this tool wait for this answer: it decides them all (“Allow once” runs each one)."
    );
    assert_eq!(count(&c, ".app-approval").await, 1);
    assert_eq!(count(&c, ".tool-card").await, 1);
    screenshot(&c, "app-call-approval.png").await;
    // picture in picture from its card's button while the question waits: the question comes
    // along, under the app, and gives way to it (the small frame keeps enough of itself to show
    // the app); answered there
    click(&c, ".app-box [data-action='app-pip']").await;
    wait_css(&c, ".app-box.app-pip iframe.app-frame[data-mode='pip']").await;
    let shared = c
        .execute(
            "const f = document.querySelector('iframe.app-frame').getBoundingClientRect();
             const q = document.querySelector('.app-box.app-pip > .app-approval').getBoundingClientRect();
             return [Math.round(f.height) >= 90, q.height > 0, q.top >= f.bottom];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(shared, json!([true, true, true]));
    screenshot(&c, "app-pip-approval.png").await;
    click(&c, ".app-approval [data-action='allowConversation']").await;
    wait_until(&c, "!document.querySelector('.app-approval')").await;
    // so a small frame in the window's corner, above the composer (Send and the message box stay
    // in sight and clickable), its app still there and on top; then back in the chat, as tall as
    // it was
    let uncovered = c
        .execute(
            "const b = document.querySelector('.app-box.app-pip').getBoundingClientRect();
             const top = document.querySelector('#composer').getBoundingClientRect().top;
             const at = (e) => { const r = e.getBoundingClientRect();
               return document.elementFromPoint(r.right - 4, r.top + r.height / 2); };
             const send = document.querySelector('#send'), input = document.querySelector('#input');
             return [b.bottom <= top, at(send) === send, at(input) === input];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(uncovered, json!([true, true, true]));
    let pip = c
        .execute(
            "const b = document.querySelector('.app-box.app-pip').getBoundingClientRect();
             const f = document.querySelector('iframe.app-frame').getBoundingClientRect();
             const hit = document.elementFromPoint(f.left + f.width / 2, f.top + f.height / 2);
             return [getComputedStyle(document.querySelector('.app-box.app-pip')).position,
                     b.right <= innerWidth && b.bottom <= innerHeight && b.width < innerWidth / 2,
                     f.height > 100, hit === document.querySelector('iframe.app-frame')];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(pip, json!(["fixed", true, true, true]));
    in_frame_until(
        &c,
        "document.querySelector('#state').textContent === 'done'",
    )
    .await;
    // moved by its handle: it goes where it is dragged, and comes back there
    let at = || async {
        c.execute(
            "const b = document.querySelector('.app-box.app-pip').getBoundingClientRect();
             return [Math.round(b.left), Math.round(b.top)];",
            vec![],
        )
        .await
        .unwrap()
    };
    let before = at().await;
    let handle = c
        .find(fantoccini::Locator::Css(
            ".app-box.app-pip [data-action='app-move']",
        ))
        .await
        .unwrap();
    {
        use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
        c.perform_actions(
            MouseActions::new("mouse".into())
                .then(PointerAction::MoveToElement {
                    element: handle,
                    duration: None,
                    x: 0.0,
                    y: 0.0,
                })
                .then(PointerAction::Down {
                    button: MOUSE_BUTTON_LEFT,
                })
                .then(PointerAction::MoveBy {
                    duration: Some(Duration::from_millis(200)),
                    x: -120.0,
                    y: -60.0,
                })
                .then(PointerAction::Up {
                    button: MOUSE_BUTTON_LEFT,
                }),
        )
        .await
        .unwrap();
        c.release_actions().await.unwrap();
    }
    let moved = at().await;
    assert_eq!(
        moved,
        json!([
            before[0].as_i64().unwrap() - 120,
            before[1].as_i64().unwrap() - 60
        ]),
        "{before}"
    );
    // (read as it comes back, before the app, told it is inline again, reports its new content)
    let height = c
        .execute(
            "document.querySelector(\".app-box [data-action='app-inline']\").click();
             const f = document.querySelector('iframe.app-frame');
             return [f.dataset.mode, f.style.height];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(height, json!(["inline", inline_height]));
    click(&c, ".app-box [data-action='app-pip']").await;
    wait_css(&c, ".app-box.app-pip iframe.app-frame[data-mode='pip']").await;
    assert_eq!(at().await, moved);
    screenshot(&c, "app-pip.png").await;
    click(&c, ".app-box [data-action='app-inline']").await;
    wait_css(&c, ".tool-card iframe.app-frame[data-mode='inline']").await;
    let peeked = app_text_when(
        &c,
        "peeked",
        "(document.querySelector('#peeked')?.textContent ?? '').endsWith(';')",
    )
    .await;
    // each ran, in order, and the app got the server's own result
    let results: Vec<Value> = peeked
        .trim_end_matches(';')
        .split(" | ")
        .map(|r| serde_json::from_str(r.strip_prefix("ran: ").expect(&peeked)).unwrap())
        .collect();
    assert_eq!(results.len(), 3, "{peeked}");
    for (n, r) in results.iter().enumerate() {
        assert_eq!(
            r["content"][0]["text"],
            format!("peeked {}", n + 1),
            "{peeked}"
        );
        assert_eq!(r["isError"], false, "{peeked}");
    }
    assert_eq!(count(&c, ".app-approval").await, 0);
    // allowed for this app: again, unasked; the card counts its calls (the refused ones too)
    let before: u64 = c
        .execute(
            "return Number(document.querySelector('.app-calls').dataset.calls);",
            vec![],
        )
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    click_in_app(&c, "#peek").await;
    app_text_when(
        &c,
        "peeked",
        "(document.querySelector('#peeked')?.textContent ?? '').split(';').length === 3",
    )
    .await;
    assert_eq!(count(&c, ".app-approval").await, 0);
    wait_until(
        &c,
        &format!(
            "document.querySelector('.app-calls')?.dataset.calls === '{}'",
            before + 3
        ),
    )
    .await;
    // arguments that do not fit: refused, nobody asked
    click_in_app(&c, "#bad-args").await;
    let bad = app_text_when(&c, "bad", "!!document.querySelector('#bad')?.textContent").await;
    assert!(
        bad.starts_with("refused: The arguments do not fit \"peek\": "),
        "{bad}"
    );
    // app-only and read-only, from a server whose word is believed: runs unasked
    click_in_app(&c, "#glance").await;
    let glanced = app_text_when(
        &c,
        "glanced",
        "!!document.querySelector('#glanced')?.textContent",
    )
    .await;
    assert!(glanced.contains("glanced"), "{glanced}");
    // eval runs in its page
    click_in_app(&c, "#eval").await;
    assert_eq!(
        app_text_when(
            &c,
            "evaluated",
            "!!document.querySelector('#evaluated')?.textContent"
        )
        .await,
        "eval: 42"
    );
    // turned off in this chat: refused for the app too
    c.execute_async(
        "const done = arguments[arguments.length - 1];
         window.__TAURI__.core.invoke('list_conversations').then((l) =>
           window.__TAURI__.core.invoke('set_conversation_tools',
             { id: l[0].id, choice: { disabledServers: [], disabledTools: ['evil/peek'] } })).then(() => done(true));",
        vec![],
    )
    .await
    .unwrap();
    click_in_app(&c, "#peek").await;
    let off = app_text_when(
        &c,
        "peeked",
        "(document.querySelector('#peeked')?.textContent ?? '').split(';').length === 4",
    )
    .await;
    assert!(
        off.ends_with("refused: The app cannot call \"peek\": it is turned off in this chat.;"),
        "{off}"
    );
    assert_eq!(count(&c, ".app-approval").await, 0);
    assert_eq!(count(&c, ".tool-card").await, 1);
    c.close().await.unwrap();
}

/// Its frame navigates itself: to another mcpapp: address (none it may know), to http, to its
/// own address again (which would be served): each closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_frame_that_loads_another_page_is_closed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
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

/// Its server allowed the network: the page reaches the origins it declares that the user saw
/// when allowing them, and no other (an origin it names later stays closed, and its card says so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_reaches_only_the_origins_the_user_saw_and_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
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
        assert!(Instant::now() < deadline, "the picture was never said: {now}");
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
