//! Switchboard's engine: everything but the window. No Tauri here: the desktop app and the
//! headless CLI both drive this crate.

pub mod chat;
pub mod llm;
pub mod markdown;
pub mod mcp;
pub mod paths;
pub mod servers;
pub mod settings;
pub mod store;

pub use chat::{ChatEngine, ChatEvent, ChatOptions, TurnRequest, TurnSummary};
pub use settings::Settings;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything a front end (the window or the CLI) needs, set up the same way for both.
pub struct Runtime {
    pub host: Arc<mcp::McpHost>,
    pub store: store::Store,
    pub settings: Settings,
    /// Set when `mcp.json` could not be read: the app runs with no servers and says why.
    pub mcp_config_error: Option<String>,
    pub mcp_config: mcp::McpConfig,
    /// Tools the user allowed for the rest of a conversation (kept while the app runs).
    pub allowed_in_conversation: Arc<std::sync::Mutex<std::collections::HashSet<(i64, String)>>>,
    /// Tool calls under way (any turn), by tool-call id, so one can be cancelled on its own.
    pub running_calls:
        Arc<std::sync::Mutex<std::collections::HashMap<i64, tokio_util::sync::CancellationToken>>>,
    /// Models' capabilities, asked once per model (by name) while the app runs.
    pub capabilities: Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>>,
}

/// The roots offered to MCP servers: the files sandbox, then the folders the user chose.
/// A client for one provider.
pub fn llm_client(p: &settings::ProviderConfig) -> Arc<dyn llm::LlmClient> {
    match p.kind {
        settings::ProviderKind::Ollama => Arc::new(llm::OllamaClient::new(p.url.clone())),
        settings::ProviderKind::Openai => {
            Arc::new(llm::OpenAiClient::new(&p.url, p.api_key.clone()))
        }
    }
}

pub fn roots(settings: &Settings) -> Vec<PathBuf> {
    let mut out = vec![paths::data_dir().join("files")];
    out.extend(settings.roots.iter().map(PathBuf::from));
    out
}

impl Runtime {
    /// Opens the store and reads the settings and MCP config (creating the defaults on first
    /// run). Servers are not started yet: see [`Runtime::start_servers`].
    pub async fn open(self_exe: PathBuf) -> Result<Runtime, store::StoreError> {
        let settings = Settings::load(&paths::settings_file());
        let store = store::Store::open(&paths::database_file()).await?;
        let mut opts = mcp::HostOptions::new(self_exe);
        opts.call_timeout = Duration::from_secs(settings.tool_timeout_secs);
        let host = mcp::McpHost::new(opts);
        let (mcp_config, mcp_config_error) =
            match mcp::McpConfig::load_or_init(&paths::mcp_config_file()) {
                Ok(c) => (c, None),
                Err(e) => (mcp::McpConfig::default(), Some(e.to_string())),
            };
        Ok(Runtime {
            host,
            store,
            settings,
            mcp_config_error,
            mcp_config,
            allowed_in_conversation: Default::default(),
            running_calls: Default::default(),
            capabilities: Default::default(),
        })
    }

    pub async fn start_servers(&self) {
        self.use_login_shell_path().await;
        self.host.set_roots(roots(&self.settings)).await;
        self.host.start_all(&self.mcp_config).await;
    }

    /// Looks up the login shell's PATH once (at most 3 s) and runs MCP servers with it, so
    /// npx/uvx servers work when the app was started from a desktop launcher.
    pub async fn use_login_shell_path(&self) {
        let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
        let inherited = std::env::var("PATH").unwrap_or_default();
        let login = tokio::task::spawn_blocking(move || {
            mcp::login_shell_path(&shell, Duration::from_secs(3))
        })
        .await
        .ok()
        .flatten();
        if login.is_none() {
            tracing::info!("the login shell did not tell its PATH; using the inherited one");
        }
        self.host
            .set_path(Some(mcp::merge_paths(login.as_deref(), &inherited)));
    }

    /// A chat engine on this runtime's servers and store, with `settings` (the window's live
    /// ones) and `approver` to ask the user about tool calls.
    pub fn chat_engine(
        &self,
        settings: &Settings,
        provider: Option<&str>,
        approver: Arc<dyn chat::approval::Approver>,
    ) -> ChatEngine {
        ChatEngine {
            llm: llm_client(&settings.provider(provider)),
            tools: self.host.clone(),
            store: self.store.clone(),
            options: ChatOptions {
                max_iterations: settings.max_iterations,
                system_prompt: settings
                    .system_prompt
                    .clone()
                    .unwrap_or_else(|| chat::DEFAULT_SYSTEM_PROMPT.into()),
                temperature: settings.temperature,
                num_ctx: settings.num_ctx,
                thinking: settings.thinking,
                tool_modes: settings.tool_modes.clone(),
            },
            approver,
            policies: settings.tool_policies.clone(),
            allowed_in_conversation: self.allowed_in_conversation.clone(),
            running_calls: self.running_calls.clone(),
            capabilities: self.capabilities.clone(),
        }
    }
}
