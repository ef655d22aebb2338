//! What the window's commands share: the engine runtime, live settings, running turns.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

use switchboard_engine::{ChatEngine, Runtime, Settings};
use tokio_util::sync::CancellationToken;

pub struct AppState {
    pub runtime: Runtime,
    pub settings: RwLock<Settings>,
    /// Running turns by the id the UI gave them, so Stop can cancel one.
    pub turns: Mutex<HashMap<String, CancellationToken>>,
}

impl AppState {
    pub async fn open() -> anyhow::Result<AppState> {
        let exe = std::env::current_exe()?;
        let runtime = Runtime::open(exe).await?;
        let settings = RwLock::new(runtime.settings.clone());
        Ok(AppState {
            runtime,
            settings,
            turns: Mutex::new(HashMap::new()),
        })
    }

    pub async fn start_servers(&self) {
        self.runtime.start_servers().await;
    }

    pub async fn shutdown(&self) {
        for t in self.turns.lock().unwrap().values() {
            t.cancel();
        }
        self.runtime.host.shutdown().await;
    }

    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap().clone()
    }

    pub fn chat_engine(&self) -> ChatEngine {
        self.runtime.chat_engine(&self.settings())
    }
}
