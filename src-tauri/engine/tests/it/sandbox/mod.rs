//! Stdio servers in the kernel sandbox (Landlock and seccomp), with real servers: the npm
//! filesystem server refused by the kernel outside what its sandbox allows, a Python server
//! refused TCP and UDP with the network off (and allowed them with it on), the probe server
//! trying every way out (`probe.rs`), an npx and a uvx server without network (its package fetched by the
//! host), the built-ins sandboxed by default, and what
//! happens on a kernel without Landlock. Tests that need Landlock say so and pass on a kernel
//! without it; the last one needs none.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::mcp::sandbox::{kernel_abi, supervise, SandboxState, BLOCKED_NOTE};
use switchboard_engine::mcp::{
    McpConfig, McpHost, SandboxConfig, SandboxSetting, ServerConfig, ServerStatus, ServerView,
    Step, ToolOutcome,
};
use switchboard_engine::secrets::SecretValue;
use tokio_util::sync::CancellationToken;

use crate::support::*;

mod container;
mod fetch;
mod folders;
mod network;
mod probe;
mod real;

/// Whether this kernel can sandbox; says so when it cannot.
fn landlock() -> bool {
    let abi = kernel_abi();
    if abi == 0 {
        eprintln!("skipped: this kernel has no Landlock");
    }
    abi > 0
}

fn sandboxed(cfg: ServerConfig, sandbox: SandboxConfig) -> ServerConfig {
    ServerConfig {
        sandbox: Some(SandboxSetting::On(sandbox)),
        ..cfg
    }
}

async fn host(dir: &Path, servers: Vec<(&str, ServerConfig)>, abi: Option<i32>) -> Arc<McpHost> {
    let mut opts = host_options();
    opts.restart_base_delay = Duration::from_secs(30);
    opts.sandbox_dir = dir.join("private");
    opts.landlock_abi = abi;
    let host = McpHost::new(opts);
    host.start_all(&config(servers)).await;
    host
}

/// [`host`] with the app's PATH `path` (what the host finds commands, and the fetch its npm or
/// uv, on).
async fn host_with_path(
    dir: &Path,
    servers: Vec<(&str, ServerConfig)>,
    path: Option<String>,
) -> Arc<McpHost> {
    let mut opts = host_options();
    opts.restart_base_delay = Duration::from_secs(30);
    opts.sandbox_dir = dir.join("private");
    opts.path_var = path;
    let host = McpHost::new(opts);
    host.start_all(&config(servers)).await;
    host
}

fn config(servers: Vec<(&str, ServerConfig)>) -> McpConfig {
    let mut config = McpConfig::default();
    for (name, cfg) in servers {
        config.servers.insert(name.into(), cfg);
    }
    config
}

fn view(host: &McpHost, name: &str) -> ServerView {
    host.servers().into_iter().find(|s| s.name == name).unwrap()
}

async fn call(host: &McpHost, exposed: &str, args: Value) -> ToolOutcome {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    host.call_tool(exposed, args, &CancellationToken::new(), None)
        .await
}

