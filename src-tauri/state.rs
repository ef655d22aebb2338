//! What the window's commands share: the engine's [`Runtime`] (settings, MCP config, servers,
//! store, the questions waiting for the user), and what only the window has: the turns it is
//! running (so Stop can end one) and the model downloads under way.

use std::collections::HashMap;
use std::sync::Mutex;

use switchboard_engine::chat::Broker;
use switchboard_engine::Runtime;
use tokio_util::sync::CancellationToken;

pub struct AppState {
    pub runtime: Runtime,
    /// Running turns by the id the window gave them, so Stop can cancel one.
    pub turns: Mutex<HashMap<String, CancellationToken>>,
    /// Model downloads under way, by model name.
    pub pulls: Mutex<HashMap<String, CancellationToken>>,
}

impl AppState {
    pub async fn open() -> anyhow::Result<AppState> {
        let exe = std::env::current_exe()?;
        // questions wait for the window's answers (`answer_question`)
        let runtime = Runtime::open(exe, Broker::new()).await?;
        Ok(AppState {
            runtime,
            turns: Mutex::new(HashMap::new()),
            pulls: Mutex::new(HashMap::new()),
        })
    }

    pub async fn shutdown(&self) {
        for t in self.turns.lock().unwrap().values() {
            t.cancel();
        }
        self.runtime.host.shutdown().await;
    }
}

/// Cancels the token registered under `key`, if any; false when there is none.
pub fn cancel_in<K: std::hash::Hash + Eq + ?Sized>(
    map: &Mutex<HashMap<String, CancellationToken>>,
    key: &K,
) -> bool
where
    String: std::borrow::Borrow<K>,
{
    match map.lock().unwrap().get(key) {
        Some(t) => {
            t.cancel();
            true
        }
        None => false,
    }
}
