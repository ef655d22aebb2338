//! A scripted fake LLM server on 127.0.0.1. It speaks Ollama's native API byte for byte as
//! documented (shared/reference/ollama_api.md): NDJSON lines on `/api/chat` sent as separate HTTP
//! chunks (so a test can split a UTF-8 character across two writes), JSON error bodies,
//! `/api/tags`, `/api/show`, `/api/version`; and the OpenAI-compatible API as llama.cpp's
//! llama-server sends it: `/v1/chat/completions` as Server-Sent Events (`data: {chunk}` events,
//! tool-call arguments in fragments, `data: [DONE]`), `/v1/models`. It records every request
//! (path, body, Authorization header).
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// a path both here and where tests/common includes this file with #[path]
#[path = "fake_ollama/replies.rs"]
mod replies;

pub use replies::*;

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    responder: Option<Responder>,
    openai_responder: Option<Responder>,
    requests: Vec<(String, Value)>,
    authorizations: Vec<Option<String>>,
    models: Vec<String>,
    /// `/api/show` capabilities by model; a model not listed: completion and tools.
    capabilities: std::collections::HashMap<String, Vec<String>>,
    /// The context the server says its models have: Ollama's `/api/show`
    /// (`model_info["llama.context_length"]`) and llama-server's `/props`
    /// (`default_generation_settings.n_ctx`, which is 404 when this is not set).
    context: Option<u64>,
    /// The chat template `/api/show` (`template`) and `/props` (`chat_template`) report.
    template: Option<String>,
    /// What llama-server's `/props` says of its model's vision (`modalities.vision`); not said
    /// when `None`.
    vision: Option<bool>,
    /// `/api/pull`: progress lines for the one layer, and the pause between lines.
    pull_steps: u32,
    pull_pause: Duration,
    /// Chat replies being written now, and the most there were at once.
    chats_at_once: usize,
    most_chats_at_once: usize,
}

/// A chat reply being written: counted in `Shared::chats_at_once` until dropped.
struct Writing(Option<Arc<Mutex<Shared>>>);

impl Drop for Writing {
    fn drop(&mut self) {
        if let Some(s) = &self.0 {
            s.lock().unwrap().chats_at_once -= 1;
        }
    }
}

#[derive(Clone)]
pub struct FakeOllama {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
}

impl FakeOllama {
    /// Starts on a free port; `/api/tags` lists `fake-llama:latest`.
    pub async fn start() -> FakeOllama {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Mutex::new(Shared {
            models: vec![MODEL.into()],
            pull_steps: 10,
            pull_pause: Duration::from_millis(5),
            ..Default::default()
        }));
        let s = shared.clone();
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                // as Ollama does (Go sets TCP_NODELAY on every connection): each chunk goes out
                // when written, not after the client's delayed ACK of the one before (~40 ms
                // per reply otherwise)
                let _ = sock.set_nodelay(true);
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, s).await;
                });
            }
        });
        FakeOllama { url, shared }
    }

    /// Starts it on its own runtime thread (for tests that are not async, such as E2E).
    pub fn start_in_background() -> FakeOllama {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                tx.send(FakeOllama::start().await).unwrap();
                std::future::pending::<()>().await;
            });
        });
        rx.recv().unwrap()
    }

    /// The next `/api/chat` answers, in order.
    pub fn push(&self, r: Reply) {
        self.shared.lock().unwrap().script.push_back(r);
    }

    /// Answers `/api/chat` from the request when the script is empty.
    pub fn set_responder(&self, f: impl Fn(&Value) -> Reply + Send + Sync + 'static) {
        self.shared.lock().unwrap().responder = Some(Box::new(f));
    }

    /// Answers `/v1/chat/completions` from the request.
    pub fn set_openai_responder(&self, f: impl Fn(&Value) -> Reply + Send + Sync + 'static) {
        self.shared.lock().unwrap().openai_responder = Some(Box::new(f));
    }

    /// Bodies of the `/v1/chat/completions` requests received so far.
    pub fn openai_requests(&self) -> Vec<Value> {
        self.requests_to("/v1/chat/completions")
    }

    /// The Authorization header of every request, in order (`None` when there was none).
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared.lock().unwrap().authorizations.clone()
    }

    fn requests_to(&self, path: &str) -> Vec<Value> {
        self.shared
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// How `/api/pull` streams: this many progress lines, this far apart.
    pub fn set_pull(&self, steps: u32, pause: Duration) {
        let mut s = self.shared.lock().unwrap();
        s.pull_steps = steps.max(1);
        s.pull_pause = pause;
    }

    /// What `/api/show` says `model` can do.
    pub fn set_capabilities(&self, model: &str, caps: &[&str]) {
        self.shared
            .lock()
            .unwrap()
            .capabilities
            .insert(model.into(), caps.iter().map(|c| c.to_string()).collect());
    }

    /// The chat template `/api/show` and `/props` report from now on (the model's tool-call
    /// format is detected from it).
    pub fn set_template(&self, template: &str) {
        self.shared.lock().unwrap().template = Some(template.into());
    }

    /// Whether `/props` says its model sees images (llama-server's `modalities.vision`).
    pub fn set_vision(&self, sees: bool) {
        self.shared.lock().unwrap().vision = Some(sees);
    }

    /// The context length `/api/show` and `/props` report from now on.
    pub fn set_context(&self, n: u64) {
        self.shared.lock().unwrap().context = Some(n);
    }

    pub fn set_models(&self, models: &[&str]) {
        self.shared.lock().unwrap().models = models.iter().map(|s| s.to_string()).collect();
    }

    /// The most chat replies (`/api/chat`, `/v1/chat/completions`) this server was writing at
    /// once: from the request read to the reply's last chunk.
    pub fn most_chats_at_once(&self) -> usize {
        self.shared.lock().unwrap().most_chats_at_once
    }

    /// Bodies of the `/api/chat` requests received so far.
    pub fn chat_requests(&self) -> Vec<Value> {
        self.shared
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|(p, _)| p == "/api/chat")
            .map(|(_, v)| v.clone())
            .collect()
    }
}

