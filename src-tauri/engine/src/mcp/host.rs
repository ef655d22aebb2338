// MCP logging (logging/setLevel, notifications/message) is deprecated by 2026-07-28 (SEP-2577),
// but it is what every 2025-11-25 server speaks, so the host still supports it.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, ProtocolVersion, ServerResult,
};
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, ListRootsResult,
    LoggingLevel, LoggingMessageNotificationParam, Root, RootsCapabilities, SetLevelRequestParams,
    UrlElicitationCapability,
};
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorCode, Role as McpRole,
    SamplingCapability, SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::service::RequestContext;
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError};
use rmcp::ErrorData as McpError;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::catalog::{self, PromptText, PromptView, ResourceText, ResourceView};
use super::config::{McpConfig, ServerConfig, Transport};
use super::names;
use super::process::{self, StderrTail};
use super::{rest, sse};
use crate::llm::ToolSpec;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};

/// Lines of stderr kept in a failed server's report.
const REPORT_STDERR_LINES: usize = 20;

#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The binary that serves the built-in servers (`switchboard mcp-server …`).
    pub self_exe: PathBuf,
    /// Longest wait for one `tools/call`.
    pub call_timeout: Duration,
    /// Longest wait for a server to start and answer `initialize` and `tools/list`.
    pub start_timeout: Duration,
    /// PATH used to find commands; `None` = the inherited one.
    pub path_var: Option<String>,
    /// The first wait before restarting a crashed server; it doubles with each attempt.
    pub restart_base_delay: Duration,
    /// Restarts in a row before giving up (a server that stayed up a minute starts afresh).
    pub max_restarts: u32,
    /// Probe stdio servers with 2026-07-28 `server/discover` first and fall back to the
    /// `initialize` handshake (2025-11-25) when they do not speak it. Off: `initialize` only.
    pub discover: bool,
}

impl HostOptions {
    pub fn new(self_exe: PathBuf) -> Self {
        HostOptions {
            self_exe,
            call_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(30),
            path_var: None,
            restart_base_delay: Duration::from_secs(1),
            max_restarts: 5,
            discover: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerStatus {
    Starting,
    Running,
    Failed,
    Stopped,
    Disabled,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolView {
    /// The tool's own name on its server.
    pub name: String,
    /// The name the model sees (`server__tool`).
    pub exposed: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    pub destructive: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub name: String,
    pub status: ServerStatus,
    pub transport: Transport,
    /// The program that was (or would be) run.
    pub command: String,
    pub args: Vec<String>,
    pub protocol_version: Option<String>,
    pub server_info: Option<String>,
    pub tools: Vec<ToolView>,
    /// Why it failed, in words.
    pub error: Option<String>,
    /// The step that failed: finding the command, starting the process, the MCP handshake,
    /// listing tools, or (later) running.
    pub failed_step: Option<String>,
    /// Automatic restarts after crashes, in a row.
    pub restarts: u32,
    /// How the process ended, when it has.
    pub exit: Option<String>,
    pub stderr_tail: Vec<String>,
    /// The server's process id (also its process group), while it has one.
    pub pid: Option<u32>,
}

/// The outcome of routing one call: never a Rust error, because whatever happened is something
/// the model should read and the turn should go on.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcome {
    pub server: String,
    pub tool: String,
    pub text: String,
    pub is_error: bool,
    /// The server's whole result, when there was one.
    pub raw: Option<Value>,
}

#[derive(Clone)]
struct CachedTool {
    name: String,
    description: String,
    input_schema: Value,
    read_only: bool,
    destructive: bool,
}

/// Where an exposed name leads, and what the server says the tool does (annotations are hints
/// from the server, not guarantees).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutedTool {
    pub server: String,
    pub tool: String,
    /// Annotated `readOnlyHint: true`.
    pub read_only: bool,
    /// Annotated `destructiveHint: true`.
    pub destructive: bool,
}

struct State {
    status: ServerStatus,
    resolved: Option<PathBuf>,
    protocol_version: Option<String>,
    server_info: Option<String>,
    tools: Vec<CachedTool>,
    prompts: Vec<PromptView>,
    resources: Vec<ResourceView>,
    error: Option<String>,
    failed_step: Option<&'static str>,
    /// Automatic restarts after crashes, in a row.
    restarts: u32,
    running_since: Option<Instant>,
    exit: Option<String>,
    /// Its stderr and its `notifications/message`, newest last, bounded.
    log: StderrTail,
    pid: Option<u32>,
    exit_rx: Option<watch::Receiver<Option<String>>>,
    peer: Option<Peer<RoleClient>>,
    running: Option<RunningService<RoleClient, Handler>>,
    progress: ProgressRoutes,
    /// Where this server's elicitation requests go while one of its calls runs.
    asks: AskRoute,
    stopping: bool,
}

struct Server {
    name: String,
    config: ServerConfig,
    state: Mutex<State>,
}

pub struct McpHost {
    opts: HostOptions,
    /// PATH for finding and running commands (the login shell's, once known).
    path: RwLock<Option<String>>,
    servers: RwLock<BTreeMap<String, Arc<Server>>>,
    /// exposed name → (server, tool)
    names: RwLock<BTreeMap<String, (String, String)>>,
    changed: broadcast::Sender<()>,
    asks: Arc<PendingAsks>,
    /// Folders servers may work in (`roots/list`).
    roots: Arc<RwLock<Vec<PathBuf>>>,
}

/// Receives the server's notifications.
struct Handler {
    server: String,
    log: StderrTail,
    roots: Arc<RwLock<Vec<PathBuf>>>,
    tools_changed: mpsc::UnboundedSender<Listing>,
    progress: ProgressRoutes,
    asks: AskRoute,
    pending: Arc<PendingAsks>,
}

/// Which of a server's lists changed (`notifications/…/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Tools,
    Prompts,
    Resources,
}

/// Where a server's `notifications/progress` go, by progress token (as JSON text).
type ProgressRoutes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<CallEvent>>>>;
/// Where a server's requests for user input go (the call under way), if anywhere.
type AskRoute = Arc<Mutex<Option<mpsc::UnboundedSender<CallEvent>>>>;

/// Server requests (elicitation, sampling) waiting for an answer, by id.
#[derive(Default)]
struct PendingAsks {
    next: std::sync::atomic::AtomicU64,
    waiting: Mutex<HashMap<u64, tokio::sync::oneshot::Sender<ElicitationAnswer>>>,
    sampling: Mutex<HashMap<u64, tokio::sync::oneshot::Sender<SamplingAnswer>>>,
}

impl PendingAsks {
    fn next_id(&self) -> u64 {
        self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }
}

/// A server asks for a completion from the user's model (`sampling/createMessage`) during a
/// call. Only text is passed on; other content is named in brackets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingRequest {
    pub id: u64,
    pub server: String,
    pub system_prompt: Option<String>,
    pub messages: Vec<SamplingText>,
    pub max_tokens: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingText {
    /// `user` or `assistant`
    pub role: String,
    pub text: String,
}

/// What the server gets back: the model's reply, or a refusal (the user declined, or the model
/// failed) with the reason.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingAnswer {
    Reply { model: String, text: String },
    Refused(String),
}

