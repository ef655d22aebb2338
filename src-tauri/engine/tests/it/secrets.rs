//! Secrets for real: API keys, headers and secret environment values stored through the app's
//! own code path ([`Runtime`]), in a real Secret Service (gnome-keyring-daemon) and, without one,
//! in the fallback file. Checked from outside (`secret-tool`, the files on disk), at the moment of
//! use (a stdio server gets its environment, an HTTP server its Authorization header, the LLM its
//! API key), and where they must never be (config files, the database, views, exports, logs).
//!
//! Each case runs in a child process of this test binary with its own environment, so that no
//! test ever touches the developer's own keyring or session bus:
//! - in a private `dbus-run-session` with gnome-keyring unlocked by a known password and its
//!   keyrings in a temporary folder;
//! - with no session bus at all;
//! - on a private session bus where nothing provides the Secret Service.
//!
//! The outer tests (plain `#[test]`s) start the children; the inner ones are `#[ignore]`d and do
//! nothing unless the outer test set [`CASE`] (so `cargo test -- --ignored` on a desktop is safe).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use switchboard_engine::chat::Broker;
use switchboard_engine::secrets::{is_private, Place, SecretValue, Secrets};
use switchboard_engine::settings::{ProviderConfig, ProviderKind};
use switchboard_engine::{Places, Runtime, TurnRequest};
use tokio_util::sync::CancellationToken;

mod check;
mod sign_in;

use crate::support::fake_ollama::{FakeOllama, Sse};
use crate::support::{builtin_bin, fixture, serve};
use check::*;

/// Set by an outer test for its child: which case the inner test runs.
const CASE: &str = "SWITCHBOARD_TEST_SECRETS_CASE";

const API_KEY: &str = "sk-test-api-key-4f2a9c";
const TYPED_KEY: &str = "sk-typed-by-hand-11aa";
const ENV_SECRET: &str = "env-secret-7d1e0b";
const HEADER_SECRET: &str = "Bearer header-secret-93ac51";
const IMPORTED_TOKEN: &str = "ghp-imported-token-5be07d";
const OAUTH_CLIENT_SECRET: &str = "oauth-client-secret-c0ffee";
const ALL: [&str; 6] = [
    API_KEY,
    TYPED_KEY,
    ENV_SECRET,
    HEADER_SECRET,
    IMPORTED_TOKEN,
    OAUTH_CLIENT_SECRET,
];

/// Runs the inner test `name` in a child of this binary, through `wrapper` (a command and its
/// arguments before the binary), with `env`; fails with its output unless it passed.
fn run_child(name: &str, case: &str, wrapper: &[&str], env: &[(&str, &Path)], no_bus: bool) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(wrapper[0]);
    cmd.args(&wrapper[1..])
        .arg(&exe)
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE, case);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if no_bus {
        cmd.env_remove("DBUS_SESSION_BUS_ADDRESS");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("starting {}: {e}", wrapper[0]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name} ({case}) failed: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}

fn private_dir(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// The wrapper that gives a command its own session bus with gnome-keyring on it, unlocked (its
/// login keyring created in `$XDG_DATA_HOME/keyrings` with a known password).
const WITH_KEYRING: &str = r#"printf %s switchboard-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$@""#;

#[test]
fn secrets_live_in_a_real_secret_service() {
    for tool in ["dbus-run-session", "gnome-keyring-daemon", "secret-tool"] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap()
                .status
                .success(),
            "{tool} is missing: run `scripts/install-deps.sh --test` (make test does)"
        );
    }
    run_in_keyring_session("secrets::in_a_keyring_session");
}

/// Runs the inner test `name` in a private session bus with gnome-keyring on it (its keyrings in
/// a temporary folder, which the test checks it used).
pub(crate) fn run_in_keyring_session(name: &str) {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let run = home.path().join("run");
    std::fs::create_dir_all(&data).unwrap();
    private_dir(&run);
    run_child(
        name,
        "keyring",
        &["dbus-run-session", "--", "sh", "-c", WITH_KEYRING, "_"],
        &[("XDG_DATA_HOME", &data), ("XDG_RUNTIME_DIR", &run)],
        true,
    );
    assert!(
        data.join("keyrings/login.keyring").exists(),
        "the keyring the test used is the private one"
    );
}

