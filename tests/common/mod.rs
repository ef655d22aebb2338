//! Shared by the app's test binaries (tests/app, tests/e2e): the engine tests' fake LLM and server
//! helpers (one copy, included from there), and the app binary.
#![allow(dead_code)]

use std::path::PathBuf;

#[path = "../../src-tauri/engine/tests/it/support/arxiv.rs"]
pub mod arxiv;
#[path = "../../src-tauri/engine/tests/it/support/bundles.rs"]
pub mod bundles;
#[path = "../../src-tauri/engine/tests/it/support/fake_ollama.rs"]
pub mod fake_ollama;
#[path = "../../src-tauri/engine/tests/it/support/registry.rs"]
pub mod registry;
#[path = "../../src-tauri/engine/tests/it/support/samples.rs"]
pub mod samples;
#[path = "../../src-tauri/engine/tests/it/support/servers.rs"]
mod servers;

pub use servers::*;

/// The app binary (its CLI, and the window).
pub fn switchboard_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard"))
}