/// One `notifications/progress` of a running call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// A server asks the user for input (`elicitation/create`) during a call: a form from
/// `schema`, or a `url` to open.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Elicitation {
    pub id: u64,
    pub server: String,
    pub message: String,
    pub schema: Option<Value>,
    pub url: Option<String>,
}

/// The user's answer: `accept` (with `content` for a form), `decline` or `cancel`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationAnswer {
    pub action: String,
    #[serde(default)]
    pub content: Option<Value>,
}

/// What happens during one call, for whoever shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    Progress(Progress),
    Elicitation(Elicitation),
    Sampling(SamplingRequest),
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(Listing::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(Listing::Prompts);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(Listing::Resources);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        // progress for a call that is over (or was cancelled) has no route: it is ignored
        if let Some(tx) = self.progress.lock().unwrap().get(&key) {
            let _ = tx.send(CallEvent::Progress(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            }));
        }
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        let roots = self.roots.read().unwrap().clone();
        Ok(ListRootsResult::new(
            roots
                .iter()
                .map(|p| {
                    let mut r = Root::new(file_uri(p));
                    r.name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    r
                })
                .collect(),
        ))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let data = match &params.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let logger = params.logger.map(|l| format!("{l}: ")).unwrap_or_default();
        self.log.push(format!("[{level}] {logger}{data}"));
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let v = serde_json::to_value(&request).unwrap_or_default();
        let route = self.asks.lock().unwrap().clone();
        // outside a call nobody is there to answer
        let Some(route) = route else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let id = self.pending.next_id();
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pending.waiting.lock().unwrap().insert(id, tx);
        let ask = Elicitation {
            id,
            server: self.server.clone(),
            message: v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            schema: v.get("requestedSchema").cloned(),
            url: v.get("url").and_then(Value::as_str).map(String::from),
        };
        if route.send(CallEvent::Elicitation(ask)).is_err() {
            self.pending.waiting.lock().unwrap().remove(&id);
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        }
        let answer = tokio::time::timeout(Duration::from_secs(600), rx).await;
        self.pending.waiting.lock().unwrap().remove(&id);
        Ok(match answer {
            Ok(Ok(a)) if a.action == "accept" => {
                let mut r = ElicitResult::new(ElicitationAction::Accept);
                r.content = a.content;
                r
            }
            Ok(Ok(a)) if a.action == "decline" => ElicitResult::new(ElicitationAction::Decline),
            _ => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        // the spec's code for "the user rejected the sampling request"
        let refused = |why: String| McpError::new(ErrorCode(-1), why, None);
        let route = self.asks.lock().unwrap().clone();
        let Some(route) = route else {
            return Err(refused(
                "Switchboard answers sampling requests only during a tool call the user started"
                    .into(),
            ));
        };
        let id = self.pending.next_id();
        let request = SamplingRequest {
            id,
            server: self.server.clone(),
            system_prompt: params.system_prompt.clone(),
            messages: params.messages.iter().map(sampling_text).collect(),
            max_tokens: params.max_tokens,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pending.sampling.lock().unwrap().insert(id, tx);
        if route.send(CallEvent::Sampling(request)).is_err() {
            self.pending.sampling.lock().unwrap().remove(&id);
            return Err(refused("the call is over".into()));
        }
        let answer = tokio::time::timeout(Duration::from_secs(600), rx).await;
        self.pending.sampling.lock().unwrap().remove(&id);
        match answer {
            Ok(Ok(SamplingAnswer::Reply { model, text })) => {
                let mut r = CreateMessageResult::new(SamplingMessage::assistant_text(text), model);
                r.stop_reason = Some(CreateMessageResult::STOP_REASON_END_TURN.into());
                Ok(r)
            }
            Ok(Ok(SamplingAnswer::Refused(why))) => Err(refused(why)),
            _ => Err(refused("nobody answered the sampling request".into())),
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.sampling = Some(SamplingCapability::default());
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        elicitation.url = Some(UrlElicitationCapability::default());
        capabilities.elicitation = Some(elicitation);
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        ClientConfig::new(
            capabilities,
            Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

impl McpHost {
    pub fn new(opts: HostOptions) -> Arc<Self> {
        Arc::new(McpHost {
            path: RwLock::new(opts.path_var.clone()),
            opts,
            servers: RwLock::new(BTreeMap::new()),
            names: RwLock::new(BTreeMap::new()),
            changed: broadcast::channel(64).0,
            asks: Default::default(),
            roots: Default::default(),
        })
    }

    /// Sets the PATH used to find and run server commands (for servers started from now on).
    pub fn set_path(&self, path: Option<String>) {
        *self.path.write().unwrap() = path;
    }

    pub fn path(&self) -> Option<String> {
        self.path.read().unwrap().clone()
    }

    fn handler(&self, server: &Server, tools_changed: mpsc::UnboundedSender<Listing>) -> Handler {
        let st = server.state.lock().unwrap();
        Handler {
            server: server.name.clone(),
            log: st.log.clone(),
            roots: self.roots.clone(),
            tools_changed,
            progress: st.progress.clone(),
            asks: st.asks.clone(),
            pending: self.asks.clone(),
        }
    }

    /// Sets the folders offered to servers as roots; running servers get
    /// `notifications/roots/list_changed` when they differ from before.
    pub async fn set_roots(&self, roots: Vec<PathBuf>) {
        {
            let mut current = self.roots.write().unwrap();
            if *current == roots {
                return;
            }
            *current = roots;
        }
        let peers: Vec<Peer<RoleClient>> = self
            .servers
            .read()
            .unwrap()
            .values()
            .filter_map(|s| s.state.lock().unwrap().peer.clone())
            .collect();
        for p in peers {
            if let Err(e) = p.notify_roots_list_changed().await {
                tracing::warn!("could not send roots/list_changed: {e}");
            }
        }
    }

    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.read().unwrap().clone()
    }

    /// Answers an elicitation the user was shown. False when it is no longer waiting.
    pub fn answer_elicitation(&self, id: u64, answer: ElicitationAnswer) -> bool {
        match self.asks.waiting.lock().unwrap().remove(&id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Answers a server's sampling request. False when it is no longer waiting.
    pub fn answer_sampling(&self, id: u64, answer: SamplingAnswer) -> bool {
        match self.asks.sampling.lock().unwrap().remove(&id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Fires whenever a server's status or tools change.
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.changed.subscribe()
    }

    /// Starts every enabled server of `config`, all in parallel, and waits until each is running
    /// or has failed. Servers already running are stopped first.
    pub async fn start_all(self: &Arc<Self>, config: &McpConfig) {
        self.shutdown().await;
        self.servers.write().unwrap().clear();
        self.apply_config(config).await;
    }

    /// Makes the running set match `config`, live: servers that were removed or changed stop,
    /// new and changed ones start (in parallel), the others are left alone. Waits until every
    /// started server is running or has failed.
    pub async fn apply_config(self: &Arc<Self>, config: &McpConfig) {
        let (to_stop, to_start) = {
            let mut servers = self.servers.write().unwrap();
            let mut to_stop = Vec::new();
            let mut to_start = Vec::new();
            let names: Vec<String> = servers.keys().cloned().collect();
            for name in names {
                let same = config.servers.get(&name) == Some(&servers[&name].config);
                if !same {
                    to_stop.push(servers.remove(&name).unwrap());
                }
            }
            for (name, cfg) in &config.servers {
                if servers.contains_key(name) {
                    continue;
                }
                let s = Arc::new(Server::new(name, cfg));
                servers.insert(name.clone(), s.clone());
                if !cfg.disabled {
                    to_start.push(s);
                }
            }
            (to_stop, to_start)
        };
        futures::future::join_all(to_stop.iter().map(|s| stop_server(s))).await;
        self.rebuild_names();
        self.notify();
        futures::future::join_all(to_start.into_iter().map(|s| self.clone().start_one(s))).await;
    }

    /// Stops a server (if it runs) and starts it again with the same config.
    pub async fn restart(self: &Arc<Self>, name: &str) -> bool {
        let old = self.servers.read().unwrap().get(name).cloned();
        let Some(old) = old else { return false };
        stop_server(&old).await;
        let fresh = Arc::new(Server::new(name, &old.config));
        self.servers
            .write()
            .unwrap()
            .insert(name.to_string(), fresh.clone());
        self.rebuild_names();
        self.notify();
        if !fresh.config.disabled {
            self.clone().start_one(fresh).await;
        }
        true
    }

    async fn start_one(self: Arc<Self>, server: Arc<Server>) {
        if server.config.transport() != Transport::Stdio {
            return self.start_http(server).await;
        }
        if self
            .clone()
            .start_stdio(server.clone(), self.opts.discover)
            .await
            == Started::RetryLegacy
        {
            // a server that answered `server/discover` with something that is neither a 2026
            // result nor an error: whatever it is, it may still speak the 2025 handshake
            if !server.state.lock().unwrap().stopping {
                self.start_stdio(server, false).await;
            }
        }
    }

    async fn start_stdio(self: Arc<Self>, server: Arc<Server>, discover: bool) -> Started {
        let path = self.path();
        let program =
            match process::resolve_command(&server.config, &self.opts.self_exe, path.as_deref()) {
                Ok(p) => p,
                Err(e) => {
                    self.fail(&server, "finding the command", format!("cannot start: {e}"));
                    return Started::Done;
                }
            };
        server.state.lock().unwrap().resolved = Some(program.clone());
        let log = server.state.lock().unwrap().log.clone();
        let spawned = match process::spawn(&server.config, program.clone(), path.as_deref(), log) {
            Ok(s) => s,
            Err(e) => {
                self.fail(
                    &server,
                    "starting the process",
                    format!("cannot start {}: {e}", program.display()),
                );
                return Started::Done;
            }
        };
        {
            let mut st = server.state.lock().unwrap();
            st.pid = spawned.pid;
            st.exit_rx = Some(spawned.exit.clone());
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let handler = self.handler(&server, tx);
        let step = std::sync::Mutex::new(HANDSHAKE);
        let init = tokio::time::timeout(self.opts.start_timeout, async {
            // rmcp drops lines over 16 MB (the call would then just time out); take up to
            // 64 MB and cut what the model sees instead
            let transport =
                AsyncRwTransport::<RoleClient, _, _>::new(spawned.stdout, spawned.stdin)
                    .with_max_line_length(MAX_STDIO_MESSAGE);
            let running = handler
                .serve_with_lifecycle(transport, lifecycle(discover))
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            with_tools(running, &step, &server.name).await
        })
        .await;
        let step = *step.lock().unwrap();
        let (running, lists) = match init {
            Ok(Ok(v)) => v,
            Ok(Err(e)) if discover && step == HANDSHAKE && spawned.exit.borrow().is_none() => {
                server.state.lock().unwrap().log.push(format!(
                    "[switchboard] {e}; starting it again with the 2025 initialize handshake"
                ));
                let (pid, mut exit) = (spawned.pid, spawned.exit.clone());
                process::terminate(pid, &mut exit, Duration::from_secs(1)).await;
                return Started::RetryLegacy;
            }
            Ok(Err(e)) => {
                self.fail_and_reap(&server, step, e, true).await;
                return Started::Done;
            }
            Err(_) => {
                let e = if step == HANDSHAKE {
                    format!(
                        "no answer to the MCP handshake within {} s (is it an MCP server on stdio?)",
                        self.opts.start_timeout.as_secs()
                    )
                } else {
                    format!(
                        "no answer to tools/list within {} s",
                        self.opts.start_timeout.as_secs()
                    )
                };
                // it did not answer in time: that is the news, not how it ended after we gave up
                self.fail_and_reap(&server, step, e, false).await;
                return Started::Done;
            }
        };
        self.running(server, running, lists, Some(spawned.exit), rx);
        Started::Done
    }

    /// The handshake and tools/list went through: the server is running from now on.
    fn running(
        self: &Arc<Self>,
        server: Arc<Server>,
        running: RunningService<RoleClient, Handler>,
        lists: Lists,
        exit: Option<watch::Receiver<Option<String>>>,
        tools_changed: mpsc::UnboundedReceiver<Listing>,
    ) {
        let peer = running.peer().clone();
        {
            let mut st = server.state.lock().unwrap();
            if st.stopping {
                // shut down while starting
                drop(st);
                drop(running);
                return;
            }
            if let Some(info) = peer.peer_info() {
                st.protocol_version = Some(info.protocol_version.to_string());
                st.server_info = info
                    .server_info
                    .as_ref()
                    .map(|i| format!("{} {}", i.name, i.version));
            }
            st.tools = lists.tools.iter().map(cached).collect();
            st.prompts = lists.prompts;
            st.resources = lists.resources;
            st.status = ServerStatus::Running;
            st.running_since = Some(Instant::now());
            st.peer = Some(peer.clone());
            st.running = Some(running);
        }
        self.rebuild_names();
        self.notify();
        tracing::info!(server = %server.name, "MCP server running");
        if let Some(level) = server.config.log_level.clone() {
            let peer = peer.clone();
            let log = server.state.lock().unwrap().log.clone();
            tokio::spawn(async move {
                match serde_json::from_value::<LoggingLevel>(Value::String(level.clone())) {
                    Ok(l) => {
                        if let Err(e) = peer.set_level(SetLevelRequestParams::new(l)).await {
                            log.push(format!(
                                "[switchboard] logging/setLevel {level} failed: {e}"
                            ));
                        }
                    }
                    Err(_) => {
                        log.push(format!("[switchboard] \"{level}\" is not an MCP log level"))
                    }
                }
            });
        }
        tokio::spawn(self.clone().monitor(server, peer, exit, tools_changed));
    }

    /// Connects to a Streamable HTTP server (rmcp's client: session id, protocol-version header,
    /// the GET stream, re-initialize on an expired session).
    async fn start_http(self: Arc<Self>, server: Arc<Server>) {
        let discover = self.opts.discover && server.config.transport() == Transport::Http;
        if self.clone().connect_http(server.clone(), discover).await == Started::RetryLegacy
            && !server.state.lock().unwrap().stopping
        {
            self.connect_http(server, false).await;
        }
    }

    async fn connect_http(self: Arc<Self>, server: Arc<Server>, discover: bool) -> Started {
        let url = server.config.url.clone().unwrap_or_default();
        server.state.lock().unwrap().resolved = Some(PathBuf::from(&url));
        let headers: HashMap<http::HeaderName, http::HeaderValue> =
            match super::config::header_map(&server.config.headers) {
                Ok(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                Err(e) => {
                    self.fail(&server, "connecting", e);
                    return Started::Done;
                }
            };
        let (tx, rx) = mpsc::unbounded_channel();
        let handler = self.handler(&server, tx);
        let step = std::sync::Mutex::new(HANDSHAKE);
        let legacy = server.config.transport() == Transport::Sse;
        let init = tokio::time::timeout(self.opts.start_timeout, async {
            let handshake = |e: String| format!("the MCP handshake with {url} failed: {e}");
            let running = if server.config.transport() == Transport::Rest {
                let transport = rest::RestTransport::new(&url, &server.config.headers)
                    .map_err(|e| e.to_string())?;
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| handshake(e.to_string()))?
            } else if legacy {
                *step.lock().unwrap() = "opening the event stream (GET)";
                let transport = sse::LegacySseTransport::connect(
                    &url,
                    &server.config.headers,
                    self.opts.start_timeout,
                )
                .await
                .map_err(|e| e.to_string())?;
                *step.lock().unwrap() = HANDSHAKE;
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| handshake(e.to_string()))?
            } else {
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(headers);
                let client = reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .build()
                    .expect("reqwest client");
                let transport = StreamableHttpClientTransport::with_client(client, config);
                handler
                    .serve_with_lifecycle(transport, lifecycle(discover))
                    .await
                    .map_err(|e| handshake(e.to_string()))?
            };
            with_tools(running, &step, &server.name).await
        })
        .await;
        let step = *step.lock().unwrap();
        match init {
            // no process to watch: the session lives until it is stopped
            Ok(Ok((running, lists))) => self.running(server, running, lists, None, rx),
            // a 2025-only server that answered the probe with something else than an error
            Ok(Err(e)) if discover && step == HANDSHAKE => {
                server.state.lock().unwrap().log.push(format!(
                    "[switchboard] {e}; connecting again with the 2025 initialize handshake"
                ));
                return Started::RetryLegacy;
            }
            Ok(Err(e)) => self.fail(&server, step, e),
            Err(_) => self.fail(
                &server,
                step,
                format!(
                    "no answer from {url} within {} s",
                    self.opts.start_timeout.as_secs()
                ),
            ),
        }
        Started::Done
    }

    /// Watches a running server: its exit marks it failed; `tools/list_changed` refreshes its tools.
    async fn monitor(
        self: Arc<Self>,
        server: Arc<Server>,
        peer: Peer<RoleClient>,
        mut exit: Option<watch::Receiver<Option<String>>>,
        mut tools_changed: mpsc::UnboundedReceiver<Listing>,
    ) {
        enum Event {
            Exited(String),
            Changed(Option<Listing>),
        }
        loop {
            let ev = tokio::select! {
                desc = async {
                    match exit.as_mut() {
                        Some(exit) => match exit.wait_for(|e| e.is_some()).await {
                            Ok(e) => e.clone().unwrap_or_default(),
                            Err(_) => String::new(),
                        },
                        None => std::future::pending().await,
                    }
                } => Event::Exited(desc),
                m = tools_changed.recv() => Event::Changed(m),
            };
            match ev {
                Event::Exited(desc) => {
                    let stopping = server.state.lock().unwrap().stopping;
                    if !stopping {
                        tracing::warn!(server = %server.name, "MCP server died: {desc}");
                        self.crashed(&server, desc);
                    }
                    return;
                }
                Event::Changed(None) => return,
                Event::Changed(Some(first)) => {
                    let mut kinds = vec![first];
                    while let Ok(k) = tools_changed.try_recv() {
                        if !kinds.contains(&k) {
                            kinds.push(k);
                        }
                    }
                    for kind in kinds {
                        self.refresh(&server, &peer, kind).await;
                    }
                    self.rebuild_names();
                    self.notify();
                }
            }
        }
    }

    /// Lists one of a running server's lists again (after its `list_changed`).
    async fn refresh(&self, server: &Server, peer: &Peer<RoleClient>, kind: Listing) {
        let wait = self.opts.start_timeout;
        let failed = |what: &str, e: String| {
            tracing::warn!(server = %server.name, "refreshing {what} failed: {e}");
            server
                .state
                .lock()
                .unwrap()
                .log
                .push(format!("[switchboard] refreshing {what} failed: {e}"));
        };
        let timed_out = || format!("no answer within {} s", wait.as_secs());
        match kind {
            Listing::Tools => match tokio::time::timeout(wait, peer.list_all_tools()).await {
                Ok(Ok(tools)) => {
                    server.state.lock().unwrap().tools = tools.iter().map(cached).collect()
                }
                Ok(Err(e)) => failed("tools", e.to_string()),
                Err(_) => failed("tools", timed_out()),
            },
            Listing::Prompts => {
                match tokio::time::timeout(wait, catalog::list_prompts(&server.name, peer)).await {
                    Ok(Ok(p)) => server.state.lock().unwrap().prompts = p,
                    Ok(Err(e)) => failed("prompts", e),
                    Err(_) => failed("prompts", timed_out()),
                }
            }
            Listing::Resources => {
                match tokio::time::timeout(wait, catalog::list_resources(&server.name, peer)).await
                {
                    Ok(Ok(r)) => server.state.lock().unwrap().resources = r,
                    Ok(Err(e)) => failed("resources", e),
                    Err(_) => failed("resources", timed_out()),
                }
            }
        }
    }

    /// The prompts of the running servers (typing `/` lists them).
    pub fn prompts(&self) -> Vec<PromptView> {
        self.running_servers()
            .iter()
            .flat_map(|s| s.state.lock().unwrap().prompts.clone())
            .collect()
    }

    /// The resources of the running servers.
    pub fn resources(&self) -> Vec<ResourceView> {
        self.running_servers()
            .iter()
            .flat_map(|s| s.state.lock().unwrap().resources.clone())
            .collect()
    }

    fn running_servers(&self) -> Vec<Arc<Server>> {
        self.servers
            .read()
            .unwrap()
            .values()
            .filter(|s| s.state.lock().unwrap().status == ServerStatus::Running)
            .cloned()
            .collect()
    }

    fn running_peer(&self, server: &str) -> Result<Peer<RoleClient>, String> {
        let servers = self.servers.read().unwrap();
        let s = servers
            .get(server)
            .ok_or_else(|| format!("The server \"{server}\" is not configured."))?;
        let st = s.state.lock().unwrap();
        match (&st.peer, st.status) {
            (Some(p), ServerStatus::Running) => Ok(p.clone()),
            _ => Err(format!("The server \"{server}\" is not running.")),
        }
    }

    /// Runs a prompt (`prompts/get`) with the user's arguments; its messages as text.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Vec<PromptText>, String> {
        let peer = self.running_peer(server)?;
        tokio::time::timeout(
            self.opts.call_timeout,
            catalog::get_prompt(&peer, name, arguments),
        )
        .await
        .map_err(|_| {
            format!(
                "{server} did not answer prompts/get within {} s",
                self.opts.call_timeout.as_secs()
            )
        })?
    }

    /// Reads a resource (`resources/read`) as text.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ResourceText, String> {
        let peer = self.running_peer(server)?;
        tokio::time::timeout(self.opts.call_timeout, catalog::read_resource(&peer, uri))
            .await
            .map_err(|_| {
                format!(
                    "{server} did not answer resources/read within {} s",
                    self.opts.call_timeout.as_secs()
                )
            })?
    }

    /// A running server died: mark it failed and, unless it keeps crashing, restart it after a
    /// growing delay.
    fn crashed(self: &Arc<Self>, server: &Arc<Server>, desc: String) {
        let (previous, ran_for) = {
            let st = server.state.lock().unwrap();
            (
                st.restarts,
                st.running_since.map(|t| t.elapsed()).unwrap_or_default(),
            )
        };
        // a server that ran for a while before dying gets a fresh series of attempts
        let previous = if ran_for > Duration::from_secs(60) {
            0
        } else {
            previous
        };
        if previous >= self.opts.max_restarts {
            self.fail(
                server,
                "running",
                format!("the server stopped unexpectedly ({desc}); gave up after {previous} automatic restarts"),
            );
            return;
        }
        let attempt = previous + 1;
        let delay = self.opts.restart_base_delay * 2u32.saturating_pow(previous).min(32);
        self.fail(
            server,
            "running",
            format!(
                "the server stopped unexpectedly ({desc}); restarting in {:.1} s (attempt {attempt} of {})",
                delay.as_secs_f64(),
                self.opts.max_restarts
            ),
        );
        server.state.lock().unwrap().restarts = attempt;
        let host = self.clone();
        let server = server.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            // only if nobody edited, removed or restarted it meanwhile
            let current = host.servers.read().unwrap().get(&server.name).cloned();
            if !current.is_some_and(|c| Arc::ptr_eq(&c, &server)) {
                return;
            }
            let fresh = Arc::new(Server::new(&server.name, &server.config));
            fresh.state.lock().unwrap().restarts = attempt;
            host.servers
                .write()
                .unwrap()
                .insert(server.name.clone(), fresh.clone());
            host.notify();
            host.start_one(fresh).await;
        });
    }

    fn fail(&self, server: &Server, step: &'static str, error: String) {
        {
            let mut st = server.state.lock().unwrap();
            st.status = ServerStatus::Failed;
            st.error = Some(error);
            st.failed_step = Some(step);
            st.exit = st.exit_rx.as_ref().and_then(|r| r.borrow().clone());
            st.peer = None;
            st.running = None;
        }
        self.rebuild_names();
        self.notify();
    }

    /// Marks the server failed after it has had a moment to exit, so the report has its exit status.
    /// `exit_explains`: when the process has exited, its exit is the better explanation (the
    /// handshake broke because it died), rather than the error seen on our side.
    async fn fail_and_reap(
        &self,
        server: &Server,
        step: &'static str,
        error: String,
        exit_explains: bool,
    ) {
        let (pid, rx) = {
            let st = server.state.lock().unwrap();
            (st.pid, st.exit_rx.clone())
        };
        let mut error = error;
        if let Some(mut rx) = rx {
            let _ = tokio::time::timeout(Duration::from_millis(500), rx.wait_for(|e| e.is_some()))
                .await;
            let exited = rx.borrow().clone();
            if let Some(how) = exited.filter(|_| exit_explains) {
                error =
                    format!("the process {how} during start-up, before the MCP handshake finished");
            }
            process::terminate(pid, &mut rx, Duration::from_secs(1)).await;
        }
        self.fail(server, step, error);
    }

    fn notify(&self) {
        let _ = self.changed.send(());
    }

    fn rebuild_names(&self) {
        let servers = self.servers.read().unwrap();
        let mut pairs = Vec::new();
        for s in servers.values() {
            for t in &s.state.lock().unwrap().tools {
                pairs.push((s.name.clone(), t.name.clone()));
            }
        }
        *self.names.write().unwrap() = names::assign(&pairs);
    }

    fn exposed_names(&self) -> BTreeMap<(String, String), String> {
        self.names
            .read()
            .unwrap()
            .iter()
            .map(|(k, v)| (v.clone(), k.clone()))
            .collect()
    }

    pub fn servers(&self) -> Vec<ServerView> {
        let exposed = self.exposed_names();
        let servers = self.servers.read().unwrap();
        servers
            .values()
            .map(|s| {
                let st = s.state.lock().unwrap();
                ServerView {
                    name: s.name.clone(),
                    status: st.status,
                    transport: s.config.transport(),
                    command: st
                        .resolved
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| s.config.command.clone()),
                    args: s.config.args.clone(),
                    protocol_version: st.protocol_version.clone(),
                    server_info: st.server_info.clone(),
                    tools: st
                        .tools
                        .iter()
                        .map(|t| ToolView {
                            name: t.name.clone(),
                            exposed: exposed
                                .get(&(s.name.clone(), t.name.clone()))
                                .cloned()
                                .unwrap_or_default(),
                            description: t.description.clone(),
                            input_schema: t.input_schema.clone(),
                            read_only: t.read_only,
                            destructive: t.destructive,
                        })
                        .collect(),
                    error: st.error.clone(),
                    failed_step: st.failed_step.map(String::from),
                    restarts: st.restarts,
                    exit: st.exit.clone(),
                    stderr_tail: Some(&st.log)
                        .as_ref()
                        .map(|t| t.last(REPORT_STDERR_LINES))
                        .unwrap_or_default(),
                    pid: st.pid,
                }
            })
            .collect()
    }

    /// The tools of the running servers, as offered to the model.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        let exposed = self.exposed_names();
        let servers = self.servers.read().unwrap();
        let mut out = Vec::new();
        for s in servers.values() {
            let st = s.state.lock().unwrap();
            if st.status != ServerStatus::Running {
                continue;
            }
            for t in &st.tools {
                if let Some(name) = exposed.get(&(s.name.clone(), t.name.clone())) {
                    out.push(ToolSpec {
                        name: name.clone(),
                        description: t.description.clone(),
                        parameters: t.input_schema.clone(),
                    });
                }
            }
        }
        out
    }

    /// The `inputSchema` of a tool, by exposed name.
    pub fn tool_schema(&self, exposed: &str) -> Option<Value> {
        let (server, tool) = self.names.read().unwrap().get(exposed).cloned()?;
        let servers = self.servers.read().unwrap();
        let st = servers.get(&server)?.state.lock().unwrap();
        st.tools
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.input_schema.clone())
    }

    /// Which server and tool an exposed name stands for.
    pub fn route(&self, exposed: &str) -> Option<RoutedTool> {
        let (server, tool) = self.names.read().unwrap().get(exposed).cloned()?;
        let servers = self.servers.read().unwrap();
        let hints = servers.get(&server).and_then(|s| {
            let st = s.state.lock().unwrap();
            st.tools
                .iter()
                .find(|t| t.name == tool)
                .map(|t| (t.read_only, t.destructive))
        });
        let (read_only, destructive) = hints.unwrap_or((false, false));
        Some(RoutedTool {
            server,
            tool,
            read_only,
            destructive,
        })
    }

    /// Calls a tool by its exposed name. Every failure becomes an error outcome for the model.
    pub async fn call_tool(
        &self,
        exposed: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> ToolOutcome {
        self.call_tool_with_events(exposed, arguments, cancel, None)
            .await
    }

    /// [`McpHost::call_tool`], reporting the server's progress notifications to `progress`. The
    /// call's timeout starts again at each progress; cancelling sends `notifications/cancelled`
    /// and ignores whatever comes after.
    pub async fn call_tool_with_events(
        &self,
        exposed: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        let Some(RoutedTool {
            server: server_name,
            tool,
            ..
        }) = self.route(exposed)
        else {
            let known: Vec<String> = self.tool_specs().into_iter().map(|t| t.name).collect();
            return ToolOutcome {
                server: String::new(),
                tool: exposed.to_string(),
                text: format!(
                    "Unknown tool \"{exposed}\". Available tools: {}.",
                    known.join(", ")
                ),
                is_error: true,
                raw: None,
            };
        };
        let err = |text: String| ToolOutcome {
            server: server_name.clone(),
            tool: tool.clone(),
            text,
            is_error: true,
            raw: None,
        };
        let server = self.servers.read().unwrap().get(&server_name).cloned();
        let Some(server) = server else {
            return err(format!("The server \"{server_name}\" is not configured."));
        };
        let (peer, exit_rx, routes, asks) = {
            let st = server.state.lock().unwrap();
            match (&st.peer, st.status) {
                (Some(p), ServerStatus::Running) => (
                    p.clone(),
                    st.exit_rx.clone(),
                    st.progress.clone(),
                    st.asks.clone(),
                ),
                _ => {
                    let why = st
                        .error
                        .clone()
                        .unwrap_or_else(|| format!("{:?}", st.status).to_lowercase());
                    return err(format!(
                        "The server \"{server_name}\" is not running: {why}"
                    ));
                }
            }
        };
        let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
        let started = Instant::now();
        // with someone listening, progress restarts the timeout; without, a plain timeout is cheaper
        let options = if events.is_some() {
            PeerRequestOptions::with_timeout(self.opts.call_timeout)
                .reset_timeout_on_progress()
                .with_max_total_timeout(self.opts.call_timeout * 30)
        } else {
            PeerRequestOptions::with_timeout(self.opts.call_timeout)
        };
        let handle = match peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                options,
            )
            .await
        {
            Ok(h) => h,
            Err(e) => return err(format!("The call could not be sent: {e}")),
        };
        let request_id = handle.id.clone();
        let token = serde_json::to_string(&handle.progress_token).unwrap_or_default();
        if let Some(tx) = events {
            routes.lock().unwrap().insert(token.clone(), tx.clone());
            *asks.lock().unwrap() = Some(tx);
        }
        let res = tokio::select! {
            r = handle.await_response() => Some(r),
            _ = cancel.cancelled() => None,
        };
        routes.lock().unwrap().remove(&token);
        *asks.lock().unwrap() = None;
        let Some(res) = res else {
            let note = CancelledNotification::new(CancelledNotificationParam::new(
                Some(request_id),
                Some("cancelled by the user".into()),
            ));
            if let Err(e) = peer.send_notification(note.into()).await {
                tracing::warn!("could not tell {server_name} about the cancel: {e}");
            }
            return err("The call was cancelled by the user.".into());
        };
        match res {
            Ok(ServerResult::CallToolResult(result)) => {
                let raw = serde_json::to_value(&result).unwrap_or(Value::Null);
                let (text, raw) = bounded(result_text(&raw), raw);
                ToolOutcome { server: server_name.clone(), tool: tool.clone(), text, is_error: result.is_error.unwrap_or(false), raw }
            }
            Ok(_) => err("The server asked for input or started a task, which Switchboard does not support yet.".into()),
            Err(ServiceError::Timeout { .. }) => err(format!(
                "The tool did not answer within {} s of its last sign of life (after {:.1} s the call was cancelled).",
                self.opts.call_timeout.as_secs(),
                started.elapsed().as_secs_f64()
            )),
            Err(e) => {
                // if the process died, say so with its exit status
                if let Some(mut rx) = exit_rx {
                    let _ = tokio::time::timeout(Duration::from_millis(500), rx.wait_for(|e| e.is_some())).await;
                    if let Some(desc) = rx.borrow().clone() {
                        return err(format!("The server \"{server_name}\" stopped during the call ({desc})."));
                    }
                }
                err(format!("The call failed: {e}"))
            }
        }
    }

    /// Stops every server and everything it started. Safe to call more than once.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> = self.servers.read().unwrap().values().cloned().collect();
        futures::future::join_all(servers.iter().map(|s| stop_server(s))).await;
        self.notify();
    }
}

