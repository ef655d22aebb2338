//! End to end, in the REAL app window: tauri-driver + WebKitWebDriver under Xvfb, driven with
//! fantoccini. The LLM is the scripted fake; the MCP servers are the real built-in ones.
//!
//! Needs a display, tauri-driver and WebKitWebDriver: run it with `make test` (or `make e2e`),
//! which installs them and wraps it in xvfb-run. Plain `cargo test` skips it (it is #[ignore]).

#[path = "../common/mod.rs"]
mod support;

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use support::fake_ollama::{self, last_message, FakeOllama, Stream};

const WAIT: Duration = Duration::from_secs(30);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One tauri-driver (and so one app process) per session.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start(home: &Path) -> Driver {
        let port = free_port();
        let native = free_port();
        std::fs::create_dir_all(home.join("cache")).unwrap();
        let bin = which_tauri_driver();
        let child = Command::new(bin)
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native.to_string(),
            ])
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            // GTK dialogs remember settings in dconf, which needs a session bus; keep them in memory
            .env("GSETTINGS_BACKEND", "memory")
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("SWITCHBOARD_LOG", "warn,tauri_plugin_single_instance=error")
            .env_remove("OLLAMA_HOST")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // its own process group, so ending it also ends the WebKitWebDriver it starts
            .process_group(0)
            .spawn()
            .expect("tauri-driver starts (install it with `make test-deps`)");
        // wait until it listens
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "tauri-driver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Driver { child, port }
    }

    async fn session(&self) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("wry"));
        caps.insert(
            "tauri:options".into(),
            json!({ "application": support::switchboard_bin() }),
        );
        ClientBuilder::native()
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a WebDriver session on the app")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGTERM);
        }
        std::thread::sleep(Duration::from_millis(200));
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

fn which_tauri_driver() -> PathBuf {
    let home_bin =
        PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/bin/tauri-driver");
    if home_bin.exists() {
        return home_bin;
    }
    PathBuf::from("tauri-driver")
}

/// The fake model: arithmetic goes through calculator__add; "xss" gets hostile HTML back.
fn script(fake: &FakeOllama) {
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let text = last["content"].as_str().unwrap_or_default().to_string();
        if last["role"] == "tool" {
            return Stream::new()
                .text("2 + 40 = ")
                .text(&format!("**{text}**"))
                .text("\n\nThe calculator agrees.")
                .done()
                .reply();
        }
        if text.contains("xss") {
            return Stream::new()
                .text("Here: <img src=x onerror=\"window.__xss=1\"> and ")
                .text("<script>window.__xss=2</script> and [link](javascript:window.__xss=3)")
                .done()
                .reply();
        }
        if text.contains("2+40") {
            return Stream::new()
                .tool_call("call_e2e1", "calculator__add", json!({"a": 2, "b": 40}))
                .done()
                .reply();
        }
        Stream::new().text("I only do arithmetic.").done().reply()
    });
}

async fn wait_css(c: &Client, css: &str) -> fantoccini::elements::Element {
    c.wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("waiting for {css}: {e}"))
}

async fn text_content(c: &Client, css: &str) -> String {
    let v = c
        .execute(
            "const n = document.querySelector(arguments[0]); return n ? n.textContent : null;",
            vec![json!(css)],
        )
        .await
        .unwrap();
    v.as_str().unwrap_or_default().to_string()
}

async fn send(c: &Client, text: &str) {
    let input = wait_css(c, "#input").await;
    input.send_keys(text).await.unwrap();
    input.send_keys("\u{E007}").await.unwrap(); // Enter
}

fn xdotool(args: &[&str]) -> std::process::Output {
    std::process::Command::new("xdotool")
        .args(args)
        .output()
        .expect("xdotool (installed by scripts/install-deps.sh --test)")
}

/// Waits for the system file dialog titled `title`, focuses it, and types `path` into it
/// (xdotool, through the X server the app runs on); `replace`: select the proposed name first
/// (a Save dialog). Then Enter.
async fn type_in_file_dialog(title: &str, path: &std::path::Path, replace: bool) {
    let t = Instant::now();
    let window = loop {
        let out = xdotool(&["search", "--name", title]);
        let found = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .map(String::from);
        if let Some(w) = found.filter(|w| !w.is_empty()) {
            break w;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no \"{title}\" dialog appeared"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // let GTK finish mapping it
    tokio::time::sleep(Duration::from_millis(700)).await;
    xdotool(&["windowfocus", "--sync", &window]);
    if replace {
        xdotool(&["key", "ctrl+a"]);
    }
    xdotool(&["type", "--delay", "15", &path.display().to_string()]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    xdotool(&["key", "Return"]);
}

async fn pick_in_file_dialog(title: &str, path: &std::path::Path) {
    type_in_file_dialog(title, path, false).await
}

async fn save_in_file_dialog(title: &str, path: &std::path::Path) {
    type_in_file_dialog(title, path, true).await
}

/// Clicks the element `css` finds (it must be there).
async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap();
}

/// Writes a screenshot to target/screenshots/NAME once the page has painted what the DOM holds
/// (`make screenshots` copies them to docs/screenshots when they are meant to change).
async fn screenshot(c: &Client, name: &str) {
    c.execute_async(
        "const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 150)));",
        vec![],
    )
    .await
    .unwrap();
    let png = c.screenshot().await.unwrap();
    // the target folder this test binary was built into (target/debug/deps/e2e-…)
    let exe = std::env::current_exe().unwrap();
    let dir = exe.ancestors().nth(3).unwrap().join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), png).unwrap();
}

/// A fresh home for the app (XDG folders under a temp dir) and its config folder, created.
fn app_home() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let config_dir = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER);
    std::fs::create_dir_all(&config_dir).unwrap();
    (home, config_dir)
}

/// A fresh app home with these settings and server-everything as its only MCP server; the app
/// launched and its server running.
async fn launch_with_everything(settings: Value) -> (tempfile::TempDir, Driver, Client) {
    let (home, config_dir) = app_home();
    std::fs::write(config_dir.join("settings.json"), settings.to_string()).unwrap();
    let mut cfg = switchboard_engine::mcp::McpConfig::default();
    cfg.servers.insert(
        "everything".into(),
        switchboard_engine::mcp::ServerConfig::new(
            "node",
            &[support::everything_server().to_str().unwrap(), "stdio"],
        ),
    );
    cfg.save(&config_dir.join("mcp.json")).unwrap();
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('1/1 servers')",
    )
    .await;
    (home, driver, c)
}

