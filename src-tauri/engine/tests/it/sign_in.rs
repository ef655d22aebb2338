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
    let (_server, port, auth_port) = sdk_oauth_server();
    let dir = tempfile::tempdir().unwrap();
    let places = notes_places(dir.path(), &format!("http://localhost:{port}/mcp"), "http");
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
        Some(format!("http://localhost:{auth_port}/").as_str())
    );
    let out = rt
        .host
        .call_tool(
            "notes__greet",
            json!({"name": "Ada"}).as_object().unwrap().clone(),
            &Default::default(),
            None,
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

    rt.delete_server("notes").await.unwrap();
    rt.mcp_applied().await;
    assert!(!std::fs::read_to_string(&secrets_file)
        .unwrap_or_default()
        .contains("access_token"));
    rt.host.shutdown().await;
}

/// What the OAuth fixture's authorization server did so far (code, refresh, revoke).
async fn events(port: u16) -> Vec<String> {
    reqwest::get(format!("http://127.0.0.1:{port}/events"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The app's files in `dir`, with one remote server, `notes`, at `url` over `transport` ("http"
/// or "sse") in its `mcp.json`.
pub(crate) fn notes_places(dir: &std::path::Path, url: &str, transport: &str) -> Places {
    let places = Places {
        database: dir.join("db.sqlite3"),
        ..Places::in_dir(dir)
    };
    std::fs::write(
        &places.mcp,
        json!({"mcpServers": {"notes": {"type": transport, "url": url}}}).to_string(),
    )
    .unwrap();
    places
}

/// Tokens that expire are refreshed (the refresh token rotates and the new one is kept, so the
/// next run of the app still signs in with it), and Sign out revokes them at the authorization
/// server: against a Python SDK 2.x server that is its own authorization server, whose access
/// tokens live 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_tokens_are_refreshed_kept_across_runs_and_revoked_on_sign_out() {
    let (_server, port) = crate::support::oauth_server(2);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let secrets_dir = dir.path().join("secrets");
    let open = || async {
        let rt = Runtime::open_at(
            notes_places(dir.path(), &url, "http"),
            Secrets::file_only(secrets_dir.clone(), "the test has no keyring"),
            builtin_bin(),
            Broker::allowing_all(),
        )
        .await
        .unwrap();
        rt.start_servers().await;
        rt
    };
    let whoami = |rt: &Runtime| {
        let host = rt.host.clone();
        async move {
            host.call_tool(
                "notes__whoami",
                Default::default(),
                &Default::default(),
                None,
            )
            .await
        }
    };

    let rt = open().await;
    rt.host.sign_in("notes", &FollowRedirects).await.unwrap();
    assert_eq!(whoami(&rt).await.text, "signed in");
    // the access token expires; the next call still works, on a refreshed one
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let out = whoami(&rt).await;
    assert!(!out.is_error, "{out:?}");
    let seen = events(port).await;
    assert_eq!(seen.first().map(String::as_str), Some("code"));
    assert!(seen.iter().any(|e| e == "refresh"), "{seen:?}");
    rt.host.shutdown().await;
    drop(rt);

    // the next run: the kept (rotated) refresh token still works, no new sign-in
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let rt = open().await;
    let view = rt.host.servers().remove(0);
    assert_eq!(view.status, ServerStatus::Running, "{view:?}");
    assert_eq!(whoami(&rt).await.text, "signed in");
    assert_eq!(
        events(port).await.iter().filter(|e| *e == "code").count(),
        1,
        "signed in once"
    );

    // Sign out: revoked at the authorization server, forgotten here, and the server wants a
    // sign-in again
    rt.host.sign_out("notes").await.unwrap();
    assert!(events(port).await.iter().any(|e| e == "revoke"));
    let view = rt.host.servers().remove(0);
    assert_eq!(view.failed_step, Some(Step::SigningIn), "{view:?}");
    rt.host.shutdown().await;
}

/// The legacy HTTP+SSE transport signs in too (the "Streamable HTTP (and SSE)"): against
/// the same Python SDK server over SSE. The stream's 401 waits for a sign-in; after it, the token
/// goes with the stream and every POST, an expired one is refreshed, and a server that forgot
/// every token (revoked behind the app's back) makes the next call ask for a sign-in again, which
/// the window shows as its Sign in button.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_server_signs_in_refreshes_and_asks_again_when_its_tokens_are_gone() {
    let (_server, port) = crate::support::oauth_server_over(2, "sse");
    let url = format!("http://127.0.0.1:{port}/sse");
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::open_at(
        notes_places(dir.path(), &url, "sse"),
        Secrets::file_only(dir.path().join("secrets"), "the test has no keyring"),
        builtin_bin(),
        Broker::allowing_all(),
    )
    .await
    .unwrap();
    rt.start_servers().await;
    let view = rt.host.servers().remove(0);
    assert_eq!(view.failed_step, Some(Step::SigningIn), "{view:?}");
    assert!(view.sign_in.expect("its row offers a sign-in").needed);

    rt.host.sign_in("notes", &FollowRedirects).await.unwrap();
    let view = rt.host.servers().remove(0);
    assert_eq!(view.status, ServerStatus::Running, "{view:?}");
    let sign_in = view.sign_in.unwrap();
    assert!(sign_in.signed_in && !sign_in.needed);
    let whoami = || {
        let host = rt.host.clone();
        async move {
            host.call_tool(
                "notes__whoami",
                Default::default(),
                &Default::default(),
                None,
            )
            .await
        }
    };
    assert_eq!(whoami().await.text, "signed in");
    // the access token expires: the next call goes out with a refreshed one
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let out = whoami().await;
    assert!(!out.is_error, "{out:?}");
    assert!(events(port).await.iter().any(|e| e == "refresh"));

    // the authorization server revokes everything (as when the user signs out elsewhere): the
    // call is refused, nothing can refresh, and the server wants a sign-in again
    let revoked = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/revoke-all"))
        .send()
        .await
        .unwrap();
    assert!(revoked.status().is_success());
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let out = whoami().await;
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("sign in again"), "{out:?}");
    let view = rt.host.servers().remove(0);
    assert!(view.sign_in.unwrap().needed, "its row offers Sign in again");
    rt.host.shutdown().await;
}

