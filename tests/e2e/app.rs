//! The fixture every E2E test uses: a fresh app home (temporary XDG folders), the app launched in
//! it through tauri-driver (one driver, so one app process, per launch), and helpers to wait for,
//! read and drive the real window.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::support;
pub use crate::xserver::*;

/// The app, launched on a home folder and ready (its page has started), in a WebDriver
/// session. Dropping `driver` ends the app (and so its MCP servers).
pub struct App {
    pub c: Client,
    pub driver: Driver,
}

impl App {
    /// Launches the app with `home` as its XDG home and waits until the window is ready.
    pub async fn launch(home: &Path) -> App {
        App::launch_with_env(home, &[]).await
    }

    /// [`App::launch`] with these environment variables set for the app.
    pub async fn launch_with_env(home: &Path, env: &[(&str, &str)]) -> App {
        App::launch_on(home, env, Bus::None, None).await
    }

    /// [`App::launch`] with the app's working folder `cwd` (where the programs it starts run).
    #[allow(dead_code)] // catalog.rs's compiled-out tests
    pub async fn launch_in(home: &Path, cwd: &Path) -> App {
        App::launch_on(home, &[], Bus::None, Some(cwd)).await
    }

    /// [`App::launch`] on a session bus of its own with gnome-keyring on it, unlocked, its
    /// keyrings in `home/data/keyrings` (never the desktop's keyring). The bus's address is
    /// written to [`KEYRING_BUS_FILE`] in `home`, for [`keyring_lookup`].
    pub async fn launch_with_keyring(home: &Path) -> App {
        App::launch_on(home, &[], Bus::Keyring, None).await
    }

    /// [`App::launch`] on a session bus of its own with a desktop notification server on it
    /// (dunst, on the test's X display); every call to the notification interface is written to
    /// [`NOTIFY_LOG`] in `home` by `dbus-monitor`, and the bus's address to [`NOTIFY_BUS_FILE`].
    pub async fn launch_with_notifications(home: &Path) -> App {
        App::launch_on(home, &[], Bus::Notifications, None).await
    }

    /// Starts tauri-driver and opens a session on the app. WebKitWebDriver now and then closes the
    /// connection while the session is being created (seen in CI: `IncompleteMessage`, the app
    /// never shown); that says nothing about the app, so the driver is started afresh, on new
    /// ports, up to three times. Anything after the session exists is the test's to judge.
    async fn launch_on(home: &Path, env: &[(&str, &str)], bus: Bus, cwd: Option<&Path>) -> App {
        let mut attempt = 1;
        loop {
            let driver = Driver::start(home, env, bus, cwd);
            match driver.session().await {
                Ok(c) => {
                    wait_css(&c, "body[data-ready='true']").await;
                    return App { c, driver };
                }
                Err(e) if attempt < 3 => {
                    eprintln!("WebDriver session on the app failed (attempt {attempt}): {e}; starting the driver again");
                    drop(driver);
                    attempt += 1;
                }
                Err(e) => panic!("a WebDriver session on the app: {e}"),
            }
        }
    }

    /// Kills the app's own process (SIGKILL: nothing of its exit runs, as in a crash or a
    /// `kill -9`), then ends the session and the driver; its MCP servers go with the driver.
    pub async fn kill(self) {
        let main = self
            .driver
            .app_processes()
            .into_iter()
            .find(|(_, label)| label == "main (switchboard)")
            .expect("the app's process")
            .0;
        // SAFETY: a signal to a process id read just now from /proc, under our driver
        unsafe {
            libc::kill(main, libc::SIGKILL);
        }
        let _ = self.c.close().await;
        drop(self.driver);
    }

    /// [`App::launch`], then waits until its `n` MCP servers all run.
    pub async fn launch_with_servers(home: &Path, n: usize) -> App {
        let app = App::launch(home).await;
        wait_servers(&app.c, n).await;
        app
    }
}

/// Waits until the sidebar says all `n` MCP servers run.
pub async fn wait_servers(c: &Client, n: usize) {
    wait_until(
        c,
        &format!(
            "document.querySelector('#servers-summary').textContent.includes('{n}/{n} servers')"
        ),
    )
    .await;
}

