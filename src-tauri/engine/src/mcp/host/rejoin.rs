//! Keeping a Streamable HTTP session while tasks run in it, and rejoining it after a restart.
//!
//! A 2025-era server binds its tasks to the HTTP session that created them (server-everything
//! does, as the spec advises), and the spec lets a client keep using a session until the server
//! ends it. So when a task starts in a session, the host keeps what it needs to use that session
//! again ([`KeptSession`]: the `Mcp-Session-Id` and what the server said at `initialize`,
//! protocol version included) in the secrets store, like a sign-in's tokens; the next run starts
//! that server in the same session, without a new `initialize`, and follows the task there.
//!
//! rmcp 3.9's Streamable HTTP client always opens with a handshake and has no way to start in a
//! given session, so [`Rejoining`] wraps the HTTP client it uses: the handshake's `initialize` is
//! answered from the kept session (no request goes out) and its `initialized` is not sent again;
//! from then on rmcp sends the kept session id on every request. When the server no longer has
//! the session (404, as the spec says; server-everything answers 400 "No valid session ID"),
//! rmcp's own recovery starts a new session, and the host knows the kept one is gone.
//! [`Rejoining`] also keeps the session open on the server while a task runs in it (and a
//! rejoined one until a task of it has been followed here: a run that does not follow tasks, the
//! command line, leaves it to the next): rmcp ends a session (`DELETE`) when its connection
//! closes, which would end its tasks with the app.
//!
//! The kept session goes to the secrets store under an id derived from the URL and the session; the
//! store's task row holds only that id. `Runtime::start_servers` hands the kept sessions of the
//! open tasks to the host (`McpHost::rejoin`) before the servers start. `HttpSession` counts the
//! tasks running in a session, so its `DELETE` is not sent while one runs: quitting (or losing) the
//! app leaves the task's session on the server. The last task of a session to end forgets it in the
//! secrets store (what a run left behind is forgotten at the next start).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, InitializeResult, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Digest;

use crate::secrets::{SecretError, Secrets};

/// What using a session again needs: where, its id, and what the server said when it began
/// (`initialize`'s result: protocol version, capabilities, server info). The id is the server's
/// key to the session: it is kept in the secrets store only, never in a view or a log.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptSession {
    pub url: String,
    pub session_id: String,
    pub initialize: Value,
}

impl std::fmt::Debug for KeptSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptSession")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl KeptSession {
    /// Its id in the secrets store (the same session of the same server: the same id).
    pub fn id(&self) -> String {
        let hash = sha2::Sha256::digest(format!("{}\n{}", self.url, self.session_id).as_bytes());
        let hex: String = hash[..12].iter().map(|b| format!("{b:02x}")).collect();
        format!("mcp-session-{hex}")
    }

    /// The server's answer to `initialize` as it was when the session began, for request `id`.
    fn answer(&self, id: RequestId) -> Result<ServerJsonRpcMessage, serde_json::Error> {
        let mut init = self.initialize.clone();
        // rmcp's peer info may lack the server's name; `initialize` requires one
        if let Some(o) = init.as_object_mut() {
            o.entry("serverInfo")
                .or_insert_with(|| serde_json::json!({"name": "", "version": ""}));
        }
        let init: InitializeResult = serde_json::from_value(init)?;
        Ok(ServerJsonRpcMessage::response(
            ServerResult::InitializeResult(init),
            id,
        ))
    }

    /// Keeps it in `secrets` (the keyring, else the 0600 file); its id.
    pub async fn keep(&self, secrets: &Secrets) -> Result<String, SecretError> {
        let id = self.id();
        let value = serde_json::to_string(self).unwrap_or_default();
        secrets
            .put_named(&id, "Switchboard: MCP session with a task", &value)
            .await?;
        Ok(id)
    }

    /// The session kept under `id`; `None` when there is none (or it cannot be read as one).
    pub async fn read(secrets: &Secrets, id: &str) -> Result<Option<KeptSession>, SecretError> {
        Ok(secrets
            .get_named(id)
            .await?
            .and_then(|text| serde_json::from_str(&text).ok()))
    }

    /// Forgets the session kept under `id` (nothing there is fine).
    pub async fn forget(secrets: &Secrets, id: &str) -> Result<(), SecretError> {
        secrets.delete_named(id).await
    }
}