/// A turn that hits a server waiting for its sign-in: the model's call to one of its tools (by
/// any name that says the server) is not run, the model reads why (so it can tell the user), and
/// the window hears which server to offer the sign-in for. Other unknown names stay unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_server_waiting_for_its_sign_in_tells_the_model_and_the_window() {
    use switchboard_engine::store::Approval;
    use switchboard_engine::ChatEvent;
    let (_server, port) = crate::support::oauth_server(60);
    let r = crate::support::rig(vec![
        // a running server whose name starts like the waiting one's
        ("notes_calc", crate::support::builtin("calculator")),
        (
            "notes",
            switchboard_engine::mcp::ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
        ),
    ])
    .await;
    assert!(r.status("notes").sign_in.unwrap().needed);
    r.fake.set_responder(crate::support::call_then_answer(vec![
        ("1", "notes.whoami", json!({})),
        ("2", "elsewhere__whoami", json!({})),
        ("3", "notes_calc__ad", json!({})),
    ]));
    let (summary, events) = r.turn("who am I?").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let (waiting, unknown) = (&conv.tool_calls[0], &conv.tool_calls[1]);
    assert_eq!(waiting.approval, Some(Approval::SignInNeeded));
    assert!(waiting.is_error);
    assert!(
        waiting
            .result
            .as_deref()
            .unwrap()
            .contains("\"notes\" are unavailable until the user signs in"),
        "{waiting:?}"
    );
    assert_eq!(unknown.approval, Some(Approval::UnknownTool));
    // a name of the running notes_calc, not of the waiting notes: unknown, with the closest names
    assert_eq!(conv.tool_calls[2].approval, Some(Approval::UnknownTool));
    let told: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::SignInNeeded { server } => Some(server.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(told, ["notes"]);
    // what the model read
    let sent = crate::support::tool_messages(&r.fake.chat_requests()[1]);
    assert!(sent[0]["content"].as_str().unwrap().contains("signs in"));
    r.host.shutdown().await;
}
