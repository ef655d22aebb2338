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

use std::time::Duration;

use rmcp::model::{CallToolResult, ClientRequest, CustomRequest, CustomResult, ServerResult};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::handler::CallEvent;
use super::state::Session;
use super::tasks::TaskState;
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
                    Some(state) => {
                        self.follow_legacy_task(server, tool, state, cancel, events)
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
    /// sends `tasks/cancel`.
    pub(super) async fn follow_legacy_task(
        &self,
        server: &str,
        tool: &str,
        mut state: TaskState,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let outcome = |text: String| error_outcome(server, tool, text);
        let tell = |s: &TaskState| {
            if let Some(tx) = events {
                let _ = tx.send(CallEvent::Task(s.clone()));
            }
        };
        tell(&state);
        let id = state.task_id.clone();
        let Some((slot, session)) = self
            .session_for_task(server, cancel)
            .await
            .and_then(|s| Some((self.slot(server)?, s)))
        else {
            if self.is_closing() {
                std::future::pending::<()>().await;
            }
            return outcome(format!(
                "The server \"{server}\" is not running, so its task cannot be followed."
            ));
        };
        // the server's questions during the task come while no call is under way: they go here
        let _asks = events.map(|tx| slot.routes.open(format!("task:{id}"), tx.clone()));
        let ttl = state.ttl_ms.unwrap_or(REQUESTED_TTL_MS);
        let result_request = ClientRequest::CustomRequest(CustomRequest::new(
            "tasks/result",
            Some(json!({"taskId": id})),
        ));
        let result = async {
            let handle = session
                .peer
                .send_request_with_option(
                    result_request,
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
                            self.tool_result(server, tool, &session, r)
                        }
                        Ok(other) => match serde_json::to_value(&other).ok().and_then(|v| serde_json::from_value::<CallToolResult>(v).ok()) {
                            Some(r) => self.tool_result(server, tool, &session, r),
                            None => outcome("The task ended without a tool result.".into()),
                        },
                        Err(ServiceError::McpError(e)) if e.code.0 == -32602 => {
                            state.status = "lost".into();
                            state.message = Some(e.message.to_string());
                            tell(&state);
                            outcome(format!(
                                "The server \"{server}\" no longer knows this task (it restarted, or the \
                                 task expired): {}. It was not run again.",
                                e.message
                            ))
                        }
                        Err(ServiceError::McpError(e)) => {
                            state.status = "failed".into();
                            tell(&state);
                            outcome(format!("The task failed: {}", e.message))
                        }
                        Err(e) => outcome(format!("Waiting for the task's result failed: {e}")),
                    };
                }
                _ = cancel.cancelled() => {
                    if self.is_closing() {
                        std::future::pending::<()>().await;
                    }
                    let request = ClientRequest::CustomRequest(CustomRequest::new(
                        "tasks/cancel",
                        Some(json!({"taskId": id})),
                    ));
                    if let Ok(handle) = session
                        .peer
                        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                        .await
                    {
                        // an already finished task answers -32602: nothing to cancel then
                        let _ = handle.await_response().await;
                    }
                    state.status = "cancelled".into();
                    state.message = Some("Cancelled by the user.".into());
                    tell(&state);
                    return outcome("The call was cancelled by the user.".into());
                }
                _ = tokio::time::sleep(state_poll(&state)) => {
                    let request = ClientRequest::CustomRequest(CustomRequest::new(
                        "tasks/get",
                        Some(json!({"taskId": id})),
                    ));
                    let got = match session
                        .peer
                        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                        .await
                    {
                        Ok(handle) => handle.await_response().await,
                        Err(e) => Err(e),
                    };
                    if let Some(now) = got.ok().and_then(|r| serde_json::to_value(&r).ok()).and_then(|v| state_of(&v)) {
                        // a lossy parse may drop the interval and ttl: keep the ones known
                        let now = TaskState {
                            poll_ms: now.poll_ms.or(state.poll_ms),
                            ttl_ms: now.ttl_ms.or(state.ttl_ms),
                            ..now
                        };
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

fn state_poll(state: &TaskState) -> Duration {
    state
        .poll_ms
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(1))
        .clamp(Duration::from_millis(200), Duration::from_secs(30))
}

fn error_outcome(server: &str, tool: &str, text: String) -> ToolOutcome {
    ToolOutcome {
        server: server.to_string(),
        tool: tool.to_string(),
        text,
        is_error: true,
        raw: None,
        images: vec![],
    }
}
