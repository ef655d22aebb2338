//! What the fake server answers: a reply (status, chunks, how it ends) and the builders of
//! Ollama NDJSON streams, OpenAI-compatible SSE streams and error bodies.

use std::time::Duration;

use serde_json::{json, Value};

/// One HTTP answer: a status and the body, written as separate chunks with a pause between,
/// then ended as `end` says.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub chunks: Vec<Vec<u8>>,
    pub pause: Duration,
    pub end: End,
}

/// How a reply ends after its chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum End {
    /// The last chunk of the chunked encoding: a complete answer.
    #[default]
    Complete,
    /// The connection is closed without the last chunk (a server that died mid-reply).
    Disconnect,
    /// Nothing more is ever sent; the connection stays open until the client closes it.
    Stall,
}

impl Reply {
    /// The same chunks, ended as `end` says.
    pub fn ending(mut self, end: End) -> Reply {
        self.end = end;
        self
    }

    /// The same chunks, with `pause` after each.
    pub fn paused(mut self, pause: Duration) -> Reply {
        self.pause = pause;
        self
    }
}

pub type Responder = Box<dyn Fn(&Value) -> Reply + Send + Sync>;

pub const MODEL: &str = "fake-llama:latest";
pub(super) const CREATED: &str = "2023-08-04T08:52:19.385406455-07:00";

/// A streamed `/api/chat` reply built line by line.
pub struct Stream {
    model: String,
    lines: Vec<Vec<u8>>,
}

impl Stream {
    pub fn new() -> Self {
        Stream {
            model: MODEL.into(),
            lines: vec![],
        }
    }
    pub fn model(mut self, m: &str) -> Self {
        self.model = m.into();
        self
    }
    fn line(mut self, v: Value) -> Self {
        let mut b = serde_json::to_vec(&v).unwrap();
        b.push(b'\n');
        self.lines.push(b);
        self
    }
    /// A content chunk, exactly as Ollama sends it.
    pub fn text(self, t: &str) -> Self {
        let m = self.model.clone();
        self.line(json!({"model": m, "created_at": CREATED, "message": {"role": "assistant", "content": t, "images": null}, "done": false}))
    }
    pub fn thinking(self, t: &str) -> Self {
        let m = self.model.clone();
        self.line(json!({"model": m, "created_at": CREATED, "message": {"role": "assistant", "content": "", "thinking": t}, "done": false}))
    }
    /// One complete tool call in one chunk (Ollama parses calls server-side), with an id.
    pub fn tool_call(self, id: &str, name: &str, args: Value) -> Self {
        self.tool_calls(&[(id, name, args)])
    }
    pub fn tool_calls(self, calls: &[(&str, &str, Value)]) -> Self {
        let m = self.model.clone();
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (id, name, args))| json!({"id": id, "function": {"index": i, "name": name, "arguments": args}}))
            .collect();
        self.line(json!({"model": m, "created_at": CREATED, "message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": false}))
    }
    /// The mid-stream error line (HTTP status stays 200).
    pub fn error(self, msg: &str) -> Self {
        self.line(json!({"error": msg}))
    }
    pub fn done(self) -> Self {
        self.done_counting(26)
    }
    /// The last line, saying the prompt was `prompt_tokens` tokens (`prompt_eval_count`).
    pub fn done_counting(self, prompt_tokens: u64) -> Self {
        let m = self.model.clone();
        self.line(json!({"model": m, "created_at": CREATED, "message": {"role": "assistant", "content": ""}, "done": true,
            "done_reason": "stop", "total_duration": 4883583458u64, "load_duration": 1334875, "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 342546000, "eval_count": 282, "eval_duration": 4535599000u64}))
    }
    /// Each line is its own write.
    pub fn reply(self) -> Reply {
        Reply {
            status: 200,
            content_type: "application/x-ndjson",
            chunks: self.lines,
            pause: Duration::from_millis(5),
            end: End::Complete,
        }
    }
    /// The whole stream as raw bytes (to split it at arbitrary places).
    pub fn bytes(self) -> Vec<u8> {
        self.lines.concat()
    }
}

impl Default for Stream {
    fn default() -> Self {
        Self::new()
    }
}

/// A streamed `/v1/chat/completions` reply, event by event, as llama-server sends it.
pub struct Sse {
    model: String,
    events: Vec<Vec<u8>>,
}

impl Sse {
    pub fn new() -> Self {
        Sse {
            model: MODEL.into(),
            events: vec![],
        }
    }
    fn chunk(mut self, delta: Value, finish: Option<&str>) -> Self {
        let v = json!({"choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
            "created": 1763800000, "id": "chatcmpl-fake", "model": self.model,
            "system_fingerprint": "b7000-fake", "object": "chat.completion.chunk"});
        self.events
            .push(format!("data: {}\n\n", serde_json::to_string(&v).unwrap()).into_bytes());
        self
    }
    pub fn text(self, t: &str) -> Self {
        self.chunk(json!({"content": t}), None)
    }
    pub fn reasoning(self, t: &str) -> Self {
        self.chunk(json!({"reasoning_content": t}), None)
    }
    /// The first fragment of a tool call: its index, id and name, and the start of its arguments.
    pub fn tool_call(self, index: u64, id: &str, name: &str, args: &str) -> Self {
        self.chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": args}}]}),
            None,
        )
    }
    /// More of a tool call's arguments.
    pub fn arguments(self, index: u64, more: &str) -> Self {
        self.chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": more}}]}),
            None,
        )
    }
    pub fn finish(self, reason: &str) -> Self {
        self.chunk(json!({}), Some(reason))
    }
    /// The usage chunk llama-server sends last when asked (`stream_options.include_usage`): no
    /// choices, the prompt's size in tokens.
    pub fn usage(mut self, prompt_tokens: u64) -> Self {
        let v = json!({"choices": [], "created": 1763800000, "id": "chatcmpl-fake", "model": self.model,
            "system_fingerprint": "b7000-fake", "object": "chat.completion.chunk",
            "usage": {"completion_tokens": 5, "prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + 5,
                "prompt_tokens_details": {"cached_tokens": 0}}});
        self.events
            .push(format!("data: {}\n\n", serde_json::to_string(&v).unwrap()).into_bytes());
        self
    }
    pub fn done(mut self) -> Self {
        self.events.push(b"data: [DONE]\n\n".to_vec());
        self
    }
    pub fn reply(self) -> Reply {
        Reply {
            status: 200,
            content_type: "text/event-stream",
            chunks: self.events,
            pause: Duration::from_millis(5),
            end: End::Complete,
        }
    }
    pub fn bytes(self) -> Vec<u8> {
        self.events.concat()
    }
}

