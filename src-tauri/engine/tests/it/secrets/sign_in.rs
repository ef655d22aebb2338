//! A sign-in's tokens in a real Secret Service: signing in to a remote server (the Python SDK
//! OAuth fixture) keeps one keyring item for it, holding the tokens, and nothing in the config
//! files or the fallback file; Sign out deletes the item.

use std::process::Command;

use switchboard_engine::chat::Broker;
use switchboard_engine::mcp::oauth::FollowRedirects;
use switchboard_engine::secrets::{Secrets, KEYRING_SERVICE};
use switchboard_engine::Runtime;

use super::check::keyring_lookup;
use super::{run_in_keyring_session, CASE};
use crate::support::builtin_bin;

#[test]
fn a_sign_in_lives_in_the_keyring_and_sign_out_deletes_it() {
    run_in_keyring_session("secrets::sign_in::in_a_keyring_session");
}

/// The ids (`username`) of the app's items in the session's keyring.
fn keyring_ids() -> Vec<String> {
    let out = Command::new("secret-tool")
        .args(["search", "--all", "--unlock", "service", KEYRING_SERVICE])
        .output()
        .expect("secret-tool");
    // secret-tool prints the attributes on stderr or stdout depending on its version
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("attribute.username = "))
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_sign_in_lives_in_the_keyring_and_sign_out_deletes_it, in its own session"]
async fn in_a_keyring_session() {
    if std::env::var(CASE).is_err() {
        return; // not started by the outer test: never touch this desktop's keyring
    }
    let (_server, port) = crate::support::oauth_server(60);
    let home = tempfile::tempdir().unwrap();
    let places =
        crate::sign_in::notes_places(home.path(), &format!("http://127.0.0.1:{port}/mcp"), "http");
    let secrets_dir = home.path().join("secrets");
    let rt = Runtime::open_at(
        places.clone(),
        Secrets::new(secrets_dir.clone()),
        builtin_bin(),
        Broker::allowing_all(),
    )
    .await
    .unwrap();
    rt.start_servers().await;
    assert!(keyring_ids().is_empty(), "{:?}", keyring_ids());
    rt.host.sign_in("notes", &FollowRedirects).await.unwrap();
    let out = rt
        .host
        .call_tool(
            "notes__whoami",
            Default::default(),
            &Default::default(),
            None,
        )
        .await;
    assert_eq!(out.text, "signed in", "{out:?}");

    // one item, for this server, with the tokens in it
    let ids = keyring_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].starts_with("oauth-"), "{ids:?}");
    let kept = keyring_lookup(&ids[0]).expect("the item's secret");
    assert!(kept.contains("access_token") && kept.contains("refresh_token"));
    // and nowhere else
    let file = secrets_dir.join("secrets.json");
    assert!(!std::fs::read_to_string(&file)
        .unwrap_or_default()
        .contains("access_token"));
    assert!(!std::fs::read_to_string(&places.mcp)
        .unwrap()
        .contains("token"));

    // Sign out: the item is gone
    rt.host.sign_out("notes").await.unwrap();
    assert!(keyring_lookup(&ids[0]).is_none());
    assert!(keyring_ids().is_empty());
    rt.host.shutdown().await;
}
