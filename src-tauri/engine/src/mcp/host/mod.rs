//! The MCP host: a thin façade over one supervisor task per configured server
//! (`supervisor.rs`), which owns that server's life and publishes its state (`state.rs`). The
//! host starts and stops supervisors as the config changes, names the tools (`server__tool`),
//! routes calls (`calls.rs`) and tells whoever listens when anything changed.
//!
//! Subscribers (`subscribe`) hear when a server's status, tools or log changed. What the host shows
//! is in `views.rs`; the types its files share sit in leaves (`outcome.rs`: `ToolOutcome`,
//! `HostError`; `shaping.rs`: `SamplingText`; `state.rs`: `SessionAuth`; `task_state.rs`:
//! `TaskState`), so no circle runs through this folder.

mod app_resource;
mod calls;
mod connect;
mod handler;
mod legacy_tasks;
mod outcome;
mod rejoin;
mod shaping;
mod sign_in;
mod skill_tools;
mod skills;
mod state;
mod supervisor;
mod task_state;
mod tasks;
mod views;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::{Peer, RoleClient};
use tokio::sync::{broadcast, mpsc, watch};

use super::config::{McpConfig, ServerConfig};
use super::pins;
use super::process::StderrTail;
use super::sandbox;
use supervisor::{Command, Supervisor};

pub use app_resource::AppListing;
pub use handler::{
    CallEvent, Elicitation, ElicitationAction, ElicitationAnswer, Progress, Reply, SamplingAnswer,
    SamplingRequest,
};
pub use outcome::{HostError, ToolOutcome};
pub use rejoin::KeptSession;
pub use shaping::{
    file_uri, result_images, result_text, ResultImage, SamplingText, MAX_RAW_RESULT,
    MAX_RESULT_TEXT, MAX_STDIO_MESSAGE,
};
pub use skill_tools::{ServerSkills, SkillsOverview, LOAD_SKILL, READ_SKILL_FILE, SKILLS_SERVER};
pub use skills::{LoadedSkill, PendingSkill, SkillListing};
pub use state::{RoutedTool, SandboxView, ServerStatus, ServerView, SignInView, Step, ToolView};
pub use tasks::{is_open as task_is_open, TaskEnd, TaskHandle, TaskState};

use state::{Phase, Snapshot};

/// Lines of the log shown with a server.
const REPORT_LOG_LINES: usize = 20;

#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The binary that serves the built-in servers (`switchboard mcp-server …`).
    pub self_exe: PathBuf,
    /// Longest wait for one `tools/call` (without progress); changeable later with
    /// [`McpHost::set_call_timeout`].
    pub call_timeout: Duration,
    /// Longest wait for a server to start and answer the handshake and `tools/list`.
    pub start_timeout: Duration,
    /// PATH used to find commands; `None` = the inherited one.
    pub path_var: Option<String>,
    /// The first wait before restarting a crashed server; it doubles with each attempt.
    pub restart_base_delay: Duration,
    /// Restarts in a row before giving up (a server that stayed up a minute starts afresh).
    pub max_restarts: u32,
    /// Probe stdio and Streamable HTTP servers with 2026-07-28 `server/discover` first and fall
    /// back to the `initialize` handshake (2025-11-25) when they do not speak it. Off:
    /// `initialize` only.
    pub discover: bool,
    /// Where sandboxed servers get their private folders (`<dir>/<server>/tmp` is their TMPDIR).
    pub sandbox_dir: PathBuf,
    /// The home folder sandboxed servers are kept out of (its credentials, its shared folders;
    /// `mcp/sandbox/protect.rs`); `None`: none known.
    pub sandbox_home: Option<PathBuf>,
    /// The app's own folders (config, data, cache), never in a server's sandbox but for its own
    /// private folder and a built-in's own folder.
    pub app_dirs: Vec<PathBuf>,
    /// The most a Streamable HTTP server may send in one SSE event (a JSON body: rmcp's 16 MB
    /// always); an answer over it is that call's error, which says so.
    pub max_http_event: usize,
    /// The kernel's Landlock ABI as the host should believe it; `None`: ask the kernel. Tests set
    /// `Some(0)` to see what happens on a kernel without Landlock.
    pub landlock_abi: Option<i32>,
    /// Where tool definitions are pinned (`mcp::pins`); `None`: nothing is pinned.
    pub pins: Option<PinBook>,
    /// Where the servers' secret environment values and headers are read from, as each start
    /// needs them.
    pub secrets: crate::secrets::Secrets,
    /// When a server asks for a sign-in, do the browser step at once with this (the command
    /// line). `None` (the window): the server waits for its Sign in button.
    pub sign_in_by_itself: Option<crate::mcp::oauth::BrowserStep>,
    /// Keep sign-ins in memory only, not in the secrets store, nor the HTTP sessions tasks run
    /// in (`mcp-call` on a bare URL).
    pub oauth_in_memory: bool,
    /// The folder of the user's own skills (`mcp::local_skills`: `<dir>/<name>/SKILL.md`);
    /// `None`: none are looked for.
    pub skills_dir: Option<PathBuf>,
}

