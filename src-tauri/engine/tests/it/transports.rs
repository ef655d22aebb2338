//! The same tools over Streamable HTTP, legacy HTTP+SSE and the REST dialect.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchboard_engine::mcp::{ElicitationAction, ElicitationAnswer};
use switchboard_engine::mcp::{McpHost, ServerConfig, ServerStatus, Step};
use switchboard_engine::{ChatEvent, TurnRequest};
use tokio_util::sync::CancellationToken;

use crate::support::fake_ollama::{self, Stream};
use crate::support::*;

#[tokio::test]
async fn a_streamable_http_server_works_like_a_stdio_one() {
    let (_server, port) = crate::support::everything_over_http("streamableHttp");
    let nothing = crate::support::DeadPort::new();
    let r = rig(vec![
        (
            "remote",
            ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
        ),
        (
            "nothing-there",
            ServerConfig::http(format!("{}/mcp", nothing.url())),
        ),
    ])
    .await;
    let s = r.status("remote");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(s.transport, switchboard_engine::mcp::Transport::Http);
    assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));
    let down = r.status("nothing-there");
    assert_eq!(down.status, ServerStatus::Failed);
    assert!(
        down.error.as_deref().unwrap().contains("127.0.0.1"),
        "{down:?}"
    );
    echo_and_sum_through(&r, "remote", "over HTTP").await;
    r.host.shutdown().await;
}

/// A turn that calls server-everything's echo and get-sum on `server` (any transport): both results
/// arrive and are stored.
async fn echo_and_sum_through(r: &Rig, server: &str, message: &str) {
    r.fake.set_responder(call_then_answer(vec![
        ("e", &format!("{server}__echo"), json!({"message": message})),
        ("s", &format!("{server}__get-sum"), json!({"a": 40, "b": 2})),
    ]));
    let (summary, _) = r.turn(&format!("use {server}")).await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert!(
        conv.tool_calls[0]
            .result
            .as_deref()
            .unwrap()
            .contains(message),
        "{:?}",
        conv.tool_calls[0]
    );
    assert!(
        conv.tool_calls[1].result.as_deref().unwrap().contains("42"),
        "{:?}",
        conv.tool_calls[1]
    );
}

