//! What every HTTP transport (Streamable HTTP, legacy HTTP+SSE, the REST dialect) shares: a
//! client that follows redirects only within the server's own origin (a redirect elsewhere would
//! carry the configured headers, often credentials, to another host, and would bypass the SSE
//! endpoint's same-origin check), and bodies read with a cap, like stdio's.

use std::time::Duration;

use futures::StreamExt;

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
