//! OpenAI-compatible servers (llama.cpp's llama-server, LM Studio, vLLM, …):
//! `POST /v1/chat/completions` with `stream: true` (Server-Sent Events), `GET /v1/models`.
//!
//! Tool calls stream as fragments: the first fragment of a call has its `index`, `id` and
//! `function.name`; later ones add pieces of `function.arguments` (a JSON text) for that index.
//! They are put together here and handed on when the stream ends.
//!
//! `parse_chunks` runs the same parser without the network, for its tests, property tests and the
//! fuzz target.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::http::{check_response, http_client, send_error, send_streaming};
use super::ndjson::{each_line, Ended};
use super::NdjsonSplitter;
use crate::secrets::{SecretValue, Secrets};

use super::{
    ChatReply, ChatRequest, Delta, LlmClient, LlmError, Message, ModelDetails, ModelInfo, Role,
    StreamTimeouts, ToolCall,
};

pub struct OpenAiClient {
    base: String,
    api_key: Option<ApiKey>,
    http: reqwest::Client,
    timeouts: StreamTimeouts,
    /// The server refused `stream_options` (an older or stricter server): not sent again.
    no_usage: std::sync::atomic::AtomicBool,
}

/// The API key: as given, or a secret read from its store each time a request is sent.
enum ApiKey {
    Value(String),
    Secret(SecretValue, Secrets),
}

impl OpenAiClient {
    /// `base_url` with or without the trailing `/v1`.
    pub fn new(base_url: &str, api_key: Option<String>) -> Self {
        Self::with_key(
            base_url,
            api_key.filter(|k| !k.trim().is_empty()).map(ApiKey::Value),
        )
    }

    /// With the API key a provider's settings hold (a reference to the secret store, or a value
    /// typed into the file), read from `secrets` at the moment a request is sent.
    pub fn with_secret(base_url: &str, api_key: Option<SecretValue>, secrets: &Secrets) -> Self {
        let key = api_key
            .filter(|k| k.plain().is_none_or(|v| !v.trim().is_empty()))
            .map(|k| ApiKey::Secret(k, secrets.clone()));
        Self::with_key(base_url, key)
    }

    fn with_key(base_url: &str, api_key: Option<ApiKey>) -> Self {
        let timeouts = StreamTimeouts::default();
        let base = base_url.trim().trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base).to_string();
        OpenAiClient {
            base,
            api_key,
            http: http_client(timeouts),
            timeouts,
            no_usage: Default::default(),
        }
    }

    /// The request as sent: without `stream_options` once the server refused it.
    fn wire(&self, request: &ChatRequest) -> Value {
        let mut body = request_to_wire(request);
        if self.no_usage.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(o) = body.as_object_mut() {
                o.remove("stream_options");
            }
        }
        body
    }

    /// How long a streamed answer may stay silent (default: [`StreamTimeouts::default`]).
    pub fn with_timeouts(mut self, timeouts: StreamTimeouts) -> Self {
        self.http = http_client(timeouts);
        self.timeouts = timeouts;
        self
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v1{path}", self.base)
    }

    /// The request with the API key as a bearer token (marked sensitive: never in a log).
    async fn authorized(
        &self,
        rb: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, LlmError> {
        let key = match &self.api_key {
            None => return Ok(rb),
            Some(ApiKey::Value(v)) => v.clone(),
            Some(ApiKey::Secret(v, secrets)) => secrets
                .resolve(v)
                .await
                .map_err(|e| LlmError::Secret(e.to_string()))?,
        };
        Ok(rb.bearer_auth(key.trim()))
    }
}

/// A message's content with its images: plain text, or (with images) a list of a text part and
/// `image_url` parts with `data:` URLs.
fn content_with_images(text: &str, images: &[super::Image]) -> Value {
    if images.is_empty() {
        return json!(text);
    }
    let mut parts = vec![json!({"type": "text", "text": text})];
    parts.extend(
        images
            .iter()
            .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})),
    );
    Value::Array(parts)
}

