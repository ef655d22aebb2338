//! [`Runtime`]: the one place the app's state lives, set up the same way for the window and the
//! CLI. Changes to the MCP server config are in `mcp_config`; the standing tool policies as the
//! window lists them, and moving those older versions kept by name, in `policies`.
//!
//! It opens the store, reads the settings and `mcp.json`, creates the host and the chat engines.
//! Settings change through `change_settings` (a `SettingsPatch` that names only what changes); the
//! MCP config through `save_server`, `delete_server`, `set_server_enabled`, `import_servers`, all
//! through `update_mcp_config`, one change at a time: secrets stored, validated, written (other
//! keys in the file kept, files 0600), secrets no longer referenced removed, applied (roots and the
//! tool timeout reach the host at once); once the servers were started, the host applies the config
//! in the background, in order, the latest config each time (`runtime/mcp_config.rs`'s `Applier`;
//! `mcp_applied` waits for it). Views for the window (`mcp_config_view`, `Settings::redacted`) and
//! the export (`export_mcp_config`) never carry a secret. (`lib.rs` only declares the modules,
//! re-exports, and builds an LLM client from a provider's settings.)

mod catalog;
mod mcp_config;
mod model_check;
mod policies;

pub use catalog::{newer, CatalogError, CatalogPage, CatalogState, HostMachine, UpdateAvailable};
pub use mcp_config::McpConfigError;
use mcp_config::McpState;
pub use policies::{OldEntry, PolicyView};

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::chat::{ChatEngine, ChatOptions};
use crate::secrets::{self, SecretValue, Secrets};
use crate::settings::{LiveSettings, Settings};
use crate::{chat, llm, mcp, paths, servers, settings, store};

/// Where a [`Runtime`] keeps its files: the app's ([`Places::app`]), or a test's.
#[derive(Debug, Clone)]
pub struct Places {
    pub settings: PathBuf,
    pub mcp: PathBuf,
    pub database: PathBuf,
    /// Where bundles are unpacked (`bundles/<server>/<version>-<tag>`).
    pub bundles: PathBuf,
    /// The catalog's copies of the registry's answers.
    pub catalog_cache: PathBuf,
    /// Sandboxed servers' private folders.
    pub sandbox: PathBuf,
    /// The user's own skills (`<skills>/<name>/SKILL.md`, `mcp::local_skills`).
    pub skills: PathBuf,
}

impl Places {
    pub fn app() -> Places {
        Places {
            settings: paths::settings_file(),
            mcp: paths::mcp_config_file(),
            database: paths::database_file(),
            bundles: paths::data_dir().join("bundles"),
            catalog_cache: paths::cache_dir().join("catalog"),
            sandbox: paths::cache_dir().join("sandbox"),
            skills: paths::data_dir().join("skills"),
        }
    }

    /// Every file in `dir` (tests).
    pub fn in_dir(dir: &std::path::Path) -> Places {
        Places {
            settings: dir.join("settings.json"),
            mcp: dir.join("mcp.json"),
            database: dir.join("conversations.sqlite3"),
            bundles: dir.join("bundles"),
            catalog_cache: dir.join("catalog-cache"),
            sandbox: dir.join("sandbox"),
            skills: dir.join("skills"),
        }
    }
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
    /// API keys, headers and secret environment values (the keyring, or the fallback file).
    pub secrets: Secrets,
    mcp: Arc<RwLock<McpState>>,
    mcp_file: PathBuf,
    /// Every saved change of the MCP config reaches the running host through this, in order
    /// (`runtime/mcp_config.rs`: the one operation "save and apply").
    applier: mcp_config::Applier,
    /// One change at a time to what refers to secrets (settings, MCP config): storing them is
    /// asynchronous, and what is no longer referenced is removed after the change.
    changing: tokio::sync::Mutex<()>,
    /// The catalog: its registry client and the installs being prepared.
    pub catalog: CatalogState,
}

