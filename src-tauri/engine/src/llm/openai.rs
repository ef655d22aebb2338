//! OpenAI-compatible servers (llama.cpp's llama-server, LM Studio, vLLM, …):
//! `POST /v1/chat/completions` with `stream: true` (Server-Sent Events), `GET /v1/models`.
//!
//! Tool calls stream as fragments: the first fragment of a call has its `index`, `id` and
//! `function.name`; later ones add pieces of `function.arguments` (a JSON text) for that index.
//! They are put together here and handed on when the stream ends.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::ndjson::{each_line, Ended};
use super::ollama::{check_response, http_client, send_error, send_streaming};
#[cfg(test)]
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
        }
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

/// Messages in the OpenAI shape. Every assistant tool call gets an id (calls that came from a
/// provider without ids get `call_N`), and each tool result names the call it answers.
pub fn messages_to_wire(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut unanswered: std::collections::VecDeque<String> = Default::default();
    let mut n = 0;
    for m in messages {
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
                out.push(json!({"role": "tool", "tool_call_id": id, "content": m.content}));
            }
            role => out.push(json!({"role": role.as_str(), "content": m.content})),
        }
    }
    out
}

pub fn request_to_wire(r: &ChatRequest) -> Value {
    let mut body = json!({
        "model": r.model,
        "messages": messages_to_wire(&r.messages),
        "stream": true,
    });
    if let Some(t) = r.options.temperature {
        body["temperature"] = json!(t);
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
                serde_json::from_str(&p.arguments).unwrap_or(Value::String(p.arguments))
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

#[async_trait]
impl LlmClient for OpenAiClient {
    fn base_url(&self) -> &str {
        &self.base
    }

    fn request_body(&self, request: &ChatRequest) -> Value {
        request_to_wire(request)
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut (dyn FnMut(Delta) + Send),
        cancel: &CancellationToken,
    ) -> Result<ChatReply, LlmError> {
        let mut reply = ChatReply::default();
        let rb = self
            .authorized(self.http.post(self.url("/chat/completions")))
            .await?
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&request_to_wire(request));
        let Some(resp) = send_streaming(rb, &self.base, self.timeouts, cancel).await? else {
            reply.stopped = true;
            return Ok(reply);
        };
        let resp = check_response(resp).await?;
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
    /// its context (`/props`: `default_generation_settings.n_ctx`); others: unknown.
    async fn model_details(&self, _model: &str) -> Result<ModelDetails, LlmError> {
        let props = self
            .authorized(self.http.get(format!("{}/props", self.base)))
            .await?
            .timeout(std::time::Duration::from_secs(5))
            .send()
            .await;
        let n_ctx = match props {
            Ok(r) if r.status().is_success() => r
                .json::<Value>()
                .await
                .ok()
                .and_then(|v| v["default_generation_settings"]["n_ctx"].as_u64())
                .map(|n| n.min(u32::MAX as u64) as u32),
            _ => None,
        };
        Ok(ModelDetails {
            capabilities: vec![],
            context_length: n_ctx,
            default_context: n_ctx,
        })
    }

    async fn version(&self) -> Result<String, LlmError> {
        self.list_models().await?;
        Ok("OpenAI-compatible".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> (Result<ChatReply, LlmError>, Vec<Delta>) {
        let mut deltas = Vec::new();
        let mut on = |d: Delta| {
            if !matches!(d, Delta::Raw(_)) {
                deltas.push(d)
            }
        };
        let mut reply = ChatReply::default();
        let mut state = SseState::default();
        let mut splitter = NdjsonSplitter::new();
        let text: String = lines.iter().map(|l| format!("{l}\n\n")).collect();
        // one byte at a time: every line and every UTF-8 character is split somewhere
        let mut result = Ok(());
        'outer: for b in text.as_bytes() {
            for line in splitter.push(std::slice::from_ref(b)) {
                match state.apply_line(&line, &mut reply, &mut on) {
                    Ok(true) => break 'outer,
                    Ok(false) => {}
                    Err(e) => {
                        result = Err(e);
                        break 'outer;
                    }
                }
            }
        }
        let r = result
            .and_then(|_| state.finish(&mut reply, &mut on))
            .map(|_| reply);
        (r, deltas)
    }

    #[test]
    fn text_split_anywhere_and_fragmented_tool_calls_come_together() {
        let (r, deltas) = feed(&[
            ": keep-alive",
            r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Ça "}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"content":"va — 👍"}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"calculator__add","arguments":""}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"files__read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": 2,"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"b\": 40}"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\": \"é.txt\"}"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "data: [DONE]",
        ]);
        let r = r.unwrap();
        assert_eq!(r.content, "Ça va — 👍");
        assert_eq!(r.done_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].id.as_deref(), Some("call_a"));
        assert_eq!(r.tool_calls[0].name, "calculator__add");
        assert_eq!(r.tool_calls[0].arguments, json!({"a": 2, "b": 40}));
        assert_eq!(r.tool_calls[1].arguments, json!({"path": "é.txt"}));
        let texts: Vec<&Delta> = deltas
            .iter()
            .filter(|d| matches!(d, Delta::Text(_)))
            .collect();
        assert_eq!(texts.len(), 2);
    }

    #[test]
    fn reasoning_errors_bad_arguments_and_cut_streams() {
        let (r, deltas) = feed(&[
            r#"data: {"choices":[{"delta":{"reasoning_content":"Hmm."}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"t","arguments":"{broken"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let r = r.unwrap();
        assert_eq!(r.thinking, "Hmm.");
        assert!(matches!(deltas[0], Delta::Thinking(_)));
        assert_eq!(
            r.tool_calls[0].arguments,
            json!("{broken"),
            "kept as text for the loop to report"
        );
        let (r, _) =
            feed(&[r#"data: {"error":{"message":"model crashed","type":"server_error"}}"#]);
        assert!(matches!(r, Err(LlmError::Stream(m)) if m == "model crashed"));
        let (r, _) = feed(&[r#"data: {"choices":[{"delta":{"content":"half"}}]}"#]);
        assert!(
            matches!(r, Err(LlmError::Protocol(_))),
            "no finish_reason, no [DONE]"
        );
    }

    #[test]
    fn messages_get_ids_that_pair_calls_with_results() {
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![
            ToolCall {
                id: None,
                name: "x__a".into(),
                arguments: json!({"q": 1}),
                written: None,
            },
            ToolCall {
                id: Some("own".into()),
                name: "x__b".into(),
                arguments: json!("{\"q\": 2}"),
                written: None,
            },
        ];
        let t1 = Message::new(Role::Tool, "r1");
        let mut t2 = Message::new(Role::Tool, "r2");
        t2.tool_call_id = Some("own".into());
        let wire = messages_to_wire(&[Message::new(Role::User, "hi"), a, t1, t2]);
        assert_eq!(wire[1]["tool_calls"][0]["id"], "call_1");
        assert_eq!(
            wire[1]["tool_calls"][0]["function"]["arguments"],
            "{\"q\":1}"
        );
        assert_eq!(
            wire[1]["tool_calls"][1]["function"]["arguments"],
            "{\"q\": 2}"
        );
        // a model's broken arguments (as a real small model sent them) go back as {}
        let mut broken = Message::new(Role::Assistant, "");
        broken.tool_calls = vec![ToolCall {
            id: Some("b".into()),
            name: "x__c".into(),
            arguments: json!("{\"x\":2"),
            written: None,
        }];
        assert_eq!(
            messages_to_wire(&[broken])[0]["tool_calls"][0]["function"]["arguments"],
            "{}"
        );
        assert_eq!(wire[1]["content"], Value::Null);
        assert_eq!(
            wire[2],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "r1"})
        );
        assert_eq!(wire[3]["tool_call_id"], "own");
    }

    #[test]
    fn the_base_url_may_end_in_v1() {
        assert_eq!(
            OpenAiClient::new("http://h:8080/v1/", None).url("/models"),
            "http://h:8080/v1/models"
        );
        assert_eq!(
            OpenAiClient::new("http://h:8080", None).url("/models"),
            "http://h:8080/v1/models"
        );
    }
}

/// Properties of the SSE parser: it never panics on any input; where the bytes are cut changes
/// nothing; what the events carry comes out whole (text, reasoning, tool-call arguments put
/// together from fragments).
#[cfg(test)]
mod props {
    use super::*;
    use crate::llm::ndjson::props::cut;
    use proptest::prelude::*;

    /// Feeds `chunks` through the splitter and the parser as `chat` does: the reply (or the
    /// error, as text) and every delta but the raw copies.
    fn run(chunks: &[Vec<u8>]) -> (Result<ChatReply, String>, Vec<Delta>) {
        let mut deltas = Vec::new();
        let mut on = |d: Delta| {
            if !matches!(d, Delta::Raw(_)) {
                deltas.push(d)
            }
        };
        let mut reply = ChatReply::default();
        let mut state = SseState::default();
        let mut splitter = NdjsonSplitter::new();
        let mut result = Ok(());
        let lines = chunks
            .iter()
            .flat_map(|c| splitter.push(c))
            .collect::<Vec<_>>()
            .into_iter()
            .chain(splitter.finish());
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
            .map(|_| reply)
            .map_err(|e| e.to_string());
        (r, deltas)
    }

    #[derive(Debug, Clone)]
    enum Piece {
        Text(String),
        Reasoning(String),
        /// The next fragment of call `n`'s arguments.
        Args(usize),
        Comment(String),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            4 => "\\PC{1,12}".prop_map(Piece::Text),
            1 => "[a-z \n]{1,12}".prop_map(Piece::Reasoning),
            3 => (0usize..3).prop_map(Piece::Args),
            1 => "[ -~]{0,10}".prop_map(Piece::Comment),
        ]
    }

    fn event(delta: Value, finish: Option<&str>) -> String {
        let v = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            "object": "chat.completion.chunk"});
        format!("data: {v}")
    }

    /// A stream as llama-server would send it, and what it should come to: the text, the
    /// reasoning, the calls (name, arguments).
    #[allow(clippy::type_complexity)]
    fn stream(
        pieces: &[Piece],
        args: &[(String, i64)],
        crlf: bool,
    ) -> (Vec<u8>, String, String, Vec<(String, Value)>) {
        let mut lines = Vec::new();
        let (mut text, mut thinking) = (String::new(), String::new());
        let objects: Vec<Value> = args
            .iter()
            .map(|(s, n)| json!({"s": s, "n": n, "nested": {"list": [n, s]}}))
            .collect();
        // each call's arguments as text, in as many fragments as the pieces ask for
        let mut rest: Vec<Vec<char>> = objects
            .iter()
            .map(|o| o.to_string().chars().collect())
            .collect();
        for (i, _) in objects.iter().enumerate() {
            lines.push(event(
                json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                    "function": {"name": format!("tool_{i}"), "arguments": ""}}]}),
                None,
            ));
        }
        for p in pieces {
            match p {
                Piece::Text(t) => {
                    text.push_str(t);
                    lines.push(event(json!({"content": t}), None));
                }
                Piece::Reasoning(t) => {
                    thinking.push_str(t);
                    lines.push(event(json!({"reasoning_content": t}), None));
                }
                Piece::Args(n) if *n < rest.len() && !rest[*n].is_empty() => {
                    let take = rest[*n].len().div_ceil(3);
                    let fragment: String = rest[*n].drain(..take).collect();
                    lines.push(event(
                        json!({"tool_calls": [{"index": n, "function": {"arguments": fragment}}]}),
                        None,
                    ));
                }
                Piece::Args(_) => {}
                Piece::Comment(c) => lines.push(format!(": {c}")),
            }
        }
        for (n, r) in rest.iter().enumerate() {
            if !r.is_empty() {
                let fragment: String = r.iter().collect();
                lines.push(event(
                    json!({"tool_calls": [{"index": n, "function": {"arguments": fragment}}]}),
                    None,
                ));
            }
        }
        lines.push(event(json!({}), Some("stop")));
        lines.push("data: [DONE]".into());
        let end = if crlf { "\r\n\r\n" } else { "\n\n" };
        let bytes = lines
            .iter()
            .map(|l| format!("{l}{end}"))
            .collect::<String>()
            .into_bytes();
        let calls = objects
            .into_iter()
            .enumerate()
            .map(|(i, o)| (format!("tool_{i}"), o))
            .collect();
        (bytes, text, thinking, calls)
    }

    proptest! {
        #[test]
        fn never_panics(
            lines in prop::collection::vec(
                prop_oneof![
                    any::<Vec<u8>>(),
                    "data: \\PC{0,40}".prop_map(String::into_bytes),
                    "data: \\{\"choices\": \\[\\{\"delta\": [ -~]{0,40}".prop_map(String::into_bytes),
                ],
                0..10,
            ),
        ) {
            let mut reply = ChatReply::default();
            let mut state = SseState::default();
            let mut on = |_: Delta| {};
            for l in &lines {
                if !matches!(state.apply_line(l, &mut reply, &mut on), Ok(false)) {
                    break;
                }
            }
            let _ = state.finish(&mut reply, &mut on);
        }

        #[test]
        fn any_split_gives_the_same_events_and_the_whole_reply(
            pieces in prop::collection::vec(piece(), 0..25),
            args in prop::collection::vec(("\\PC{0,10}", any::<i64>()), 0..3),
            crlf in any::<bool>(),
            at in prop::collection::vec(any::<usize>(), 0..25),
        ) {
            let (bytes, text, thinking, calls) = stream(&pieces, &args, crlf);
            let (whole, whole_deltas) = run(std::slice::from_ref(&bytes));
            let reply = whole.clone().unwrap();
            prop_assert_eq!(&reply.content, &text);
            prop_assert_eq!(&reply.thinking, &thinking);
            prop_assert_eq!(reply.done_reason.as_deref(), Some("stop"));
            let got: Vec<(String, Value)> = reply
                .tool_calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect();
            prop_assert_eq!(got, calls);
            // cut anywhere (inside a line, a UTF-8 character, the blank line between events)
            let (split, split_deltas) = run(&cut(&bytes, &at));
            prop_assert_eq!(split, whole);
            prop_assert_eq!(split_deltas, whole_deltas);
        }
    }
}