/// Messages in the OpenAI shape. Every assistant tool call gets an id (calls that came from a
/// provider without ids get `call_N`), and each tool result names the call it answers. A tool
/// message takes no images in this API: a tool's images follow the run of tool messages as a
/// user message, labelled as that tool's output.
pub fn messages_to_wire(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut unanswered: std::collections::VecDeque<String> = Default::default();
    let mut n = 0;
    // tool images waiting for the end of the run of tool messages
    let mut tool_images: Vec<Value> = Vec::new();
    for m in messages {
        if m.role != Role::Tool {
            out.append(&mut tool_images);
        }
        match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        n += 1;
                        let id = c.id.clone().unwrap_or_else(|| format!("call_{n}"));
                        unanswered.push_back(id.clone());
                        // arguments that never were a JSON object go back as `{}` (servers
                        // refuse to parse the history otherwise; the tool result already told the
                        // model what was wrong with them)
                        let args = match &c.arguments {
                            Value::String(s) => match serde_json::from_str::<Value>(s) {
                                Ok(Value::Object(_)) => s.clone(),
                                _ => "{}".into(),
                            },
                            Value::Object(_) => c.arguments.to_string(),
                            _ => "{}".into(),
                        };
                        json!({"id": id, "type": "function",
                               "function": {"name": c.name, "arguments": args}})
                    })
                    .collect();
                let content = (!m.content.is_empty()).then(|| m.content.clone());
                out.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
            }
            Role::Tool => {
                let id = match &m.tool_call_id {
                    Some(id) => {
                        unanswered.retain(|u| u != id);
                        id.clone()
                    }
                    None => unanswered
                        .pop_front()
                        .unwrap_or_else(|| "call_unknown".into()),
                };
                if !m.images.is_empty() {
                    let label = format!(
                        "The image{} returned by the tool {} (call {id}):",
                        if m.images.len() > 1 { "s" } else { "" },
                        m.tool_name.as_deref().unwrap_or("the tool")
                    );
                    tool_images.push(json!({"role": "user",
                        "content": content_with_images(&label, &m.images)}));
                }
                out.push(json!({"role": "tool", "tool_call_id": id, "content": m.content}));
            }
            role => out.push(json!({"role": role.as_str(),
                "content": content_with_images(&m.content, &m.images)})),
        }
    }
    out.append(&mut tool_images);
    out
}

pub fn request_to_wire(r: &ChatRequest) -> Value {
    let mut body = json!({
        "model": r.model,
        "messages": messages_to_wire(&r.messages),
        "stream": true,
        // the prompt's size in tokens, in the last chunk (what the context meter calibrates by)
        "stream_options": {"include_usage": true},
    });
    if let Some(t) = r.options.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = r.options.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(schema) = &r.options.format {
        body["response_format"] = json!({"type": "json_schema",
            "json_schema": {"name": "reply", "schema": schema}});
    }
    if !r.tools.is_empty() {
        body["tools"] = Value::Array(
            r.tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters }})
                })
                .collect(),
        );
    }
    body
}

