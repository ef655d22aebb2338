//! A local stand-in for the arXiv API: serves the recorded Atom answers of
//! `tests/fixtures/arxiv/` (or anything scripted: a 503, a plain-text 429, a slow answer) on
//! loopback, and records what was asked. Shared with the app's tests (tests/common).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct ArxivReply {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(String, String)>,
    /// Waited before answering (a slow arXiv).
    pub delay: Duration,
}

impl ArxivReply {
    pub fn new(status: u16, body: impl Into<String>) -> Self {
        ArxivReply {
            status,
            body: body.into(),
            headers: vec![],
            delay: Duration::ZERO,
        }
    }

    /// A recorded answer from `tests/fixtures/arxiv/`, with status 200.
    pub fn recorded(name: &str) -> Self {
        ArxivReply::new(200, arxiv_fixture(name))
    }

    pub fn delayed(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }

    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
}

pub fn arxiv_fixture(name: &str) -> String {
    std::fs::read_to_string(super::fixture("arxiv").join(name)).unwrap()
}

/// The server; answers from its script in order, then `two_results.xml` to everything.
pub struct ArxivFixture {
    /// The API's URL (`http://127.0.0.1:PORT/api/query`).
    pub url: String,
    script: Arc<Mutex<VecDeque<ArxivReply>>>,
    requests: Arc<Mutex<Vec<(std::time::Instant, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ArxivFixture {
    pub async fn start() -> ArxivFixture {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/api/query", listener.local_addr().unwrap());
        let script: Arc<Mutex<VecDeque<ArxivReply>>> = Default::default();
        let requests: Arc<Mutex<Vec<(std::time::Instant, String)>>> = Default::default();
        let (s, r) = (script.clone(), requests.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let (s, r) = (s.clone(), r.clone());
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).to_string();
                    let target = head
                        .lines()
                        .next()
                        .and_then(|l| l.split(' ').nth(1))
                        .unwrap_or_default()
                        .to_string();
                    r.lock().unwrap().push((std::time::Instant::now(), target));
                    let reply = s
                        .lock()
                        .unwrap()
                        .pop_front()
                        .unwrap_or_else(|| ArxivReply::recorded("two_results.xml"));
                    tokio::time::sleep(reply.delay).await;
                    let mut out = format!(
                        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\nContent-Type: application/atom+xml; charset=UTF-8\r\n",
                        reply.status,
                        reply.body.len()
                    );
                    for (k, v) in &reply.headers {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                    out.push_str("\r\n");
                    out.push_str(&reply.body);
                    let _ = conn.write_all(out.as_bytes()).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        ArxivFixture {
            url,
            script,
            requests,
            task,
        }
    }

    /// Queues answers for the next requests.
    pub fn script(&self, replies: Vec<ArxivReply>) {
        self.script.lock().unwrap().extend(replies);
    }

    /// The request targets (path and query) so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, t)| t.clone())
            .collect()
    }

    /// When each request came.
    pub fn times(&self) -> Vec<std::time::Instant> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(t, _)| *t)
            .collect()
    }

    /// Stops listening: every later connection is refused.
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}
