//! The probe (`tests/fixtures/probe_server.py`) tries every way out of a sandbox, installed as a
//! new user's uvx or pipx program would be (`~/.local/bin`), in a home with credentials, the
//! app's own folders and shared launcher caches: sandboxed without network and with network
//! and all of home granted, each way is refused; unsandboxed (the control), each is open, so a
//! probe that could not tell would fail here.

use std::collections::BTreeSet;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};

use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::mcp::sandbox::{kernel_abi, processes_counted, ENV_ALLOWED};
use switchboard_engine::mcp::LimitsConfig;
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
    /// Files whose permissions, owner, times and attributes no sandboxed server may change.
    victims: Vec<PathBuf>,
    /// A link in home to a credentials folder (`~/notes/keys → ~/.ssh`), and a file through it.
    linked: PathBuf,
    /// A System V shared memory segment and message queue of another process's, by key.
    ipc: Ipc,
    _listeners: (UnixListener, UnixDatagram, UnixListener),
}

/// A shared memory segment and a message queue the test makes (and removes).
struct Ipc {
    key: i32,
    shm: i32,
    msg: i32,
}

impl Ipc {
    fn make() -> Ipc {
        // a key of this run's own (ftok-like, from the pid and the time)
        let key = (std::process::id() as i32 ^ rand_suffix() as i32) & 0x3fff_ffff | 1;
        let shm = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) };
        let msg = unsafe { libc::msgget(key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) };
        assert!(shm >= 0 && msg >= 0, "System V IPC for the test");
        Ipc { key, shm, msg }
    }
}

impl Drop for Ipc {
    fn drop(&mut self) {
        unsafe {
            libc::shmctl(self.shm, libc::IPC_RMID, std::ptr::null_mut());
            libc::msgctl(self.msg, libc::IPC_RMID, std::ptr::null_mut());
        }
    }
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
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("notes/keys")).unwrap();
    for v in [".ssh/id_rsa", "notes/todo.txt"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(home.join(v), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    World {
        victims: vec![home.join(".ssh/id_rsa"), home.join("notes/todo.txt")],
        linked: home.join("notes/keys/id_rsa"),
        ipc: Ipc::make(),
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
            "metaPaths": w.victims,
            "shmKey": w.ipc.key,
            "linkedRead": [w.linked],
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
    // a raw Unix pair is a datagram one: refused like it
    assert!(
        refused(&r["rawPair"][w.log.to_str().unwrap()]),
        "{server}: {r}"
    );
    // runtimes keep their socketpairs
    assert_eq!(r["streamPair"], "ok", "{server}");
    assert_eq!(r["ioUring"], "EPERM", "{server}");
    let network = granted.is_some();
    // without the network, TCP sockets where the host takes their connect (and refuses it)
    let tcp = network || switchboard_engine::mcp::sandbox::supervise::available();
    for (family, on) in [
        ("inet", tcp),
        ("inet6", tcp),
        ("netlink", network),
        ("unix", network && kernel_abi() >= 9),
        ("packet", false),
        ("key", false),
        ("alg", false),
        ("vsock", false),
        ("xdp", false),
        ("tipc", false),
        ("can", false),
        ("bluetooth", false),
    ] {
        let want = if on { "ok" } else { "EPERM" };
        assert_eq!(r["families"][family], want, "{server} socket {family}: {r}");
    }
    for v in &w.victims {
        let m = &r["meta"][v.to_str().unwrap()];
        for way in [
            "chmod",
            "chown",
            "utime",
            "xattr",
            "chmodViaOPath",
            "fchmodat2EmptyPath",
            "fchmodOfReadOnly",
        ] {
            assert!(refused(&m[way]), "{server} {way} {}: {m}", v.display());
        }
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(v).unwrap();
        assert_eq!(
            meta.mode() & 0o7777,
            0o600,
            "{server} changed {}",
            v.display()
        );
        assert_ne!(meta.mtime(), 1, "{server} changed {}", v.display());
    }
    // its own files' metadata it changes (the host does it for it)
    assert_eq!(r["ownMeta"], "ok", "{server}");
    for route in [
        "keyring",
        "addKey",
        "sysvShm",
        "sysvMsg",
        "userNamespace",
        "ownListener",
        "renicePgrp",
    ] {
        assert_eq!(r[route], "EPERM", "{server} {route}: {r}");
    }
    for v in &w.victims {
        assert!(
            refused(&r["fsFlags"][v.to_str().unwrap()]),
            "{server} set the flags of {}: {r}",
            v.display()
        );
    }
    // the system's secrets, even for a server run by root
    assert!(refused(&r["shadow"]), "{server} read /etc/shadow: {r}");
    assert!(
        refused(&r["linkedRead"][w.linked.to_str().unwrap()]),
        "{server} read through a link: {r}"
    );
    assert_eq!(r["devTty"], "EACCES", "{server}");
    assert_eq!(r["tiocsti"], "EPERM", "{server}");
    assert_eq!(r["tioclinux"], "EPERM", "{server}");
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
                // without network, the launchers work from their caches, and name lookups go
                // over TCP to the host's DNS stub
                "npm_config_offline",
                "UV_OFFLINE",
                "RES_OPTIONS",
            ]
            .contains(name)
            // with the network, the certificates the host's TLS clients are told to trust
            || (network && switchboard_engine::mcp::sandbox::is_cert_setting(name))
            || Some(*name) == granted;
        assert!(ours, "{server} got {name} from the host: {env:?}");
    }
    if let Some(g) = granted {
        assert!(env.contains(g), "{server} was granted {g}: {env:?}");
    }
}

