//! The 2025-11-25 form of tasks (SEP-1686, "experimental tasks" in that revision's core), which
//! servers of that era speak (server-everything's `simulate-research-query`). Unlike the
//! extension, the client asks for a task (`params.task` on `tools/call`); rmcp 3.9 has no types
//! for it, so its requests go as custom ones and their results are read as JSON.
//!
//! rmcp drops the per-tool `execution.taskSupport` from `tools/list`, so the host cannot know
//! beforehand which tools need a task: it calls plainly, and when the server answers that the tool
//! needs one (`-32601`, as the spec says, or an error result carrying that code as the TypeScript
//! SDK words it), calls again asking for a task. Then it waits for the result with `tasks/result`
//! (which the server answers when the task ends, and on whose stream it asks its questions) while
//! it polls `tasks/get` for the card.
//!
//! `tasks/get` feeds the card; Stop sends `tasks/cancel`; the server's questions come on the
//! `tasks/result` stream and are routed to the call.

use std::time::Duration;

use rmcp::model::{CallToolResult, ClientRequest, CustomRequest, CustomResult, ServerResult};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::handler::CallEvent;
use super::outcome::{cancelled, error_outcome};
use super::state::Session;
use super::task_state::{Counted, Home, TaskEnd, TaskState};
use super::tasks::poll_interval;
use super::{McpHost, ToolOutcome};

/// How long a task is asked to be kept (the server may keep it less, and says so).
const REQUESTED_TTL_MS: u64 = 3_600_000;

type Events = mpsc::UnboundedSender<CallEvent>;

/// Whether a server's answer to a plain call says the tool must run as a task: `-32601` with
/// words about a task (the spec's code for it; the TypeScript SDK returns it as an error result,
/// "MCP error -32601: Tool … requires task augmentation").
pub(super) fn needs_task(code: Option<i32>, text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    let coded = code == Some(-32601) || text.starts_with("mcp error -32601");
    coded && text.contains("task")
}

/// A 2025-11-25 `Task` object as a [`TaskState`].
fn state_of(task: &Value) -> Option<TaskState> {
    Some(TaskState {
        task_id: task.get("taskId")?.as_str()?.to_string(),
        status: task.get("status")?.as_str()?.to_string(),
        message: task
            .get("statusMessage")
            .and_then(Value::as_str)
            .map(String::from),
        poll_ms: task.get("pollInterval").and_then(Value::as_u64),
        ttl_ms: task.get("ttl").and_then(Value::as_u64),
        legacy: true,
        session: None,
        reason: None,
    })
}

impl McpHost {
    /// Calls `tool` again, asking for a task, and follows the task to its end.
    pub(super) async fn call_as_legacy_task(
        &self,
        server: &str,
        tool: &str,
        session: &Session,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let outcome = |text: String| error_outcome(server, tool, text);
        let params =
            json!({"name": tool, "arguments": arguments, "task": {"ttl": REQUESTED_TTL_MS}});
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
        let timeout = self.timeout_for(server);
        let sent = session
            .peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await;
        let answer = match sent {
            Ok(handle) => tokio::select! {
                r = handle.await_response() => r,
                _ = cancel.cancelled() => return outcome("The call was cancelled by the user.".into()),
            },
            Err(e) => return outcome(format!("The call could not be sent: {e}")),
        };
        match answer {
            Ok(ServerResult::CustomResult(CustomResult(v))) => {
                match v.get("task").and_then(state_of) {
                    Some(mut state) => {
                        // the session it lives in is kept before anything is said about it
                        state.session = self.keep_session(session).await;
                        let home = Home::In(session.http.as_ref().and_then(|h| h.current()));
                        self.follow_legacy_task(server, tool, state, Some(home), cancel, events)
                            .await
                    }
                    None => outcome(format!("The server answered the task request with {v}")),
                }
            }
            // it ran the call at once after all
            Ok(ServerResult::CallToolResult(r)) => self.tool_result(server, tool, session, r),
            Ok(other) => outcome(format!(
                "The server answered the task request with {}",
                serde_json::to_value(&other).unwrap_or_default()
            )),
            Err(e) => outcome(format!("The call failed: {e}")),
        }
    }

