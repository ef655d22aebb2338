//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp does not have: `GET {url}` opens an
//! event stream whose first `endpoint` event names where to POST messages; replies and server
//! messages come back as `message` events on the stream.
//!
//! A signed-in SSE server's access token goes with the stream and every POST, read fresh each time,
//! so a refresh or a new sign-in takes effect at once; its 401/403 carries the challenge as
//! `http::SignInWanted`.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::sync::{mpsc, oneshot};

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("cannot reach {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("{url} answered {status}{}", if .body.is_empty() { String::new() } else { format!(": {}", .body) })]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    /// 401 or 403: the server wants a sign-in (or more than the one it has).
    #[error("{url} answered {}: it wants a sign-in", .wanted.status)]
    Unauthorized {
        url: String,
        #[source]
        wanted: super::http::SignInWanted,
    },
    #[error("{0}")]
    Protocol(String),
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// Turns a byte stream into events. Lines are split at the byte level (a UTF-8 character split
/// across chunks survives); blank lines end an event; comments and ids are ignored.
pub struct EventParser {
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no newline (so a long line is scanned once).
    scanned: usize,
    event: String,
    data: Vec<String>,
    /// Bytes of `data` so far.
    data_len: usize,
    /// An event (or a line) grew past `limit`.
    too_big: bool,
    limit: usize,
}

impl Default for EventParser {
    fn default() -> Self {
        EventParser::with_limit(super::http::MAX_HTTP_MESSAGE)
    }
}

impl EventParser {
    /// A parser that gives up on an event (or a line) longer than `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        EventParser {
            buf: Vec::new(),
            scanned: 0,
            event: String::new(),
            data: Vec::new(),
            data_len: 0,
            too_big: false,
            limit,
        }
    }

    /// Whether the stream sent an event longer than the cap (the stream should be closed).
    pub fn too_big(&self) -> bool {
        self.too_big
    }

    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        if self.too_big {
            return out;
        }
        self.buf.extend_from_slice(chunk);
        while let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
            let pos = self.scanned + pos;
            self.scanned = 0;
            let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if line.is_empty() {
                if !self.data.is_empty() || !self.event.is_empty() {
                    out.push(Event {
                        event: if self.event.is_empty() {
                            "message".into()
                        } else {
                            std::mem::take(&mut self.event)
                        },
                        data: std::mem::take(&mut self.data).join("\n"),
                    });
                    self.event.clear();
                    self.data_len = 0;
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "event" => self.event = value.to_string(),
                "data" => {
                    self.data_len += value.len() + 1;
                    self.data.push(value.to_string());
                }
                _ => {}
            }
        }
        self.scanned = self.buf.len();
        if self.buf.len() + self.data_len > self.limit {
            self.too_big = true;
            self.buf = Vec::new();
            self.data = Vec::new();
        }
        out
    }
}

/// The response when its status is a success; otherwise the status and the start of the body.
async fn success(resp: reqwest::Response, url: &str) -> Result<reqwest::Response, SseError> {
    if resp.status().is_success() {
        return Ok(resp);
    }
    let status = resp.status().as_u16();
    let challenge = resp
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    // 401, or a 403 that asks for more scopes: a sign-in (other 403s are the server's answer)
    let wants_scopes = challenge
        .as_deref()
        .is_some_and(|c| c.contains("insufficient_scope"));
    if status == 401 || (status == 403 && wants_scopes) {
        return Err(SseError::Unauthorized {
            url: url.into(),
            wanted: super::http::SignInWanted { status, challenge },
        });
    }
    let body = super::http::read_capped(resp, 64 * 1024)
        .await
        .map(|b| super::http::cut(&String::from_utf8_lossy(&b), 200))
        .unwrap_or_default();
    Err(SseError::Status {
        url: url.into(),
        status,
        body,
    })
}

/// A signed-in server's tokens: the access token is read (and refreshed when it is about to
/// expire) before each request; a new sign-in swaps a new manager in.
pub type Auth = std::sync::Arc<tokio::sync::Mutex<rmcp::transport::auth::AuthorizationManager>>;

/// `headers` with the current access token from `auth` (when signed in).
async fn authorized(
    mut headers: reqwest::header::HeaderMap,
    auth: Option<&Auth>,
    url: &str,
) -> Result<reqwest::header::HeaderMap, SseError> {
    if let Some(auth) = auth {
        use rmcp::transport::auth::AuthError;
        let token = auth
            .lock()
            .await
            .get_access_token()
            .await
            .map_err(|e| match e {
                // no tokens, or the authorization server no longer takes them: a sign-in
                AuthError::AuthorizationRequired
                | AuthError::TokenExpired
                | AuthError::TokenRefreshRejected(_) => SseError::Unauthorized {
                    url: url.into(),
                    wanted: super::http::SignInWanted {
                        status: 401,
                        challenge: None,
                    },
                },
                // anything else (its token endpoint unreachable…) is no reason to sign in again
                other => SseError::Protocol(format!("could not get an access token: {other}")),
            })?;
        let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| SseError::Protocol("the access token is not a header value".into()))?;
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(headers)
}

