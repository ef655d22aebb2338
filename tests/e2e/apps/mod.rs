//! MCP Apps in the real window: an app page on its tool's card (the npm example server
//! server-basic-vanillajs), its button calling a tool through approval on a card of its own.
//! `bridge`: the host side of the bridge against the official SDK's `App` (host context, tool
//! input, sizes, links, a tool it may not call, teardown). `examples`: more npm example servers
//! (system-monitor, map, pdf) and what the server form says their apps name. `hostile`: a page
//! that tries to leave its frame, reach the network, the window or the IPC.
//!
//! `bridge` uses `tests/fixtures/sdk_app_server.py`, which inlines the SDK from node_modules into
//! its page. `official`: the examples that failed before the window ran apps as the reference host
//! does; `frameworks`: the basic app in React, Preact, Solid, Svelte; `rendering`: cohort-heatmap,
//! shadertoy, sheet-music; `hostile` uses `tests/fixtures/hostile_app_server.py`.

mod bridge;
mod examples;
mod frameworks;
mod hostile;
mod official;
mod rendering;

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

/// A fresh app home talking to `fake`, with these MCP servers.
fn app_home_with_servers(
    fake: &FakeOllama,
    servers: Vec<(&str, switchboard_engine::mcp::ServerConfig)>,
) -> tempfile::TempDir {
    home_with_servers(json!({"llmUrl": fake.url}), servers)
}

fn app_home_with(
    fake: &FakeOllama,
    name: &str,
    server: switchboard_engine::mcp::ServerConfig,
) -> tempfile::TempDir {
    app_home_with_servers(fake, vec![(name, server)])
}

/// A fresh app home with the npm example server `server-NAME` (see [`example_server`]) as server
/// `name`.
fn app_home_with_example(fake: &FakeOllama, name: &str, extra: &[&str]) -> tempfile::TempDir {
    app_home_with(fake, name, example_server(name, extra))
}

/// A fresh app home with server `name` next to the built-in calculator (whose tools show no app).
fn app_home_with_calculator(
    fake: &FakeOllama,
    name: &str,
    server: switchboard_engine::mcp::ServerConfig,
) -> tempfile::TempDir {
    let calculator = switchboard_engine::mcp::McpConfig::default_builtin()
        .servers
        .remove("calculator")
        .unwrap();
    app_home_with_servers(fake, vec![(name, server), ("calculator", calculator)])
}

/// The model calls `tool` (with `args`) when the user writes, and answers "Shown." after.
fn calls_with(
    tool: &'static str,
    args: Value,
) -> impl Fn(&Value) -> crate::support::fake_ollama::Reply {
    move |req: &Value| {
        if last_message(req)["role"] == "user" {
            Stream::new()
                .tool_calls(&[("a", tool, args.clone())])
                .done()
                .reply()
        } else {
            Stream::new().text("Shown.").done().reply()
        }
    }
}

fn calls(tool: &'static str) -> impl Fn(&Value) -> crate::support::fake_ollama::Reply {
    calls_with(tool, json!({}))
}

/// An npm MCP Apps example server (`server-NAME`) over stdio.
pub(crate) fn example_server(name: &str, extra: &[&str]) -> switchboard_engine::mcp::ServerConfig {
    let path = crate::support::app_server(name);
    let mut args = vec![path.to_str().unwrap(), "--stdio"];
    args.extend_from_slice(extra);
    switchboard_engine::mcp::ServerConfig::new("node", &args)
}

/// The last lines of server `name`'s log, as the servers list has them.
async fn server_log(c: &fantoccini::Client, name: &str) -> Vec<String> {
    let list = crate::app::servers_now(c).await;
    let server = list.iter().find(|s| s["name"] == name);
    serde_json::from_value(server.map_or(Value::Null, |s| s["stderrTail"].clone())).unwrap()
}

/// Waits until server `name`'s log has a line containing `part`; the whole log.
async fn wait_for_log(c: &fantoccini::Client, name: &str, part: &str) -> Vec<String> {
    let what = format!("a line with \"{part}\"");
    wait_for_log_where(c, name, &what, |log| log.iter().any(|l| l.contains(part))).await
}

