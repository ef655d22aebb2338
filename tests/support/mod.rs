//! Shared by the integration tests: the fake LLM, and where the real MCP servers are.
#![allow(dead_code)]

pub mod fake_ollama;

use std::path::PathBuf;

/// The app binary, which also serves the built-in MCP servers.
pub fn switchboard_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard"))
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `@modelcontextprotocol/server-everything`, installed by `make test-deps` into tests/servers.
pub fn everything_server() -> PathBuf {
    let p = repo_dir()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run `make test-deps` (scripts/install-deps.sh --test) to install the npm test servers",
        p.display()
    );
    p
}

pub fn fixture(name: &str) -> PathBuf {
    repo_dir().join("tests/fixtures").join(name)
}