pub struct LegacySseTransport {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    headers: reqwest::header::HeaderMap,
    auth: Option<Auth>,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegacySseTransport {
    /// Opens the event stream and waits (up to `timeout`) for the `endpoint` event. `auth`: the
    /// server's sign-in, whose access token goes with every request.
    pub async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
        timeout: Duration,
        auth: Option<Auth>,
    ) -> Result<Self, SseError> {
        let base = reqwest::Url::parse(url)
            .map_err(|e| SseError::Protocol(format!("\"{url}\" is not a URL: {e}")))?;
        let hm = super::config::header_map(headers).map_err(SseError::Protocol)?;
        let http = super::http::client();
        let resp = http
            .get(base.clone())
            .headers(authorized(hm.clone(), auth.as_ref(), url).await?)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| SseError::Connect {
                url: url.into(),
                detail: super::http::describe(&e),
            })?;
        let resp = success(resp, url).await?;
        let (endpoint_tx, endpoint_rx) = oneshot::channel::<String>();
        let (tx, incoming) = mpsc::channel(256);
        let reader = tokio::spawn(async move {
            let mut endpoint_tx = Some(endpoint_tx);
            let mut parser = EventParser::default();
            let mut stream = resp.bytes_stream();
            while let Some(Ok(chunk)) = stream.next().await {
                let events = parser.push(&chunk);
                if parser.too_big() {
                    tracing::warn!(
                        "closing the event stream: an event over {} MB",
                        super::http::MAX_HTTP_MESSAGE / (1024 * 1024)
                    );
                    return;
                }
                for ev in events {
                    match ev.event.as_str() {
                        "endpoint" => {
                            if let Some(t) = endpoint_tx.take() {
                                let _ = t.send(ev.data.trim().to_string());
                            }
                        }
                        "message" => {
                            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&ev.data) {
                                Ok(msg) => {
                                    if tx.send(msg).await.is_err() {
                                        return;
                                    }
                                }
                                Err(e) => tracing::warn!(
                                    "ignoring an SSE message that is not JSON-RPC ({e}): {}",
                                    super::http::cut(&ev.data, 200)
                                ),
                            }
                        }
                        _ => {}
                    }
                }
            }
            // the stream ended: dropping `tx` tells the service the transport closed
        });
        let endpoint = match tokio::time::timeout(timeout, endpoint_rx).await {
            Ok(Ok(e)) => e,
            _ => {
                reader.abort();
                return Err(SseError::Protocol(format!(
                    "{url} sent no `endpoint` event (is it a legacy HTTP+SSE MCP server?)"
                )));
            }
        };
        let endpoint = base.join(&endpoint).map_err(|e| {
            SseError::Protocol(format!("the endpoint \"{endpoint}\" is not a URL: {e}"))
        })?;
        if endpoint.origin() != base.origin() {
            reader.abort();
            return Err(SseError::Protocol(format!(
                "the server sent an endpoint on another origin ({endpoint}); refused"
            )));
        }
        Ok(LegacySseTransport {
            http,
            endpoint,
            headers: hm,
            auth,
            incoming,
            reader,
        })
    }
}

impl Transport<RoleClient> for LegacySseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let http = self.http.clone();
        let endpoint = self.endpoint.clone();
        let headers = self.headers.clone();
        let auth = self.auth.clone();
        async move {
            let headers = authorized(headers, auth.as_ref(), endpoint.as_str()).await?;
            let resp = http
                .post(endpoint.clone())
                .headers(headers)
                .json(&item)
                .send()
                .await
                .map_err(|e| SseError::Connect {
                    url: endpoint.to_string(),
                    detail: super::http::describe(&e),
                })?;
            success(resp, endpoint.as_str()).await.map(drop)
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_or_a_line_over_the_limit_stops_the_parser() {
        // one line that never ends, sent in pieces
        let mut p = EventParser::with_limit(1000);
        for _ in 0..10 {
            assert!(p.push(&[b'x'; 99]).is_empty());
        }
        assert!(!p.too_big());
        p.push(&[b'x'; 20]);
        assert!(p.too_big());
        assert!(p.push(b"\n\ndata: late\n\n").is_empty(), "nothing after");
        // many short data lines that add up
        let mut p = EventParser::with_limit(1000);
        for _ in 0..30 {
            p.push(b"data: 0123456789012345678901234567890123456789\n");
        }
        assert!(p.too_big());
        // under the limit, events keep coming, and the count starts again after each
        let mut p = EventParser::with_limit(1000);
        for i in 0..100 {
            let evs = p.push(format!("data: {i:0>500}\n\n").as_bytes());
            assert_eq!(evs.len(), 1);
        }
        assert!(!p.too_big());
    }

    #[test]
    fn events_across_chunks_with_crlf_comments_and_split_utf8() {
        let raw = ": comment\r\nevent: endpoint\r\ndata: /message?sessionId=abc\r\n\r\ndata: {\"x\":\"caf\u{e9}\"}\n\nevent: message\ndata: a\ndata: b\n\n".as_bytes();
        let cut = raw.iter().position(|&b| b == 0xC3).unwrap() + 1;
        let mut p = EventParser::default();
        let mut evs = p.push(&raw[..cut]);
        evs.extend(p.push(&raw[cut..]));
        assert_eq!(
            evs,
            vec![
                Event {
                    event: "endpoint".into(),
                    data: "/message?sessionId=abc".into()
                },
                Event {
                    event: "message".into(),
                    data: "{\"x\":\"caf\u{e9}\"}".into()
                },
                Event {
                    event: "message".into(),
                    data: "a\nb".into()
                },
            ]
        );
    }
}
