//! End to end, in the REAL app window: tauri-driver + WebKitWebDriver under Xvfb, driven with
//! fantoccini. The LLM is the scripted fake; the MCP servers are the real built-in ones and real
//! npm/PyPI servers. One module per screen; `app.rs` is the fixture they share.
//!
//! Needs a display, tauri-driver and WebKitWebDriver: run it with `make test` (or `make e2e`),
//! which installs them and wraps it in xvfb-run. Plain `cargo test` skips it (it is #[ignore]).

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
