//! Routing requests to the server behind a name: `tools/call` (with progress, cancellation and
//! a timeout that restarts on each sign of life), `prompts/get` and `resources/read`.
//!
//! The server's own `timeout` wins over the app's. A 2026-07-28 `input_required` answer: its
//! questions are asked through the call's events like mid-call ones, then the call is made again
//! with `inputResponses` and the echoed `requestState`, at most 10 rounds.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::handler::CallEvent;
use super::legacy_tasks;
use super::outcome::error_outcome;
use super::outcome::{HostError, ToolOutcome};
use super::shaping::{bounded, result_images, result_text};
use super::state::{Phase, Session};
use super::{McpHost, RoutedTool, Slot};
use crate::mcp::catalog::{self, PromptText, ResourceText};
use crate::mcp::sandbox::BLOCKED_NOTE;

/// Rounds of one call that may ask for input (rmcp's default bound for the same).
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// What a call's next round carries.
struct Retry {
    responses: Option<rmcp::model::InputResponses>,
    state: Option<String>,
    round: usize,
}

/// One call being made: what the steps of its round share.
struct Call<'a> {
    server: &'a str,
    tool: &'a str,
    /// Its arguments, kept for a second call (as a task, or the next round).
    arguments: Map<String, Value>,
    cancel: &'a CancellationToken,
    /// Who hears its progress and answers the server's questions.
    events: Option<mpsc::UnboundedSender<CallEvent>>,
    /// Which round of asking for input this is (0 for the first).
    round: usize,
}

