//! A small HTTP server on 127.0.0.1 for the sign-in's tests: fixed JSON answers by path (the query
//! ignored; anything else 404), and every request's path recorded.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct TestServer {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl TestServer {
    /// The paths asked for so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Serves the routes `routes(its own base URL)` gives.
pub async fn serving(routes: impl FnOnce(&str) -> Vec<(&'static str, Value)>) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let routes = routes(&base);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&got).to_string();
            let target = head.split_whitespace().nth(1).unwrap_or_default();
            let path = target.split('?').next().unwrap_or_default().to_string();
            log.lock().unwrap().push(path.clone());
            let reply = match routes.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => {
                    let body = body.to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                }
                None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .into(),
            };
            let _ = conn.write_all(reply.as_bytes()).await;
        }
    });
    TestServer { base, seen }
}