async fn serve(mut sock: TcpStream, shared: Arc<Mutex<Shared>>) -> std::io::Result<()> {
    loop {
        // read the head
        let mut buf = Vec::new();
        let mut byte = [0u8; 1024];
        let head_end = loop {
            if let Some(p) = find(&buf, b"\r\n\r\n") {
                break p;
            }
            let n = sock.read(&mut byte).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&byte[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.lines();
        let request_line = lines.next().unwrap_or_default().to_string();
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let len: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let authorization = header("authorization");
        let mut body = buf[head_end + 4..].to_vec();
        while body.len() < len {
            let n = sock.read(&mut byte).await?;
            if n == 0 {
                return Ok(());
            }
            body.extend_from_slice(&byte[..n]);
        }
        let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut writing = Writing(None);
        if method == "POST" && (path == "/api/chat" || path == "/v1/chat/completions") {
            let mut s = shared.lock().unwrap();
            s.chats_at_once += 1;
            s.most_chats_at_once = s.most_chats_at_once.max(s.chats_at_once);
            writing.0 = Some(shared.clone());
        }
        let reply = {
            let mut s = shared.lock().unwrap();
            s.requests.push((path.clone(), req.clone()));
            s.authorizations.push(authorization);
            match (method.as_str(), path.as_str()) {
                ("POST", "/v1/chat/completions") => {
                    let model = model_of(&req);
                    if !s.models.contains(&model) {
                        openai_error(404, &format!("model '{model}' not found"))
                    } else if let Some(f) = &s.openai_responder {
                        f(&req)
                    } else {
                        openai_error(500, "the fake LLM has no scripted reply")
                    }
                }
                ("GET", "/v1/models") => {
                    let data: Vec<Value> = s
                        .models
                        .iter()
                        .map(|m| {
                            json!({"id": m, "object": "model",
                        "created": 1763800000, "owned_by": "llamacpp"})
                        })
                        .collect();
                    Reply {
                        status: 200,
                        content_type: "application/json; charset=utf-8",
                        chunks: vec![
                            serde_json::to_vec(&json!({"object": "list", "data": data})).unwrap()
                        ],
                        pause: Duration::ZERO,
                        end: End::Complete,
                    }
                }
                ("POST", "/api/chat") => {
                    let model = model_of(&req);
                    if !s.models.contains(&model) {
                        model_not_found(&model)
                    } else if let Some(r) = s.script.pop_front() {
                        r
                    } else if let Some(f) = &s.responder {
                        f(&req)
                    } else {
                        json_error(500, "the fake LLM has no scripted reply left")
                    }
                }
                ("GET", "/api/tags") => {
                    let models: Vec<Value> = s.models.iter().map(|m| json!({"name": m, "model": m, "modified_at": CREATED,
                        "size": 2019393189u64, "digest": "a80c4f17acd5", "details": {"parent_model": "", "format": "gguf",
                        "family": "llama", "families": ["llama"], "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}})).collect();
                    Reply {
                        status: 200,
                        content_type: "application/json; charset=utf-8",
                        chunks: vec![serde_json::to_vec(&json!({"models": models})).unwrap()],
                        pause: Duration::ZERO,
                        end: End::Complete,
                    }
                }
                ("POST", "/api/show") => {
                    let model = req.get("model").and_then(Value::as_str).unwrap_or_default();
                    if s.models.iter().any(|m| m == model) {
                        let caps = s
                            .capabilities
                            .get(model)
                            .cloned()
                            .unwrap_or_else(|| vec!["completion".into(), "tools".into()]);
                        let mut info = json!({"general.architecture": "llama"});
                        if let Some(n) = s.context {
                            info["llama.context_length"] = json!(n);
                        }
                        Reply { status: 200, content_type: "application/json; charset=utf-8", chunks: vec![serde_json::to_vec(&json!({
                            "modelfile": "", "parameters": "", "template": s.template.clone().unwrap_or_default(), "details": {"family": "llama"},
                            "model_info": info, "capabilities": caps})).unwrap()], pause: Duration::ZERO, end: End::Complete }
                    } else {
                        model_not_found(model)
                    }
                }
                ("GET", "/props")
                    if s.context.is_some() || s.template.is_some() || s.vision.is_some() =>
                {
                    let mut props = json!({
                        "default_generation_settings": {"n_ctx": s.context, "params": {"temperature": 0.8}},
                        "total_slots": 1, "model_path": "models/fake-llama.gguf", "build_info": "b6000-fake",
                        "chat_template": s.template.clone().unwrap_or_default()
                    });
                    if let Some(v) = s.vision {
                        props["modalities"] = json!({"vision": v, "audio": false});
                    }
                    Reply {
                        status: 200,
                        content_type: "application/json; charset=utf-8",
                        chunks: vec![serde_json::to_vec(&props).unwrap()],
                        pause: Duration::ZERO,
                        end: End::Complete,
                    }
                }
                ("POST", "/api/pull") => {
                    let model = model_of(&req);
                    if model.starts_with("missing") {
                        json_error(500, "pull model manifest: file does not exist")
                    } else {
                        if !s.models.contains(&model) {
                            s.models.push(model.clone());
                        }
                        let mut lines = vec![json!({"status": "pulling manifest"})];
                        let digest = "sha256:6a0746a1ec1aef3e7ec53868f220ff6e389f6f8ef87a01d77c96807de94ca2aa";
                        for i in 0..=s.pull_steps {
                            let mut l = json!({"status": format!("pulling {}", &digest[7..19]), "digest": digest, "total": 1_000_000u64});
                            if i > 0 {
                                l["completed"] =
                                    json!(1_000_000u64 * i as u64 / s.pull_steps as u64);
                            }
                            lines.push(l);
                        }
                        for st in ["verifying sha256 digest", "writing manifest", "success"] {
                            lines.push(json!({"status": st}));
                        }
                        Reply {
                            status: 200,
                            content_type: "application/x-ndjson",
                            chunks: lines
                                .iter()
                                .map(|l| {
                                    let mut b = serde_json::to_vec(l).unwrap();
                                    b.push(b'\n');
                                    b
                                })
                                .collect(),
                            pause: s.pull_pause,
                            end: End::Complete,
                        }
                    }
                }
                ("DELETE", "/api/delete") => {
                    let model = model_of(&req);
                    if let Some(i) = s.models.iter().position(|m| *m == model) {
                        s.models.remove(i);
                        Reply {
                            status: 200,
                            content_type: "application/json; charset=utf-8",
                            chunks: vec![],
                            pause: Duration::ZERO,
                            end: End::Complete,
                        }
                    } else {
                        json_error(404, &format!("model '{model}' not found"))
                    }
                }
                ("GET", "/api/version") => Reply {
                    status: 200,
                    content_type: "application/json; charset=utf-8",
                    chunks: vec![b"{\"version\":\"0.33.0\"}".to_vec()],
                    pause: Duration::ZERO,
                    end: End::Complete,
                },
                _ => Reply {
                    status: 404,
                    content_type: "text/plain",
                    chunks: vec![b"404 page not found".to_vec()],
                    pause: Duration::ZERO,
                    end: End::Complete,
                },
            }
        };
        let reason = match reply.status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            _ => "Error",
        };
        let head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\nDate: Sat, 21 Nov 2026 12:00:00 GMT\r\n\r\n",
            reply.status, reply.content_type
        );
        sock.write_all(head.as_bytes()).await?;
        sock.flush().await?;
        let last = reply.chunks.len().saturating_sub(1);
        for (i, c) in reply.chunks.iter().enumerate() {
            if i == last {
                // done before its last piece is sent: a client that reads the reply to its end
                // cannot send another request before this one counts as done
                writing = Writing(None);
            }
            sock.write_all(format!("{:x}\r\n", c.len()).as_bytes())
                .await?;
            sock.write_all(c).await?;
            sock.write_all(b"\r\n").await?;
            sock.flush().await?;
            if !reply.pause.is_zero() {
                tokio::time::sleep(reply.pause).await;
            }
        }
        match reply.end {
            End::Complete => {}
            End::Disconnect => return Ok(()),
            End::Stall => {
                // until the client gives up and closes the connection
                while sock.read(&mut byte).await? > 0 {}
                return Ok(());
            }
        }
        drop(writing);
        sock.write_all(b"0\r\n\r\n").await?;
        sock.flush().await?;
    }
}

/// The `model` a request names ("" when none).
fn model_of(req: &Value) -> String {
    req.get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}
