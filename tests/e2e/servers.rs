//! The MCP servers screen: add, edit, break, disable, delete; remote transports; roots; the sandbox (import and export: import.rs).

use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::{json, Value};

use crate::app::*;
use crate::support;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

/// Adds a server through the settings form: name, transport, URL.
async fn add_remote_server(c: &Client, name: &str, transport: &str, url: &str) {
    click(c, "#server-add").await;
    wait_css(c, "#srv-name")
        .await
        .send_keys(name)
        .await
        .unwrap();
    c.execute(
        &format!("const t = document.querySelector('#srv-transport'); t.value = '{transport}'; t.dispatchEvent(new Event('change'));"),
        vec![],
    )
    .await
    .unwrap();
    c.find(Locator::Css("#srv-url"))
        .await
        .unwrap()
        .send_keys(url)
        .await
        .unwrap();
    click(c, "#server-save").await;
}

/// Saves the server form and waits until it has closed (the save is done and the list shows
/// again): a row's Edit clicked before then would open a form the save then closes.
async fn save_form(c: &Client) {
    click(c, "#server-save").await;
    wait_until(c, "document.querySelector('#server-form').hidden").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_broken_server_is_shown_failed_with_why_while_the_others_run() {
    let (home, config_dir) = app_home();
    let mut cfg = switchboard_engine::mcp::McpConfig::default_builtin();
    cfg.servers.insert(
        "crashy".into(),
        switchboard_engine::mcp::ServerConfig::new(
            "python3",
            &[
                "-c",
                "import sys; sys.stderr.write('boom: no config\\n'); sys.exit(4)",
            ],
        ),
    );
    cfg.save(&config_dir.join("mcp.json")).unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('1 failed')",
    )
    .await;
    assert!(text_content(&c, "#servers-summary")
        .await
        .contains("3/4 servers"));
    click(&c, "#servers-button").await;
    wait_until(
        &c,
        "document.querySelector('#servers-list .server.failed')?.textContent.includes('Failed while: the MCP handshake (initialize)')",
    )
    .await;
    let text = text_content(&c, "#servers-list .server.failed").await;
    assert!(text.contains("crashy"), "{text}");
    assert!(
        text.contains("exited with code 4 during start-up"),
        "{text}"
    );
    assert!(
        text.contains("boom: no config"),
        "the last stderr lines: {text}"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn servers_are_added_edited_broken_disabled_and_deleted_live() {
    let (home, config_dir) = app_home();
    let config_file = config_dir.join("mcp.json");
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 3).await;
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='calculator']").await;

    let fill = |c: &Client, css: &'static str, text: String| {
        let c = c.clone();
        async move {
            let f = wait_css(&c, css).await;
            f.clear().await.unwrap();
            f.send_keys(&text).await.unwrap();
        }
    };
    // a name that is taken is refused next to the field, nothing is saved
    click(&c, "#server-add").await;
    fill(&c, "#srv-name", "Calculator".into()).await;
    fill(&c, "#srv-command", "python3".into()).await;
    click(&c, "#server-save").await;
    wait_until(&c, "document.querySelector('.field-error[data-for=name]').textContent.includes('already a server')").await;

    // add a real one: it starts, its tools show
    fill(&c, "#srv-name", "dynamic".into()).await;
    fill(
        &c,
        "#srv-args",
        support::fixture("dynamic_server.py").display().to_string(),
    )
    .await;
    save_form(&c).await;
    wait_css(&c, ".server.running[data-name='dynamic']").await;
    wait_until(&c, "document.querySelector(\".server[data-name='dynamic'] .server-tools\")?.textContent.includes('grow')").await;
    wait_servers(&c, 4).await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["dynamic"]["command"], "python3");
    assert_eq!(
        saved["mcpServers"]["calculator"]["args"],
        json!(["mcp-server", "calculator"]),
        "the others are kept"
    );

    // its own timeout: whole seconds from 1 to 3600, kept in the file
    click(&c, ".server[data-name='dynamic'] [data-act='edit']").await;
    fill(&c, "#srv-timeout", "0".into()).await;
    click(&c, "#server-save").await;
    wait_until(&c, "document.querySelector('.field-error[data-for=timeout]').textContent.includes('1 to 3600')").await;
    fill(&c, "#srv-timeout", "120".into()).await;
    save_form(&c).await;
    let t = std::time::Instant::now();
    loop {
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
        if saved["mcpServers"]["dynamic"]["timeout"] == 120 {
            break;
        }
        assert!(t.elapsed() < WAIT, "the timeout was not saved: {saved}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_css(&c, ".server.running[data-name='dynamic']").await;

    // break its command: the doctor says why
    click(&c, ".server[data-name='dynamic'] [data-act='edit']").await;
    assert_eq!(
        c.execute(
            "return document.querySelector('#srv-timeout').value;",
            vec![]
        )
        .await
        .unwrap(),
        json!("120"),
        "the form shows the server's timeout"
    );
    fill(&c, "#srv-command", "python3-not-installed".into()).await;
    save_form(&c).await;
    wait_css(&c, ".server.failed[data-name='dynamic']").await;
    let why = text_content(&c, ".server[data-name='dynamic'] .server-error").await;
    assert!(
        why.contains("\"python3-not-installed\" was not found on PATH"),
        "{why}"
    );
    screenshot(&c, "servers.png").await;

    // disable, then delete
    click(&c, ".server[data-name='dynamic'] [data-act='toggle']").await;
    wait_css(&c, ".server.disabled[data-name='dynamic']").await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["dynamic"]["disabled"], true);
    let del = wait_css(&c, ".server[data-name='dynamic'] [data-act='delete']").await;
    del.click().await.unwrap();
    del.click().await.unwrap(); // confirm
    wait_until(
        &c,
        "!document.querySelector(\".server[data-name='dynamic']\")",
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert!(saved["mcpServers"].get("dynamic").is_none());
    assert_eq!(
        text_content(&c, "#servers-summary").await,
        "3/3 servers · 12 tools"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_streamable_http_server_is_added_in_settings_and_runs() {
    let (_server, port) = support::everything_over_http("streamableHttp");
    let (home, config_dir) = app_home();
    let config_file = config_dir.join("mcp.json");
    let App { c, driver: _driver } = App::launch(home.path()).await;
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='calculator']").await;
    click(&c, "#server-add").await;
    // the form is shown (not only in the page) before it is typed into
    wait_until(
        &c,
        "(() => { const n = document.querySelector('#srv-name'); return n && n.offsetParent !== null && !n.disabled; })()",
    )
    .await;
    wait_css(&c, "#srv-name")
        .await
        .send_keys("remote")
        .await
        .unwrap();
    c.execute("const t = document.querySelector('#srv-transport'); t.value = 'http'; t.dispatchEvent(new Event('change'));", vec![])
        .await
        .unwrap();
    assert!(
        !c.find(Locator::Css("#srv-command"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap(),
        "stdio fields hide"
    );
    c.find(Locator::Css("#srv-url"))
        .await
        .unwrap()
        .send_keys("not a url")
        .await
        .unwrap();
    click(&c, "#server-save").await;
    wait_until(&c, "document.querySelector('.field-error[data-for=url]').textContent.includes('is not an http')").await;
    let url = c.find(Locator::Css("#srv-url")).await.unwrap();
    url.clear().await.unwrap();
    url.send_keys(&format!("http://127.0.0.1:{port}/mcp"))
        .await
        .unwrap();
    click(&c, "#srv-add-header").await;
    for (field, text) in [("kv-name", "X-Test"), ("kv-value", "yes")] {
        let css = format!("#srv-headers .kv-row:last-child .{field}");
        wait_css(&c, &css).await.send_keys(text).await.unwrap();
    }
    click(&c, "#server-save").await;
    wait_css(&c, ".server.running[data-name='remote']").await;
    let row = text_content(&c, ".server[data-name='remote']").await;
    assert!(
        row.contains("HTTP") && row.contains("MCP 2025-11-25"),
        "{row}"
    );
    assert!(row.contains("echo") && row.contains("get-sum"), "{row}");
    // a remote server's claims about its tools are not believed unless the user says so
    assert!(row.contains("every call asks"), "{row}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    // a header is a secret: with no keyring here (no session bus), in the private secrets file
    let r = saved["mcpServers"]["remote"]["headers"]["X-Test"]["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("{saved}"));
    assert!(r.starts_with("file:"), "{r}");
    assert_eq!(
        saved["mcpServers"]["remote"],
        json!({"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"X-Test": {"secret": r}}})
    );
    // write-only: the form says where the value is, and has it nowhere
    click(&c, ".server[data-name='remote'] [data-act='edit']").await;
    let shown = text_content(&c, "#srv-headers .kv-row[data-name='X-Test'] .secret-set").await;
    assert!(shown.contains("stored in the secrets file"), "{shown}");
    let values = c
        .execute(
            "return [...document.querySelectorAll('#server-form input')].map((i) => i.value);",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        !values.as_array().unwrap().contains(&json!("yes")),
        "{values}"
    );
    screenshot(&c, "server-form-secret.png").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn legacy_sse_and_rest_servers_are_added_in_settings_and_their_tools_run() {
    let (_sse, sse_port) = support::everything_over_http("sse");
    let (_rest, rest_port) = support::rest_server();
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            let results: Vec<&str> = req["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap())
                .collect();
            Stream::new().text(&results.join(" | ")).done().reply()
        } else {
            Stream::new()
                .tool_calls(&[
                    ("a", "legacy__echo", json!({"message": "over SSE"})),
                    ("b", "rest__word_count", json!({"text": "one two three"})),
                ])
                .done()
                .reply()
        }
    });
    let allow = json!({"legacy__echo": "allow", "rest__word_count": "allow"});
    let home = tempfile::tempdir().unwrap();
    let settings_dir = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER);
    std::fs::create_dir_all(&settings_dir).unwrap();
    std::fs::write(
        settings_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "toolPolicies": allow}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='calculator']").await;
    add_remote_server(
        &c,
        "legacy",
        "sse",
        &format!("http://127.0.0.1:{sse_port}/sse"),
    )
    .await;
    wait_css(&c, ".server.running[data-name='legacy']").await;
    add_remote_server(&c, "rest", "rest", &format!("http://127.0.0.1:{rest_port}")).await;
    wait_css(&c, ".server.running[data-name='rest']").await;
    let legacy = text_content(&c, ".server[data-name='legacy']").await;
    assert!(
        legacy.contains("HTTP+SSE") && legacy.contains("echo"),
        "{legacy}"
    );
    let rest = text_content(&c, ".server[data-name='rest']").await;
    assert!(
        rest.contains("REST") && rest.contains("word_count"),
        "{rest}"
    );
    click(&c, "#servers-close").await;
    send(&c, "use both").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Echo: over SSE')",
    )
    .await;
    let answer = text_content(&c, ".msg.assistant.complete").await;
    assert!(answer.contains('3'), "the REST word count: {answer}");
    assert_eq!(
        c.execute(
            "return document.querySelectorAll('.tool-card.ok').length;",
            vec![]
        )
        .await
        .unwrap(),
        json!(2)
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_folder_added_in_settings_becomes_a_root_the_running_server_sees() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new()
                .text(last["content"].as_str().unwrap())
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call("r", "everything__get-roots-list", json!({}))
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__get-roots-list": "allow"});
    let (home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    let folder = home.path().join("my-projects");
    std::fs::create_dir_all(&folder).unwrap();
    // each time the server has asked for the roots, it logs it (its log reaches its row)
    let synced = |list: Vec<Value>| {
        list.iter()
            .filter(|s| s["name"] == "everything")
            .flat_map(|s| s["stderrTail"].as_array().cloned().unwrap_or_default())
            .filter(|l| l.as_str().is_some_and(|l| l.contains("Roots updated")))
            .count()
    };
    let before = synced(servers_now(&c).await);
    click(&c, "#settings-button").await;
    wait_css(&c, "#set-roots")
        .await
        .send_keys(&folder.display().to_string())
        .await
        .unwrap();
    click(&c, "#settings-save").await;
    wait_until(&c, "!document.querySelector('#settings-dialog').open").await;
    // the running server was told (roots/list_changed) and asks again (roots/list)
    let t = std::time::Instant::now();
    while synced(servers_now(&c).await) <= before {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the server never asked for the roots again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    send(&c, "which folders may you use?").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('my-projects')",
    )
    .await;
    let answer = text_content(&c, ".msg.assistant.complete").await;
    assert!(
        answer.contains(&format!("file://{}", folder.display())),
        "{answer}"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_sandboxed_server_is_shown_its_refusal_is_on_the_card_and_the_form_edits_it() {
    if switchboard_engine::mcp::sandbox::kernel_abi() == 0 {
        eprintln!("skipped: this kernel has no Landlock");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = FakeOllama::start().await;
    fake.set_responder(crate::support::fake_ollama::call_then_say(
        "n1",
        "net__tcp",
        json!({ "port": port }),
        "Result: ",
    ));
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url}).to_string(),
    )
    .unwrap();
    let config_file = config_dir.join("mcp.json");
    // the built-ins as an older install has them (no "sandbox"), and a server sandboxed with no network
    let mut cfg = switchboard_engine::mcp::McpConfig::default_builtin();
    for s in cfg.servers.values_mut() {
        s.sandbox = None;
    }
    let mut net = switchboard_engine::mcp::ServerConfig::new(
        "python3",
        &[support::fixture("net_server.py").to_str().unwrap()],
    );
    net.sandbox = Some(switchboard_engine::mcp::SandboxSetting::locked());
    cfg.servers.insert("net".into(), net);
    cfg.save(&config_file).unwrap();
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 4).await;

    // every stdio row says how it is sandboxed; the built-ins are by default
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='net']").await;
    for name in ["calculator", "files", "net"] {
        assert_eq!(
            text_content(&c, &format!(".server[data-name='{name}'] .server-sandbox")).await,
            "sandboxed (no network)",
            "{name}"
        );
    }
    // research reaches arXiv: sandboxed, with the network
    assert_eq!(
        text_content(&c, ".server[data-name='research'] .server-sandbox").await,
        "sandboxed"
    );
    click(&c, "#servers-close").await;

    // the call is refused; the card says what the sandbox kept it from, with the one action
    // that allows exactly that (where the host supervises the sandbox's network; else the
    // sandbox's refusal is read from the server's words)
    let supervised = switchboard_engine::mcp::sandbox::supervise::available();
    let target = format!("127.0.0.1:{port}");
    send(&c, "connect to the port").await;
    wait_css(&c, ".tool-card.error").await;
    let card = text_content(&c, ".tool-card").await;
    assert!(card.contains("[Errno 13] Permission denied"), "{card}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "no connection came");
    if !supervised {
        assert!(
            card.contains("Blocked by sandbox: network access"),
            "{card}"
        );
    } else {
        let note = text_content(&c, ".tool-card .sandbox-note").await;
        assert!(
            note.contains(&format!(
                "The sandbox kept net off the network: it tried {target}."
            )),
            "{note}"
        );
        // the row counts it, with the same action
        click(&c, "#servers-button").await;
        wait_until(
            &c,
            &format!("document.querySelector(\".server[data-name='net'] [data-network-refused]\")?.textContent.includes('it tried {target}')"),
        )
        .await;
        screenshot(&c, "servers-sandbox.png").await;
        click(&c, "#servers-close").await;
        c.execute(
            "document.querySelectorAll('.tool-card').forEach((d) => d.open = true);",
            vec![],
        )
        .await
        .unwrap();
        screenshot(&c, "card-kept-off-the-network.png").await;
        click(
            &c,
            &format!(".tool-card .sandbox-note [data-host='{target}']"),
        )
        .await;
        wait_until(
            &c,
            "document.querySelector('.tool-card .sandbox-note')?.textContent.includes('Allowed:')",
        )
        .await;
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
        assert_eq!(
            saved["mcpServers"]["net"]["sandbox"],
            json!({"network": false, "hosts": [target]})
        );
        // it starts again with it, and the next call gets through
        click(&c, "#servers-button").await;
        wait_until(
            &c,
            &format!("document.querySelector(\".server.running[data-name='net'] .server-sandbox\")?.textContent === 'sandboxed (network: {target} only)'"),
        )
        .await;
        click(&c, "#servers-close").await;
        send(&c, "connect again").await;
        wait_until(
            &c,
            "document.querySelectorAll('.tool-card.ok').length === 1",
        )
        .await;
        listener.set_nonblocking(false).unwrap();
        assert!(listener.accept().is_ok(), "the allowed connection came");
    }
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='net']").await;

    // the form: let it use the network
    click(&c, ".server[data-name='net'] [data-act='edit']").await;
    let checked = |css: &'static str| {
        let c = c.clone();
        async move {
            c.execute(
                &format!("return document.querySelector('{css}').checked"),
                vec![],
            )
            .await
            .unwrap()
            .as_bool()
            .unwrap()
        }
    };
    assert!(checked("#srv-sandbox").await);
    assert!(!checked("#srv-sandbox-network").await);
    let read = home.path().join("docs");
    std::fs::create_dir_all(&read).unwrap();
    click(&c, "#srv-sandbox-network").await;
    wait_css(&c, "#srv-sandbox-read")
        .await
        .send_keys(&read.display().to_string())
        .await
        .unwrap();
    screenshot(&c, "server-form-sandbox.png").await;
    click(&c, "#server-save").await;
    wait_until(
        &c,
        "document.querySelector(\".server.running[data-name='net'] .server-sandbox\")?.textContent === 'sandboxed'",
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    let mut want = json!({"network": true, "read": [read.display().to_string()]});
    if supervised {
        want["hosts"] = json!([target]);
    }
    assert_eq!(saved["mcpServers"]["net"]["sandbox"], want);

    // and the calculator out of its default sandbox
    click(&c, ".server[data-name='calculator'] [data-act='edit']").await;
    assert!(checked("#srv-sandbox").await, "the default shows as ticked");
    click(&c, "#srv-sandbox").await;
    click(&c, "#server-save").await;
    wait_until(
        &c,
        "document.querySelector(\".server.running[data-name='calculator'] .server-sandbox\")?.textContent === 'not sandboxed'",
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["calculator"]["sandbox"], json!(false));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn without_landlock_a_sandboxed_server_runs_only_once_the_user_agrees() {
    let (home, config_dir) = app_home();
    let config_file = config_dir.join("mcp.json");
    switchboard_engine::mcp::McpConfig::default_builtin()
        .save(&config_file)
        .unwrap();
    // the app believes the kernel has no Landlock
    let App { c, driver: _driver } = App::launch_with_env(
        home.path(),
        &[(switchboard_engine::NO_LANDLOCK_FOR_TESTS, "1")],
    )
    .await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('3 failed')",
    )
    .await;
    click(&c, "#servers-button").await;
    wait_css(
        &c,
        ".server.failed[data-name='calculator'] [data-act='unsandboxed']",
    )
    .await;
    let row = text_content(&c, ".server[data-name='calculator']").await;
    assert!(row.contains("sandbox unavailable on this system"), "{row}");
    assert!(row.contains("kernel has no Landlock"), "{row}");
    assert!(
        row.contains("Failed while: setting up its sandbox"),
        "{row}"
    );
    screenshot(&c, "servers-no-landlock.png").await;

    // the user agrees for the calculator: it runs, unsandboxed, and says so; files still waits
    click(
        &c,
        ".server[data-name='calculator'] [data-act='unsandboxed']",
    )
    .await;
    wait_until(
        &c,
        "document.querySelector(\".server.running[data-name='calculator'] .server-sandbox\")?.textContent.startsWith('not sandboxed')",
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(
        saved["mcpServers"]["calculator"]["sandbox"],
        json!({"network": false, "allowUnsandboxed": true})
    );
    assert!(text_content(&c, ".server[data-name='files']")
        .await
        .contains("Run without the sandbox"));
    assert_eq!(
        text_content(&c, "#servers-summary").await,
        "1/3 servers · 2 failed"
    );
    c.close().await.unwrap();
}
