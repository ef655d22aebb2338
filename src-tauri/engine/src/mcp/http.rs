//! What every HTTP transport (Streamable HTTP, legacy HTTP+SSE, the REST dialect) shares: a
//! client that follows redirects only within the server's own origin (a redirect elsewhere would
//! carry the configured headers, often credentials, to another host, and would bypass the SSE
//! endpoint's same-origin check), and bodies read with a cap, like stdio's. For Streamable
//! HTTP, [`BoundedClient`]: rmcp's client with the SSE event cap the host is configured with,
//! and an answer over a cap (a JSON body over rmcp's 16 MB, an SSE event over ours) turned into
//! that request's error, which says so, instead of a closed transport.
//!
//! Caps: REST and legacy SSE bodies and events at 64 MB (`MAX_HTTP_MESSAGE`); Streamable HTTP's SSE
//! events at `HostOptions::max_http_event` (16 MB by default); the session goes on after an answer
//! over a cap. Also `SignInWanted` (a refusal that carries its challenge), and the session's own
//! GET stream, which rmcp opens from a task of its own after `notifications/initialized`, answered
//! before the first request goes (at most `STREAM_FIRST_WAIT`, 2 s).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

/// The most an HTTP server may send in one body or one event (the same as one stdio message,
/// `MAX_STDIO_MESSAGE`).
pub const MAX_HTTP_MESSAGE: usize = 64 * 1024 * 1024;

/// A server refused a request for want of a sign-in (401, or a 403 that asks for more scopes):
/// the source of our HTTP transports' refusals, so the host reads the challenge from this one
/// type whatever the transport.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{status}: a sign-in is wanted")]
pub struct SignInWanted {
    pub status: u16,
    /// Its `WWW-Authenticate` challenge, when it sent one.
    pub challenge: Option<String>,
}

/// The most a Streamable HTTP server may send in one SSE event, unless the host says otherwise
/// (`HostOptions::max_http_event`); rmcp reads a JSON body up to this size too, always.
pub const DEFAULT_MAX_HTTP_EVENT: usize = 16 * 1024 * 1024;

/// At most this many redirects, all on the origin of the first URL.
const MAX_REDIRECTS: usize = 5;

/// The client for one server: connect timeout, redirects within the origin only.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(same_origin_redirects())
        .build()
        .expect("reqwest client")
}

/// Follows a redirect only to the origin (scheme, host, port) the request started at.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(|u| u.origin());
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if first.as_ref() != Some(&attempt.url().origin()) {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(format!(
                "the server redirected to another origin ({to}); refused, so the configured headers do not go there"
            ))
        } else {
            attempt.follow()
        }
    })
}

