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

/// Answers one JSON-RPC request the REST way; the result or error object.
async fn answer(
    http: &reqwest::Client,
    base: &str,
    headers: &reqwest::header::HeaderMap,
    method: &str,
    params: &Value,
) -> Result<Value, (i64, String)> {
    let get_json = |resp: reqwest::Response| async move {
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
    };
    let unreachable = |e: reqwest::Error| {
        (
            -32603,
            format!("cannot reach {base}: {}", super::http::describe(&e)),
        )
    };
    match method {
        "initialize" => {
            let resp = http
                .get(format!("{base}/health"))
                .headers(headers.clone())
                .send()
                .await
                .map_err(unreachable)?;
            if !resp.status().is_success() {
                return Err((-32603, format!("{base}/health answered {}", resp.status())));
            }
            Ok(json!({
                "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2024-11-05")),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": format!("REST server at {base}"), "version": "rest"},
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => {
            let resp = http
                .post(format!("{base}/mcp/v1/tools/list"))
                .headers(headers.clone())
                .json(&json!({}))
                .send()
                .await
                .map_err(unreachable)?;
            let v = get_json(resp).await?;
            let tools = v
                .get("tools")
                .cloned()
                .ok_or((-32603, "no \"tools\" in the answer".to_string()))?;
            // REST servers may omit inputSchema; MCP requires one
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
        "tools/call" => {
            let body = json!({"name": params.get("name"), "arguments": params.get("arguments").cloned().unwrap_or(json!({}))});
            let resp = http
                .post(format!("{base}/mcp/v1/tools/call"))
                .headers(headers.clone())
                .json(&body)
                .send()
                .await
                .map_err(unreachable)?;
            let v = get_json(resp).await?;
            let content = match v.get("content") {
                Some(c @ Value::Array(_)) => c.clone(),
                Some(Value::String(s)) => json!([{"type": "text", "text": s}]),
                _ => json!([{"type": "text", "text": v.to_string()}]),
            };
            Ok(
                json!({"content": content, "isError": v.get("isError").and_then(Value::as_bool).unwrap_or(false)}),
            )
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
