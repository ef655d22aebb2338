//! What a server asks for while one of its tools runs: progress for the card, a form for the
//! user (elicitation), a completion from the conversation's model after the user agrees
//! (sampling). Every question goes through the broker; a server that gets no answer hears
//! `cancel` or a refusal, never silence.

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::chat::broker::{Answer, Question};
use crate::chat::events::{ChatEvent, Emit, SamplingOutcome};
use crate::chat::turn::Turn;
use crate::chat::ChatEngine;
use crate::llm::{ChatRequest, GenOptions, Message, Role};
use crate::mcp::{
    CallEvent, ElicitationAction, ElicitationAnswer, Reply, SamplingAnswer, SamplingRequest,
    TaskState, ToolOutcome,
};

impl ChatEngine {
    /// The call through the host; meanwhile its progress goes to the card and the server's
    /// questions to the user (a form) or the model (sampling, after the user agrees).
    pub(super) async fn run_with_events(
        &self,
        turn: &Turn,
        id: i64,
        name: &str,
        args: Map<String, Value>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> ToolOutcome {
        let (events_tx, events_rx) = mpsc::unbounded_channel::<CallEvent>();
        let server = self.tools.route(name).map(|r| r.server).unwrap_or_default();
        let call = self.tools.call_tool(name, args, cancel, Some(events_tx));
        let during = self.answer_events(id, &server, &turn.model, events_rx, emit, cancel);
        let (outcome, _) = tokio::join!(call, during);
        outcome
    }

    /// What happens during call `id` of `server`: progress and task states go to the card (a
    /// task's state to the store too), the server's questions to the user or to `model`. The
    /// task's last state, when the call ran as one.
    pub(crate) async fn answer_events(
        &self,
        id: i64,
        server: &str,
        model: &str,
        mut events: mpsc::UnboundedReceiver<CallEvent>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Option<TaskState> {
        let mut last = None;
        while let Some(ev) = events.recv().await {
            match ev {
                CallEvent::Progress(p) => emit(ChatEvent::ToolCallProgress {
                    id,
                    progress: p.progress,
                    total: p.total,
                    message: p.message,
                }),
                CallEvent::Elicitation(e, reply) => self.elicit(id, e, reply, emit, cancel).await,
                CallEvent::Sampling(s, reply) => {
                    self.sample(id, model, s, reply, emit, cancel).await
                }
                CallEvent::Task(state) => {
                    // the handle is kept before anything else, so a restart can follow it
                    let identity = self.tools.server_identity(server);
                    let kept = self
                        .store
                        .set_tool_task(id, server, identity.as_deref(), &state)
                        .await;
                    if let Err(e) = kept {
                        tracing::warn!("could not keep the task of call {id}: {e}");
                    }
                    emit(ChatEvent::ToolCallTask {
                        id,
                        status: state.status.clone(),
                        message: state.message.clone(),
                        reason: state.reason,
                    });
                    last = Some(state);
                }
            }
        }
        last
    }

    /// A server asks the user for input during call `call_id`: the question goes to the user
    /// (a form on the card); the server hears the answer, or `cancel` when there is none.
    pub(in crate::chat) async fn elicit(
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
    pub(super) async fn sample(
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
        // images go to a model that sees them (or whose server does not say: the server asked
        // for them); the others read the text's note
        let vision = self.sees_images(model).await != Some(false);
        for m in &request.messages {
            let role = if m.role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            };
            let mut msg = Message::new(role, m.text.clone());
            if vision && !m.images.is_empty() {
                let (images, notes) = self.server_images("sampling", &m.images, false).await;
                for note in notes {
                    msg.content.push_str(&format!("\n{note}"));
                }
                msg.images = images;
            }
            messages.push(msg);
        }
        let chat = ChatRequest {
            model: model.to_string(),
            messages,
            tools: vec![],
            options: GenOptions::default(),
        };
        let _turn = self.llm_turn(|| {}, cancel).await;
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
