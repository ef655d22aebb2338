//! The official "basic" MCP App (npm @modelcontextprotocol/server-basic-*, 2.0.x) in each
//! framework it is written in besides vanilla JS and Vue, which have tests of their own: React,
//! Preact, Solid and Svelte. Each renders the time its server gave, gets it again through a call
//! of its own server's tool (asked once, on its card, in the app's name), and writes a message
//! into the message box after the user's click in it.

use serde_json::json;

use super::*;

/// The first ISO time in the app's page ('' while there is none).
const TIME: &str = "(document.body.innerText.match(/\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z?/) ?? [''])[0]";

async fn the_basic_app_works(name: &str, tool: &'static str) {
    let (_fake, _home, App { c, driver: _driver }) = show_example(name, tool, json!({})).await;
    show_app(&c, "what time is it?").await;
    in_frame_until(&c, &format!("{TIME} !== ''")).await;
    let first = in_app_eval(&c, TIME).await;
    // its buttons, named by their words (each framework marks them up its own way)
    enter_app(&c, 0).await;
    c.execute(
        "for (const b of document.querySelectorAll('button'))
           b.dataset.words = b.textContent.trim().toLowerCase().replace(/\\s+/g, '-');",
        vec![],
    )
    .await
    .unwrap();
    leave_app(&c).await;
    // Get Server Time: a call of its own server's tool, asked on its card in its name
    click_in_app(&c, "button[data-words='get-server-time']").await;
    wait_css(&c, ".tool-card .app-box .app-approval").await;
    let asker = text_content(&c, ".app-approval .app-asker").await;
    assert!(
        asker.starts_with("The app “") && asker.ends_with(&format!("” of {name}")),
        "{asker}"
    );
    click(&c, ".app-approval [data-action='allowOnce']").await;
    in_frame_until(&c, &format!("{TIME} !== '' && {TIME} !== {first}")).await;
    // Send Message: the user clicked it, so it lands in the message box, marked as the app's
    user_click_in_app(&c, "button[data-words='send-message']").await;
    wait_until(&c, "document.querySelector('#input').value.trim() !== ''").await;
    assert!(text_content(&c, ".app-draft")
        .await
        .starts_with("✎ Written by the app “"));
    // no card but the model's call
    assert_eq!(count(&c, ".tool-card").await, 1);
    screenshot(&c, &format!("app-{name}.png")).await;
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn basic_react_gets_the_time_and_writes_a_message() {
    the_basic_app_works("basic-react", "basic-react__get-time").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn basic_preact_gets_the_time_and_writes_a_message() {
    the_basic_app_works("basic-preact", "basic-preact__get-time").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn basic_solid_gets_the_time_and_writes_a_message() {
    the_basic_app_works("basic-solid", "basic-solid__get-time").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn basic_svelte_gets_the_time_and_writes_a_message() {
    the_basic_app_works("basic-svelte", "basic-svelte__get-time").await;
}
