//! One tool call: its card (a stored row and events), the approval rules and the question to the
//! user when they say so, the run with its progress, the server's questions during it
//! (elicitation for the user, sampling for the model), and the result for the model.

use std::time::Instant;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::approval::{self, Action, Approval, ApprovalRequest, Decision, Need, Policy};
use super::broker::{Answer, Question};
use super::events::{ChatEvent, Emit, SamplingOutcome};
use super::turn::Turn;
use super::{arguments_object, ChatEngine, ChatError};
use crate::llm::{ChatRequest, GenOptions, Message, Role, ToolCall};
use crate::mcp::{
    CallEvent, ElicitationAction, ElicitationAnswer, Reply, RoutedTool, SamplingAnswer,
    SamplingRequest, ToolOutcome,
};
use crate::store::MessageStatus;

/// Whether a call may run, after the rules and perhaps the user.
enum Approved {
    /// Run it with these arguments.
    Run(Map<String, Value>),
    /// Do not; the model reads why.
    Refused(String),
}

impl ChatEngine {
    /// Records a call that is not run (the loop guard): its card says why, and the model gets a
    /// `tool` message saying so (every call it made is answered).
    pub(super) async fn skip_tool_call(
        &self,
        turn: &Turn,
        message_id: i64,
        call: &ToolCall,
        why: &str,
        approval: Approval,
        emit: Emit<'_>,
    ) -> Result<Message, ChatError> {
        let RoutedTool { server, tool, .. } = self.tools.route(&call.name).unwrap_or_default();
        let id = self
            .store
            .start_tool_call(
                turn.conversation_id,
                message_id,
                call.id.as_deref(),
                &call.name,
                &server,
                &tool,
                &call.arguments,
            )
            .await?;
        self.store
            .set_tool_call_approval(id, approval, false)
            .await?;
        emit(ChatEvent::ToolCallStarted {
            id,
            message_id,
            name: call.name.clone(),
            server,
            tool,
            arguments: call.arguments.clone(),
        });
        let mut msg = Message::new(Role::Tool, format!("Error: {why}"));
        msg.tool_name = Some(call.name.clone());
        msg.tool_call_id = call.id.clone();
        let result_id = self
            .store
            .append_message(turn.conversation_id, &msg, MessageStatus::Complete)
            .await?;
        self.store
            .finish_tool_call(id, why, None, true, 0, Some(result_id))
            .await?;
        emit(ChatEvent::ApprovalResolved {
            id,
            approval,
            edited: false,
            arguments: call.arguments.clone(),
        });
        emit(ChatEvent::ToolCallFinished {
            id,
            result: why.into(),
            is_error: true,
            duration_ms: 0,
            raw: None,
        });
        Ok(msg)
    }

