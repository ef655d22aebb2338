//! Calls that run as tasks on their server (the 2026-07-28 tasks extension,
//! `io.modelcontextprotocol/tasks`, SEP-2663). The server answers `tools/call` with a task; the
//! host polls `tasks/get` at the interval the server asks for, passes the server's questions
//! (`input_required`) to whoever runs the call and answers them with `tasks/update`, cancels
//! with `tasks/cancel`, and turns the final result into a [`ToolOutcome`] like any other.
//!
//! Each poll takes the server's current session, so a task outlives a reconnect (and, through
//! [`McpHost::resume_task`] and the store, a restart of the app) for as long as the server
//! keeps it. A server that no longer knows the task (`-32602`) has lost it: the call says so,
//! and nothing runs again by itself.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{
    CallToolResult, CancelTaskParams, ErrorCode, GetTaskParams, InputRequest, InputResponses, Task,
    TaskPayload, UpdateTaskParams,
};
use rmcp::service::ServiceError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::handler::{
    elicit_result, elicitation_of, roots_result, sampling_request_of, sampling_result, CallEvent,
    Reply, SamplingAnswer,
};
use super::state::Session;
use super::{McpHost, ToolOutcome};

/// The poll interval when the server names none, and the bounds put on the one it names.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
const MIN_POLL: Duration = Duration::from_millis(200);
const MAX_POLL: Duration = Duration::from_secs(30);
/// Polls in a row that may fail (no answer, no connection) before the host gives up.
const MAX_FAILED_POLLS: u32 = 5;

