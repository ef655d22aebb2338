//! One call's approval: the rules (policy, destructive, allowed in this chat or always, trusted
//! read-only hints, a changed definition) and, when they say so, the question to the user on the
//! call's card, with the answer stored and applied.

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::super::approval::{
    self, Action, Approval, ApprovalRequest, Decision, Need, Policy, PolicyEntry,
};
use super::super::broker::{Answer, Question};
use super::super::events::{ChatEvent, Emit};
use super::super::{ChatEngine, ChatError};
use super::Approved;
use crate::llm::ToolCall;
use crate::mcp::RoutedTool;
use crate::settings::SettingsPatch;

/// The call being approved: its conversation, its card, what it calls.
#[derive(Clone, Copy)]
struct Asked<'a> {
    conversation_id: i64,
    id: i64,
    call: &'a ToolCall,
    routed: &'a RoutedTool,
}

impl Asked<'_> {
    /// The key under which "allowed in this chat" remembers this tool.
    fn key(&self) -> (i64, String, String) {
        (
            self.conversation_id,
            self.call.name.clone(),
            self.routed.identity.clone(),
        )
    }
}

impl ChatEngine {
    /// Applies the approval rules to one call; asks the user when they say so.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::chat) async fn approve(
        &self,
        conversation_id: i64,
        id: i64,
        call: &ToolCall,
        routed: &RoutedTool,
        args: Map<String, Value>,
        schema: &Value,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Approved, ChatError> {
        let asked = Asked {
            conversation_id,
            id,
            call,
            routed,
        };
        let allowed_here = self
            .shared
            .allowed_in_conversation
            .lock()
            .unwrap()
            .contains(&asked.key());
        let policy = self.settings.read(|s| {
            s.tool_policies
                .get(&call.name)
                .and_then(|p| p.for_server(&routed.identity))
        });
        match approval::need(policy, routed, allowed_here) {
            Need::Allow(why) => {
                self.store.set_tool_call_approval(id, why, false).await?;
                Ok(Approved::Run(args))
            }
            Need::Deny => {
                self.store
                    .set_tool_call_approval(id, Approval::DeniedByPolicy, false)
                    .await?;
                Ok(Approved::Refused(
                    "The user's settings do not allow this tool to run.".into(),
                ))
            }
            Need::Ask => self.ask_user(asked, args, schema, emit, cancel).await,
        }
    }

    /// Asks the user on the call's card, waiting for the answer; a stopped turn (or call)
    /// cancels the question and the call.
    async fn ask_user(
        &self,
        asked: Asked<'_>,
        args: Map<String, Value>,
        schema: &Value,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Approved, ChatError> {
        let id = asked.id;
        self.store
            .set_tool_call_approval(id, Approval::Waiting, false)
            .await?;
        let request = self.approval_request(asked, &args, schema);
        let announce = |question_id| {
            emit(ChatEvent::ApprovalRequested {
                id,
                question_id,
                name: request.name.clone(),
                server: request.server.clone(),
                tool: request.tool.clone(),
                arguments: request.arguments.clone(),
                destructive: request.destructive,
                changed: request.changed.clone(),
            })
        };
        let answer = self
            .broker
            .ask(Question::Approval(request.clone()), announce, cancel)
            .await;
        let Some(Answer::Approval(decision)) = answer else {
            // the turn (or this call) was stopped while it waited
            self.store
                .set_tool_call_approval(id, Approval::Cancelled, false)
                .await?;
            emit(ChatEvent::ApprovalResolved {
                id,
                approval: Approval::Cancelled,
                edited: false,
                arguments: Value::Object(args),
            });
            return Ok(Approved::Refused(
                "The call was cancelled by the user.".into(),
            ));
        };
        self.apply_decision(asked, args, decision, emit).await
    }

    /// What the user is asked: the call, its arguments, whether it is destructive, how its
    /// definition changed (when it did), and the schema to edit the arguments with.
    fn approval_request(
        &self,
        asked: Asked<'_>,
        args: &Map<String, Value>,
        schema: &Value,
    ) -> ApprovalRequest {
        let Asked {
            conversation_id,
            id,
            call,
            routed,
        } = asked;
        ApprovalRequest {
            id,
            conversation_id,
            name: call.name.clone(),
            server: routed.server.clone(),
            tool: routed.tool.clone(),
            arguments: Value::Object(args.clone()),
            destructive: routed.destructive,
            changed: routed
                .changed
                .then(|| self.tools.tool_change(&routed.server, &routed.tool))
                .flatten(),
            schema: (!schema.is_null()).then(|| schema.clone()),
            app: None,
        }
    }

    /// The user's answer, stored (with arguments they edited) and shown on the card, then
    /// applied: declined, or run (and allowed in this chat, or always, when they said so).
    async fn apply_decision(
        &self,
        asked: Asked<'_>,
        args: Map<String, Value>,
        decision: Decision,
        emit: Emit<'_>,
    ) -> Result<Approved, ChatError> {
        let Decision { action, arguments } = decision;
        let id = asked.id;
        let edited = action != Action::Deny && arguments.as_ref().is_some_and(|a| *a != args);
        let approval = approval::decided(action);
        let final_args = match arguments {
            Some(a) if edited => a,
            _ => args,
        };
        self.store
            .set_tool_call_approval(id, approval, edited)
            .await?;
        if edited {
            self.store
                .set_tool_call_arguments(id, &Value::Object(final_args.clone()))
                .await?;
        }
        emit(ChatEvent::ApprovalResolved {
            id,
            approval,
            edited,
            arguments: Value::Object(final_args.clone()),
        });
        // allowing a changed tool runs this call only: its new definition is accepted
        // by its own button (`McpHost::accept_tool_definition`), never by an approval
        Ok(match action {
            Action::Deny => Approved::Refused("The user declined this tool call.".into()),
            Action::AllowConversation => {
                self.shared
                    .allowed_in_conversation
                    .lock()
                    .unwrap()
                    .insert(asked.key());
                Approved::Run(final_args)
            }
            Action::AlwaysAllow => {
                self.remember_always_allow(asked.call, asked.routed);
                Approved::Run(final_args)
            }
            Action::AllowOnce => Approved::Run(final_args),
        })
    }

    /// "Always allow": a policy in the settings that allows this tool of this server (bound to
    /// its identity); a failure to save it is only logged.
    fn remember_always_allow(&self, call: &ToolCall, routed: &RoutedTool) {
        let remembered = self.settings.apply(&SettingsPatch::tool_policy(
            call.name.clone(),
            Some(PolicyEntry::Bound {
                policy: Policy::Allow,
                server: routed.identity.clone(),
            }),
        ));
        if let Err(e) = remembered {
            tracing::warn!("could not remember \"always allow\" for {}: {e}", call.name);
        }
    }
}
