//! One reply, streamed into a stored assistant message: text and thinking as they arrive (the
//! Markdown re-rendered now and then), partial text saved as it grows, the exact request and
//! response objects kept for the debug view. Text that may be a tool call written as text is
//! held back while it streams ([`StreamGate`]; in constrained text mode only an answer's text is
//! shown, [`AnswerStream`]); when the reply is complete, calls written in its
//! text are recovered (whatever the model's mode) and every call's name is resolved to the tool
//! it means.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::answer::AnswerStream;
use super::events::{ChatEvent, Emit};
use super::gate::StreamGate;
use super::recover::{recover, Shape};
use super::resolve::{self, OfferedName};
use super::{Aids, ChatEngine, ChatError};
use crate::llm::{ChatReply, ChatRequest, Delta, LlmError, Message, Role, ToolCall};
use crate::markdown;
use crate::store::MessageStatus;

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
    fn push(&mut self, delta: &str) -> String {
        match self {
            Shown::Gate(g) => g.push(delta),
            Shown::Answer(a) => a.push(delta),
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

/// How one reply ended.
pub(super) enum Streamed {
    /// Complete or stopped (`reply.stopped`), stored as message `message_id`.
    Reply { reply: ChatReply, message_id: i64 },
    /// The LLM failed; what had arrived is kept (when anything had).
    Failed(LlmError),
}

impl ChatEngine {
    /// Streams one reply into a stored assistant message; `names` are the tools this
    /// conversation may use (what a call's name is resolved against), `tools_in` how the model
    /// gets them. Only the store failing is an error.
    pub(super) async fn stream_reply(
        &self,
        conversation_id: i64,
        request: &ChatRequest,
        names: &[OfferedName],
        tools_in: ToolsIn,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Streamed, ChatError> {
        let mut partial = Message::new(Role::Assistant, "");
        let message_id = self
            .store
            .append_message(conversation_id, &partial, MessageStatus::Streaming)
            .await?;
        emit(ChatEvent::AssistantStarted { message_id });

        let request_body = crate::llm::without_image_data(self.llm.request_body(request));
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
            let offered = names.to_vec();
            // only a reply held to the schema is one object (with no tools on offer, or a wrap-up,
            // the model writes prose)
            let mut gate = if tools_in == ToolsIn::Json && request.options.format.is_some() {
                Shown::Answer(AnswerStream::new())
            } else {
                Shown::Gate(StreamGate::with_names(move |n| {
                    resolve::names_a_tool(n, &offered)
                }))
            };
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
                        // only what cannot be a call's markup is shown (and saved) as it comes
                        let shown = gate.push(&t);
                        if shown.is_empty() {
                            continue;
                        }
                        partial.content.push_str(&shown);
                        let html = (last_render.elapsed() >= RENDER_EVERY).then(|| {
                            last_render = Instant::now();
                            markdown::render(&partial.content)
                        });
                        emit(ChatEvent::TextDelta {
                            message_id,
                            text: shown,
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
                        .update_message(message_id, &partial, MessageStatus::Streaming)
                        .await
                    {
                        tracing::warn!("could not save partial reply: {e}");
                    }
                }
            }
            if dropped > 0 {
                raw.push(serde_json::json!({ "switchboard": format!("{dropped} more objects not kept") }));
            }
            (partial, raw, gate.finish())
        };
        let (result, (mut partial, raw, held)) = tokio::join!(chat, consume);
        let duration_ms = started.elapsed().as_millis() as i64;
        let record = |kept: bool, error: Option<String>| {
            self.store.record_llm_call(
                conversation_id,
                kept.then_some(message_id),
                &request.model,
                &request_body,
                &raw,
                error,
                duration_ms,
            )
        };
        match result {
            Ok(mut reply) => {
                calls_in_reply(&mut reply, names, tools_in, self.options.aids);
                let mut m = Message::new(Role::Assistant, reply.content.clone());
                m.thinking = (!reply.thinking.is_empty()).then(|| reply.thinking.clone());
                m.tool_calls = reply.tool_calls.clone();
                let status = if reply.stopped {
                    MessageStatus::Stopped
                } else {
                    MessageStatus::Complete
                };
                self.store.update_message(message_id, &m, status).await?;
                record(true, None).await?;
                emit(ChatEvent::AssistantDone {
                    message_id,
                    status,
                    content: reply.content.clone(),
                    html: markdown::render(&reply.content),
                });
                Ok(Streamed::Reply { reply, message_id })
            }
            Err(e) => {
                // nothing that had arrived is lost, held-back text included
                partial.content.push_str(&held);
                let kept = !(partial.content.is_empty() && partial.tool_calls.is_empty());
                record(kept, Some(e.to_string())).await?;
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
    }
}

/// The reply's tool calls, as they will run: calls written in the text (in any of the shapes
/// small models use, when no native call came) become calls, their markup gone from the text;
/// every name is resolved to the tool it means (`written` keeps the model's own when it differs).
/// A name that fits no tool, or several, stays as written: running it explains. A constrained
/// reply that is an answer (`{"answer": …}`, even cut off) becomes its text.
fn calls_in_reply(reply: &mut ChatReply, names: &[OfferedName], tools_in: ToolsIn, aids: Aids) {
    if tools_in == ToolsIn::Json && reply.tool_calls.is_empty() {
        // leniently: a reply cut off by the token limit still gives the answer written so far
        if let Some(Value::Object(o)) = super::lenient::parse(&reply.content) {
            if let (Some(Value::String(answer)), 1) = (o.get("answer"), o.len()) {
                reply.content = answer.clone();
                return;
            }
        }
    }
    let names_a_tool = |n: &str| {
        if aids.resolve {
            resolve::names_a_tool(n, names)
        } else {
            names.iter().any(|o| o.exposed == n)
        }
    };
    // without the recovery, only what the original text mode read: one JSON object, bare or
    // fenced, in text mode
    let recovering = aids.recover || tools_in != ToolsIn::Native;
    if reply.tool_calls.is_empty() && recovering {
        let found = recover(&reply.content, &names_a_tool).filter(|f| {
            aids.recover
                || (f.calls.len() == 1
                    && matches!(f.calls[0].shape, Shape::BareJson | Shape::Fenced))
        });
        if let Some(found) = found {
            reply.content = found.text;
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

    #[test]
    fn calls_written_as_text_become_calls_and_names_are_resolved() {
        let mut reply = ChatReply {
            content: "Let me add.\n<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 40}}</tool_call>".into(),
            ..Default::default()
        };
        calls_in_reply(&mut reply, &names(), ToolsIn::Native, Aids::default());
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
        calls_in_reply(&mut reply, &names(), ToolsIn::Native, Aids::default());
        assert_eq!(reply.content, "Use {\"name\": \"x\"} in your config.");
        assert_eq!(reply.tool_calls[0].name, "calculator__add");
        let mut prose = ChatReply {
            content: "The answer is {\"answer\": 42}.".into(),
            ..Default::default()
        };
        calls_in_reply(&mut prose, &names(), ToolsIn::Native, Aids::default());
        assert!(prose.tool_calls.is_empty());
        assert_eq!(prose.content, "The answer is {\"answer\": 42}.");
    }
}
