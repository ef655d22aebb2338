//! LLM clients. The chat loop talks to [`LlmClient`]; the Ollama native API is the first provider.
//!
//! Two clients on reqwest: `ollama.rs` and `openai.rs`. Both decode a native call's arguments sent
//! twice encoded (a JSON string holding the object: `arguments_decoded`) once more. `http.rs` is
//! what both share on the HTTP side (the client, sending a streaming request, HTTP failures as
//! `LlmError`s; it names no provider); `ndjson.rs` splits a stream into lines. Errors are typed
//! (`LlmError` with its `LlmErrorKind`); every response object is also passed on raw for the debug
//! view.
//!
//! A message's images (`Message::images`, base64 shared between requests): Ollama takes them as
//! `images` on any message (a tool's on its tool message); the OpenAI shape as `image_url` parts
//! with `data:` URLs, and, as a tool message takes none, a tool's images as a user message right
//! after the run of tool messages, labelled as that tool's output. Whether a model sees images:
//! Ollama's `vision` capability, llama-server's `/props` `modalities.vision`.

mod http;
mod ndjson;
pub mod ollama;
pub mod openai;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use ndjson::NdjsonSplitter;
pub use ollama::OllamaClient;
pub use openai::OpenAiClient;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }
}

/// A tool call as the model asked for it. `arguments` is whatever the model sent: normally a JSON
/// object; a string is kept as is so the loop can report invalid JSON to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    pub arguments: Value,
    /// The name as the model wrote it, when that was not an offered name and `name` is the one it
    /// was resolved to. Never sent back to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On `tool` messages: the (namespaced) name of the tool that produced this result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// On `tool` messages: the id of the call this answers, when the call had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images the model sees with it (a user's, a tool's). Not serialized: they are kept as
    /// files by the store, and each wire format writes them its own way.
    #[serde(skip)]
    pub images: Vec<Image>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            thinking: None,
            tool_calls: vec![],
            tool_name: None,
            tool_call_id: None,
            images: vec![],
        }
    }
}

/// An image on a message, as the model gets it: decoded, downscaled and re-encoded by
/// Switchboard (`media`), so it carries no metadata.
#[derive(Clone, PartialEq)]
pub struct Image {
    /// Its name in the store: the SHA-256 of its bytes.
    pub sha256: String,
    /// The file's name, or what a tool's image is called.
    pub name: String,
    /// `image/png` or `image/jpeg`.
    pub mime: String,
    pub width: u32,
    pub height: u32,
    /// Its bytes in base64, as both wire formats take them (shared: a request copies its
    /// messages).
    pub base64: Arc<str>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Image({} {}×{} {} base64 chars)",
            self.name,
            self.width,
            self.height,
            self.base64.len()
        )
    }
}

impl Image {
    /// The image as a `data:` URL (OpenAI-compatible `image_url` parts).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.base64)
    }

    /// About how many tokens of context a model spends on it ([`image_tokens`]).
    pub fn estimated_tokens(&self) -> usize {
        image_tokens(self.width, self.height)
    }
}

/// About how many tokens of context a model spends on an image of this size: one per 32×32
/// patch, at least 256 (models differ widely: Gemma 3 takes 256 for any image, Qwen 2.5-VL one
/// per 28×28 patch; the server's own count calibrates the meter after the first request).
pub fn image_tokens(width: u32, height: u32) -> usize {
    ((width.div_ceil(32) * height.div_ceil(32)) as usize).max(256)
}

/// A native call's arguments as the server sent them, with a JSON string that holds a JSON
/// object (arguments encoded twice, as some servers and templates send them) decoded once more
/// into the object. Anything else is kept as sent (the repair reports it).
pub fn arguments_decoded(arguments: Value) -> Value {
    match &arguments {
        Value::String(s) if s.trim_start().starts_with('{') => {
            match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => arguments,
            }
        }
        _ => arguments,
    }
}

/// A request body with each image's data replaced by a short note of its size: what the debug
/// view keeps (the images are in the conversation; megabytes of base64 per request are not).
pub fn without_image_data(mut body: Value) -> Value {
    fn walk(v: &mut Value, in_images: bool) {
        match v {
            Value::String(s) if in_images || (s.starts_with("data:image/") && s.len() > 256) => {
                *s = format!("[image: {} KB of base64]", s.len() / 1024);
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, in_images)),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    walk(x, k == "images");
                }
            }
            _ => {}
        }
    }
    walk(&mut body, false);
    body
}

/// A tool offered to the model (function calling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments: the MCP tool's `inputSchema`.
    pub parameters: Value,
}

#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub options: GenOptions,
}

/// How to generate; `None` = the server's or model's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenOptions {
    pub temperature: Option<f64>,
    /// Context length (Ollama's `num_ctx`).
    pub num_ctx: Option<u32>,
    /// Ask the model to think first (only for models that can).
    pub think: Option<bool>,
    /// Constrain the reply to JSON that fits this schema (Ollama's `format`, llama-server's
    /// `response_format` with a JSON schema).
    pub format: Option<Value>,
    /// The longest reply, in tokens (Ollama's `num_predict`, the OpenAI API's `max_tokens`).
    pub max_tokens: Option<u32>,
}

/// Pieces of a reply as they stream in.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Text(String),
    Thinking(String),
    ToolCall(ToolCall),
    /// One object of the response exactly as the server sent it (an NDJSON line, an SSE `data:`),
    /// for the debug view.
    Raw(Value),
}

