//! One reply, streamed into a stored assistant message: text and thinking as they arrive (the
//! Markdown re-rendered now and then), partial text saved as it grows, the exact request and
//! response objects kept for the debug view.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{ChatEvent, Emit};
use super::{text_tools, ChatEngine, ChatError};
use crate::llm::{ChatReply, ChatRequest, Delta, LlmError, Message, Role};
use crate::markdown;
use crate::store::MessageStatus;

/// How often partial text is written to the store while it streams.
const FLUSH_EVERY: Duration = Duration::from_millis(400);
/// How often the streaming Markdown is re-rendered for the UI.
const RENDER_EVERY: Duration = Duration::from_millis(80);

/// How one reply ended.
pub(super) enum Streamed {
    /// Complete or stopped (`reply.stopped`), stored as message `message_id`.
    Reply { reply: ChatReply, message_id: i64 },
    /// The LLM failed; what had arrived is kept (when anything had).
    Failed(LlmError),
}

impl ChatEngine {
    /// Streams one reply into a stored assistant message. Only the store failing is an error.
    pub(super) async fn stream_reply(
        &self,
        conversation_id: i64,
        request: &ChatRequest,
        text_tools: bool,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Streamed, ChatError> {
        let mut partial = Message::new(Role::Assistant, "");
        let message_id = self
            .store
            .append_message(conversation_id, &partial, MessageStatus::Streaming)
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
            (partial, raw)
        };
        let (result, (partial, raw)) = tokio::join!(chat, consume);
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