fn assert_every_way_open(r: &Value, w: &World, host_only: &str) {
    assert_eq!(r["rawPair"][w.log.to_str().unwrap()], "ok", "{r}");
    assert_eq!(r["ioUring"], "ok", "{r}");
    for family in ["inet", "inet6", "netlink", "unix"] {
        assert_eq!(r["families"][family], "ok", "{family}: {r}");
    }
    for v in &w.victims {
        let m = &r["meta"][v.to_str().unwrap()];
        for way in [
            "chmod",
            "chown",
            "utime",
            "chmodViaOPath",
            "fchmodat2EmptyPath",
            "fchmodOfReadOnly",
        ] {
            assert_eq!(m[way], "ok", "{way} {}: {m}", v.display());
        }
        // a file system without user attributes says so; never a refusal
        assert!(!refused(&m["xattr"]), "{m}");
    }
    assert_eq!(r["ownMeta"], "ok");
    for route in [
        "keyring",
        "addKey",
        "sysvShm",
        "sysvMsg",
        "ownListener",
        "renicePgrp",
    ] {
        assert_eq!(r[route], "ok", "{route}: {r}");
    }
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(r["shadow"], "ok", "{r}");
    }
    assert_eq!(r["linkedRead"][w.linked.to_str().unwrap()], "ok");
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
            // root's processes are not counted by the kernel: said, and tested on its own
            .filter(|p| processes_counted() || !p.what.contains("fork bomb"))
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

/// The probe's answer to `ask` from `server`.
async fn run_with(host: &McpHost, server: &str, ask: Value) -> Value {
    let r = call(host, &format!("{server}__probe"), ask).await;
    assert!(!r.is_error, "{server}: {r:?}");
    serde_json::from_str(&r.text).unwrap()
}

/// Whether process `pid` is still there (not ended, not a zombie waiting to be reaped).
fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let state = s.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(!matches!(state, 'Z' | 'X'))
        })
        .unwrap_or(false)
}

