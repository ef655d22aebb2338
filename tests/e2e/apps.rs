//! MCP Apps in the real window: an app page on its tool's card (the npm example server
//! server-basic-vanillajs), its button calling a tool through approval on a card of its own; and
//! a hostile page that tries to leave its frame, reach the network, the window or the IPC.

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

fn app_home_with(
    fake: &FakeOllama,
    name: &str,
    server: switchboard_engine::mcp::ServerConfig,
) -> tempfile::TempDir {
    let (home, config_dir) = app_home();
    let settings = json!({"llmUrl": fake.url});
    std::fs::write(config_dir.join("settings.json"), settings.to_string()).unwrap();
    let mut cfg = switchboard_engine::mcp::McpConfig::default();
    cfg.servers.insert(name.into(), server);
    cfg.save(&config_dir.join("mcp.json")).unwrap();
    home
}

fn calls(tool: &'static str) -> impl Fn(&Value) -> crate::support::fake_ollama::Reply {
    move |req: &Value| {
        if last_message(req)["role"] == "user" {
            Stream::new()
                .tool_calls(&[("a", tool, json!({}))])
                .done()
                .reply()
        } else {
            Stream::new().text("Shown.").done().reply()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_shows_on_its_card_and_its_button_calls_a_tool_through_approval() {
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("basic-vanillajs__get-time"));
    let server = switchboard_engine::mcp::ServerConfig::new(
        "node",
        &[
            crate::support::app_server("basic-vanillajs")
                .to_str()
                .unwrap(),
            "--stdio",
        ],
    );
    let home = app_home_with(&fake, "basic-vanillajs", server);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    send(&c, "what time is it on the server?").await;
    // the model's call asks first, as every call of a tool that may change something
    wait_css(&c, ".tool-card .approval").await;
    click(&c, ".tool-card [data-action='allowOnce']").await;
    wait_css(&c, ".tool-card.ok iframe.app-frame").await;
    let frame = c
        .execute(
            "const f = document.querySelector('iframe.app-frame');
             return [f.getAttribute('sandbox'), f.src.startsWith('mcpapp://localhost/v/')];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(frame, json!(["allow-scripts", true]));
    // inside: the page got the call's result, and its button calls the tool again
    c.enter_frame(0).await.unwrap();
    wait_until(
        &c,
        "/^\\d{4}-\\d\\d-\\d\\dT/.test(document.querySelector('#server-time')?.textContent ?? '')",
    )
    .await;
    let first = text_content(&c, "#server-time").await;
    let inside = c
        .execute(
            "return [typeof window.__TAURI_INTERNALS__, typeof window.ipc, window.origin];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(inside, json!(["undefined", "undefined", "null"]));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    click(&c, "#get-time-btn").await;
    c.enter_parent_frame().await.unwrap();
    // the app's call is a card of its own, asking like the model's
    wait_until(&c, "document.querySelectorAll('.tool-card').length === 2").await;
    wait_css(&c, ".tool-card:last-of-type .approval").await;
    screenshot(&c, "app.png").await;
    click(&c, ".tool-card:last-of-type [data-action='allowOnce']").await;
    wait_css(&c, ".tool-card:last-of-type.ok").await;
    c.enter_frame(0).await.unwrap();
    wait_until(
        &c,
        &format!(
            "(document.querySelector('#server-time')?.textContent ?? '') !== {}",
            json!(first)
        ),
    )
    .await;
    c.enter_parent_frame().await.unwrap();
    // opened again from the library, the app is offered, and shown with the call's result
    click(&c, "#new-chat").await;
    click(&c, "#conversation-list .conv").await;
    wait_css(&c, ".tool-card [data-action='show-app']").await;
    click(&c, ".tool-card [data-action='show-app']").await;
    wait_css(&c, "iframe.app-frame").await;
    c.enter_frame(0).await.unwrap();
    wait_until(
        &c,
        "/^\\d{4}-/.test(document.querySelector('#server-time')?.textContent ?? '')",
    )
    .await;
    c.enter_parent_frame().await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_hostile_app_reaches_nothing_beyond_its_frame() {
    // a listener the page tries to reach: nothing must arrive
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let server = switchboard_engine::mcp::ServerConfig::new(
        crate::support::pypi_server("python").to_str().unwrap(),
        &[
            crate::support::fixture("hostile_app_server.py")
                .to_str()
                .unwrap(),
            &port.to_string(),
        ],
    );
    let home = app_home_with(&fake, "evil", server);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    let before = c.current_url().await.unwrap();
    send(&c, "show it").await;
    wait_css(&c, ".tool-card .approval").await;
    click(&c, ".tool-card [data-action='allowOnce']").await;
    wait_css(&c, ".tool-card.ok iframe.app-frame").await;
    // the page reports what it could do through the one channel it has: a message for the user
    wait_until(
        &c,
        "document.querySelector('#input').value.includes('report:')",
    )
    .await;
    let report: Value = {
        let text = c
            .execute("return document.querySelector('#input').value;", vec![])
            .await
            .unwrap();
        let text = text.as_str().unwrap();
        serde_json::from_str(&text[text.find("report:").unwrap() + 7..]).unwrap()
    };
    assert_eq!(report["tauri"], "undefined", "{report}");
    assert_eq!(report["ipc"], "undefined", "{report}");
    assert_eq!(report["parent"], "blocked", "{report}");
    assert_eq!(report["storage"], "blocked", "{report}");
    assert_eq!(report["fetch"], "blocked", "{report}");
    assert_eq!(report["top"], "blocked", "{report}");
    // WebKit's message handler is visible to frames; what the page sent through it without the
    // window's invoke key (renaming this conversation) was dropped
    eprintln!("webkit ipc handler in the frame: {}", report["webkitIpc"]);
    let titles = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             window.__TAURI__.core.invoke('list_conversations').then((l) => done(l.map((x) => x.title)));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(titles, json!(["show it"]), "the store agrees");
    // the window is where it was, nothing reached the listener, no script ran in the window
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(c.current_url().await.unwrap(), before);
    assert!(listener.accept().is_err(), "the page reached the network");
    assert_eq!(
        c.execute("return window.__pwned ?? null;", vec![])
            .await
            .unwrap(),
        Value::Null
    );
    // nor a tool its server does not offer it
    assert_eq!(report["otherTool"], "refused", "{report}");
    c.close().await.unwrap();
}

/// Allowed the network in its server's settings, the same page reaches the origin it declares
/// (and only because it declared it: the policy lists exactly that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_app_reaches_the_origins_it_declares_when_its_server_is_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("evil__show"));
    let mut server = switchboard_engine::mcp::ServerConfig::new(
        crate::support::pypi_server("python").to_str().unwrap(),
        &[
            crate::support::fixture("hostile_app_server.py")
                .to_str()
                .unwrap(),
            &port.to_string(),
        ],
    );
    server.app_network = true;
    let home = app_home_with(&fake, "evil", server);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    // the listener answers whatever comes, so the page's fetch completes
    let served = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 2048];
        let n = std::io::Read::read(&mut s, &mut buf).unwrap_or(0);
        let _ = std::io::Write::write_all(
            &mut s,
            b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&buf[..n]).to_string()
    });
    send(&c, "show it").await;
    wait_css(&c, ".tool-card .approval").await;
    click(&c, ".tool-card [data-action='allowOnce']").await;
    wait_until(
        &c,
        "document.querySelector('#input').value.includes('report:')",
    )
    .await;
    let request = served.join().unwrap();
    assert!(
        request.contains("/steal") || request.contains("/pixel"),
        "{request}"
    );
    let text = c
        .execute("return document.querySelector('#input').value;", vec![])
        .await
        .unwrap();
    let text = text.as_str().unwrap();
    let report: Value = serde_json::from_str(&text[text.find("report:").unwrap() + 7..]).unwrap();
    assert_eq!(report["fetch"], "sent", "{report}");
    // still in its frame
    assert_eq!(report["parent"], "blocked", "{report}");
    assert_eq!(report["tauri"], "undefined", "{report}");
    c.close().await.unwrap();
}
