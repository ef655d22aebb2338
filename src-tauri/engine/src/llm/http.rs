//! What both providers' clients share on the HTTP side: the client, sending a streaming request,
//! and turning HTTP failures into [`LlmError`]s. A leaf: it names no provider.

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{LlmError, StreamTimeouts};

/// The HTTP client of both providers: a short connect timeout; a read timeout only as a backstop
/// behind the stream's own limits ([`StreamTimeouts`], which give the clearer error).
pub(super) fn http_client(timeouts: StreamTimeouts) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .read_timeout(timeouts.first_byte.max(timeouts.idle) + Duration::from_secs(60))
        .build()
        .expect("reqwest client")
}

/// Sends a streaming request: its answer (the status and headers), unless `cancel` fires first
/// (`None`) or nothing comes within `timeouts.first_byte`.
pub(super) async fn send_streaming(
    rb: reqwest::RequestBuilder,
    base: &str,
    timeouts: StreamTimeouts,
    cancel: &CancellationToken,
) -> Result<Option<reqwest::Response>, LlmError> {
    tokio::select! {
        r = tokio::time::timeout(timeouts.first_byte, rb.send()) => match r {
            Ok(r) => r.map(Some).map_err(|e| send_error(base, e)),
            Err(_) => Err(LlmError::Stalled { after: timeouts.first_byte }),
        },
        _ = cancel.cancelled() => Ok(None),
    }
}

/// A request that got no answer: nothing at the URL, or the connection broke.
pub(super) fn send_error(base: &str, e: reqwest::Error) -> LlmError {
    if e.is_connect() || e.is_timeout() || e.is_request() {
        LlmError::Unreachable {
            url: base.to_string(),
            detail: root_cause(&e),
        }
    } else {
        LlmError::Protocol(root_cause(&e))
    }
}

/// An HTTP error answer becomes an error with the server's own message (`{"error": "…"}` or
/// `{"error": {"message": "…"}}`), else the body's start or the status text.
pub(super) async fn check_response(resp: reqwest::Response) -> Result<reqwest::Response, LlmError> {
    {
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = resp.text().await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| match v.get("error") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Object(o)) => {
                    o.get("message").and_then(Value::as_str).map(String::from)
                }
                _ => None,
            })
            .unwrap_or_else(|| {
                let b = body.trim();
                if b.is_empty() {
                    status.canonical_reason().unwrap_or("error").to_string()
                } else {
                    b.chars().take(300).collect()
                }
            });
        Err(LlmError::Http {
            status: status.as_u16(),
            message,
        })
    }
}

/// The innermost error of a chain: what really went wrong ("Connection refused").
pub(super) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
