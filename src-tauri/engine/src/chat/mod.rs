//! The chat loop: messages → LLM (with tools) → tool calls routed to MCP → results appended →
//! repeat until a reply has no tool calls or the iteration limit is reached. Every step is stored
//! as it happens and reported as a [`ChatEvent`].

pub mod approval;
pub mod budget;
pub mod gate;
pub mod lenient;
pub mod rank;
pub mod recover;
pub mod repair;
pub mod resolve;
pub mod text_tools;
pub mod view;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::llm::{
    ChatReply, ChatRequest, Delta, GenOptions, LlmClient, LlmError, Message, Role, ToolCall,
    ToolSpec,
};
use crate::markdown;
use crate::mcp::{
    CallEvent, Elicitation, McpHost, RoutedTool, SamplingAnswer, SamplingRequest, ToolOutcome,
};
use crate::store::{status, Store, StoreError, ToolChoice};
use approval::{Action, ApprovalRequest, Approver, Need, Policy};

/// How often partial text is written to the store while it streams.
const FLUSH_EVERY: Duration = Duration::from_millis(400);
/// How often the streaming Markdown is re-rendered for the UI.
const RENDER_EVERY: Duration = Duration::from_millis(80);

pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful assistant in Switchboard, a desktop chat app. \
You can call tools when they help; use them for arithmetic and file work instead of guessing. \
After using tools, answer the user plainly.";

/// What the loop needs from a tool host (the MCP host, or a test double).
#[async_trait]
pub trait ToolHost: Send + Sync {
    fn tool_specs(&self) -> Vec<ToolSpec>;
    /// The server and tool behind an exposed name, with its annotations.
    fn route(&self, name: &str) -> Option<RoutedTool>;
    /// Runs a call; the server's progress goes to `progress` while it runs.
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome;
    /// Answers a server's sampling request (see [`CallEvent::Sampling`]).
    fn answer_sampling(&self, _id: u64, _answer: SamplingAnswer) -> bool {
        false
    }
}

#[async_trait]
impl ToolHost for McpHost {
    fn tool_specs(&self) -> Vec<ToolSpec> {
        McpHost::tool_specs(self)
    }
    fn route(&self, name: &str) -> Option<RoutedTool> {
        McpHost::route(self, name)
    }
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        McpHost::call_tool_with_events(self, name, arguments, cancel, events).await
    }
    fn answer_sampling(&self, id: u64, answer: SamplingAnswer) -> bool {
        McpHost::answer_sampling(self, id, answer)
    }
}