/// Waits until server `name`'s log (as the window last heard it) is `what`, which `done` tells;
/// the whole log.
async fn wait_for_log_where(
    c: &fantoccini::Client,
    name: &str,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let t = std::time::Instant::now();
    loop {
        let log = server_log(c, name).await;
        if done(&log) {
            return log;
        }
        assert!(
            t.elapsed() < WAIT,
            "{name}'s log never had {what}: {log:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Sends `text` and, when the model's call of the tool asks on its card, allows it once.
async fn send_and_allow(c: &fantoccini::Client, text: &str) {
    send(c, text).await;
    wait_css(c, ".tool-card .approval").await;
    click(c, ".tool-card [data-action='allowOnce']").await;
}

/// [`send_and_allow`], then waits until the app on the call's card has started.
async fn show_app(c: &fantoccini::Client, text: &str) {
    send_and_allow(c, text).await;
    wait_app_ready(c).await;
}

/// Waits until the app frame on a card has started (its state `ready`).
async fn wait_app_ready(c: &fantoccini::Client) {
    wait_until(
        c,
        "document.querySelector('.tool-card iframe.app-frame')?.dataset.state === 'ready'",
    )
    .await;
}

/// Shows the card's app again with its Show the app button, and waits until it has started.
async fn show_app_again(c: &fantoccini::Client) {
    click(c, ".tool-card [data-action='show-app']").await;
    wait_app_ready(c).await;
}

/// Enters the page of the `n`th app shown (the window's frame `n` holds the page between window
/// and app, which holds the app's page), once that page's frame is there.
async fn enter_app(c: &fantoccini::Client, n: u16) {
    wait_until(
        c,
        &format!("document.querySelectorAll('iframe.app-frame').length > {n}"),
    )
    .await;
    c.enter_frame(n).await.unwrap();
    wait_until(c, "!!document.querySelector('iframe')").await;
    c.enter_frame(0).await.unwrap();
}

/// Back in the window from an app's page ([`enter_app`]), even when that page's frames are gone
/// (switching to the window itself leaves every frame).
async fn leave_app(c: &fantoccini::Client) {
    let window = c.window().await.unwrap();
    c.switch_to_window(window).await.unwrap();
}

/// Shows `tool` of example `name` (with `args`) and waits until its app has started.
async fn show_example(
    name: &str,
    tool: &'static str,
    args: Value,
) -> (FakeOllama, tempfile::TempDir, App) {
    let fake = FakeOllama::start().await;
    fake.set_responder(calls_with(tool, args));
    let home = app_home_with_example(&fake, name, &[]);
    let app = App::launch_with_servers(home.path(), 1).await;
    (fake, home, app)
}

/// Evaluates `expr` in the page of the first app shown; back in the window after.
async fn in_app_eval(c: &fantoccini::Client, expr: &str) -> Value {
    enter_app(c, 0).await;
    let v = c.execute(&format!("return {expr};"), vec![]).await.unwrap();
    leave_app(c).await;
    v
}

/// Waits in the app frame until `condition` holds there; back in the window after.
async fn in_frame_until(c: &fantoccini::Client, condition: &str) {
    enter_app(c, 0).await;
    wait_until(c, condition).await;
    leave_app(c).await;
}

/// Clicks `button` inside the app frame; back in the window after. First the window's chat is
/// scrolled so the button is in sight, as a person would: WebDriver scrolls it into view inside
/// the app's page only (the window is of another origin), and a click on a point below the
/// window's edge reaches nothing.
async fn click_in_app(c: &fantoccini::Client, button: &str) {
    enter_app(c, 0).await;
    let at = c
        .execute(
            "const r = document.querySelector(arguments[0]).getBoundingClientRect();
             return r.top + r.height / 2;",
            vec![json!(button)],
        )
        .await
        .unwrap();
    leave_app(c).await;
    c.execute(
        "const f = document.querySelector('iframe.app-frame');
         const y = f.getBoundingClientRect().top + f.clientTop + arguments[0];
         let s = f.parentElement;
         while (s && !(s.scrollHeight > s.clientHeight && /auto|scroll/.test(getComputedStyle(s).overflowY))) s = s.parentElement;
         if (s) { const box = s.getBoundingClientRect(); s.scrollTop += y - (box.top + s.clientHeight / 2); }",
        vec![at],
    )
    .await
    .unwrap();
    enter_app(c, 0).await;
    click(c, button).await;
    leave_app(c).await;
}

/// Clicks `button` inside the app frame as the user's own gesture in the app (what lets an app
/// write a message), some seconds after the test last used the window: the window counts an
/// input as the app's only when it saw none of its own within the browser's activation span
/// (`app-bridge.js`, `gestureIn`).
async fn user_click_in_app(c: &fantoccini::Client, button: &str) {
    tokio::time::sleep(std::time::Duration::from_millis(5200)).await;
    click_in_app(c, button).await;
}

/// What an app's call of a tool it may not call left: nothing ran (no `marker`, which the
/// fixture's model-only tool writes) and nothing asked (the model's call is the only card).
async fn assert_refused_call_left_nothing(c: &fantoccini::Client, marker: &std::path::Path) {
    assert!(!marker.exists(), "the model-only tool ran");
    let cards = c
        .execute(
            "return document.querySelectorAll('.tool-card').length;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(cards, json!(1));
}

/// In the app's page: it shows something (text, a picture, a canvas, a chart), not a blank page.
const SHOWS_SOMETHING: &str = "(() => { const b = document.body; if (!b) return false; \
    const r = b.getBoundingClientRect(); \
    return r.width > 0 && r.height > 0 && ((b.innerText || '').trim().length > 0 \
      || document.querySelectorAll('canvas, svg, img, video').length > 0); })()";

/// The first app shown, in every display mode it declares (from its card's buttons) and back:
/// in each it still shows something; in full screen it fills the window and its way back is in
/// sight; in picture in picture it covers none of the composer's controls; back in the chat it
/// has the height it had there.
async fn every_display_mode(c: &fantoccini::Client) -> usize {
    in_frame_until(c, SHOWS_SOMETHING).await;
    let inline = c
        .execute(
            "return document.querySelector('iframe.app-frame').offsetHeight;",
            vec![],
        )
        .await
        .unwrap();
    let mut walked = 0;
    for mode in ["fullscreen", "pip"] {
        let button = format!(".app-box [data-action='app-{mode}']");
        if count(c, &button).await == 0 {
            continue;
        }
        walked += 1;
        click(c, &button).await;
        wait_css(
            c,
            &format!(".app-box.app-{mode} iframe.app-frame[data-mode='{mode}']"),
        )
        .await;
        in_frame_until(c, SHOWS_SOMETHING).await;
        // what of the window the app's box covers, and whether its way back is in sight
        let seen = c
            .execute(
                "const box = document.querySelector('.app-box').getBoundingClientRect();
                 const meets = (r) => r.width > 0 && r.height > 0 && r.left < box.right
                   && box.left < r.right && r.top < box.bottom && box.top < r.bottom;
                 const covered = ['#send', '#stop', '#input', '#attach', '#tools-button', '#model-select']
                   .filter((s) => { const e = document.querySelector(s); return e && !e.hidden
                     && getComputedStyle(e).display !== 'none' && meets(e.getBoundingClientRect()); });
                 const back = document.querySelector(\".app-box [data-action='app-inline']\")
                   .getBoundingClientRect();
                 return { covered,
                   fills: box.width >= innerWidth * 0.9 && box.height >= innerHeight * 0.8,
                   back: back.width > 0 && back.top >= 0 && back.bottom <= innerHeight
                     && back.left >= 0 && back.right <= innerWidth };",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            seen["back"],
            json!(true),
            "{mode}: the way back is out of sight: {seen}"
        );
        if mode == "pip" {
            assert_eq!(
                seen["covered"],
                json!([]),
                "picture in picture covers: {seen}"
            );
        } else {
            assert_eq!(seen["fills"], json!(true), "full screen: {seen}");
        }
        click(c, ".app-box [data-action='app-inline']").await;
        wait_css(c, ".tool-card iframe.app-frame[data-mode='inline']").await;
        wait_until(
            c,
            &format!(
                "Math.abs(document.querySelector('iframe.app-frame').offsetHeight - {inline}) <= 2"
            ),
        )
        .await;
    }
    walked
}

/// The state of the first app frame (`loading`, `ready`, `closing`), or null when there is none.
async fn frame_state(c: &fantoccini::Client) -> Value {
    c.execute(
        "return document.querySelector('iframe.app-frame')?.dataset.state ?? null;",
        vec![],
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_shows_on_its_card_and_its_button_calls_a_tool_through_approval() {
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("basic-vanillajs__get-time"));
    let home = app_home_with_example(&fake, "basic-vanillajs", &[]);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    // the model's call asks first, as every call of a tool that may change something
    send_and_allow(&c, "what time is it on the server?").await;
    wait_css(&c, ".tool-card.ok iframe.app-frame").await;
    // the window's frame: the page between window and app, at an origin of the app's own
    let frame = c
        .execute(
            "const f = document.querySelector('iframe.app-frame');
             return [f.getAttribute('sandbox'), /^mcpapp:\\/\\/[0-9a-f]{32}\\/$/.test(f.src), window.origin];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(frame[0], "allow-scripts allow-same-origin allow-forms");
    assert_eq!(frame[1], true, "{frame}");
    let window_origin = frame[2].clone();
    // inside: the page got the call's result, and its button calls the tool again
    enter_app(&c, 0).await;
    wait_until(
        &c,
        "/^\\d{4}-\\d\\d-\\d\\dT/.test(document.querySelector('#server-time')?.textContent ?? '')",
    )
    .await;
    let first = text_content(&c, "#server-time").await;
    let inside = c
        .execute(
            "let top; try { top = String(window.top.location.href); } catch (e) { top = 'blocked'; }
             return [typeof window.__TAURI_INTERNALS__, typeof window.ipc, window.origin,
                     window.parent.location.origin, top];",
            vec![],
        )
        .await
        .unwrap();
    // no IPC; its parent is the page between (its own origin), the window is out of reach
    assert_eq!(inside[0], "undefined", "{inside}");
    assert_eq!(inside[1], "undefined", "{inside}");
    assert_eq!(inside[2], inside[3], "{inside}");
    assert_ne!(inside[2], window_origin, "{inside}");
    assert_eq!(inside[4], "blocked", "{inside}");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    click(&c, "#get-time-btn").await;
    leave_app(&c).await;
    // the app's call asks on the app's own card, in the app's name; no card of its own
    wait_css(&c, ".tool-card .app-box .app-approval").await;
    assert_eq!(
        text_content(&c, ".app-approval .approval-question").await,
        "The app “Get Time App” of basic-vanillajs wants to run basic-vanillajs › get-time with these arguments:"
    );
    screenshot(&c, "app.png").await;
    click(&c, ".app-approval [data-action='allowOnce']").await;
    wait_until(&c, "!document.querySelector('.app-approval')").await;
    assert_eq!(count(&c, ".tool-card").await, 1);
    in_frame_until(
        &c,
        &format!(
            "(document.querySelector('#server-time')?.textContent ?? '') !== {}",
            json!(first)
        ),
    )
    .await;
    every_display_mode(&c).await;
    // a new chat: the example's own onteardown (the SDK's App) answers before its frame goes
    click(&c, "#new-chat").await;
    let log = wait_for_log(&c, "basic-vanillajs", "app closed").await;
    assert!(
        log.iter().any(|l| l.starts_with(
            "[switchboard] app closed (its conversation is no longer shown): it answered the teardown in"
        )),
        "{log:#?}"
    );
    wait_until(&c, "!document.querySelector('iframe.app-frame')").await;
    // opened again from the library, the app is offered, and shown with the call's result
    click(&c, "#conversation-list .conv").await;
    wait_css(&c, ".tool-card [data-action='show-app']").await;
    click(&c, ".tool-card [data-action='show-app']").await;
    wait_css(&c, "iframe.app-frame").await;
    in_frame_until(
        &c,
        "/^\\d{4}-/.test(document.querySelector('#server-time')?.textContent ?? '')",
    )
    .await;
    c.close().await.unwrap();
}