/// Whether an error says the request's `stream_options` (or an unknown field) was the problem.
fn refuses_stream_options(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "stream_options",
        "include_usage",
        "extra",
        "unrecognized",
        "unknown field",
        "not permitted",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// A tool call being put together from its fragments.
#[derive(Default)]
struct Partial {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// What the stream has said so far.
#[derive(Default)]
pub struct SseState {
    calls: BTreeMap<u64, Partial>,
    done: bool,
}

impl SseState {
    /// Applies one line of the event stream. `Ok(true)` at `data: [DONE]`.
    pub fn apply_line(
        &mut self,
        line: &[u8],
        reply: &mut ChatReply,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<bool, LlmError> {
        let text = String::from_utf8_lossy(line);
        // comments (`: keep-alive`), `event:`, `id:`, `retry:` lines carry nothing here
        let Some(data) = text.strip_prefix("data:") else {
            return Ok(false);
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| LlmError::Protocol(format!("bad event data ({e}): {data}")))?;
        on_delta(Delta::Raw(v.clone()));
        if let Some(err) = v.get("error") {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| err.to_string());
            return Err(LlmError::Stream(msg));
        }
        // the prompt's size: `usage` (OpenAI's, in the last chunk when asked for), else
        // llama-server's `timings` (what it processed plus what it had cached)
        let usage = v["usage"]["prompt_tokens"].as_u64().or_else(|| {
            let t = &v["timings"];
            Some(t["prompt_n"].as_u64()? + t["cache_n"].as_u64().unwrap_or(0))
        });
        if let Some(n) = usage {
            reply.prompt_tokens = Some(n as usize);
        }
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(false);
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        let thinking = delta
            .get("reasoning_content")
            .or_else(|| delta.get("reasoning"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        if let Some(t) = thinking {
            reply.thinking.push_str(t);
            on_delta(Delta::Thinking(t.to_string()));
        }
        if let Some(t) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            reply.content.push_str(t);
            on_delta(Delta::Text(t.to_string()));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (i, c) in calls.iter().enumerate() {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
                let p = self.calls.entry(index).or_default();
                if let Some(id) = c
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    p.id = Some(id.to_string());
                }
                let f = c.get("function").unwrap_or(&Value::Null);
                if let Some(n) = f.get("name").and_then(Value::as_str) {
                    p.name.push_str(n);
                }
                match f.get("arguments") {
                    Some(Value::String(a)) => p.arguments.push_str(a),
                    // some servers send the arguments as an object in one piece
                    Some(o @ Value::Object(_)) => p.arguments.push_str(&o.to_string()),
                    _ => {}
                }
            }
        }
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            reply.done_reason = Some(r.to_string());
        }
        Ok(false)
    }

    /// The stream is over: hand on the tool calls, arguments parsed (kept as text when they are
    /// not valid JSON, so the loop can tell the model).
    pub fn finish(
        &mut self,
        reply: &mut ChatReply,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<(), LlmError> {
        if !self.done && reply.done_reason.is_none() {
            return Err(LlmError::Protocol(
                "the stream ended before the reply was done".into(),
            ));
        }
        for (_, p) in std::mem::take(&mut self.calls) {
            let arguments = if p.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&p.arguments)
                    .map(super::arguments_decoded)
                    .unwrap_or(Value::String(p.arguments))
            };
            let call = ToolCall {
                id: p.id,
                name: p.name,
                arguments,
                written: None,
            };
            reply.tool_calls.push(call.clone());
            on_delta(Delta::ToolCall(call));
        }
        Ok(())
    }
}

