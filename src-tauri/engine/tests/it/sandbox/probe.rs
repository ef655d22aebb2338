//! The probe (`tests/fixtures/probe_server.py`) tries every way out of a sandbox, installed as a
//! new user's uvx or pipx program would be (`~/.local/bin`), in a home with credentials, the
//! app's own folders and shared launcher caches: sandboxed without network and with network
//! and all of home granted, each way is refused; unsandboxed (the control), each is open, so a
//! probe that could not tell would fail here.

use std::collections::BTreeSet;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use switchboard_engine::mcp::sandbox::{kernel_abi, ENV_ALLOWED};
use switchboard_engine::mcp::{McpConfig, McpHost, SandboxConfig, ServerConfig};

use super::{call, landlock, sandboxed, view};
use crate::support::*;

/// Credential files a user has, as the issue lists them.
const CREDENTIALS: &[&str] = &[
    ".ssh/id_rsa",
    ".gnupg/private-keys-v1.d/key.key",
    ".aws/credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".docker/config.json",
    ".kube/config",
    ".local/share/keyrings/login.keyring",
];

const APP: &str = "dev.switchboard.desktop";

/// What the test set up around the servers.
struct World {
    home: PathBuf,
    /// Credential files and the app's own files: never readable sandboxed.
    secret: Vec<PathBuf>,
    /// Files in shared launcher caches a server could plant code in.
    caches: Vec<PathBuf>,
    agent: PathBuf,
    log: PathBuf,
    abstract_name: String,
    canary: PathBuf,
    _listeners: (UnixListener, UnixDatagram, UnixListener),
}

fn world(root: &Path) -> World {
    let home = root.join("home");
    let write = |p: &Path, text: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let mut secret: Vec<PathBuf> = CREDENTIALS.iter().map(|c| home.join(c)).collect();
    secret.push(home.join(format!(".config/{APP}/mcp.json")));
    secret.push(home.join(format!(".local/share/{APP}/conversations.sqlite3")));
    secret.push(home.join(format!(".local/share/{APP}/secrets/secrets.json")));
    for s in &secret {
        write(s, "a secret");
    }
    write(&home.join("notes/todo.txt"), "buy milk");
    for c in [".npm/_cacache/index-v5/x", ".cache/uv/archive-v0/x"] {
        write(&home.join(c), "cached");
    }
    let caches = vec![
        home.join(".npm/_npx/planted/index.js"),
        home.join(".cache/uv/archive-v0/planted.py"),
    ];
    // the probe where uvx and pipx put programs
    let bin = home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(fixture("probe_server.py"), bin.join("switchboard-probe")).unwrap();
    // an ssh-agent's socket, a log socket (datagrams), and an abstract one (like a bus's)
    let run = root.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let (agent, log) = (run.join("agent.sock"), run.join("log.sock"));
    let abstract_name = format!("switchboard-probe-{}-{}", std::process::id(), rand_suffix());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        UnixListener::bind_addr(&addr).unwrap()
    };
    let canary = root.join("inherited-fd-canary");
    write(&canary, "the host's");
    World {
        _listeners: (
            UnixListener::bind(&agent).unwrap(),
            UnixDatagram::bind(&log).unwrap(),
            abstract_listener,
        ),
        home,
        secret,
        caches,
        agent,
        log,
        abstract_name,
        canary,
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// A descriptor the host holds open without close-on-exec, as a library might leave one.
struct Inherited(i32);

impl Inherited {
    fn open(p: &Path) -> Inherited {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY) };
        assert!(fd > 2, "opened {}", p.display());
        Inherited(fd)
    }
}

impl Drop for Inherited {
    fn drop(&mut self) {
        unsafe { libc::close(self.0) };
    }
}

/// What the probe found, as JSON.
async fn probe(host: &McpHost, server: &str, w: &World, pids: Value, ptrace: Value) -> Value {
    let read: Vec<PathBuf> = w
        .secret
        .iter()
        .cloned()
        .chain([w.home.join("notes/todo.txt")])
        .collect();
    let r = call(
        host,
        &format!("{server}__probe"),
        json!({
            "read": read,
            "write": w.caches,
            "pathSockets": [w.agent],
            "abstractSockets": [w.abstract_name],
            "dgramSockets": [w.log],
            "pids": pids,
            "ptrace": ptrace,
        }),
    )
    .await;
    assert!(!r.is_error, "{server}: {r:?}");
    serde_json::from_str(&r.text).unwrap()
}

