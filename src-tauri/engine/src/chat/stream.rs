//! One reply, streamed into a stored assistant message: text and thinking as they arrive (the
//! Markdown re-rendered now and then), partial text saved as it grows, the exact request and
//! response objects kept for the debug view. Text that may be a tool call written as text is
//! held back while it streams ([`StreamGate`]; in constrained text mode only an answer's text is
//! shown, [`AnswerStream`]); when the reply is complete, calls written in its
//! text are recovered (whatever the model's mode) and every call's name is resolved to the tool
//! it means.
//!
//! Partial text is saved every 400 ms (`FLUSH_EVERY`), the Markdown re-rendered every 80 ms
//! (`RENDER_EVERY`). The gate is told when the server sends thinking apart
//! (`StreamGate::thinking_apart`).

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::answer::AnswerStream;
use super::events::{ChatEvent, Emit};
use super::families::{Cx, FamilyId, Form};
use super::gate::{Piece, StreamGate};
use super::recover::recover_with;
use super::resolve::{self, OfferedName};
use super::{Aids, ChatEngine, ChatError};
use crate::llm::{ChatReply, ChatRequest, Delta, LlmError, Message, Role, ToolCall};
use crate::markdown;
use crate::store::{MessageStatus, Store, StoreError};

/// How often partial text is written to the store while it streams.
const FLUSH_EVERY: Duration = Duration::from_millis(400);
/// How often the streaming Markdown is re-rendered for the UI.
const RENDER_EVERY: Duration = Duration::from_millis(80);

/// What of a reply's text is shown as it streams: in text mode constrained to JSON, the answer's
/// text only ([`AnswerStream`]); otherwise all but what may be a call ([`StreamGate`]).
enum Shown {
    Gate(StreamGate),
    Answer(AnswerStream),
}

impl Shown {
    fn push(&mut self, delta: &str) -> Vec<Piece> {
        match self {
            Shown::Gate(g) => g.push(delta),
            Shown::Answer(a) => vec![Piece::Text(a.push(delta))],
        }
    }

    fn finish(self) -> String {
        match self {
            Shown::Gate(g) => g.finish(),
            Shown::Answer(a) => a.finish(),
        }
    }
}

/// How the model gets its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolsIn {
    /// The API's tools and tool calls.
    Native,
    /// Described in the system prompt; calls written as JSON text.
    Text,
    /// As `Text`, with the reply constrained to a call or an answer by a JSON schema.
    Json,
}

/// How a reply's text is read: the tools it may call, how it got them, the family of markup
/// its model writes (when known).
#[derive(Clone, Copy)]
pub(super) struct Reading<'a> {
    pub names: &'a [OfferedName],
    pub tools_in: ToolsIn,
    pub family: Option<FamilyId>,
}

/// How one reply ended.
pub(super) enum Streamed {
    /// Complete or stopped (`reply.stopped`), stored as message `message_id`.
    Reply { reply: ChatReply, message_id: i64 },
    /// The LLM failed; what had arrived is kept (when anything had).
    Failed(LlmError),
}

impl ChatEngine {
    /// Streams one reply into a stored assistant message; `reading` says which tools this
    /// conversation may use (what a call's name is resolved against), how the model gets them,
    /// and the markup its family writes. Only the store failing is an error.
    pub(super) async fn stream_reply(
        &self,
        conversation_id: i64,
        request: &ChatRequest,
        reading: Reading<'_>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Streamed, ChatError> {
        // the server is this reply's until it ends (cancelled while waiting: the request below
        // ends at once as stopped)
        let _turn = self
            .llm_turn(|| emit(ChatEvent::LlmBusy { conversation_id }), cancel)
            .await;
        let partial = Message::new(Role::Assistant, "");
        let message_id = self
            .store
            .append_message(conversation_id, &partial, MessageStatus::Streaming)
            .await?;
        emit(ChatEvent::AssistantStarted { message_id });

        let request_body = crate::llm::without_image_data(self.llm.request_body(request));
        let started = Instant::now();
        let (tx, rx) = mpsc::unbounded_channel::<Delta>();
        let llm = self.llm.clone();
        let chat = async move {
            let mut on_delta = move |d: Delta| {
                let _ = tx.send(d);
            };
            llm.chat(request, &mut on_delta, cancel).await
        };
        let arriving = Arriving::new(message_id, partial, request, reading);
        let consume = arriving.consume(&self.store, rx, emit);
        let (result, (partial, raw, held)) = tokio::join!(chat, consume);
        let exchange = Exchange {
            conversation_id,
            message_id,
            request,
            request_body,
            raw,
            duration_ms: started.elapsed().as_millis() as i64,
        };
        match result {
            Ok(reply) => self.store_reply(reply, reading, &exchange, emit).await,
            Err(e) => {
                self.keep_what_arrived(e, partial, held, &exchange, emit)
                    .await
            }
        }
    }