    /// Follows a 2025-11-25 task: `tasks/result` waits for its end (the server's questions come on
    /// its stream, and go to `events`), `tasks/get` tells the card where it is meanwhile; Stop
    /// sends `tasks/cancel`. `home`: the session it lives in (`None`: followed again after a
    /// restart, found out from its kept session).
    pub(super) async fn follow_legacy_task(
        &self,
        server: &str,
        tool: &str,
        state: TaskState,
        home: Option<Home>,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let tell = |s: &TaskState| {
            if let Some(tx) = events {
                let _ = tx.send(CallEvent::Task(s.clone()));
            }
        };
        let Some((slot, session)) = self
            .session_for_task(server, cancel)
            .await
            .and_then(|s| Some((self.slot(server)?, s)))
        else {
            if self.is_closing() {
                std::future::pending::<()>().await;
            }
            let mut state = state;
            let out = state.lost(TaskEnd::ServerNotRunning, server, tool, None);
            tell(&state);
            return out;
        };
        let home = home.unwrap_or_else(|| self.home_of(&session, state.session.as_deref()));
        // counted in its session before anything is said: the session is not ended under it
        let counted = Counted(session.http.clone());
        if let Some(http) = &counted.0 {
            http.task_started();
        }
        tell(&state);
        // the server's questions during the task come while no call is under way: they go here
        let _asks = events.map(|tx| {
            slot.routes
                .open(format!("task:{}", state.task_id), tx.clone())
        });
        let out = self
            .wait_for_legacy_result(server, tool, state, &home, &session, cancel, &tell)
            .await;
        self.task_done(counted).await;
        out
    }

    /// `tasks/result` until it answers, `tasks/get` meanwhile, `tasks/cancel` on Stop.
    #[allow(clippy::too_many_arguments)]
    async fn wait_for_legacy_result(
        &self,
        server: &str,
        tool: &str,
        mut state: TaskState,
        home: &Home,
        session: &Session,
        cancel: &CancellationToken,
        tell: &(dyn Fn(&TaskState) + Sync),
    ) -> ToolOutcome {
        let id = state.task_id.clone();
        let ttl = state.ttl_ms.unwrap_or(REQUESTED_TTL_MS);
        let result = async {
            let handle = session
                .peer
                .send_request_with_option(
                    task_request("tasks/result", &id),
                    PeerRequestOptions::with_timeout(Duration::from_millis(
                        ttl.saturating_add(60_000),
                    )),
                )
                .await?;
            handle.await_response().await
        };
        tokio::pin!(result);
        let timeout = self.timeout_for(server);
        loop {
            tokio::select! {
                r = &mut result => {
                    return match r {
                        Ok(ServerResult::CallToolResult(r)) => {
                            state.status = if r.is_error == Some(true) { "failed" } else { "completed" }.into();
                            tell(&state);
                            self.tool_result(server, tool, session, r)
                        }
                        Ok(other) => match serde_json::to_value(&other).ok().and_then(|v| serde_json::from_value::<CallToolResult>(v).ok()) {
                            Some(r) => self.tool_result(server, tool, session, r),
                            None => error_outcome(server, tool, "The task ended without a tool result.".into()),
                        },
                        Err(ServiceError::McpError(e)) if e.code.0 == -32602 => {
                            let why = home.why_unknown(session.http.as_deref());
                            let out = state.lost(why, server, tool, Some(&e.message));
                            tell(&state);
                            out
                        }
                        Err(ServiceError::McpError(e)) => {
                            state.status = "failed".into();
                            tell(&state);
                            error_outcome(server, tool, format!("The task failed: {}", e.message))
                        }
                        Err(e) => {
                            if self.is_closing() {
                                // the connection ends with the app: the task goes on on its server
                                std::future::pending::<()>().await;
                            }
                            let out = state.lost(TaskEnd::NoAnswer, server, tool, Some(&e.to_string()));
                            tell(&state);
                            out
                        }
                    };
                }
                _ = cancel.cancelled() => {
                    if self.is_closing() {
                        std::future::pending::<()>().await;
                    }
                    if let Ok(handle) = session
                        .peer
                        .send_request_with_option(task_request("tasks/cancel", &id), PeerRequestOptions::with_timeout(timeout))
                        .await
                    {
                        // an already finished task answers -32602: nothing to cancel then
                        let _ = handle.await_response().await;
                    }
                    state.status = "cancelled".into();
                    state.message = Some("Cancelled by the user.".into());
                    tell(&state);
                    return cancelled(server, tool);
                }
                _ = tokio::time::sleep(poll_interval(&state)) => {
                    let got = match session
                        .peer
                        .send_request_with_option(task_request("tasks/get", &id), PeerRequestOptions::with_timeout(timeout))
                        .await
                    {
                        Ok(handle) => handle.await_response().await,
                        Err(e) => Err(e),
                    };
                    if let Some(now) = got.ok().and_then(|r| serde_json::to_value(&r).ok()).and_then(|v| state_of(&v)) {
                        // a lossy parse may drop the interval and ttl: keep the ones known
                        let now = state.updated(now);
                        if now != state {
                            state = now;
                            tell(&state);
                        }
                    }
                }
            }
        }
    }
}

/// A request about task `id` (`tasks/result`, `tasks/get`, `tasks/cancel`), in that era's form.
fn task_request(method: &'static str, id: &str) -> ClientRequest {
    ClientRequest::CustomRequest(CustomRequest::new(method, Some(json!({"taskId": id}))))
}
