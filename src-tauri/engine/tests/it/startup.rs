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