/// The store of pinned tool definitions the host checks each tool list against.
#[derive(Clone)]
pub struct PinBook(pub Arc<dyn crate::mcp::pins::ToolPins>);

impl std::fmt::Debug for PinBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PinBook")
    }
}

impl HostOptions {
    pub fn new(self_exe: PathBuf) -> Self {
        HostOptions {
            self_exe,
            // the app's default tool timeout (the setting's row)
            call_timeout: Duration::from_secs(crate::limits::TOOL_TIMEOUT.default_value() as u64),
            start_timeout: Duration::from_secs(30),
            path_var: None,
            restart_base_delay: Duration::from_secs(1),
            max_restarts: 5,
            discover: true,
            sandbox_dir: crate::paths::cache_dir().join("sandbox"),
            sandbox_home: dirs::home_dir(),
            app_dirs: vec![
                crate::paths::config_dir(),
                crate::paths::data_dir(),
                crate::paths::cache_dir(),
            ],
            landlock_abi: None,
            max_http_event: crate::mcp::http::DEFAULT_MAX_HTTP_EVENT,
            pins: None,
            secrets: crate::secrets::Secrets::for_app(),
            sign_in_by_itself: None,
            oauth_in_memory: false,
            skills_dir: None,
        }
    }
}

/// The longest a stdio server waits for the PATH to be known ([`McpHost::path_pending`]).
pub const PATH_WAIT: Duration = Duration::from_secs(10);

/// What the supervisors share with the host (and nothing that points back at them).
pub struct Shared {
    opts: HostOptions,
    /// PATH for finding and running commands (the login shell's, once known).
    path: RwLock<Option<String>>,
    /// Whether that PATH is known: a stdio server waits for it before it starts (see
    /// [`McpHost::path_pending`]); it is shown as starting meanwhile.
    path_known: tokio::sync::watch::Sender<bool>,
    /// Folders servers may work in (`roots/list`).
    roots: Arc<RwLock<Vec<PathBuf>>>,
    /// The kernel's Landlock ABI (0: none), asked once.
    landlock_abi: i32,
    /// Counts changes of any server's state, catalog or log.
    version: AtomicU64,
    changed: broadcast::Sender<()>,
    /// Changed tool definitions the user accepted since their server listed them: (server's
    /// identity, hash of the new definition).
    accepted: Mutex<std::collections::HashSet<(String, String)>>,
    sign_ins: sign_in::SignIns,
    /// Sessions the tasks of the app's last run ran in (`rejoin.rs`): per server, the one its
    /// first start rejoins; and the ids of those that could not be read back.
    rejoins: Mutex<std::collections::HashMap<String, rejoin::KeptSession>>,
    unreadable: Mutex<std::collections::HashSet<String>>,
    /// Each server's skills as last listed (`skills.rs`).
    skills: Mutex<std::collections::HashMap<String, skills::Listing>>,
    /// The user's own skills as last read (`skill_tools.rs`).
    local_skills: Mutex<crate::mcp::local_skills::LocalListing>,
}

impl Shared {
    fn path(&self) -> Option<String> {
        self.path.read().unwrap().clone()
    }

    /// Waits until the PATH is known (at most [`PATH_WAIT`]).
    async fn path_known(&self) {
        let mut known = self.path_known.subscribe();
        let _ = tokio::time::timeout(PATH_WAIT, known.wait_for(|k| *k)).await;
    }

