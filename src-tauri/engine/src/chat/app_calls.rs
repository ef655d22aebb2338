//! The calls an MCP App makes from the card of the call that showed it. Each goes through the
//! same rules as the model's calls (policies, "allowed in this chat", asking on its card) and
//! gets its own card, under the message of the call whose app made it. The model does not read
//! its result (it never asked for it); the app gets it.

use std::time::Instant;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{ChatEvent, Emit};
use super::tool_call::Approved;
use super::{ChatEngine, ChatError};
use crate::llm::ToolCall;
use crate::mcp::{RoutedTool, ToolOutcome};
use crate::store::CallOrigin;

/// An app's call, on its card: where it comes from, what it calls, its card's id.
struct AppCall {
    /// The call whose app makes it.
    origin: CallOrigin,
    routed: RoutedTool,
    /// The call as the model would have made it (for policies and approvals).
    call: ToolCall,
    id: i64,
}

impl ChatEngine {
    /// Runs `tool` of the server of call `origin` for the app shown on that call's card.
    pub async fn app_call(
        &self,
        origin: i64,
        tool: &str,
        arguments: Map<String, Value>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<ToolOutcome, ChatError> {
        let app_call = self
            .open_app_call(origin, tool, arguments.clone(), emit)
            .await?;
        let id = app_call.id;
        let cancel = cancel.child_token();
        self.shared
            .running_calls
            .lock()
            .unwrap()
            .insert(id, cancel.clone());
        let started = Instant::now();
        let outcome = self
            .approve_and_run_app_call(&app_call, tool, arguments, emit, &cancel)
            .await;
        self.shared.running_calls.lock().unwrap().remove(&id);
        let outcome = outcome?;
        let duration_ms = started.elapsed().as_millis() as i64;
        self.store
            .finish_call_quietly(
                id,
                &outcome.text,
                outcome.raw.as_ref(),
                outcome.is_error,
                duration_ms,
            )
            .await?;
        emit(ChatEvent::ToolCallFinished {
            id,
            result: outcome.text.clone(),
            is_error: outcome.is_error,
            duration_ms,
            raw: outcome.raw.clone(),
        });
        Ok(outcome)
    }

    /// The app's call checked (its own server's tools only, those the server lets apps call),
    /// then given its card under the message of the call whose app makes it.
    async fn open_app_call(
        &self,
        origin: i64,
        tool: &str,
        arguments: Map<String, Value>,
        emit: Emit<'_>,
    ) -> Result<AppCall, ChatError> {
        let o = self
            .store
            .tool_call_origin(origin)
            .await?
            .ok_or_else(|| ChatError::Invalid("That tool call does not exist.".into()))?;
        // its own server's tools only, and only those the server lets apps call
        let routed = self
            .tools
            .route_server_tool(&o.server, tool)
            .filter(|r| r.ui.app)
            .ok_or_else(|| {
                ChatError::Invalid(format!(
                    "The app cannot call \"{tool}\": {} offers no such tool to apps.",
                    o.server
                ))
            })?;
        // named as the model would know it, so standing policies and approvals apply alike
        let name = format!("{}__{}", o.server, tool);
        let call = ToolCall {
            id: None,
            name: name.clone(),
            arguments: Value::Object(arguments),
            written: None,
        };
        let id = self
            .store
            .start_tool_call(o.conversation_id, o.message_id, &call, &o.server, tool)
            .await?;
        emit(ChatEvent::ToolCallStarted {
            id,
            message_id: o.message_id,
            name,
            written: None,
            server: o.server.clone(),
            tool: tool.to_string(),
            arguments: call.arguments.clone(),
        });
        Ok(AppCall {
            origin: o,
            routed,
            call,
            id,
        })
    }

    /// The app's call through the approval rules like the model's, then run with the server's
    /// questions answered on its card; refused, its outcome says why.
    async fn approve_and_run_app_call(
        &self,
        app_call: &AppCall,
        tool: &str,
        arguments: Map<String, Value>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<ToolOutcome, ChatError> {
        let AppCall {
            origin: o,
            routed,
            call,
            id,
        } = app_call;
        let id = *id;
        let schema = self.tools.tool_schema(&call.name).unwrap_or(Value::Null);
        let approved = self
            .approve(
                o.conversation_id,
                id,
                call,
                routed,
                arguments,
                &schema,
                emit,
                cancel,
            )
            .await?;
        Ok(match approved {
            Approved::Run(args) => {
                let (tx, rx) = mpsc::unbounded_channel();
                let run = self
                    .tools
                    .call_server_tool(&o.server, tool, args, cancel, Some(tx));
                let during = self.answer_events(id, &o.server, "", rx, emit, cancel);
                tokio::join!(run, during).0
            }
            Approved::Refused(why) => ToolOutcome {
                server: o.server.clone(),
                tool: tool.to_string(),
                text: why,
                is_error: true,
                raw: None,
                images: vec![],
            },
        })
    }
}
