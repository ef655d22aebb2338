//! One server's state as its supervisor publishes it, and the views built from it. A snapshot is
//! immutable: the supervisor makes a new one for every change and sends it on a `watch`
//! channel, so readers (calls, the tool list, the window) never see a half-made state.
//!
//! The views: `ServerView`, `ToolView`, `RoutedTool`; `Step` names the step that failed.

use std::sync::Arc;

use rmcp::{Peer, RoleClient};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::mcp::catalog::{PromptView, ResourceView};
use crate::mcp::config::Transport;
use crate::mcp::sandbox::{Detector, SandboxState};

/// The authorization manager a signed-in session's HTTP client sends tokens from; a new sign-in
/// swaps a new one in.
pub type SessionAuth = Arc<tokio::sync::Mutex<rmcp::transport::auth::AuthorizationManager>>;

/// Where a server is in its life.
#[derive(Clone)]
pub enum Phase {
    /// Configured but turned off.
    Disabled,
    Starting,
    Running(Session),
    Failed(Report),
    Stopped,
}

/// A live connection to a running server.
#[derive(Clone)]
pub struct Session {
    pub peer: Peer<RoleClient>,
    pub protocol_version: Option<String>,
    pub server_info: Option<String>,
    /// The process (and process group) id of a stdio server.
    pub pid: Option<u32>,
    /// Becomes `Some(how it ended)` when the stdio process exits.
    pub exit: Option<watch::Receiver<Option<String>>>,
    /// Tells the sandbox's refusals in its error results, when it runs sandboxed.
    pub sandbox: Option<Arc<Detector>>,
    /// Where a signed-in HTTP session's tokens come from (a new sign-in swaps it).
    pub auth: Option<SessionAuth>,
    /// A Streamable HTTP server's session (its id, kept while tasks run in it).
    pub http: Option<Arc<super::rejoin::HttpSession>>,
}

/// Why a server is not running, for the person reading the servers list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// What went wrong, in words.
    pub error: String,
    pub step: Step,
    /// How the process ended, when it has.
    pub exit: Option<String>,
    /// The process id it had, if it got one.
    pub pid: Option<u32>,
}

/// The step of a server's life that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Step {
    /// Finding the program on PATH.
    FindingCommand,
    /// Reading its secret environment values or headers (the keyring, or the secrets file).
    ReadingSecrets,
    /// Setting up its sandbox (or finding that the kernel has none).
    Sandbox,
    /// Fetching its npm or PyPI package for a sandbox without network (`sandbox::fetch`).
    FetchingPackage,
    StartingProcess,
    /// Reaching a remote server (HTTP, SSE, REST).
    Connecting,
    /// The legacy SSE transport's GET of the event stream.
    OpeningStream,
    /// `server/discover` or `initialize`.
    Handshake,
    /// Signing in (OAuth): the server refused without it. The row offers Sign in.
    SigningIn,
    /// `tools/list`.
    ListingTools,
    /// After it was running.
    Running,
}

/// A tool as the server described it.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    pub destructive: bool,
    /// Annotated `openWorldHint: true`: it reaches outside (the internet, other systems).
    pub open_world: bool,
    /// The annotations as sent (`null` without), for pinning.
    pub annotations: Value,
    /// Its `outputSchema` (`null` without), for pinning.
    pub output_schema: Value,
    /// Why this definition is not the one the user accepted, when it is not (see `mcp::pins`).
    pub pinned: Option<Arc<crate::mcp::pins::Pin>>,
    /// Its app, and who may call it (MCP Apps, `_meta.ui`).
    pub ui: crate::mcp::apps::ToolUi,
}

impl CachedTool {
    /// What is pinned of it.
    pub fn definition(&self) -> crate::mcp::pins::Definition {
        crate::mcp::pins::Definition {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            annotations: self.annotations.clone(),
            output_schema: self.output_schema.clone(),
            ui: self.ui.clone(),
        }
    }