    fn changed(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
        let _ = self.changed.send(());
    }

    /// The session `server`'s next start rejoins, if any (once).
    fn take_rejoin(&self, server: &str) -> Option<rejoin::KeptSession> {
        self.rejoins.lock().unwrap().remove(server)
    }

    /// Whether the session kept under `id` could not be read back.
    fn unreadable_session(&self, id: &str) -> bool {
        self.unreadable.lock().unwrap().contains(id)
    }
}

/// One configured server, as the host holds it.
struct Slot {
    config: ServerConfig,
    state: watch::Receiver<Arc<Snapshot>>,
    commands: mpsc::UnboundedSender<Command>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    log: StderrTail,
    routes: handler::CallRoutes,
    /// What its sandbox refused (or let through) of the network (`sandbox/network.rs`).
    attempts: sandbox::Attempts,
}

impl Slot {
    fn snapshot(&self) -> Arc<Snapshot> {
        self.state.borrow().clone()
    }

    /// Waits until the server is no longer starting.
    async fn settled(&self) {
        let mut rx = self.state.clone();
        let _ = rx.wait_for(|s| s.is_settled()).await;
    }

    /// Stops its supervisor (and so its session and process) and waits until it has.
    async fn stop(&self) {
        let _ = self.commands.send(Command::Stop);
        let task = self.task.lock().unwrap().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// A server's sandbox as its row shows it: from its config and the kernel; what it last refused
/// from its log.
fn sandbox_view(slot: &Slot, abi: i32, opts: &HostOptions) -> Option<SandboxView> {
    let wanted = sandbox::wanted(&slot.config)?;
    let blocked = slot.log.newest_with(sandbox::BLOCKED_NOTE);
    let home = opts.sandbox_home.as_deref();
    let readable = blocked.as_deref().and_then(|b| {
        sandbox::read_offer(
            b,
            &wanted.config.read,
            home,
            &sandbox::protected(home, &opts.app_dirs),
        )
    });
    Some(SandboxView {
        state: sandbox::decide(&wanted, abi),
        network: wanted.config.network,
        read: wanted.config.read,
        write: wanted.config.write,
        own: wanted.own.iter().map(|p| p.display().to_string()).collect(),
        default: wanted.default,
        allow_unsandboxed: wanted.config.allow_unsandboxed,
        kernel_abi: abi,
        // a container's isolation is the container's, not this kernel's sandbox
        protections: if wanted.container {
            vec![]
        } else {
            sandbox::protections(abi, wanted.config.network)
        },
        blocked,
        readable: readable.map(|p| p.display().to_string()),
        hosts: wanted.config.hosts,
        attempts: slot.attempts.list(),
    })
}

/// Exposed name → (server, tool), computed for one version of the servers' state.
type Names = BTreeMap<String, (String, String)>;

pub struct McpHost {
    shared: Arc<Shared>,
    servers: RwLock<BTreeMap<String, Arc<Slot>>>,
    names: Mutex<(u64, Arc<Names>)>,
    call_timeout: Mutex<Duration>,
    /// The app is ending: tasks on servers are left running (the next run follows them again).
    closing: std::sync::atomic::AtomicBool,
}

impl McpHost {
    pub fn new(opts: HostOptions) -> Arc<Self> {
        let host = Arc::new(McpHost {
            call_timeout: Mutex::new(opts.call_timeout),
            closing: Default::default(),
            shared: Arc::new(Shared {
                path: RwLock::new(opts.path_var.clone()),
                path_known: tokio::sync::watch::channel(true).0,
                landlock_abi: opts.landlock_abi.unwrap_or_else(sandbox::kernel_abi),
                opts,
                roots: Default::default(),
                version: AtomicU64::new(1),
                changed: broadcast::channel(256).0,
                accepted: Default::default(),
                sign_ins: Default::default(),
                rejoins: Default::default(),
                unreadable: Default::default(),
                skills: Default::default(),
                local_skills: Default::default(),
            }),
            servers: RwLock::new(BTreeMap::new()),
            names: Mutex::new((0, Arc::default())),
        });
        host.refresh_local_skills();
        host
    }

    /// Whether `path` is protected for sandboxed servers (credentials under home, the app's own
    /// folders: `sandbox::protected`), as written or resolved.
    pub fn is_protected(&self, path: &std::path::Path) -> bool {
        let home = self.shared.opts.sandbox_home.as_deref();
        let real = path.canonicalize().ok();
        sandbox::protected(home, &self.shared.opts.app_dirs)
            .iter()
            .any(|p| path.starts_with(p) || real.as_ref().is_some_and(|r| r.starts_with(p)))
    }

    /// The home folder sandboxed servers are kept out of (`HostOptions::sandbox_home`).
    pub fn sandbox_home(&self) -> Option<std::path::PathBuf> {
        self.shared.opts.sandbox_home.clone()
    }

    /// Sets the PATH used to find and run server commands (for servers started from now on);
    /// the stdio servers waiting for it start.
    pub fn set_path(&self, path: Option<String>) {
        *self.shared.path.write().unwrap() = path;
        self.shared.path_known.send_replace(true);
    }

    /// The PATH is being looked up: stdio servers started from now on wait for
    /// [`Self::set_path`] (at most [`PATH_WAIT`]) before they look for their command, and are
    /// listed as starting meanwhile, so that the window shows them at once.
    pub fn path_pending(&self) {
        self.shared.path_known.send_replace(false);
    }

    /// The PATH server commands are looked up on and run with.
    pub fn path(&self) -> Option<String> {
        self.shared.path()
    }

    /// The kernel's Landlock ABI, as the sandbox sees it (0: no sandbox here).
    pub fn landlock_abi(&self) -> i32 {
        self.shared.landlock_abi
    }

    /// The longest wait for one tool call without a sign of life (progress restarts it).
    pub fn set_call_timeout(&self, timeout: Duration) {
        *self.call_timeout.lock().unwrap() = timeout;
    }

    fn call_timeout(&self) -> Duration {
        *self.call_timeout.lock().unwrap()
    }

    /// The longest wait for one request to `server`: its own timeout when its config sets one,
    /// else the app's.
    fn timeout_for(&self, server: &str) -> Duration {
        self.slot(server)
            .and_then(|s| s.config.timeout)
            .map(Duration::from_secs)
            .unwrap_or_else(|| self.call_timeout())
    }

    /// Sets the folders offered to servers as roots; running servers get
    /// `notifications/roots/list_changed` when they differ from before.
    pub async fn set_roots(&self, roots: Vec<PathBuf>) {
        {
            let mut current = self.shared.roots.write().unwrap();
            if *current == roots {
                return;
            }
            *current = roots;
        }
        for peer in self.running_peers() {
            if let Err(e) = peer.notify_roots_list_changed().await {
                tracing::warn!("could not send roots/list_changed: {e}");
            }
        }
    }

    /// Fires whenever a server's status, tools or log change.
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.shared.changed.subscribe()
    }

    /// Starts every enabled server of `config`, all in parallel, and waits until each is running
    /// or has failed. Servers already running are stopped first.
    pub async fn start_all(&self, config: &McpConfig) {
        self.shutdown().await;
        self.apply_config(config).await;
    }

    /// Makes the running set match `config`, live: servers that were removed or changed stop,
    /// new and changed ones start (in parallel), the others are left alone; a removed server's
    /// private folder is deleted. Waits until every started server is running or has failed.
    pub async fn apply_config(&self, config: &McpConfig) {
        let (stopped, started, gone) = {
            let mut servers = self.servers.write().unwrap();
            let stale: Vec<String> = servers
                .iter()
                .filter(|(name, slot)| config.servers.get(*name) != Some(&slot.config))
                .map(|(name, _)| name.clone())
                .collect();
            let gone: Vec<String> = stale
                .iter()
                .filter(|n| !config.servers.contains_key(*n))
                .cloned()
                .collect();
            let stopped: Vec<Arc<Slot>> = stale.iter().filter_map(|n| servers.remove(n)).collect();
            let mut started = Vec::new();
            for (name, cfg) in &config.servers {
                if !servers.contains_key(name) {
                    let slot = self.spawn(name, cfg);
                    servers.insert(name.clone(), slot.clone());
                    started.push(slot);
                }
            }
            (stopped, started, gone)
        };
        futures::future::join_all(stopped.iter().map(|s| s.stop())).await;
        // a server that is gone takes its private folder with it: one made later under its
        // name starts with an empty one
        for name in gone {
            if let Err(e) = sandbox::forget_server(&self.shared.opts.sandbox_dir, &name) {
                tracing::warn!(
                    "could not delete the private folder of the removed server {name}: {e}"
                );
            }
        }
        self.shared.changed();
        futures::future::join_all(started.iter().map(|s| s.settled())).await;
    }

    /// A supervisor for one server, started.
    fn spawn(&self, name: &str, config: &ServerConfig) -> Arc<Slot> {
        let log = StderrTail::watched(self.shared.changed.clone());
        let routes = handler::CallRoutes::default();
        let (state_tx, state_rx) = watch::channel(Arc::new(Snapshot::new(if config.disabled {
            Phase::Disabled
        } else {
            Phase::Starting
        })));
        let (commands, commands_rx) = mpsc::unbounded_channel();
        let attempts = {
            let log = log.clone();
            sandbox::Attempts::reporting(move |a| {
                log.push(format!(
                    "{}the network: it tried {}",
                    sandbox::BLOCKED_NOTE,
                    a.target
                ))
            })
        };
        let supervisor = Supervisor {
            shared: self.shared.clone(),
            name: name.to_string(),
            config: config.clone(),
            log: log.clone(),
            routes: routes.clone(),
            state: state_tx,
            attempts: attempts.clone(),
        };
        let task = tokio::spawn(supervisor.run(commands_rx));
        Arc::new(Slot {
            config: config.clone(),
            state: state_rx,
            commands,
            task: Mutex::new(Some(task)),
            log,
            routes,
            attempts,
        })
    }

    /// Stops a server (if it runs) and starts it again; waits until it is running or failed.
    /// False when there is no such server.
    pub async fn restart(&self, name: &str) -> bool {
        let Some(slot) = self.slot(name) else {
            return false;
        };
        if slot.config.disabled {
            return true;
        }
        let mut rx = slot.state.clone();
        let starts = rx.borrow().starts;
        if slot.commands.send(Command::Restart).is_ok() {
            let _ = rx.wait_for(|s| s.starts > starts && s.is_settled()).await;
        }
        true
    }

    /// Before the servers start: `server`'s tasks of the app's last run ran in the HTTP session
    /// kept under `id` (`kept`: as read back from the secrets store; `None`: it could not be).
    /// Its next start rejoins that session (the last one given per server), without a new
    /// handshake, when the server's address is still the session's.
    pub fn rejoin(&self, server: &str, id: &str, kept: Option<KeptSession>) {
        match kept {
            Some(kept) => {
                self.shared
                    .rejoins
                    .lock()
                    .unwrap()
                    .insert(server.to_string(), kept);
            }
            None => {
                self.shared
                    .unreadable
                    .lock()
                    .unwrap()
                    .insert(id.to_string());
            }
        }
    }

    /// The app is about to end: from now on, a call that runs as a task on its server is not
    /// cancelled there when its turn stops, nor reported failed when its server stops; it just
    /// ends with the app, and the store keeps it for the next run to follow.
    pub fn begin_shutdown(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    pub(super) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Stops every server and everything it started. Safe to call more than once.
    pub async fn shutdown(&self) {
        let slots: Vec<Arc<Slot>> = std::mem::take(&mut *self.servers.write().unwrap())
            .into_values()
            .collect();
        futures::future::join_all(slots.iter().map(|s| s.stop())).await;
        self.shared.changed();
    }

    /// Adds `line` to `server`'s log (what the window saw its apps do: their log messages, their
    /// teardown). Nothing when there is no such server.
    pub fn note(&self, server: &str, line: String) {
        if let Some(slot) = self.slot(server) {
            slot.log.push(line);
        }
    }

    fn slot(&self, name: &str) -> Option<Arc<Slot>> {
        self.servers.read().unwrap().get(name).cloned()
    }

    fn slots(&self) -> Vec<(String, Arc<Slot>)> {
        self.servers
            .read()
            .unwrap()
            .iter()
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect()
    }

    fn running_peers(&self) -> Vec<Peer<RoleClient>> {
        self.slots()
            .iter()
            .filter_map(|(_, s)| s.snapshot().session().map(|x| x.peer.clone()))
            .collect()
    }
}