const HANDSHAKE: &str = "the MCP handshake (initialize)";

/// The dual-era start: 2026-07-28 `server/discover` first; an error or no answer (10 s) means a
/// 2025-era server, which gets the `initialize` handshake. Without discovery: `initialize` only.
fn lifecycle(discover: bool) -> ClientLifecycleMode {
    if discover {
        ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        }
    } else {
        ClientLifecycleMode::Initialize
    }
}

/// How one attempt to start a server ended.
#[derive(Debug, PartialEq, Eq)]
enum Started {
    /// Running, or failed with its report written.
    Done,
    /// The `server/discover` probe broke on something other than an error or silence.
    RetryLegacy,
}
const LISTING: &str = "listing tools (tools/list)";

/// What a server offers, as listed when it starts.
struct Lists {
    tools: Vec<rmcp::model::Tool>,
    prompts: Vec<PromptView>,
    resources: Vec<ResourceView>,
}

/// After the handshake, on every transport: list all the server's tools, prompts and resources
/// (every page). Only tools are required: a server whose prompts or resources cannot be listed
/// still runs, and its log says why.
async fn with_tools(
    running: RunningService<RoleClient, Handler>,
    step: &std::sync::Mutex<&'static str>,
    server: &str,
) -> Result<(RunningService<RoleClient, Handler>, Lists), String> {
    *step.lock().unwrap() = LISTING;
    let peer = running.peer().clone();
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let (prompts, resources) = tokio::join!(
        catalog::list_prompts(server, &peer),
        catalog::list_resources(server, &peer)
    );
    fn keep<T>(r: Result<Vec<T>, String>, log: &StderrTail) -> Vec<T> {
        r.unwrap_or_else(|e| {
            log.push(format!("[switchboard] {e}"));
            vec![]
        })
    }
    let log = &running.service().log;
    let prompts = keep(prompts, log);
    let resources = keep(resources, log);
    Ok((
        running,
        Lists {
            tools,
            prompts,
            resources,
        },
    ))
}

