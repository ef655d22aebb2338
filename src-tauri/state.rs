//! What the window's commands share: the engine runtime, live settings, running turns, calls
//! waiting for the user's approval.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use serde_json::json;
use switchboard_engine::chat::approval::{Action, ApprovalRequest, Approver, Decision, Policy};
use switchboard_engine::mcp::{McpConfig, SamplingRequest};
use switchboard_engine::{paths, ChatEngine, Runtime, Settings};
use tauri::{AppHandle, Manager};
use tauri_plugin_store::StoreExt;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub struct AppState {
    pub runtime: Runtime,
    pub settings: RwLock<Settings>,
    /// Running turns by the id the UI gave them, so Stop can cancel one.
    pub turns: Mutex<HashMap<String, CancellationToken>>,
    /// Tool calls waiting for the user, by tool-call id: the tool's exposed name and the answer slot.
    pub approvals: Mutex<HashMap<i64, (String, oneshot::Sender<Decision>)>>,
    /// Servers' sampling requests waiting for the user, by request id.
    pub sampling: Mutex<HashMap<u64, oneshot::Sender<bool>>>,
    /// Model downloads under way, by model name.
    pub pulls: Mutex<HashMap<String, CancellationToken>>,
    /// The MCP server config as last saved (or read at start).
    mcp_config: Mutex<McpConfig>,
}

impl AppState {
    pub async fn open() -> anyhow::Result<AppState> {
        let exe = std::env::current_exe()?;
        let runtime = Runtime::open(exe).await?;
        let settings = RwLock::new(runtime.settings.clone());
        let mcp_config = Mutex::new(runtime.mcp_config.clone());
        Ok(AppState {
            runtime,
            settings,
            turns: Mutex::new(HashMap::new()),
            approvals: Mutex::new(HashMap::new()),
            sampling: Mutex::new(HashMap::new()),
            pulls: Mutex::new(HashMap::new()),
            mcp_config,
        })
    }

    pub fn mcp_config(&self) -> McpConfig {
        self.mcp_config.lock().unwrap().clone()
    }

    /// Writes the MCP config (tauri-plugin-store, `mcp.json`, in the Claude Desktop shape: other
    /// top-level keys in that file are kept) and makes it the current one.
    pub fn save_mcp_config(&self, app: &AppHandle, config: &McpConfig) -> Result<(), String> {
        let store = app
            .store(paths::mcp_config_file())
            .map_err(|e| e.to_string())?;
        store.set("mcpServers", json!(config.servers));
        store
            .save()
            .map_err(|e| format!("could not save {}: {e}", paths::mcp_config_file().display()))?;
        *self.mcp_config.lock().unwrap() = config.clone();
        Ok(())
    }

    pub async fn start_servers(&self) {
        let config = self.mcp_config();
        self.runtime.use_login_shell_path().await;
        self.runtime
            .host
            .set_roots(switchboard_engine::roots(&self.settings()))
            .await;
        self.runtime.host.start_all(&config).await;
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

    /// Validates, writes (tauri-plugin-store, `settings.json`) and applies new settings.
    pub fn save_settings(&self, app: &AppHandle, settings: Settings) -> Result<(), String> {
        settings.validate()?;
        let store = app
            .store(paths::settings_file())
            .map_err(|e| e.to_string())?;
        // every setting under its own key (other keys in the file are kept)
        if let serde_json::Value::Object(keys) = json!(settings) {
            for (k, v) in keys {
                store.set(k, v);
            }
        }
        store
            .save()
            .map_err(|e| format!("could not save the settings: {e}"))?;
        let roots = switchboard_engine::roots(&settings);
        *self.settings.write().unwrap() = settings;
        // running servers hear about changed roots (roots/list_changed)
        let host = self.runtime.host.clone();
        tauri::async_runtime::spawn(async move { host.set_roots(roots).await });
        Ok(())
    }

    /// An engine talking to `provider` (an id from the settings; `None`: the default Ollama).
    pub fn chat_engine(&self, app: &AppHandle, provider: Option<&str>) -> ChatEngine {
        self.runtime.chat_engine(
            &self.settings(),
            provider,
            Arc::new(WindowApprover { app: app.clone() }),
        )
    }
}

/// Asks in the window: the card shows the request, `resolve_approval` answers it.
struct WindowApprover {
    app: AppHandle,
}

#[async_trait]
impl Approver for WindowApprover {
    async fn decide(&self, request: &ApprovalRequest, cancel: &CancellationToken) -> Decision {
        let state = self.app.state::<AppState>();
        let (tx, rx) = oneshot::channel();
        state
            .approvals
            .lock()
            .unwrap()
            .insert(request.id, (request.name.clone(), tx));
        let decision = tokio::select! {
            d = rx => d.unwrap_or(Decision::of(Action::Deny)),
            _ = cancel.cancelled() => Decision::of(Action::Deny),
        };
        state.approvals.lock().unwrap().remove(&request.id);
        if decision.action == Action::AlwaysAllow {
            let mut s = state.settings();
            s.tool_policies.insert(request.name.clone(), Policy::Allow);
            if let Err(e) = state.save_settings(&self.app, s) {
                tracing::warn!(
                    "could not remember \"always allow\" for {}: {e}",
                    request.name
                );
            }
        }
        decision
    }

    async fn decide_sampling(&self, request: &SamplingRequest, cancel: &CancellationToken) -> bool {
        let state = self.app.state::<AppState>();
        let (tx, rx) = oneshot::channel();
        state.sampling.lock().unwrap().insert(request.id, tx);
        let approved = tokio::select! {
            d = rx => d.unwrap_or(false),
            _ = cancel.cancelled() => false,
        };
        state.sampling.lock().unwrap().remove(&request.id);
        approved
    }
}