    pub fn of(t: &rmcp::model::Tool) -> CachedTool {
        let hint = |f: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| {
            t.annotations.as_ref().and_then(f).unwrap_or(false)
        };
        CachedTool {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or_default().to_string(),
            input_schema: Value::Object((*t.input_schema).clone()),
            read_only: hint(|a| a.read_only_hint),
            destructive: hint(|a| a.destructive_hint),
            open_world: hint(|a| a.open_world_hint),
            annotations: t
                .annotations
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok())
                .unwrap_or(Value::Null),
            output_schema: t
                .output_schema
                .as_ref()
                .map(|o| Value::Object((**o).clone()))
                .unwrap_or(Value::Null),
            pinned: None,
            ui: crate::mcp::apps::tool_ui(t.meta.as_ref().map(|m| &m.0)),
        }
    }
}

/// What a server offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub tools: Vec<CachedTool>,
    pub prompts: Vec<PromptView>,
    pub resources: Vec<ResourceView>,
}

/// Everything known about one server at one moment.
#[derive(Clone)]
pub struct Snapshot {
    pub phase: Phase,
    /// The last catalog it listed. Kept while it fails or restarts, so exposed tool names stay
    /// put; only a running server's tools are offered.
    pub catalog: Arc<Catalog>,
    /// The program that was (or would be) run, or the URL.
    pub resolved: Option<String>,
    /// Automatic restarts after crashes, in a row.
    pub restarts: u32,
    /// The PATH the command was looked up on and run with (stdio).
    pub path: Option<String>,
    /// How many times it has begun starting (a restart is over when this grew and it settled).
    pub starts: u64,
    /// What a slow start is busy with ("installing its package: 12 s"), while it is.
    pub busy: Option<String>,
}

impl Snapshot {
    pub fn new(phase: Phase) -> Snapshot {
        Snapshot {
            phase,
            catalog: Arc::default(),
            resolved: None,
            restarts: 0,
            path: None,
            starts: 0,
            busy: None,
        }
    }

    pub fn session(&self) -> Option<&Session> {
        match &self.phase {
            Phase::Running(s) => Some(s),
            _ => None,
        }
    }

    pub fn status(&self) -> ServerStatus {
        match self.phase {
            Phase::Disabled => ServerStatus::Disabled,
            Phase::Starting => ServerStatus::Starting,
            Phase::Running(_) => ServerStatus::Running,
            Phase::Failed(_) => ServerStatus::Failed,
            Phase::Stopped => ServerStatus::Stopped,
        }
    }

    pub fn is_settled(&self) -> bool {
        !matches!(self.phase, Phase::Starting)
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

#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub open_world: bool,
    /// Its definition is not one the user accepted: what changed, line by line (for a new or
    /// unchecked tool, all of it, as added).
    pub changed: Option<Vec<crate::mcp::pins::DiffLine>>,
    /// Why it is not accepted, when it is not: changed, new (its server had no such tool when
    /// the user accepted its tools: new, or renamed), or unchecked (the store could not be read).
    pub unaccepted: Option<crate::mcp::pins::Unaccepted>,
    /// The hash of the definition it presents (`mcp::pins`): accepting a change names it, so
    /// what is accepted is what was shown.
    pub hash: String,
    /// Its app, and who may call it (MCP Apps).
    pub ui: crate::mcp::apps::ToolUi,
}

/// One server as the servers list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub name: String,
    pub status: ServerStatus,
    /// While it starts slowly: what it is busy with ("installing its package: 12 s").
    pub busy: Option<String>,
    pub transport: Transport,
    /// The program that was (or would be) run.
    pub command: String,
    pub args: Vec<String>,
    pub protocol_version: Option<String>,
    pub server_info: Option<String>,
    pub tools: Vec<ToolView>,
    /// Why it failed, in words.
    pub error: Option<String>,
    /// The step that failed.
    pub failed_step: Option<Step>,
    /// Automatic restarts after crashes, in a row.
    pub restarts: u32,
    /// How the process ended, when it has.
    pub exit: Option<String>,
    pub stderr_tail: Vec<String>,
    /// The server's process id (also its process group), while it has one.
    pub pid: Option<u32>,
    /// The PATH its command was looked up on (stdio servers).
    pub path: Option<String>,
    /// Whether its tools' annotations are believed.
    pub trusted: bool,
    /// The sandbox it runs in (or asks for); `None`: it runs without one.
    pub sandbox: Option<SandboxView>,
    /// Its sign-in (OAuth), for a remote server that wants one or has one.
    pub sign_in: Option<SignInView>,
}

