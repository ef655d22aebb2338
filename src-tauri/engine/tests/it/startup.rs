//! The host while the app starts: the login shell is still being asked for its PATH, and the
//! configured servers are already listed, as starting; the stdio ones start once the PATH is
//! known, on that PATH.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use switchboard_engine::mcp::{McpConfig, McpHost, ServerConfig, ServerStatus};

use crate::support::*;

#[tokio::test]
async fn servers_are_listed_as_starting_while_the_path_is_looked_up() {
    // a command only the PATH set later has
    let bin = tempfile::tempdir().unwrap();
    let script = bin.path().join("calc-on-login-path");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec '{}' mcp-server calculator\n",
            builtin_bin().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut opts = host_options();
    opts.path_var = Some("/usr/bin:/bin".into());
    let host = McpHost::new(opts);
    let mut config = McpConfig::default();
    config
        .servers
        .insert("calc".into(), ServerConfig::new("calc-on-login-path", &[]));
    host.path_pending();
    let starting = {
        let host = host.clone();
        tokio::spawn(async move { host.start_all(&config).await })
    };
    // listed at once, starting, and waiting: its command is not looked for yet
    let t = std::time::Instant::now();
    while host.servers().is_empty() {
        assert!(t.elapsed() < READY, "not listed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let v = host.servers().remove(0);
    assert_eq!(
        (v.name.as_str(), v.status),
        ("calc", ServerStatus::Starting),
        "{v:?}"
    );
    assert!(!starting.is_finished());
    // the login shell's PATH comes: it starts on it
    host.set_path(Some(format!("{}:/usr/bin:/bin", bin.path().display())));
    starting.await.unwrap();
    let v = host.servers().remove(0);
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    host.shutdown().await;
}

/// Issue 38 §3: saving a server's config is the engine's one operation, save and apply. Before
/// the servers are started a change is only saved (the command line's `catalog install` starts
/// nothing); once they are, every change reaches the host, in order, and quick changes end as
/// the last one says.
#[tokio::test]
async fn a_saved_change_reaches_the_running_host_in_order_and_nothing_starts_before() {
    let status = |rt: &switchboard_engine::Runtime, name: &str| {
        rt.host
            .servers()
            .into_iter()
            .find(|s| s.name == name)
            .map(|s| s.status)
    };
    let dir = tempfile::tempdir().unwrap();
    let rt = crate::registry::catalog_runtime(dir.path(), "http://127.0.0.1:9").await;
    rt.save_server(None, None, "calc", builtin("calculator"))
        .await
        .unwrap();
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        status(&rt, "calc"),
        None,
        "nothing starts before the servers do"
    );
    rt.start_servers().await;
    assert_eq!(status(&rt, "calc"), Some(ServerStatus::Running));
    // quick changes, not waited for one by one
    rt.set_server_enabled("calc", false).await.unwrap();
    rt.save_server(None, None, "calc2", builtin("calculator"))
        .await
        .unwrap();
    rt.set_server_enabled("calc", true).await.unwrap();
    rt.delete_server("calc2").await.unwrap();
    rt.set_server_enabled("calc", false).await.unwrap();
    rt.mcp_applied().await;
    assert_eq!(status(&rt, "calc"), Some(ServerStatus::Disabled));
    assert_eq!(status(&rt, "calc2"), None);
    rt.set_server_enabled("calc", true).await.unwrap();
    rt.mcp_applied().await;
    wait_for_status(&rt.host, "calc", |s| s.status == ServerStatus::Running).await;
    rt.host.shutdown().await;
}
