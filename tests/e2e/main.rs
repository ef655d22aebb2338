//! End to end, in the REAL app window: tauri-driver + WebKitWebDriver under Xvfb, driven with
//! fantoccini. The LLM is the scripted fake; the MCP servers are the real built-in ones and real
//! npm/PyPI servers. One module per screen; `app.rs` is the fixture they share.
//!
//! Needs a display, tauri-driver and WebKitWebDriver: run it with `make test` (or `make e2e`),
//! which installs them and wraps it in xvfb-run. Plain `cargo test` skips it (it is #[ignore]).
//!
//! `window_state.rs`: restored after a quit and a SIGKILL, an unreadable file set aside;
//! `screens.rs`: every screen and state at the default and the minimum window size and in the dark
//! theme, a screenshot each, nothing wider than the window, a server card's buttons on one line,
//! and axe-core's audit (npm, `tests/e2e/package.json`, injected as a script) with no serious or
//! critical violation; `keyboard.rs`: the everyday flows by real key presses, the focus visible
//! after every Tab and never behind a dialog; `notifications.rs`: on a private session bus with
//! dunst (`App::launch_with_notifications`). `app.rs` is the one `App::launch` fixture;
//! `xserver.rs` the X server side (file dialogs through xdotool, the window read and closed through
//! Xlib). Screenshots are read from the X server (WebDriver's own waits for a compositing update
//! that never comes with compositing off, as the app runs) and go to `target/screenshots` (`make
//! screenshots` copies them to `docs/screenshots`). `hostile.rs` feeds the XSS corpus
//! (`xss_payloads.txt`, also rendered by `markdown.rs`'s own test) through every channel from a
//! model, a server (`tests/fixtures/xss_server.py`) or a file, and scans the DOM after each.
//! `catalog.rs`: search → install with a secret → server-everything from npm (npx finds the pinned
//! version in tests/servers, where the app is started: `App::launch_in`) connects and a chat calls
//! its tool; a bundle entry, its newer version's notice, diff and the changed tool as a pin change;
//! "Install bundle…". `tasks.rs`: server-everything over Streamable HTTP as its own process, the
//! app killed (SIGKILL) mid-task and started again, the task rejoined and its result sent to the
//! model as the tool's; with the server restarted too, the card says the session ended and offers
//! nothing (`cards.rs` has the same across a plain quit, with FastMCP's 2026-07-28 tasks).
//! `bench.rs`: the window's first paint and its memory with a long conversation open (`make
//! bench-window`).

#[path = "../common/mod.rs"]
mod support;

mod app;
mod xserver;

mod approval;
mod apps;
mod attachments;
mod bench;
mod cards;
mod catalog;
mod chat;
mod composer;
mod hostile;
mod import;
mod keyboard;
mod library;
mod links;
mod long_conversation;
mod models;
mod notifications;
mod research;
mod screens;
mod servers;
mod sign_in;
mod skills;
mod tasks;
mod window_state;