/// A line of `/proc/PID/status` (`Seccomp`, `NoNewPrivs`).
fn proc_status(pid: u32, key: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[tokio::test]
async fn the_filesystem_server_is_refused_by_the_kernel_outside_its_sandbox() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap().join("data");
    let (inside, outside) = (base.join("inside"), base.join("outside"));
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(inside.join("a.txt"), "inside the sandbox").unwrap();
    std::fs::write(outside.join("secret.txt"), "not for the server").unwrap();
    let s = |p: &Path| p.display().to_string();
    // the server itself is told it may use all of data/; its sandbox only lets it read inside/
    let server = ServerConfig::new("node", &[&s(&filesystem_server()), &s(&base)]);
    let fs = sandboxed(
        server.clone(),
        SandboxConfig {
            read: vec![s(&inside), "/definitely/not/here".into()],
            ..Default::default()
        },
    );
    let host = host(dir.path(), vec![("fs", fs), ("open", server)], None).await;
    let v = view(&host, "fs");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    let sb = v.sandbox.clone().expect("sandboxed");
    assert_eq!(sb.state, SandboxState::On);
    assert!(!sb.network && !sb.default && sb.kernel_abi > 0);
    assert_eq!(view(&host, "open").sandbox, None);

    // inside: read works
    let r = call(
        &host,
        "fs__read_text_file",
        json!({"path": s(&inside.join("a.txt"))}),
    )
    .await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text.contains("inside the sandbox"), "{}", r.text);

    // outside: the server thinks it may (data/ is its allowed folder), the kernel refuses
    let secret = s(&outside.join("secret.txt"));
    let r = call(&host, "fs__read_text_file", json!({ "path": secret })).await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text.contains("EACCES"), "{}", r.text);
    assert!(
        r.text
            .contains(&format!("[Switchboard] Blocked by sandbox: {secret}")),
        "{}",
        r.text
    );
    // a write where it may only read (the server's checks list data/ first: refused as well)
    let r = call(
        &host,
        "fs__write_file",
        json!({"path": s(&inside.join("new.txt")), "content": "x"}),
    )
    .await;
    assert!(r.is_error && r.text.contains("EACCES"), "{r:?}");
    assert!(r.text.contains("Blocked by sandbox"), "{}", r.text);
    assert!(!inside.join("new.txt").exists());

    // the same server without a sandbox reads it: the refusal was the kernel's, not the server's
    let r = call(&host, "open__read_text_file", json!({ "path": secret })).await;
    assert!(
        !r.is_error && r.text.contains("not for the server"),
        "{r:?}"
    );

    let v = view(&host, "fs");
    let log = v.stderr_tail.join("\n");
    assert!(
        log.contains(&format!("{BLOCKED_NOTE}{secret}")),
        "the log says what the sandbox blocked:\n{log}"
    );
    assert!(
        log.contains("/definitely/not/here does not exist, so it is not in the sandbox"),
        "{log}"
    );
    let blocked = v
        .sandbox
        .unwrap()
        .blocked
        .expect("the row tells the last refusal");
    assert!(blocked.starts_with(&s(&base)), "{blocked}");
    assert!(!view(&host, "open")
        .stderr_tail
        .join("\n")
        .contains(BLOCKED_NOTE));
    host.shutdown().await;
}

