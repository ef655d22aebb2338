//! The Ollama native API (`/api/chat` NDJSON streaming, `/api/tags`, `/api/show`, `/api/version`).
//! Wire facts: shared/reference/ollama_api.md.
//!
//! Endpoints: NDJSON `/api/chat`, `/api/tags`, `/api/show`, `/api/pull` with progress,
//! `/api/delete`.

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::http::{check_response, http_client, send_error, send_streaming};
use super::ndjson::{each_line, Ended};
use super::{
    ChatReply, ChatRequest, Delta, LlmClient, LlmError, Message, ModelDetails, ModelInfo, Role,
    StreamTimeouts, ToolCall, OLLAMA_DEFAULT_CONTEXT,
};

pub const DEFAULT_URL: &str = "http://127.0.0.1:11434";

pub struct OllamaClient {
    base: String,
    http: reqwest::Client,
    timeouts: StreamTimeouts,
}

/// The base URL to use: the one from settings when set, else `OLLAMA_HOST`, else the default.
pub fn resolve_base_url(from_settings: Option<&str>, ollama_host: Option<&str>) -> String {
    if let Some(u) = from_settings.map(str::trim).filter(|u| !u.is_empty()) {
        return u.trim_end_matches('/').to_string();
    }
    match ollama_host.map(str::trim).filter(|h| !h.is_empty()) {
        Some(h) => normalize_ollama_host(h),
        None => DEFAULT_URL.to_string(),
    }
}

/// `OLLAMA_HOST` may be `host`, `host:port`, `:port`, `0.0.0.0`, or a full URL.
fn normalize_ollama_host(h: &str) -> String {
    let (scheme, rest) = match h.split_once("://") {
        Some((s, r)) => (s.to_string(), r),
        None => ("http".to_string(), h),
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || rest.starts_with('[') => {
            (host.to_string(), port.to_string())
        }
        _ => (rest.to_string(), "11434".to_string()),
    };
    let host = match host.as_str() {
        "" | "0.0.0.0" => "127.0.0.1".to_string(),
        _ => host,
    };
    format!("{scheme}://{host}:{port}")
}

impl OllamaClient {
    pub fn new(base_url: impl Into<String>) -> Self {
        let timeouts = StreamTimeouts::default();
        OllamaClient {
            base: base_url.into().trim_end_matches('/').to_string(),
            http: http_client(timeouts),
            timeouts,
        }
    }

    /// How long a streamed answer may stay silent (default: [`StreamTimeouts::default`]).
    pub fn with_timeouts(mut self, timeouts: StreamTimeouts) -> Self {
        self.http = http_client(timeouts);
        self.timeouts = timeouts;
        self
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    fn map_send_error(&self, e: reqwest::Error) -> LlmError {
        send_error(&self.base, e)
    }

    async fn check(&self, resp: reqwest::Response) -> Result<reqwest::Response, LlmError> {
        check_response(resp).await
    }

    async fn get_json(&self, path: &str) -> Result<Value, LlmError> {
        let resp = self
            .http
            .get(self.url(path))
            .send()
            .await
            .map_err(|e| self.map_send_error(e))?;
        let resp = self.check(resp).await?;
        resp.json::<Value>()
            .await
            .map_err(|e| LlmError::Protocol(e.to_string()))
    }
}

/// One line of `/api/pull`'s stream.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullProgress {
    pub status: String,
    pub digest: Option<String>,
    /// Bytes of the layer being pulled, when known.
    pub total: Option<u64>,
    pub completed: Option<u64>,
}

/// Reads one `/api/pull` line: progress, or the server's error.
pub fn parse_pull_line(line: &[u8]) -> Result<PullProgress, LlmError> {
    let v: Value = serde_json::from_slice(line).map_err(|e| {
        LlmError::Protocol(format!(
            "bad NDJSON line ({e}): {}",
            String::from_utf8_lossy(line)
        ))
    })?;
    if let Some(err) = v.get("error") {
        return Err(LlmError::Stream(
            err.as_str()
                .map(String::from)
                .unwrap_or_else(|| err.to_string()),
        ));
    }
    Ok(PullProgress {
        status: v
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        digest: v.get("digest").and_then(Value::as_str).map(String::from),
        total: v.get("total").and_then(Value::as_u64),
        completed: v.get("completed").and_then(Value::as_u64),
    })
}