#[test]
fn without_a_secret_service_secrets_go_to_a_private_file() {
    let home = tempfile::tempdir().unwrap();
    // no session bus at all
    run_child(
        "secrets::in_a_keyring_session",
        "no-bus",
        &["env"],
        &[("XDG_RUNTIME_DIR", &home.path().join("nothing-here"))],
        true,
    );
    // a session bus on which nothing provides org.freedesktop.secrets
    let services = home.path().join("no-services");
    std::fs::create_dir_all(&services).unwrap();
    let conf = home.path().join("session.conf");
    std::fs::write(
        &conf,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:tmpdir={}</listen><auth>EXTERNAL</auth>
<servicedir>{}</servicedir>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>"#,
            home.path().display(),
            services.display()
        ),
    )
    .unwrap();
    let run = home.path().join("run");
    private_dir(&run);
    let config_arg = format!("--config-file={}", conf.display());
    run_child(
        "secrets::in_a_keyring_session",
        "no-provider",
        &["dbus-run-session", &config_arg, "--"],
        &[("XDG_RUNTIME_DIR", &run)],
        true,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by secrets_live_in_a_real_secret_service and without_a_secret_service_…, in their own session"]
async fn in_a_keyring_session() {
    let Ok(case) = std::env::var(CASE) else {
        return; // not started by an outer test: never touch this desktop's keyring
    };
    let place = if case == "keyring" {
        Place::Keyring
    } else {
        Place::File
    };
    let log = Log::default();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(log.clone())
        .init();

    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config");
    let data = home.path().join("data");
    std::fs::create_dir_all(&config).unwrap();
    let secrets_dir = data.join("secrets");
    let secrets_file = secrets_dir.join("secrets.json");
    let places = Places {
        settings: config.join("settings.json"),
        mcp: config.join("mcp.json"),
        database: data.join("conversations.sqlite3"),
        ..Places::in_dir(&data)
    };

    // the LLM and an HTTP server that wants HEADER_SECRET
    let fake = FakeOllama::start().await;
    fake.set_models(&["m"]);
    fake.set_openai_responder(|_req: &Value| {
        Sse::new().text("hello").finish("stop").done().reply()
    });
    let (web, port) = {
        let mut cmd = Command::new("python3");
        cmd.arg(fixture("secret_server.py"))
            .args(["http", "0"])
            .env("EXPECTED_AUTHORIZATION", HEADER_SECRET);
        serve(cmd, "the secret fixture server over HTTP")
    };
    let url = format!("http://127.0.0.1:{port}/mcp");

    // files as a person might have written them: the header and an API key typed in plain
    std::fs::write(
        &places.mcp,
        json!({"mcpServers": {"web": {"type": "http", "url": url,
            "headers": {"Authorization": HEADER_SECRET}}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        &places.settings,
        json!({"providers": [{"id": "typed", "name": "Typed", "kind": "openai",
            "url": format!("{}/v1", fake.url), "apiKey": TYPED_KEY}]})
        .to_string(),
    )
    .unwrap();

    let secrets = Secrets::new(secrets_dir.clone());
    let rt = Runtime::open_at(
        places.clone(),
        secrets,
        builtin_bin(),
        Broker::allowing_all(),
    )
    .await
    .unwrap();
    assert_eq!(rt.secrets.probe().await, place, "{:?}", rt.secrets.status());
    let status = rt.secrets.status();
    match case.as_str() {
        "keyring" => assert_eq!(status.reason, None),
        "no-bus" => assert!(status.reason.unwrap().contains("no D-Bus session bus")),
        _ => assert!(
            status.reason.as_deref().unwrap().contains("Secret Service"),
            "{status:?}"
        ),
    }
    rt.start_servers().await;

    // a value typed into the file by hand works as it is...
    assert_eq!(call(&rt, "web", "whoami", json!({})).await, "authorized");
    // ...and the window never sees it: a marker says where it is
    let view = serde_json::to_value(rt.mcp_config_view()).unwrap();
    assert_eq!(
        view["mcpServers"]["web"]["headers"]["Authorization"],
        json!({"secret": "config"})
    );
    let settings_view = serde_json::to_value(rt.settings.get().redacted()).unwrap();
    assert_eq!(
        settings_view["providers"][0]["apiKey"],
        json!({"secret": "config"})
    );

    // the window sends the providers as it got them, plus a new one with a new key
    let mut providers: Vec<ProviderConfig> =
        serde_json::from_value(settings_view["providers"].clone()).unwrap();
    providers.push(ProviderConfig {
        id: "local".into(),
        name: "Local".into(),
        kind: ProviderKind::Openai,
        url: format!("{}/v1", fake.url),
        api_key: Some(SecretValue::New(API_KEY.into())),
    });
    rt.change_settings(providers_patch(providers))
        .await
        .unwrap();
    let saved = json_file(&places.settings);
    let typed_id = reference_id(&saved["providers"][0]["apiKey"], place);
    let key_id = reference_id(&saved["providers"][1]["apiKey"], place);
    assert_eq!(
        stored(place, &typed_id, &secrets_file).as_deref(),
        Some(TYPED_KEY)
    );
    assert_eq!(
        stored(place, &key_id, &secrets_file).as_deref(),
        Some(API_KEY)
    );

    // a stdio server with a secret variable (and a plain one), through the window's path
    let cfg = stdio_server(&[
        ("SECRET_TOKEN", SecretValue::New(ENV_SECRET.into())),
        ("PLAIN_VALUE", "visible".into()),
    ]);
    rt.save_server(None, None, "vault", cfg).await.unwrap();
    rt.mcp_applied().await;
    let mcp = json_file(&places.mcp);
    let env_id = reference_id(&mcp["mcpServers"]["vault"]["env"]["SECRET_TOKEN"], place);
    assert_eq!(mcp["mcpServers"]["vault"]["env"]["PLAIN_VALUE"], "visible");
    assert_eq!(
        stored(place, &env_id, &secrets_file).as_deref(),
        Some(ENV_SECRET)
    );
    // the save moved the header typed by hand into the store as well
    let header_id = reference_id(&mcp["mcpServers"]["web"]["headers"]["Authorization"], place);
    assert_eq!(
        stored(place, &header_id, &secrets_file).as_deref(),
        Some(HEADER_SECRET)
    );
    // used at the moment of use: the server's environment, the HTTP server's header
    let got = call(&rt, "vault", "read_env", json!({"name": "SECRET_TOKEN"})).await;
    assert_eq!(got, reversed(ENV_SECRET));
    assert_eq!(
        call(&rt, "vault", "read_env", json!({"name": "PLAIN_VALUE"})).await,
        reversed("visible")
    );
    assert_eq!(call(&rt, "web", "whoami", json!({})).await, "authorized");

    // the LLM gets the API key (read when the request is sent)
    let engine = rt.chat_engine(Some("local"));
    let summary = engine
        .run_turn(
            TurnRequest {
                model: "m".into(),
                text: "hi".into(),
                provider: Some("local".into()),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        fake.authorizations().last().unwrap().as_deref(),
        Some(format!("Bearer {API_KEY}").as_str())
    );

    // renamed (the window sends the marker it got): its secret stays its own and keeps working
    let marker = rt.mcp_config_view().servers["vault"].clone();
    assert_eq!(
        serde_json::to_value(&marker.env["SECRET_TOKEN"]).unwrap(),
        json!({"secret": place.as_str()})
    );
    let _ = rt
        .save_server(Some("vault"), None, "renamed", marker.clone())
        .await
        .unwrap();
    rt.mcp_applied().await;
    let mcp = json_file(&places.mcp);
    assert_eq!(
        reference_id(&mcp["mcpServers"]["renamed"]["env"]["SECRET_TOKEN"], place),
        env_id
    );
    assert_eq!(
        call(&rt, "renamed", "read_env", json!({"name": "SECRET_TOKEN"})).await,
        reversed(ENV_SECRET)
    );
    // duplicated: a copy of its own
    let _ = rt
        .save_server(None, Some("renamed"), "copy", marker)
        .await
        .unwrap();
    rt.mcp_applied().await;
    let mcp = json_file(&places.mcp);
    let copy_id = reference_id(&mcp["mcpServers"]["copy"]["env"]["SECRET_TOKEN"], place);
    assert_ne!(copy_id, env_id);
    assert_eq!(
        call(&rt, "copy", "read_env", json!({"name": "SECRET_TOKEN"})).await,
        reversed(ENV_SECRET)
    );
    // a marker for a field the server does not have is refused (the window cannot name secrets)
    let mut bad = stdio_server(&[]);
    bad.env.insert(
        "OTHER".into(),
        SecretValue::Stored(format!("{}:{key_id}", place.as_str())),
    );
    assert!(rt.save_server(None, None, "thief", bad).await.is_err());

    // imported from someone's config (the window sends back the preview's servers): the header and
    // the variable whose name says it is a token go to the store as the import is applied; a plain
    // variable stays plain; the servers come in turned off
    let shared = json!({"mcpServers": {
        "shared": {"command": "python3", "args": [fixture("secret_server.py"), "stdio"],
                   "env": {"GITHUB_TOKEN": IMPORTED_TOKEN, "LOG_LEVEL": "debug"}},
        "shared-web": {"type": "http", "url": url, "headers": {"Authorization": HEADER_SECRET},
                       "appNetwork": true}}});
    let preview =
        switchboard_engine::mcp::import::preview(&shared.to_string(), &rt.mcp_config()).unwrap();
    let token = preview.servers[0]
        .env
        .iter()
        .find(|e| e.name == "GITHUB_TOKEN")
        .unwrap();
    assert!(
        token.secret,
        "the preview says the token will be kept secret"
    );
    let choices = preview
        .servers
        .into_iter()
        .map(|e| {
            serde_json::from_value(json!({"name": e.name, "server": e.server, "replace": false}))
                .unwrap()
        })
        .collect();
    let (applied, n) = rt.import_servers(choices).await.unwrap();
    assert_eq!(n, 2);
    assert!(applied.servers["shared"].disabled && applied.servers["shared-web"].disabled);
    assert!(
        !applied.servers["shared-web"].app_network,
        "an imported server's apps reach no network until the user allows it"
    );
    let mcp = json_file(&places.mcp);
    let imported_id = reference_id(&mcp["mcpServers"]["shared"]["env"]["GITHUB_TOKEN"], place);
    assert_eq!(
        stored(place, &imported_id, &secrets_file).as_deref(),
        Some(IMPORTED_TOKEN)
    );
    assert_eq!(mcp["mcpServers"]["shared"]["env"]["LOG_LEVEL"], "debug");
    let imported_header = reference_id(
        &mcp["mcpServers"]["shared-web"]["headers"]["Authorization"],
        place,
    );
    assert_ne!(imported_header, header_id, "its own copy");
    assert_eq!(
        stored(place, &imported_header, &secrets_file).as_deref(),
        Some(HEADER_SECRET)
    );
    // turned on by the user: they work with the values from the store
    rt.mcp_applied().await;
    for name in ["shared", "shared-web"] {
        rt.set_server_enabled(name, true).await.unwrap();
        rt.mcp_applied().await;
    }
    assert_eq!(
        call(&rt, "shared", "read_env", json!({"name": "GITHUB_TOKEN"})).await,
        reversed(IMPORTED_TOKEN)
    );
    assert_eq!(
        call(&rt, "shared-web", "whoami", json!({})).await,
        "authorized"
    );

    // nowhere else: views, exports, debug records, files, the database, the log
    let servers = serde_json::to_string(&rt.host.servers()).unwrap();
    assert_no_secret("the servers list", &servers);
    assert_no_secret(
        "the MCP config view",
        &serde_json::to_string(&rt.mcp_config_view()).unwrap(),
    );
    assert_no_secret(
        "the settings view",
        &serde_json::to_string(&rt.settings.get().redacted()).unwrap(),
    );
    let export = rt.export_mcp_config();
    assert_no_secret("the MCP export", &export);
    assert!(export.contains(switchboard_engine::secrets::EXPORT_PLACEHOLDER));
    let conv = summary.conversation_id;
    let records = rt.store.llm_calls(conv).await.unwrap();
    assert!(!records.is_empty());
    assert_no_secret(
        "the debug records",
        &serde_json::to_string(&records).unwrap(),
    );
    assert_no_secret(
        "the conversation export",
        &serde_json::to_string(&rt.store.export_json(conv).await.unwrap()).unwrap(),
    );
    assert_no_secret_in_files(home.path(), &secrets_file);
    if place == Place::Keyring {
        assert!(
            !secrets_file.exists(),
            "nothing went to the fallback file with a keyring"
        );
    } else {
        assert!(is_private(&secrets_dir) && is_private(&secrets_file));
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&secrets_dir), mode(&secrets_file)), (0o700, 0o600));
        assert_eq!(mode(&places.mcp), 0o600);
        assert_eq!(mode(&places.settings), 0o600);
    }

    // deleted: a server's secrets go with it (the copy keeps its own); a provider's too
    rt.delete_server("renamed").await.unwrap();
    rt.mcp_applied().await;
    assert_eq!(stored(place, &env_id, &secrets_file), None);
    assert_eq!(
        stored(place, &copy_id, &secrets_file).as_deref(),
        Some(ENV_SECRET)
    );
    let mut providers = rt.settings.get().redacted().providers;
    providers.retain(|p| p.id != "local");
    rt.change_settings(providers_patch(providers))
        .await
        .unwrap();
    assert_eq!(stored(place, &key_id, &secrets_file), None);
    assert_eq!(
        stored(place, &typed_id, &secrets_file).as_deref(),
        Some(TYPED_KEY)
    );
    // a key replaced: the old one is gone
    let mut providers = rt.settings.get().redacted().providers;
    providers[0].api_key = Some(SecretValue::New("sk-replaced".into()));
    rt.change_settings(providers_patch(providers))
        .await
        .unwrap();
    assert_eq!(stored(place, &typed_id, &secrets_file), None);
    // a header replaced from the form: the old value is gone, the new one stored
    let mut web_cfg = rt.mcp_config_view().servers["web"].clone();
    web_cfg.headers.insert(
        "Authorization".into(),
        SecretValue::New("Bearer replaced".into()),
    );
    rt.save_server(Some("web"), None, "web", web_cfg)
        .await
        .unwrap();
    assert_eq!(stored(place, &header_id, &secrets_file), None);
    let mcp = json_file(&places.mcp);
    let new_header = reference_id(&mcp["mcpServers"]["web"]["headers"]["Authorization"], place);
    assert_eq!(
        stored(place, &new_header, &secrets_file).as_deref(),
        Some("Bearer replaced")
    );
    // a sign-in client's secret typed in the form: stored like a header, a reference in the file,
    // kept when the form sends the server back unchanged
    let mut web_cfg = rt.mcp_config_view().servers["web"].clone();
    web_cfg.oauth = Some(switchboard_engine::mcp::OAuthClient {
        client_id: Some("switchboard-desktop".into()),
        client_secret: Some(SecretValue::New(OAUTH_CLIENT_SECRET.into())),
        client_metadata_url: None,
    });
    rt.save_server(Some("web"), None, "web", web_cfg)
        .await
        .unwrap();
    let mcp = json_file(&places.mcp);
    assert_eq!(
        mcp["mcpServers"]["web"]["oauth"]["clientId"],
        "switchboard-desktop"
    );
    let client_secret = reference_id(&mcp["mcpServers"]["web"]["oauth"]["clientSecret"], place);
    assert_eq!(
        stored(place, &client_secret, &secrets_file).as_deref(),
        Some(OAUTH_CLIENT_SECRET)
    );
    let view = rt.mcp_config_view().servers["web"].clone();
    assert_no_secret("the config view", &serde_json::to_string(&view).unwrap());
    rt.save_server(Some("web"), None, "web", view)
        .await
        .unwrap();
    assert_eq!(
        stored(place, &client_secret, &secrets_file).as_deref(),
        Some(OAUTH_CLIENT_SECRET)
    );
    // a client secret without a client id is refused
    let mut lone = rt.mcp_config_view().servers["web"].clone();
    lone.oauth = Some(switchboard_engine::mcp::OAuthClient {
        client_secret: Some(SecretValue::New("x".into())),
        ..Default::default()
    });
    let refused = rt.save_server(Some("web"), None, "web", lone).await;
    assert!(format!("{refused:?}").contains("client id"), "{refused:?}");

    rt.host.shutdown().await;
    drop(web);
    let logged = String::from_utf8_lossy(&log.0.lock().unwrap()).to_string();
    assert!(!logged.is_empty(), "the log was captured");
    assert_no_secret("the log", &logged);
    if let Ok(p) = std::env::var("SWITCHBOARD_TEST_SECRETS_LOG") {
        std::fs::write(p, &logged).unwrap();
    }
    println!(
        "secrets case {case}: ok ({} bytes of log searched)",
        logged.len()
    );
}

/// The settings dialog's change when only its list of providers changed.
fn providers_patch(providers: Vec<ProviderConfig>) -> switchboard_engine::settings::SettingsPatch {
    switchboard_engine::settings::SettingsPatch {
        providers: Some(providers),
        ..Default::default()
    }
}