#[tokio::test]
async fn with_the_network_off_tcp_and_udp_are_refused_and_with_it_on_they_work() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let net = |on: bool| {
        sandboxed(
            python("net_server.py"),
            SandboxConfig {
                network: on,
                ..Default::default()
            },
        )
    };
    let host = host(
        dir.path(),
        vec![("closed", net(false)), ("open", net(true))],
        None,
    )
    .await;
    for name in ["closed", "open"] {
        let v = view(&host, name);
        assert_eq!(v.status, ServerStatus::Running, "{v:?}");
        assert_eq!(v.sandbox.unwrap().state, SandboxState::On);
    }

    // off: refused both. Where the host supervises, its TCP connect goes to the host, which
    // refuses it (EACCES) and says exactly where it tried; UDP sockets are refused (seccomp,
    // EPERM). Where it does not, no socket at all (EPERM), told from the server's words.
    let supervised = supervise::available();
    let r = call(&host, "closed__tcp", json!({ "port": tcp_port })).await;
    if supervised {
        assert!(r.is_error && r.text.contains("[Errno 13]"), "{r:?}");
        let said = format!(
            "[Switchboard] The sandbox kept the server \"closed\" off the network: it tried 127.0.0.1:{tcp_port}."
        );
        assert!(r.text.contains(&said), "{}", r.text);
        assert!(
            !r.text.contains("Blocked by sandbox"),
            "told once: {}",
            r.text
        );
        // the card's part: the server and what it tried, as data
        let note = &r.raw.as_ref().unwrap()["_switchboard"];
        assert_eq!(note["server"], "closed");
        assert_eq!(
            note["networkRefused"][0]["target"],
            format!("127.0.0.1:{tcp_port}")
        );
        // counted, not repeated
        let again = call(&host, "closed__tcp", json!({ "port": tcp_port })).await;
        assert!(again.is_error, "{again:?}");
        let sb = view(&host, "closed").sandbox.unwrap();
        let tried: Vec<(String, u64, bool)> = sb
            .attempts
            .iter()
            .map(|a| (a.target.clone(), a.count, a.allowed))
            .collect();
        assert_eq!(tried, [(format!("127.0.0.1:{tcp_port}"), 2, false)]);
    } else {
        assert!(r.is_error && r.text.contains("[Errno 1]"), "{r:?}");
        assert!(
            r.text.contains("Blocked by sandbox: network access"),
            "{}",
            r.text
        );
    }
    let r = call(&host, "closed__udp", json!({ "port": udp_port })).await;
    assert!(r.is_error && r.text.contains("[Errno 1]"), "{r:?}");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), tcp.accept())
            .await
            .is_err(),
        "no TCP connection came"
    );
    let mut buf = [0u8; 64];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), udp.recv_from(&mut buf))
            .await
            .is_err(),
        "no UDP datagram came"
    );
    let log = view(&host, "closed").stderr_tail.join("\n");
    assert!(
        log.contains(&format!("{BLOCKED_NOTE}network access")),
        "{log}"
    );

    // on: both get through
    let r = call(&host, "open__tcp", json!({ "port": tcp_port })).await;
    assert!(!r.is_error, "{r:?}");
    let (mut stream, _) = tokio::time::timeout(READY, tcp.accept())
        .await
        .expect("a connection")
        .unwrap();
    let mut got = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut got)
        .await
        .unwrap();
    assert_eq!(got, "hello over tcp");
    let r = call(&host, "open__udp", json!({ "port": udp_port })).await;
    assert!(!r.is_error, "{r:?}");
    let (n, _) = tokio::time::timeout(READY, udp.recv_from(&mut buf))
        .await
        .expect("a datagram")
        .unwrap();
    assert_eq!(&buf[..n], b"hello over udp");

    // the filter is there only with the network off; both run with no_new_privs (Landlock's due)
    let pid = |name: &str| view(&host, name).pid.unwrap();
    // both are filtered (the network rules only without it); both run with no_new_privs
    assert_eq!(proc_status(pid("closed"), "Seccomp"), "2");
    assert_eq!(proc_status(pid("open"), "Seccomp"), "2");
    assert_eq!(proc_status(pid("open"), "NoNewPrivs"), "1");
    // files stay confined with the network on: its own fixture folder is readable (its
    // script's project), the test's temporary folder is not
    let outside = dir.path().join("x.txt");
    std::fs::write(&outside, "x").unwrap();
    let r = call(
        &host,
        "open__read",
        json!({"path": outside.display().to_string()}),
    )
    .await;
    assert!(r.is_error && r.text.contains("[Errno 13]"), "{r:?}");
    host.shutdown().await;
}

