//! Signing in to a remote server from the engine (the window's Sign in, headless): against the
//! MCP TypeScript SDK's example server and its demo authorization server, the browser step done
//! by following its redirects. The sign-in is kept in the secret store, not in `mcp.json`; a
//! server deleted takes its sign-in with it.

use serde_json::json;
use switchboard_engine::chat::Broker;
use switchboard_engine::mcp::oauth::FollowRedirects;
use switchboard_engine::mcp::{ServerStatus, Step};
use switchboard_engine::secrets::Secrets;
use switchboard_engine::{Places, Runtime};

use crate::support::{builtin_bin, sdk_oauth_server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_waits_for_its_sign_in_runs_after_it_and_its_deletion_forgets_it() {
    let (_server, port) = sdk_oauth_server();
    let dir = tempfile::tempdir().unwrap();
    let places = Places {
        settings: dir.path().join("settings.json"),
        mcp: dir.path().join("mcp.json"),
        database: dir.path().join("db.sqlite3"),
    };
    std::fs::write(
        &places.mcp,
        json!({"mcpServers": {"notes": {"type": "http", "url": format!("http://localhost:{port}/mcp")}}})
            .to_string(),
    )
    .unwrap();
    let secrets_dir = dir.path().join("secrets");
    let secrets = Secrets::file_only(secrets_dir.clone(), "the test has no keyring");
    let rt = Runtime::open_at(
        places.clone(),
        secrets,
        builtin_bin(),
        Broker::allowing_all(),
    )
    .await
    .unwrap();
    rt.start_servers().await;

    // it refused: it waits for a sign-in, and nothing opened a browser by itself
    let view = rt.host.servers().remove(0);
    assert_eq!(view.status, ServerStatus::Failed);
    assert_eq!(view.failed_step, Some(Step::SigningIn));
    let sign_in = view.sign_in.expect("its row offers a sign-in");
    assert!(sign_in.needed && !sign_in.signed_in);

    rt.host.sign_in("notes", &FollowRedirects).await.unwrap();
    let view = rt.host.servers().remove(0);
    assert_eq!(view.status, ServerStatus::Running, "{view:?}");
    assert!(view.tools.iter().any(|t| t.name == "greet"));
    let sign_in = view.sign_in.unwrap();
    assert!(sign_in.signed_in && !sign_in.needed);
    assert_eq!(
        sign_in.issuer.as_deref(),
        Some(format!("http://localhost:{}/", port + 1).as_str())
    );
    let out = rt
        .host
        .call_tool(
            "notes__greet",
            json!({"name": "Ada"}).as_object().unwrap().clone(),
            &Default::default(),
        )
        .await;
    assert_eq!(out.text, "Hello, Ada!", "{out:?}");
    let secrets_file = secrets_dir.join("secrets.json");
    assert!(std::fs::read_to_string(&secrets_file)
        .unwrap()
        .contains("access_token"));
    assert!(!std::fs::read_to_string(&places.mcp)
        .unwrap()
        .contains("token"));

    let applied = rt.delete_server("notes").await.unwrap();
    rt.host.apply_config(&applied).await;
    assert!(!std::fs::read_to_string(&secrets_file)
        .unwrap_or_default()
        .contains("access_token"));
    rt.host.shutdown().await;
}
