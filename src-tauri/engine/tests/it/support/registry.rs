//! A stand-in MCP Registry of our own (API v0.1) on loopback: pages with `nextCursor`, search,
//! latest versions, ETag / If-None-Match, files to download (bundles, icons), redirects, and the faults a
//! network has (refused connections, 503, answers that never end or never stop). It records what
//! it was asked. A plain thread per connection, so it serves sync and async tests alike; shared
//! with the app's tests (tests/common).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// How the stand-in answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Closes every connection at once (the registry cannot be reached).
    Refuse,
    /// 503 to everything.
    Failing,
    /// Sends its headers and a little of the body, then nothing, for as long as the connection lasts.
    Stall,
    /// An endless body (no length), as fast as it is read.
    Flood,
}

#[derive(Default)]
struct State {
    entries: Vec<Value>,
    page_size: usize,
    files: HashMap<String, (Vec<u8>, String)>,
    /// Path (no query) → where a 302 sends it.
    redirects: HashMap<String, String>,
    requests: Vec<Request>,
    mode: Option<Mode>,
}

/// One request it was sent.
#[derive(Clone, Debug)]
pub struct Request {
    /// Path and query.
    pub target: String,
    pub if_none_match: Option<String>,
    /// 200, 304, 404, …; 0 when it did not answer.
    pub status: u16,
}