/// A whole reply. `stopped` is true when the caller cancelled the stream: the text is partial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatReply {
    pub content: String,
    pub thinking: String,
    pub tool_calls: Vec<ToolCall>,
    pub done_reason: Option<String>,
    pub stopped: bool,
    /// How many tokens the server says the prompt was, when it says (Ollama's
    /// `prompt_eval_count`, which may leave out what it had cached; an OpenAI-compatible
    /// server's `usage.prompt_tokens`, or llama-server's `timings`).
    pub prompt_tokens: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub parameter_size: Option<String>,
    #[serde(default)]
    pub family: Option<String>,
}

/// What the server says about a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelDetails {
    /// `completion`, `tools`, `thinking`, `vision`, … (empty when the server does not say).
    pub capabilities: Vec<String>,
    /// The longest context the model was trained for, when the server says.
    pub context_length: Option<u32>,
    /// The context the server gives the model when a request does not set one (Ollama: the
    /// model's `num_ctx` parameter; llama-server: its `n_ctx`), when known.
    pub default_context: Option<u32>,
    /// The model's chat template (Ollama's `template`, llama-server's `chat_template`), when the
    /// server says: what tells which tool-call markup the model writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The model's family as the server reports it (Ollama's `details.family`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Whether the model sees images, when the server says (Ollama: the `vision` capability;
    /// llama-server: `/props`' `modalities.vision`); `None`: it does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
}

/// The context Ollama gives a model whose Modelfile sets none, when the request sets none either
/// (its documented default on machines with less than 24 GiB of VRAM; bigger machines get more,
/// so this errs small).
pub const OLLAMA_DEFAULT_CONTEXT: u32 = 4096;

/// How long a streamed answer may stay silent before it counts as stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTimeouts {
    /// Until the answer starts (its headers and its first bytes): loading a model and reading a
    /// long prompt on a CPU can take minutes.
    pub first_byte: Duration,
    /// Between two pieces of an answer that has started.
    pub idle: Duration,
}

impl Default for StreamTimeouts {
    fn default() -> Self {
        StreamTimeouts {
            first_byte: Duration::from_secs(600),
            idle: Duration::from_secs(120),
        }
    }
}

/// A duration as an error message says it: whole seconds, or milliseconds under one.
fn spoken(d: &Duration) -> String {
    if d.as_secs() >= 1 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// Nothing answered at the URL (connection refused, DNS, timeout on connect).
    #[error("cannot reach the LLM server at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    /// The server answered with an HTTP error; `message` is the server's own `error` text when it sent one.
    #[error("the LLM server answered {status}: {message}")]
    Http { status: u16, message: String },
    /// The server reported an error in the middle of a stream (an `{"error": …}` line).
    #[error("the model failed mid-reply: {0}")]
    Stream(String),
    /// The connection broke in the middle of a streamed answer (`what`: "the reply", "the download").
    #[error("the connection to the LLM server broke off during {what}: {detail}")]
    BrokenOff { what: String, detail: String },
    /// The server went silent: nothing arrived for `after` ([`StreamTimeouts`]).
    #[error("the LLM server sent nothing for {}", spoken(.after))]
    Stalled { after: Duration },
    #[error("the LLM server sent something that is not valid: {0}")]
    Protocol(String),
    /// The API key could not be read from the secret store (the keyring is locked, gone, …).
    #[error("cannot read the API key: {0}")]
    Secret(String),
}

/// What kind of failure an [`LlmError`] is, for the front end to choose how to show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    Unreachable,
    /// The model (or the endpoint) does not exist on the server.
    NotFound,
    Http,
    Stream,
    Protocol,
    /// A secret (the API key) could not be read.
    Secret,
}

impl LlmError {
    pub fn kind(&self) -> LlmErrorKind {
        match self {
            LlmError::Unreachable { .. } => LlmErrorKind::Unreachable,
            LlmError::Http { status: 404, .. } => LlmErrorKind::NotFound,
            LlmError::Http { .. } => LlmErrorKind::Http,
            LlmError::Stream(_) | LlmError::BrokenOff { .. } | LlmError::Stalled { .. } => {
                LlmErrorKind::Stream
            }
            LlmError::Protocol(_) => LlmErrorKind::Protocol,
            LlmError::Secret(_) => LlmErrorKind::Secret,
        }
    }
}

#[async_trait]
pub trait LlmClient: Send + Sync {
    /// The base URL, shown in errors.
    fn base_url(&self) -> &str;
    /// The exact body `chat` sends for `request` (for the debug view).
    fn request_body(&self, request: &ChatRequest) -> Value;
    /// Whether the server runs the model with the context a request asks for
    /// (`GenOptions::num_ctx`): Ollama does; an OpenAI-compatible server has the one it was
    /// started with.
    fn sets_context(&self) -> bool {
        false
    }
    /// Streams one reply. `on_delta` sees each piece as it arrives. When `cancel` fires, returns
    /// the partial reply with `stopped: true`.
    async fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn FnMut(Delta) + Send),
        cancel: &CancellationToken,
    ) -> Result<ChatReply, LlmError>;
    async fn list_models(&self) -> Result<Vec<ModelInfo>, LlmError>;
    /// The model's capabilities (`completion`, `tools`, `thinking`, `vision`, …); `vision` also
    /// when the server says so elsewhere ([`ModelDetails::vision`]).
    async fn capabilities(&self, model: &str) -> Result<Vec<String>, LlmError> {
        let d = self.model_details(model).await?;
        let mut caps = d.capabilities;
        if d.vision == Some(true) && !caps.iter().any(|c| c == "vision") {
            caps.push("vision".into());
        }
        Ok(caps)
    }
    /// What the server says about a model: capabilities and context window.
    async fn model_details(&self, model: &str) -> Result<ModelDetails, LlmError>;
    async fn version(&self) -> Result<String, LlmError>;
}