impl OllamaClient {
    /// Downloads a model (`/api/pull`), reporting each progress line. Cancelling closes the
    /// connection, which stops the download; `Ok(false)` then.
    pub async fn pull(
        &self,
        model: &str,
        on_progress: &mut (dyn FnMut(PullProgress) + Send),
        cancel: &CancellationToken,
    ) -> Result<bool, LlmError> {
        // a download may verify a big file for a long while without a word: it gets the longer limit
        let patient = StreamTimeouts {
            first_byte: self.timeouts.first_byte,
            idle: self.timeouts.first_byte.max(self.timeouts.idle),
        };
        let rb = self
            .http
            .post(self.url("/api/pull"))
            .json(&json!({ "model": model, "stream": true }));
        let Some(resp) = send_streaming(rb, &self.base, patient, cancel).await? else {
            return Ok(false);
        };
        let resp = self.check(resp).await?;
        let mut last = String::new();
        let ended = each_line(resp, "the download", patient, cancel, |line| {
            let p = parse_pull_line(line)?;
            last = p.status.clone();
            on_progress(p);
            Ok(false)
        })
        .await?;
        if ended == Ended::Cancelled {
            return Ok(false);
        }
        if last == "success" {
            Ok(true)
        } else {
            Err(LlmError::Protocol(format!(
                "the download ended without success (last: \"{last}\")"
            )))
        }
    }

    /// Deletes a model (`DELETE /api/delete`).
    pub async fn delete_model(&self, model: &str) -> Result<(), LlmError> {
        let resp = self
            .http
            .delete(self.url("/api/delete"))
            .json(&json!({ "model": model }))
            .send()
            .await
            .map_err(|e| self.map_send_error(e))?;
        self.check(resp).await?;
        Ok(())
    }
}

/// The wire form of one message (its images as a list of base64 strings, on any role: a
/// tool's images go on its tool message).
pub fn message_to_wire(m: &Message) -> Value {
    let mut o = json!({ "role": m.role.as_str(), "content": m.content });
    if !m.images.is_empty() {
        o["images"] = Value::Array(m.images.iter().map(|i| json!(&*i.base64)).collect());
    }
    if let Some(t) = m.thinking.as_ref().filter(|t| !t.is_empty()) {
        o["thinking"] = json!(t);
    }
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| {
                // Ollama wants an object; arguments the model sent as a string are re-parsed,
                // and ones that never were valid JSON go back as an empty object.
                let args = match &c.arguments {
                    Value::Object(_) => c.arguments.clone(),
                    Value::String(s) => serde_json::from_str::<Value>(s)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({})),
                    _ => json!({}),
                };
                let mut call = json!({ "function": { "name": c.name, "arguments": args } });
                if let Some(id) = &c.id {
                    call["id"] = json!(id);
                }
                call
            })
            .collect();
        o["tool_calls"] = Value::Array(calls);
    }
    if m.role == Role::Tool {
        if let Some(n) = &m.tool_name {
            o["tool_name"] = json!(n);
        }
        if let Some(id) = &m.tool_call_id {
            o["tool_call_id"] = json!(id);
        }
    }
    o
}

pub fn request_to_wire(r: &ChatRequest) -> Value {
    let mut body = json!({
        "model": r.model,
        "messages": r.messages.iter().map(message_to_wire).collect::<Vec<_>>(),
        "stream": true,
    });
    let mut options = serde_json::Map::new();
    if let Some(t) = r.options.temperature {
        options.insert("temperature".into(), json!(t));
    }
    if let Some(n) = r.options.num_ctx {
        options.insert("num_ctx".into(), json!(n));
    }
    if let Some(n) = r.options.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    if let Some(schema) = &r.options.format {
        body["format"] = schema.clone();
    }
    if let Some(think) = r.options.think {
        body["think"] = json!(think);
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

/// Applies one NDJSON line of `/api/chat` to the reply being built.
fn apply_line(
    line: &[u8],
    reply: &mut ChatReply,
    on_delta: &mut (dyn FnMut(Delta) + Send),
) -> Result<bool, LlmError> {
    let v: Value = serde_json::from_slice(line).map_err(|e| {
        LlmError::Protocol(format!(
            "bad NDJSON line ({e}): {}",
            String::from_utf8_lossy(line)
        ))
    })?;
    on_delta(Delta::Raw(v.clone()));
    if let Some(err) = v.get("error") {
        let msg = err
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| err.to_string());
        return Err(LlmError::Stream(msg));
    }
    if let Some(msg) = v.get("message") {
        if let Some(t) = msg
            .get("thinking")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            reply.thinking.push_str(t);
            on_delta(Delta::Thinking(t.to_string()));
        }
        if let Some(t) = msg
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            reply.content.push_str(t);
            on_delta(Delta::Text(t.to_string()));
        }
        if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
            for c in calls {
                let f = c.get("function").unwrap_or(c);
                let call = ToolCall {
                    id: c.get("id").and_then(Value::as_str).map(String::from),
                    name: f
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    arguments: f
                        .get("arguments")
                        .cloned()
                        .map(super::arguments_decoded)
                        .unwrap_or_else(|| json!({})),
                    written: None,
                };
                reply.tool_calls.push(call.clone());
                on_delta(Delta::ToolCall(call));
            }
        }
    }
    if v.get("done").and_then(Value::as_bool) == Some(true) {
        reply.done_reason = v
            .get("done_reason")
            .and_then(Value::as_str)
            .map(String::from);
        reply.prompt_tokens = v
            .get("prompt_eval_count")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        return Ok(true);
    }
    Ok(false)
}

