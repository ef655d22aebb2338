//! One turn: its setup (the conversation, a branch for an edit or a regeneration, the
//! conversation's settings, the history the model gets), then rounds of reply → tool calls until
//! a reply has no calls, the limit is reached, the loop guard stops it, or the user does.

use tokio_util::sync::CancellationToken;

use super::events::{ChatEvent, Emit};
use super::stream::Streamed;
use super::{
    normalized_arguments, text_tools, title_from, ChatEngine, ChatError, Resume, TurnRequest,
    TurnSummary, WRAP_UP_PROMPT,
};
use crate::llm::{ChatRequest, GenOptions, LlmError, Message, Role, ToolSpec};
use crate::settings::ToolMode;
use crate::store::{Approval, ConversationSettings, MessageStatus, Notice, ToolChoice};

/// What every round of one turn shares.
pub(super) struct Turn {
    pub conversation_id: i64,
    pub model: String,
    pub tool_choice: ToolChoice,
    /// System prompt, history, the user's message, then this turn's replies and results.
    pub messages: Vec<Message>,
    pub gen: GenOptions,
    /// Tools described in the system prompt and calls read from the reply text.
    pub text_tools: bool,
    /// One reply without tools (after the limit).
    pub wrap_up: bool,
}

impl ChatEngine {
    /// Runs one user turn to its end. LLM and tool failures are reported as events (and in the
    /// summary), not as errors; only the store failing is an error.
    pub async fn run_turn(
        &self,
        req: TurnRequest,
        emit: Emit<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnSummary, ChatError> {
        let mut turn = self.open_turn(&req, emit).await?;
        let summary = self.rounds(&mut turn, emit, &cancel).await?;
        emit(ChatEvent::Done {
            conversation_id: turn.conversation_id,
            stopped: summary.stopped,
            limit_reached: summary.limit_reached,
        });
        Ok(summary)
    }

    /// The conversation (new, or a branch of an old one), its settings and the messages the model
    /// gets; the user's message stored and announced.
    async fn open_turn(&self, req: &TurnRequest, emit: Emit<'_>) -> Result<Turn, ChatError> {
        let adds_message = req.regenerate.is_none() && req.resume.is_none();
        if let Some(s) = &req.settings {
            s.validate()
                .map_err(|e| ChatError::Invalid(e.to_string()))?;
        }
        let conversation_id = match req.conversation_id {
            Some(id) => id,
            None if adds_message => {
                self.store
                    .create_conversation(&title_from(&req.text), &req.model)
                    .await?
            }
            None => {
                return Err(ChatError::Invalid(
                    "only an existing conversation can be regenerated or continued".into(),
                ))
            }
        };
        self.start_branch(conversation_id, req).await?;
        let mut conv = self.store.conversation(conversation_id).await?;
        // the conversation remembers its own settings, the provider and the model it talks to
        let mut settings = match &req.settings {
            Some(s) => ConversationSettings {
                provider: conv.settings.provider.clone(),
                ..s.clone()
            },
            None => conv.settings.clone(),
        };
        if req.provider.is_some() {
            settings.provider = req.provider.clone();
        }
        if settings != conv.settings {
            self.store.set_settings(conversation_id, &settings).await?;
            conv.settings = settings;
        }
        if req.model != conv.summary.model {
            self.store.set_model(conversation_id, &req.model).await?;
        }
        let history = conv
            .messages
            .iter()
            .filter(|m| {
                m.status != MessageStatus::Notice
                    && !(m.status == MessageStatus::Error && m.content.is_empty())
            })
            .map(|m| m.to_llm());
        let mut tool_choice = conv.tool_choice;
        if let Some(choice) = &req.tool_choice {
            self.store.set_tool_choice(conversation_id, choice).await?;
            tool_choice = choice.clone();
        }
        let user = adds_message.then(|| Message::new(Role::User, req.text.clone()));
        let user_message_id = match &user {
            Some(u) => Some(
                self.store
                    .append_message(conversation_id, u, MessageStatus::Complete)
                    .await?,
            ),
            None => None,
        };
        emit(ChatEvent::TurnStarted {
            conversation_id,
            user_message_id,
            title: conv.summary.title,
            model: req.model.clone(),
        });

        // the conversation's own settings, else the app's
        let system_prompt = conv
            .settings
            .system_prompt
            .clone()
            .unwrap_or_else(|| self.options.system_prompt.clone());
        let capabilities = self.capabilities(&req.model).await;
        let can = |c: &str| capabilities.iter().any(|x| x == c);
        let gen = GenOptions {
            temperature: conv.settings.temperature.or(self.options.temperature),
            num_ctx: conv.settings.num_ctx.or(self.options.num_ctx),
            think: (self.options.thinking && can("thinking")).then_some(true),
        };
        // models without native tool calling get their tools in the system prompt
        let text_tools = match self.options.tool_modes.get(&req.model) {
            Some(ToolMode::Text) => true,
            Some(ToolMode::Native) => false,
            None => !capabilities.is_empty() && !can("tools"),
        };
        let mut messages = Vec::new();
        if !system_prompt.trim().is_empty() {
            messages.push(Message::new(Role::System, system_prompt));
        }
        messages.extend(history);
        messages.extend(user);
        let wrap_up = req.resume == Some(Resume::WrapUp);
        if wrap_up {
            // not stored: an instruction for this one reply
            messages.push(Message::new(Role::System, WRAP_UP_PROMPT));
        }
        Ok(Turn {
            conversation_id,
            model: req.model.clone(),
            tool_choice,
            messages,
            gen,
            text_tools,
            wrap_up,
        })
    }

    /// An edit or a regeneration starts a new branch: a sibling of the edited message, or of the
    /// reply being regenerated.
    async fn start_branch(&self, conversation_id: i64, req: &TurnRequest) -> Result<(), ChatError> {
        if let Some(edited) = req.edit_of {
            let m = self.store.message(edited).await?;
            if m.role != Role::User {
                return Err(ChatError::Invalid(
                    "only your own messages can be edited".into(),
                ));
            }
            self.store
                .branch_after(conversation_id, m.parent_id)
                .await?;
        }
        if let Some(asked) = req.regenerate {
            if self.store.message(asked).await?.role != Role::User {
                return Err(ChatError::Invalid(
                    "a reply is regenerated from the message it answers".into(),
                ));
            }
            self.store
                .branch_after(conversation_id, Some(asked))
                .await?;
        }
        Ok(())
    }

    /// Rounds of reply → tool calls.
    async fn rounds(
        &self,
        turn: &mut Turn,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, ChatError> {
        let mut summary = TurnSummary {
            conversation_id: turn.conversation_id,
            stopped: false,
            limit_reached: false,
            llm_error: None,
            repeated_call: None,
        };
        let max = if turn.wrap_up {
            1
        } else {
            self.options.max_iterations.max(1)
        };
        // the calls of the previous round, to catch a model that repeats itself
        let mut previous_round = Vec::new();
        for iteration in 1..=max {
            let request = self.request(turn);
            let (reply, message_id) = match self
                .stream_reply(
                    turn.conversation_id,
                    &request,
                    turn.text_tools,
                    emit,
                    cancel,
                )
                .await?
            {
                Streamed::Reply { reply, message_id } => (reply, message_id),
                Streamed::Failed(e) => {
                    summary.llm_error = Some(e.to_string());
                    let url = matches!(e, LlmError::Unreachable { .. })
                        .then(|| self.llm.base_url().to_string());
                    emit(ChatEvent::Error {
                        message: e.to_string(),
                        kind: e.kind(),
                        url,
                    });
                    break;
                }
            };
            if reply.stopped {
                summary.stopped = true;
                break;
            }
            let mut assistant = Message::new(Role::Assistant, reply.content.clone());
            assistant.thinking = (!reply.thinking.is_empty()).then(|| reply.thinking.clone());
            assistant.tool_calls = reply.tool_calls.clone();
            turn.messages.push(assistant);
            if reply.tool_calls.is_empty() {
                break;
            }
            let mut this_round = Vec::new();
            for call in &reply.tool_calls {
                let key = (call.name.clone(), normalized_arguments(&call.arguments));
                let tool_msg = if previous_round.contains(&key) {
                    summary.repeated_call = Some(call.name.clone());
                    let why = "Not run: the same tool with the same arguments was called in the \
                        previous round; its result is above. Switchboard stopped the turn here.";
                    self.skip_tool_call(turn, message_id, call, why, Approval::Repeated, emit)
                        .await?
                } else {
                    self.run_tool_call(turn, message_id, call, emit, cancel)
                        .await?
                };
                this_round.push(key);
                turn.messages.push(tool_msg);
            }
            previous_round = this_round;
            if cancel.is_cancelled() {
                summary.stopped = true;
                break;
            }
            if let Some(tool) = summary.repeated_call.clone() {
                self.notice(turn.conversation_id, Notice::RepeatedCall { tool }, emit)
                    .await?;
                break;
            }
            if iteration == max && !turn.wrap_up {
                summary.limit_reached = true;
                self.notice(
                    turn.conversation_id,
                    Notice::RoundLimit { rounds: max },
                    emit,
                )
                .await?;
            }
        }
        Ok(summary)
    }

    /// The request for the next reply: the turn's messages and the tools on offer, or (text
    /// mode) the tools described in the system prompt and calls and results as text.
    fn request(&self, turn: &Turn) -> ChatRequest {
        let tools = if turn.wrap_up {
            vec![]
        } else {
            self.offered_tools(&turn.tool_choice)
        };
        let (messages, tools) = if turn.text_tools {
            let mut m = text_tools::history_as_text(&turn.messages);
            if !tools.is_empty() {
                let section = text_tools::describe_tools(&tools);
                match m.first_mut() {
                    Some(first) if first.role == Role::System => {
                        first.content = format!("{}\n\n{section}", first.content)
                    }
                    _ => m.insert(0, Message::new(Role::System, section)),
                }
            }
            (m, vec![])
        } else {
            (turn.messages.clone(), tools)
        };
        ChatRequest {
            model: turn.model.clone(),
            messages,
            tools,
            options: turn.gen.clone(),
        }
    }

    /// A note from Switchboard in the conversation: stored (never sent to the model) and shown.
    async fn notice(
        &self,
        conversation_id: i64,
        notice: Notice,
        emit: Emit<'_>,
    ) -> Result<(), ChatError> {
        let message_id = self.store.append_notice(conversation_id, &notice).await?;
        emit(ChatEvent::Notice { message_id, notice });
        Ok(())
    }

    /// What the model can do (`tools`, `thinking`, …), asked once per model; empty when the
    /// server does not say.
    async fn capabilities(&self, model: &str) -> Vec<String> {
        if let Some(c) = self.shared.capabilities.lock().unwrap().get(model) {
            return c.clone();
        }
        match self.llm.capabilities(model).await {
            Ok(c) => {
                self.shared
                    .capabilities
                    .lock()
                    .unwrap()
                    .insert(model.to_string(), c.clone());
                c
            }
            // not cached: the chat request will report what is wrong
            Err(_) => vec![],
        }
    }

    /// The tools offered to the model in a conversation with `choice`.
    fn offered_tools(&self, choice: &ToolChoice) -> Vec<ToolSpec> {
        self.tools
            .tool_specs()
            .into_iter()
            .filter(|t| {
                self.tools
                    .route(&t.name)
                    .is_none_or(|r| choice.allows(&r.server, &r.tool))
            })
            .collect()
    }
}