/// The refusal every sandboxed route gets: EACCES from Landlock and seccomp alike, EPERM for
/// what Landlock treats as ptrace (and signals).
fn refused(v: &Value) -> bool {
    matches!(v.as_str(), Some("EACCES" | "EPERM"))
}

fn assert_no_way_out(server: &str, r: &Value, w: &World, granted: Option<&str>) {
    for s in &w.secret {
        let got = &r["read"][s.to_str().unwrap()];
        assert!(refused(got), "{server} read {}: {got}", s.display());
    }
    for c in &w.caches {
        let got = &r["write"][c.to_str().unwrap()];
        assert!(refused(got), "{server} planted {}: {got}", c.display());
        assert!(!c.exists());
    }
    // its own cache is where its launcher writes
    assert_eq!(r["ownCache"], "ok", "{server}");
    for (route, what) in [
        ("pathSocket", w.agent.to_str().unwrap()),
        ("abstractSocket", w.abstract_name.as_str()),
        ("dgramViaPair", w.log.to_str().unwrap()),
    ] {
        assert!(refused(&r[route][what]), "{server} {route}: {r}");
    }
    // runtimes keep their socketpairs
    assert_eq!(r["streamPair"], "ok", "{server}");
    assert_eq!(r["devTty"], "EACCES", "{server}");
    assert_eq!(r["tiocsti"], "EACCES", "{server}");
    assert_eq!(r["tioclinux"], "EACCES", "{server}");
    for who in ["parent", "sibling", "other"] {
        assert!(refused(&r["procEnviron"][who]), "{server} {who}: {r}");
        assert!(refused(&r["procMem"][who]), "{server} {who}: {r}");
    }
    assert_eq!(r["ptrace"]["sibling"], "EPERM", "{server}");
    if kernel_abi() >= 6 {
        assert_eq!(r["signalParent"], "EPERM", "{server}");
    } else {
        // the row says this one is missing (see below)
        assert_eq!(r["signalParent"], "ok", "{server}");
    }
    assert_eq!(r["session"], "own", "{server}");
    // started by root (as this test may be), it holds no capability all the same
    assert_eq!(r["capEff"], "0000000000000000", "{server}");
    assert_eq!(r["capBnd"], "0000000000000000", "{server}");
    let fds: Vec<&str> = r["fds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        !fds.contains(&w.canary.to_str().unwrap()),
        "{server} inherited {fds:?}"
    );
    let env: BTreeSet<&str> = r["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in &env {
        let ours = ENV_ALLOWED.contains(name)
            || name.starts_with("LC_")
            || [
                "TMPDIR",
                "XDG_CACHE_HOME",
                "npm_config_cache",
                "npm_config_store_dir",
                "UV_CACHE_DIR",
                "UV_TOOL_DIR",
                "PIP_CACHE_DIR",
                "YARN_CACHE_FOLDER",
                "BUN_INSTALL_CACHE_DIR",
                // without network, the launchers work from their caches
                "npm_config_offline",
                "UV_OFFLINE",
            ]
            .contains(name)
            || Some(*name) == granted;
        assert!(ours, "{server} got {name} from the host: {env:?}");
    }
    if let Some(g) = granted {
        assert!(env.contains(g), "{server} was granted {g}: {env:?}");
    }
}

fn assert_every_way_open(r: &Value, w: &World, host_only: &str) {
    for s in &w.secret {
        assert_eq!(r["read"][s.to_str().unwrap()], "ok", "{}", s.display());
    }
    for c in &w.caches {
        assert_eq!(r["write"][c.to_str().unwrap()], "ok", "{}", c.display());
    }
    for (route, what) in [
        ("pathSocket", w.agent.to_str().unwrap()),
        ("abstractSocket", w.abstract_name.as_str()),
        ("dgramViaPair", w.log.to_str().unwrap()),
    ] {
        assert_eq!(r[route][what], "ok", "{route}: {r}");
    }
    // no terminal to open or type into (every server has its own session), but no refusal
    assert_eq!(r["devTty"], "ENXIO");
    assert_eq!(r["tiocsti"], "ENOTTY");
    assert_eq!(r["tioclinux"], "ENOTTY");
    for who in ["parent", "sibling", "other"] {
        assert_eq!(r["procEnviron"][who], "ok", "{who}: {r}");
        assert_eq!(r["procMem"][who], "ok", "{who}: {r}");
    }
    assert_eq!(r["ptrace"]["sibling"], "ok");
    assert_eq!(r["signalParent"], "ok");
    if unsafe { libc::geteuid() } == 0 {
        assert_ne!(r["capEff"], "0000000000000000");
    }
    assert!(r["fds"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str() == w.canary.to_str()));
    assert!(r["env"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str() == Some(host_only)));
}

