//! Routing requests to the server behind a name: `tools/call` (with progress, cancellation and
//! a timeout that restarts on each sign of life), `prompts/get` and `resources/read`.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::handler::CallEvent;
use super::legacy_tasks;
use super::shaping::{bounded, result_images, result_text, ResultImage};
use super::state::{Phase, Session};
use super::{McpHost, RoutedTool, Slot};
use crate::mcp::catalog::{self, PromptText, ResourceText};
use crate::mcp::sandbox::BLOCKED_NOTE;

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
    /// The images in the result (read before `raw` is bounded), for a model that sees them.
    pub images: Vec<ResultImage>,
}

/// Why a request to a server (other than a tool call) could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("The server \"{0}\" is not configured.")]
    NotConfigured(String),
    #[error("The server \"{0}\" is not running.")]
    NotRunning(String),
    #[error("{server} did not answer {method} within {secs} s")]
    Timeout {
        server: String,
        method: &'static str,
        secs: u64,
    },
    /// The server answered with an error.
    #[error("{0}")]
    Server(String),
    /// The definition the user accepted is no longer the one the server presents.
    #[error(
        "The tool \"{tool}\" of {server} changed again since you were shown it: look at what \
         changed now before you accept it."
    )]
    ChangedAgain { server: String, tool: String },
}

/// Rounds of one call that may ask for input (rmcp's default bound for the same).
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// What a call's next round carries.
struct Retry {
    responses: Option<rmcp::model::InputResponses>,
    state: Option<String>,
    round: usize,
}

impl McpHost {
    pub(super) fn session(
        &self,
        server: &str,
    ) -> Result<(std::sync::Arc<Slot>, Session), HostError> {
        let slot = self
            .slot(server)
            .ok_or_else(|| HostError::NotConfigured(server.into()))?;
        let session = slot
            .snapshot()
            .session()
            .cloned()
            .ok_or_else(|| HostError::NotRunning(server.into()))?;
        Ok((slot, session))
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

    /// [`McpHost::call_tool`], reporting what happens during the call (progress, and the
    /// server's questions, which wait for their reply) to `events`. The call's timeout starts
    /// again at each progress; cancelling sends `notifications/cancelled` and ignores whatever
    /// comes after.
    pub async fn call_tool_with_events(
        &self,
        exposed: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        let Some(RoutedTool { server, tool, .. }) = self.route(exposed) else {
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
                images: vec![],
            };
        };
        self.call_server_tool(&server, &tool, arguments, cancel, events)
            .await
    }

