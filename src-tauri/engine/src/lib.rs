//! Switchboard's engine: everything but the window. No Tauri here: the desktop app and the
//! headless CLI both drive this crate through [`Runtime`].

pub mod chat;
pub mod llm;
pub mod markdown;
pub mod mcp;
pub mod paths;
pub mod secrets;
pub mod servers;
pub mod settings;
pub mod store;

pub use chat::{ChatEngine, ChatEvent, ChatOptions, TurnRequest, TurnSummary};
pub use settings::{LiveSettings, Settings};

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A client for one provider.
pub fn llm_client(p: &settings::ProviderConfig) -> Arc<dyn llm::LlmClient> {
    match p.kind {
        settings::ProviderKind::Ollama => Arc::new(llm::OllamaClient::new(p.url.clone())),
        settings::ProviderKind::Openai => {
            Arc::new(llm::OpenAiClient::new(&p.url, p.api_key.clone()))
        }
    }
}

/// The roots offered to MCP servers: the files sandbox, then the folders the user chose.
pub fn roots(settings: &Settings) -> Vec<PathBuf> {
    let mut out = vec![servers::default_files_root()];
    out.extend(settings.roots.iter().map(PathBuf::from));
    out
}

/// Set (to anything), the app believes the kernel has no Landlock: how the window's tests see a
/// sandboxed server wait for the user's agreement on a kernel that has it.
pub const NO_LANDLOCK_FOR_TESTS: &str = "SWITCHBOARD_TEST_NO_LANDLOCK";

/// The MCP server config as last read or saved, and why it could not be read (then the app runs
/// with no servers, says why, and never overwrites the file).
struct McpState {
    config: mcp::McpConfig,
    error: Option<String>,
}

/// Why the MCP config could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    #[error("could not save {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    /// The file could not be read at start; it is left alone until the user fixes it.
    #[error("{0}")]
    Unreadable(String),
}

/// Everything a front end (the window or the CLI) needs, set up the same way for both, and the
/// one place the app's state lives: settings, MCP config, servers, store, the questions waiting
/// for the user.
pub struct Runtime {
    pub host: Arc<mcp::McpHost>,
    pub store: store::Store,
    /// Every question waiting for the user (approvals, elicitations, sampling).
    pub broker: Arc<chat::Broker>,
    pub settings: Arc<LiveSettings>,
    /// What chat engines share between turns (calls under way, "allowed in this chat", models'
    /// capabilities).
    pub shared: Arc<chat::EngineShared>,
    mcp: RwLock<McpState>,
    mcp_file: PathBuf,
}

impl Runtime {
    /// Opens the store and reads the settings and MCP config (creating the defaults on first
    /// run). Servers are not started yet: see [`Runtime::start_servers`]. Questions wait for
    /// [`chat::Broker::answer`] unless `broker` answers them itself.
    pub async fn open(
        self_exe: PathBuf,
        broker: Arc<chat::Broker>,
    ) -> Result<Runtime, store::StoreError> {
        let settings = LiveSettings::load(&paths::settings_file());
        let store = store::Store::open(&paths::database_file()).await?;
        let mut opts = mcp::HostOptions::new(self_exe);
        opts.call_timeout = Duration::from_secs(settings.read(|s| s.tool_timeout_secs));
        // for the window's tests: behave as on a kernel without Landlock (sandboxed servers wait
        // for the user's agreement); it can only make the app stricter
        if std::env::var_os(NO_LANDLOCK_FOR_TESTS).is_some() {
            opts.landlock_abi = Some(0);
        }
        let host = mcp::McpHost::new(opts);
        let mcp_file = paths::mcp_config_file();
        let mcp = match mcp::McpConfig::load_or_init(&mcp_file) {
            Ok(config) => McpState {
                config,
                error: None,
            },
            Err(e) => McpState {
                config: mcp::McpConfig::default(),
                error: Some(e.to_string()),
            },
        };
        Ok(Runtime {
            host,
            store,
            broker,
            settings,
            shared: Default::default(),
            mcp: RwLock::new(mcp),
            mcp_file,
        })
    }

    /// Starts the configured servers, on the login shell's PATH, with the roots from the
    /// settings; waits until each is running or has failed.
    pub async fn start_servers(&self) {
        self.use_login_shell_path().await;
        self.host.set_roots(roots(&self.settings.get())).await;
        self.host.start_all(&self.mcp_config()).await;
    }

    /// Looks up the login shell's PATH once (at most 3 s) and runs MCP servers with it, so
    /// npx/uvx servers work when the app was started from a desktop launcher.
    async fn use_login_shell_path(&self) {
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

    /// Validates, saves and applies new settings (the roots servers see, the tool timeout).
    pub async fn save_settings(&self, next: Settings) -> Result<Settings, settings::SettingsError> {
        let saved = self.settings.update(|s| *s = next)?;
        self.host
            .set_call_timeout(Duration::from_secs(saved.tool_timeout_secs));
        // running servers hear about changed roots (roots/list_changed)
        self.host.set_roots(roots(&saved)).await;
        Ok(saved)
    }

    pub fn mcp_config(&self) -> mcp::McpConfig {
        self.mcp.read().unwrap().config.clone()
    }

    /// Why `mcp.json` could not be read at start, if it could not.
    pub fn mcp_config_error(&self) -> Option<String> {
        self.mcp.read().unwrap().error.clone()
    }

    /// Changes the MCP config with `change` and saves it (the file's other keys kept); returns the
    /// new config, for [`mcp::McpHost::apply_config`]. A config that could not be read at start is
    /// never overwritten.
    pub fn update_mcp_config(
        &self,
        change: impl FnOnce(&mut mcp::McpConfig),
    ) -> Result<mcp::McpConfig, McpConfigError> {
        let mut state = self.mcp.write().unwrap();
        if let Some(e) = &state.error {
            return Err(McpConfigError::Unreadable(e.clone()));
        }
        let mut next = state.config.clone();
        change(&mut next);
        next.save(&self.mcp_file)
            .map_err(|source| McpConfigError::Write {
                path: self.mcp_file.display().to_string(),
                source,
            })?;
        state.config = next.clone();
        Ok(next)
    }

    /// A chat engine talking to `provider` (an id from the settings; `None`: the default Ollama),
    /// with the settings as they are now.
    pub fn chat_engine(&self, provider: Option<&str>) -> ChatEngine {
        let settings = self.settings.get();
        ChatEngine {
            llm: llm_client(&settings.provider(provider)),
            tools: self.host.clone(),
            store: self.store.clone(),
            options: ChatOptions::from_settings(&settings),
            broker: self.broker.clone(),
            settings: self.settings.clone(),
            shared: self.shared.clone(),
        }
    }
}