impl Runtime {
    /// Opens the store and reads the settings and MCP config (creating the defaults on first
    /// run). Servers are not started yet: see [`Runtime::start_servers`]. Questions wait for
    /// [`chat::Broker::answer`] unless `broker` answers them itself.
    pub async fn open(
        self_exe: PathBuf,
        broker: Arc<chat::Broker>,
    ) -> Result<Runtime, store::StoreError> {
        Runtime::open_at(Places::app(), Secrets::for_app(), self_exe, broker).await
    }

    /// [`Runtime::open`] with its files at `places` and its secrets in `secrets`. Where secrets
    /// go is found out in the background (the keyring is asked, with a timeout).
    pub async fn open_at(
        places: Places,
        secrets: Secrets,
        self_exe: PathBuf,
        broker: Arc<chat::Broker>,
    ) -> Result<Runtime, store::StoreError> {
        let settings = LiveSettings::load(&places.settings);
        let store = store::Store::open(&places.database).await?;
        {
            let secrets = secrets.clone();
            tokio::spawn(async move { secrets.probe().await });
        }
        let mut opts = mcp::HostOptions::new(self_exe);
        opts.secrets = secrets.clone();
        opts.call_timeout = Duration::from_secs(settings.read(|s| s.tool_timeout_secs));
        opts.sandbox_dir = places.sandbox.clone();
        opts.skills_dir = Some(places.skills.clone());
        // for the window's tests: behave as on a kernel without Landlock (sandboxed servers wait
        // for the user's agreement); it can only make the app stricter
        if std::env::var_os(NO_LANDLOCK_FOR_TESTS).is_some() {
            opts.landlock_abi = Some(0);
        }
        // tool definitions are pinned in the store: a changed one asks before it runs
        opts.pins = Some(mcp::PinBook(Arc::new(store.clone())));
        let host = mcp::McpHost::new(opts);
        let catalog = CatalogState::new(
            places.catalog_cache,
            places.bundles,
            crate::registry::client::LIMITS,
        );
        let mcp_file = places.mcp;
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
            secrets,
            mcp: Arc::new(RwLock::new(mcp)),
            mcp_file,
            applier: Default::default(),
            changing: tokio::sync::Mutex::new(()),
            catalog,
        })
    }

    /// Starts the configured servers, on the login shell's PATH, with the roots from the
    /// settings; waits until each is running or has failed. They are listed (as starting) at
    /// once: the stdio ones wait for the PATH while the login shell is asked for it.
    pub async fn start_servers(&self) {
        self.host.path_pending();
        // a change saved while they start is applied after
        let changes = self.applier.changes();
        let start = async {
            self.host.set_roots(roots(&self.settings.get())).await;
            self.rejoin_task_sessions().await;
            self.host.start_all(&self.mcp_config()).await;
            self.applier
                .run(changes, self.host.clone(), self.mcp.clone());
        };
        tokio::join!(self.use_login_shell_path(), start);
        // the policies older versions kept by name move to their tools' keys, where they can
        self.migrate_old_policies();
    }

    /// Tells the host the HTTP sessions the tasks still open ran in when the app last ended
    /// (read back from the secrets store), so each such server starts in its session again.
    async fn rejoin_task_sessions(&self) {
        let open = match self.store.open_tasks().await {
            Ok(open) => open,
            Err(e) => {
                tracing::warn!("could not read the tasks to follow: {e}");
                return;
            }
        };
        let mut seen = BTreeSet::new();
        // oldest first: the last one given for a server is the session it starts in
        for task in &open {
            let Some(id) = task.session.as_deref() else {
                continue;
            };
            if !seen.insert(id.to_string()) {
                continue;
            }
            let kept = match mcp::KeptSession::read(&self.secrets, id).await {
                Ok(kept) => kept,
                Err(e) => {
                    tracing::warn!(
                        "could not read the session of a task of {}: {e}",
                        task.server
                    );
                    None
                }
            };
            self.host.rejoin(&task.server, id, kept);
        }
    }

    /// Looks up the login shell's PATH once (at most 3 s) and runs MCP servers with it, so
    /// npx/uvx servers work when the app was started from a desktop launcher.
    async fn use_login_shell_path(&self) {
        let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
        let inherited = std::env::var("PATH").unwrap_or_default();
        let path = tokio::task::spawn_blocking(move || {
            mcp::app_path(&shell, &inherited, Duration::from_secs(3))
        })
        .await
        .ok();
        self.host.set_path(path);
    }

    /// Changes the settings as `patch` says (the one path every front end's change takes), against
    /// the settings as they are when it is applied, so nothing another writer changed meanwhile is
    /// put back; then applies what running parts must hear (the roots servers see, the tool
    /// timeout). API keys of the providers it names go to the secret store: a new one (typed, or
    /// a plain one in the file) is stored and its reference saved; `{"secret": …}` keeps the
    /// provider's key (the window never names one); a key no provider refers to any more is removed
    /// from the store.
    pub async fn change_settings(
        &self,
        mut patch: settings::SettingsPatch,
    ) -> Result<Settings, settings::SettingsError> {
        use settings::SettingsError;
        let _one = self.changing.lock().await;
        let mut created = Vec::new();
        if let Some(mut providers) = patch.providers.take() {
            let before = self.settings.get();
            for p in &mut providers {
                let old = before
                    .providers
                    .iter()
                    .find(|o| o.id == p.id)
                    .and_then(|o| o.api_key.clone());
                if let Some(k) = &mut p.api_key {
                    let name = format!("API key of {}", p.name);
                    secrets::adopt(&self.secrets, [(name, k)], |_| old.clone(), false)
                        .await
                        .map_err(SettingsError::Secret)?;
                }
                if p.api_key
                    .as_ref()
                    .and_then(SecretValue::plain)
                    .is_some_and(|k| k.trim().is_empty())
                {
                    p.api_key = None;
                }
            }
            // checked before anything is stored: a refused change leaves no secret behind
            let mut trial = before;
            patch.apply_to(&mut trial);
            trial.providers = providers.clone();
            trial.validate()?;
            for p in &mut providers {
                if let Some(k) = &mut p.api_key {
                    let label = format!("Switchboard: API key of {}", p.name);
                    if let Err(e) = self.secrets.seal(k, true, &label, &mut created).await {
                        self.secrets.forget(created).await;
                        return Err(SettingsError::Secret(e));
                    }
                }
            }
            patch.providers = Some(providers);
        }
        let referenced = self.secret_references();
        let saved = match self.settings.apply(&patch) {
            Ok(s) => s,
            Err(e) => {
                self.secrets.forget(created).await;
                return Err(e);
            }
        };
        if patch.changes_providers() {
            self.forget_unreferenced(referenced).await;
        }
        self.host
            .set_call_timeout(Duration::from_secs(saved.tool_timeout_secs));
        // running servers hear about changed roots (roots/list_changed)
        if patch.roots.is_some() {
            self.host.set_roots(roots(&saved)).await;
        }
        Ok(saved)
    }

    pub fn mcp_config(&self) -> mcp::McpConfig {
        self.mcp.read().unwrap().config.clone()
    }

    /// Every reference to a stored secret the settings and the MCP config hold.
    fn secret_references(&self) -> BTreeSet<String> {
        let mut all = self.settings.read(|s| s.secret_references());
        all.extend(self.mcp.read().unwrap().config.secret_references());
        all
    }

    /// Removes from the store what was referenced before a change (`before`) and is not now.
    async fn forget_unreferenced(&self, before: BTreeSet<String>) {
        let now = self.secret_references();
        self.secrets
            .forget(before.difference(&now).cloned().collect::<Vec<_>>())
            .await;
    }

    /// Follows again, each in the background, the tasks that were still running on their servers
    /// when the app last ended (call after [`Runtime::start_servers`]); what happens to them goes
    /// to `emit`. How many there were.
    pub async fn resume_tasks(&self, emit: Arc<dyn Fn(chat::ChatEvent) + Send + Sync>) -> usize {
        let open = match self.store.open_tasks().await {
            Ok(open) => open,
            Err(e) => {
                tracing::warn!("could not read the tasks to follow: {e}");
                return 0;
            }
        };
        let config = self.mcp_config();
        for task in &open {
            // the conversation's provider answers the server's sampling requests, if any
            let provider = self
                .store
                .settings(task.conversation_id)
                .await
                .ok()
                .and_then(|s| s.provider);
            let engine = self.chat_engine(provider.as_deref());
            // a server that ran inside the app, or whose session ended with it, took its tasks
            // along: they end now, without asking anyone
            let ended = config
                .servers
                .get(&task.server)
                .and_then(|c| match c.transport() {
                    mcp::Transport::Stdio => Some(mcp::TaskEnd::EndedWithApp),
                    mcp::Transport::Sse => Some(mcp::TaskEnd::SessionEnded),
                    _ => None,
                });
            let (task, emit) = (task.clone(), emit.clone());
            tokio::spawn(async move {
                let id = task.tool_call_id;
                let done = match ended {
                    Some(reason) => engine.end_task(task, reason, &*emit).await,
                    None => engine.resume_task(task, &*emit).await,
                };
                if let Err(e) = done {
                    tracing::warn!("following the task of call {id} again failed: {e}");
                }
            });
        }
        let (store, secrets) = (self.store.clone(), self.secrets.clone());
        tokio::spawn(forget_ended_task_sessions(store, secrets));
        open.len()
    }

    /// A chat engine talking to `provider` (an id from the settings; `None`: the default Ollama),
    /// with the settings as they are now.
    pub fn chat_engine(&self, provider: Option<&str>) -> ChatEngine {
        let settings = self.settings.get();
        ChatEngine {
            llm: llm_client(&settings.provider(provider), &self.secrets),
            tools: self.host.clone(),
            store: self.store.clone(),
            options: ChatOptions::from_settings(&settings),
            broker: self.broker.clone(),
            settings: self.settings.clone(),
            shared: self.shared.clone(),
        }
    }
}

