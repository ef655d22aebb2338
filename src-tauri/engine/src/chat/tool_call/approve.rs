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
        let key = (conversation_id, call.name.clone(), routed.identity.clone());
        let allowed_here = self
            .shared
            .allowed_in_conversation
            .lock()
            .unwrap()
            .contains(&key);
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
            Need::Ask => {
                self.store
                    .set_tool_call_approval(id, Approval::Waiting, false)
                    .await?;
                let request = ApprovalRequest {
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
                };
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
                let Some(Answer::Approval(Decision { action, arguments })) = answer else {
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
                let edited =
                    action != Action::Deny && arguments.as_ref().is_some_and(|a| *a != args);
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
                            .insert(key);
                        Approved::Run(final_args)
                    }
                    Action::AlwaysAllow => {
                        let remembered = self.settings.apply(&SettingsPatch::tool_policy(
                            call.name.clone(),
                            Some(PolicyEntry::Bound {
                                policy: Policy::Allow,
                                server: routed.identity.clone(),
                            }),
                        ));
                        if let Err(e) = remembered {
                            tracing::warn!(
                                "could not remember \"always allow\" for {}: {e}",
                                call.name
                            );
                        }
                        Approved::Run(final_args)
                    }
                    Action::AllowOnce => Approved::Run(final_args),
                })
            }
        }
    }
}
