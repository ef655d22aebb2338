//! What the secrets tests check with: the keyring and the fallback file read from outside, the
//! app's files and logs searched for any secret, and a running server called through the host.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_engine::mcp::{ServerConfig, ServerStatus};
use switchboard_engine::secrets::{Place, SecretValue, KEYRING_SERVICE};
use switchboard_engine::Runtime;
use tokio_util::sync::CancellationToken;

use super::ALL;
use crate::support::fixture;

/// What `secret-tool` finds in the session's keyring for this id.
pub(super) fn keyring_lookup(id: &str) -> Option<String> {
    let out = Command::new("secret-tool")
        .args(["lookup", "service", KEYRING_SERVICE, "username", id])
        .output()
        .expect("secret-tool");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).to_string())
}

/// A log of everything the process traces (every crate, every level), to search for leaks.
#[derive(Clone, Default)]
pub(super) struct Log(pub(super) Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Log {
    type Writer = Log;
    fn make_writer(&'a self) -> Log {
        self.clone()
    }
}

pub(super) fn json_file(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Fails when any secret is in `text`; `what` says where it looked.
pub(super) fn assert_no_secret(what: &str, text: &str) {
    for s in ALL {
        assert!(!text.contains(s), "a secret ({s}) is in {what}");
    }
}

/// Every file under `dir` but `except`, read as bytes and searched.
pub(super) fn assert_no_secret_in_files(dir: &Path, except: &Path) {
    for entry in walk(dir) {
        if entry == except {
            continue;
        }
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert_no_secret(&entry.display().to_string(), &text);
    }
}

pub(super) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The id in a `{"secret": "<place>:<id>"}` reference, checking its place.
pub(super) fn reference_id(v: &Value, place: Place) -> String {
    let r = v["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("not a reference: {v}"));
    let (p, id) = r.split_once(':').unwrap();
    assert_eq!(p, place.as_str(), "{r}");
    id.to_string()
}

/// Whether the store holds this id: the keyring (asked with secret-tool) or the file.
pub(super) fn stored(place: Place, id: &str, secrets_file: &Path) -> Option<String> {
    match place {
        Place::Keyring => keyring_lookup(id),
        Place::File => {
            let doc = std::fs::read_to_string(secrets_file).ok()?;
            let v: Value = serde_json::from_str(&doc).unwrap();
            v["secrets"][id]["value"].as_str().map(String::from)
        }
    }
}

pub(super) async fn wait_running(rt: &Runtime, name: &str) -> switchboard_engine::mcp::ServerView {
    let t = std::time::Instant::now();
    loop {
        if let Some(s) = rt.host.servers().into_iter().find(|s| s.name == name) {
            if s.status == ServerStatus::Running {
                return s;
            }
            assert!(
                s.status != ServerStatus::Failed || t.elapsed() < Duration::from_secs(20),
                "{name} failed: {:?}",
                s.error
            );
        }
        assert!(t.elapsed() < crate::support::READY, "{name} never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(super) async fn call(rt: &Runtime, server: &str, tool: &str, args: Value) -> String {
    let s = wait_running(rt, server).await;
    let exposed = s
        .tools
        .iter()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("{server} has no {tool}"))
        .exposed
        .clone();
    let out = rt
        .host
        .call_tool(
            &exposed,
            args.as_object().unwrap().clone(),
            &CancellationToken::new(),
            None,
        )
        .await;
    assert!(!out.is_error, "{server}__{tool}: {}", out.text);
    out.text
}

/// The stdio fixture answers the variable's value reversed: proof it got the value, without the
/// value itself travelling back through the client's logs.
pub(super) fn reversed(s: &str) -> String {
    s.chars().rev().collect()
}

pub(super) fn stdio_server(env: &[(&str, SecretValue)]) -> ServerConfig {
    let mut cfg = ServerConfig::new(
        "python3",
        &[fixture("secret_server.py").to_str().unwrap(), "stdio"],
    );
    for (k, v) in env {
        cfg.env.insert(k.to_string(), v.clone());
    }
    cfg
}