/// Everything a UI needs to show a turn as it happens. Serialized with a `type` tag.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ChatEvent {
    /// `user_message_id` is `None` when the turn adds no message (regenerate, continue, wrap up).
    #[serde(rename_all = "camelCase")]
    TurnStarted {
        conversation_id: i64,
        user_message_id: Option<i64>,
        title: String,
        model: String,
    },
    #[serde(rename_all = "camelCase")]
    AssistantStarted { message_id: i64 },
    /// `html` is the whole reply so far, rendered; sent at most every 80 ms.
    #[serde(rename_all = "camelCase")]
    TextDelta {
        message_id: i64,
        text: String,
        html: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingDelta { message_id: i64, text: String },
    #[serde(rename_all = "camelCase")]
    AssistantDone {
        message_id: i64,
        status: String,
        content: String,
        html: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallStarted {
        id: i64,
        message_id: i64,
        name: String,
        server: String,
        tool: String,
        arguments: Value,
    },
    /// A server asks the user for input during a call: answer it through the host
    /// (`McpHost::answer_elicitation`) with the same id.
    #[serde(rename_all = "camelCase")]
    ElicitationRequested {
        call_id: i64,
        elicitation: Elicitation,
    },
    /// A server asks for a completion from the model during a call: answer with the approver
    /// (`decide_sampling`); the outcome follows as `samplingFinished`.
    #[serde(rename_all = "camelCase")]
    SamplingRequested {
        call_id: i64,
        request: SamplingRequest,
    },
    /// `outcome`: `answered` (with the model's `text`), `declined` or `failed` (with `error`).
    #[serde(rename_all = "camelCase")]
    SamplingFinished {
        call_id: i64,
        id: u64,
        outcome: String,
        model: String,
        text: Option<String>,
        error: Option<String>,
    },
    /// A running call reported progress (`total` when the server knows it).
    #[serde(rename_all = "camelCase")]
    ToolCallProgress {
        id: i64,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// The call waits for the user: answer with the approver.
    #[serde(rename_all = "camelCase")]
    ApprovalRequested {
        id: i64,
        name: String,
        server: String,
        tool: String,
        arguments: Value,
        destructive: bool,
    },
    #[serde(rename_all = "camelCase")]
    ApprovalResolved {
        id: i64,
        approval: String,
        arguments: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallFinished {
        id: i64,
        result: String,
        is_error: bool,
        duration_ms: i64,
        /// The server's whole result (content blocks, structuredContent), for the card.
        raw: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    Notice { message_id: i64, text: String },
    #[serde(rename_all = "camelCase")]
    Error {
        message: String,
        kind: String,
        url: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Done {
        conversation_id: i64,
        stopped: bool,
        limit_reached: bool,
    },
}

#[derive(Debug, Clone)]
pub struct ChatOptions {
    pub max_iterations: usize,
    /// For conversations without their own.
    pub system_prompt: String,
    /// For conversations without their own.
    pub temperature: Option<f64>,
    pub num_ctx: Option<u32>,
    /// Send `think` to models whose capabilities include `thinking`.
    pub thinking: bool,
    /// How each model gets its tools; a model not listed: by its capabilities.
    pub tool_modes: BTreeMap<String, crate::settings::ToolMode>,
}

impl Default for ChatOptions {
    fn default() -> Self {
        ChatOptions {
            max_iterations: 5,
            system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
            temperature: None,
            num_ctx: None,
            thinking: true,
            tool_modes: BTreeMap::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Default)]
pub struct TurnRequest {
    /// `None` starts a new conversation.
    pub conversation_id: Option<i64>,
    pub model: String,
    pub text: String,
    /// When given, stored as the conversation's choice of servers and tools before the turn;
    /// otherwise the conversation's stored choice applies (a new one: everything).
    pub tool_choice: Option<ToolChoice>,
    /// Edit: `text` replaces this user message, as its sibling (a new branch).
    pub edit_of: Option<i64>,
    /// Regenerate: a new reply to this user message, a sibling of the old one; `text` is unused.
    pub regenerate: Option<i64>,
    /// After the iteration limit: go on with tools, or answer without them; `text` is unused.
    pub resume: Option<Resume>,
    /// The provider (its id in the settings) the engine's LLM client talks to; remembered by the
    /// conversation with the model.
    pub provider: Option<String>,
    /// When given, stored as the conversation's own settings before the turn (a new chat's).
    pub settings: Option<crate::store::ConversationSettings>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Resume {
    /// More rounds of tool calls.
    Continue,
    /// One last reply, without tools.
    WrapUp,
}

/// Sent (not stored) for a "wrap up" reply.
pub const WRAP_UP_PROMPT: &str = "The limit of tool calls for this turn has been reached. \
Answer the user now with what you have found so far. Do not call any tools.";

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSummary {
    pub conversation_id: i64,
    pub stopped: bool,
    pub limit_reached: bool,
    pub llm_error: Option<String>,
    /// The loop guard stopped the turn: the model repeated this call.
    pub repeated_call: Option<String>,
}

/// What every tool call of one turn shares.
#[derive(Clone, Copy)]
struct TurnContext<'a> {
    conversation_id: i64,
    model: &'a str,
    tool_choice: &'a ToolChoice,
}

pub struct ChatEngine {
    pub llm: Arc<dyn LlmClient>,
    pub tools: Arc<dyn ToolHost>,
    pub store: Store,
    pub options: ChatOptions,
    /// Asks the user about calls that need approval.
    pub approver: Arc<dyn Approver>,
    /// Standing per-tool policies, by exposed name.
    pub policies: BTreeMap<String, Policy>,
    /// (conversation, tool) pairs the user allowed for the rest of that conversation; shared
    /// between turns by whoever owns the engine.
    pub allowed_in_conversation: Arc<Mutex<HashSet<(i64, String)>>>,
    /// Calls under way, by tool-call id: cancelling one stops that call alone (the turn goes on).
    pub running_calls: Arc<Mutex<HashMap<i64, CancellationToken>>>,
    /// Models' capabilities as the LLM server reported them, by model (shared between turns).
    pub capabilities: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("New chat");
    let mut t: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        t.push('…');
    }
    t
}

/// A resource the user attached to a message: its text goes to the model with the message.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub name: String,
    pub uri: String,
    pub text: String,
}

/// The most text one attachment adds to a message.
pub const MAX_ATTACHMENT_CHARS: usize = 256 * 1024;

/// The message as stored and sent: the user's text, then each attachment in an
/// `<attachment name="…" uri="…">` block (the window shows those blocks folded).
pub fn with_attachments(text: &str, attachments: &[Attachment]) -> String {
    let mut out = text.to_string();
    for a in attachments {
        let attr = |v: &str| v.replace('&', "&amp;").replace('"', "&quot;");
        let mut body: String = a.text.chars().take(MAX_ATTACHMENT_CHARS).collect();
        if body.len() < a.text.len() {
            body.push_str("\n[… cut: the resource is longer than 256 KB]");
        }
        out.push_str(&format!(
            "\n\n<attachment name=\"{}\" uri=\"{}\">\n{}\n</attachment>",
            attr(&a.name),
            attr(&a.uri),
            body.trim_end()
        ));
    }
    out
}

/// Arguments as a value to compare: a JSON string is parsed, so `{"a":1}` and `"{\"a\": 1}"` match.
fn normalized_arguments(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// Turns the model's arguments into an object, or says why it cannot.
fn arguments_object(call: &ToolCall) -> Result<Map<String, Value>, String> {
    match &call.arguments {
        Value::Object(m) => Ok(m.clone()),
        Value::Null => Ok(Map::new()),
        Value::String(s) if s.trim().is_empty() => Ok(Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(other) => Err(format!("The arguments must be a JSON object, got: {other}")),
            Err(e) => Err(format!("The arguments are not valid JSON ({e}): {s}")),
        },
        other => Err(format!("The arguments must be a JSON object, got: {other}")),
    }
}

impl ChatEngine {
    /// Runs one user turn to its end. LLM and tool failures are reported as events (and in the
    /// summary), not as errors; only the store failing is an error.
    pub async fn run_turn(
        &self,
        req: TurnRequest,
        emit: &(dyn Fn(ChatEvent) + Send + Sync),
        cancel: CancellationToken,
    ) -> Result<TurnSummary, ChatError> {
        let adds_message = req.regenerate.is_none() && req.resume.is_none();
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
        // an edit or a regeneration starts a new branch: a sibling of the edited message, or of the
        // reply being regenerated
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
        let mut conv = self.store.conversation(conversation_id).await?;
        if let Some(s) = &req.settings {
            conv.settings = crate::store::ConversationSettings {
                provider: conv.settings.provider.clone(),
                ..s.clone()
            };
            self.store
                .set_settings(conversation_id, &conv.settings)
                .await?;
        }
        // the conversation remembers the provider and model it talks to
        if req.provider.is_some() && req.provider != conv.settings.provider {
            conv.settings.provider = req.provider.clone();
            self.store
                .set_settings(conversation_id, &conv.settings)
                .await?;
        }
        if req.model != conv.summary.model {
            self.store.set_model(conversation_id, &req.model).await?;
        }
        let history: Vec<Message> = conv
            .messages
            .iter()
            .filter(|m| {
                m.status != status::NOTICE && !(m.status == status::ERROR && m.content.is_empty())
            })
            .map(|m| m.to_llm())
            .collect();
        let mut tool_choice = conv.tool_choice;
        if let Some(choice) = req.tool_choice.clone() {
            self.store.set_tool_choice(conversation_id, &choice).await?;
            tool_choice = choice;
        }
        let user = adds_message.then(|| Message::new(Role::User, req.text.clone()));
        let user_message_id = match &user {
            Some(u) => Some(
                self.store
                    .append_message(conversation_id, u, status::COMPLETE)
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
        let gen = GenOptions {
            temperature: conv.settings.temperature.or(self.options.temperature),
            num_ctx: conv.settings.num_ctx.or(self.options.num_ctx),
            think: (self.options.thinking && capabilities.iter().any(|c| c == "thinking"))
                .then_some(true),
        };
        // models without native tool calling get their tools in the system prompt
        let text_tools = match self.options.tool_modes.get(&req.model) {
            Some(crate::settings::ToolMode::Text) => true,
            Some(crate::settings::ToolMode::Native) => false,
            None => !capabilities.is_empty() && !capabilities.iter().any(|c| c == "tools"),
        };
        let mut messages = Vec::with_capacity(history.len() + 3);
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

        let mut summary = TurnSummary {
            conversation_id,
            stopped: false,
            limit_reached: false,
            llm_error: None,
            repeated_call: None,
        };
        let max = if wrap_up {
            1
        } else {
            self.options.max_iterations.max(1)
        };
        // the calls of the previous round, to catch a model that repeats itself
        let mut previous_round: Vec<(String, Value)> = Vec::new();
        for iteration in 1..=max {
            let tools = if wrap_up {
                vec![]
            } else {
                self.offered_tools(&tool_choice)
            };
            let (sent_messages, tools) = if text_tools {
                // tools described in the system prompt, calls and results as text
                let mut m = text_tools::history_as_text(&messages);
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
                (messages.clone(), tools)
            };
            let request = ChatRequest {
                model: req.model.clone(),
                messages: sent_messages,
                tools,
                options: gen.clone(),
            };
            let (reply, message_id) = match self
                .stream_reply(conversation_id, &request, text_tools, emit, &cancel)
                .await?
            {
                Ok(v) => v,
                Err(e) => {
                    summary.llm_error = Some(e.to_string());
                    let url = matches!(e, LlmError::Unreachable { .. })
                        .then(|| self.llm.base_url().to_string());
                    emit(ChatEvent::Error {
                        message: e.to_string(),
                        kind: e.kind().into(),
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
            messages.push(assistant);
            if reply.tool_calls.is_empty() {
                break;
            }
            let turn = TurnContext {
                conversation_id,
                model: &req.model,
                tool_choice: &tool_choice,
            };
            let mut this_round = Vec::new();
            for call in &reply.tool_calls {
                let key = (call.name.clone(), normalized_arguments(&call.arguments));
                let tool_msg = if previous_round.contains(&key) {
                    summary.repeated_call = Some(call.name.clone());
                    let why = "Not run: the same tool with the same arguments was called in the \
                        previous round; its result is above. Switchboard stopped the turn here.";
                    self.skip_tool_call(&turn, message_id, call, why, "not run (repeated)", emit)
                        .await?
                } else {
                    self.run_tool_call(&turn, message_id, call, emit, &cancel)
                        .await?
                };
                this_round.push(key);
                messages.push(tool_msg);
            }
            previous_round = this_round;
            if cancel.is_cancelled() {
                summary.stopped = true;
                break;
            }
            if let Some(name) = summary.repeated_call.clone() {
                let text = format!(
                    "Stopped: the model asked for {name} with the same arguments twice in a row, which \
                     usually means it is going in circles. Rephrase your question, or turn that tool off \
                     for this chat."
                );
                self.notice(conversation_id, text, emit).await?;
                break;
            }
            if iteration == max && !wrap_up {
                summary.limit_reached = true;
                let text = format!(
                    "Stopped after {max} rounds of tool calls: that is the limit for one turn (Settings → Max tool rounds). \
                     The model had not finished: Continue lets it go on, Wrap up asks for an answer without more tools."
                );
                self.notice(conversation_id, text, emit).await?;
            }
        }
        emit(ChatEvent::Done {
            conversation_id,
            stopped: summary.stopped,
            limit_reached: summary.limit_reached,
        });
        Ok(summary)
    }

    /// A note from Switchboard in the conversation: stored (never sent to the model) and shown.
    async fn notice(
        &self,
        conversation_id: i64,
        text: String,
        emit: &(dyn Fn(ChatEvent) + Send + Sync),
    ) -> Result<(), ChatError> {
        let m = Message::new(Role::Assistant, text.clone());
        let id = self
            .store
            .append_message(conversation_id, &m, status::NOTICE)
            .await?;
        emit(ChatEvent::Notice {
            message_id: id,
            text,
        });
        Ok(())
    }

    /// Streams one reply into a stored assistant message. The outer error is the store's; the
    /// inner one the LLM's.
    async fn stream_reply(
        &self,
        conversation_id: i64,
        request: &ChatRequest,
        text_tools: bool,
        emit: &(dyn Fn(ChatEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Result<(ChatReply, i64), LlmError>, ChatError> {
        let mut partial = Message::new(Role::Assistant, "");
        let message_id = self
            .store
            .append_message(conversation_id, &partial, status::STREAMING)
            .await?;
        emit(ChatEvent::AssistantStarted { message_id });

        let request_body = self.llm.request_body(request);
        let started = Instant::now();
        let (tx, mut rx) = mpsc::unbounded_channel::<Delta>();
        let llm = self.llm.clone();
        let chat = async move {
            let mut on_delta = move |d: Delta| {
                let _ = tx.send(d);
            };
            llm.chat(request, &mut on_delta, cancel).await
        };
        let store = &self.store;
        let consume = async {
            let mut last_flush = Instant::now();
            let mut last_render = Instant::now() - RENDER_EVERY;
            let mut thinking = String::new();
            let mut raw: Vec<Value> = Vec::new();
            let mut dropped = 0usize;
            while let Some(d) = rx.recv().await {
                match d {
                    Delta::Raw(v) => {
                        if raw.len() < crate::store::debug::MAX_RESPONSE_OBJECTS {
                            raw.push(v);
                        } else {
                            dropped += 1;
                        }
                        continue;
                    }
                    Delta::Text(t) => {
                        partial.content.push_str(&t);
                        let html = (last_render.elapsed() >= RENDER_EVERY).then(|| {
                            last_render = Instant::now();
                            markdown::render(&partial.content)
                        });
                        emit(ChatEvent::TextDelta {
                            message_id,
                            text: t,
                            html,
                        });
                    }
                    Delta::Thinking(t) => {
                        thinking.push_str(&t);
                        partial.thinking = Some(thinking.clone());
                        emit(ChatEvent::ThinkingDelta {
                            message_id,
                            text: t,
                        });
                    }
                    Delta::ToolCall(c) => partial.tool_calls.push(c),
                }
                if last_flush.elapsed() >= FLUSH_EVERY {
                    last_flush = Instant::now();
                    if let Err(e) = store
                        .update_message(message_id, &partial, status::STREAMING)
                        .await
                    {
                        tracing::warn!("could not save partial reply: {e}");
                    }
                }
            }
            if dropped > 0 {
                raw.push(serde_json::json!({ "switchboard": format!("{dropped} more objects not kept") }));
            }
            (partial, raw)
        };
        let (result, (partial, raw)) = tokio::join!(chat, consume);
        let duration_ms = started.elapsed().as_millis() as i64;
        match result {
            Ok(mut reply) => {
                if text_tools {
                    // a call written as JSON: run it like a native one; the JSON is not text
                    if let Some((call, rest)) = text_tools::extract_tool_call(&reply.content) {
                        reply.content = rest;
                        reply.tool_calls = vec![call];
                    }
                }
                let mut m = Message::new(Role::Assistant, reply.content.clone());
                m.thinking = (!reply.thinking.is_empty()).then(|| reply.thinking.clone());
                m.tool_calls = reply.tool_calls.clone();
                let st = if reply.stopped {
                    status::STOPPED
                } else {
                    status::COMPLETE
                };
                self.store.update_message(message_id, &m, st).await?;
                self.store
                    .record_llm_call(
                        conversation_id,
                        Some(message_id),
                        &request.model,
                        &request_body,
                        &raw,
                        None,
                        duration_ms,
                    )
                    .await?;
                emit(ChatEvent::AssistantDone {
                    message_id,
                    status: st.into(),
                    content: reply.content.clone(),
                    html: markdown::render(&reply.content),
                });
                Ok(Ok((reply, message_id)))
            }
            Err(e) => {
                let kept = !(partial.content.is_empty() && partial.tool_calls.is_empty());
                self.store
                    .record_llm_call(
                        conversation_id,
                        kept.then_some(message_id),
                        &request.model,
                        &request_body,
                        &raw,
                        Some(e.to_string()),
                        duration_ms,
                    )
                    .await?;
                if !kept {
                    self.store.delete_message(message_id).await?;
                } else {
                    self.store
                        .update_message(message_id, &partial, status::ERROR)
                        .await?;
                    emit(ChatEvent::AssistantDone {
                        message_id,
                        status: status::ERROR.into(),
                        content: partial.content.clone(),
                        html: markdown::render(&partial.content),
                    });
                }
                Ok(Err(e))
            }
        }
    }

    /// Applies the approval rules to one call; asks the user when they say so. Returns the
    /// arguments to call with, or why the call does not run (for the model to read).
    #[allow(clippy::too_many_arguments)]
    async fn approve(
        &self,
        conversation_id: i64,
        id: i64,
        call: &ToolCall,
        routed: &RoutedTool,
        args: Map<String, Value>,
        emit: &(dyn Fn(ChatEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Result<Map<String, Value>, String>, ChatError> {
        let key = (conversation_id, call.name.clone());
        let allowed_here = self.allowed_in_conversation.lock().unwrap().contains(&key);
        match approval::need(self.policies.get(&call.name).copied(), routed, allowed_here) {
            Need::Allow(why) => {
                self.store.set_tool_call_approval(id, why).await?;
                Ok(Ok(args))
            }
            Need::Deny => {
                self.store
                    .set_tool_call_approval(id, "denied by policy")
                    .await?;
                Ok(Err(
                    "The user's settings do not allow this tool to run.".into()
                ))
            }
            Need::Ask => {
                self.store.set_tool_call_approval(id, "waiting").await?;
                let request = ApprovalRequest {
                    id,
                    conversation_id,
                    name: call.name.clone(),
                    server: routed.server.clone(),
                    tool: routed.tool.clone(),
                    arguments: Value::Object(args.clone()),
                    destructive: routed.destructive,
                };
                emit(ChatEvent::ApprovalRequested {
                    id,
                    name: request.name.clone(),
                    server: request.server.clone(),
                    tool: request.tool.clone(),
                    arguments: request.arguments.clone(),
                    destructive: request.destructive,
                });
                let decision = self.approver.decide(&request, cancel).await;
                let edited = decision.arguments.as_ref().is_some_and(|a| *a != args);
                let label = if cancel.is_cancelled() && decision.action == Action::Deny {
                    "cancelled".to_string()
                } else {
                    approval::approval_label(decision.action, edited)
                };
                let final_args = decision.arguments.clone().unwrap_or(args);
                self.store.set_tool_call_approval(id, &label).await?;
                if edited {
                    self.store
                        .set_tool_call_arguments(id, &Value::Object(final_args.clone()))
                        .await?;
                }
                emit(ChatEvent::ApprovalResolved {
                    id,
                    approval: label,
                    arguments: Value::Object(final_args.clone()),
                });
                match decision.action {
                    Action::Deny if cancel.is_cancelled() => {
                        Ok(Err("The call was cancelled by the user.".into()))
                    }
                    Action::Deny => Ok(Err("The user declined this tool call.".into())),
                    Action::AllowConversation => {
                        self.allowed_in_conversation.lock().unwrap().insert(key);
                        Ok(Ok(final_args))
                    }
                    Action::AllowOnce | Action::AlwaysAllow => Ok(Ok(final_args)),
                }
            }
        }
    }

    /// What the model can do (`tools`, `thinking`, …), asked once per model; empty when the
    /// server does not say.
    async fn capabilities(&self, model: &str) -> Vec<String> {
        if let Some(c) = self.capabilities.lock().unwrap().get(model) {
            return c.clone();
        }
        match self.llm.capabilities(model).await {
            Ok(c) => {
                self.capabilities
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

    /// A server asked for a completion during call `call_id`: with the user's approval, the
    /// conversation's model answers it (without tools); the server hears the reply or a refusal.
    async fn sample(
        &self,
        call_id: i64,
        model: &str,
        request: SamplingRequest,
        emit: &(dyn Fn(ChatEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) {
        let id = request.id;
        emit(ChatEvent::SamplingRequested {
            call_id,
            request: request.clone(),
        });
        let finished = |outcome: &str, text: Option<String>, error: Option<String>| {
            emit(ChatEvent::SamplingFinished {
                call_id,
                id,
                outcome: outcome.into(),
                model: model.into(),
                text,
                error,
            })
        };
        if !self.approver.decide_sampling(&request, cancel).await {
            self.tools.answer_sampling(
                id,
                SamplingAnswer::Refused("The user declined the sampling request.".into()),
            );
            return finished("declined", None, None);
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
            Ok(reply) if !reply.stopped => {
                self.tools.answer_sampling(
                    id,
                    SamplingAnswer::Reply {
                        model: model.to_string(),
                        text: reply.content.clone(),
                    },
                );
                finished("answered", Some(reply.content), None)
            }
            Ok(_) => {
                self.tools
                    .answer_sampling(id, SamplingAnswer::Refused("Stopped by the user.".into()));
                finished("declined", None, Some("stopped".into()))
            }
            Err(e) => {
                let why = format!("The model could not answer: {e}");
                self.tools
                    .answer_sampling(id, SamplingAnswer::Refused(why.clone()));
                finished("failed", None, Some(why))
            }
        }
    }

    /// Records a call that is not run (the loop guard): its card says why, and the model gets a
    /// `tool` message saying so (every call it made is answered).
    async fn skip_tool_call(
        &self,
        turn: &TurnContext<'_>,
        message_id: i64,
        call: &ToolCall,
        why: &str,
        label: &str,
        emit: &(dyn Fn(ChatEvent) + Send + Sync),
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
        self.store.set_tool_call_approval(id, label).await?;
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
            .append_message(turn.conversation_id, &msg, status::COMPLETE)
            .await?;
        self.store
            .finish_tool_call(id, why, None, true, 0, Some(result_id))
            .await?;
        emit(ChatEvent::ApprovalResolved {
            id,
            approval: label.into(),
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
    async fn run_tool_call(
        &self,
        turn: &TurnContext<'_>,
        message_id: i64,
        call: &ToolCall,
        emit: &(dyn Fn(ChatEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Message, ChatError> {
        let TurnContext {
            conversation_id,
            model,
            tool_choice,
        } = *turn;
        let routed = self.tools.route(&call.name);
        let turned_off = routed
            .as_ref()
            .is_some_and(|r| !tool_choice.allows(&r.server, &r.tool));
        let RoutedTool { server, tool, .. } = routed.clone().unwrap_or_default();
        let id = self
            .store
            .start_tool_call(
                conversation_id,
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
        self.running_calls
            .lock()
            .unwrap()
            .insert(id, call_cancel.clone());
        let cancel = &call_cancel;
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<CallEvent>();
        let forward_progress = async {
            while let Some(ev) = progress_rx.recv().await {
                match ev {
                    CallEvent::Progress(p) => emit(ChatEvent::ToolCallProgress {
                        id,
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    }),
                    CallEvent::Elicitation(e) => emit(ChatEvent::ElicitationRequested {
                        call_id: id,
                        elicitation: e,
                    }),
                    CallEvent::Sampling(s) => self.sample(id, model, s, emit, cancel).await,
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
                    Ok(args) => match self
                        .approve(
                            conversation_id,
                            id,
                            call,
                            routed.as_ref().unwrap(),
                            args,
                            emit,
                            cancel,
                        )
                        .await?
                    {
                        Ok(args) => {
                            started = Instant::now();
                            self.tools
                                .call_tool(&call.name, args, cancel, Some(progress_tx))
                                .await
                        }
                        Err(why) => error(why),
                    },
                }
            };
            Ok::<_, ChatError>(outcome)
        };
        let (outcome, ()) = tokio::join!(outcome, forward_progress);
        self.running_calls.lock().unwrap().remove(&id);
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
            .append_message(conversation_id, &msg, status::COMPLETE)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attachments_follow_the_text_in_marked_blocks() {
        let a = Attachment {
            name: "notes \"v2\".md".into(),
            uri: "file:///n.md".into(),
            text: "line 1\nline 2\n".into(),
        };
        assert_eq!(with_attachments("hi", &[]), "hi");
        assert_eq!(
            with_attachments("summarise", &[a]),
            "summarise\n\n<attachment name=\"notes &quot;v2&quot;.md\" uri=\"file:///n.md\">\nline 1\nline 2\n</attachment>"
        );
        let big = Attachment {
            name: "big".into(),
            uri: "x://big".into(),
            text: "é".repeat(MAX_ATTACHMENT_CHARS + 10),
        };
        let out = with_attachments("", &[big]);
        assert!(out.contains("[… cut"));
        assert_eq!(out.matches('é').count(), MAX_ATTACHMENT_CHARS);
    }

    #[test]
    fn titles_and_argument_parsing() {
        assert_eq!(title_from("\n  what is 2+40?\nmore"), "what is 2+40?");
        assert_eq!(title_from(&"x".repeat(70)).chars().count(), 61);
        let c = |a: Value| ToolCall {
            id: None,
            name: "t".into(),
            arguments: a,
        };
        assert_eq!(arguments_object(&c(json!({"a": 1}))).unwrap()["a"], 1);
        assert_eq!(arguments_object(&c(json!("{\"a\": 2}"))).unwrap()["a"], 2);
        assert!(arguments_object(&c(json!("{broken")))
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(arguments_object(&c(json!([1])))
            .unwrap_err()
            .contains("JSON object"));
        assert!(arguments_object(&c(Value::Null)).unwrap().is_empty());
    }
}