/// Ends a server's session and its whole process group; marks it stopped.
async fn stop_server(s: &Server) {
    let (running, pid, rx) = {
        let mut st = s.state.lock().unwrap();
        st.stopping = true;
        st.peer = None;
        (st.running.take(), st.pid, st.exit_rx.clone())
    };
    if let Some(r) = running {
        let _ = tokio::time::timeout(Duration::from_secs(1), r.cancel()).await;
    }
    if let Some(mut rx) = rx {
        // closing stdin is the polite way; give it a moment before signals
        let _ =
            tokio::time::timeout(Duration::from_millis(500), rx.wait_for(|e| e.is_some())).await;
        process::terminate(pid, &mut rx, Duration::from_secs(2)).await;
    }
    let mut st = s.state.lock().unwrap();
    if st.status == ServerStatus::Running || st.status == ServerStatus::Starting {
        st.status = ServerStatus::Stopped;
    }
}

impl Server {
    fn new(name: &str, config: &ServerConfig) -> Server {
        Server {
            name: name.to_string(),
            config: config.clone(),
            state: Mutex::new(State {
                status: if config.disabled {
                    ServerStatus::Disabled
                } else {
                    ServerStatus::Starting
                },
                resolved: None,
                protocol_version: None,
                server_info: None,
                tools: vec![],
                prompts: vec![],
                resources: vec![],
                error: None,
                failed_step: None,
                restarts: 0,
                running_since: None,
                exit: None,
                log: StderrTail::default(),
                pid: None,
                exit_rx: None,
                peer: None,
                running: None,
                progress: Default::default(),
                asks: Default::default(),
                stopping: false,
            }),
        }
    }
}