    /// Calls `tool` of `server` by its own name (an app's call: apps name their server's tools as
    /// the server does); otherwise as [`McpHost::call_tool_with_events`].
    pub async fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        self.call_round(server, tool, arguments, cancel, events, None)
            .await
    }

    /// One round of a call: the first, or a retry carrying the answers to what the server asked
    /// (2026-07-28 multi round-trip requests: `input_required`), or after a new sign-in.
    async fn call_round(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
        retry: Option<Retry>,
    ) -> ToolOutcome {
        let (server, tool) = (server.to_string(), tool.to_string());
        let err = |text: String| ToolOutcome {
            server: server.clone(),
            tool: tool.clone(),
            text,
            is_error: true,
            raw: None,
            images: vec![],
        };
        let (slot, session) = match self.session(&server) {
            Ok(v) => v,
            Err(HostError::NotRunning(_)) => {
                let why = match &slot_phase(self, &server) {
                    Some(Phase::Failed(r)) => r.error.clone(),
                    Some(Phase::Starting) => "starting".into(),
                    Some(Phase::Disabled) => "disabled".into(),
                    _ => "stopped".into(),
                };
                return err(format!("The server \"{server}\" is not running: {why}"));
            }
            Err(e) => return err(e.to_string()),
        };
        let timeout = self.timeout_for(&server);
        // kept for a second call as a task, should the server want one
        let arguments_again = arguments.clone();
        let mut params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
        let round = retry.as_ref().map_or(0, |r| r.round);
        if let Some(r) = retry {
            params.input_responses = r.responses;
            params.request_state = r.state;
        }
        let started = Instant::now();
        // with someone listening, progress restarts the timeout; without, a plain timeout is cheaper
        let options = if events.is_some() {
            PeerRequestOptions::with_timeout(timeout)
                .reset_timeout_on_progress()
                .with_max_total_timeout(timeout * 30)
        } else {
            PeerRequestOptions::with_timeout(timeout)
        };
        let handle = match session
            .peer
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
        let route = events.clone().map(|tx| slot.routes.open(token, tx));
        let route_events = events;
        let res = tokio::select! {
            r = handle.await_response() => Some(r),
            _ = cancel.cancelled() => None,
        };
        drop(route);
        let events = route_events;
        let Some(res) = res else {
            let note = CancelledNotification::new(CancelledNotificationParam::new(
                Some(request_id),
                Some("cancelled by the user".into()),
            ));
            if let Err(e) = session.peer.send_notification(note.into()).await {
                tracing::warn!("could not tell {server} about the cancel: {e}");
            }
            return err("The call was cancelled by the user.".into());
        };
        match res {
            Ok(ServerResult::CallToolResult(result))
                if result.is_error == Some(true)
                    && legacy_tasks::needs_task(None, &result_text(&serde_json::to_value(&result).unwrap_or_default())) =>
            {
                self.call_as_legacy_task(&server, &tool, &session, arguments_again, cancel, events.as_ref())
                    .await
            }
            Ok(ServerResult::CallToolResult(result)) => {
                if session.auth.is_some() {
                    self.shared.sign_ins.succeeded(&server);
                }
                self.tool_result(&server, &tool, &session, result)
            }
            Err(ServiceError::McpError(e)) if legacy_tasks::needs_task(Some(e.code.0), &e.message) => {
                self.call_as_legacy_task(&server, &tool, &session, arguments_again, cancel, events.as_ref())
                    .await
            }
            // the server runs the call as a task: follow it to its end
            Ok(ServerResult::CreateTaskResult(created)) => {
                self.follow_task(&server, &tool, &created.task, cancel, events.as_ref())
                    .await
            }
            // the server needs answers first (2026-07-28): ask them like any of its questions,
            // then the same call again with the answers and its state, a bounded number of times
            Ok(ServerResult::InputRequiredResult(asked)) => {
                if round + 1 >= MAX_INPUT_ROUNDS {
                    return err(format!(
                        "The server still asked for more input after {MAX_INPUT_ROUNDS} rounds; the call was given up."
                    ));
                }
                let requests = asked.input_requests.unwrap_or_default();
                if requests.is_empty() && asked.request_state.is_none() {
                    return err("The server asked for input but said nothing it needs.".into());
                }
                if requests.is_empty() {
                    // it only wants to be asked again: not at once
                    tokio::time::sleep(Duration::from_millis(200 * (round as u64 + 1))).await;
                }
                let mut responses = rmcp::model::InputResponses::new();
                for (key, request) in requests {
                    if let Some(answer) = self.answer(&server, request, events.as_ref(), cancel).await {
                        responses.insert(key, answer);
                    }
                }
                if cancel.is_cancelled() {
                    return err("The call was cancelled by the user.".into());
                }
                Box::pin(self.call_round(
                    &server,
                    &tool,
                    arguments_again,
                    cancel,
                    events,
                    Some(Retry {
                        responses: (!responses.is_empty()).then_some(responses),
                        state: asked.request_state,
                        round: round + 1,
                    }),
                ))
                .await
            }
            Ok(_) => err("The server answered the call with something that is not a result.".into()),
            // the server wants a (new) sign-in, or more scopes: sign in, then try once more
            Err(e) if super::sign_in::challenge_of(&e).is_some() => {
                let challenge = super::sign_in::challenge_of(&e).unwrap_or_default();
                match self
                    .sign_in_again(&server, session.auth.as_ref(), challenge)
                    .await
                {
                    Ok(()) => {
                        Box::pin(self.call_round(
                            &server,
                            &tool,
                            arguments_again,
                            cancel,
                            events,
                            None,
                        ))
                        .await
                    }
                    Err(why) => err(why),
                }
            }
            Err(ServiceError::Timeout { .. }) => err(format!(
                "The tool did not answer within {} s of its last sign of life (after {:.1} s the call was cancelled).",
                timeout.as_secs(),
                started.elapsed().as_secs_f64()
            )),
            Err(e) => {
                // if the process died, say so with its exit status
                if let Some(mut rx) = session.exit.clone() {
                    let _ = tokio::time::timeout(
                        Duration::from_millis(500),
                        rx.wait_for(|e| e.is_some()),
                    )
                    .await;
                    if let Some(desc) = rx.borrow().clone() {
                        return err(format!(
                            "The server \"{server}\" stopped during the call ({desc})."
                        ));
                    }
                }
                err(format!("The call failed: {e}"))
            }
        }
    }

    /// A tool's result as the model reads it and the card shows it.
    pub(super) fn tool_result(
        &self,
        server: &str,
        tool: &str,
        session: &Session,
        result: CallToolResult,
    ) -> ToolOutcome {
        let raw = serde_json::to_value(&result).unwrap_or(Value::Null);
        let images = result_images(&raw);
        let (mut text, raw) = bounded(result_text(&raw), raw);
        let is_error = result.is_error.unwrap_or(false);
        // an error of a sandboxed server may be its sandbox refusing: say so, to the model and
        // on the card, and in the server's log
        if let Some(what) = session
            .sandbox
            .as_ref()
            .filter(|_| is_error)
            .and_then(|d| d.blocked(&text))
        {
            if let Some(slot) = self.slot(server) {
                slot.log.push(format!("{BLOCKED_NOTE}{what}"));
            }
            text.push_str(&format!(
                "\n\n[Switchboard] Blocked by sandbox: {what}. The server \"{server}\" runs in a \
                 sandbox that does not allow this; the user can allow it in the server's settings."
            ));
        }
        ToolOutcome {
            server: server.to_string(),
            tool: tool.to_string(),
            text,
            is_error,
            raw,
            images,
        }
    }

    /// Runs a prompt (`prompts/get`) with the user's arguments; its messages as text.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Vec<PromptText>, HostError> {
        let (_, session) = self.session(server)?;
        self.bounded_request(
            server,
            "prompts/get",
            catalog::get_prompt(&session.peer, name, arguments),
        )
        .await
    }

    /// Reads a resource (`resources/read`) as text.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ResourceText, HostError> {
        let (_, session) = self.session(server)?;
        self.bounded_request(
            server,
            "resources/read",
            catalog::read_resource(&session.peer, uri),
        )
        .await
    }

    pub(super) async fn bounded_request<T>(
        &self,
        server: &str,
        method: &'static str,
        request: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, HostError> {
        let timeout = self.timeout_for(server);
        tokio::time::timeout(timeout, request)
            .await
            .map_err(|_| HostError::Timeout {
                server: server.into(),
                method,
                secs: timeout.as_secs(),
            })?
            .map_err(HostError::Server)
    }
}

fn slot_phase(host: &McpHost, server: &str) -> Option<Phase> {
    host.slot(server).map(|s| s.snapshot().phase.clone())
}