pub const WAIT: Duration = Duration::from_secs(30);

/// The session bus the app gets: none, one with gnome-keyring, one with a notification server.
#[derive(Clone, Copy, PartialEq)]
enum Bus {
    None,
    Keyring,
    Notifications,
}

/// Where [`App::launch_with_notifications`] writes what dbus-monitor saw, and the bus address.
pub const NOTIFY_LOG: &str = "notifications.log";
pub const NOTIFY_BUS_FILE: &str = "notify-bus";

/// One tauri-driver (and so one app process) per session.
pub struct Driver {
    child: Child,
    port: u16,
}

/// A port free now, for WebKitWebDriver: tauri-driver must be told its port (it forwards there),
/// and WebKitWebDriver can neither take a listener nor say which port it bound, so this is the one
/// port the tests name before its server binds it. Should another process take it in between,
/// WebKitWebDriver does not start, the session fails, and [`App::launch_on`] starts the driver
/// again on new ports.
fn port_free_now() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Driver {
    /// On `bus`: a `dbus-run-session` with gnome-keyring (see [`App::launch_with_keyring`]) or
    /// with a notification server (see [`App::launch_with_notifications`]); else with no session
    /// bus, so that secrets go to the fallback file (and a test run on a desktop never reaches its
    /// keyring or its notifications).
    fn start(home: &Path, env: &[(&str, &str)], bus: Bus, cwd: Option<&Path>) -> Driver {
        use std::os::unix::fs::PermissionsExt;
        let native = port_free_now();
        std::fs::create_dir_all(home.join("cache")).unwrap();
        let run = home.join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        let bin = which_tauri_driver();
        let mut cmd = if bus == Bus::Notifications {
            let mut cmd = Command::new("dbus-run-session");
            cmd.args([
                "--",
                "sh",
                "-c",
                r#"printf %s "$DBUS_SESSION_BUS_ADDRESS" > "$0" || exit 1
                   log="$1"; shift
                   dbus-monitor --session "interface='org.freedesktop.Notifications'" "interface='dev.switchboard.Test'" > "$log" 2>&1 &
                   dunst >/dev/null 2>&1 &
                   until [ -s "$log" ]; do dbus-send --session --type=signal / dev.switchboard.Test.Ready; sleep 0.05; done &&
                   until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
                     org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null | grep -q true; do
                     sleep 0.05; done &&
                   exec "$@""#,
            ])
            .arg(home.join(NOTIFY_BUS_FILE))
            .arg(home.join(NOTIFY_LOG))
            .arg(bin);
            cmd
        } else if bus == Bus::Keyring {
            let mut cmd = Command::new("dbus-run-session");
            cmd.args([
                "--",
                "sh",
                "-c",
                r#"printf %s "$DBUS_SESSION_BUS_ADDRESS" > "$0" &&
                   printf %s switchboard-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null &&
                   exec "$@""#,
            ])
            .arg(home.join(KEYRING_BUS_FILE))
            .arg(bin);
            cmd
        } else {
            Command::new(bin)
        };
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let child = cmd
            // port 0: tauri-driver binds a port the system picks (read back from /proc)
            .args(["--port", "0", "--native-port", &native.to_string()])
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("XDG_RUNTIME_DIR", &run)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            // GTK dialogs remember settings in dconf, which needs a session bus; keep them in memory
            .env("GSETTINGS_BACKEND", "memory")
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("SWITCHBOARD_LOG", "warn,tauri_plugin_single_instance=error")
            .env_remove("OLLAMA_HOST")
            // the built-in research server never reaches the real arXiv from a test: a closed
            // port unless the test gives its own stand-in
            .env("SWITCHBOARD_ARXIV_URL", "http://127.0.0.1:9/api/query")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // its own process group, so ending it also ends the WebKitWebDriver it starts
            .process_group(0)
            .spawn()
            .expect("tauri-driver starts (install it with `make test-deps`)");
        // wait until it listens (a driver that never does is ended with what it started): its
        // group's listening port that is not WebKitWebDriver's
        let mut driver = Driver { child, port: 0 };
        let t = Instant::now();
        driver.port = loop {
            let ports = support::listening_ports_in_group(driver.child.id());
            if let Some(port) = ports.into_iter().find(|p| *p != native) {
                break port;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "tauri-driver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        driver
    }

    async fn session(&self) -> Result<Client, fantoccini::error::NewSessionError> {
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
    }
}

impl Driver {
    /// The app's processes (the app, WebKit's, its MCP servers): every process under the driver
    /// but tauri-driver, WebKitWebDriver and the session bus around them; with a label each.
    pub fn app_processes(&self) -> Vec<(i32, String)> {
        // every process's parent, read once
        let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| {
                let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
                Some((pid, stat_fields(pid).get(1)?.parse().ok()?))
            })
            .collect();
        let root = self.child.id() as i32;
        let mut tree = vec![root];
        let mut i = 0;
        while i < tree.len() {
            let p = tree[i];
            tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
            i += 1;
        }
        tree.into_iter()
            .filter_map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let argv: Vec<String> = cmdline
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                let name = Path::new(argv.first()?)
                    .file_name()?
                    .to_string_lossy()
                    .into_owned();
                let server = argv
                    .iter()
                    .position(|a| a == "mcp-server")
                    .map(|i| argv.get(i + 1).cloned().unwrap_or_default());
                let label = match (name.as_str(), server) {
                    (
                        "tauri-driver"
                        | "WebKitWebDriver"
                        | "dbus-run-session"
                        | "dbus-daemon"
                        | "sh"
                        | "gnome-keyring-daemon"
                        | "dbus-monitor"
                        | "dunst",
                        _,
                    ) => return None,
                    (_, Some(server)) => format!("server: {server}"),
                    ("switchboard", None) => "main (switchboard)".into(),
                    (n, None) if n.contains("WebKitWebProcess") => "WebKit web process".into(),
                    (n, None) if n.contains("WebKitNetworkProcess") => {
                        "WebKit network process".into()
                    }
                    ("switchboard-mcp", None) => {
                        format!("server: {}", argv.get(1).cloned().unwrap_or_default())
                    }
                    (_, None) => name,
                };
                Some((pid, label))
            })
            .collect()
    }
}