/// A line of `/proc/PID/limits` (`Max open files`): its soft limit.
fn limit(pid: u32, name: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text.lines().find(|l| l.starts_with(name)).unwrap();
    line[name.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_sandboxed_server_is_held_to_its_limits_and_nothing_it_starts_outlives_it() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let probe_cfg = python("probe_server.py");
    let limited = sandboxed(
        probe_cfg.clone(),
        SandboxConfig {
            limits: Some(LimitsConfig {
                processes: Some(32),
                memory_mb: Some(256),
                open_files: Some(64),
            }),
            ..Default::default()
        },
    );
    let mut opts = host_options();
    opts.sandbox_dir = dir.path().join("private");
    let host = McpHost::new(opts);
    let mut config = McpConfig::default();
    config.servers.insert("limited".into(), limited);
    config.servers.insert(
        "victim".into(),
        sandboxed(probe_cfg.clone(), SandboxConfig::default()),
    );
    config.servers.insert("open".into(), probe_cfg);
    host.start_all(&config).await;
    let pid = |name: &str| view(&host, name).pid.unwrap();
    let ask = json!({"limits": {"allocMb": 512, "forks": 200}, "detach": true});
    let run = |name: &'static str| {
        let host = &host;
        let ask = ask.clone();
        async move {
            let r = call(host, &format!("{name}__probe"), ask).await;
            assert!(!r.is_error, "{name}: {r:?}");
            serde_json::from_str::<Value>(&r.text).unwrap()
        }
    };
    let boxed = run("limited").await;
    let open = run("open").await;

    // its limits, as the kernel holds them
    let p = pid("limited");
    assert_eq!(limit(p, "Max open files"), "64");
    assert_eq!(limit(p, "Max data size"), (256u64 << 20).to_string());
    assert_eq!(limit(p, "Max core file size"), "0");
    assert!(boxed["openFiles"].as_u64().unwrap() < 64, "{boxed}");
    assert!(open["openFiles"].as_u64().unwrap() > 64, "{open}");
    assert_eq!(boxed["bigAlloc"], "ENOMEM", "{boxed}");
    assert_eq!(open["bigAlloc"], "ok", "{open}");
    assert_eq!(open["forks"], 200, "{open}");
    if processes_counted() {
        // the user's other threads when it started, plus its 32
        assert!(boxed["forks"].as_u64().unwrap() < 200, "{boxed}");
    } else {
        // root: the kernel does not count its processes, and the row says so
        let sb = view(&host, "limited").sandbox.unwrap();
        assert!(sb
            .protections
            .iter()
            .any(|p| p.what.contains("fork bomb") && !p.enforced));
    }

    // a group it tried and failed to join (another server's) is not taken for its own: ending
    // it leaves the other server alone
    let victim = pid("victim");
    let r = run_with(&host, "limited", json!({ "joinGroup": victim })).await;
    assert_eq!(r["joinGroup"], "EPERM", "{r}");
    assert!(host.restart("limited").await);
    assert!(
        alive(victim as u64),
        "another server's group was ended with this one"
    );
    // a child left behind by a server that ends by itself ends with it
    let r = run_with(&host, "limited", json!({ "leaveChild": true })).await;
    let left = r["leftChild"].as_u64().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || !alive(left)).await,
        "the child of a server that ended outlived it"
    );
    wait_for_status(&host, "limited", |s| {
        s.status == switchboard_engine::mcp::ServerStatus::Running
    })
    .await;

    // a grandchild in a session of its own: ended with its sandboxed server, not without one
    // (the one of the first run ended with the restarts above)
    let boxed = run_with(&host, "limited", json!({"detach": true})).await;
    let (boxed_child, open_child) = (
        boxed["detached"].as_u64().unwrap(),
        open["detached"].as_u64().unwrap(),
    );
    assert!(alive(boxed_child) && alive(open_child));
    host.shutdown().await;
    let gone = wait_until(Duration::from_secs(10), || !alive(boxed_child)).await;
    let left = alive(open_child);
    unsafe { libc::kill(open_child as i32, libc::SIGKILL) };
    assert!(
        gone,
        "the sandboxed server's detached grandchild outlived it"
    );
    assert!(left, "the control: unsandboxed, it outlives its server");
}