/// Over Streamable HTTP and legacy SSE too, a call reports progress, and the server's
/// elicitation and sampling requests reach the user and the model (server-everything sends them on
/// the POST response stream; on SSE on the event stream); prompts and resources are listed; image
/// content arrives, roots reach the server, and a call can be cancelled.
#[tokio::test]
async fn progress_elicitation_and_sampling_work_over_http_and_sse() {
    let (_http, http_port) = crate::support::everything_over_http("streamableHttp");
    let (_sse, sse_port) = crate::support::everything_over_http("sse");
    let mut sse = ServerConfig::http(format!("http://127.0.0.1:{sse_port}/sse"));
    sse.transport = Some("sse".into());
    let r = rig(vec![
        (
            "http",
            ServerConfig::http(format!("http://127.0.0.1:{http_port}/mcp")),
        ),
        ("sse", sse),
    ])
    .await;
    for server in ["http", "sse"] {
        let v = r.status(server);
        assert_eq!(v.status, ServerStatus::Running, "{v:?}");
        assert!(r
            .host
            .prompts()
            .iter()
            .any(|p| p.server == server && p.name == "args-prompt"));
        assert!(r.host.resources().iter().any(|x| x.server == server));
    }
    let tool_turn = call_then_answer(vec![
        (
            "p1",
            "http__trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        ),
        ("e1", "http__trigger-elicitation-request", json!({})),
        (
            "s1",
            "http__trigger-sampling-request",
            json!({"prompt": "http colour"}),
        ),
        (
            "p2",
            "sse__trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        ),
        ("e2", "sse__trigger-elicitation-request", json!({})),
        (
            "s2",
            "sse__trigger-sampling-request",
            json!({"prompt": "sse colour"}),
        ),
    ]);
    r.fake.set_responder(move |req: &Value| {
        if req["messages"][0]["content"] == "You are a helpful test server." {
            return Stream::new().text("Sampled teal").done().reply();
        }
        tool_turn(req)
    });
    let mut engine = r.engine(5);
    let script = Script::sampling(vec![true, true]);
    let form = ElicitationAnswer {
        action: ElicitationAction::Accept,
        content: Some(
            json!({"name": "Ada", "check": true, "email": "ada@example.com", "integer": 7}),
        ),
    };
    *script.elicitations.lock().unwrap() = vec![form.clone(), form];
    engine.broker = script.broker();
    let (summary, events) = collecting(
        &engine,
        TurnRequest {
            conversation_id: None,
            model: fake_ollama::MODEL.into(),
            text: "everything, remotely".into(),
            ..Default::default()
        },
    )
    .await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls.len(), 6);
    for c in &conv.tool_calls {
        assert!(!c.is_error, "{c:?}");
    }
    for (i, call) in conv.tool_calls.iter().enumerate() {
        let result = call.result.clone().unwrap();
        match i % 3 {
            0 => assert!(
                events
                    .iter()
                    .any(|e| matches!(e, ChatEvent::ToolCallProgress { id, .. } if *id == call.id)),
                "no progress for {}",
                call.name
            ),
            1 => assert!(result.contains("Ada"), "{}: {result}", call.name),
            _ => assert!(result.contains("Sampled teal"), "{}: {result}", call.name),
        }
    }
    // and, on both transports: image content, roots (with roots/list_changed), cancel
    let roots_dir = tempfile::tempdir().unwrap();
    r.host.set_roots(vec![roots_dir.path().to_path_buf()]).await;
    let none = CancellationToken::new();
    for server in ["http", "sse"] {
        let image = r
            .host
            .call_tool(
                &format!("{server}__get-tiny-image"),
                Default::default(),
                &none,
                None,
            )
            .await;
        let blocks = image.raw.as_ref().unwrap()["content"]
            .as_array()
            .unwrap()
            .clone();
        assert!(
            blocks
                .iter()
                .any(|b| b["type"] == "image" && b["mimeType"] == "image/png"),
            "{server}: {blocks:?}"
        );
        let t = std::time::Instant::now();
        loop {
            let roots = r
                .host
                .call_tool(
                    &format!("{server}__get-roots-list"),
                    Default::default(),
                    &none,
                    None,
                )
                .await;
            if roots.text.contains(&roots_dir.path().display().to_string()) {
                break;
            }
            assert!(
                t.elapsed() < READY,
                "{server} never saw the new root: {}",
                roots.text
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Stop is pressed once the operation reports its first step: it runs on the server then
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                if matches!(e, switchboard_engine::mcp::CallEvent::Progress(_)) {
                    c.cancel();
                }
            }
        });
        let t = std::time::Instant::now();
        let long = r
            .host
            .call_tool(
                &format!("{server}__trigger-long-running-operation"),
                json!({"duration": 300, "steps": 100})
                    .as_object()
                    .unwrap()
                    .clone(),
                &cancel,
                Some(tx),
            )
            .await;
        assert!(
            long.is_error && long.text.contains("cancelled"),
            "{server}: {}",
            long.text
        );
        // cancelled, not waited out: the operation's own 300 s are far past READY
        assert!(t.elapsed() < READY, "{:?}", t.elapsed());
    }
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_legacy_http_sse_server_works_through_our_own_transport() {
    let (_server, port) = crate::support::everything_over_http("sse");
    let mut sse = ServerConfig::http(format!("http://127.0.0.1:{port}/sse"));
    sse.transport = Some("sse".into());
    let mut wrong = ServerConfig::http(format!("http://127.0.0.1:{port}/nope"));
    wrong.transport = Some("sse".into());
    let r = rig(vec![("legacy", sse), ("wrong-path", wrong)]).await;
    let s = r.status("legacy");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(s.transport, switchboard_engine::mcp::Transport::Sse);
    assert!(s.tools.iter().any(|t| t.name == "get-sum"));
    let wrong = r.status("wrong-path");
    assert_eq!(wrong.status, ServerStatus::Failed);
    assert_eq!(wrong.failed_step, Some(Step::OpeningStream));
    assert!(
        wrong.error.as_deref().unwrap().contains("answered 404"),
        "{wrong:?}"
    );
    echo_and_sum_through(&r, "legacy", "over SSE").await;
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_rest_dialect_server_is_a_tool_source_like_any_other() {
    let (_server, port) = crate::support::rest_server();
    let mut rest = ServerConfig::http(format!("http://127.0.0.1:{port}"));
    rest.transport = Some("rest".into());
    let r = rig(vec![("legacy-rest", rest)]).await;
    let s = r.status("legacy-rest");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(
        s.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        vec!["word_count", "shout"]
    );
    r.fake.set_responder(call_then_answer(vec![
        (
            "1",
            "legacy-rest__word_count",
            json!({"text": "one two three"}),
        ),
        ("2", "legacy-rest__shout", json!({"text": "hey"})),
        ("3", "legacy-rest__word_count", json!({"text": ""})),
    ]));
    let (summary, _) = r.turn("count").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let got: Vec<(Option<String>, bool)> = conv
        .tool_calls
        .iter()
        .map(|t| (t.result.clone(), t.is_error))
        .collect();
    assert_eq!(got[0], (Some("3".into()), false));
    assert_eq!(got[1], (Some("HEY".into()), false));
    assert!(got[2].1, "the server's isError comes through: {got:?}");
    r.host.shutdown().await;
}

/// A listener on a free local port, and the port.
fn local_listener() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// A raw HTTP server on a thread: each connection's request head is recorded, and answered with
/// what `respond` returns for it (then the connection is closed).
fn raw_http(respond: impl Fn(&str) -> Vec<u8> + Send + 'static) -> (u16, Arc<Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let (listener, port) = local_listener();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            log.lock().unwrap().push(head.clone());
            let _ = conn.write_all(&respond(&head));
        }
    });
    (port, seen)
}