    /// A complete (or stopped) reply: its calls read, stored as the message, its exchange
    /// recorded for the debug view, and the window told.
    async fn store_reply(
        &self,
        mut reply: ChatReply,
        reading: Reading<'_>,
        exchange: &Exchange<'_>,
        emit: Emit<'_>,
    ) -> Result<Streamed, ChatError> {
        let message_id = exchange.message_id;
        self.read_calls(&mut reply, exchange.request, reading);
        let mut m = Message::new(Role::Assistant, reply.content.clone());
        m.thinking = (!reply.thinking.is_empty()).then(|| reply.thinking.clone());
        m.tool_calls = reply.tool_calls.clone();
        let status = if reply.stopped {
            MessageStatus::Stopped
        } else {
            MessageStatus::Complete
        };
        self.store.update_message(message_id, &m, status).await?;
        exchange.record(&self.store, true, None).await?;
        emit(ChatEvent::AssistantDone {
            message_id,
            status,
            content: reply.content.clone(),
            html: markdown::render(&reply.content),
        });
        Ok(Streamed::Reply { reply, message_id })
    }

    /// The LLM failed: what had arrived (held-back text included) is kept as an errored
    /// message, or the empty message removed; the exchange is recorded either way.
    async fn keep_what_arrived(
        &self,
        e: LlmError,
        mut partial: Message,
        held: String,
        exchange: &Exchange<'_>,
        emit: Emit<'_>,
    ) -> Result<Streamed, ChatError> {
        let message_id = exchange.message_id;
        // nothing that had arrived is lost, held-back text included
        partial.content.push_str(&held);
        let kept = !(partial.content.is_empty() && partial.tool_calls.is_empty());
        exchange
            .record(&self.store, kept, Some(e.to_string()))
            .await?;
        if !kept {
            self.store.delete_message(message_id).await?;
        } else {
            self.store
                .update_message(message_id, &partial, MessageStatus::Error)
                .await?;
            emit(ChatEvent::AssistantDone {
                message_id,
                status: MessageStatus::Error,
                content: partial.content.clone(),
                html: markdown::render(&partial.content),
            });
        }
        Ok(Streamed::Failed(e))
    }
}

/// One exchange with the LLM, as the debug view keeps it.
struct Exchange<'a> {
    conversation_id: i64,
    message_id: i64,
    request: &'a ChatRequest,
    /// The exact request sent.
    request_body: Value,
    /// The response objects as they came (bounded).
    raw: Vec<Value>,
    duration_ms: i64,
}

impl Exchange<'_> {
    /// Records the exchange, tied to its message when the message was kept.
    async fn record(
        &self,
        store: &Store,
        kept: bool,
        error: Option<String>,
    ) -> Result<(), StoreError> {
        store
            .record_llm_call(
                self.conversation_id,
                kept.then_some(self.message_id),
                &self.request.model,
                &self.request_body,
                &self.raw,
                error,
                self.duration_ms,
            )
            .await
    }
}

/// A reply as it arrives: what is shown and saved of it so far, and the raw response objects.
struct Arriving {
    message_id: i64,
    /// The message as saved while it streams.
    partial: Message,
    thinking: String,
    shown: Shown,
    raw: Vec<Value>,
    /// Response objects past the cap, counted only.
    dropped: usize,
    last_flush: Instant,
    last_render: Instant,
}

impl Arriving {
    /// Ready for the reply to `request` stored as `message_id`.
    fn new(message_id: i64, partial: Message, request: &ChatRequest, reading: Reading<'_>) -> Self {
        let last_flush = Instant::now();
        let last_render = Instant::now() - RENDER_EVERY;
        let offered = reading.names.to_vec();
        // only a reply held to the schema is one object (with no tools on offer, or a wrap-up,
        // the model writes prose)
        let shown = if reading.tools_in == ToolsIn::Json && request.options.format.is_some() {
            Shown::Answer(AnswerStream::new())
        } else {
            Shown::Gate(
                StreamGate::with_names(move |n| resolve::names_a_tool(n, &offered))
                    .for_family(reading.family),
            )
        };
        Arriving {
            message_id,
            partial,
            thinking: String::new(),
            shown,
            raw: Vec::new(),
            dropped: 0,
            last_flush,
            last_render,
        }
    }

