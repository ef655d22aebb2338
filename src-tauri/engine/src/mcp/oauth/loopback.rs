//! Where the authorization server's answer comes back (RFC 8252 loopback redirect): a listener
//! on 127.0.0.1 on a port the system picks, for one sign-in. It takes exactly one answer, the
//! one whose `state` is this sign-in's; anything else gets an error page and is not acted on.
//! A plain request line is all it reads: no HTTP server is needed for one GET.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::SignInError;

pub const PATH: &str = "/callback";

/// The redirect URI of a restored client: only a new sign-in uses one, with its own port.
pub const REDIRECT_PLACEHOLDER: &str = "http://127.0.0.1/callback";

/// The most of a request read (its request line and headers).
const MAX_REQUEST: usize = 16 * 1024;

pub struct Listener {
    listener: TcpListener,
    port: u16,
}

/// What the authorization server sent back.
#[derive(Debug, Default)]
pub struct Answer {
    pub code: Option<String>,
    pub issuer: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl Listener {
    pub async fn bind() -> Result<Listener, SignInError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(SignInError::Listen)?;
        let port = listener.local_addr().map_err(SignInError::Listen)?.port();
        Ok(Listener { listener, port })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Waits (at most `wait`) for the answer carrying `state`.
    pub async fn answer(&self, state: &str, wait: Duration) -> Result<Answer, SignInError> {
        tokio::time::timeout(wait, async {
            loop {
                let Ok((mut conn, _)) = self.listener.accept().await else {
                    continue;
                };
                let target = match read_target(&mut conn).await {
                    Some(t) => t,
                    None => continue,
                };
                let Some(answer) = parse(&target, state) else {
                    let _ = respond(
                        &mut conn,
                        400,
                        "This is not the answer Switchboard is waiting for.",
                    )
                    .await;
                    continue;
                };
                let page = if answer.error.is_some() {
                    "Signing in did not succeed. You can close this page and return to Switchboard."
                } else {
                    "You are signed in. You can close this page and return to Switchboard."
                };
                let _ = respond(&mut conn, 200, page).await;
                return answer;
            }
        })
        .await
        .map_err(|_| SignInError::NoAnswer {
            minutes: wait.as_secs().div_ceil(60),
        })
    }
}

/// The request target of a `GET` (path and query), if the request is one.
async fn read_target(conn: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 || buf.len() + n > MAX_REQUEST {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next()?.split(' ');
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_string)
}

/// The answer in `target` when it is on our path and carries `state`.
fn parse(target: &str, state: &str) -> Option<Answer> {
    let url = url::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != PATH {
        return None;
    }
    let mut answer = Answer::default();
    let mut got_state = None;
    for (k, v) in url.query_pairs() {
        let v = Some(v.into_owned());
        match k.as_ref() {
            "code" => answer.code = v,
            "state" => got_state = v,
            "iss" => answer.issuer = v,
            "error" => answer.error = v,
            "error_description" => answer.error_description = v,
            _ => {}
        }
    }
    (got_state.as_deref() == Some(state)).then_some(answer)
}

async fn respond(conn: &mut tokio::net::TcpStream, status: u16, text: &str) -> std::io::Result<()> {
    let reason = if status == 200 { "OK" } else { "Bad Request" };
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>Switchboard</title><p style=\"font:16px system-ui;margin:3em\">{text}</p>"
    );
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nContent-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(body.as_bytes()).await?;
    conn.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_answer_with_this_sign_ins_state_counts() {
        let a = parse("/callback?code=c1&state=s1&iss=https%3A%2F%2Fas", "s1").unwrap();
        assert_eq!(a.code.as_deref(), Some("c1"));
        assert_eq!(a.issuer.as_deref(), Some("https://as"));
        assert!(parse("/callback?code=c1&state=other", "s1").is_none());
        assert!(parse("/callback?code=c1", "s1").is_none());
        assert!(parse("/elsewhere?code=c1&state=s1", "s1").is_none());
        let e = parse("/callback?error=access_denied&state=s1", "s1").unwrap();
        assert_eq!(e.error.as_deref(), Some("access_denied"));
    }

    #[tokio::test]
    async fn the_listener_ignores_strangers_and_takes_the_answer() {
        let l = Listener::bind().await.unwrap();
        let uri = l.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let wrong = format!("{uri}?code=x&state=nope");
        let right = format!("{uri}?code=good&state=s1");
        let client = reqwest::Client::new();
        let waiting = l.answer("s1", Duration::from_secs(10));
        let sending = async {
            let r = client.get(&wrong).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 400);
            let r = client.get(&right).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
        };
        let (answer, ()) = tokio::join!(waiting, sending);
        assert_eq!(answer.unwrap().code.as_deref(), Some("good"));
    }
}
