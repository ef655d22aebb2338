//! The hostile page's own tool calls: asked about, in its name, on its card.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;

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