impl Default for Sse {
    fn default() -> Self {
        Self::new()
    }
}

/// An OpenAI-style error answer.
pub fn openai_error(status: u16, msg: &str) -> Reply {
    Reply {
        status,
        content_type: "application/json; charset=utf-8",
        chunks: vec![serde_json::to_vec(
            &json!({"error": {"code": status, "message": msg, "type": "invalid_request_error"}}),
        )
        .unwrap()],
        pause: Duration::ZERO,
        end: End::Complete,
    }
}

/// A reply whose bytes are written in the given pieces.
pub fn raw_chunks(chunks: Vec<Vec<u8>>) -> Reply {
    Reply {
        status: 200,
        content_type: "application/x-ndjson",
        chunks,
        pause: Duration::from_millis(30),
        end: End::Complete,
    }
}

/// Server-Sent Events whose bytes are written in the given pieces.
pub fn raw_sse(chunks: Vec<Vec<u8>>) -> Reply {
    Reply {
        content_type: "text/event-stream",
        ..raw_chunks(chunks)
    }
}

pub fn json_error(status: u16, msg: &str) -> Reply {
    Reply {
        status,
        content_type: "application/json; charset=utf-8",
        chunks: vec![serde_json::to_vec(&json!({"error": msg})).unwrap()],
        pause: Duration::ZERO,
        end: End::Complete,
    }
}

pub fn model_not_found(model: &str) -> Reply {
    json_error(
        404,
        &format!("model \"{model}\" not found, try pulling it first"),
    )
}

/// A model that makes one tool call when the user speaks, and once it has the result answers
/// `prefix` followed by the result.
pub fn call_then_say(
    id: &'static str,
    tool: &'static str,
    args: Value,
    prefix: &'static str,
) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new()
                .text(prefix)
                .text(last["content"].as_str().unwrap_or_default())
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call(id, tool, args.clone())
                .done()
                .reply()
        }
    }
}

/// The last message of a chat request.
pub fn last_message(req: &Value) -> Value {
    req["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null)
}