#[tokio::test]
async fn the_probe_finds_no_way_out_of_the_sandbox_and_every_way_without_it() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let w = world(&root);
    let program = w.home.join(".local/bin/switchboard-probe");
    let probe_cfg = ServerConfig::new(program.to_str().unwrap(), &[]);
    // a variable of the host's that no sandboxed server gets unless granted
    let host_only = std::env::vars()
        .map(|(k, _)| k)
        .find(|k| !ENV_ALLOWED.contains(&k.as_str()) && !k.starts_with("LC_"))
        .expect("the test runs with some variable beyond the allowed ones");
    let boxed = sandboxed(probe_cfg.clone(), SandboxConfig::default());
    let boxed_net = sandboxed(
        probe_cfg.clone(),
        SandboxConfig {
            network: true,
            read: vec![w.home.display().to_string()],
            env: vec![host_only.clone()],
            ..Default::default()
        },
    );
    let mut opts = host_options();
    opts.sandbox_home = Some(w.home.clone());
    opts.app_dirs = [".config", ".local/share", ".cache"]
        .iter()
        .map(|d| w.home.join(d).join(APP))
        .collect();
    // where the app keeps them: inside its own (protected) cache folder
    opts.sandbox_dir = w.home.join(format!(".cache/{APP}/sandbox"));
    let host = McpHost::new(opts);
    let mut config = McpConfig::default();
    for (name, cfg) in [
        ("boxed", boxed),
        ("boxed_net", boxed_net),
        ("open", probe_cfg),
    ] {
        config.servers.insert(name.into(), cfg);
    }
    let sibling = {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("sleep")
            .arg("600")
            .process_group(0)
            .spawn()
            .unwrap();
        Background(child)
    };
    {
        let _fd = Inherited::open(&w.canary);
        host.start_all(&config).await;
    }
    for name in ["boxed", "boxed_net", "open"] {
        let v = view(&host, name);
        assert_eq!(
            v.status,
            switchboard_engine::mcp::ServerStatus::Running,
            "{v:?}"
        );
    }
    let pid = |name: &str| view(&host, name).pid.unwrap();
    let sib = sibling.0.id();

    for name in ["boxed", "boxed_net"] {
        let r = probe(
            &host,
            name,
            &w,
            json!({"sibling": sib, "other": pid("open")}),
            json!({ "sibling": sib }),
        )
        .await;
        let granted = (name == "boxed_net").then_some(host_only.as_str());
        assert_no_way_out(name, &r, &w, granted);
        // all of home granted by name: all but credentials and the app's folders
        let notes = &r["read"][w.home.join("notes/todo.txt").to_str().unwrap()];
        if name == "boxed_net" {
            assert_eq!(notes, "ok");
        } else {
            assert!(refused(notes), "{notes}");
        }
        // the row tells what this kernel enforces, and what it cannot
        let sb = view(&host, name).sandbox.unwrap();
        let missing: Vec<&str> = sb
            .protections
            .iter()
            .filter(|p| !p.enforced)
            .map(|p| p.what)
            .collect();
        assert_eq!(missing.is_empty(), kernel_abi() >= 6, "{name}: {missing:?}");
    }
    // its private cache is where the planted file went
    assert!(w
        .home
        .join(format!(".cache/{APP}/sandbox/boxed/cache/npm/probe"))
        .is_file());

    // the control: the same program, unsandboxed, gets through every way
    let r = probe(
        &host,
        "open",
        &w,
        json!({"sibling": sib, "other": pid("boxed")}),
        json!({ "sibling": sib }),
    )
    .await;
    assert_every_way_open(&r, &w, &host_only);
    assert_eq!(r["session"], "own");
    host.shutdown().await;
}