/// With the network on, the certificate settings a TLS client reads reach the server, and the
/// files and folders they name are readable in its sandbox (and nothing beside them); without
/// it, neither. Here they come from the server's config (the app's own environment, which they
/// come from too, is the unit test's: `sandbox/env.rs`).
#[tokio::test]
async fn with_the_network_the_certificates_it_is_told_to_trust_reach_the_server() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let corp = dir.path().canonicalize().unwrap().join("corp");
    std::fs::create_dir_all(corp.join("certs")).unwrap();
    std::fs::write(corp.join("ca.pem"), "the company's CA").unwrap();
    std::fs::write(corp.join("certs/other.pem"), "another CA").unwrap();
    std::fs::write(corp.join("beside.txt"), "not a certificate").unwrap();
    let s = |p: &Path| p.display().to_string();
    let net = |on: bool| {
        let mut c = sandboxed(
            python("net_server.py"),
            SandboxConfig {
                network: on,
                ..Default::default()
            },
        );
        c.env.insert(
            "SSL_CERT_FILE".into(),
            SecretValue::Plain(s(&corp.join("ca.pem"))),
        );
        c.env.insert(
            "SSL_CERT_DIR".into(),
            SecretValue::Plain(s(&corp.join("certs"))),
        );
        c
    };
    let host = host(
        dir.path(),
        vec![("closed", net(false)), ("open", net(true))],
        None,
    )
    .await;
    for name in ["closed", "open"] {
        assert_eq!(view(&host, name).status, ServerStatus::Running);
    }
    let read = |server: &'static str, p: std::path::PathBuf| {
        let host = host.clone();
        async move { call(&host, &format!("{server}__read"), json!({"path": s(&p)})).await }
    };
    let r = call(&host, "open__env", json!({"name": "SSL_CERT_FILE"})).await;
    assert_eq!(r.text, s(&corp.join("ca.pem")));
    let r = read("open", corp.join("ca.pem")).await;
    assert!(!r.is_error && r.text == "the company's CA", "{r:?}");
    let r = read("open", corp.join("certs/other.pem")).await;
    assert!(!r.is_error && r.text == "another CA", "{r:?}");
    let r = read("open", corp.join("beside.txt")).await;
    assert!(r.is_error && r.text.contains("[Errno 13]"), "{r:?}");
    // without the network the files are not granted
    let r = read("closed", corp.join("ca.pem")).await;
    assert!(r.is_error && r.text.contains("[Errno 13]"), "{r:?}");
    host.shutdown().await;
}

/// An npm server from the registry in a sandbox without network, as the catalog installs one:
/// the host fetches its pinned package (npm, scripts off) into the server's own cache, and npx
/// runs it offline inside; the next start does not fetch again. Needs the npm registry, as the
/// test servers' own install does.
#[tokio::test]
async fn an_npx_server_without_network_is_fetched_for_its_sandbox_and_runs_offline() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    const PACKAGE: &str = "@modelcontextprotocol/server-memory@2026.1.26";
    let memory = sandboxed(
        ServerConfig::new("npx", &["-y", PACKAGE]),
        SandboxConfig::default(),
    );
    let host = host(dir.path(), vec![("memory", memory.clone())], None).await;
    let v = view(&host, "memory");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert!(!v.sandbox.as_ref().unwrap().network);
    // no way out: the package came from the host's fetch, not from the server
    assert_eq!(proc_status(v.pid.unwrap(), "Seccomp"), "2");
    let log = v.stderr_tail.join("\n");
    assert!(
        log.contains(&format!("fetching {PACKAGE} for its sandbox")),
        "{log}"
    );
    assert!(dir
        .path()
        .join("private/memory/cache/npm/_cacache")
        .is_dir());
    let r = call(&host, "memory__read_graph", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text.contains("entities"), "{}", r.text);
    host.shutdown().await;

    // started again: from its cache, nothing fetched
    let host = self::host(dir.path(), vec![("memory", memory)], None).await;
    let v = view(&host, "memory");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert!(!v.stderr_tail.join("\n").contains("fetching"), "{v:?}");
    host.shutdown().await;
}