    /// Takes the deltas until the reply ends, saving the partial message now and then; the
    /// message so far, the raw response objects and the text still held back.
    async fn consume(
        mut self,
        store: &Store,
        mut rx: mpsc::UnboundedReceiver<Delta>,
        emit: Emit<'_>,
    ) -> (Message, Vec<Value>, String) {
        while let Some(d) = rx.recv().await {
            if !self.take(d, emit) {
                continue;
            }
            if self.last_flush.elapsed() >= FLUSH_EVERY {
                self.last_flush = Instant::now();
                if let Err(e) = store
                    .update_message(self.message_id, &self.partial, MessageStatus::Streaming)
                    .await
                {
                    tracing::warn!("could not save partial reply: {e}");
                }
            }
        }
        if self.dropped > 0 {
            let dropped = self.dropped;
            self.raw.push(
                serde_json::json!({ "switchboard": format!("{dropped} more objects not kept") }),
            );
        }
        (self.partial, self.raw, self.shown.finish())
    }

    /// Takes one delta; whether the partial message may have changed (and may be saved).
    fn take(&mut self, d: Delta, emit: Emit<'_>) -> bool {
        match d {
            Delta::Raw(v) => {
                if self.raw.len() < crate::store::debug::MAX_RESPONSE_OBJECTS {
                    self.raw.push(v);
                } else {
                    self.dropped += 1;
                }
                return false;
            }
            Delta::Text(t) => return self.take_text(&t, emit),
            Delta::Thinking(t) => {
                // the server sends thinking apart: the text that follows is no thinking, even
                // when the model's prompt opened it
                if let Shown::Gate(g) = &mut self.shown {
                    g.thinking_apart();
                }
                self.take_thinking(t, emit)
            }
            Delta::ToolCall(c) => self.partial.tool_calls.push(c),
        }
        true
    }

    /// Text: only what cannot be a call's markup is shown (and saved) as it comes; thinking
    /// written in the text shows as thinking. Whether any text was shown.
    fn take_text(&mut self, t: &str, emit: Emit<'_>) -> bool {
        let mut shown = String::new();
        for piece in self.shown.push(t) {
            match piece {
                Piece::Text(t) => shown.push_str(&t),
                Piece::Thinking(t) => self.take_thinking(t, emit),
                Piece::Markup(_) => {}
            }
        }
        if shown.is_empty() {
            return false;
        }
        self.partial.content.push_str(&shown);
        let html = (self.last_render.elapsed() >= RENDER_EVERY).then(|| {
            self.last_render = Instant::now();
            markdown::render(&self.partial.content)
        });
        emit(ChatEvent::TextDelta {
            message_id: self.message_id,
            text: shown,
            html,
        });
        true
    }

    /// Thinking: kept with the message and shown as it comes.
    fn take_thinking(&mut self, t: String, emit: Emit<'_>) {
        self.thinking.push_str(&t);
        self.partial.thinking = Some(self.thinking.clone());
        emit(ChatEvent::ThinkingDelta {
            message_id: self.message_id,
            text: t,
        });
    }
}

impl ChatEngine {
    /// The reply's calls and clean text, read with what is known of the tools on offer (their
    /// schemas type XML parameters) and of the model (its family is tried first).
    fn read_calls(&self, reply: &mut ChatReply, request: &ChatRequest, reading: Reading<'_>) {
        let Reading {
            names,
            tools_in,
            family,
        } = reading;
        let schema = |n: &str| {
            let exposed = resolve::resolve(n, names).exposed()?.to_string();
            self.tools.tool_schema(&exposed)
        };
        let quoted = last_user_text(request);
        let offered = |n: &str| names_a_tool(n, names, self.options.aids);
        let cx = Cx {
            offered: &offered,
            schema: &schema,
            quoted: quoted.as_deref(),
            family,
        };
        calls_in_reply(reply, &cx, names, tools_in, self.options.aids);
    }
}

/// Whether the model's `name` names a tool: resolved (with the aid), or exactly.
fn names_a_tool(name: &str, names: &[OfferedName], aids: Aids) -> bool {
    if aids.resolve {
        resolve::names_a_tool(name, names)
    } else {
        names.iter().any(|o| o.exposed == name)
    }
}

/// The user's last message in the request (call markup copied from it is a quote).
fn last_user_text(request: &ChatRequest) -> Option<String> {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
}

