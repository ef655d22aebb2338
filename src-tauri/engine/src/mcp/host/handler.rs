//! The rmcp client handler of one server: its notifications (list changes, progress, log
//! messages) and its requests to us (roots, elicitation, sampling). Requests that need a person
//! or the model go to the call under way as a [`CallEvent`] carrying a [`Reply`]; outside a call
//! nobody is there to answer, so they are declined.

// MCP logging (logging/setLevel, notifications/message) is deprecated by 2026-07-28 (SEP-2577),
// but it is what every 2025-11-25 server speaks, so the host still supports it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction as McpElicitationAction,
    ElicitationCapability, ErrorCode, FormElicitationCapability, Implementation, JsonObject,
    ListRootsResult, LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
    Root, RootsCapabilities, SamplingCapability, SamplingMessage, UrlElicitationCapability,
    TASKS_EXTENSION_ID,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::ErrorData as McpError;
use rmcp::{ClientHandler, RoleClient};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::shaping::SamplingText;
use super::shaping::{file_uri, sampling_text};
use crate::mcp::process::StderrTail;

/// How long a server's question may wait for its answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// Which of a server's lists changed (`notifications/…/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    Tools,
    Prompts,
    Resources,
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
    pub server: String,
    pub message: String,
    pub schema: Option<Value>,
    pub url: Option<String>,
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
}

/// The user's answer: `accept` (with `content` for a form), `decline` or `cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationAnswer {
    pub action: ElicitationAction,
    #[serde(default)]
    pub content: Option<Value>,
}

impl ElicitationAnswer {
    pub fn of(action: ElicitationAction) -> Self {
        ElicitationAnswer {
            action,
            content: None,
        }
    }
}

/// A server asks for a completion from the user's model (`sampling/createMessage`) during a
/// call. Only text is passed on; other content is named in brackets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingRequest {
    pub server: String,
    pub system_prompt: Option<String>,
    pub messages: Vec<SamplingText>,
    pub max_tokens: u32,
}

/// What the server gets back: the model's reply, or a refusal (the user declined, or the model
/// failed) with the reason.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingAnswer {
    Reply { model: String, text: String },
    Refused(String),
}

/// Where the answer to a server's request goes. Dropping it unanswered cancels the request.
#[derive(Debug)]
pub struct Reply<T>(oneshot::Sender<T>);

impl<T> Reply<T> {
    pub(super) fn new(tx: oneshot::Sender<T>) -> Self {
        Reply(tx)
    }

    pub fn send(self, answer: T) {
        let _ = self.0.send(answer);
    }
}

/// What happens during one call, for whoever runs it.
#[derive(Debug)]
pub enum CallEvent {
    Progress(Progress),
    /// The server asks the user; answer through the [`Reply`].
    Elicitation(Elicitation, Reply<ElicitationAnswer>),
    /// The server asks the model; answer through the [`Reply`].
    Sampling(SamplingRequest, Reply<SamplingAnswer>),
    /// The call runs as a task on the server: it was created, or its status changed.
    Task(super::task_state::TaskState),
}

/// Where one call's events go.
type Events = mpsc::UnboundedSender<CallEvent>;

/// The calls under way on one server: where its progress notifications go (by progress token,
/// as JSON text) and which call its questions belong to (the newest one still running).
#[derive(Clone, Default)]
pub struct CallRoutes {
    progress: Arc<Mutex<HashMap<String, Events>>>,
    /// The calls under way, oldest first, with their sequence numbers.
    asks: Arc<Mutex<Vec<(u64, Events)>>>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

/// A call's routes; removed when it is dropped, so late progress of a finished or cancelled
/// call has nowhere to go and is ignored.
pub struct RouteGuard {
    routes: CallRoutes,
    token: String,
    seq: u64,
}

impl CallRoutes {
    pub fn open(&self, token: String, events: mpsc::UnboundedSender<CallEvent>) -> RouteGuard {
        let seq = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.progress
            .lock()
            .unwrap()
            .insert(token.clone(), events.clone());
        self.asks.lock().unwrap().push((seq, events));
        RouteGuard {
            routes: self.clone(),
            token,
            seq,
        }
    }

    fn progress_route(&self, token: &str) -> Option<mpsc::UnboundedSender<CallEvent>> {
        self.progress.lock().unwrap().get(token).cloned()
    }

