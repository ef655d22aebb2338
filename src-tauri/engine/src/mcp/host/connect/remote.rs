//! Reaching a server at a URL: Streamable HTTP (rmcp's client: session id, protocol-version
//! header, the GET stream, re-initialize on an expired session), legacy HTTP+SSE and the REST
//! dialect (our own rmcp transports), signed in when a sign-in is kept for it. No process to
//! watch: the session lives until it is stopped.
//!
//! One `serve_*` per transport, signed in when a sign-in is kept, then the attempt's outcome.
//! Headers at a plain `http://` address of another computer are refused first
//! (`config::plain_http_headers_refusal`, which `config/validate.rs` also applies when a server is
//! saved). A transport that signs in makes its refusals carry `http::SignInWanted`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::transport::AuthClient;
use rmcp::{ClientServiceExt, RoleClient, ServiceExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::super::handler::{Handler, Listing};
use super::super::rejoin::{HttpSession, Rejoining};
use super::super::state::SessionAuth;
use super::super::state::{Catalog, Session, Step};
use super::{
    failed, lifecycle, session_of, with_catalog, Attempt, Connected, Refused, Target, Values,
};
use crate::mcp::config::{header_map, Transport};
use crate::mcp::{rest, sse};

/// A server that answered the handshake, and its catalog (or why not, in words).
type Started = Result<(RunningService<RoleClient, Handler>, Catalog), String>;

/// What an attempt learns on the way, for its outcome and its session.
struct Learned {
    /// The step it is at (the one that failed, if it does).
    step: Mutex<Step>,
    /// A refusal that wants a sign-in.
    refused: Refused,
    /// Where a signed-in session's tokens come from.
    auth: Mutex<Option<SessionAuth>>,
    /// A Streamable HTTP server's session.
    http: Mutex<Option<Arc<HttpSession>>>,
}

/// Streamable HTTP, legacy HTTP+SSE or the REST dialect, by the server's transport, through the
/// handshake and the first listing; `resolved` gets the URL.
pub(super) async fn remote(
    t: &Target<'_>,
    values: &Values,
    discover: bool,
    cancel: &CancellationToken,
    resolved: &mut Option<String>,
) -> Attempt {
    let transport = t.config.transport();
    let discover = discover && transport.info().discovers;
    let url = t.config.url.clone().unwrap_or_default();
    *resolved = Some(url.clone());
    // a config written by hand is checked here too: secret headers never go over plain http
    // to another computer
    if let Some(why) =
        crate::mcp::config::plain_http_headers_refusal(&url, !values.headers.is_empty())
    {
        return failed(Step::Connecting, why);
    }
    let headers: HashMap<http::HeaderName, http::HeaderValue> = match header_map(&values.headers) {
        Ok(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Err(e) => return failed(Step::Connecting, e),
    };
    let (tx, listings) = mpsc::unbounded_channel();
    let handler = t.handler(tx);
    let learned = Learned {
        step: Mutex::new(Step::Handshake),
        refused: Mutex::new(None),
        auth: Mutex::new(None),
        http: Mutex::new(None),
    };
    let init = tokio::time::timeout(t.start_timeout, async {
        let running = match transport {
            Transport::Rest => serve_rest(handler, &url, values).await?,
            Transport::Sse => serve_sse(t, handler, &url, values, &learned).await?,
            _ => serve_streamable(t, handler, &url, headers, discover, &learned).await?,
        };
        with_catalog(running, &learned.step, t.name, &learned.refused).await
    });
    let init = tokio::select! {
        r = init => r,
        _ = cancel.cancelled() => return Attempt::Cancelled,
    };
    outcome(t, &url, discover, init, learned, listings)
}

/// What the attempt came to: connected (with its sign-in and HTTP session), wanting a sign-in,
/// to be tried again with the 2025 handshake, or failed at its step.
fn outcome(
    t: &Target<'_>,
    url: &str,
    discover: bool,
    init: Result<Started, tokio::time::error::Elapsed>,
    learned: Learned,
    listings: mpsc::UnboundedReceiver<Listing>,
) -> Attempt {
    let step = *learned.step.lock().unwrap();
    if let (Ok(Err(e)), Some(challenge)) = (&init, learned.refused.into_inner().unwrap()) {
        t.log.push(format!("[switchboard] {e}"));
        return Attempt::NeedsSignIn(challenge);
    }
    match init {
        Ok(Ok((running, catalog))) => Attempt::Connected(Box::new(Connected {
            session: Session {
                auth: learned.auth.into_inner().unwrap(),
                http: learned.http.into_inner().unwrap(),
                ..session_of(&running, None, None, None)
            },
            running,
            catalog,
            listings,
        })),
        // a 2025-only server that answered the probe with something else than an error
        Ok(Err(e)) if discover && step == Step::Handshake => {
            t.log.push(format!(
                "[switchboard] {e}; connecting again with the 2025 initialize handshake"
            ));
            Attempt::RetryLegacy
        }
        Ok(Err(e)) => failed(step, e),
        Err(_) => failed(
            step,
            format!(
                "no answer from {url} within {} s",
                t.start_timeout.as_secs()
            ),
        ),
    }
}

/// The handshake with `url` failed: why, in words.
fn handshake_failed(url: &str, e: impl std::fmt::Display) -> String {
    format!("the MCP handshake with {url} failed: {e}")
}

/// The REST dialect: our transport, then the handshake.
async fn serve_rest(
    handler: Handler,
    url: &str,
    values: &Values,
) -> Result<RunningService<RoleClient, Handler>, String> {
    let transport = rest::RestTransport::new(url, &values.headers).map_err(|e| e.to_string())?;
    handler
        .serve(transport)
        .await
        .map_err(|e| handshake_failed(url, e.to_string()))
}

/// Legacy HTTP+SSE: the event stream opened (signed in when a sign-in is kept), then the
/// handshake over its POSTs; a refusal that wants a sign-in is noted.
async fn serve_sse(
    t: &Target<'_>,
    handler: Handler,
    url: &str,
    values: &Values,
    learned: &Learned,
) -> Result<RunningService<RoleClient, Handler>, String> {
    *learned.step.lock().unwrap() = Step::OpeningStream;
    // signed in: tokens on every request, refreshed as they expire
    let session_auth = match &t.keep {
        Some(keep) => crate::mcp::oauth::restore(url, keep)
            .await
            .map_err(|e| e.to_string())?
            .map(|m| std::sync::Arc::new(tokio::sync::Mutex::new(m))),
        None => None,
    };
    *learned.auth.lock().unwrap() = session_auth.clone();
    let transport =
        sse::LegacySseTransport::connect(url, &values.headers, t.start_timeout, session_auth)
            .await
            .map_err(|e| {
                if let Some(challenge) = super::super::sign_in::challenge_of(&e) {
                    *learned.refused.lock().unwrap() = Some(Some(challenge));
                }
                e.to_string()
            })?;
    *learned.step.lock().unwrap() = Step::Handshake;
    handler.serve(transport).await.map_err(|e| {
        // the stream opened, but its POSTs are refused
        if let Some(challenge) = super::super::sign_in::challenge_of(&e) {
            *learned.refused.lock().unwrap() = Some(Some(challenge));
        }
        handshake_failed(url, e.to_string())
    })
}

/// Streamable HTTP through rmcp's client, its events bounded, signed in when a sign-in is kept;
/// a kept session is rejoined as it was (no discovery, no new handshake). A refusal that wants a
/// sign-in is noted.
async fn serve_streamable(
    t: &Target<'_>,
    handler: Handler,
    url: &str,
    headers: HashMap<http::HeaderName, http::HeaderValue>,
    discover: bool,
    learned: &Learned,
) -> Result<RunningService<RoleClient, Handler>, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(headers)
        .max_sse_event_size(t.max_http_event);
    let bounded =
        crate::mcp::http::BoundedClient::new(crate::mcp::http::client(), t.max_http_event);
    // signed in: tokens on every request, refreshed as they expire
    let manager = match &t.keep {
        Some(keep) => crate::mcp::oauth::restore(url, keep)
            .await
            .map_err(|e| e.to_string())?,
        None => None,
    };
    // a kept session is rejoined as it was: no discovery, no new handshake
    let rejoin = t.rejoin.clone().filter(|k| k.url == url);
    let lifecycle = match rejoin {
        Some(_) => lifecycle(false),
        None => lifecycle(discover),
    };
    let session = HttpSession::new(url, rejoin);
    *learned.http.lock().unwrap() = Some(session.clone());
    let started = match manager {
        Some(m) => {
            let client = AuthClient::new(bounded, m);
            *learned.auth.lock().unwrap() = Some(client.auth_manager.clone());
            let client = Rejoining {
                inner: client,
                session,
            };
            let transport = StreamableHttpClientTransport::with_client(client, config);
            handler.serve_with_lifecycle(transport, lifecycle).await
        }
        None => {
            let client = Rejoining {
                inner: bounded,
                session,
            };
            let transport = StreamableHttpClientTransport::with_client(client, config);
            handler.serve_with_lifecycle(transport, lifecycle).await
        }
    };
    started.map_err(|e| {
        if let Some(challenge) = e.auth_challenge() {
            *learned.refused.lock().unwrap() = Some(Some(challenge.to_string()));
        } else if e.is_authorization_required() {
            *learned.refused.lock().unwrap() = Some(None);
        }
        handshake_failed(url, e.to_string())
    })
}