#[async_trait]
impl LlmClient for OllamaClient {
    fn base_url(&self) -> &str {
        &self.base
    }

    fn request_body(&self, request: &ChatRequest) -> Value {
        request_to_wire(request)
    }

    fn sets_context(&self) -> bool {
        true
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn FnMut(Delta) + Send),
        cancel: &CancellationToken,
    ) -> Result<ChatReply, LlmError> {
        let mut reply = ChatReply::default();
        let rb = self
            .http
            .post(self.url("/api/chat"))
            .json(&request_to_wire(request));
        let Some(resp) = send_streaming(rb, &self.base, self.timeouts, cancel).await? else {
            reply.stopped = true;
            return Ok(reply);
        };
        let resp = self.check(resp).await?;
        match each_line(resp, "the reply", self.timeouts, cancel, |line| {
            apply_line(line, &mut reply, on_delta)
        })
        .await?
        {
            Ended::Done => return Ok(reply),
            Ended::Cancelled => {
                reply.stopped = true;
                return Ok(reply);
            }
            Ended::Closed => {}
        }
        Err(LlmError::Protocol(
            "the stream ended before the reply was done".into(),
        ))
    }

    async fn list_models(&self) -> Result<Vec<ModelInfo>, LlmError> {
        let v = self.get_json("/api/tags").await?;
        let models = v
            .get("models")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(models
            .iter()
            .filter_map(|m| {
                let name = m
                    .get("name")
                    .or_else(|| m.get("model"))?
                    .as_str()?
                    .to_string();
                let details = m.get("details");
                let d = |k: &str| {
                    details
                        .and_then(|d| d.get(k))
                        .and_then(Value::as_str)
                        .map(String::from)
                };
                Some(ModelInfo {
                    name,
                    size: m.get("size").and_then(Value::as_u64).unwrap_or(0),
                    parameter_size: d("parameter_size"),
                    family: d("family"),
                })
            })
            .collect())
    }

    async fn model_details(&self, model: &str) -> Result<ModelDetails, LlmError> {
        let resp = self
            .http
            .post(self.url("/api/show"))
            .json(&json!({ "model": model }))
            .send()
            .await
            .map_err(|e| self.map_send_error(e))?;
        let v: Value = self
            .check(resp)
            .await?
            .json()
            .await
            .map_err(|e| LlmError::Protocol(e.to_string()))?;
        Ok(show_details(&v))
    }

    async fn version(&self) -> Result<String, LlmError> {
        let v = self.get_json("/api/version").await?;
        v.get("version")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| LlmError::Protocol("no version in /api/version".into()))
    }
}

/// Capabilities and context from an `/api/show` answer: `model_info` has the trained context as
/// `<architecture>.context_length`; `parameters` (Modelfile lines) may set `num_ctx`.
fn show_details(v: &Value) -> ModelDetails {
    let capabilities: Vec<String> = v
        .get("capabilities")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let context_length = v
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, n)| n.as_u64())
        })
        .map(|n| n.min(u32::MAX as u64) as u32);
    let num_ctx = v
        .get("parameters")
        .and_then(Value::as_str)
        .into_iter()
        .flat_map(str::lines)
        .find_map(|l| {
            let mut parts = l.split_whitespace();
            (parts.next() == Some("num_ctx"))
                .then(|| parts.next().and_then(|n| n.parse::<u32>().ok()))
                .flatten()
        });
    let default_context = num_ctx.or_else(|| context_length.map(|n| n.min(OLLAMA_DEFAULT_CONTEXT)));
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    // a server that lists capabilities says whether `vision` is among them
    let vision = (!capabilities.is_empty()).then(|| capabilities.iter().any(|c| c == "vision"));
    ModelDetails {
        capabilities,
        context_length,
        default_context,
        template: text(v.get("template")),
        family: text(v.get("details").and_then(|d| d.get("family"))),
        vision,
    }
}

#[cfg(test)]
mod tests;