/// A server that redirects to another origin never gets the configured headers sent there, on
/// any HTTP transport: the redirect is refused and the server is shown failed with why.
#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_the_headers_stay_home() {
    let (trap, trapped) = raw_http(|_| {
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec()
    });
    let (redirector, _) = raw_http(move |_| {
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://localhost:{trap}/mcp\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes()
    });
    let with_secret = |transport: &str| {
        let mut c = ServerConfig::http(format!("http://127.0.0.1:{redirector}/mcp"));
        c.transport = Some(transport.into());
        c.headers
            .insert("Authorization".into(), "Bearer s3cret".into());
        c
    };
    let r = rig(vec![
        ("http", with_secret("http")),
        ("sse", with_secret("sse")),
        ("rest", with_secret("rest")),
    ])
    .await;
    for name in ["http", "sse", "rest"] {
        let s = r.status(name);
        assert_eq!(s.status, ServerStatus::Failed, "{s:?}");
    }
    assert!(
        r.status("rest")
            .error
            .as_deref()
            .unwrap()
            .contains("another origin"),
        "{:?}",
        r.status("rest")
    );
    assert!(
        trapped.lock().unwrap().is_empty(),
        "nothing reached the other origin: {:?}",
        trapped.lock().unwrap()
    );
    r.host.shutdown().await;
}

/// Secret headers are never sent over plain http to another computer, on any HTTP transport: a
/// config written by hand that would is refused before connecting, saying why (192.0.2.1 is a
/// documentation address: nothing is asked there).
#[tokio::test]
async fn secret_headers_never_go_over_plain_http_to_another_computer() {
    let with_secret = |transport: &str| {
        let mut c = ServerConfig::http("http://192.0.2.1:9/mcp".to_string());
        c.transport = Some(transport.into());
        c.headers
            .insert("Authorization".into(), "Bearer s3cret".into());
        c
    };
    let r = rig(vec![
        ("http", with_secret("http")),
        ("sse", with_secret("sse")),
        ("rest", with_secret("rest")),
    ])
    .await;
    for name in ["http", "sse", "rest"] {
        let s = r.status(name);
        assert_eq!(s.status, ServerStatus::Failed, "{s:?}");
        assert!(
            s.error
                .as_deref()
                .unwrap_or_default()
                .contains("only over https"),
            "{s:?}"
        );
    }
    r.host.shutdown().await;
}

