//! Signing in to a remote MCP server (OAuth 2.1) from its row in Settings → Servers, against a
//! real authorization server: the MCP TypeScript SDK's example server and its demo authorization
//! server (dynamic registration, PKCE, the exact redirect URI checked). The browser step goes
//! through the app's real opener (xdg-open), with `BROWSER` set to a script that does what a
//! person's browser does once they approve: follow the redirects, here to the app's own
//! listener on 127.0.0.1.

use fantoccini::Locator;

use serde_json::{json, Value};

use crate::app::{app_home, click, screenshot, send, text_content, wait_css, wait_until, App};
use crate::support::fake_ollama::{self, last_message, FakeOllama, Stream};

/// `BROWSER` for xdg-open: follows the page's redirects; writes `visited` when run.
fn browser_script(dir: &std::path::Path, visited: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("browser.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\nexec curl -sSL -o /dev/null \"$1\"\n",
            visited.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

const ROW: &str = "#servers-dialog[open] .server[data-name='notes']";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_server_that_wants_a_sign_in_gets_it_from_its_row_keeps_it_and_signs_out() {
    let (_server, port, auth_port) = crate::support::sdk_oauth_server();
    let url = format!("http://localhost:{port}/mcp");
    let (home, config_dir) = app_home();
    let mut cfg = switchboard_engine::mcp::McpConfig::default();
    cfg.servers.insert(
        "notes".into(),
        switchboard_engine::mcp::ServerConfig::http(url.clone()),
    );
    cfg.save(&config_dir.join("mcp.json")).unwrap();
    let visited = home.path().join("visited.txt");
    let browser = browser_script(home.path(), &visited);
    let env = [("BROWSER", browser.to_str().unwrap())];
    // a model that calls the server's tool anyway, then answers with what it read
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            let said = last["content"].as_str().unwrap_or_default().to_string();
            return Stream::new()
                .text(&format!("I could not: {said}"))
                .done()
                .reply();
        }
        Stream::new()
            .tool_call("1", "notes__greet", json!({"name": "Ada"}))
            .done()
            .reply()
    });
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": fake_ollama::MODEL}).to_string(),
    )
    .unwrap();

    let App { c, driver } = App::launch_with_env(home.path(), &env).await;
    // the chat says so (its tools are missing until then), with a Sign in of its own
    wait_css(&c, ".sign-in-note[data-server='notes']").await;
    assert!(text_content(&c, ".sign-in-note")
        .await
        .contains("“notes” wants you to sign in"));
    assert!(!visited.exists(), "no browser before the user asks");
    // Not now: the note goes; a turn that needs the server's tool brings it back, the call is
    // not run, and the model was told why
    click(&c, ".sign-in-note [data-action='close-sign-in-note']").await;
    wait_until(&c, "!document.querySelector('.sign-in-note')").await;
    send(&c, "greet Ada").await;
    wait_css(&c, ".sign-in-note[data-server='notes']").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant')?.textContent.includes('I could not: Error: The tools of the server \"notes\" are unavailable until the user signs in')",
    )
    .await;
    assert!(
        text_content(&c, ".tool-card")
            .await
            .contains("not run (sign-in needed)"),
        "{}",
        text_content(&c, ".tool-card").await
    );
    screenshot(&c, "server-sign-in-note.png").await;
    click(&c, ".sign-in-note [data-action='sign-in-server']").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('1/1 servers') && !document.querySelector('.sign-in-note')",
    )
    .await;
    click(&c, "#servers-button").await;
    wait_css(&c, &format!("{ROW}.running")).await;
    wait_until(
        &c,
        &format!(
            "document.querySelector(\"{ROW} .server-sign-in\")?.textContent.includes('Signed in at http://localhost:{}/')",
            auth_port
        ),
    )
    .await;
    assert!(text_content(&c, &format!("{ROW} .server-tools"))
        .await
        .contains("greet"));
    screenshot(&c, "server-signed-in.png").await;
    // the page the browser got: the authorization server's, with PKCE and the resource
    let page = std::fs::read_to_string(&visited).unwrap();
    assert!(page.starts_with(&format!("http://localhost:{auth_port}/authorize?")));
    assert!(page.contains("code_challenge_method=S256"), "{page}");
    assert!(
        page.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"),
        "{page}"
    );
    // the tokens: in the secret store (the 0600 file here, no keyring in this session), never in
    // the config
    let secrets = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("secrets/secrets.json");
    assert!(std::fs::read_to_string(&secrets)
        .unwrap()
        .contains("access_token"));
    let mcp = std::fs::read_to_string(config_dir.join("mcp.json")).unwrap();
    assert!(!mcp.contains("token") && !mcp.contains("oauth"), "{mcp}");
    let _ = c.close_window().await;
    let _ = c.close().await;
    drop(driver);

    // the next start: still signed in, no browser
    std::fs::remove_file(&visited).unwrap();
    let App { c, driver: _driver } = App::launch_with_env(home.path(), &env).await;
    click(&c, "#servers-button").await;
    wait_css(&c, &format!("{ROW}.running")).await;
    wait_css(&c, &format!("{ROW} [data-act='sign-out']")).await;
    assert!(!visited.exists(), "signed in from the kept tokens");

    // Sign out: the tokens are forgotten, and the server wants a sign-in again
    click(&c, &format!("{ROW} [data-act='sign-out']")).await;
    wait_css(&c, &format!("{ROW}.failed")).await;
    screenshot(&c, "server-sign-in-needed.png").await;
    wait_until(
        &c,
        &format!(
            "document.querySelector(\"{ROW} .server-sign-in\")?.textContent.includes('wants you to sign in')"
        ),
    )
    .await;
    assert!(c
        .find(Locator::Css(&format!("{ROW} [data-act='sign-out']")))
        .await
        .is_err());
    assert!(!std::fs::read_to_string(&secrets)
        .unwrap_or_default()
        .contains("access_token"));

    // a client registered by hand, typed in the server's form: its secret is stored, never in
    // the config file, and never shown again
    click(&c, &format!("{ROW} [data-act='edit']")).await;
    wait_css(&c, "#srv-oauth").await;
    c.execute("document.querySelector('#srv-oauth').open = true;", vec![])
        .await
        .unwrap();
    for (field, text) in [
        ("#srv-oauth-client-id", "hand-made-client"),
        ("#srv-oauth-client-secret", "typed-client-secret-5e1f"),
    ] {
        c.find(Locator::Css(field))
            .await
            .unwrap()
            .send_keys(text)
            .await
            .unwrap();
    }
    click(&c, "#server-save").await;
    wait_until(&c, "document.querySelector('#server-form').hidden === true").await;
    let mcp = std::fs::read_to_string(config_dir.join("mcp.json")).unwrap();
    assert!(mcp.contains("hand-made-client"), "{mcp}");
    assert!(!mcp.contains("typed-client-secret"), "{mcp}");
    assert!(std::fs::read_to_string(&secrets)
        .unwrap()
        .contains("typed-client-secret-5e1f"));
    click(&c, &format!("{ROW} [data-act='edit']")).await;
    wait_css(&c, "#srv-oauth[open]").await;
    let shown = c
        .execute(
            "const i = document.querySelector('#srv-oauth-client-secret'); return [i.value, i.placeholder];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(shown[0], "");
    assert!(shown[1].as_str().unwrap().contains("stored"), "{shown}");
    click(&c, "#server-cancel").await;

    // signing in as that client: the authorization server does not know it, so its page shows
    // an error and no answer comes back; the row waits, and Cancel stops waiting
    wait_css(&c, &format!("{ROW} [data-act='sign-in']")).await;
    click(&c, &format!("{ROW} [data-act='sign-in']")).await;
    wait_css(&c, &format!("{ROW} [data-act='cancel-sign-in']")).await;
    // the page's host is named before the browser opens it
    wait_until(
        &c,
        &format!(
            "document.querySelector(\"{ROW} .server-sign-in\")?.textContent.includes('Finish signing in at localhost in your browser')"
        ),
    )
    .await;
    screenshot(&c, "server-sign-in-waiting.png").await;
    click(&c, &format!("{ROW} [data-act='cancel-sign-in']")).await;
    wait_until(
        &c,
        &format!(
            "!document.querySelector(\"{ROW} [data-act='cancel-sign-in']\") && !document.querySelector(\"{ROW} [data-act='sign-in']\").disabled"
        ),
    )
    .await;
    assert!(
        !text_content(&c, "#banner").await.contains("Signing in"),
        "a cancel is no error"
    );
    c.close().await.unwrap();
}