/// Where a task is, as the card and the store keep it. The id is the server's handle for the
/// task (it may work as a bearer token): it stays in the host and the store, never in what the
/// window or the model get.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskState {
    #[serde(skip_serializing)]
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed`, `cancelled`, or `lost` (the server no
    /// longer knows it).
    pub status: String,
    /// The server's words on where it is.
    pub message: Option<String>,
    pub poll_ms: Option<u64>,
    pub ttl_ms: Option<u64>,
    /// The 2025-11-25 form (`mcp/host/legacy_tasks.rs`), not the extension.
    #[serde(default, skip_serializing)]
    pub legacy: bool,
}

impl TaskState {
    fn of(task: &Task) -> TaskState {
        TaskState {
            task_id: task.task_id.clone(),
            status: serde_json::to_value(task.status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_else(|| "working".into()),
            message: task.status_message.clone(),
            poll_ms: task.poll_interval_ms,
            ttl_ms: task.ttl_ms,
            legacy: false,
        }
    }

    /// Still running on the server (working, or waiting for an answer).
    pub fn is_open(&self) -> bool {
        is_open(&self.status)
    }

    fn poll(&self) -> Duration {
        self.poll_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_POLL)
            .clamp(MIN_POLL, MAX_POLL)
    }
}

/// A task status that is not over yet.
pub fn is_open(status: &str) -> bool {
    matches!(status, "working" | "input_required")
}

type Events = mpsc::UnboundedSender<CallEvent>;

impl McpHost {
    /// Follows the task a server created for a call of `tool` until it ends. `events` hears
    /// every change of its state (first the task as created) and the server's questions.
    pub(super) async fn follow_task(
        &self,
        server: &str,
        tool: &str,
        created: &Task,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let state = TaskState::of(created);
        let first_wait = state.poll();
        self.poll_task(server, tool, state, first_wait, cancel, events)
            .await
    }

    /// Follows a task an earlier run of the app started (its id from the store; `legacy`: in
    /// the 2025-11-25 form): polls it at once when its server is running, waiting for the server
    /// to start (or restart) first.
    pub async fn resume_task(
        &self,
        server: &str,
        tool: &str,
        task_id: &str,
        legacy: bool,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let state = TaskState {
            task_id: task_id.to_string(),
            status: "working".into(),
            message: None,
            poll_ms: None,
            ttl_ms: None,
            legacy,
        };
        if legacy {
            return self
                .follow_legacy_task(server, tool, state, cancel, events)
                .await;
        }
        self.poll_task(server, tool, state, Duration::ZERO, cancel, events)
            .await
    }

    async fn poll_task(
        &self,
        server: &str,
        tool: &str,
        mut state: TaskState,
        mut wait: Duration,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let outcome = |text: String, is_error: bool| ToolOutcome {
            server: server.to_string(),
            tool: tool.to_string(),
            text,
            is_error,
            raw: None,
            images: vec![],
        };
        let tell = |s: &TaskState| {
            if let Some(tx) = events {
                let _ = tx.send(CallEvent::Task(s.clone()));
            }
        };
        tell(&state);
        let mut answered: HashSet<String> = HashSet::new();
        let mut failed_polls = 0;
        let id = state.task_id.clone();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = cancel.cancelled() => {
                    if self.is_closing() {
                        // the app ends (and this with it): the task goes on on its server
                        std::future::pending::<()>().await;
                    }
                    self.cancel_task(server, &id).await;
                    state.status = "cancelled".into();
                    state.message = Some("Cancelled by the user.".into());
                    tell(&state);
                    return outcome("The call was cancelled by the user.".into(), true);
                }
            }
            wait = state.poll();
            let Some(session) = self.session_for_task(server, cancel).await else {
                if self.is_closing() {
                    std::future::pending::<()>().await;
                }
                if cancel.is_cancelled() {
                    continue; // said at the top of the loop
                }
                return outcome(
                    format!(
                        "The server \"{server}\" is not running, so its task cannot be followed."
                    ),
                    true,
                );
            };
            let timeout = self.timeout_for(server);
            let got = tokio::select! {
                r = tokio::time::timeout(timeout, session.peer.get_task(GetTaskParams::new(id.clone()))) => r,
                _ = cancel.cancelled() => continue,
            };
            let task = match got {
                Ok(Ok(got)) => got.task,
                Ok(Err(ServiceError::McpError(e))) if e.code == ErrorCode::INVALID_PARAMS => {
                    state.status = "lost".into();
                    state.message = Some(e.message.to_string());
                    tell(&state);
                    return outcome(
                        format!(
                            "The server \"{server}\" no longer knows this task (it restarted, or the \
                             task expired): {}. It was not run again.",
                            e.message
                        ),
                        true,
                    );
                }
                Ok(Err(ServiceError::McpError(e))) => {
                    return outcome(format!("Following the task failed: {}", e.message), true)
                }
                other => {
                    failed_polls += 1;
                    let why = match other {
                        Err(_) => format!("no answer within {} s", timeout.as_secs()),
                        Ok(Err(e)) => e.to_string(),
                        Ok(Ok(_)) => unreachable!(),
                    };
                    tracing::warn!("polling a task of {server}: {why}");
                    if failed_polls >= MAX_FAILED_POLLS {
                        return outcome(
                            format!(
                                "The server \"{server}\" stopped answering about its task ({why})."
                            ),
                            true,
                        );
                    }
                    continue;
                }
            };
            failed_polls = 0;
            let now = TaskState::of(&task.task);
            if now != state {
                state = now;
                tell(&state);
            }
            wait = state.poll();
            match task.payload {
                TaskPayload::Completed { result } => {
                    return match serde_json::from_value::<CallToolResult>(Value::Object(result)) {
                        Ok(r) => self.tool_result(server, tool, &session, r),
                        Err(e) => outcome(
                            format!("The task ended with a result that is not a tool result: {e}"),
                            true,
                        ),
                    }
                }
                TaskPayload::Failed { error } => {
                    let message = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no reason given");
                    return outcome(format!("The task failed: {message}"), true);
                }
                TaskPayload::Cancelled => {
                    return outcome("The server cancelled the task.".into(), true)
                }
                TaskPayload::InputRequired { input_requests } => {
                    let mut responses = InputResponses::new();
                    for (key, request) in input_requests {
                        if answered.contains(&key) {
                            continue; // asked again until the server has read the answer
                        }
                        let answer = self.answer(server, request, events, cancel).await;
                        if self.is_closing() {
                            // the app ends while the question waits: it is asked again next run
                            std::future::pending::<()>().await;
                        }
                        if let Some(answer) = answer {
                            responses.insert(key.clone(), answer);
                            answered.insert(key);
                        }
                    }
                    if !responses.is_empty() {
                        let sent = tokio::time::timeout(
                            timeout,
                            session
                                .peer
                                .update_task(UpdateTaskParams::new(id.clone(), responses)),
                        )
                        .await;
                        if !matches!(sent, Ok(Ok(()))) {
                            tracing::warn!("could not answer a task of {server}: {sent:?}");
                        }
                        wait = Duration::ZERO;
                    }
                }
                _ => {}
            }
        }
    }

    /// One of the server's questions during a task (or in a call's `input_required`), asked like
    /// the same question during a call; its answer as the result JSON `tasks/update` (or the
    /// call's next round) carries. `None`: nobody could answer it.
    pub(super) async fn answer(
        &self,
        server: &str,
        request: InputRequest,
        events: Option<&Events>,
        cancel: &CancellationToken,
    ) -> Option<Value> {
        match request {
            InputRequest::Elicitation(r) => {
                let ask = elicitation_of(server, &r.params);
                let answer = match events {
                    Some(tx) => {
                        ask_through(tx, cancel, |reply| CallEvent::Elicitation(ask, reply)).await
                    }
                    None => None,
                };
                serde_json::to_value(elicit_result(answer)).ok()
            }
            InputRequest::ListRoots(_) => {
                let roots = self.shared.roots.read().unwrap().clone();
                serde_json::to_value(roots_result(&roots)).ok()
            }
            InputRequest::CreateMessage(r) => {
                let request = sampling_request_of(server, &r.params);
                let tx = events?;
                match ask_through(tx, cancel, |reply| CallEvent::Sampling(request, reply)).await {
                    Some(SamplingAnswer::Reply { model, text }) => {
                        serde_json::to_value(sampling_result(model, text)).ok()
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Tells the server to stop a task (cooperative: it may still end otherwise).
    async fn cancel_task(&self, server: &str, task_id: &str) {
        let Some(session) = self
            .slot(server)
            .and_then(|s| s.snapshot().session().cloned())
        else {
            return;
        };
        let sent = tokio::time::timeout(
            self.timeout_for(server),
            session.peer.cancel_task(CancelTaskParams::new(task_id)),
        )
        .await;
        if !matches!(sent, Ok(Ok(()))) {
            tracing::warn!("could not cancel a task of {server}: {sent:?}");
        }
    }

    /// The server's session now; while it is starting (or restarting), waits for it, up to the
    /// time a start may take. `None`: it is not running (or `cancel` fired).
    pub(super) async fn session_for_task(
        &self,
        server: &str,
        cancel: &CancellationToken,
    ) -> Option<Session> {
        let deadline = tokio::time::Instant::now() + self.shared.opts.start_timeout * 2;
        loop {
            let slot = self.slot(server)?;
            let snapshot = slot.snapshot();
            if let Some(s) = snapshot.session() {
                return Some(s.clone());
            }
            if matches!(
                snapshot.phase,
                super::Phase::Disabled | super::Phase::Stopped
            ) {
                return None;
            }
            let mut rx = slot.state.clone();
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep_until(deadline) => return None,
                _ = cancel.cancelled() => return None,
            }
        }
    }
}

/// Sends a question to whoever runs the call and waits for the answer (none when they are gone
/// or the call is cancelled).
async fn ask_through<T>(
    tx: &Events,
    cancel: &CancellationToken,
    event: impl FnOnce(Reply<T>) -> CallEvent,
) -> Option<T> {
    let (reply, rx) = oneshot::channel();
    tx.send(event(Reply::new(reply))).ok()?;
    tokio::select! {
        r = rx => r.ok(),
        _ = cancel.cancelled() => None,
    }
}