/// The fields of `/proc/<pid>/stat` after the command (the state first, then the parent's pid, …;
/// field N of proc(5) is at N − 3); none when the process is gone.
pub fn stat_fields(pid: i32) -> Vec<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
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

pub fn which_tauri_driver() -> PathBuf {
    let home_bin =
        PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/bin/tauri-driver");
    if home_bin.exists() {
        return home_bin;
    }
    PathBuf::from("tauri-driver")
}

/// Waits until `css` finds an element. Lists re-render as things change: WebKitWebDriver then
/// reports the node it had just found as stale, which means "look again", not a failure.
pub async fn wait_css(c: &Client, css: &str) -> fantoccini::elements::Element {
    let t = Instant::now();
    loop {
        let last = match c.find(Locator::Css(css)).await {
            Ok(found) => return found,
            Err(e) if retry_find(&e) => e,
            Err(e) => panic!("waiting for {css}: {e}"),
        };
        if t.elapsed() > WAIT {
            panic!("waiting for {css}: timed out ({last})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A find that may succeed when tried again: nothing matched yet, or the match went stale.
fn retry_find(e: &fantoccini::error::CmdError) -> bool {
    e.is_no_such_element()
        || e.is_stale_element_reference()
        || matches!(e, fantoccini::error::CmdError::Standard(w) if w.message.contains("Stale element"))
}

/// How many elements in the window match `css`.
pub async fn count(c: &Client, css: &str) -> u64 {
    c.execute(
        "return document.querySelectorAll(arguments[0]).length;",
        vec![serde_json::json!(css)],
    )
    .await
    .unwrap()
    .as_u64()
    .unwrap()
}

pub async fn text_content(c: &Client, css: &str) -> String {
    let v = c
        .execute(
            "const n = document.querySelector(arguments[0]); return n ? n.textContent : null;",
            vec![json!(css)],
        )
        .await
        .unwrap();
    v.as_str().unwrap_or_default().to_string()
}

pub async fn send(c: &Client, text: &str) {
    let input = wait_css(c, "#input").await;
    input.send_keys(text).await.unwrap();
    input.send_keys("\u{E007}").await.unwrap(); // Enter
}

/// Clicks the element `css` finds (it must be there). Lists re-render as things change (the
/// library after a turn): an element that went stale between finding and clicking is found again.
pub async fn click(c: &Client, css: &str) {
    for attempt in 0.. {
        let found = match c.find(Locator::Css(css)).await {
            Ok(found) => found,
            Err(e) if retry_find(&e) && attempt < 3 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(e) => panic!("{css}: {e}"),
        };
        match found.click().await {
            Ok(_) => return,
            Err(fantoccini::error::CmdError::Standard(e))
                if e.error == fantoccini::error::ErrorStatus::StaleElementReference
                    && attempt < 3 =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("clicking {css}: {e}"),
        }
    }
}

/// Writes a screenshot to target/screenshots/NAME once the page has painted what the DOM holds
/// (`make screenshots` copies them to docs/screenshots when they are meant to change).
pub async fn screenshot(c: &Client, name: &str) {
    c.execute_async(
        "const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 150)));",
        vec![],
    )
    .await
    .unwrap();
    let png = x_window_png();
    // the target folder this test binary was built into (target/debug/deps/e2e-…)
    let exe = std::env::current_exe().unwrap();
    let dir = exe.ancestors().nth(3).unwrap().join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), png).unwrap();
}

/// A fresh home for the app (XDG folders under a temp dir) and its config folder, created.
pub fn app_home() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let config_dir = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER);
    std::fs::create_dir_all(&config_dir).unwrap();
    (home, config_dir)
}