/// A server's sign-in as its row shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInView {
    /// It refused without (or with a no longer good) sign-in: the row offers Sign in.
    pub needed: bool,
    /// Tokens are kept for it: the row offers Sign out.
    pub signed_in: bool,
    /// The authorization server that issued them.
    pub issuer: Option<String>,
    /// Who signed in, when the authorization server said (OpenID Connect).
    pub account: Option<String>,
    /// The host of the sign-in page being opened now (shown before the browser opens it).
    pub opening: Option<String>,
}

/// A server's sandbox, as its row and form show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxView {
    /// In force, impossible here (not started), or waived by the user (runs without).
    pub state: SandboxState,
    pub network: bool,
    /// The folders of its config, as written.
    pub read: Vec<String>,
    pub write: Vec<String>,
    /// Folders it writes in as its own (the built-in files server's folder).
    pub own: Vec<String>,
    /// The host's default for a built-in (its config names no sandbox).
    pub default: bool,
    /// The user agreed to run it without where the kernel cannot sandbox.
    pub allow_unsandboxed: bool,
    /// This kernel's Landlock ABI (0: none).
    pub kernel_abi: i32,
    /// What its sandbox enforces on this kernel, and what it cannot (known before it runs).
    pub protections: Vec<crate::mcp::sandbox::Protection>,
    /// The last refusal its log tells of (a heuristic: see `sandbox::Detector`).
    pub blocked: Option<String>,
    /// The path that refusal names, when the row may offer to let it read it (it exists, is
    /// not granted yet, and is not protected: `sandbox::read_offer`).
    pub readable: Option<String>,
    /// Without all of the network, the hosts it may still reach, as its config lists them.
    pub hosts: Vec<String>,
    /// What it tried of the network, refused or let through, with how many times (noted by
    /// the sandbox itself: `sandbox/network.rs`).
    pub attempts: Vec<crate::mcp::sandbox::NetAttempt>,
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
    /// Annotated `openWorldHint: true`.
    pub open_world: bool,
    /// Whether the server's annotations are believed (built-in, or trusted by the user).
    pub trusted: bool,
    /// Its definition is not one the user accepted (see `mcp::pins`: changed, new, or not
    /// checkable): no standing approval runs it.
    pub changed: bool,
    /// Why not, when it is not: changed, new (its server has accepted tools and this is not
    /// one of them: new, or renamed), unchecked (the store could not be read).
    pub unaccepted: Option<crate::mcp::pins::Unaccepted>,
    /// The server's identity ([`crate::mcp::ServerConfig::identity`]): standing approvals hold
    /// for this identity only.
    pub identity: String,
    /// The name the model is offered it under (`server__tool`); `None` for a tool only its app
    /// may call. Shown, never a key: see [`RoutedTool::key`].
    pub exposed: Option<String>,
    /// Its app, and who may call it (MCP Apps): as the user accepted it, while it is changed.
    pub ui: crate::mcp::apps::ToolUi,
}

impl RoutedTool {
    /// The key of everything decided about this tool: its server's identity and its own name.
    pub fn key(&self) -> crate::mcp::ToolKey {
        crate::mcp::ToolKey::new(self.identity.as_str(), self.tool.as_str())
    }
}