/// Forgets in the secrets store the HTTP sessions kept for tasks that are over (left by a run
/// that ended before it could, or lost since).
async fn forget_ended_task_sessions(store: store::Store, secrets: Secrets) {
    let ids = match store.ended_task_sessions().await {
        Ok(ids) if !ids.is_empty() => ids,
        Ok(_) => return,
        Err(e) => {
            tracing::warn!("could not read the sessions of ended tasks: {e}");
            return;
        }
    };
    let mut forgotten = Vec::new();
    for id in ids {
        match mcp::KeptSession::forget(&secrets, &id).await {
            Ok(()) => forgotten.push(id),
            Err(e) => tracing::warn!("could not forget the session of an ended task: {e}"),
        }
    }
    if let Err(e) = store.forget_task_sessions(forgotten).await {
        tracing::warn!("could not note the sessions forgotten: {e}");
    }
}

/// Set (to anything), the app believes the kernel has no Landlock: how the window's tests see a
/// sandboxed server wait for the user's agreement on a kernel that has it.
pub const NO_LANDLOCK_FOR_TESTS: &str = "SWITCHBOARD_TEST_NO_LANDLOCK";

/// A client for one provider; its API key, if it has one, is read from `secrets` when a request
/// is sent.
pub fn llm_client(
    p: &settings::ProviderConfig,
    secrets: &secrets::Secrets,
) -> Arc<dyn llm::LlmClient> {
    match p.kind {
        settings::ProviderKind::Ollama => Arc::new(llm::OllamaClient::new(p.url.clone())),
        settings::ProviderKind::Openai => Arc::new(llm::OpenAiClient::with_secret(
            &p.url,
            p.api_key.clone(),
            secrets,
        )),
    }
}

/// The roots offered to MCP servers: the files sandbox, then the folders the user chose.
pub fn roots(settings: &settings::Settings) -> Vec<PathBuf> {
    let mut out = vec![servers::default_files_root()];
    out.extend(settings.roots.iter().map(PathBuf::from));
    out
}