impl Call<'_> {
    /// The call's end as an error the model reads.
    fn failed(&self, text: String) -> ToolOutcome {
        error_outcome(self.server, self.tool, text)
    }
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

    /// Calls a tool by its exposed name (the model's call), reporting what happens during the call
    /// (progress, and the server's questions, which wait for their reply) to `events`. The call's
    /// timeout starts again at each progress; cancelling sends `notifications/cancelled` and ignores
    /// whatever comes after. Every failure becomes an error outcome for the model.
    pub async fn call_tool(
        &self,
        exposed: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        if let Some(out) = self.call_skill_tool(exposed, &arguments).await {
            return out;
        }
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
    /// the server does, and the model's call once routed); otherwise as [`McpHost::call_tool`].
    pub async fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        let call = Call {
            server,
            tool,
            arguments,
            cancel,
            events,
            round: 0,
        };
        self.call_round(call, None).await
    }

    /// One round of a call: the first, or a retry carrying the answers to what the server asked
    /// (2026-07-28 multi round-trip requests: `input_required`), or after a new sign-in.
    async fn call_round(&self, mut call: Call<'_>, retry: Option<Retry>) -> ToolOutcome {
        call.round = retry.as_ref().map_or(0, |r| r.round);
        let server = call.server;
        let (slot, session) = match self.running_session(server) {
            Ok(v) => v,
            Err(why) => return call.failed(why),
        };
        let timeout = self.timeout_for(server);
        let started = Instant::now();
        let tried = slot.attempts.list();
        let answer = match send_and_wait(&slot, &session, &call, retry, timeout).await {
            Ok(Some(answer)) => answer,
            Ok(None) => return call.failed("The call was cancelled by the user.".into()),
            Err(why) => return call.failed(why),
        };
        let mut outcome = self
            .take_answer(call, &session, answer, timeout, started)
            .await;
        note_network_refused(&mut outcome, server, &slot.attempts.refused_since(&tried));
        outcome
    }

    /// The slot and session of a server that runs; when it does not, why, in words for the model.
    fn running_session(&self, server: &str) -> Result<(std::sync::Arc<Slot>, Session), String> {
        match self.session(server) {
            Ok(v) => Ok(v),
            Err(HostError::NotRunning(_)) => {
                let why = match &slot_phase(self, server) {
                    Some(Phase::Failed(r)) => r.error.clone(),
                    Some(Phase::Starting) => "starting".into(),
                    Some(Phase::Disabled) => "disabled".into(),
                    _ => "stopped".into(),
                };
                Err(format!("The server \"{server}\" is not running: {why}"))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// What a call's answer becomes: a result, a task followed to its end, another round with
    /// the answers the server asked for, a new sign-in and one more try, or an error in words.
    async fn take_answer(
        &self,
        call: Call<'_>,
        session: &Session,
        answer: Result<ServerResult, ServiceError>,
        timeout: Duration,
        started: Instant,
    ) -> ToolOutcome {
        let (server, tool, cancel) = (call.server, call.tool, call.cancel);
        match answer {
            Ok(ServerResult::CallToolResult(result))
                if result.is_error == Some(true)
                    && legacy_tasks::needs_task(None, &result_text(&serde_json::to_value(&result).unwrap_or_default())) =>
            {
                self.call_as_legacy_task(server, tool, session, call.arguments, cancel, call.events.as_ref())
                    .await
            }
            Ok(ServerResult::CallToolResult(result)) => {
                if session.auth.is_some() {
                    self.shared.sign_ins.succeeded(server);
                }
                self.tool_result(server, tool, session, result)
            }
            Err(ServiceError::McpError(e)) if legacy_tasks::needs_task(Some(e.code.0), &e.message) => {
                self.call_as_legacy_task(server, tool, session, call.arguments, cancel, call.events.as_ref())
                    .await
            }
            // the server runs the call as a task: follow it to its end
            Ok(ServerResult::CreateTaskResult(created)) => {
                self.follow_task(server, tool, &created.task, session, cancel, call.events.as_ref())
                    .await
            }
            Ok(ServerResult::InputRequiredResult(asked)) => {
                self.answer_and_call_again(call, asked).await
            }
            Ok(_) => call.failed("The server answered the call with something that is not a result.".into()),
            // the server wants a (new) sign-in, or more scopes: sign in, then try once more
            Err(e) if super::sign_in::challenge_of(&e).is_some() => {
                let challenge = super::sign_in::challenge_of(&e).unwrap_or_default();
                self.sign_in_and_call_again(call, session, challenge).await
            }
            Err(ServiceError::Timeout { .. }) => call.failed(format!(
                "The tool did not answer within {} s of its last sign of life (after {:.1} s the call was cancelled).",
                timeout.as_secs(),
                started.elapsed().as_secs_f64()
            )),
            Err(e) => call.failed(why_the_call_failed(server, session, e).await),
        }
    }

    /// The server needs answers first (2026-07-28): asks them like any of its questions, then
    /// makes the same call again with the answers and its state, a bounded number of times.
    async fn answer_and_call_again(
        &self,
        call: Call<'_>,
        asked: rmcp::model::InputRequiredResult,
    ) -> ToolOutcome {
        let round = call.round;
        if round + 1 >= MAX_INPUT_ROUNDS {
            return call.failed(format!(
                "The server still asked for more input after {MAX_INPUT_ROUNDS} rounds; the call was given up."
            ));
        }
        let requests = asked.input_requests.unwrap_or_default();
        if requests.is_empty() && asked.request_state.is_none() {
            return call.failed("The server asked for input but said nothing it needs.".into());
        }
        if requests.is_empty() {
            // it only wants to be asked again: not at once
            tokio::time::sleep(Duration::from_millis(200 * (round as u64 + 1))).await;
        }
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in requests {
            if let Some(answer) = self
                .answer(call.server, request, call.events.as_ref(), call.cancel)
                .await
            {
                responses.insert(key, answer);
            }
        }
        if call.cancel.is_cancelled() {
            return call.failed("The call was cancelled by the user.".into());
        }
        let retry = Retry {
            responses: (!responses.is_empty()).then_some(responses),
            state: asked.request_state,
            round: round + 1,
        };
        self.call_again(call, Some(retry)).await
    }

    /// The same call made again: its next round (`retry`), or from its first.
    async fn call_again(&self, call: Call<'_>, retry: Option<Retry>) -> ToolOutcome {
        Box::pin(self.call_round(call, retry)).await
    }

    /// Signs in again after the server's challenge, then makes the call once more from its first
    /// round; a sign-in that does not happen is the call's error.
    async fn sign_in_and_call_again(
        &self,
        call: Call<'_>,
        session: &Session,
        challenge: String,
    ) -> ToolOutcome {
        match self
            .sign_in_again(call.server, session.auth.as_ref(), challenge)
            .await
        {
            Ok(()) => self.call_again(call, None).await,
            Err(why) => call.failed(why.to_string()),
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
        request: impl std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, HostError> {
        let timeout = self.timeout_for(server);
        tokio::time::timeout(timeout, request)
            .await
            .map_err(|_| HostError::Timeout {
                server: server.into(),
                method,
                secs: timeout.as_secs(),
            })?
            .map_err(|source| HostError::Request { method, source })
    }
}

fn slot_phase(host: &McpHost, server: &str) -> Option<Phase> {
    host.slot(server).map(|s| s.snapshot().phase.clone())
}

/// Sends the call (with a retry's answers and state) and waits for its answer, its progress and
/// questions routed to its listener meanwhile. `None` when the user cancelled first (the server is
/// then told); an error when the call could not be sent.
async fn send_and_wait(
    slot: &Slot,
    session: &Session,
    call: &Call<'_>,
    retry: Option<Retry>,
    timeout: Duration,
) -> Result<Option<Result<ServerResult, ServiceError>>, String> {
    let mut params =
        CallToolRequestParams::new(call.tool.to_string()).with_arguments(call.arguments.clone());
    if let Some(r) = retry {
        params.input_responses = r.responses;
        params.request_state = r.state;
    }
    // with someone listening, progress restarts the timeout; without, a plain timeout is cheaper
    let options = if call.events.is_some() {
        PeerRequestOptions::with_timeout(timeout)
            .reset_timeout_on_progress()
            .with_max_total_timeout(timeout * 30)
    } else {
        PeerRequestOptions::with_timeout(timeout)
    };
    let handle = session
        .peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            options,
        )
        .await
        .map_err(|e| format!("The call could not be sent: {e}"))?;
    let request_id = handle.id.clone();
    let token = serde_json::to_string(&handle.progress_token).unwrap_or_default();
    let route = call.events.clone().map(|tx| slot.routes.open(token, tx));
    let answer = tokio::select! {
        r = handle.await_response() => Some(r),
        _ = call.cancel.cancelled() => None,
    };
    drop(route);
    if answer.is_none() {
        let note = CancelledNotification::new(CancelledNotificationParam::new(
            Some(request_id),
            Some("cancelled by the user".into()),
        ));
        if let Err(e) = session.peer.send_notification(note.into()).await {
            tracing::warn!("could not tell {} about the cancel: {e}", call.server);
        }
    }
    Ok(answer)
}

/// Why a call failed, in words: when the server's process died, that, with its exit status.
async fn why_the_call_failed(server: &str, session: &Session, e: ServiceError) -> String {
    if let Some(mut rx) = session.exit.clone() {
        let _ =
            tokio::time::timeout(Duration::from_millis(500), rx.wait_for(|e| e.is_some())).await;
        if let Some(desc) = rx.borrow().clone() {
            return format!("The server \"{server}\" stopped during the call ({desc}).");
        }
    }
    format!("The call failed: {e}")
}

/// The key of the host's own part of a card's result (`raw`): never the server's (rmcp's result
/// type has no such field, and it is removed before the host's is put in).
pub const HOST_NOTE_KEY: &str = "_switchboard";

/// What the sandbox kept a server's call from reaching (`refused`, noted by the sandbox during
/// the call), told to the model in the result and to the card as data (its one action: allow
/// that host).
fn note_network_refused(
    outcome: &mut ToolOutcome,
    server: &str,
    refused: &[crate::mcp::sandbox::NetAttempt],
) {
    // the host's part is the host's alone
    if let Some(Value::Object(m)) = outcome.raw.as_mut() {
        m.remove(HOST_NOTE_KEY);
    }
    if refused.is_empty() {
        return;
    }
    // the guess from the server's words gives way to what the sandbox saw
    if let Some(at) = outcome
        .text
        .find("\n\n[Switchboard] Blocked by sandbox: network access")
    {
        let end = outcome.text[at + 2..]
            .find("\n\n")
            .map_or(outcome.text.len(), |e| at + 2 + e);
        outcome.text.replace_range(at..end, "");
    }
    let tried: Vec<String> = refused
        .iter()
        .map(|a| match a.count {
            1 => a.target.clone(),
            n => format!("{} ({n} times)", a.target),
        })
        .collect();
    outcome.text.push_str(&format!(
        "\n\n[Switchboard] The sandbox kept the server \"{server}\" off the network: it tried {}. \
         The user can allow it in the server's settings.",
        tried.join(", ")
    ));
    let mut raw = match outcome.raw.take() {
        Some(Value::Object(m)) => m,
        Some(other) => {
            let mut m = Map::new();
            m.insert("result".into(), other);
            m
        }
        None => Map::new(),
    };
    raw.remove(HOST_NOTE_KEY);
    raw.insert(
        HOST_NOTE_KEY.into(),
        serde_json::json!({ "server": server, "networkRefused": refused }),
    );
    outcome.raw = Some(Value::Object(raw));
}