/// Feeds byte chunks through the line splitter and the SSE parser as `chat` does, without the
/// network: the reply (or the error) and every delta but the raw copies. For the unit tests,
/// the property tests and the fuzz target, which must parse exactly as `chat` parses.
#[doc(hidden)]
pub fn parse_chunks<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Result<ChatReply, LlmError>, Vec<Delta>) {
    let mut deltas = Vec::new();
    let mut on = |d: Delta| {
        if !matches!(d, Delta::Raw(_)) {
            deltas.push(d)
        }
    };
    let mut reply = ChatReply::default();
    let mut state = SseState::default();
    let mut splitter = NdjsonSplitter::new();
    let mut lines: Vec<Vec<u8>> = chunks.into_iter().flat_map(|c| splitter.push(c)).collect();
    lines.extend(splitter.finish());
    let mut result = Ok(());
    for line in lines {
        match state.apply_line(&line, &mut reply, &mut on) {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let r = result
        .and_then(|_| state.finish(&mut reply, &mut on))
        .map(|_| reply);
    (r, deltas)
}

#[async_trait]
impl LlmClient for OpenAiClient {
    fn base_url(&self) -> &str {
        &self.base
    }

    fn request_body(&self, request: &ChatRequest) -> Value {
        self.wire(request)
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn FnMut(Delta) + Send),
        cancel: &CancellationToken,
    ) -> Result<ChatReply, LlmError> {
        let mut reply = ChatReply::default();
        let resp = loop {
            let rb = self
                .authorized(self.http.post(self.url("/chat/completions")))
                .await?
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .json(&self.wire(request));
            let Some(resp) = send_streaming(rb, &self.base, self.timeouts, cancel).await? else {
                reply.stopped = true;
                return Ok(reply);
            };
            match check_response(resp).await {
                // a server that does not take `stream_options` (the usage is only for the
                // context meter): asked again without it, and never again with it
                Err(LlmError::Http { status, message })
                    if matches!(status, 400 | 422)
                        && refuses_stream_options(&message)
                        && !self
                            .no_usage
                            .swap(true, std::sync::atomic::Ordering::Relaxed) =>
                {
                    tracing::info!("{}: no stream_options ({message})", self.base);
                }
                other => break other?,
            }
        };
        let mut state = SseState::default();
        let ended = each_line(resp, "the reply", self.timeouts, cancel, |line| {
            state.apply_line(line, &mut reply, on_delta)
        })
        .await?;
        if ended == Ended::Cancelled {
            reply.stopped = true;
            return Ok(reply);
        }
        state.finish(&mut reply, on_delta)?;
        Ok(reply)
    }

    async fn list_models(&self) -> Result<Vec<ModelInfo>, LlmError> {
        let resp = self
            .authorized(self.http.get(self.url("/models")))
            .await?
            .send()
            .await
            .map_err(|e| send_error(&self.base, e))?;
        let v: Value = check_response(resp)
            .await?
            .json()
            .await
            .map_err(|e| LlmError::Protocol(e.to_string()))?;
        let models = v
            .get("data")
            .or_else(|| v.get("models"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(models
            .iter()
            .filter_map(|m| {
                let id = m.get("id").or_else(|| m.get("name"))?.as_str()?;
                Some(ModelInfo {
                    name: id.to_string(),
                    size: 0,
                    parameter_size: None,
                    family: m.get("owned_by").and_then(Value::as_str).map(String::from),
                })
            })
            .collect())
    }

    /// The API does not say; the chat loop then offers tools natively (a per-model setting can
    /// switch a model to tools described in text).
    /// OpenAI-compatible servers do not say what a model can do. llama.cpp's llama-server says
    /// its context (`/props`: `default_generation_settings.n_ctx`) and its chat template
    /// (`chat_template`); others: unknown.
    async fn model_details(&self, _model: &str) -> Result<ModelDetails, LlmError> {
        let props = self
            .authorized(self.http.get(format!("{}/props", self.base)))
            .await?
            .timeout(std::time::Duration::from_secs(5))
            .send()
            .await;
        let props = match props {
            Ok(r) if r.status().is_success() => r.json::<Value>().await.ok(),
            _ => None,
        };
        let n_ctx = props
            .as_ref()
            .and_then(|v| v["default_generation_settings"]["n_ctx"].as_u64())
            .map(|n| n.min(u32::MAX as u64) as u32);
        let template = props
            .as_ref()
            .and_then(|v| v["chat_template"].as_str())
            .filter(|t| !t.is_empty())
            .map(String::from);
        // llama-server says whether its model was loaded with a vision projector
        let vision = props
            .as_ref()
            .and_then(|v| v["modalities"]["vision"].as_bool());
        Ok(ModelDetails {
            capabilities: vec![],
            context_length: n_ctx,
            default_context: n_ctx,
            template,
            family: None,
            vision,
        })
    }

    async fn version(&self) -> Result<String, LlmError> {
        self.list_models().await?;
        Ok("OpenAI-compatible".into())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