/// A REST server whose answer has no end is cut off at the cap (64 MB), with a clear error, and
/// one that announces a bigger body is refused before it is read.
#[tokio::test]
async fn an_endless_or_oversized_http_answer_is_refused() {
    let (endless, _) = raw_http(|head| {
        if head.starts_with("GET /health") {
            return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec();
        }
        // no length: read until the connection closes, 80 MB of it
        let mut body = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"tools\": [\"".to_vec();
        body.resize(body.len() + 80 * 1024 * 1024, b'x');
        body
    });
    let (announced, _) = raw_http(|head| {
        if head.starts_with("GET /health") {
            return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec();
        }
        b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\nConnection: close\r\n\r\n{".to_vec()
    });
    let rest = |port: u16| {
        let mut c = ServerConfig::http(format!("http://127.0.0.1:{port}"));
        c.transport = Some("rest".into());
        c
    };
    let r = rig(vec![
        ("endless", rest(endless)),
        ("announced", rest(announced)),
    ])
    .await;
    for name in ["endless", "announced"] {
        let s = r.status(name);
        assert_eq!(s.status, ServerStatus::Failed, "{s:?}");
        assert!(
            s.error.as_deref().unwrap().contains("over 64 MB"),
            "{name}: {s:?}"
        );
    }
    r.host.shutdown().await;
}

/// A Streamable HTTP server whose answer is over the cap (16 MB: a JSON body, one SSE event)
/// gets that call refused with an error that says so, and stays usable for the next call (an
/// event over the cap used to close the transport: "Transport closed"); the event cap is the
/// host's to set.
#[tokio::test]
async fn a_streamable_http_answer_over_the_cap_is_refused_with_a_clear_error() {
    let (_server, port) = huge_http_server(20);
    let r = rig(vec![(
        "huge",
        ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
    )])
    .await;
    assert_eq!(r.status("huge").status, ServerStatus::Running);
    for tool in ["huge_json", "huge_stream"] {
        let out = r
            .host
            .call_tool(
                &format!("huge__{tool}"),
                Map::new(),
                &CancellationToken::new(),
                None,
            )
            .await;
        assert!(out.is_error, "{tool}: {out:?}");
        assert!(out.text.contains("over the 16 MB"), "{tool}: {}", out.text);
    }
    let out = r
        .host
        .call_tool("huge__small", Map::new(), &CancellationToken::new(), None)
        .await;
    assert_eq!((out.is_error, out.text.as_str()), (false, "small and fine"));
    assert_eq!(r.status("huge").restarts, 0, "the session went on");
    r.host.shutdown().await;

    // a host set to take at most 1 MB per event: a 2 MB one is refused, a small one is not
    let (_server, port) = huge_http_server(2);
    let mut opts = host_options();
    opts.max_http_event = 1024 * 1024;
    let host = McpHost::new(opts);
    let mut config = switchboard_engine::mcp::McpConfig::default();
    config.servers.insert(
        "huge".into(),
        ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
    );
    host.start_all(&config).await;
    let out = host
        .call_tool(
            "huge__huge_stream",
            Map::new(),
            &CancellationToken::new(),
            None,
        )
        .await;
    assert!(
        out.is_error && out.text.contains("over the 1 MB"),
        "{out:?}"
    );
    let out = host
        .call_tool("huge__small", Map::new(), &CancellationToken::new(), None)
        .await;
    assert!(!out.is_error, "{out:?}");
    host.shutdown().await;
}

/// The test servers' readiness counts only a listener of their own: a port another process took
/// first is not the server listening (what made this file's tests flaky under load).
#[test]
fn a_listener_is_told_from_anothers_on_the_same_port() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let ours = unsafe { libc::getpgrp() } as u32;
    assert!(crate::support::listens_in_group(ours, port));
    // another process group, listening on a port of its own
    let mut other = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket, time\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
             print(s.getsockname()[1], flush=True); time.sleep(30)",
        ])
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(other.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let theirs: u16 = line.trim().parse().unwrap();
    assert!(crate::support::listens_in_group(other.id(), theirs));
    assert!(!crate::support::listens_in_group(other.id(), port));
    assert!(!crate::support::listens_in_group(ours, theirs));
    other.kill().unwrap();
    let _ = other.wait();
    drop(l);
    assert!(!crate::support::listens_in_group(ours, port));
}

/// A test's unreachable address refuses at once, and no other process can take its port; a
/// listener that never accepts would not do (the kernel completes the handshake into its backlog).
#[test]
fn a_dead_port_refuses_at_once_and_stays_ours() {
    let dead = crate::support::DeadPort::new();
    let refused = std::net::TcpStream::connect(("127.0.0.1", dead.port)).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let taken = std::net::TcpListener::bind(("127.0.0.1", dead.port)).unwrap_err();
    assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(dead.url(), format!("http://127.0.0.1:{}", dead.port));
    let (idle, idle_port) = crate::support::loopback_listener();
    assert!(std::net::TcpStream::connect(("127.0.0.1", idle_port)).is_ok());
    drop(idle);
}

/// A server told port 0 is found on the ports it bound (all of them: read from /proc), and
/// listeners handed to a child (descriptors 3, 4, in order) are served by that child.
#[test]
fn ports_a_child_binds_are_read_back_and_listeners_handed_on_are_its_own() {
    use std::io::{BufRead, Read};
    let mut cmd = std::process::Command::new("python3");
    cmd.args([
        "-c",
        "import socket, time\nss = [socket.create_server(('127.0.0.1', 0)) for _ in range(2)]\n\
         print(*sorted(s.getsockname()[1] for s in ss), flush=True); time.sleep(30)",
    ])
    .stdout(std::process::Stdio::piped());
    use std::os::unix::process::CommandExt;
    let mut child = crate::support::Background(cmd.process_group(0).spawn().unwrap());
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let said: Vec<u16> = line
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(crate::support::listening_ports_in_group(child.0.id()), said);
    drop(child);

    // each handed-on listener answers with its descriptor number: only the child accepts
    let (a, a_port) = crate::support::loopback_listener();
    let (b, b_port) = crate::support::loopback_listener();
    let mut cmd = std::process::Command::new("python3");
    cmd.args([
        "-c",
        "import socket\nfor fd in (3, 4):\n    c, _ = socket.socket(fileno=fd).accept()\n\
         \x20   c.sendall(str(fd).encode()); c.close()",
    ]);
    crate::support::pass_listeners(&mut cmd, &[&a, &b]);
    let child = crate::support::Background(cmd.process_group(0).spawn().unwrap());
    for (port, fd) in [(a_port, "3"), (b_port, "4")] {
        let mut said = String::new();
        std::net::TcpStream::connect(("127.0.0.1", port))
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert_eq!(said, fd);
    }
    drop(child);
}