fn cached(t: &rmcp::model::Tool) -> CachedTool {
    CachedTool {
        name: t.name.to_string(),
        description: t.description.as_deref().unwrap_or_default().to_string(),
        input_schema: Value::Object((*t.input_schema).clone()),
        read_only: t
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
        destructive: t
            .annotations
            .as_ref()
            .and_then(|a| a.destructive_hint)
            .unwrap_or(false),
    }
}

/// The largest message read from a stdio server.
pub const MAX_STDIO_MESSAGE: usize = 64 * 1024 * 1024;

/// Most of a result's text the model (and the store) gets; the rest is cut with a note.
pub const MAX_RESULT_TEXT: usize = 256 * 1024;
/// Larger raw results (images, structured content) are not kept beside the text.
pub const MAX_RAW_RESULT: usize = 2 * 1024 * 1024;

/// Keeps a huge result from flooding the model's context, the window and the database.
fn bounded(text: String, raw: Value) -> (String, Option<Value>) {
    let raw_len = approx_size(&raw);
    let raw = (raw_len <= MAX_RAW_RESULT).then_some(raw);
    if text.len() <= MAX_RESULT_TEXT {
        return (text, raw);
    }
    let mut end = MAX_RESULT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let note = format!(
        "\n\n[Switchboard cut this result: it was {} bytes; only the first {} are shown.]",
        text.len(),
        end
    );
    (format!("{}{note}", &text[..end]), raw)
}