/// A body read whole, unless it is longer than `max` bytes.
pub async fn read_capped(resp: reqwest::Response, max: usize) -> Result<Vec<u8>, String> {
    if let Some(len) = resp.content_length() {
        if len as usize > max {
            return Err(too_big(max));
        }
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        if body.len() + chunk.len() > max {
            return Err(too_big(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn too_big(max: usize) -> String {
    format!(
        "the server's answer is over {} MB; refused",
        max / (1024 * 1024)
    )
}

/// The start of some text, for a log line or an error message.
pub fn cut(text: &str, chars: usize) -> String {
    let mut it = text.chars();
    let head: String = it.by_ref().take(chars).collect();
    if it.next().is_some() {
        format!("{head}… ({} bytes)", text.len())
    } else {
        head
    }
}

/// A reqwest error with its causes (reqwest's own text leaves out why, e.g. which redirect was
/// refused).
pub fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// rmcp's Streamable HTTP client on [`client`], with an SSE event cap of `max_event` bytes; an
/// answer to a request over a cap is that request's JSON-RPC error (the session goes on).
///
/// It also puts the session's own stream (the GET rmcp opens right after
/// `notifications/initialized`, from a task of its own) before the session's first request: a
/// request waits until the server has answered that GET, at most [`STREAM_FIRST_WAIT`]. Without
/// this the GET could reach the server after a request it started (a busy machine is enough),
/// and a server that sends on that stream what the request started (its questions, or the
/// answer after the request's own stream closed, as SEP-1699's resumption does) takes the late
/// GET for the client's reconnection.
#[derive(Clone)]
pub struct BoundedClient {
    pub inner: reqwest::Client,
    pub max_event: usize,
    /// true while the session's own GET is due and unanswered
    stream_due: Arc<tokio::sync::watch::Sender<bool>>,
}

/// The longest a request waits for the session's own stream to be answered.
pub const STREAM_FIRST_WAIT: Duration = Duration::from_secs(2);

impl BoundedClient {
    pub fn new(inner: reqwest::Client, max_event: usize) -> Self {
        Self {
            inner,
            max_event,
            stream_due: Arc::new(tokio::sync::watch::Sender::new(false)),
        }
    }

    /// Waits while the session's own GET is due (never longer than [`STREAM_FIRST_WAIT`], and
    /// not at all once it was answered or refused).
    async fn after_the_session_stream(&self) {
        let mut due = self.stream_due.subscribe();
        if !*due.borrow_and_update() {
            return;
        }
        let answered = tokio::time::timeout(STREAM_FIRST_WAIT, due.wait_for(|due| !*due)).await;
        if answered.is_err() {
            tracing::debug!(
                "the server did not answer the session's GET stream in time; requests go on"
            );
            self.stream_due.send_replace(false);
        }
    }
}

fn is_initialized(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Notification(n)
            if matches!(n.notification, rmcp::model::ClientNotification::InitializedNotification(_))
    )
}

type Sse = BoxStream<'static, Result<sse_stream::Sse, SseError>>;

/// What a call over the cap gets back.
pub fn over_the_cap(max: usize) -> String {
    format!(
        "The server's answer is over the {} MB Switchboard reads from a server in one message, so \
         it was not read. Ask for less (a smaller page, a narrower query).",
        max / (1024 * 1024)
    )
}

/// `id`'s JSON-RPC error saying its answer was over the cap.
fn refusal(id: &rmcp::model::RequestId, max: usize) -> Option<ServerJsonRpcMessage> {
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": over_the_cap(max)},
    }))
    .ok()
}

/// `stream`, where an event over the cap ends it with `id`'s error instead of a broken stream.
fn bounded_events(stream: Sse, id: Option<rmcp::model::RequestId>, max: usize) -> Sse {
    stream
        .scan(false, move |ended, item| {
            if *ended {
                return futures::future::ready(None);
            }
            let item = match item {
                // rmcp's own bound (its error type is private: it says so in words)
                Err(e) if e.to_string().contains("exceeded the maximum size") => {
                    let refused = id.as_ref().and_then(|id| refusal(id, max));
                    match refused.and_then(|r| serde_json::to_string(&r).ok()) {
                        Some(data) => {
                            *ended = true;
                            Ok(sse_stream::Sse {
                                event: Some("message".into()),
                                data: Some(data),
                                id: None,
                                retry: None,
                            })
                        }
                        None => Err(e),
                    }
                }
                other => other,
            };
            futures::future::ready(Some(item))
        })
        .boxed()
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<rmcp::model::RequestId> {
    match message {
        ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

impl StreamableHttpClient for BoundedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            self.max_event,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _theirs: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let id = request_id(&message);
        let opens_the_session = is_initialized(&message) && session_id.is_some();
        if !opens_the_session {
            self.after_the_session_stream().await;
        }
        let session = session_id.as_deref().map(String::from);
        let sent = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                self.max_event,
            )
            .await;
        if opens_the_session && matches!(sent, Ok(StreamableHttpPostResponse::Accepted)) {
            // rmcp opens the session's own stream next
            self.stream_due.send_replace(true);
        }
        match sent {
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                match id.as_ref().and_then(|id| refusal(id, max_size)) {
                    Some(r) => Ok(StreamableHttpPostResponse::Json(r, session)),
                    None => Err(StreamableHttpError::ResponseBodyTooLarge { max_size }),
                }
            }
            Ok(StreamableHttpPostResponse::Sse(stream, sid)) => Ok(
                StreamableHttpPostResponse::Sse(bounded_events(stream, id, self.max_event), sid),
            ),
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<reqwest::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Sse, StreamableHttpError<reqwest::Error>> {
        // the session's own stream (a resumption carries the last event's id)
        let own = last_event_id.is_none();
        let answer = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                self.max_event,
            )
            .await;
        if own {
            self.stream_due.send_replace(false);
        }
        answer
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _theirs: usize,
    ) -> Result<Sse, StreamableHttpError<reqwest::Error>> {
        self.get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }
}
