//! Real servers from the registries in their sandbox, as a user installs them (issue 41): the
//! PyPI `mcp-server-fetch`, run by uvx with the host's offline fetch, kept off the network and
//! then allowed one host served on loopback; the PyPI `mcp-server-git` with a `~/.gitconfig` in
//! a home of the test's, which fails without the read grant the install proposes and works with
//! it; a SQLite database given as a file (a small Python server), whose journal needs its
//! folder; and a first start that is busy for longer than the start timeout (it starts) or
//! silent (it is given up). Versions are pinned; the PyPI ones need PyPI, as the test servers'
//! own install does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use switchboard_engine::bundle::{Machine, UserDirs};
use switchboard_engine::form::{Field, FieldKind, Given, Target};
use switchboard_engine::mcp::HostOptions;
use switchboard_engine::registry::grants::{self, GrantReason, Picks};
use switchboard_engine::registry::install::{Choices, Host, Origin, Pending};
use switchboard_engine::registry::layout::Layout;
use switchboard_engine::registry::server_json::parse_one;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::support::registry::pypi;

const FETCH: &str = "mcp-server-fetch==2026.10.24";
const GIT: (&str, &str) = ("mcp-server-git", "2026.10.19");

/// The test servers' own uv (`tests/servers/.uv`): its folder, for the app's PATH.
fn uv_dir() -> PathBuf {
    let uvx = repo_dir().join("tests/servers/.uv/bin/uvx");
    assert!(
        uvx.is_file(),
        "{} is missing: run `scripts/install-deps.sh --test` (make test does)",
        uvx.display()
    );
    uvx.parent().unwrap().to_path_buf()
}

/// The PATH of the app (where the host finds uvx and the fetch its uv) and of the server (git
/// in /usr/local/bin here; Python in /usr/bin).
fn app_path() -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", uv_dir().display())
}

async fn start(
    dir: &Path,
    home: Option<&Path>,
    servers: Vec<(&str, ServerConfig)>,
) -> Arc<McpHost> {
    let mut opts: HostOptions = host_options();
    opts.restart_base_delay = Duration::from_secs(30);
    opts.sandbox_dir = dir.join("private");
    opts.path_var = Some(app_path());
    if let Some(h) = home {
        opts.sandbox_home = Some(h.to_path_buf());
    }
    let host = McpHost::new(opts);
    host.start_all(&config(servers)).await;
    host
}

/// An HTTP server on 127.0.0.1 answering every request with `body`; its port.
async fn page(body: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// The PyPI fetch server, its package fetched by the host for a sandbox without network: its
/// call to a page on loopback is refused by the host, which says what it tried; allowed that
/// host and port (the sandbox's `hosts`, what the row's and the card's button saves), the same
/// call gets the page; another port stays closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_fetch_is_kept_off_the_network_then_allowed_one_host() {
    if !landlock() || !supervise::available() {
        eprintln!("skipped: this system cannot supervise a sandbox's network");
        return;
    }
    let (port, other) = (
        page("hello from the allowed page").await,
        page("another page").await,
    );
    let dir = tempfile::tempdir().unwrap();
    let uvx = uv_dir().join("uvx").display().to_string();
    let fetch = |hosts: Vec<String>| {
        let mut c = sandboxed(
            ServerConfig::new(
                uvx.clone(),
                &[FETCH, "--ignore-robots-txt", "--allow-private-ips"],
            ),
            SandboxConfig {
                hosts,
                ..Default::default()
            },
        );
        c.env.insert("PATH".into(), SecretValue::Plain(app_path()));
        c
    };
    let host = start(dir.path(), None, vec![("fetch", fetch(vec![]))]).await;
    let v = view(&host, "fetch");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert!(
        v.stderr_tail
            .join("\n")
            .contains(&format!("fetching {FETCH} for its sandbox")),
        "{:?}",
        v.stderr_tail
    );
    let get = |port: u16| {
        let host = host.clone();
        async move {
            call(
                &host,
                "fetch__fetch",
                json!({"url": format!("http://localhost:{port}/"), "raw": true}),
            )
            .await
        }
    };
    let r = get(port).await;
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text.contains(&format!(
            "kept the server \"fetch\" off the network: it tried 127.0.0.1:{port}"
        )),
        "{}",
        r.text
    );
    let tried: Vec<String> = view(&host, "fetch")
        .sandbox
        .unwrap()
        .attempts
        .into_iter()
        .filter(|a| !a.allowed)
        .map(|a| a.target)
        .collect();
    assert!(tried.contains(&format!("127.0.0.1:{port}")), "{tried:?}");

    // allowed that host and port: started again (from its cache), it gets the page
    host.apply_config(&config(vec![(
        "fetch",
        fetch(vec![format!("localhost:{port}")]),
    )]))
    .await;
    wait_for_status(&host, "fetch", |s| s.status == ServerStatus::Running).await;
    let r = get(port).await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text.contains("hello from the allowed page"), "{}", r.text);
    let r = get(other).await;
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text.contains(&format!("it tried localhost:{other}")),
        "{}",
        r.text
    );
    host.shutdown().await;
}