    /// Runs one call and stores it; returns the `tool` message for the model.
    pub(super) async fn run_tool_call(
        &self,
        turn: &Turn,
        message_id: i64,
        call: &ToolCall,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Message, ChatError> {
        let routed = self.tools.route(&call.name);
        let turned_off = routed
            .as_ref()
            .is_some_and(|r| !turn.tool_choice.allows(&r.server, &r.tool));
        let RoutedTool { server, tool, .. } = routed.clone().unwrap_or_default();
        let id = self
            .store
            .start_tool_call(
                turn.conversation_id,
                message_id,
                call.id.as_deref(),
                &call.name,
                &server,
                &tool,
                &call.arguments,
            )
            .await?;
        emit(ChatEvent::ToolCallStarted {
            id,
            message_id,
            name: call.name.clone(),
            server: server.clone(),
            tool: tool.clone(),
            arguments: call.arguments.clone(),
        });
        let error = |text: String| ToolOutcome {
            server: server.clone(),
            tool: tool.clone(),
            text,
            is_error: true,
            raw: None,
        };
        let mut started = Instant::now();
        // this call alone can be cancelled (the card's Stop); stopping the turn cancels it too
        let call_cancel = cancel.child_token();
        self.shared
            .running_calls
            .lock()
            .unwrap()
            .insert(id, call_cancel.clone());
        let cancel = &call_cancel;
        let (events_tx, mut events_rx) = mpsc::unbounded_channel::<CallEvent>();
        let during = async {
            while let Some(ev) = events_rx.recv().await {
                match ev {
                    CallEvent::Progress(p) => emit(ChatEvent::ToolCallProgress {
                        id,
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    }),
                    CallEvent::Elicitation(e, reply) => {
                        self.elicit(id, e, reply, emit, cancel).await
                    }
                    CallEvent::Sampling(s, reply) => {
                        self.sample(id, &turn.model, s, reply, emit, cancel).await
                    }
                }
            }
        };
        let outcome = async {
            let outcome = if cancel.is_cancelled() {
                error("The call was cancelled by the user.".into())
            } else if turned_off {
                error(format!(
                    "The tool \"{}\" is turned off for this conversation; use only the tools you were given.",
                    call.name
                ))
            } else {
                match arguments_object(call) {
                    Err(why) => error(why),
                    // unknown tools need no approval: nothing runs, the host explains
                    Ok(args) if routed.is_none() => {
                        self.tools.call_tool(&call.name, args, cancel, None).await
                    }
                    Ok(args) => {
                        let routed = routed.as_ref().expect("checked above");
                        match self
                            .approve(turn, id, call, routed, args, emit, cancel)
                            .await?
                        {
                            Approved::Run(args) => {
                                started = Instant::now();
                                self.tools
                                    .call_tool(&call.name, args, cancel, Some(events_tx))
                                    .await
                            }
                            Approved::Refused(why) => error(why),
                        }
                    }
                }
            };
            Ok::<_, ChatError>(outcome)
        };
        let (outcome, ()) = tokio::join!(outcome, during);
        self.shared.running_calls.lock().unwrap().remove(&id);
        let outcome = outcome?;
        let duration_ms = started.elapsed().as_millis() as i64;
        let content = if outcome.is_error && !outcome.text.starts_with("Error") {
            format!("Error: {}", outcome.text)
        } else {
            outcome.text.clone()
        };
        let mut msg = Message::new(Role::Tool, content);
        msg.tool_name = Some(call.name.clone());
        msg.tool_call_id = call.id.clone();
        let result_message_id = self
            .store
            .append_message(turn.conversation_id, &msg, MessageStatus::Complete)
            .await?;
        self.store
            .finish_tool_call(
                id,
                &outcome.text,
                outcome.raw.as_ref(),
                outcome.is_error,
                duration_ms,
                Some(result_message_id),
            )
            .await?;
        emit(ChatEvent::ToolCallFinished {
            id,
            result: outcome.text,
            is_error: outcome.is_error,
            duration_ms,
            raw: outcome.raw,
        });
        Ok(msg)
    }

    /// Applies the approval rules to one call; asks the user when they say so.
    #[allow(clippy::too_many_arguments)]
    async fn approve(
        &self,
        turn: &Turn,
        id: i64,
        call: &ToolCall,
        routed: &RoutedTool,
        args: Map<String, Value>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Approved, ChatError> {
        let key = (turn.conversation_id, call.name.clone());
        let allowed_here = self
            .shared
            .allowed_in_conversation
            .lock()
            .unwrap()
            .contains(&key);
        let policy = self
            .settings
            .read(|s| s.tool_policies.get(&call.name).copied());
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
                    conversation_id: turn.conversation_id,
                    name: call.name.clone(),
                    server: routed.server.clone(),
                    tool: routed.tool.clone(),
                    arguments: Value::Object(args.clone()),
                    destructive: routed.destructive,
                    schema: self.tools.tool_schema(&call.name),
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
                    })
                };
                let answer = self
                    .broker
                    .ask(Question::Approval(request.clone()), announce, cancel)
                    .await;
                let decision = match answer {
                    Some(Answer::Approval(d)) => Some(d),
                    _ => None,
                };
                let Some(decision) = decision else {
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
                let Decision { action, arguments } = decision;
                let edited = arguments.as_ref().is_some_and(|a| *a != args);
                let approval = approval::decided(action);
                let final_args = arguments.unwrap_or(args);
                self.store
                    .set_tool_call_approval(id, approval, edited && action != Action::Deny)
                    .await?;
                if edited {
                    self.store
                        .set_tool_call_arguments(id, &Value::Object(final_args.clone()))
                        .await?;
                }
                emit(ChatEvent::ApprovalResolved {
                    id,
                    approval,
                    edited: edited && action != Action::Deny,
                    arguments: Value::Object(final_args.clone()),
                });
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
                        let remembered = self.settings.update(|s| {
                            s.tool_policies.insert(call.name.clone(), Policy::Allow);
                        });
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

    /// A server asks the user for input during call `call_id`: the question goes to the user
    /// (a form on the card); the server hears the answer, or `cancel` when there is none.
    async fn elicit(
        &self,
        call_id: i64,
        elicitation: crate::mcp::Elicitation,
        reply: Reply<ElicitationAnswer>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) {
        let announce = |question_id| {
            emit(ChatEvent::ElicitationRequested {
                call_id,
                question_id,
                elicitation: elicitation.clone(),
            })
        };
        let question = Question::Elicitation {
            call_id,
            elicitation: elicitation.clone(),
        };
        let answer = match self.broker.ask(question, announce, cancel).await {
            Some(Answer::Elicitation(a)) => a,
            _ => ElicitationAnswer::of(ElicitationAction::Cancel),
        };
        reply.send(answer);
    }

    /// A server asks for a completion during call `call_id`: with the user's approval, the
    /// conversation's model answers it (without tools); the server hears the reply or a refusal.
    async fn sample(
        &self,
        call_id: i64,
        model: &str,
        request: SamplingRequest,
        reply: Reply<SamplingAnswer>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) {
        let mut question_id = 0;
        let announce = |id| {
            question_id = id;
            emit(ChatEvent::SamplingRequested {
                call_id,
                question_id: id,
                request: request.clone(),
            })
        };
        let question = Question::Sampling {
            call_id,
            request: request.clone(),
        };
        let approved = matches!(
            self.broker.ask(question, announce, cancel).await,
            Some(Answer::Sampling { approve: true })
        );
        let finished = |outcome, text: Option<String>, error: Option<String>| {
            emit(ChatEvent::SamplingFinished {
                call_id,
                question_id,
                outcome,
                model: model.into(),
                text,
                error,
            })
        };
        if !approved {
            reply.send(SamplingAnswer::Refused(
                "The user declined the sampling request.".into(),
            ));
            return finished(SamplingOutcome::Declined, None, None);
        }
        let mut messages = Vec::new();
        if let Some(system) = request
            .system_prompt
            .as_ref()
            .filter(|s| !s.trim().is_empty())
        {
            messages.push(Message::new(Role::System, system.clone()));
        }
        for m in &request.messages {
            let role = if m.role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            };
            messages.push(Message::new(role, m.text.clone()));
        }
        let chat = ChatRequest {
            model: model.to_string(),
            messages,
            tools: vec![],
            options: GenOptions::default(),
        };
        match self.llm.chat(&chat, &mut |_| {}, cancel).await {
            Ok(r) if !r.stopped => {
                reply.send(SamplingAnswer::Reply {
                    model: model.to_string(),
                    text: r.content.clone(),
                });
                finished(SamplingOutcome::Answered, Some(r.content), None)
            }
            Ok(_) => {
                reply.send(SamplingAnswer::Refused("Stopped by the user.".into()));
                finished(SamplingOutcome::Declined, None, Some("stopped".into()))
            }
            Err(e) => {
                let why = format!("The model could not answer: {e}");
                reply.send(SamplingAnswer::Refused(why.clone()));
                finished(SamplingOutcome::Failed, None, Some(why))
            }
        }
    }
}
