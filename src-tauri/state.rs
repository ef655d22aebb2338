//! What the window's commands share: the engine's [`Runtime`] (settings, MCP config, servers,
//! store, the questions waiting for the user), and what only the window has: the turns it is
//! running (so Stop can end one) and the model downloads under way.

use std::collections::HashMap;
use std::sync::Mutex;

use switchboard_engine::chat::Broker;
use switchboard_engine::{ChatEvent, Runtime};
use tokio_util::sync::CancellationToken;

pub struct AppState {
    pub runtime: Runtime,
    /// Running turns by the id the window gave them, so Stop can cancel one.
    pub turns: Mutex<HashMap<String, CancellationToken>>,
    /// Model downloads under way, by model name.
    pub pulls: Mutex<HashMap<String, CancellationToken>>,
    /// What happens to tasks followed outside a turn (after a restart), for the window
    /// (`watch_tasks`).
    pub task_events: tokio::sync::broadcast::Sender<ChatEvent>,
    /// The MCP App pages shown on cards, served from the `mcpapp` scheme.
    pub apps: crate::apps::AppViews,
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
            task_events: tokio::sync::broadcast::channel(256).0,
            apps: Default::default(),
        })
    }

    pub async fn shutdown(&self) {
        // calls that run as tasks on their servers go on there; the next run follows them
        self.runtime.host.begin_shutdown();
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