    fn ask_route(&self) -> Option<mpsc::UnboundedSender<CallEvent>> {
        self.asks.lock().unwrap().last().map(|(_, tx)| tx.clone())
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.progress.lock().unwrap().remove(&self.token);
        self.routes
            .asks
            .lock()
            .unwrap()
            .retain(|(s, _)| *s != self.seq);
    }
}

/// Receives one server's notifications and requests.
pub struct Handler {
    pub server: String,
    pub log: StderrTail,
    pub roots: Arc<RwLock<Vec<PathBuf>>>,
    pub listings: mpsc::UnboundedSender<Listing>,
    pub routes: CallRoutes,
}

impl Handler {
    /// Sends `event` (built with a fresh reply slot) to the call under way and waits for the
    /// answer. `None`: no call is under way, it is over, or nobody answered in time.
    async fn ask<T>(&self, event: impl FnOnce(Reply<T>) -> CallEvent) -> Option<T> {
        let route = self.routes.ask_route()?;
        let (tx, rx) = oneshot::channel();
        route.send(event(Reply(tx))).ok()?;
        tokio::time::timeout(ASK_TIMEOUT, rx).await.ok()?.ok()
    }
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.listings.send(Listing::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.listings.send(Listing::Prompts);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.listings.send(Listing::Resources);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        // progress for a call that is over (or was cancelled) has no route: it is ignored
        if let Some(tx) = self.routes.progress_route(&key) {
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
        Ok(roots_result(&roots))
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
        let ask = elicitation_of(&self.server, &request);
        if self.routes.ask_route().is_none() {
            // outside a call nobody is there to answer
            return Ok(ElicitResult::new(McpElicitationAction::Decline));
        }
        let answer = self.ask(|reply| CallEvent::Elicitation(ask, reply)).await;
        Ok(elicit_result(answer))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        // the spec's code for "the user rejected the sampling request"
        let refused = |why: String| McpError::new(ErrorCode(-1), why, None);
        if self.routes.ask_route().is_none() {
            return Err(refused(
                "Switchboard answers sampling requests only during a tool call the user started"
                    .into(),
            ));
        }
        let request = sampling_request_of(&self.server, &params);
        match self.ask(|reply| CallEvent::Sampling(request, reply)).await {
            Some(SamplingAnswer::Reply { model, text }) => Ok(sampling_result(model, text)),
            Some(SamplingAnswer::Refused(why)) => Err(refused(why)),
            None => Err(refused("nobody answered the sampling request".into())),
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
        // long calls may become tasks the host polls (the 2026-07-28 tasks extension; rmcp
        // stamps it into every request's `_meta` on a 2026-07-28 connection)
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_string(), JsonObject::new());
        // a server may publish skills (SEP-2640): listed, and read only when the model loads one
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(
                crate::mcp::skills::SKILLS_EXTENSION_ID.to_string(),
                JsonObject::new(),
            );
        // a tool may come with an app page (MCP Apps): the window shows it on the tool's card
        let mut ui = JsonObject::new();
        ui.insert(
            "mimeTypes".into(),
            serde_json::json!([crate::mcp::apps::APP_MIME]),
        );
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(crate::mcp::apps::UI_EXTENSION_ID.to_string(), ui);
        ClientConfig::new(
            capabilities,
            Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// A server's `elicitation/create`, as the user is asked it.
pub(super) fn elicitation_of(server: &str, request: &ElicitRequestParams) -> Elicitation {
    let v = serde_json::to_value(request).unwrap_or_default();
    Elicitation {
        server: server.to_string(),
        message: v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        schema: v.get("requestedSchema").cloned(),
        url: v.get("url").and_then(Value::as_str).map(String::from),
    }
}

/// What the server hears of the user's answer (none: `cancel`).
pub(super) fn elicit_result(answer: Option<ElicitationAnswer>) -> ElicitResult {
    let answer = answer.unwrap_or(ElicitationAnswer::of(ElicitationAction::Cancel));
    match answer.action {
        ElicitationAction::Accept => {
            let mut r = ElicitResult::new(McpElicitationAction::Accept);
            r.content = answer.content;
            r
        }
        ElicitationAction::Decline => ElicitResult::new(McpElicitationAction::Decline),
        ElicitationAction::Cancel => ElicitResult::new(McpElicitationAction::Cancel),
    }
}

/// A server's `sampling/createMessage`, as the user and the model see it (text only).
pub(super) fn sampling_request_of(
    server: &str,
    params: &CreateMessageRequestParams,
) -> SamplingRequest {
    SamplingRequest {
        server: server.to_string(),
        system_prompt: params.system_prompt.clone(),
        messages: params.messages.iter().map(sampling_text).collect(),
        max_tokens: params.max_tokens,
    }
}

pub(super) fn sampling_result(model: String, text: String) -> CreateMessageResult {
    let mut r = CreateMessageResult::new(SamplingMessage::assistant_text(text), model);
    r.stop_reason = Some(CreateMessageResult::STOP_REASON_END_TURN.into());
    r
}

/// The roots offered to servers, as `roots/list` answers.
pub(super) fn roots_result(roots: &[PathBuf]) -> ListRootsResult {
    ListRootsResult::new(
        roots
            .iter()
            .map(|p| {
                let mut r = Root::new(file_uri(p));
                r.name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                r
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_go_to_the_newest_call_still_running_and_routes_end_with_their_call() {
        let routes = CallRoutes::default();
        let (a_tx, mut a_rx) = mpsc::unbounded_channel();
        let (b_tx, mut b_rx) = mpsc::unbounded_channel();
        let a = routes.open("1".into(), a_tx);
        let b = routes.open("2".into(), b_tx);
        let send = |routes: &CallRoutes| {
            routes.ask_route().map(|tx| {
                tx.send(CallEvent::Progress(Progress {
                    progress: 1.0,
                    total: None,
                    message: None,
                }))
                .unwrap()
            })
        };
        send(&routes).unwrap();
        assert!(b_rx.try_recv().is_ok() && a_rx.try_recv().is_err());
        drop(b);
        send(&routes).unwrap();
        assert!(a_rx.try_recv().is_ok());
        assert!(routes.progress_route("1").is_some() && routes.progress_route("2").is_none());
        drop(a);
        assert!(send(&routes).is_none(), "no call, no route");
        assert!(routes.progress_route("1").is_none());
    }
}