/// `file://` URI of an absolute path (percent-encoding what a URI cannot hold as is).
/// One sampling message as text: text blocks as they are, other content named in brackets.
fn sampling_text(m: &SamplingMessage) -> SamplingText {
    let role = match m.role {
        McpRole::Assistant => "assistant",
        _ => "user",
    };
    let text = m
        .content
        .clone()
        .into_vec()
        .iter()
        .map(|c| match c {
            SamplingMessageContentBlock::Text(t) => t.text.clone(),
            SamplingMessageContentBlock::Image(_) => "[image]".into(),
            SamplingMessageContentBlock::Audio(_) => "[audio]".into(),
            SamplingMessageContentBlock::ToolUse(u) => format!("[tool use: {}]", u.name),
            SamplingMessageContentBlock::ToolResult(_) => "[tool result]".into(),
            _ => "[other content]".into(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    SamplingText {
        role: role.into(),
        text,
    }
}

pub fn file_uri(p: &std::path::Path) -> String {
    let mut out = String::from("file://");
    for b in p.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// About how many bytes `v` takes as JSON (strings and keys counted, punctuation not): enough to
/// tell a 2 MB result from a small one without serializing it.
fn approx_size(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(approx_size).sum(),
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + approx_size(v)).sum(),
        _ => 8,
    }
}

/// The text the model reads from a result: its text blocks; other blocks described; the
/// structured content when there is no text.
pub fn result_text(raw: &Value) -> String {
    let mut parts = Vec::new();
    for block in raw
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            Some("image") | Some("audio") => parts.push(format!(
                "[{} {}]",
                block["type"].as_str().unwrap_or_default(),
                block.get("mimeType").and_then(Value::as_str).unwrap_or("")
            )),
            Some("resource_link") => parts.push(format!(
                "[resource {}]",
                block.get("uri").and_then(Value::as_str).unwrap_or_default()
            )),
            Some("resource") => {
                let r = &block["resource"];
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => parts.push(t.to_string()),
                    None => parts.push(format!(
                        "[resource {}]",
                        r.get("uri").and_then(Value::as_str).unwrap_or_default()
                    )),
                }
            }
            _ => parts.push(block.to_string()),
        }
    }
    if parts.is_empty() {
        if let Some(s) = raw.get("structuredContent") {
            return s.to_string();
        }
    }
    parts.join("\n")
}