/// One Streamable HTTP connection's session as the host follows it: the id in use, the kept
/// session to rejoin (until the handshake), and how many tasks run in it.
#[derive(Debug)]
pub struct HttpSession {
    url: String,
    state: Mutex<State>,
    tasks: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    /// The session id in use now (`None`: none yet, or a stateless server).
    current: Option<String>,
    /// The session to rejoin, until the handshake takes it.
    rejoin: Option<KeptSession>,
    /// The id (in the secrets store) of the session rejoined, while it is the one in use.
    rejoined: Option<String>,
    /// The handshake was answered from the kept session: its `initialized` is not sent again.
    skip_initialized: bool,
    /// The id in the secrets store of the session in use, once kept.
    kept: Option<String>,
    /// A rejoined session is not ended until one of its tasks has ended here: a run that does
    /// not follow the tasks (the command line) leaves it for the one that does.
    hold: bool,
}

impl HttpSession {
    pub fn new(url: &str, rejoin: Option<KeptSession>) -> Arc<HttpSession> {
        Arc::new(HttpSession {
            url: url.to_string(),
            state: Mutex::new(State {
                rejoin,
                ..Default::default()
            }),
            tasks: AtomicUsize::new(0),
        })
    }

    /// The session id in use now.
    pub fn current(&self) -> Option<String> {
        self.state.lock().unwrap().current.clone()
    }

    /// Whether the session kept under `id` is the one in use (it was rejoined, and the server
    /// has not ended it since).
    pub fn is_rejoined(&self, id: &str) -> bool {
        self.state.lock().unwrap().rejoined.as_deref() == Some(id)
    }

    /// The session in use as it would be kept, with the server's `initialize` answer (`peer`).
    pub fn to_keep(&self, initialize: Value) -> Option<KeptSession> {
        Some(KeptSession {
            url: self.url.clone(),
            session_id: self.current()?,
            initialize,
        })
    }

    /// Its id in the secrets store, when the session in use is kept there already.
    pub fn kept(&self) -> Option<String> {
        self.state.lock().unwrap().kept.clone()
    }

    /// No task runs in the session any more: its id in the secrets store, to forget it there.
    pub fn take_kept(&self) -> Option<String> {
        self.state.lock().unwrap().kept.take()
    }

    /// The session in use is kept in the secrets store under `id`, unless it changed meanwhile.
    pub fn set_kept(&self, session: &KeptSession, id: String) {
        let mut s = self.state.lock().unwrap();
        if s.current.as_deref() == Some(session.session_id.as_str()) {
            s.kept = Some(id);
        }
    }

    /// A task starts (or is followed again) in this session: it is not ended while it runs.
    pub fn task_started(&self) {
        self.tasks.fetch_add(1, Ordering::SeqCst);
    }

    /// A task of this session ended; `true` when it was the last one.
    pub fn task_ended(&self) -> bool {
        let last = self
            .tasks
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(1))
            })
            .is_ok_and(|before| before <= 1);
        if last {
            self.state.lock().unwrap().hold = false;
        }
        last
    }

    /// Whether the session must stay open on the server (rmcp ends it when its connection
    /// closes): a task runs in it, or it was rejoined for tasks nobody here followed yet.
    fn must_stay(&self) -> bool {
        self.tasks.load(Ordering::SeqCst) > 0 || self.state.lock().unwrap().hold
    }

    /// The handshake's `initialize` (request `id`), answered from the session to rejoin, if
    /// there is one; then that session is the one in use.
    fn answer_from_kept(&self, id: RequestId) -> Option<(ServerJsonRpcMessage, String)> {
        let mut s = self.state.lock().unwrap();
        let kept = s.rejoin.take()?;
        match kept.answer(id) {
            Ok(answer) => {
                s.current = Some(kept.session_id.clone());
                s.rejoined = Some(kept.id());
                s.kept = Some(kept.id());
                s.skip_initialized = true;
                s.hold = true;
                Some((answer, kept.session_id))
            }
            Err(e) => {
                tracing::warn!("the kept session of {} cannot be used: {e}", self.url);
                None
            }
        }
    }

    fn take_skip_initialized(&self) -> bool {
        std::mem::take(&mut self.state.lock().unwrap().skip_initialized)
    }

    /// The server gave a new session (a handshake).
    pub(super) fn began(&self, id: String) {
        let mut s = self.state.lock().unwrap();
        if s.current.as_deref() != Some(id.as_str()) {
            s.current = Some(id);
            s.rejoined = None;
            s.kept = None;
            s.hold = false;
        }
    }

    /// The server no longer has the session `id`.
    fn ended(&self, id: &str) {
        let mut s = self.state.lock().unwrap();
        if s.current.as_deref() == Some(id) {
            if s.rejoined.is_some() {
                tracing::info!("{} no longer has the session its tasks ran in", self.url);
            }
            s.rejoined = None;
            s.kept = None;
            s.hold = false;
        }
    }
}