/// The reply's tool calls, as they will run: calls written in the text (in any family's markup,
/// when no native call came: native calls always win) become calls, their markup gone from the
/// text, and markup that never shows and thinking written in the text are taken out of it; every
/// name is resolved to the tool it means (`written` keeps the model's own when it differs). A
/// name that fits no tool, or several, stays as written: running it explains. A constrained reply
/// that is an answer (`{"answer": …}`, even cut off) becomes its text.
fn calls_in_reply(
    reply: &mut ChatReply,
    cx: &Cx,
    names: &[OfferedName],
    tools_in: ToolsIn,
    aids: Aids,
) {
    if tools_in == ToolsIn::Json && reply.tool_calls.is_empty() {
        // leniently: a reply cut off by the token limit still gives the answer written so far
        if let Some(Value::Object(o)) = super::lenient::parse(&reply.content) {
            if let (Some(Value::String(answer)), 1) = (o.get("answer"), o.len()) {
                reply.content = answer.clone();
                return;
            }
        }
    }
    // without the recovery, only what the original text mode read: one JSON object, bare or
    // fenced, in text mode
    let recovering = aids.recover || tools_in != ToolsIn::Native;
    if recovering {
        let found = recover_with(&reply.content, cx).filter(|f| {
            aids.recover
                || (f.calls.len() == 1
                    && f.calls[0].family == "json"
                    && matches!(f.calls[0].form, Form::Bare | Form::Fenced))
        });
        if let Some(found) = found {
            apply(reply, found);
        }
    }
    if !aids.resolve {
        return;
    }
    for c in &mut reply.tool_calls {
        if let Some(exposed) = resolve::resolve(&c.name, names).exposed() {
            if exposed != c.name {
                c.written = Some(std::mem::replace(&mut c.name, exposed.to_string()));
            }
        }
    }
}

/// What the recovery found, into the reply: its clean text, its thinking, and (unless native
/// calls came, which always win: the text's are then not run) its calls.
fn apply(reply: &mut ChatReply, found: super::recover::Recovered) {
    reply.content = found.text;
    if !found.thinking.is_empty() {
        if !reply.thinking.is_empty() {
            reply.thinking.push_str("\n\n");
        }
        reply.thinking.push_str(&found.thinking);
    }
    if !reply.tool_calls.is_empty() {
        return;
    }
    let call = |name: String, arguments| ToolCall {
        id: None,
        name,
        arguments,
        written: None,
    };
    reply.tool_calls = found
        .calls
        .into_iter()
        .map(|c| call(c.name, c.arguments))
        // names in the same markup that name no tool: the model hears they did not run
        .chain(
            found
                .skipped
                .into_iter()
                .map(|n| call(n, Value::Object(Default::default()))),
        )
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names() -> Vec<OfferedName> {
        ["calculator__add", "files__read_file"]
            .iter()
            .map(|n| OfferedName::from_exposed(n))
            .collect()
    }

    /// The reply read as the loop reads it (native mode, every aid, no family known).
    fn reading(reply: &mut ChatReply) {
        let names = names();
        let offered = |n: &str| names_a_tool(n, &names, Aids::default());
        let cx = Cx::names(&offered);
        calls_in_reply(reply, &cx, &names, ToolsIn::Native, Aids::default());
    }

    #[test]
    fn calls_written_as_text_become_calls_and_names_are_resolved() {
        let mut reply = ChatReply {
            content: "Let me add.\n<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 40}}</tool_call>".into(),
            ..Default::default()
        };
        reading(&mut reply);
        assert_eq!(reply.content, "Let me add.");
        assert_eq!(reply.tool_calls.len(), 1);
        let c = &reply.tool_calls[0];
        assert_eq!(
            (c.name.as_str(), c.written.as_deref()),
            ("calculator__add", Some("add"))
        );
        assert_eq!(c.arguments, json!({"a": 2, "b": 40}));
    }

    #[test]
    fn native_calls_are_resolved_and_prose_stays_prose() {
        let mut reply = ChatReply {
            content: "Use {\"name\": \"x\"} in your config.".into(),
            tool_calls: vec![ToolCall {
                id: Some("1".into()),
                name: "calculator.add".into(),
                arguments: json!({}),
                written: None,
            }],
            ..Default::default()
        };
        reading(&mut reply);
        assert_eq!(reply.content, "Use {\"name\": \"x\"} in your config.");
        assert_eq!(reply.tool_calls[0].name, "calculator__add");
        let mut prose = ChatReply {
            content: "The answer is {\"answer\": 42}.".into(),
            ..Default::default()
        };
        reading(&mut prose);
        assert!(prose.tool_calls.is_empty());
        assert_eq!(prose.content, "The answer is {\"answer\": 42}.");
    }
}