/// Programs as this test's host has them (uvx on the app's PATH above).
struct TestMachine;

impl Machine for TestMachine {
    fn find(&self, program: &str) -> Option<PathBuf> {
        which::which_in(program, Some(app_path()), "/").ok()
    }
    fn version(&self, _: &Path) -> Option<String> {
        None
    }
}

/// The server the catalog would install from `entry` for a user whose home is `home`, with
/// `choices`: its config, and the grants its preview lists.
fn install(
    entry: Value,
    home: &Path,
    bundles: &Path,
    choices: &Choices,
) -> (ServerConfig, Vec<grants::GrantView>) {
    let listed = parse_one(entry.to_string().as_bytes()).unwrap();
    let layout = Layout::of_package(&listed.server.packages[0]);
    let pending = Pending {
        fields: layout.fields.clone(),
        layout: Some(layout),
        origin: Origin::Registry {
            registry: "https://registry.example".into(),
            listed: Box::new(listed),
            way: 0,
            bundle: None,
        },
        update_of: None,
        completes: false,
        default_name: "git".into(),
        folder_tag: "t".into(),
    };
    let dirs = UserDirs {
        home: Some(home.to_path_buf()),
        desktop: None,
        documents: None,
        downloads: None,
    };
    let host = Host {
        machine: &TestMachine,
        dirs: &dirs,
        bundles,
    };
    let built = pending.build(choices, &host).unwrap();
    (built.config, built.preview.grants)
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// `mcp-server-git` from PyPI for a user with a `~/.gitconfig`: the install proposes reading it
/// (and `~/.config/git`, its credentials left out), listed in the preview; with it, git works in
/// the sandbox. Declined, every git call fails on the unreadable file, and the row offers to
/// allow exactly it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_git_works_with_the_gitconfig_its_install_proposes() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Proposal Test\n\temail = proposal@example.com\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".config/git/credentials"),
        "https://u:pw@example.com\n",
    )
    .unwrap();
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    git(&repo, &["add", "a.txt"]);
    git(
        &repo,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@x",
            "commit",
            "-q",
            "-m",
            "first",
        ],
    );

    let entry = pypi("io.github.modelcontextprotocol/git", GIT.1, GIT.0, GIT.1);
    let choose = |declined: Vec<String>| Choices {
        name: "git".into(),
        write: vec![repo.display().to_string()],
        declined,
        ..Default::default()
    };
    let (mut proposed, grants) =
        install(entry.clone(), &home, &root.join("bundles"), &choose(vec![]));
    let shown: Vec<(&str, bool, &GrantReason)> = grants
        .iter()
        .map(|g| (g.path.as_str(), g.write, &g.why))
        .collect();
    let git_reason = GrantReason::Proposed { tool: "git".into() };
    let (gitconfig, config_git) = (
        home.join(".gitconfig").display().to_string(),
        home.join(".config/git").display().to_string(),
    );
    let repo_s = repo.display().to_string();
    assert_eq!(
        shown,
        [
            (repo_s.as_str(), true, &GrantReason::Written),
            (gitconfig.as_str(), false, &git_reason),
            (config_git.as_str(), false, &git_reason),
        ]
    );
    assert_eq!(proposed.command, "uvx");
    assert_eq!(proposed.args, [format!("{}@{}", GIT.0, GIT.1)]);
    let (mut declined, _) = install(
        entry,
        &home,
        &root.join("bundles"),
        &choose(vec!["~/.gitconfig".into(), "~/.config/git".into()]),
    );
    for c in [&mut proposed, &mut declined] {
        c.disabled = false;
        c.env.insert(
            "HOME".into(),
            SecretValue::Plain(home.display().to_string()),
        );
        c.env.insert("PATH".into(), SecretValue::Plain(app_path()));
    }
    let host = start(
        &root,
        Some(&home),
        vec![("git", proposed), ("nogit", declined)],
    )
    .await;
    for name in ["git", "nogit"] {
        let v = view(&host, name);
        assert_eq!(v.status, ServerStatus::Running, "{name}: {v:?}");
    }
    let r = call(&host, "git__git_status", json!({ "repo_path": repo_s })).await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text.contains("On branch main"), "{}", r.text);
    let r = call(&host, "git__git_log", json!({ "repo_path": repo_s })).await;
    assert!(!r.is_error && r.text.contains("first"), "{r:?}");

    // without the proposal: git cannot read the file, and the row offers exactly it
    let r = call(&host, "nogit__git_status", json!({ "repo_path": repo_s })).await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text.contains(".gitconfig"), "{}", r.text);
    let sb = view(&host, "nogit").sandbox.unwrap();
    assert_eq!(sb.readable.as_deref(), Some(gitconfig.as_str()), "{sb:?}");
    host.shutdown().await;
}