/// A PyPI server run by uvx in a sandbox without network, as the catalog installs one: the host
/// fetches its pinned package (uv, wheels only, nothing built) into the server's own cache, and
/// uvx resolves and runs it offline inside; the next start does not fetch again. uv is on its
/// own as a user has it (`tests/servers/.uv`, no Python beside it), on the app's PATH, where the
/// fetch finds it and the system's Python; uvx finds that Python on the server's own PATH. Needs
/// PyPI, as the test servers' own install does.
#[tokio::test]
async fn a_uvx_server_without_network_is_fetched_for_its_sandbox_and_runs_offline() {
    if !landlock() {
        return;
    }
    let uvx = repo_dir().join("tests/servers/.uv/bin/uvx");
    assert!(
        uvx.is_file(),
        "{} is missing: run `scripts/install-deps.sh --test` (make test does)",
        uvx.display()
    );
    let dir = tempfile::tempdir().unwrap();
    const PACKAGE: &str = "mcp-server-time==2026.10.19";
    let mut time = sandboxed(
        ServerConfig::new(
            uvx.display().to_string(),
            &[PACKAGE, "--local-timezone", "UTC"],
        ),
        SandboxConfig::default(),
    );
    time.env
        .insert("PATH".into(), SecretValue::Plain("/usr/bin:/bin".into()));
    let app_path = Some(format!("{}:/usr/bin:/bin", uvx.parent().unwrap().display()));
    let host = host_with_path(dir.path(), vec![("time", time.clone())], app_path.clone()).await;
    let v = view(&host, "time");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert!(!v.sandbox.as_ref().unwrap().network);
    // no way out: the package came from the host's fetch, not from the server
    assert_eq!(proc_status(v.pid.unwrap(), "Seccomp"), "2");
    let log = v.stderr_tail.join("\n");
    assert!(
        log.contains(&format!("fetching {PACKAGE} for its sandbox")) && log.contains("(uv, "),
        "{log}"
    );
    assert!(dir.path().join("private/time/cache/uv").is_dir());
    assert!(dir
        .path()
        .join("private/.fetched/time/uv.fetched")
        .is_file());
    let r = call(
        &host,
        "time__get_current_time",
        json!({"timezone": "Europe/Lisbon"}),
    )
    .await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text.contains("Europe/Lisbon"), "{}", r.text);
    host.shutdown().await;

    // started again: from its cache, nothing fetched
    let host = host_with_path(dir.path(), vec![("time", time.clone())], app_path.clone()).await;
    let v = view(&host, "time");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert!(!v.stderr_tail.join("\n").contains("fetching"), "{v:?}");
    host.shutdown().await;

    // a package that exists only as source is refused before it runs, in uv's words: building
    // it would run its code outside the sandbox
    let mut source_only = time;
    source_only.args = vec!["pyperclip==1.9.0".into()];
    let host = host_with_path(dir.path(), vec![("src", source_only)], app_path).await;
    let v = view(&host, "src");
    assert_eq!(v.status, ServerStatus::Failed, "{v:?}");
    assert_eq!(v.failed_step, Some(Step::FetchingPackage), "{v:?}");
    let error = v.error.clone().unwrap_or_default();
    assert!(error.contains("uv could not fetch it"), "{error}");
    host.shutdown().await;
}

