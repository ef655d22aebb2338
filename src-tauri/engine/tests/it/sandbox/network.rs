//! A sandboxed server's network as the host decides it (`mcp/sandbox/network.rs`): with none,
//! its connections and name lookups are refused by the host and noted exactly (what it tried,
//! how many times); allowed one host from what it tried (the row's and the card's one action,
//! `Runtime::allow_server_network`), it reaches that host and port and nothing else; allowed
//! all, everything. The pages are served on loopback by the test.

use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::chat::Broker;
use switchboard_engine::mcp::sandbox::supervise;
use switchboard_engine::secrets::Secrets;
use switchboard_engine::{Places, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::landlock;
use crate::support::*;

/// An HTTP server on 127.0.0.1 that answers every request with `body`; its port.
async fn page(body: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

async fn call(rt: &Runtime, tool: &str, args: Value) -> switchboard_engine::mcp::ToolOutcome {
    let Value::Object(args) = args else { panic!() };
    rt.host
        .call_tool(
            &format!("web__{tool}"),
            args,
            &CancellationToken::new(),
            None,
        )
        .await
}

fn refused(rt: &Runtime) -> Vec<(String, u64)> {
    let v = rt
        .host
        .servers()
        .into_iter()
        .find(|s| s.name == "web")
        .unwrap();
    v.sandbox
        .unwrap()
        .attempts
        .into_iter()
        .filter(|a| !a.allowed)
        .map(|a| (a.target, a.count))
        .collect()
}

async fn apply(rt: &Runtime, _saved: switchboard_engine::mcp::McpConfig) {
    rt.mcp_applied().await;
    wait_for_status(&rt.host, "web", |s| {
        s.status == switchboard_engine::mcp::ServerStatus::Running
    })
    .await;
}

#[tokio::test]
async fn what_the_sandbox_kept_off_the_network_is_told_and_can_be_allowed_one_host_at_a_time() {
    if !landlock() || !supervise::available() {
        eprintln!("skipped: this system cannot supervise a sandbox's network");
        return;
    }
    let (allowed, other) = (
        page("hello from the allowed host").await,
        page("other").await,
    );
    let dir = tempfile::tempdir().unwrap();
    let places = Places::in_dir(dir.path());
    let mut server = serde_json::to_value(python("net_server.py")).unwrap();
    server["sandbox"] = json!({"network": false});
    std::fs::write(
        &places.mcp,
        json!({"mcpServers": {"web": server}}).to_string(),
    )
    .unwrap();
    let secrets = Secrets::file_only(dir.path().join("secrets"), "the tests have no keyring");
    let rt = Runtime::open_at(places, secrets, builtin_bin(), Broker::allowing_all())
        .await
        .unwrap();
    rt.start_servers().await;
    let url = |port: u16| json!({ "url": format!("http://localhost:{port}/") });

    // none: the connection and a name lookup refused by the host, each noted once, counted
    let r = call(&rt, "http", url(allowed)).await;
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text
            .contains(&format!("off the network: it tried 127.0.0.1:{allowed}")),
        "{}",
        r.text
    );
    let r = call(&rt, "resolve", json!({"name": "exfil.invalid"})).await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text.contains("it tried exfil.invalid"), "{}", r.text);
    call(&rt, "resolve", json!({"name": "exfil.invalid"})).await;
    assert_eq!(
        refused(&rt),
        [
            (format!("127.0.0.1:{allowed}"), 1),
            ("exfil.invalid".to_string(), 2)
        ]
    );
    let log = rt
        .host
        .servers()
        .into_iter()
        .find(|s| s.name == "web")
        .unwrap()
        .stderr_tail
        .join("\n");
    assert!(
        log.contains("blocked by sandbox: the network: it tried exfil.invalid"),
        "{log}"
    );

    // listening: only on a loopback address it bound, on a port the system gives or one nobody
    // listens on; never on every address (a socket never bound), a low port, or a taken one
    let r = call(&rt, "listen", json!({})).await;
    assert!(r.is_error && r.text.contains("Errno 13"), "{r:?}");
    let r = call(&rt, "listen", json!({"host": "127.0.0.1"})).await;
    assert!(
        !r.is_error && r.text.starts_with("listening on 127.0.0.1:"),
        "{r:?}"
    );
    for (host, port) in [
        ("0.0.0.0", 0),
        ("127.0.0.1", 80),
        ("127.0.0.1", allowed as i64),
    ] {
        let r = call(&rt, "listen", json!({"host": host, "port": port})).await;
        assert!(
            r.is_error && r.text.contains("Errno 13"),
            "{host}:{port} {r:?}"
        );
    }

    // one host, and its port: that and nothing else
    let config = rt
        .allow_server_network("web", Some(&format!("localhost:{allowed}")))
        .await
        .unwrap();
    let sb = &config.servers["web"].sandbox;
    assert_eq!(
        serde_json::to_value(sb).unwrap()["hosts"],
        json!([format!("localhost:{allowed}")])
    );
    apply(&rt, config).await;
    let r = call(&rt, "http", url(allowed)).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.text, "hello from the allowed host");
    let r = call(&rt, "http", url(other)).await;
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text.contains(&format!("it tried localhost:{other}")),
        "{}",
        r.text
    );
    let r = call(&rt, "resolve", json!({"name": "exfil.invalid"})).await;
    assert!(
        r.is_error && r.text.contains("it tried exfil.invalid"),
        "{r:?}"
    );

    // all of it
    let config = rt.allow_server_network("web", None).await.unwrap();
    apply(&rt, config).await;
    let r = call(&rt, "http", url(other)).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.text, "other");
    rt.host.shutdown().await;
    let _ = Duration::ZERO;
}