/// A stand-in browser for the app: an `xdg-open` in `home/bin` that writes down each address
/// it is given, a line each. The app uses it when launched with `PATH` set to [`Self::path`].
pub struct StandInBrowser {
    /// `PATH` with the stand-in's folder first, for the app's environment.
    pub path: String,
    opened: PathBuf,
}

impl StandInBrowser {
    /// Writes the stand-in into `home/bin`.
    pub fn install(home: &Path) -> StandInBrowser {
        use std::os::unix::fs::PermissionsExt;
        let bin = home.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let opened = home.join("opened.txt");
        let opener = bin.join("xdg-open");
        std::fs::write(
            &opener,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
                opened.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        StandInBrowser { path, opened }
    }

    /// The addresses it was given so far, a line each ("" when none).
    pub fn opened(&self) -> String {
        std::fs::read_to_string(&self.opened).unwrap_or_default()
    }

    /// Waits until it was given `n` addresses or [`WAIT`] has passed; what it was given by then
    /// (the caller asserts what that should be).
    pub async fn wait_opened(&self, n: usize) -> String {
        let t = Instant::now();
        while self.opened().lines().count() < n && t.elapsed() < WAIT {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.opened()
    }
}

/// The conversation store the app started in `home` will open, to fill before it starts.
pub async fn app_store(home: &std::path::Path) -> switchboard_engine::store::Store {
    let db = home
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("conversations.sqlite3");
    switchboard_engine::store::Store::open(&db).await.unwrap()
}

/// A fresh app home with these settings (`settings.json`) and these MCP servers (`mcp.json`).
pub fn home_with_servers(
    settings: Value,
    servers: Vec<(&str, switchboard_engine::mcp::ServerConfig)>,
) -> tempfile::TempDir {
    let (home, config_dir) = app_home();
    std::fs::write(config_dir.join("settings.json"), settings.to_string()).unwrap();
    let mut cfg = switchboard_engine::mcp::McpConfig::default();
    for (name, server) in servers {
        cfg.servers.insert(name.into(), server);
    }
    cfg.save(&config_dir.join("mcp.json")).unwrap();
    home
}

/// A fresh app home with these settings and server-everything as its only MCP server; the app
/// launched and its server running.
pub async fn launch_with_everything(settings: Value) -> (tempfile::TempDir, Driver, Client) {
    let everything = switchboard_engine::mcp::ServerConfig::new(
        "node",
        &[support::everything_server().to_str().unwrap(), "stdio"],
    );
    let home = home_with_servers(settings, vec![("everything", everything)]);
    let App { c, driver } = App::launch_with_servers(home.path(), 1).await;
    (home, driver, c)
}

/// The app's servers list as its IPC last sent it (`watch_servers`, subscribed to once per page:
/// polling it must not add a subscription a call).
pub async fn servers_now(c: &Client) -> Vec<Value> {
    let v = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             if (!window.__e2eServers) {
               const w = (window.__e2eServers = { list: null, waiting: [] });
               const ch = new window.__TAURI__.core.Channel();
               ch.onmessage = (list) => { w.list = list; w.waiting.splice(0).forEach((f) => f(list)); };
               window.__TAURI__.core.invoke('watch_servers', { onChange: ch });
             }
             const w = window.__e2eServers;
             if (w.list) done(w.list); else w.waiting.push(done);",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

/// The MCP server processes of the running app, asked through its own IPC.
pub async fn server_pids(c: &Client) -> Vec<u32> {
    let v = servers_now(c).await;
    let pids: Vec<u32> = v
        .iter()
        .filter_map(|s| s["pid"].as_u64().map(|p| p as u32))
        .collect();
    assert!(
        !pids.is_empty(),
        "the built-in servers have processes: {v:?}"
    );
    pids
}

pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

pub fn assert_all_gone(pids: &[u32], how: &str) {
    let t = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "after {how}, MCP servers still run: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub async fn wait_until(c: &Client, js_condition: &str) {
    wait_until_for(c, js_condition, WAIT).await;
}

/// [`wait_until`] for up to `limit` (work that goes to the network, such as fetching a package).
pub async fn wait_until_for(c: &Client, js_condition: &str, limit: Duration) {
    let t = Instant::now();
    loop {
        let v = c
            .execute(&format!("return !!({js_condition});"), vec![])
            .await
            .unwrap();
        if v == json!(true) {
            return;
        }
        assert!(t.elapsed() < limit, "timed out waiting for: {js_condition}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until a finished reply of the model contains `text`.
pub async fn wait_answer(c: &Client, text: &str) {
    let js = format!(
        "[...document.querySelectorAll('.msg.assistant.complete')].some((m) => m.textContent.includes({}))",
        serde_json::to_string(text).unwrap()
    );
    wait_until(c, &js).await;
}

/// What the conversation shows as the user's messages, in order.
pub async fn user_messages(c: &Client) -> Value {
    c.execute(
        "return [...document.querySelectorAll('.msg.user .body')].map((b) => b.textContent);",
        vec![],
    )
    .await
    .unwrap()
}

/// Where [`App::launch_with_keyring`] writes its session bus's address.
pub const KEYRING_BUS_FILE: &str = "keyring-bus";

/// What `secret-tool` finds in the keyring of an app launched with [`App::launch_with_keyring`]
/// on `home`, for the item with this id (Switchboard's items: service = the app's id, username =
/// the id in the reference).
pub fn keyring_lookup(home: &Path, id: &str) -> Option<String> {
    let bus = std::fs::read_to_string(home.join(KEYRING_BUS_FILE)).unwrap();
    let out = Command::new("secret-tool")
        .args([
            "lookup",
            "service",
            switchboard_engine::paths::APP_IDENTIFIER,
            "username",
            id,
        ])
        .env("DBUS_SESSION_BUS_ADDRESS", bus.trim())
        .output()
        .expect("secret-tool (make test-deps installs it)");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).to_string())
}

/// The window's own state file (tauri-plugin-store) in app home `home`.
pub fn state_file(home: &Path) -> std::path::PathBuf {
    home.join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("window-state.json")
}

/// The store file as the app last wrote it (null while it has not).
pub fn stored(home: &Path) -> Value {
    std::fs::read(state_file(home))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// Waits until the store file satisfies `ok` (the app writes it itself: after a change, or once
/// the window has been still for a moment).
pub async fn wait_stored(home: &Path, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let t = Instant::now();
    loop {
        let v = stored(home);
        if ok(&v) {
            return v;
        }
        assert!(
            t.elapsed() < WAIT,
            "window-state.json never had {what}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
