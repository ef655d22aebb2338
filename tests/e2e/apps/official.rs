//! The official MCP Apps examples from npm (@modelcontextprotocol/server-*, 2.0.x) that failed
//! here before the window ran apps as the reference host does: each is shown on its card and
//! checked to render and to answer what the user does in it.
//! - threejs: its scene is code it evaluates (the frame's policy allows eval), and its full
//!   screen button asks the host for full screen;
//! - basic-vue: Vue reads `window.parent` (the page between window and app, same origin), so its
//!   buttons work: a tool call (asked once, on its card), a log line, a message (after the click);
//! - video-resource: reads its video through `resources/read` of its server (offline the server
//!   cannot fetch it, and the app shows the server's own error, not "not supported");
//! - transcript: asks for the microphone and the clipboard; asked about on its card first,
//!   granted through its frames' `allow`;
//! - customer-segmentation: its chart is drawn from its own data call, asked once;
//! - wiki-explorer: a `100vh` page keeps its height (the host says how much it has);
//! - scenario-modeler and budget-allocator: render, and recompute when a control changes.

use serde_json::{json, Value};

use super::*;

/// Answers the app's question on its card about `tool` with "Allow for this app".
async fn allow_for_the_app(c: &fantoccini::Client, tool: &str) {
    let css = format!(
        ".tool-card .app-box .app-approval[data-tool={}]",
        json!(tool)
    );
    wait_css(c, &css).await;
    click(c, &format!("{css} [data-action='allowConversation']")).await;
    wait_until(c, &format!("!document.querySelector({})", json!(css))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn threejs_evaluates_its_scene_and_goes_full_screen() {
    let (_fake, _home, App { c, driver: _driver }) =
        show_example("threejs", "threejs__show_threejs_scene", json!({})).await;
    show_app(&c, "show me a cube").await;
    in_frame_until(&c, "!!document.querySelector('#threejs-canvas')").await;
    // the scene's code ran (eval allowed): no error about it
    let error = in_app_eval(
        &c,
        "document.querySelector('.error-overlay')?.textContent ?? ''",
    )
    .await;
    assert!(
        !error.as_str().unwrap().to_lowercase().contains("eval"),
        "{error}"
    );
    // its own full screen button: the host offers full screen, and goes there
    in_frame_until(&c, "!!document.querySelector('.fullscreen-btn.available')").await;
    click_in_app(&c, ".fullscreen-btn").await;
    wait_css(
        &c,
        ".tool-card .app-box.app-fullscreen iframe.app-frame[data-mode='fullscreen']",
    )
    .await;
    in_frame_until(
        &c,
        "!!document.querySelector('.threejs-container.fullscreen')",
    )
    .await;
    screenshot(&c, "app-threejs-fullscreen.png").await;
    // back in the chat from the card's button: the app hears it
    click(&c, ".app-box [data-action='app-inline']").await;
    wait_css(&c, ".tool-card iframe.app-frame[data-mode='inline']").await;
    in_frame_until(
        &c,
        "!document.querySelector('.threejs-container.fullscreen')",
    )
    .await;
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn basic_vue_reads_its_parent_and_its_buttons_work() {
    let (_fake, _home, App { c, driver: _driver }) =
        show_example("basic-vue", "basic-vue__get-time", json!({})).await;
    show_app(&c, "what time is it?").await;
    in_frame_until(
        &c,
        "/^\\d{4}-/.test(document.querySelector('code.server-time')?.textContent ?? '')",
    )
    .await;
    let first = in_app_eval(&c, "document.querySelector('code.server-time').textContent").await;
    // Get Server Time: a call of its own server's tool, asked on its card in its name
    user_click_in_app(&c, ".action:nth-of-type(1) button").await;
    wait_css(&c, ".app-box .app-approval").await;
    assert_eq!(
        text_content(&c, ".app-approval .app-asker").await,
        "The app “Get Time App” of basic-vue"
    );
    click(&c, ".app-approval [data-action='allowOnce']").await;
    in_frame_until(
        &c,
        &format!("(document.querySelector('code.server-time')?.textContent ?? '') !== {first}"),
    )
    .await;
    // Send Log: into its server's log
    click_in_app(&c, ".action:nth-of-type(3) button").await;
    wait_for_log(&c, "basic-vue", "[app] [info] This is log text.").await;
    // Send Message: the user clicked it, so it lands in the message box, marked as the app's
    user_click_in_app(&c, ".action:nth-of-type(2) button").await;
    wait_until(
        &c,
        "document.querySelector('#input').value === 'This is message text.'",
    )
    .await;
    assert_eq!(
        text_content(&c, ".app-draft").await,
        "✎ Written by the app “Get Time App” of basic-vue: read it, then send it if you want to."
    );
    // no card but the model's call
    assert_eq!(count(&c, ".tool-card").await, 1);
    screenshot(&c, "app-vue.png").await;
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn video_resource_reads_its_video_through_its_server() {
    let (_fake, _home, App { c, driver: _driver }) = show_example(
        "video-resource",
        "video-resource__play_video",
        json!({"videoId": "bunny-1mb"}),
    )
    .await;
    show_app(&c, "play the bunny").await;
    // the server answered the read: the video plays (online) or the server's own error shows
    // (offline: it cannot fetch the video); never "not supported"
    in_frame_until(
        &c,
        "!!document.querySelector('#video')?.src || getComputedStyle(document.querySelector('#error')).display !== 'none'",
    )
    .await;
    let (src, error) = (
        in_app_eval(&c, "document.querySelector('#video').src").await,
        in_app_eval(&c, "document.querySelector('#error-message').textContent").await,
    );
    let error = error.as_str().unwrap().to_string();
    assert!(
        src.as_str().unwrap().starts_with("blob:") || error.contains("fetch"),
        "src {src}, error {error}"
    );
    assert!(!error.contains("not supported"), "{error}");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn transcript_is_asked_about_then_granted_the_microphone() {
    let (_fake, _home, App { c, driver: _driver }) =
        show_example("transcript", "transcript__transcribe", json!({})).await;
    send_and_allow(&c, "take notes").await;
    // before it loads: what it asks for, on its card
    wait_css(&c, ".tool-card .app-box .app-permissions").await;
    assert_eq!(
        text_content(&c, ".app-permissions .approval-question").await,
        "The app of transcript asks to use your microphone and write to your clipboard."
    );
    assert!(c
        .find(fantoccini::Locator::Css("iframe.app-frame"))
        .await
        .is_err());
    screenshot(&c, "app-permissions.png").await;
    click(&c, ".app-permissions [data-action='grant']").await;
    wait_app_ready(&c).await;
    // granted through its frames' `allow`: the window's and the one its page is in
    let outer = c
        .execute(
            "return document.querySelector('iframe.app-frame').getAttribute('allow');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(outer, "microphone; clipboard-write");
    c.enter_frame(0).await.unwrap();
    let inner = c
        .execute(
            "return document.querySelector('iframe').getAttribute('allow');",
            vec![],
        )
        .await
        .unwrap();
    c.enter_parent_frame().await.unwrap();
    assert_eq!(inner, "microphone; clipboard-write");
    in_frame_until(&c, "!!document.querySelector('#start-btn')").await;
    // shown again (this run): not asked again
    click(&c, ".tool-card [data-action='close-app']").await;
    wait_css(&c, ".tool-card [data-action='show-app']").await;
    show_app_again(&c).await;
    assert!(c
        .find(fantoccini::Locator::Css(".app-permissions"))
        .await
        .is_err());
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn transcript_refused_gets_no_microphone() {
    let (_fake, _home, App { c, driver: _driver }) =
        show_example("transcript", "transcript__transcribe", json!({})).await;
    send_and_allow(&c, "take notes").await;
    wait_css(&c, ".app-permissions").await;
    click(&c, ".app-permissions [data-action='refuse']").await;
    wait_app_ready(&c).await;
    let allow = c
        .execute(
            "return document.querySelector('iframe.app-frame').getAttribute('allow');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(allow, Value::Null);
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn customer_segmentation_draws_its_chart_from_its_own_call() {
    let (_fake, _home, App { c, driver: _driver }) = show_example(
        "customer-segmentation",
        "customer-segmentation__get-customer-data",
        json!({}),
    )
    .await;
    show_app(&c, "show me the customers").await;
    allow_for_the_app(&c, "get-customer-data").await;
    // the chart has points: its canvas is not blank
    in_frame_until(
        &c,
        "(() => { const c = document.querySelector('#scatter-chart'); if (!c || !c.width) return false;
           const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
           for (let i = 3; i < d.length; i += 4) if (d[i]) return true; return false; })()",
    )
    .await;
    // another axis: drawn again from its data, without asking
    enter_app(&c, 0).await;
    c.execute(
        "const s = document.querySelector('#x-axis'); s.value = 'nps'; s.dispatchEvent(new Event('change'));",
        vec![],
    )
    .await
    .unwrap();
    leave_app(&c).await;
    assert!(c
        .find(fantoccini::Locator::Css(".app-approval"))
        .await
        .is_err());
    screenshot(&c, "app-customer-segmentation.png").await;
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn wiki_explorer_keeps_its_height() {
    let (_fake, _home, App { c, driver: _driver }) = show_example(
        "wiki-explorer",
        "wiki-explorer__get-first-degree-links",
        json!({"url": "https://en.wikipedia.org/wiki/Bridge"}),
    )
    .await;
    show_app(&c, "explore bridges").await;
    in_frame_until(&c, "!!document.querySelector('#graph svg, #graph canvas')").await;
    // a page as tall as its frame (100vh) is not shrunk by the frame's border, pass after pass
    let heights = c
        .execute(
            "const f = document.querySelector('iframe.app-frame'); return [f.offsetHeight, f.clientHeight];",
            vec![],
        )
        .await
        .unwrap();
    let outer = heights[0].as_u64().unwrap();
    assert!(outer >= 300, "{heights}");
    let inner = in_app_eval(
        &c,
        "[window.innerHeight, document.documentElement.scrollHeight]",
    )
    .await;
    assert!(
        inner[1].as_u64().unwrap() <= inner[0].as_u64().unwrap(),
        "a scrollbar inside: {inner}"
    );
    // full screen and back: it has its height in the chat again (it kept full screen's), and
    // keeps it once it has heard it is inline again
    click(&c, ".app-box [data-action='app-fullscreen']").await;
    wait_css(
        &c,
        ".app-box.app-fullscreen iframe.app-frame[data-mode='fullscreen']",
    )
    .await;
    in_frame_until(&c, &format!("window.innerHeight > {outer}")).await;
    click(&c, ".app-box [data-action='app-inline']").await;
    wait_css(&c, ".tool-card iframe.app-frame[data-mode='inline']").await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let back = c
        .execute(
            "return document.querySelector('iframe.app-frame').offsetHeight;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(back.as_u64(), Some(outer), "{heights}");
    c.close().await.unwrap();
}

/// Moves the first range input matching `css` in the app's page by `by` steps (as a person
/// dragging it would: the value, then an `input` and a `change` event).
async fn nudge(c: &fantoccini::Client, css: &str, by: i32) {
    enter_app(c, 0).await;
    c.execute(
        &format!(
            "const s = document.querySelector({});
             const v = Number(s.value) + {by} * Number(s.step || 1);
             Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(s, String(v));
             s.dispatchEvent(new Event('input', {{ bubbles: true }}));
             s.dispatchEvent(new Event('change', {{ bubbles: true }}));",
            json!(css)
        ),
        vec![],
    )
    .await
    .unwrap();
    leave_app(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn scenario_modeler_recomputes_when_a_parameter_moves() {
    // its figures: the metric cards (end MRR, revenue, profit) and the summary line; the first
    // slider is the starting MRR, which moves the cards (the summary's growth is a rate: it stays)
    const FIGURES: &str = "[...document.querySelectorAll('.metric-value, .summary-value')].map((n) => n.textContent).join('|')";
    let (_fake, _home, App { c, driver: _driver }) = show_example(
        "scenario-modeler",
        "scenario-modeler__get-scenario-data",
        json!({}),
    )
    .await;
    show_app(&c, "model a scenario").await;
    in_frame_until(
        &c,
        "!!document.querySelector('.slider-input') && !!document.querySelector('.metric-value')",
    )
    .await;
    let before = in_app_eval(&c, FIGURES).await;
    nudge(&c, ".slider-input", 5).await;
    in_frame_until(&c, &format!("{FIGURES} !== {before}")).await;
    screenshot(&c, "app-scenario-modeler.png").await;
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn budget_allocator_reallocates_when_a_slider_moves() {
    let (_fake, _home, App { c, driver: _driver }) = show_example(
        "budget-allocator",
        "budget-allocator__get-budget-data",
        json!({}),
    )
    .await;
    show_app(&c, "allocate the budget").await;
    in_frame_until(
        &c,
        "!!document.querySelector('#sliders-container input[type=range]')",
    )
    .await;
    let before = in_app_eval(&c, "document.querySelector('#status-bar').textContent").await;
    nudge(&c, "#sliders-container input[type=range]", 3).await;
    in_frame_until(
        &c,
        &format!("document.querySelector('#status-bar').textContent !== {before}"),
    )
    .await;
    screenshot(&c, "app-budget-allocator.png").await;
    every_display_mode(&c).await;
    // in picture in picture: above the composer, and its lower sliders within reach (the app
    // scrolls in its frame, or the frame is made larger by its corner)
    click(&c, ".app-box [data-action='app-pip']").await;
    wait_css(&c, ".app-box.app-pip iframe.app-frame[data-mode='pip']").await;
    let above = c
        .execute(
            "return document.querySelector('.app-box.app-pip').getBoundingClientRect().bottom
                    <= document.querySelector('#composer').getBoundingClientRect().top;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(above, json!(true));
    screenshot(&c, "app-budget-allocator-pip.png").await;
    c.close().await.unwrap();
}