/// Whether an error the server sent about a request in a session says that session is gone.
/// Only a 404 says so in the spec; server-everything answers 400 with `{"error": {"message":
/// "Bad Request: No valid session ID provided"}}` (no id: it is not about the request).
pub(super) fn says_session_gone(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("session")
        && [
            "no valid",
            "not found",
            "unknown",
            "invalid",
            "expired",
            "terminated",
            "does not exist",
        ]
        .iter()
        .any(|w| text.contains(w))
}

fn initialize_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(r)
            if matches!(r.request, ClientRequest::InitializeRequest(_)) =>
        {
            Some(r.id.clone())
        }
        _ => None,
    }
}

fn is_initialized(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Notification(n)
        if matches!(n.notification, ClientNotification::InitializedNotification(_)))
}

/// The HTTP client rmcp's Streamable HTTP transport uses, with the session handling above.
#[derive(Clone)]
pub struct Rejoining<C> {
    pub inner: C,
    pub session: Arc<HttpSession>,
}

type Post<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;

impl<C: StreamableHttpClient + Sync> Rejoining<C> {
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max_event: usize,
    ) -> Post<C::Error> {
        let initialize = initialize_id(&message);
        if let (Some(id), None) = (&initialize, &session_id) {
            if let Some((answer, sid)) = self.session.answer_from_kept(id.clone()) {
                return Ok(StreamableHttpPostResponse::Json(answer, Some(sid)));
            }
        }
        if is_initialized(&message) && self.session.take_skip_initialized() {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let sent = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id.clone(),
                auth,
                headers,
                max_event,
            )
            .await;
        let sent = match (sent, &session_id) {
            (Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)), Some(_))
                if e.id.is_none() && says_session_gone(&e.error.message) =>
            {
                Err(StreamableHttpError::SessionExpired)
            }
            (Err(StreamableHttpError::UnexpectedServerResponse(text)), Some(_))
                if says_session_gone(&text) =>
            {
                Err(StreamableHttpError::SessionExpired)
            }
            (sent, _) => sent,
        };
        match (&sent, &session_id) {
            (Err(StreamableHttpError::SessionExpired), Some(gone)) => self.session.ended(gone),
            (
                Ok(
                    StreamableHttpPostResponse::Json(_, Some(new))
                    | StreamableHttpPostResponse::Sse(_, Some(new)),
                ),
                None,
            ) if initialize.is_some() => self.session.began(new.clone()),
            _ => {}
        }
        sent
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Rejoining<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Post<C::Error> {
        let max =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::default()
                .max_sse_event_size;
        self.post(uri, message, session_id, auth, headers, max)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Post<C::Error> {
        self.post(uri, message, session_id, auth, headers, max_sse_event_size)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        if self.session.must_stay() {
            tracing::info!(
                "leaving the session with {} open: a task runs in it",
                self.session.url
            );
            return Ok(());
        }
        self.inner
            .delete_session(uri, session_id, auth, headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        futures::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        StreamableHttpError<C::Error>,
    > {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth, headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<
        futures::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        StreamableHttpError<C::Error>,
    > {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth,
                headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kept() -> KeptSession {
        KeptSession {
            url: "http://127.0.0.1:3101/mcp".into(),
            session_id: "b365e429-3582-4d56-a691-89fcb0ec3257".into(),
            initialize: json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": true}, "tasks": {"list": {}, "cancel": {}}},
                "serverInfo": {"name": "mcp-servers/everything", "version": "2.0.0"},
                "instructions": "Be kind."
            }),
        }
    }

    #[test]
    fn the_handshake_is_answered_from_the_kept_session_once() {
        let s = HttpSession::new("http://127.0.0.1:3101/mcp", Some(kept()));
        let (answer, sid) = s.answer_from_kept(RequestId::Number(0)).unwrap();
        assert_eq!(sid, kept().session_id);
        let v = serde_json::to_value(&answer).unwrap();
        assert_eq!(v["id"], 0);
        assert_eq!(v["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(v["result"]["serverInfo"]["name"], "mcp-servers/everything");
        assert_eq!(v["result"]["instructions"], "Be kind.");
        assert_eq!(s.current().as_deref(), Some(sid.as_str()));
        assert!(s.is_rejoined(&kept().id()));
        assert!(s.take_skip_initialized() && !s.take_skip_initialized());
        assert!(
            s.must_stay(),
            "rejoined for tasks: kept open until one ends here"
        );
        s.task_started();
        assert!(s.task_ended());
        assert!(!s.must_stay());
        // a second handshake (rmcp's recovery) goes to the server
        assert!(s.answer_from_kept(RequestId::Number(1)).is_none());
    }

    #[test]
    fn a_session_the_server_ended_is_no_longer_the_rejoined_one() {
        let s = HttpSession::new("http://127.0.0.1:3101/mcp", Some(kept()));
        s.answer_from_kept(RequestId::Number(0)).unwrap();
        s.ended("another");
        assert!(s.is_rejoined(&kept().id()), "not the one in use");
        assert!(s.must_stay());
        s.ended(&kept().session_id);
        assert!(!s.is_rejoined(&kept().id()));
        assert!(!s.must_stay(), "nothing to hold for in a new session");
        s.began("new-one".into());
        assert_eq!(s.current().as_deref(), Some("new-one"));
        assert_eq!(s.kept(), None);
    }

    #[test]
    fn peer_info_without_a_server_name_still_answers() {
        let mut k = kept();
        k.initialize.as_object_mut().unwrap().remove("serverInfo");
        assert!(k.answer(RequestId::Number(3)).is_ok());
        k.initialize = json!("not an initialize result");
        assert!(k.answer(RequestId::Number(3)).is_err());
    }

    #[test]
    fn the_ids_differ_by_session_and_server_and_debug_hides_the_session() {
        let a = kept();
        let mut b = kept();
        b.session_id = "other".into();
        let mut c = kept();
        c.url = "http://127.0.0.1:3102/mcp".into();
        assert_ne!(a.id(), b.id());
        assert_ne!(a.id(), c.id());
        assert_eq!(a.id(), kept().id());
        assert!(a.id().starts_with("mcp-session-"));
        assert!(!format!("{a:?}").contains(&a.session_id));
    }

    #[test]
    fn tasks_are_counted_and_the_last_one_says_so() {
        let s = HttpSession::new("http://x/mcp", None);
        assert!(!s.must_stay());
        s.task_started();
        s.task_started();
        assert!(s.must_stay());
        assert!(!s.task_ended());
        assert!(s.task_ended());
        assert!(s.task_ended(), "never below zero");
        assert!(!s.must_stay());
    }

    #[test]
    fn what_servers_say_about_a_gone_session() {
        for gone in [
            "Bad Request: No valid session ID provided",
            "Session not found",
            "Unknown session",
            "session expired",
        ] {
            assert!(says_session_gone(gone), "{gone}");
        }
        for other in [
            "Bad Request: Server not initialized",
            "Invalid params",
            "Task not found",
        ] {
            assert!(!says_session_gone(other), "{other}");
        }
    }
}