/// The session's own stream (the GET opened after `notifications/initialized`) is in place
/// before the session's first request: the server answers that GET late (300 ms) and the first
/// request still arrives only after it. A server that sends on this stream what a request
/// started would otherwise see the GET come after the request (what made the conformance
/// suite's `sse-retry` scenario fail on a busy machine: it took the late GET for a
/// reconnection). A server that never answers the GET holds the first request at most
/// `STREAM_FIRST_WAIT`, and the session goes on.
#[tokio::test]
async fn the_sessions_own_stream_is_answered_before_the_first_request() {
    for get_answer in [Some(Duration::from_millis(300)), None] {
        let (port, seen) = session_stream_server(get_answer);
        let r = rig(vec![(
            "s",
            ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
        )])
        .await;
        assert_eq!(
            r.status("s").status,
            ServerStatus::Running,
            "{:?}",
            r.status("s")
        );
        let seen = seen.lock().unwrap().clone();
        let at = |what: &str| {
            seen.iter()
                .find(|(w, _)| w == what)
                .map(|(_, t)| *t)
                .unwrap_or_else(|| panic!("no {what} in {seen:?}"))
        };
        let list = at("POST tools/list");
        match get_answer {
            Some(_) => assert!(
                list >= at("GET answered"),
                "tools/list came before the GET was answered: {seen:?}"
            ),
            None => {
                let waited = list.duration_since(at("GET"));
                assert!(
                    waited
                        >= switchboard_engine::mcp::http::STREAM_FIRST_WAIT
                            - Duration::from_millis(100),
                    "the first request waited for the GET: {seen:?}"
                );
            }
        }
        r.host.shutdown().await;
    }
}

/// What a test server saw, and when.
type Seen = Arc<Mutex<Vec<(String, std::time::Instant)>>>;

/// A Streamable HTTP server (one thread per connection) that records what arrives when, and
/// answers its GET after `get_answer` with 405, or never.
fn session_stream_server(get_answer: Option<Duration>) -> (u16, Seen) {
    use std::io::{BufRead, BufReader, Read, Write};
    let (listener, port) = local_listener();
    let seen = Seen::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut head = Vec::new();
                    let mut line = String::new();
                    while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                        head.push(line.trim_end().to_string());
                        line.clear();
                    }
                    let Some(first) = head.first().cloned() else {
                        return;
                    };
                    let length = head
                        .iter()
                        .find_map(|h| {
                            let (k, v) = h.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    if first.starts_with("GET") {
                        log.lock()
                            .unwrap()
                            .push(("GET".into(), std::time::Instant::now()));
                        let Some(after) = get_answer else {
                            std::thread::sleep(Duration::from_secs(30));
                            return;
                        };
                        std::thread::sleep(after);
                        log.lock()
                            .unwrap()
                            .push(("GET answered".into(), std::time::Instant::now()));
                        let _ = conn.write_all(
                            b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n",
                        );
                        continue;
                    }
                    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
                    let method = message["method"].as_str().unwrap_or("").to_string();
                    log.lock()
                        .unwrap()
                        .push((format!("POST {method}"), std::time::Instant::now()));
                    let result = match method.as_str() {
                        "initialize" => json!({
                            "protocolVersion": "2025-06-18",
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "late-get", "version": "1"},
                        }),
                        "tools/list" => json!({"tools": []}),
                        _ => json!({}),
                    };
                    let answer = match message.get("id") {
                        None => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_string(),
                        Some(_) if method == "server/discover" => {
                            let body = json!({"jsonrpc": "2.0", "id": message["id"],
                                "error": {"code": -32601, "message": "Method not found"}})
                            .to_string();
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                                body.len()
                            )
                        }
                        Some(id) => {
                            let body =
                                json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: {}\r\n\r\n{body}",
                                body.len()
                            )
                        }
                    };
                    if conn.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, seen)
}