/// A file field of the catalog's form, as an entry's `--db-path` is.
fn db_field() -> Field {
    Field {
        key: "db".into(),
        label: "Database".into(),
        description: None,
        kind: FieldKind::File,
        choices: vec![],
        required: true,
        secret: false,
        multiple: false,
        default: None,
        placeholder: None,
        min: None,
        max: None,
        target: Target::Argument("--db".into()),
    }
}

/// A SQLite database given as a file: in a folder of its own (not made yet) the install grants
/// the folder, and SQLite writes its journal and its WAL files beside it; an existing one among
/// other files is granted alone (and the preview says it needs its folder), and SQLite cannot
/// write its journal there; the folder allowed, it can.
#[tokio::test]
async fn a_sqlite_database_given_as_a_file_gets_the_folder_its_journal_needs() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (own, shared) = (root.join("own"), root.join("shared"));
    std::fs::create_dir_all(&own).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("taxes.pdf"), "yours").unwrap();
    let made = std::process::Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE notes (text TEXT)'); c.commit()"])
        .arg(shared.join("notes.db"))
        .status()
        .unwrap();
    assert!(made.success());
    let grant = |db: &Path, write: &[String]| {
        let given: BTreeMap<String, Given> =
            [("db".to_string(), Given::Text(db.display().to_string()))].into();
        grants::grants(
            &[db_field()],
            &given,
            None,
            Picks {
                write,
                ..Default::default()
            },
            Some(&root),
        )
        .unwrap()
    };
    let server = |db: &Path, wal: bool, write: Vec<String>| {
        let mut args = vec![
            fixture("sqlite_server.py").display().to_string(),
            "--db".into(),
            db.display().to_string(),
        ];
        if wal {
            args.push("--wal".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        sandboxed(
            ServerConfig::new("python3", &args),
            SandboxConfig {
                write,
                // as a catalog server: nothing from its arguments; its script read by name
                read: vec![repo_dir().join("tests/fixtures").display().to_string()],
                only_named: true,
                ..Default::default()
            },
        )
    };
    let paths =
        |g: &grants::Grants| -> Vec<String> { g.list.iter().map(|v| v.path.clone()).collect() };
    // its own folder: granted, for a database not made yet
    let new_db = own.join("notes.db");
    let g = grant(&new_db, &[]);
    assert_eq!(paths(&g), [own.display().to_string()]);
    assert!(g.needs_folder.is_empty());
    let own_server = server(&new_db, true, paths(&g));
    // among other files: the file alone, and the note
    let old_db = shared.join("notes.db");
    let g = grant(&old_db, &[]);
    assert_eq!(paths(&g), [old_db.display().to_string()]);
    assert_eq!(g.needs_folder[0].folder, shared.display().to_string());
    let alone = server(&old_db, false, paths(&g));
    let host = host(&root, vec![("own", own_server), ("alone", alone)], None).await;
    for name in ["own", "alone"] {
        assert_eq!(view(&host, name).status, ServerStatus::Running, "{name}");
    }
    let r = call(&host, "own__add", json!({"text": "milk"})).await;
    assert!(!r.is_error, "{r:?}");
    let r = call(&host, "own__notes", json!({})).await;
    assert_eq!(r.text, "milk");
    assert!(
        new_db.is_file() && own.join("notes.db-wal").exists(),
        "WAL beside it"
    );
    let r = call(&host, "alone__add", json!({"text": "bread"})).await;
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text.contains("unable to open database file") || r.text.contains("readonly database"),
        "{}",
        r.text
    );
    host.shutdown().await;

    // the folder allowed (the preview's offer): its journal is written
    let g = grant(&old_db, &[shared.display().to_string()]);
    assert!(g.needs_folder.is_empty());
    let host = self::host(
        &root,
        vec![("alone", server(&old_db, false, paths(&g)))],
        None,
    )
    .await;
    let r = call(&host, "alone__add", json!({"text": "bread"})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(call(&host, "alone__notes", json!({})).await.text, "bread");
    host.shutdown().await;
}

/// A first start that works for longer than the start timeout (as npx or uvx unpacking a
/// package does) is waited for, and its row says so meanwhile; one that is silent as long is
/// given up. Both sandboxed, as catalog servers run.
#[tokio::test]
async fn a_busy_first_start_is_waited_for_and_a_silent_one_given_up() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let slow = |mode: &str| {
        sandboxed(
            ServerConfig::new(
                "python3",
                &[fixture("slow_start_server.py").to_str().unwrap(), mode, "6"],
            ),
            SandboxConfig::default(),
        )
    };
    let mut opts = host_options();
    opts.sandbox_dir = dir.path().join("private");
    opts.start_timeout = Duration::from_secs(2);
    opts.restart_base_delay = Duration::from_secs(60);
    let host = McpHost::new(opts);
    let started = std::time::Instant::now();
    let config = config(vec![("busy", slow("--busy")), ("silent", slow("--silent"))]);
    let seen_busy = {
        let host = host.clone();
        tokio::spawn(async move {
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_secs(30) {
                if let Some(b) = host
                    .servers()
                    .into_iter()
                    .find(|s| s.name == "busy")
                    .and_then(|s| s.busy)
                {
                    return Some(b);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            None
        })
    };
    host.start_all(&config).await;
    let v = view(&host, "busy");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "it was busy for 6 s"
    );
    let busy = seen_busy.await.unwrap().expect("its row said it was busy");
    assert!(busy.starts_with("starting: "), "{busy}");
    assert_eq!(call(&host, "busy__hello", json!({})).await.text, "hello");
    let v = view(&host, "silent");
    assert_eq!(v.status, ServerStatus::Failed, "{v:?}");
    assert_eq!(v.failed_step, Some(Step::Handshake));
    assert!(
        v.error
            .as_deref()
            .unwrap_or_default()
            .contains("did nothing for 2 s"),
        "{v:?}"
    );
    host.shutdown().await;
}