/// The MCP server processes of the running app, asked through its own IPC.
async fn server_pids(c: &Client) -> Vec<u32> {
    let v = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const ch = new window.__TAURI__.core.Channel();
             ch.onmessage = (s) => done(s.map((x) => x.pid));
             window.__TAURI__.core.invoke('watch_servers', { onChange: ch });",
            vec![],
        )
        .await
        .unwrap();
    let pids: Vec<u32> = v
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_u64().map(|p| p as u32))
        .collect();
    assert!(!pids.is_empty(), "the built-in servers have processes: {v}");
    pids
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

fn assert_all_gone(pids: &[u32], how: &str) {
    let t = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "after {how}, MCP servers still run: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn wait_until(c: &Client, js_condition: &str) {
    let t = Instant::now();
    loop {
        let v = c
            .execute(&format!("return !!({js_condition});"), vec![])
            .await
            .unwrap();
        if v == json!(true) {
            return;
        }
        assert!(t.elapsed() < WAIT, "timed out waiting for: {js_condition}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn chat_with_a_tool_call_card_survives_a_relaunch_and_html_stays_inert() {
    let fake = FakeOllama::start().await;
    script(&fake);
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        serde_json::to_string(&json!({"llmUrl": fake.url, "model": fake_ollama::MODEL})).unwrap(),
    )
    .unwrap();

    // ---- first launch ----
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    // the built-in servers come up and the model list is filled from /api/tags
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('2/2 servers')",
    )
    .await;
    assert_eq!(text_content(&c, "#model-select").await, fake_ollama::MODEL);
    assert!(
        c.find(Locator::Css("#banner[hidden]")).await.is_ok(),
        "no error banner when the LLM is reachable"
    );

    send(&c, "what is 2+40?").await;
    let card = wait_css(&c, ".tool-card.ok").await;
    let card_text = card.prop("textContent").await.unwrap().unwrap_or_default();
    assert!(card_text.contains("calculator"), "{card_text}");
    assert!(card_text.contains("add"), "{card_text}");
    assert!(
        card_text.contains("\"a\": 2") && card_text.contains("\"b\": 40"),
        "pretty arguments: {card_text}"
    );
    assert_eq!(text_content(&c, ".tool-card .result").await, "42");
    wait_css(&c, ".msg.assistant.complete .body strong").await;
    assert_eq!(
        text_content(&c, ".msg.assistant.complete .body strong").await,
        "42"
    );
    assert!(text_content(&c, ".msg.assistant.complete .body")
        .await
        .contains("The calculator agrees."));
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    // the conversation is in the sidebar
    wait_until(&c, "document.querySelector('#conversation-list .conv.active')?.textContent.includes('what is 2+40?')").await;

    // the screenshot for the README: open the card so its arguments and result show
    c.execute("document.querySelector('.tool-card').open = true;", vec![])
        .await
        .unwrap();
    screenshot(&c, "chat.png").await;

    // ---- hostile HTML in a reply renders as inert text ----
    click(&c, "#new-chat").await;
    send(&c, "show me xss").await;
    wait_css(&c, ".msg.assistant.complete").await;
    let body = text_content(&c, ".msg.assistant.complete .body").await;
    assert!(
        body.contains("<img src=x onerror=\"window.__xss=1\">"),
        "shown as text: {body}"
    );
    assert!(
        body.contains("<script>window.__xss=2</script>"),
        "shown as text: {body}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let active = c
        .execute(
            "return { xss: window.__xss ?? null, imgs: document.querySelectorAll('#messages img').length,
                      scripts: document.querySelectorAll('#messages script').length,
                      jsLinks: [...document.querySelectorAll('#messages a')].filter(a => (a.getAttribute('href') || '').startsWith('javascript')).length };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        active,
        json!({"xss": null, "imgs": 0, "scripts": 0, "jsLinks": 0})
    );
    click(&c, ".msg.assistant.complete .body a").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        c.execute("return window.__xss ?? null;", vec![])
            .await
            .unwrap(),
        Value::Null,
        "clicking the link ran nothing"
    );

    let pids = server_pids(&c).await;
    c.close().await.unwrap();
    drop(driver);
    // the app was killed by the driver: its servers die with it
    assert_all_gone(&pids, "the app was killed");

    // ---- relaunch: the conversation is there and reopens with its card ----
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    let titles = text_content(&c, "#conversation-list").await;
    assert!(titles.contains("what is 2+40?"), "{titles}");
    assert!(titles.contains("show me xss"), "{titles}");
    let first = c
        .find_all(Locator::Css("#conversation-list .conv"))
        .await
        .unwrap();
    let mut opened = false;
    for b in first {
        if b.prop("textContent")
            .await
            .unwrap()
            .unwrap_or_default()
            .contains("what is 2+40?")
        {
            b.click().await.unwrap();
            opened = true;
            break;
        }
    }
    assert!(opened);
    wait_css(&c, ".tool-card.ok").await;
    assert_eq!(text_content(&c, "#chat-title").await, "what is 2+40?");
    assert_eq!(text_content(&c, ".tool-card .result").await, "42");
    assert!(text_content(&c, ".tool-card").await.contains("\"b\": 40"));
    assert_eq!(text_content(&c, ".msg.user .body").await, "what is 2+40?");
    assert_eq!(text_content(&c, ".msg.assistant .body strong").await, "42");
    // quit as a person does, by closing the window: the app shuts its servers down
    let pids = server_pids(&c).await;
    let _ = c.close_window().await;
    assert_all_gone(&pids, "the window was closed");
    let _ = c.close().await;
    drop(driver);

    // the store agrees
    let db = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("conversations.sqlite3");
    let store = switchboard_engine::store::Store::open(&db).await.unwrap();
    let convs = store.list_conversations().await.unwrap();
    assert_eq!(convs.len(), 2);
    assert_eq!(fake.chat_requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_unreachable_llm_shows_which_url_failed_and_how_to_fix_it() {
    let home = tempfile::tempdir().unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let config_dir = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER);
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": dead}).to_string(),
    )
    .unwrap();
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    wait_css(&c, "#banner:not([hidden])").await;
    let banner = text_content(&c, "#banner").await;
    assert!(banner.contains(&dead), "{banner}");
    assert!(banner.contains("ollama serve"), "{banner}");
    assert!(banner.contains("Settings"), "{banner}");
    // Settings opens from the banner with the URL in it
    click(&c, "#banner-settings").await;
    wait_css(&c, "#settings-dialog[open]").await;
    let url = c
        .execute(
            "return document.querySelector('#set-llm-url').value;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(url, json!(dead));

    // fixing the URL in Settings brings the models back and is saved (tauri-plugin-store)
    let fake = FakeOllama::start().await;
    let field = wait_css(&c, "#set-llm-url").await;
    field.clear().await.unwrap();
    field.send_keys(&fake.url).await.unwrap();
    click(&c, "#settings-save").await;
    wait_css(&c, "#settings-dialog:not([open])").await;
    wait_css(&c, "#banner[hidden]").await;
    wait_until(
        &c,
        &format!(
            "document.querySelector('#model-select').value === '{}'",
            fake_ollama::MODEL
        ),
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(saved["llmUrl"], json!(fake.url));
    assert_eq!(saved["maxIterations"], 5);
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn escape_stops_a_streaming_reply_and_keeps_the_partial_text() {
    let fake = FakeOllama::start().await;
    let mut slow = Stream::new();
    for i in 0..40 {
        slow = slow.text(&format!("word{i} "));
    }
    let mut reply = slow.done().reply();
    reply.pause = Duration::from_millis(100);
    fake.push(reply);
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url}).to_string(),
    )
    .unwrap();
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    // Shift+Enter is a new line, not a send
    let input = wait_css(&c, "#input").await;
    // (modifiers are released at the end of each send)
    input.send_keys("line one\u{E008}\u{E007}").await.unwrap();
    input.send_keys("line two").await.unwrap();
    let typed = c
        .execute("return document.querySelector('#input').value;", vec![])
        .await
        .unwrap();
    assert_eq!(typed, json!("line one\nline two"));
    assert_eq!(fake.chat_requests().len(), 0, "nothing was sent");
    input.clear().await.unwrap();
    send(&c, "tell me a long story").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.streaming .body')?.textContent.includes('word3')",
    )
    .await;
    assert!(
        c.find(Locator::Css("#stop:not([hidden])")).await.is_ok(),
        "Stop is offered while it streams"
    );
    wait_css(&c, "#input")
        .await
        .send_keys("\u{E00C}")
        .await
        .unwrap(); // Escape
    wait_css(&c, ".msg.assistant.stopped").await;
    let body = text_content(&c, ".msg.assistant.stopped .body").await;
    assert!(body.contains("word3") && !body.contains("word39"), "{body}");
    assert!(text_content(&c, ".msg.assistant.stopped .status-line")
        .await
        .contains("Stopped"));
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    c.close().await.unwrap();
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
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('1 failed')",
    )
    .await;
    assert!(text_content(&c, "#servers-summary")
        .await
        .contains("2/3 servers"));
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
async fn a_destructive_tool_waits_for_approval_deny_allow_and_edit() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new()
                .text("Result: ")
                .text(last["content"].as_str().unwrap())
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call(
                    "w1",
                    "files__write_file",
                    json!({"path": "note.txt", "content": "hello"}),
                )
                .done()
                .reply()
        }
    });
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url}).to_string(),
    )
    .unwrap();
    let note = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("files/note.txt");
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('2/2 servers')",
    )
    .await;

    // 1. deny: the call never runs, the model is told
    send(&c, "save a note").await;
    wait_css(&c, ".tool-card.awaiting .approval").await;
    let question = text_content(&c, ".approval").await;
    assert!(
        question.contains("This tool can change or delete data"),
        "{question}"
    );
    assert!(question.contains("files › write_file"), "{question}");
    assert!(
        c.find(Locator::Css(".approval [data-action='alwaysAllow']"))
            .await
            .is_err(),
        "no 'always' for a destructive tool"
    );
    screenshot(&c, "approval.png").await;
    click(&c, ".approval [data-action='deny']").await;
    wait_css(&c, ".tool-card.error").await;
    assert_eq!(
        text_content(&c, ".tool-card .card-approval").await,
        "denied"
    );
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('declined')",
    )
    .await;
    assert!(!note.exists(), "a denied call never runs");

    // 2. allow once: it runs
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    send(&c, "save it after all").await;
    wait_until(&c, "document.querySelectorAll('.tool-card').length === 2 && !!document.querySelectorAll('.tool-card')[1].querySelector('.approval')").await;
    click(
        &c,
        ".tool-card.awaiting .approval [data-action='allowOnce']",
    )
    .await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.ok').length === 1",
    )
    .await;
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "hello");

    // 3. edit the arguments: what does not fit the tool's schema is refused, the rest runs
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    send(&c, "save it once more").await;
    wait_until(&c, "document.querySelectorAll('.tool-card').length === 3 && !!document.querySelectorAll('.tool-card')[2].querySelector('.approval')").await;
    click(&c, ".tool-card.awaiting [data-action='edit']").await;
    let editor = wait_css(&c, ".tool-card.awaiting .args-editor").await;
    editor.clear().await.unwrap();
    editor.send_keys(r#"{"path": 5}"#).await.unwrap();
    click(&c, ".tool-card.awaiting [data-action='allowOnce']").await;
    wait_until(
        &c,
        "document.querySelector('.approval-error')?.textContent.includes('do not fit')",
    )
    .await;
    let err = text_content(&c, ".approval-error").await;
    assert!(err.contains("\"content\" is a required property"), "{err}");
    editor.clear().await.unwrap();
    editor
        .send_keys(r#"{"path": "edited.txt", "content": "hello, edited"}"#)
        .await
        .unwrap();
    click(&c, ".tool-card.awaiting [data-action='allowOnce']").await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.ok').length === 2",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(note.with_file_name("edited.txt")).unwrap(),
        "hello, edited"
    );
    let badges = c
        .execute(
            "return [...document.querySelectorAll('.card-approval')].map((b) => b.textContent);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        badges,
        json!(["denied", "approved", "approved, arguments edited"])
    );
    let args = c
        .execute(
            "return [...document.querySelectorAll('.tool-card .args')].map((b) => b.textContent);",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        args[2].as_str().unwrap().contains("edited.txt"),
        "the card shows what ran: {args}"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn servers_are_added_edited_broken_disabled_and_deleted_live() {
    let home = tempfile::tempdir().unwrap();
    let config_file = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("mcp.json");
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('2/2 servers')",
    )
    .await;
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
    click(&c, "#server-save").await;
    wait_css(&c, ".server.running[data-name='dynamic']").await;
    wait_until(&c, "document.querySelector(\".server[data-name='dynamic'] .server-tools\")?.textContent.includes('grow')").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('3/3 servers')",
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["dynamic"]["command"], "python3");
    assert_eq!(
        saved["mcpServers"]["calculator"]["args"],
        json!(["mcp-server", "calculator"]),
        "the others are kept"
    );

    // break its command: the doctor says why
    click(&c, ".server[data-name='dynamic'] [data-act='edit']").await;
    fill(&c, "#srv-command", "python3-not-installed".into()).await;
    click(&c, "#server-save").await;
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
        "2/2 servers · 10 tools"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_claude_desktop_config_is_imported_with_its_conflict_resolved_and_exported() {
    let home = tempfile::tempdir().unwrap();
    let config_file = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("mcp.json");
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('2/2 servers')",
    )
    .await;
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='calculator']").await;
    click(&c, "#server-import").await;
    let claude_desktop = json!({
        "mcpServers": {
            "dyn": {"command": "python3", "args": [support::fixture("dynamic_server.py")]},
            "calculator": {"command": "python3", "args": [support::fixture("crash_server.py")]},
            "ws": {"type": "websocket", "url": "wss://example.com/mcp"}
        },
        "globalShortcut": ""
    });
    // where Claude Desktop keeps it; the Open dialog starts in that folder
    let claude_dir = home.path().join("config").join("Claude");
    std::fs::create_dir_all(&claude_dir).unwrap();
    let claude_file = claude_dir.join("claude_desktop_config.json");
    std::fs::write(&claude_file, claude_desktop.to_string()).unwrap();
    // pasted text that is not a config is refused with a reason
    wait_css(&c, "#import-text")
        .await
        .send_keys("{\"mcpServers\": ")
        .await
        .unwrap();
    click(&c, "#import-preview-button").await;
    wait_until(
        &c,
        "document.querySelector('#import-error').textContent.length > 0",
    )
    .await;
    click(&c, "#import-choose").await;
    // the real GTK file dialog: type the path into it (xdotool), as a person would
    pick_in_file_dialog("Import MCP servers", &claude_file).await;
    wait_css(&c, ".import-row").await;
    assert_eq!(
        text_content(&c, "#import-file-name").await,
        claude_file.display().to_string()
    );
    wait_css(&c, ".import-row").await;
    let preview = text_content(&c, "#import-preview").await;
    assert!(preview.contains("Claude Desktop"), "{preview}");
    assert!(
        preview.contains("Skipped “ws”: \"websocket\" servers are not supported"),
        "{preview}"
    );
    let names = c
        .execute(
            "return [...document.querySelectorAll('.import-name')].map((i) => i.value);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        names,
        json!(["dyn", "calculator-imported"]),
        "the conflicting name gets a free one"
    );
    click(&c, "#import-go").await;
    wait_css(&c, ".server.running[data-name='dyn']").await;
    wait_css(&c, ".server.running[data-name='calculator-imported']").await;
    wait_css(&c, ".server.running[data-name='calculator']").await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["dyn"]["command"], "python3");
    assert_eq!(
        saved["mcpServers"]["calculator"]["args"],
        json!(["mcp-server", "calculator"]),
        "the existing one is kept"
    );

    click(&c, "#server-export").await;
    wait_css(&c, "#export-panel:not([hidden])").await;
    let exported = c
        .execute(
            "return document.querySelector('#export-text').value;",
            vec![],
        )
        .await
        .unwrap();
    let exported: Value = serde_json::from_str(exported.as_str().unwrap()).unwrap();
    assert_eq!(exported["mcpServers"].as_object().unwrap().len(), 4);
    assert_eq!(
        exported["mcpServers"]["calculator-imported"]["command"],
        "python3"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn images_resource_links_and_structured_content_show_on_the_card() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        if last_message(req)["role"] == "tool" {
            Stream::new().text("Here they are.").done().reply()
        } else {
            Stream::new()
                .tool_calls(&[
                    ("i", "everything__get-tiny-image", json!({})),
                    (
                        "s",
                        "everything__get-structured-content",
                        json!({"location": "Chicago"}),
                    ),
                    ("l", "everything__get-resource-links", json!({"count": 2})),
                ])
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__get-tiny-image": "allow", "everything__get-structured-content": "allow",
        "everything__get-resource-links": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "show me things").await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.ok').length === 3",
    )
    .await;
    wait_until(
        &c,
        "document.querySelector('.result-image')?.naturalWidth > 0",
    )
    .await;
    let src = c
        .execute(
            "return document.querySelector('.result-image').getAttribute('src').slice(0, 22);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(src, json!("data:image/png;base64,"));
    let structured = text_content(&c, ".structured").await;
    let structured: Value = serde_json::from_str(&structured).unwrap();
    assert!(structured.is_object(), "{structured}");
    let links = c
        .execute(
            "return document.querySelectorAll('.result-link').length;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(links, json!(2));
    c.execute(
        "document.querySelectorAll('.tool-card').forEach((d) => d.open = true);",
        vec![],
    )
    .await
    .unwrap();
    screenshot(&c, "rich-content.png").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_streamable_http_server_is_added_in_settings_and_runs() {
    let (_server, port) = support::everything_over_http("streamableHttp");
    let home = tempfile::tempdir().unwrap();
    let config_file = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("mcp.json");
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='calculator']").await;
    click(&c, "#server-add").await;
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
    c.find(Locator::Css("#srv-headers"))
        .await
        .unwrap()
        .send_keys("X-Test: yes")
        .await
        .unwrap();
    click(&c, "#server-save").await;
    wait_css(&c, ".server.running[data-name='remote']").await;
    let row = text_content(&c, ".server[data-name='remote']").await;
    assert!(
        row.contains("HTTP") && row.contains("MCP 2025-11-25"),
        "{row}"
    );
    assert!(row.contains("echo") && row.contains("get-sum"), "{row}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(
        saved["mcpServers"]["remote"],
        json!({"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"X-Test": "yes"}})
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_long_tool_call_shows_progress_and_its_stop_button_cancels_it() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new()
                .text("Noted: ")
                .text(last["content"].as_str().unwrap())
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call(
                    "long",
                    "everything__trigger-long-running-operation",
                    json!({"duration": 60, "steps": 60}),
                )
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__trigger-long-running-operation": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "run the long thing").await;
    wait_until(
        &c,
        "document.querySelector('.tool-card.running .card-progress progress')?.value >= 2",
    )
    .await;
    let shown = text_content(&c, ".card-progress-text").await;
    assert!(shown.ends_with('%'), "{shown}");
    screenshot(&c, "progress.png").await;
    let t = Instant::now();
    click(&c, ".tool-card.running .card-stop").await;
    wait_css(&c, ".tool-card.error").await;
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(text_content(&c, ".tool-card .result")
        .await
        .contains("cancelled by the user"));
    // the turn went on: the model answered after the cancel
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Noted')",
    )
    .await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_server_asks_for_input_with_a_form_built_from_its_schema() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new()
                .text("The server said: ")
                .text(last["content"].as_str().unwrap())
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call("e", "everything__trigger-elicitation-request", json!({}))
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__trigger-elicitation-request": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "ask me things").await;
    wait_css(&c, ".tool-card .elicitation").await;
    // the form follows the schema: types, defaults, choices
    let kinds = c
        .execute(
            "const f = document.querySelector('.elicitation');
             const q = (n, s) => f.querySelector(`[data-name=${n}] ${s}`);
             return { email: q('email', 'input')?.type, date: q('birthdate', 'input')?.type, int: q('integer', 'input')?.value,
                      check: q('check', 'input')?.type, hero: q('titledSingleSelectEnum', 'select')?.selectedOptions[0]?.textContent,
                      multi: f.querySelectorAll('[data-name=untitledMultipleSelectEnum] input[type=checkbox]').length };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        kinds,
        json!({"email": "email", "date": "date", "int": "42", "check": "checkbox", "hero": "Superman", "multi": 5})
    );
    c.find(Locator::Css(".elicitation [data-name=name] input"))
        .await
        .unwrap()
        .send_keys("Grace Hopper")
        .await
        .unwrap();
    screenshot(&c, "elicitation.png").await;
    click(&c, ".elicitation [data-action=accept]").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Grace Hopper')",
    )
    .await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_server_uses_the_model_only_after_the_user_says_yes() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if req["messages"][0]["content"] == "You are a helpful test server." {
            Stream::new().text("Cobalt blue.").done().reply()
        } else if last["role"] == "tool" {
            Stream::new()
                .text("The server got: ")
                .text(last["content"].as_str().unwrap())
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call(
                    "s",
                    "everything__trigger-sampling-request",
                    json!({"prompt": "name a colour"}),
                )
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__trigger-sampling-request": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "let the server ask").await;
    wait_css(&c, ".tool-card .sampling").await;
    // the request is shown before anything goes to the model
    let shown = text_content(&c, ".tool-card .sampling").await;
    assert!(shown.contains("everything"), "{shown}");
    assert!(shown.contains("name a colour"), "{shown}");
    assert!(shown.contains("You are a helpful test server."), "{shown}");
    assert!(!fake
        .chat_requests()
        .iter()
        .any(|q| q["messages"][0]["content"] == "You are a helpful test server."));
    click(&c, ".sampling [data-action=allow-sampling]").await;
    wait_css(&c, ".sampling-reply").await;
    assert_eq!(text_content(&c, ".sampling-reply").await, "Cobalt blue.");
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Cobalt blue.')",
    )
    .await;
    c.execute("document.querySelector('.tool-card').open = true", vec![])
        .await
        .unwrap();
    screenshot(&c, "sampling.png").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn slash_inserts_a_prompt_and_an_attached_resource_goes_with_the_message() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|_req: &Value| Stream::new().text("Read it.").done().reply());
    let (_home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    let input = wait_css(&c, "#input").await;
    // `/` lists the running servers' prompts; typing filters; Enter picks; a form asks for arguments
    input.send_keys("/args").await.unwrap();
    wait_css(&c, "#composer-menu .menu-item").await;
    let listed = text_content(&c, "#composer-menu").await;
    assert!(listed.contains("/args-prompt"), "{listed}");
    assert!(!listed.contains("/simple-prompt"), "filtered: {listed}");
    input.send_keys("\u{E007}").await.unwrap(); // Enter
    let city = wait_css(&c, ".prompt-form [data-name=city] input").await;
    screenshot(&c, "prompt-form.png").await;
    // the required argument is checked before anything is sent
    click(&c, ".prompt-form [data-action=insert-prompt]").await;
    assert!(text_content(&c, ".prompt-form .field-error")
        .await
        .contains("city"));
    city.send_keys("Lisbon").await.unwrap();
    city.send_keys("\u{E007}").await.unwrap();
    wait_until(
        &c,
        "document.querySelector('#input').value === \"What's weather in Lisbon?\"",
    )
    .await;
    assert!(fake.chat_requests().is_empty(), "inserted, not sent");

    // 📎 lists the resources; picking one attaches it as a chip
    click(&c, "#attach").await;
    wait_css(&c, "#composer-menu .menu-item").await;
    c.execute(
        "[...document.querySelectorAll('#composer-menu .menu-item')].find((n) => n.textContent.includes('features.md'))
           .dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));",
        vec![],
    )
    .await
    .unwrap();
    wait_css(&c, "#attachments .chip").await;
    assert!(text_content(&c, "#attachments")
        .await
        .contains("features.md"));
    screenshot(&c, "attachment.png").await;
    click(&c, "#send").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Read it.')",
    )
    .await;
    let sent = last_message(&fake.chat_requests()[0]);
    let content = sent["content"].as_str().unwrap();
    assert!(
        content.starts_with("What's weather in Lisbon?\n\n<attachment name=\"features.md\" uri=\"demo://resource/static/document/features.md\">\n"),
        "{content}"
    );
    assert!(content.len() > 300, "the resource's text went along");
    // the chip is gone; the message shows the attachment folded
    assert!(c.find(Locator::Css("#attachments .chip")).await.is_err());
    assert!(text_content(&c, ".msg.user .attachment summary")
        .await
        .contains("features.md"));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn tools_turned_off_for_a_chat_are_not_offered_and_the_choice_is_kept() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|_req: &Value| Stream::new().text("Fine.").done().reply());
    let (_home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    wait_until(
        &c,
        "/Tools 1\\d\\/1\\d/.test(document.querySelector('#tools-button').textContent)",
    )
    .await;
    let total = text_content(&c, "#tools-button").await;
    click(&c, "#tools-button").await;
    wait_css(&c, "#tools-panel [data-tool='everything/get-sum']")
        .await
        .click()
        .await
        .unwrap();
    screenshot(&c, "tools-picker.png").await;
    assert!(!text_content(&c, "#tools-panel").await.contains("null"));
    let after = text_content(&c, "#tools-button").await;
    assert_ne!(after, total, "the count follows: {after}");
    send(&c, "hello").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Fine.')",
    )
    .await;
    let offered = |req: &Value| -> Vec<String> {
        req["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = offered(&fake.chat_requests()[0]);
    assert!(first.contains(&"everything__echo".to_string()), "{first:?}");
    assert!(
        !first.contains(&"everything__get-sum".to_string()),
        "{first:?}"
    );

    // the choice belongs to the conversation: a new chat has everything on, reopening restores it
    click(&c, "#new-chat").await;
    assert_eq!(text_content(&c, "#tools-button").await, total);
    click(&c, "#conversation-list .conv").await;
    wait_until(
        &c,
        &format!(
            "document.querySelector('#tools-button').textContent === {}",
            serde_json::to_string(&after).unwrap()
        ),
    )
    .await;
    // turning the whole server off for this chat: nothing is offered in its next turn
    click(&c, "#tools-button").await;
    wait_css(&c, "#tools-panel [data-server='everything'] legend input")
        .await
        .click()
        .await
        .unwrap();
    wait_until(
        &c,
        "document.querySelector('#tools-button').textContent.includes('Tools 0/')",
    )
    .await;
    send(&c, "again").await;
    wait_until(
        &c,
        "document.querySelectorAll('.msg.assistant.complete').length === 2",
    )
    .await;
    let last = offered(fake.chat_requests().last().unwrap());
    assert!(last.is_empty(), "{last:?}");
    c.close().await.unwrap();
}

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
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
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
    click(&c, "#settings-button").await;
    wait_css(&c, "#set-roots")
        .await
        .send_keys(&folder.display().to_string())
        .await
        .unwrap();
    click(&c, "#settings-save").await;
    wait_until(&c, "!document.querySelector('#settings-dialog').open").await;
    // the running server was told (roots/list_changed) and asks again (roots/list); give it a moment
    tokio::time::sleep(Duration::from_millis(1500)).await;
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

/// A chat whose tool result holds a word found nowhere else, then a second chat; search finds the
/// word and opens the first chat at that reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn search_finds_a_word_in_a_tool_result_and_opens_that_message() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new().text("Done.").done().reply()
        } else if last["content"] == "echo please" {
            Stream::new()
                .tool_call("e", "everything__echo", json!({"message": "zanzibar"}))
                .done()
                .reply()
        } else {
            Stream::new().text("Hello there.").done().reply()
        }
    });
    let allow = json!({"everything__echo": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "echo please").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Done.')",
    )
    .await;
    click(&c, "#new-chat").await;
    send(&c, "just hello").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Hello there.')",
    )
    .await;
    // Ctrl+K focuses the search box
    let input = c.find(Locator::Css("#input")).await.unwrap();
    input.send_keys("\u{E009}k").await.unwrap();
    wait_until(
        &c,
        "document.activeElement === document.querySelector('#search')",
    )
    .await;
    c.find(Locator::Css("#search"))
        .await
        .unwrap()
        .send_keys("zanzi")
        .await
        .unwrap();
    wait_css(&c, "#conversation-list .hit").await;
    let hit = text_content(&c, "#conversation-list .hit").await;
    assert!(
        hit.contains("echo please") && hit.contains("in a tool call"),
        "{hit}"
    );
    assert_eq!(
        text_content(&c, "#conversation-list .hit mark").await,
        "zanzibar"
    );
    assert_eq!(
        c.execute(
            "return document.querySelectorAll('#conversation-list .hit').length;",
            vec![]
        )
        .await
        .unwrap(),
        json!(1),
        "only the chat whose tool result has the word"
    );
    screenshot(&c, "search.png").await;
    click(&c, "#conversation-list .hit").await;
    wait_until(
        &c,
        "document.querySelector('#chat-title').textContent === 'echo please'",
    )
    .await;
    // the reply that made the call is shown and flashed
    wait_css(&c, ".tool-card.flash").await;
    assert!(text_content(&c, ".tool-card.flash .result")
        .await
        .contains("zanzibar"));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_edited_message_is_a_new_branch_and_the_versions_can_be_switched() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let said = last_message(req)["content"].as_str().unwrap().to_string();
        Stream::new()
            .text(&format!("You said: {said}"))
            .done()
            .reply()
    });
    let (_home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    send(&c, "first version").await;
    wait_until(&c, "document.querySelector('.msg.assistant.complete')?.textContent.includes('You said: first version')").await;
    // Up in the empty box edits the last message
    let input = c.find(Locator::Css("#input")).await.unwrap();
    input.send_keys("\u{E013}").await.unwrap();
    let edit = wait_css(&c, ".msg.user .edit-box").await;
    edit.clear().await.unwrap();
    edit.send_keys("second version").await.unwrap();
    click(&c, "[data-action=save-edit]").await;
    wait_until(&c, "document.querySelector('.msg.assistant .body')?.textContent.includes('You said: second version')").await;
    wait_until(
        &c,
        "document.querySelector('.msg.user .branch-pos')?.textContent === '2/2'",
    )
    .await;
    screenshot(&c, "branches.png").await;
    // the model saw the edit alone, not the first version
    let last = fake.chat_requests().last().unwrap().clone();
    let users: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, vec!["second version"]);
    // back to the first version
    click(&c, ".msg.user .branch-step[data-step='-1']").await;
    wait_until(
        &c,
        "document.querySelector('.msg.user .branch-pos')?.textContent === '1/2'",
    )
    .await;
    assert_eq!(text_content(&c, ".msg.user .body").await, "first version");
    assert!(text_content(&c, ".msg.assistant .body")
        .await
        .contains("You said: first version"));
    // regenerate the reply: a second version of the answer
    c.execute(
        "document.querySelector('.msg.assistant [data-action=regenerate]').click()",
        vec![],
    )
    .await
    .unwrap();
    wait_until(
        &c,
        "document.querySelector('.msg.assistant .branch-pos')?.textContent === '2/2'",
    )
    .await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_conversation_is_exported_to_a_markdown_file_with_its_tool_calls() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new().text("The sum is **42**.").done().reply()
        } else {
            Stream::new()
                .tool_call("s", "everything__get-sum", json!({"a": 40, "b": 2}))
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__get-sum": "allow"});
    let (home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "add forty and two").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('42')",
    )
    .await;
    click(&c, "#conversation-list .conv .conv-menu-button").await;
    wait_css(&c, ".conv-menu").await;
    screenshot(&c, "library-menu.png").await;
    click(&c, ".conv-menu [data-action='Export as Markdown']").await;
    let target = home.path().join("add forty and two.md");
    save_in_file_dialog("Export conversation", &target).await;
    wait_until(
        &c,
        "document.querySelector('.toast')?.textContent.includes('Exported to')",
    )
    .await;
    let md = std::fs::read_to_string(&target).unwrap();
    assert!(md.starts_with("# add forty and two\n"), "{md}");
    assert!(md.contains("## You\n\nadd forty and two"), "{md}");
    assert!(md.contains("**Tool call: everything › get-sum**"), "{md}");
    assert!(md.contains("\"a\": 40"), "{md}");
    assert!(md.contains("The sum is **42**."), "{md}");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn pulling_a_model_shows_a_progress_bar_and_the_model_appears() {
    let fake = FakeOllama::start().await;
    fake.set_pull(30, Duration::from_millis(60));
    let (home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    click(&c, "#models-button").await;
    wait_css(
        &c,
        "#models-dialog[open] .model-row[data-name='fake-llama:latest']",
    )
    .await;
    let name = c.find(Locator::Css("#pull-name")).await.unwrap();
    name.send_keys("qwen3:0.6b").await.unwrap();
    click(&c, "#pull-start").await;
    // the bar moves while it downloads
    wait_until(&c, "(() => { const b = document.querySelector('#pull-bar'); return !document.querySelector('#pull-progress').hidden && b.max === 1000000 && b.value > 0 && b.value < b.max; })()").await;
    assert!(text_content(&c, "#pull-status").await.contains("%"));
    screenshot(&c, "pull.png").await;
    wait_until(
        &c,
        "document.querySelector('#pull-status').textContent === 'qwen3:0.6b is ready.'",
    )
    .await;
    wait_css(&c, ".model-row[data-name='qwen3:0.6b']").await;
    // it is in the model picker too
    wait_until(&c, "[...document.querySelectorAll('#model-select option')].some((o) => o.value === 'qwen3:0.6b')").await;
    // a second download, cancelled
    fake.set_pull(100, Duration::from_millis(60));
    name.send_keys("big:70b").await.unwrap();
    click(&c, "#pull-start").await;
    wait_until(&c, "document.querySelector('#pull-bar').value > 0").await;
    click(&c, "#pull-cancel").await;
    wait_until(
        &c,
        "document.querySelector('#pull-status').textContent === 'Cancelled.'",
    )
    .await;
    // a model can be told to get its tools in text (no native tool calling): saved in settings
    c.execute(
        "const s = document.querySelector(\".model-row[data-name='fake-llama:latest'] .tool-mode\"); s.value = 'text'; s.dispatchEvent(new Event('change'));",
        vec![],
    )
    .await
    .unwrap();
    let settings_file = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("settings.json");
    let t = Instant::now();
    loop {
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
        if saved["toolModes"]["fake-llama:latest"] == "text" {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{saved}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // delete asks first
    let del = c
        .find(Locator::Css(
            ".model-row[data-name='qwen3:0.6b'] [data-action=delete]",
        ))
        .await
        .unwrap();
    del.click().await.unwrap();
    assert!(text_content(
        &c,
        ".model-row[data-name='qwen3:0.6b'] [data-action=delete]"
    )
    .await
    .contains("Delete qwen3:0.6b?"));
    del.click().await.unwrap();
    wait_until(
        &c,
        "!document.querySelector(\".model-row[data-name='qwen3:0.6b']\")",
    )
    .await;
    // the text mode is used: no native tools in the request, the tools in the system prompt
    click(&c, "#models-close").await;
    fake.set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    send(&c, "hi").await;
    wait_until(&c, "document.querySelector('.msg.assistant.complete')").await;
    let sent = fake.chat_requests().last().unwrap().clone();
    assert!(sent.get("tools").is_none(), "{sent}");
    assert!(sent["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("- everything__echo:"));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn ten_thousand_conversations_scroll_with_only_the_rows_in_view_in_the_page() {
    let (home, _config) = app_home();
    // the library, written before the app starts: 10,000 conversations, "chat 9999" the newest
    let db = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("conversations.sqlite3");
    {
        use switchboard_engine::store::exchange::{
            ExportedConversation, ExportedMessage, FORMAT, VERSION,
        };
        let store = switchboard_engine::store::Store::open(&db).await.unwrap();
        let t = Instant::now();
        for i in 0..10_000i64 {
            let m = |id: i64, role, content: String| ExportedMessage {
                id,
                parent: (id > 1).then(|| id - 1),
                role,
                content,
                thinking: None,
                tool_calls: vec![],
                tool_name: None,
                tool_call_id: None,
                status: switchboard_engine::store::MessageStatus::Complete,
                notice: None,
                created_at: i,
            };
            let doc = ExportedConversation {
                format: FORMAT.into(),
                version: VERSION,
                title: format!("chat {i:04}"),
                model: "fake-llama:latest".into(),
                created_at: i,
                updated_at: 1_700_000_000_000 + i * 1000,
                pinned: i == 17,
                tool_choice: Default::default(),
                settings: Default::default(),
                leaf: Some(2),
                messages: vec![
                    m(
                        1,
                        switchboard_engine::llm::Role::User,
                        format!("question {i}"),
                    ),
                    m(
                        2,
                        switchboard_engine::llm::Role::Assistant,
                        format!("answer number {i}"),
                    ),
                ],
                tool_calls: vec![],
            };
            store.import_json(&doc, None).await.unwrap();
        }
        eprintln!(
            "wrote 10,000 conversations in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    wait_css(&c, "#conversation-list .conv").await;
    let rows = "return document.querySelectorAll('#conversation-list .conv').length;";
    let n = c.execute(rows, vec![]).await.unwrap().as_u64().unwrap();
    assert!(
        n > 5 && n < 60,
        "only the rows in view (and a few more): {n}"
    );
    // pinned first, then newest
    let first: Vec<String> = c
        .execute(
            "return [...document.querySelectorAll('#conversation-list .conv')].sort((a, b) => a.offsetTop - b.offsetTop).slice(0, 2).map((r) => r.querySelector('.conv-title').textContent);",
            vec![],
        )
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(first[0].ends_with("chat 0017"), "{first:?}");
    assert_eq!(first[1], "chat 9999");
    // to the very end: the oldest is there, and still only a few rows are in the page
    c.execute(
        "const l = document.querySelector('#conversation-list'); l.scrollTop = l.scrollHeight;",
        vec![],
    )
    .await
    .unwrap();
    wait_until(
        &c,
        "[...document.querySelectorAll('#conversation-list .conv-title')].some((t) => t.textContent === 'chat 0000')",
    )
    .await;
    let n = c.execute(rows, vec![]).await.unwrap().as_u64().unwrap();
    assert!(n < 60, "{n}");
    // the browser screen: the same list at full width
    click(&c, "#library-toggle").await;
    wait_until(&c, "document.body.classList.contains('library')").await;
    c.execute(
        "const l = document.querySelector('#conversation-list'); l.scrollTop = 0;",
        vec![],
    )
    .await
    .unwrap();
    screenshot(&c, "library.png").await;
    click(&c, "#conversation-list .conv[data-id]").await;
    wait_until(
        &c,
        "!document.body.classList.contains('library') && document.querySelector('.msg.assistant')",
    )
    .await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_openai_compatible_server_added_in_settings_answers_and_the_debug_view_shows_the_call() {
    let fake = FakeOllama::start().await;
    fake.set_models(&["gemma-270m.gguf"]);
    fake.set_openai_responder(|_req: &Value| {
        support::fake_ollama::Sse::new()
            .text("Hi from ")
            .text("llama.cpp")
            .finish("stop")
            .done()
            .reply()
    });
    // Ollama itself is not running: its URL answers nothing
    let nothing = format!("http://127.0.0.1:{}", support::free_port());
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": nothing}).to_string(),
    )
    .unwrap();
    let driver = Driver::start(home.path());
    let c = driver.session().await;
    wait_css(&c, "body[data-ready='true']").await;
    click(&c, "#settings-button").await;
    click(&c, "#add-provider").await;
    wait_css(&c, ".provider-row .prov-name")
        .await
        .send_keys("llama.cpp")
        .await
        .unwrap();
    c.find(Locator::Css(".provider-row .prov-url"))
        .await
        .unwrap()
        .send_keys(&format!("{}/v1", fake.url))
        .await
        .unwrap();
    c.find(Locator::Css(".provider-row .prov-key"))
        .await
        .unwrap()
        .send_keys("sk-test")
        .await
        .unwrap();
    click(&c, "#settings-save").await;
    wait_until(&c, "[...document.querySelectorAll('#model-select option')].some((o) => o.value === 'gemma-270m.gguf' && o.dataset.provider === 'llama-cpp')").await;
    c.execute("const s = document.querySelector('#model-select'); [...s.options].find((o) => o.value === 'gemma-270m.gguf').selected = true; s.dispatchEvent(new Event('change'));", vec![]).await.unwrap();
    send(&c, "hello").await;
    wait_until(&c, "document.querySelector('.msg.assistant.complete')?.textContent.includes('Hi from llama.cpp')").await;
    assert_eq!(fake.openai_requests().len(), 1);
    assert_eq!(
        fake.authorizations().last().unwrap().as_deref(),
        Some("Bearer sk-test")
    );
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(saved["providers"][0]["url"], format!("{}/v1", fake.url));
    // the debug view: the exact request and the streamed events
    click(&c, "#debug-button").await;
    wait_css(&c, "#debug-dialog[open] .debug-call").await;
    let request = text_content(&c, ".debug-call .debug-request").await;
    assert!(
        request.contains("\"stream\": true") && request.contains("\"content\": \"hello\""),
        "{request}"
    );
    assert!(text_content(&c, ".debug-call .debug-response")
        .await
        .contains("llama.cpp"));
    screenshot(&c, "debug.png").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_conversation_is_renamed_pinned_deleted_and_brought_back() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|_req: &Value| Stream::new().text("Sure.").done().reply());
    let (_home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    send(&c, "first chat").await;
    wait_until(&c, "document.querySelector('.msg.assistant.complete')").await;
    click(&c, "#new-chat").await;
    send(&c, "second chat").await;
    wait_until(
        &c,
        "document.querySelectorAll('#conversation-list .conv').length === 2 && document.querySelector('.msg.assistant.complete')",
    )
    .await;
    async fn menu(c: &Client, title: &str, action: &str) {
        c.execute(
            &format!("[...document.querySelectorAll('#conversation-list .conv')].find((r) => r.querySelector('.conv-title').textContent.endsWith('{title}')).querySelector('.conv-menu-button').click();"),
            vec![],
        )
        .await
        .unwrap();
        wait_css(c, ".conv-menu").await;
        click(c, &format!(".conv-menu [data-action='{action}']")).await;
    }
    let order = "return [...document.querySelectorAll('#conversation-list .conv')].sort((a, b) => a.offsetTop - b.offsetTop).map((r) => r.querySelector('.conv-title').textContent);";
    // rename the open one: sidebar and header follow
    menu(&c, "second chat", "Rename").await;
    // the old title is selected: typing replaces it
    let input = wait_css(&c, ".rename-input").await;
    input.send_keys("Renamed chat\u{E007}").await.unwrap();
    wait_until(
        &c,
        "document.querySelector('#chat-title').textContent === 'Renamed chat'",
    )
    .await;
    // pin the older one: it goes first, with its star
    menu(&c, "first chat", "Pin").await;
    wait_until(
        &c,
        "document.querySelectorAll('#conversation-list .conv.pinned').length === 1",
    )
    .await;
    assert_eq!(
        c.execute(order, vec![]).await.unwrap(),
        json!(["★ first chat", "Renamed chat"])
    );
    // delete, then Undo
    menu(&c, "Renamed chat", "Delete").await;
    wait_until(
        &c,
        "document.querySelectorAll('#conversation-list .conv').length === 1",
    )
    .await;
    assert_eq!(
        text_content(&c, "#chat-title").await,
        "New chat",
        "the open chat was closed"
    );
    click(&c, ".toast [data-action=undo]").await;
    wait_until(
        &c,
        "document.querySelectorAll('#conversation-list .conv').length === 2",
    )
    .await;
    assert_eq!(
        c.execute(order, vec![]).await.unwrap(),
        json!(["★ first chat", "Renamed chat"])
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn after_the_tool_round_limit_continue_goes_on_and_wrap_up_answers_without_tools() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        if req.get("tools").is_none() {
            return Stream::new()
                .text("Summing up: the echoes worked.")
                .done()
                .reply();
        }
        let n = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        Stream::new()
            .tool_call(
                "e",
                "everything__echo",
                json!({"message": format!("round {n}")}),
            )
            .done()
            .reply()
    });
    let allow = json!({"everything__echo": "allow"});
    let (_home, _driver, c) = launch_with_everything(
        json!({"llmUrl": fake.url, "toolPolicies": allow, "maxIterations": 2}),
    )
    .await;
    send(&c, "echo forever").await;
    wait_css(&c, ".notice [data-action=wrap-up]").await;
    assert!(text_content(&c, ".notice")
        .await
        .contains("Stopped after 2 rounds"));
    // Continue: two more rounds, then the buttons again
    click(&c, ".notice [data-action=continue]").await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.ok').length === 4 && document.querySelector('.notice [data-action=wrap-up]')",
    )
    .await;
    assert_eq!(
        c.execute(
            "return document.querySelectorAll('.msg.user').length;",
            vec![]
        )
        .await
        .unwrap(),
        json!(1),
        "continuing adds no message of yours"
    );
    click(&c, ".notice [data-action=wrap-up]").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Summing up')",
    )
    .await;
    assert!(
        c.find(Locator::Css(".notice [data-action=wrap-up]"))
            .await
            .is_err(),
        "the buttons are gone"
    );
    assert!(fake.chat_requests().last().unwrap().get("tools").is_none());
    c.close().await.unwrap();
}