#[tokio::test]
async fn the_builtins_run_sandboxed_by_default_and_still_work() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("files-root");
    let mut files = builtin("files");
    files
        .args
        .extend(["--root".into(), root.display().to_string()]);
    // as an existing install has them: no "sandbox" in their config
    assert_eq!(files.sandbox, None);
    let host = host(
        dir.path(),
        vec![("calculator", builtin("calculator")), ("files", files)],
        None,
    )
    .await;
    for name in ["calculator", "files"] {
        let v = view(&host, name);
        assert_eq!(v.status, ServerStatus::Running, "{v:?}");
        let sb = v.sandbox.unwrap();
        assert_eq!(sb.state, SandboxState::On);
        assert!(sb.default && !sb.network, "{sb:?}");
        assert!(sb.read.is_empty() && sb.write.is_empty());
        // no network for either: the filter is in force
        assert_eq!(proc_status(v.pid.unwrap(), "Seccomp"), "2", "{name}");
        // each has its private folder with its TMPDIR
        assert!(dir.path().join("private").join(name).join("tmp").is_dir());
    }
    // files: its folder is its own (made by the host before the sandbox), calculator: none
    assert_eq!(
        view(&host, "files").sandbox.unwrap().own,
        vec![root.display().to_string()]
    );
    assert!(view(&host, "calculator").sandbox.unwrap().own.is_empty());

    let r = call(&host, "calculator__multiply", json!({"a": 6, "b": 7})).await;
    assert_eq!((r.is_error, r.text.as_str()), (false, "42"));
    let r = call(
        &host,
        "files__write_file",
        json!({"path": "notes/todo.txt", "content": "buy milk"}),
    )
    .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("notes/todo.txt")).unwrap(),
        "buy milk"
    );
    let r = call(&host, "files__read_file", json!({"path": "notes/todo.txt"})).await;
    assert_eq!((r.is_error, r.text.as_str()), (false, "buy milk"));
    let r = call(
        &host,
        "files__delete_file",
        json!({"path": "notes/todo.txt"}),
    )
    .await;
    assert!(!r.is_error, "{r:?}");

    // and sandbox: false turns the default off
    let mut config = config(vec![("calculator", builtin("calculator"))]);
    config.servers.get_mut("calculator").unwrap().sandbox = Some(SandboxSetting::Off);
    host.apply_config(&config).await;
    let v = view(&host, "calculator");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert_eq!(v.sandbox, None);
    assert_eq!(proc_status(v.pid.unwrap(), "Seccomp"), "0");
    host.shutdown().await;
}

#[tokio::test]
async fn without_landlock_a_sandboxed_server_waits_for_the_users_agreement() {
    let dir = tempfile::tempdir().unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let locked = sandboxed(python("net_server.py"), SandboxConfig::default());
    let servers = vec![
        ("locked", locked.clone()),
        ("calculator", builtin("calculator")),
        ("plain", python("net_server.py")),
    ];
    // the host believes the kernel has no Landlock
    let host = host(dir.path(), servers.clone(), Some(0)).await;
    for name in ["locked", "calculator"] {
        let v = view(&host, name);
        assert_eq!(v.status, ServerStatus::Failed, "{v:?}");
        assert_eq!(v.failed_step, Some(Step::Sandbox));
        assert!(v.error.as_deref().unwrap().contains("no Landlock"), "{v:?}");
        assert_eq!(v.pid, None, "never started");
        let sb = v.sandbox.unwrap();
        assert_eq!((sb.state, sb.kernel_abi), (SandboxState::Unsupported, 0));
    }
    // a server that asks for no sandbox runs as ever
    assert_eq!(view(&host, "plain").status, ServerStatus::Running);
    // its tools were never listed: the model is offered none of them
    let r = call(&host, "locked__tcp", json!({ "port": port })).await;
    assert!(r.is_error, "{r:?}");

    // the user agrees (the row's button saves this in its config): it runs, unsandboxed
    let mut agreed = config(servers);
    for name in ["locked", "calculator"] {
        let cfg = agreed.servers.get_mut(name).unwrap();
        cfg.sandbox = Some(SandboxSetting::On(SandboxConfig {
            allow_unsandboxed: true,
            ..Default::default()
        }));
    }
    host.apply_config(&agreed).await;
    for name in ["locked", "calculator"] {
        let v = view(&host, name);
        assert_eq!(v.status, ServerStatus::Running, "{v:?}");
        assert_eq!(v.sandbox.unwrap().state, SandboxState::Waived);
        assert!(
            v.stderr_tail
                .join("\n")
                .contains("running without its sandbox: this system's kernel has no Landlock"),
            "{:?}",
            v.stderr_tail
        );
        assert_eq!(proc_status(v.pid.unwrap(), "NoNewPrivs"), "0");
    }
    // unsandboxed indeed: the network is there
    let r = call(&host, "locked__tcp", json!({ "port": port })).await;
    assert!(!r.is_error, "{r:?}");
    host.shutdown().await;
}