pub struct Registry {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl Registry {
    /// Listens on loopback with these entries (`ServerResponse` objects, in list order), at most
    /// 2 a page.
    pub fn start(entries: Vec<Value>) -> Registry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            entries,
            page_size: 2,
            ..Default::default()
        }));
        let s = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &s);
                });
            }
        });
        Registry { url, state }
    }

    pub fn set_entries(&self, entries: Vec<Value>) {
        self.state.lock().unwrap().entries = entries;
    }

    pub fn set_page_size(&self, n: usize) {
        self.state.lock().unwrap().page_size = n;
    }

    pub fn set_mode(&self, m: Mode) {
        self.state.lock().unwrap().mode = Some(m);
    }

    /// Serves `bytes` at `/files/NAME`; returns its URL.
    pub fn add_file(&self, name: &str, bytes: Vec<u8>, content_type: &str) -> String {
        self.state
            .lock()
            .unwrap()
            .files
            .insert(name.into(), (bytes, content_type.into()));
        format!("{}/files/{name}", self.url)
    }

    /// Answers `path` (its query aside) with a 302 to `location`.
    pub fn redirect(&self, path: &str, location: &str) {
        self.state
            .lock()
            .unwrap()
            .redirects
            .insert(path.into(), location.into());
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

/// A `ServerResponse` as the official registry writes it.
pub fn listed(server: Value) -> Value {
    json!({
        "server": server,
        "_meta": {"io.modelcontextprotocol.registry/official": {
            "status": "active", "isLatest": true,
            "publishedAt": "2025-12-01T10:00:00Z", "updatedAt": "2025-12-01T10:00:00Z"
        }}
    })
}

/// [`listed`], with the registry's status (`deprecated`, `deleted`) and message.
pub fn with_status(mut entry: Value, status: &str, message: &str) -> Value {
    let o = &mut entry["_meta"]["io.modelcontextprotocol.registry/official"];
    o["status"] = json!(status);
    o["statusMessage"] = json!(message);
    entry
}

/// An npm server entry.
pub fn npm(name: &str, version: &str, package: &str, package_version: &str) -> Value {
    listed(json!({
        "name": name, "description": format!("{name}, from npm"), "version": version,
        "packages": [{"registryType": "npm", "identifier": package, "version": package_version,
                      "transport": {"type": "stdio"}}]
    }))
}

/// A PyPI server entry (run with uvx).
pub fn pypi(name: &str, version: &str, package: &str, package_version: &str) -> Value {
    listed(json!({
        "name": name, "description": format!("{name}, from PyPI"), "version": version,
        "packages": [{"registryType": "pypi", "identifier": package, "version": package_version,
                      "transport": {"type": "stdio"}}]
    }))
}

fn query(target: &str) -> HashMap<String, String> {
    let q = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
    url::form_urlencoded::parse(q.as_bytes())
        .into_owned()
        .collect()
}

fn is_latest(e: &Value) -> bool {
    e.pointer("/_meta/io.modelcontextprotocol.registry~1official/isLatest") != Some(&json!(false))
}

fn name_of(e: &Value) -> String {
    e.pointer("/server/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The answer to a target: status, content type, body.
fn answer(state: &State, target: &str) -> (u16, String, Vec<u8>) {
    let path = target.split('?').next().unwrap_or_default();
    let json_type = "application/json".to_string();
    if path == "/v0.1/servers" {
        let q = query(target);
        let term = q.get("search").cloned().unwrap_or_default().to_lowercase();
        let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(30);
        let latest_only = q.get("version").map(String::as_str) == Some("latest");
        let all: Vec<&Value> = state
            .entries
            .iter()
            .filter(|e| !latest_only || is_latest(e))
            .filter(|e| name_of(e).to_lowercase().contains(&term))
            .collect();
        let start: usize = q
            .get("cursor")
            .and_then(|c| c.strip_prefix("after-"))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let n = limit.min(state.page_size).max(1);
        let page: Vec<&Value> = all.iter().skip(start).take(n).copied().collect();
        let next = (start + n < all.len()).then(|| format!("after-{}", start + n));
        let body = json!({"servers": page, "metadata": {"nextCursor": next, "count": page.len()}});
        return (200, json_type, body.to_string().into_bytes());
    }
    if let Some(rest) = path.strip_prefix("/v0.1/servers/") {
        if let Some(name) = rest.strip_suffix("/versions/latest") {
            let name: String = url::form_urlencoded::parse(format!("n={name}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            return match state
                .entries
                .iter()
                .find(|e| name_of(e) == name && is_latest(e))
            {
                Some(e) => (200, json_type, e.to_string().into_bytes()),
                None => (404, json_type, br#"{"error":"Server not found"}"#.to_vec()),
            };
        }
    }
    if let Some(name) = path.strip_prefix("/files/") {
        if let Some((bytes, ct)) = state.files.get(name) {
            return (200, ct.clone(), bytes.clone());
        }
    }
    (404, json_type, br#"{"error":"not found"}"#.to_vec())
}

fn etag(body: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    format!("\"{:x}\"", h.finish())
}

fn serve(conn: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split(' ').nth(1).unwrap_or_default().to_string();
    let mut if_none_match = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("if-none-match") {
                if_none_match = Some(v.trim().to_string());
            }
        }
    }
    let mut out = conn;
    let path = target.split('?').next().unwrap_or_default();
    let to = state.lock().unwrap().redirects.get(path).cloned();
    if let Some(location) = to {
        state.lock().unwrap().requests.push(Request {
            target: target.clone(),
            if_none_match,
            status: 302,
        });
        return out.write_all(
            format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
    }
    let (mode, (status, ct, body)) = {
        let s = state.lock().unwrap();
        (s.mode.unwrap_or(Mode::Normal), answer(&s, &target))
    };
    let record = |status: u16| {
        state.lock().unwrap().requests.push(Request {
            target: target.clone(),
            if_none_match: if_none_match.clone(),
            status,
        })
    };
    match mode {
        Mode::Refuse => {
            record(0);
            return Ok(());
        }
        Mode::Failing => {
            record(503);
            return out.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
        Mode::Stall => {
            record(200);
            out.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"servers\": [")?;
            out.flush()?;
            // nothing more, until the client gives up
            let mut buf = [0u8; 1];
            let _ = std::io::Read::read(&mut reader, &mut buf);
            return Ok(());
        }
        Mode::Flood => {
            record(200);
            out.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"servers\": [")?;
            let chunk = vec![b' '; 64 * 1024];
            loop {
                out.write_all(&chunk)?;
            }
        }
        Mode::Normal => {}
    }
    let tag = etag(&body);
    if status == 200 && if_none_match.as_deref() == Some(tag.as_str()) {
        record(304);
        return out.write_all(
            format!("HTTP/1.1 304 Not Modified\r\nETag: {tag}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
    }
    record(status);
    out.write_all(
        format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nETag: {tag}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )?;
    out.write_all(&body)?;
    out.flush()
}