/// A file the sandbox refused is offered on the row ("Allow reading <path>": the view's
/// `readable`) and `Runtime::allow_server_read` saves it in its sandbox: it reads it after its
/// start again. A protected path (a system secret, the app's own folders) is never allowed that
/// way.
#[tokio::test]
async fn a_file_the_sandbox_refused_can_be_allowed_for_reading_but_never_a_protected_one() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().canonicalize().unwrap().join("outside.txt");
    std::fs::write(&outside, "read me").unwrap();
    let places = Places::in_dir(dir.path());
    let mut server = serde_json::to_value(python("net_server.py")).unwrap();
    server["sandbox"] = json!({"network": false});
    std::fs::write(
        &places.mcp,
        json!({"mcpServers": {"web": server}}).to_string(),
    )
    .unwrap();
    let secrets = Secrets::file_only(dir.path().join("secrets"), "the tests have no keyring");
    let rt = Runtime::open_at(places, secrets, builtin_bin(), Broker::allowing_all())
        .await
        .unwrap();
    rt.start_servers().await;
    let path = outside.display().to_string();
    let r = call(&rt, "read", json!({ "path": path })).await;
    assert!(r.is_error && r.text.contains("[Errno 13]"), "{r:?}");
    let sb = |rt: &Runtime| {
        rt.host
            .servers()
            .into_iter()
            .find(|s| s.name == "web")
            .unwrap()
            .sandbox
            .unwrap()
    };
    assert_eq!(sb(&rt).readable.as_deref(), Some(path.as_str()));

    let config = rt.allow_server_read("web", &path).await.unwrap();
    assert_eq!(
        serde_json::to_value(&config.servers["web"].sandbox).unwrap()["read"],
        json!([path])
    );
    apply(&rt, config).await;
    let r = call(&rt, "read", json!({ "path": path })).await;
    assert!(!r.is_error && r.text == "read me", "{r:?}");

    // protected: refused, nothing saved
    for p in [
        "/etc/shadow".to_string(),
        switchboard_engine::paths::config_dir()
            .display()
            .to_string(),
    ] {
        if std::path::Path::new(&p).exists() {
            let e = rt.allow_server_read("web", &p).await.unwrap_err();
            assert!(e.to_string().contains("credentials"), "{p}: {e}");
        }
    }
    for p in ["/", "relative/x"] {
        assert!(rt.allow_server_read("web", p).await.is_err(), "{p}");
    }
    assert_eq!(
        serde_json::to_value(&rt.mcp_config().servers["web"].sandbox).unwrap()["read"],
        json!([path])
    );
    rt.host.shutdown().await;
}
