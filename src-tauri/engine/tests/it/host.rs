//! The host's servers over their life: start, fail clearly, crash and restart, shut down; their logs and roots.

use std::time::Duration;

use serde_json::json;
use switchboard_engine::mcp::{McpConfig, McpHost, ServerConfig, ServerStatus, Step};
use switchboard_engine::store::Approval;
use tokio_util::sync::CancellationToken;

use crate::support::*;

#[tokio::test]
async fn files_builtin_writes_and_reads_inside_its_sandbox_only() {
    let r = rig(vec![("files", builtin("files"))]).await;
    r.fake.set_responder(call_then_answer(vec![
        (
            "w",
            "files__write_file",
            json!({"path": "notes/todo.txt", "content": "buy milk"}),
        ),
        ("r", "files__read_file", json!({"path": "notes/todo.txt"})),
        ("x", "files__read_file", json!({"path": "../db.sqlite3"})),
    ]));
    let (summary, _) = r.turn("save a note").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let results: Vec<(Option<String>, bool)> = conv
        .tool_calls
        .iter()
        .map(|t| (t.result.clone(), t.is_error))
        .collect();
    assert!(!results[0].1 && results[0].0.as_deref().unwrap().contains("Wrote 8 bytes"));
    assert_eq!(results[1], (Some("buy milk".into()), false));
    assert!(
        results[2].1 && results[2].0.as_deref().unwrap().starts_with("Refused"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(r.dir.path().join("sandbox/notes/todo.txt")).unwrap(),
        "buy milk"
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn server_everything_echo_get_sum_and_a_bad_argument() {
    let r = rig(vec![("everything", everything())]).await;
    let s = r.status("everything");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));
    assert!(s.tools.iter().any(|t| t.exposed == "everything__echo"));
    assert!(s.tools.iter().any(|t| t.exposed == "everything__get-sum"));
    r.fake.set_responder(call_then_answer(vec![
        (
            "e",
            "everything__echo",
            json!({"message": "hello from Switchboard"}),
        ),
        ("s", "everything__get-sum", json!({"a": 2, "b": 40})),
        ("b", "everything__get-sum", json!({"a": "two", "b": 40})),
    ]));
    let (summary, _) = r.turn("use everything").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let tc = &conv.tool_calls;
    assert_eq!(tc.len(), 3);
    assert!(!tc[0].is_error);
    assert!(
        tc[0]
            .result
            .as_deref()
            .unwrap()
            .contains("hello from Switchboard"),
        "{:?}",
        tc[0].result
    );
    assert!(!tc[1].is_error);
    assert!(
        tc[1].result.as_deref().unwrap().contains("42"),
        "{:?}",
        tc[1].result
    );
    // a bad argument never reaches the server: the model reads what the schema wants
    assert!(tc[2].is_error, "{:?}", tc[2]);
    assert_eq!(tc[2].approval, Some(Approval::InvalidArguments));
    assert!(tc[2].result_raw.is_none(), "not sent: {:?}", tc[2]);
    let why = tc[2].result.as_deref().unwrap();
    assert!(why.contains("\"a\"") && why.contains("number"), "{why}");
    // the model saw all three
    assert_eq!(tool_messages(&r.fake.chat_requests()[1]).len(), 3);
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_server_crashing_mid_call_fails_alone_and_the_turn_goes_on() {
    let r = rig(vec![
        ("crashy", python("crash_server.py")),
        ("calculator", builtin("calculator")),
    ])
    .await;
    assert_eq!(r.status("crashy").status, ServerStatus::Running);
    r.fake.set_responder(call_then_answer(vec![
        ("1", "crashy__crash", json!({})),
        ("2", "calculator__multiply", json!({"a": 6, "b": 7})),
        ("3", "crashy__ok", json!({})),
    ]));
    let (summary, _) = r.turn("crash it").await;
    assert_eq!(summary.llm_error, None);
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let tc = &conv.tool_calls;
    assert!(tc[0].is_error);
    assert!(
        tc[0]
            .result
            .as_deref()
            .unwrap()
            .contains("stopped during the call (exited with code 3)"),
        "{:?}",
        tc[0].result
    );
    assert_eq!(
        tc[1].result.as_deref(),
        Some("42"),
        "the other server keeps working"
    );
    assert!(tc[2].is_error);
    assert!(
        tc[2].result.as_deref().unwrap().contains("is not running"),
        "{:?}",
        tc[2].result
    );
    let s = r.status("crashy");
    assert_eq!(s.status, ServerStatus::Failed);
    assert_eq!(s.exit.as_deref(), Some("exited with code 3"));
    assert_eq!(s.failed_step, Some(Step::Running));
    assert!(
        s.stderr_tail
            .iter()
            .any(|l| l.contains("simulated fatal error")),
        "{:?}",
        s.stderr_tail
    );
    assert_eq!(
        conv.messages.last().unwrap().content,
        format!(
            "Results: {}",
            tool_messages(&r.fake.chat_requests()[1])
                .iter()
                .map(|m| m["content"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join(" | ")
        )
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_missing_command_and_a_garbage_server_fail_clearly_while_others_run() {
    let r = rig(vec![
        (
            "ghost",
            ServerConfig::new("definitely-not-a-command-7f3a", &[]),
        ),
        ("garbage", python("garbage_server.py")),
        ("calculator", builtin("calculator")),
    ])
    .await;
    let ghost = r.status("ghost");
    assert_eq!(ghost.status, ServerStatus::Failed);
    assert!(
        ghost
            .error
            .as_deref()
            .unwrap()
            .contains("\"definitely-not-a-command-7f3a\" was not found on PATH"),
        "{ghost:?}"
    );
    assert_eq!(ghost.failed_step, Some(Step::FindingCommand));
    assert!(
        ghost
            .error
            .as_deref()
            .unwrap()
            .contains("Check the command, or give its full path"),
        "{ghost:?}"
    );
    let garbage = r.status("garbage");
    assert_eq!(garbage.status, ServerStatus::Failed, "{garbage:?}");
    assert_eq!(garbage.failed_step, Some(Step::Handshake));
    assert!(
        garbage
            .stderr_tail
            .iter()
            .any(|l| l.contains("garbage: starting up")),
        "{garbage:?}"
    );
    assert_eq!(r.status("calculator").status, ServerStatus::Running);
    assert!(r
        .host
        .tool_specs()
        .iter()
        .all(|t| t.name.starts_with("calculator__")));
    // the garbage server's process is gone, not left running
    if let Some(pid) = garbage.pid {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "garbage server {pid} still running"
        );
    }
    r.host.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_every_server_and_its_children() {
    // bash stays the parent of node, so the server has a child process
    let wrapped = ServerConfig::new(
        "bash",
        &[
            "-c",
            &format!(
                "node {} stdio; echo done",
                crate::support::everything_server().display()
            ),
        ],
    );
    let r = rig(vec![
        ("wrapped", wrapped),
        ("calculator", builtin("calculator")),
    ])
    .await;
    let pids: Vec<u32> = r.host.servers().iter().map(|s| s.pid.unwrap()).collect();
    assert_eq!(
        r.status("wrapped").status,
        ServerStatus::Running,
        "{:?}",
        r.status("wrapped")
    );
    let group_members = |pgid: u32| -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit(')')
                            .next()
                            .map(|r| r.split_whitespace().nth(2).map(String::from))
                    })
                    .flatten()
                    .and_then(|g| g.parse::<u32>().ok())
                    == Some(pgid)
            })
            .collect()
    };
    assert!(
        group_members(pids[1]).len() >= 2 || group_members(pids[0]).len() >= 2,
        "bash and node both run"
    );
    r.host.shutdown().await;
    for pid in pids {
        let left: Vec<u32> = group_members(pid)
            .into_iter()
            .filter(|p| {
                !std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ")
            })
            .collect();
        assert!(
            left.is_empty(),
            "processes of group {pid} still alive: {left:?}"
        );
    }
    assert!(r
        .host
        .servers()
        .iter()
        .all(|s| s.status == ServerStatus::Stopped));
}

/// mcp-server-time (PyPI, Python SDK 2.x, stdio) and an SDK 2.x server over Streamable HTTP speak
/// both eras: with discovery the host starts them with 2026-07-28 `server/discover`; without, with
/// the 2025 `initialize` handshake. The 2025-only server-everything (stdio and HTTP) falls back to
/// `initialize` either way. Calls work in every case.
#[tokio::test]
async fn both_protocol_eras_discover_with_fallback_to_initialize() {
    let time = ServerConfig::new(
        crate::support::pypi_server("mcp-server-time")
            .to_str()
            .unwrap(),
        &["--local-timezone", "UTC"],
    );
    let (_dual, dual_port) = crate::support::dual_era_http_server();
    let (_legacy_http, legacy_port) = crate::support::everything_over_http("streamableHttp");
    for discover in [true, false] {
        let mut config = McpConfig::default();
        config.servers.insert("time".into(), time.clone());
        config.servers.insert("everything".into(), everything());
        config.servers.insert(
            "dual".into(),
            ServerConfig::http(format!("http://127.0.0.1:{dual_port}/mcp")),
        );
        config.servers.insert(
            "legacy".into(),
            ServerConfig::http(format!("http://127.0.0.1:{legacy_port}/mcp")),
        );
        let mut opts = crate::support::host_options();
        opts.discover = discover;
        let host = McpHost::new(opts);
        host.start_all(&config).await;
        let views = host.servers();
        let version = |name: &str| {
            let v = views.iter().find(|s| s.name == name).unwrap();
            assert_eq!(v.status, ServerStatus::Running, "{v:?}");
            v.protocol_version.clone().unwrap()
        };
        let expected = if discover { "2026-07-28" } else { "2025-11-25" };
        assert_eq!(version("time"), expected, "discover = {discover}");
        assert_eq!(version("dual"), expected, "discover = {discover}");
        assert_eq!(version("everything"), "2025-11-25", "discover = {discover}");
        assert_eq!(version("legacy"), "2025-11-25", "discover = {discover}");
        let added = host
            .call_tool(
                "dual__add",
                json!({"a": 2, "b": 40}).as_object().unwrap().clone(),
                &CancellationToken::new(),
                None,
            )
            .await;
        assert_eq!((added.text.as_str(), added.is_error), ("42.0", false));
        let none = CancellationToken::new();
        let now = host
            .call_tool(
                "time__get_current_time",
                json!({"timezone": "Europe/Lisbon"})
                    .as_object()
                    .unwrap()
                    .clone(),
                &none,
                None,
            )
            .await;
        assert!(!now.is_error, "{}", now.text);
        assert!(now.text.contains("Europe/Lisbon"), "{}", now.text);
        let structured = &now.raw.as_ref().unwrap()["structuredContent"];
        assert_eq!(structured["timezone"], "Europe/Lisbon", "{:?}", now.raw);
        // a bad timezone is the tool's error, passed on for the model
        let bad = host
            .call_tool(
                "time__get_current_time",
                json!({"timezone": "Mars/Olympus"})
                    .as_object()
                    .unwrap()
                    .clone(),
                &none,
                None,
            )
            .await;
        assert!(bad.is_error, "{}", bad.text);
        let sum = host
            .call_tool(
                "everything__get-sum",
                json!({"a": 2, "b": 40}).as_object().unwrap().clone(),
                &none,
                None,
            )
            .await;
        assert!(sum.text.contains("42"), "{}", sum.text);
        host.shutdown().await;
    }
}

#[tokio::test]
async fn a_crashed_server_is_restarted_with_backoff_and_given_up_on_when_it_keeps_crashing() {
    let mut config = McpConfig::default();
    config
        .servers
        .insert("crashy".into(), python("crash_server.py"));
    config
        .servers
        .insert("flaky".into(), python("flaky_server.py"));
    let mut opts = crate::support::host_options();
    opts.restart_base_delay = Duration::from_millis(100);
    opts.max_restarts = 2;
    let host = McpHost::new(opts);
    host.start_all(&config).await;
    let none = CancellationToken::new();

    // crash it mid-call: it is marked failed, says it will restart, and comes back
    let out = host
        .call_tool("crashy__crash", Default::default(), &none, None)
        .await;
    assert!(out.is_error);
    let failed = wait_for_status(&host, "crashy", |s| s.status == ServerStatus::Failed).await;
    assert!(
        failed
            .error
            .as_deref()
            .unwrap()
            .contains("restarting in 0.1 s (attempt 1 of 2)"),
        "{failed:?}"
    );
    let back = wait_for_status(&host, "crashy", |s| s.status == ServerStatus::Running).await;
    assert_eq!(back.restarts, 1);
    assert_eq!(
        host.call_tool("crashy__ok", Default::default(), &none, None)
            .await
            .text,
        "fine"
    );

    // one that dies every time: two restarts (0.1 s, then 0.2 s), then it stays failed
    let gave_up = wait_for_status(&host, "flaky", |s| {
        s.status == ServerStatus::Failed
            && s.error.as_deref().unwrap_or_default().contains("gave up")
    })
    .await;
    assert_eq!(gave_up.restarts, 2);
    // it answers `server/discover` with an empty result: not 2026, not an error; the host
    // starts it again with `initialize` (which it speaks), and says so in its log
    assert!(
        gave_up
            .stderr_tail
            .iter()
            .any(|l| l.contains("starting it again with the 2025 initialize handshake")),
        "{:?}",
        gave_up.stderr_tail
    );
    assert!(gave_up
        .error
        .unwrap()
        .contains("gave up after 2 automatic restarts"));
    host.shutdown().await;
}

#[tokio::test]
async fn hostile_servers_hang_flood_or_answer_50_mb_and_the_others_keep_working() {
    let hostile = |mode: &str| {
        let mut c = python("hostile_server.py");
        c.args.push(mode.into());
        c
    };
    let r = rig(vec![
        ("floods", hostile("flood")),
        ("huge", hostile("huge")),
        ("calculator", builtin("calculator")),
    ])
    .await;
    // the one that never answers, in a host of its own that waits 4 s for a start (the others
    // are waited for until they are ready, however busy the machine)
    let mut opts = crate::support::host_options();
    opts.start_timeout = Duration::from_secs(4);
    let hung_host = McpHost::new(opts);
    let mut config = McpConfig::default();
    config.servers.insert("hangs".into(), hostile("hang-init"));
    hung_host.start_all(&config).await;
    let hangs = hung_host
        .servers()
        .into_iter()
        .find(|s| s.name == "hangs")
        .unwrap();
    assert_eq!(hangs.status, ServerStatus::Failed);
    assert!(
        hangs
            .error
            .as_deref()
            .unwrap()
            .contains("no answer to the MCP handshake, and it did nothing for 4 s"),
        "{hangs:?}"
    );
    assert_eq!(r.status("floods").status, ServerStatus::Running);
    r.fake.set_responder(call_then_answer(vec![
        ("1", "huge__huge", json!({})),
        ("2", "floods__ok", json!({})),
        ("3", "calculator__add", json!({"a": 1, "b": 1})),
    ]));
    // the turn ends (each call has its timeout): nothing here measures how fast
    let (summary, _) = r.turn("misbehave").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let huge = conv.tool_calls[0].result.clone().unwrap();
    assert!(
        huge.len() < 300 * 1024,
        "the 50 MB result is cut: {} bytes",
        huge.len()
    );
    assert!(
        huge.contains("[Switchboard cut this result: it was 52428800 bytes"),
        "{}",
        &huge[huge.len() - 200..]
    );
    assert!(
        conv.tool_calls[0].result_raw.is_none(),
        "the 50 MB raw result is not stored"
    );
    assert_eq!(conv.tool_calls[1].result.as_deref(), Some("ok"));
    assert_eq!(conv.tool_calls[2].result.as_deref(), Some("2"));
    // what the model got is bounded too
    let sent = r.fake.chat_requests()[1].to_string();
    assert!(
        sent.len() < 400 * 1024,
        "{} bytes sent to the model",
        sent.len()
    );
    // the flood is kept to its last lines
    let floods = r.status("floods");
    assert!(floods.stderr_tail.len() <= 200);
    r.host.shutdown().await;
    hung_host.shutdown().await;
}

#[tokio::test]
async fn a_servers_log_level_is_set_and_its_log_messages_are_kept() {
    let mut config = McpConfig::default();
    let mut dynamic = python("dynamic_server.py");
    dynamic.log_level = Some("debug".into());
    config.servers.insert("dynamic".into(), dynamic);
    let host = McpHost::new(crate::support::host_options());
    host.start_all(&config).await;
    let none = CancellationToken::new();
    let t = std::time::Instant::now();
    // logging/setLevel is sent right after start
    while host
        .call_tool("dynamic__level", Default::default(), &none, None)
        .await
        .text
        != "debug"
    {
        assert!(t.elapsed() < crate::support::READY, "the level was not set");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        host.call_tool("dynamic__log", Default::default(), &none, None)
            .await
            .text,
        "logged"
    );
    let log = host.servers()[0].stderr_tail.clone();
    assert!(
        log.contains(&"[warning] dyn: disk almost full".to_string()),
        "{log:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn roots_are_offered_and_a_change_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("alpha"), dir.path().join("beta dir"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut config = McpConfig::default();
    config.servers.insert("everything".into(), everything());
    let host = McpHost::new(crate::support::host_options());
    host.set_roots(vec![a.clone()]).await;
    host.start_all(&config).await;
    let none = CancellationToken::new();
    // server-everything offers get-roots-list only to clients that declare roots, and asks for them
    let t = std::time::Instant::now();
    let listed = loop {
        let out = host
            .call_tool(
                "everything__get-roots-list",
                Default::default(),
                &none,
                None,
            )
            .await;
        if out.text.contains("alpha") || t.elapsed() > crate::support::READY {
            break out;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        listed.text.contains(&format!("file://{}", a.display())),
        "{}",
        listed.text
    );
    host.set_roots(vec![a.clone(), b.clone()]).await;
    let t = std::time::Instant::now();
    loop {
        let out = host
            .call_tool(
                "everything__get-roots-list",
                Default::default(),
                &none,
                None,
            )
            .await;
        if out.text.contains("beta%20dir") {
            break;
        }
        assert!(
            t.elapsed() < crate::support::READY,
            "roots/list_changed was not acted on: {}",
            out.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host.shutdown().await;
}
