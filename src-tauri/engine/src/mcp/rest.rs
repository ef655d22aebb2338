//! The simple REST dialect of early MCP chatbot servers, as transport `rest`:
//! `GET {base}/health`, `POST {base}/mcp/v1/tools/list` → `{"tools": […]}`,
//! `POST {base}/mcp/v1/tools/call` with `{"name", "arguments"}` → `{"content": […], "isError"}`.
//!
//! It is not JSON-RPC, so this transport speaks MCP to rmcp on one side and REST on the other:
//! `initialize` is answered after a health check, `tools/list` and `tools/call` become POSTs,
//! notifications are dropped, anything else is "method not found". The host treats a REST
//! server like any other.

use std::collections::BTreeMap;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use serde_json::{json, Value};
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RestError(String);

pub struct RestTransport {
    http: reqwest::Client,
    base: String,
    headers: reqwest::header::HeaderMap,
    replies_tx: mpsc::UnboundedSender<RxJsonRpcMessage<RoleClient>>,
    replies: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
}

impl RestTransport {
    pub fn new(base: &str, headers: &BTreeMap<String, String>) -> Result<Self, RestError> {
        let hm = super::config::header_map(headers).map_err(RestError)?;
        let http = super::http::client();
        let (replies_tx, replies) = mpsc::unbounded_channel();
        Ok(RestTransport {
            http,
            base: base.trim_end_matches('/').to_string(),
            headers: hm,
            replies_tx,
            replies,
        })
    }
}

type RpcError = (i64, String);

/// One REST server, as one request sees it.
struct Rest<'a> {
    http: &'a reqwest::Client,
    base: &'a str,
    headers: &'a reqwest::header::HeaderMap,
}

impl Rest<'_> {
    fn unreachable(&self, e: reqwest::Error) -> RpcError {
        (
            -32603,
            format!("cannot reach {}: {}", self.base, super::http::describe(&e)),
        )
    }

    /// POSTs `body` to `path` and reads the JSON answer (capped like every HTTP message).
    async fn post(&self, path: &str, body: &Value) -> Result<Value, RpcError> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .headers(self.headers.clone())
            .json(body)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        let status = resp.status();
        let body = super::http::read_capped(resp, super::http::MAX_HTTP_MESSAGE)
            .await
            .map_err(|e| (-32603, e))?;
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            return Err((
                -32603,
                format!("HTTP {status}: {}", super::http::cut(&text, 200)),
            ));
        }
        serde_json::from_str::<Value>(&text)
            .map_err(|e| (-32603, format!("the server's answer is not JSON: {e}")))
    }

    async fn initialize(&self, params: &Value) -> Result<Value, RpcError> {
        let base = self.base;
        let resp = self
            .http
            .get(format!("{base}/health"))
            .headers(self.headers.clone())
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        if !resp.status().is_success() {
            return Err((-32603, format!("{base}/health answered {}", resp.status())));
        }
        Ok(json!({
            "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2024-11-05")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": format!("REST server at {base}"), "version": "rest"},
        }))
    }
}

/// A REST `tools/list` answer as MCP's: every tool has an `inputSchema` (REST servers may
/// call it `input_schema` or `parameters`, or leave it out; MCP requires one).
fn mcp_tools(answer: &Value) -> Result<Value, RpcError> {
    let tools = answer
        .get("tools")
        .ok_or((-32603, "no \"tools\" in the answer".to_string()))?;
    let tools: Vec<Value> = tools
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut t| {
            if t.get("inputSchema").is_none() {
                t["inputSchema"] = t
                    .get("input_schema")
                    .or_else(|| t.get("parameters"))
                    .cloned()
                    .unwrap_or(json!({"type": "object"}));
            }
            t
        })
        .collect();
    Ok(json!({ "tools": tools }))
}

/// A REST `tools/call` answer as MCP's `CallToolResult`.
fn mcp_call_result(answer: &Value) -> Value {
    let content = match answer.get("content") {
        Some(c @ Value::Array(_)) => c.clone(),
        Some(Value::String(s)) => json!([{"type": "text", "text": s}]),
        _ => json!([{"type": "text", "text": answer.to_string()}]),
    };
    let is_error = answer
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    json!({"content": content, "isError": is_error})
}

/// Answers one JSON-RPC request the REST way; the result or error object.
async fn answer(
    http: &reqwest::Client,
    base: &str,
    headers: &reqwest::header::HeaderMap,
    method: &str,
    params: &Value,
) -> Result<Value, RpcError> {
    let rest = Rest {
        http,
        base,
        headers,
    };
    match method {
        "initialize" => rest.initialize(params).await,
        "ping" => Ok(json!({})),
        "tools/list" => mcp_tools(&rest.post("/mcp/v1/tools/list", &json!({})).await?),
        "tools/call" => {
            let body = json!({
                "name": params.get("name"),
                "arguments": params.get("arguments").cloned().unwrap_or(json!({})),
            });
            Ok(mcp_call_result(
                &rest.post("/mcp/v1/tools/call", &body).await?,
            ))
        }
        other => Err((
            -32601,
            format!("Method not found: {other} (REST servers only have tools)"),
        )),
    }
}

impl Transport<RoleClient> for RestTransport {
    type Error = RestError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let http = self.http.clone();
        let base = self.base.clone();
        let headers = self.headers.clone();
        let replies = self.replies_tx.clone();
        async move {
            let msg = serde_json::to_value(&item).map_err(|e| RestError(e.to_string()))?;
            let (Some(id), Some(method)) = (
                msg.get("id").cloned(),
                msg.get("method").and_then(Value::as_str).map(String::from),
            ) else {
                return Ok(()); // notifications and responses have nowhere to go
            };
            let params = msg.get("params").cloned().unwrap_or(json!({}));
            // answered in the background, so a slow call does not hold up other messages
            tokio::spawn(async move {
                let reply = match answer(&http, &base, &headers, &method, &params).await {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err((code, message)) => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                    }
                };
                match serde_json::from_value::<RxJsonRpcMessage<RoleClient>>(reply) {
                    Ok(m) => {
                        let _ = replies.send(m);
                    }
                    Err(e) => tracing::warn!("could not turn a REST answer into JSON-RPC: {e}"),
                }
            });
            Ok(())
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.replies.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.replies.close();
        Ok(())
    }
}
