//! Spawning a stdio server in its own process group, capturing the tail of its stderr, and
//! ending it (and everything it started) for sure.
//!
//! A server starts in a session of its own (its own process group, no controlling terminal); a
//! sandboxed one with only the allowed environment. The login shell's PATH is looked up here too.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::config::{ServerConfig, SELF_COMMAND};
use super::sandbox::{Groups, Sandboxed, BLOCKED_NOTE};

pub const STDERR_LINES: usize = 200;
const STDERR_LINE_MAX: usize = 2000;

/// The last lines a server wrote to stderr (and the host's notes about it), newest last.
#[derive(Clone, Default)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Told about every new line.
    changed: Option<tokio::sync::broadcast::Sender<()>>,
}

impl StderrTail {
    /// A log that says on `changed` whenever a line is added.
    pub fn watched(changed: tokio::sync::broadcast::Sender<()>) -> Self {
        StderrTail {
            lines: Default::default(),
            changed: Some(changed),
        }
    }

    pub fn push(&self, line: String) {
        self.push_line(line);
        if let Some(tx) = &self.changed {
            let _ = tx.send(());
        }
    }

    fn push_line(&self, line: String) {
        let mut q = self.lines.lock().unwrap();
        if q.len() == STDERR_LINES {
            q.pop_front();
        }
        let line = if line.len() > STDERR_LINE_MAX {
            let mut end = STDERR_LINE_MAX;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &line[..end])
        } else {
            line
        };
        q.push_back(line);
    }
    /// The newest line that starts with `prefix`, without it.
    pub fn newest_with(&self, prefix: &str) -> Option<String> {
        let q = self.lines.lock().unwrap();
        q.iter()
            .rev()
            .find_map(|l| l.strip_prefix(prefix).map(String::from))
    }

    pub fn last(&self, n: usize) -> Vec<String> {
        let q = self.lines.lock().unwrap();
        q.iter().skip(q.len().saturating_sub(n)).cloned().collect()
    }
}

pub struct Spawned {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub pid: Option<u32>,
    /// Becomes `Some(description)` once the process has exited.
    pub exit: watch::Receiver<Option<String>>,
}

/// The built-in servers' own small binary (`src-tauri/engine/src/bin/switchboard-mcp.rs`).
pub const LIGHT_BINARY: &str = "switchboard-mcp";

/// Finds the program: the built-in command means this binary; a bare name is looked up on PATH.
pub fn resolve_command(
    cfg: &ServerConfig,
    self_exe: &Path,
    path_var: Option<&str>,
) -> Result<PathBuf, String> {
    if cfg.command == SELF_COMMAND {
        // the built-in servers start faster from the small binary next to the app, when it is there
        let light = self_exe.with_file_name(LIGHT_BINARY);
        if cfg.args.first().map(String::as_str) == Some("mcp-server") && light.is_file() {
            return Ok(light);
        }
        return Ok(self_exe.to_path_buf());
    }
    let p = Path::new(&cfg.command);
    if p.components().count() > 1 {
        return if p.exists() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("{} does not exist", p.display()))
        };
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let found = match path_var {
        Some(pv) => which::which_in(&cfg.command, Some(pv), cwd),
        None => which::which(&cfg.command),
    };
    found.map_err(|_| {
        format!(
            "\"{}\" was not found on PATH.{}",
            cfg.command,
            install_hint(&cfg.command)
        )
    })
}

/// What to install when a well-known launcher is missing.
pub fn install_hint(command: &str) -> &'static str {
    match command {
        "npx" | "node" | "npm" => {
            " Install Node.js (it provides node and npx), then restart this server."
        }
        "uvx" | "uv" => " Install uv (for example: pip install uv), then restart this server.",
        "python" | "python3" | "pip" => " Install Python 3, then restart this server.",
        "docker" => " Install Docker and start it, then restart this server.",
        "deno" => " Install Deno, then restart this server.",
        "bun" | "bunx" => " Install Bun, then restart this server.",
        _ => " Check the command, or give its full path.",
    }
}

/// The PATH of the user's login shell: apps started from a desktop do not inherit the one the
/// shell builds, which is why npx/uvx servers fail in other hosts. Bounded by `timeout`; `None`
/// when the shell cannot tell.
pub fn login_shell_path(shell: &str, timeout: Duration) -> Option<String> {
    let mut child = std::process::Command::new(shell)
        // interactive too: many setups (nvm, pyenv) extend PATH only in .bashrc/.zshrc
        .args([
            "-i",
            "-l",
            "-c",
            "printf '__SWITCHBOARD_PATH__%s__END__' \"$PATH\"",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut()?, &mut out).ok()?;
    // whatever the shell's startup files printed is around the markers
    let start = out.find("__SWITCHBOARD_PATH__")? + "__SWITCHBOARD_PATH__".len();
    let end = out[start..].find("__END__")? + start;
    let path = out[start..end].trim().to_string();
    (!path.is_empty() && path.contains('/')).then_some(path)
}

/// The PATH servers run with, as the window has it: the login shell's (`shell`, at most
/// `timeout`) first, then the `inherited` entries it lacks; the inherited one alone when the
/// shell cannot tell.
pub fn app_path(shell: &str, inherited: &str, timeout: Duration) -> String {
    let login = login_shell_path(shell, timeout);
    if login.is_none() {
        tracing::info!("the login shell did not tell its PATH; using the inherited one");
    }
    merge_paths(login.as_deref(), inherited)
}

/// The login shell's entries first, then any inherited ones it lacks.
pub fn merge_paths(login: Option<&str>, inherited: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for p in login
        .unwrap_or_default()
        .split(':')
        .chain(inherited.split(':'))
    {
        if !p.is_empty() && !out.contains(&p) {
            out.push(p);
        }
    }
    out.join(":")
}

/// Starts the server with `env` (its configured environment, secrets read) over the inherited
/// one — or over `base_env` alone when given (a container's docker command), or, sandboxed,
/// over only what [`super::sandbox::environment`] lets through; in its
/// sandbox when `sandbox` is given (then what it writes to stderr is also read for the
/// sandbox's refusals, each told once in the log as `blocked by sandbox`). Every server starts
/// its own session: its own process group (ending it ends whatever it started) and no
/// controlling terminal.
pub fn spawn(
    cfg: &ServerConfig,
    env: &std::collections::BTreeMap<String, String>,
    program: PathBuf,
    path_var: Option<&str>,
    log: StderrTail,
    sandbox: Option<&Sandboxed>,
    base_env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
) -> std::io::Result<Spawned> {
    let mut cmd = Command::new(&program);
    if let Some(base) = base_env {
        // only this of the app's environment (a container's docker command)
        cmd.env_clear().envs(base);
    }
    if let Some(sb) = sandbox {
        let granted = super::sandbox::wanted(cfg)
            .map(|w| w.config.env)
            .unwrap_or_default();
        cmd.env_clear().envs(super::sandbox::environment(
            std::env::vars_os(),
            &granted,
            cfg.builtin().is_some(),
            sb.policy.network,
            sb.policy.reaches_any(sb.supervised),
            &sb.private,
        ));
    }
    if let Some(p) = path_var {
        // the server's own children (npx → node) are found on the same PATH; its env may override
        cmd.env("PATH", p);
    }
    if let Some(sb) = sandbox.filter(|sb| sb.supervised && !sb.policy.network) {
        // its name lookups over TCP, which the host takes to its DNS stub
        // (`sandbox/network.rs`): the C library's resolver reads this
        let _ = sb;
        cmd.env("RES_OPTIONS", "use-vc");
    }
    // a built-in is told its own folder, the one its sandbox grants
    let args = match cfg.builtin() {
        Some(name) => crate::servers::with_own_folder(name, &cfg.args),
        None => cfg.args.clone(),
    };
    cmd.args(&args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &cfg.cwd {
        cmd.current_dir(cwd);
    }
    #[cfg(unix)]
    unsafe {
        cmd.pre_exec(|| {
            // its own session: a process group of its own, and no controlling terminal
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // if Switchboard itself dies without cleaning up, the kernel ends the server
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    // after the above, so the sandbox is the last thing before exec
    if let Some(sb) = sandbox {
        sb.prepared.install(&mut cmd);
    }
    // `sandbox` (its ruleset fd) outlives this call, which forks and execs
    let mut child: Child = cmd.spawn()?;
    let pid = child.id();
    if let Some(sb) = sandbox {
        supervise(sb, &mut child, pid, &log)?;
    }
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let tail = log;
    {
        let tail = tail.clone();
        let detector = sandbox.map(|s| s.detector.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut last_blocked = None;
            while let Ok(Some(line)) = lines.next_line().await {
                let blocked = detector.as_ref().and_then(|d| d.blocked(&line));
                tail.push(line);
                if let Some(what) = blocked.filter(|w| last_blocked.as_ref() != Some(w)) {
                    tail.push(format!("{BLOCKED_NOTE}{what}"));
                    last_blocked = Some(what);
                }
            }
        });
    }
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let desc = match child.wait().await {
            Ok(status) => describe_status(status),
            Err(e) => format!("could not wait for the process: {e}"),
        };
        let _ = tx.send(Some(desc));
    });
    Ok(Spawned {
        stdin,
        stdout,
        pid,
        exit: rx,
    })
}

/// Starts the host's part of a sandbox (`sandbox/supervise.rs`) for the process just started,
/// when it is supervised: the calls its filter hands over are answered, what it refuses is told in
/// `log`, and the process groups it makes are ended with it ([`terminate`]). A listener that did
/// not arrive ends the process: it must not run half supervised.
fn supervise(
    sb: &Sandboxed,
    child: &mut Child,
    pid: Option<u32>,
    log: &StderrTail,
) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let listener = match sb.prepared.listener() {
            None => return Ok(()),
            Some(Ok(l)) => l,
            Some(Err(e)) => {
                let _ = child.start_kill();
                return Err(std::io::Error::other(format!(
                    "cannot supervise its sandbox: {e}"
                )));
            }
        };
        let devices: Vec<PathBuf> = super::sandbox::DEVICES.iter().map(PathBuf::from).collect();
        let log = log.clone();
        let network = if sb.policy.network {
            None
        } else {
            let net =
                super::sandbox::network::Network::start(sb.policy.reach(), sb.attempts.clone());
            match net {
                Ok(n) => Some(n),
                Err(e) => {
                    let _ = child.start_kill();
                    return Err(std::io::Error::other(format!(
                        "cannot start its sandbox's network: {e}"
                    )));
                }
            }
        };
        super::sandbox::supervise::Supervisor {
            listener,
            network,
            write: sb
                .policy
                .write
                .iter()
                .filter(|w| !devices.contains(w))
                .cloned()
                .collect(),
            groups: sb.groups.clone(),
            report: Box::new(move |what| log.push(format!("{BLOCKED_NOTE}{what}"))),
            connecting: Default::default(),
        }
        .start();
        if let Some(pid) = pid {
            TRACKED.lock().unwrap().insert(pid, sb.groups.clone());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (sb, child, pid, log);
    Ok(())
}

/// The process groups each supervised server's processes made, by the server's pid, for
/// [`terminate`].
static TRACKED: std::sync::LazyLock<Mutex<std::collections::BTreeMap<u32, Groups>>> =
    std::sync::LazyLock::new(Default::default);

fn describe_status(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                libc::SIGKILL => "SIGKILL",
                libc::SIGTERM => "SIGTERM",
                libc::SIGSEGV => "SIGSEGV",
                libc::SIGABRT => "SIGABRT",
                libc::SIGINT => "SIGINT",
                libc::SIGPIPE => "SIGPIPE",
                _ => "",
            };
            return format!("killed by signal {sig} {name}")
                .trim_end()
                .to_string();
        }
    }
    match status.code() {
        Some(c) => format!("exited with code {c}"),
        None => "exited".to_string(),
    }
}

/// Ends the process group, and the groups a sandboxed server's processes made (a grandchild
/// that called `setsid()` too): SIGTERM, then SIGKILL if it is still there after `grace`.
pub async fn terminate(
    pid: Option<u32>,
    exit: &mut watch::Receiver<Option<String>>,
    grace: Duration,
) {
    let Some(pid) = pid else { return };
    if exit.borrow().is_some() {
        // the leader is gone; still make sure nothing it started lingers
        signal_group(pid, libc::SIGKILL);
        TRACKED.lock().unwrap().remove(&pid);
        return;
    }
    signal_group(pid, libc::SIGTERM);
    let exited = tokio::time::timeout(grace, exit.wait_for(|e| e.is_some()))
        .await
        .is_ok();
    // SIGKILL the group either way: children that ignored SIGTERM or outlived the leader
    signal_group(pid, libc::SIGKILL);
    TRACKED.lock().unwrap().remove(&pid);
    if !exited {
        let _ = tokio::time::timeout(Duration::from_secs(2), exit.wait_for(|e| e.is_some())).await;
    }
}

fn signal_group(pid: u32, sig: i32) {
    #[cfg(unix)]
    unsafe {
        libc::kill(-(pid as i32), sig);
    }
    #[cfg(target_os = "linux")]
    if let Some(groups) = TRACKED.lock().unwrap().get(&pid) {
        super::sandbox::supervise::kill_groups(groups, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_servers_prefer_the_small_binary_next_to_the_app() {
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("switchboard");
        std::fs::write(&app, "").unwrap();
        let builtin = ServerConfig::new(SELF_COMMAND, &["mcp-server", "calculator"]);
        // without it: the app binary itself
        assert_eq!(resolve_command(&builtin, &app, None).unwrap(), app);
        std::fs::write(dir.path().join(LIGHT_BINARY), "").unwrap();
        assert_eq!(
            resolve_command(&builtin, &app, None).unwrap(),
            dir.path().join(LIGHT_BINARY)
        );
        // other uses of the app binary stay with it
        let other = ServerConfig::new(SELF_COMMAND, &["chat", "x"]);
        assert_eq!(resolve_command(&other, &app, None).unwrap(), app);
    }

    #[test]
    fn login_shell_path_is_read_and_bounded() {
        let p = login_shell_path("/bin/sh", Duration::from_secs(5)).expect("sh tells its PATH");
        assert!(p.contains("/bin"), "{p}");
        assert_eq!(
            login_shell_path("/definitely/not/a/shell", Duration::from_secs(1)),
            None
        );
        assert_eq!(merge_paths(Some("/a:/b"), "/b:/c::"), "/a:/b:/c");
        assert_eq!(merge_paths(None, "/b:/c"), "/b:/c");
        // a login shell that adds a folder (as ~/.profile does for ~/.local/bin)
        let dir = tempfile::tempdir().unwrap();
        let shell = dir.path().join("shell");
        std::fs::write(
            &shell,
            "#!/bin/sh\nexport PATH=\"/from/profile:$PATH\"\nexec /bin/sh -c \"$4\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&shell, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let p = app_path(
            shell.to_str().unwrap(),
            "/inherited",
            Duration::from_secs(5),
        );
        assert!(p.starts_with("/from/profile:"), "{p}");
        assert!(p.ends_with(":/inherited"), "{p}");
        assert_eq!(
            app_path(
                "/definitely/not/a/shell",
                "/inherited",
                Duration::from_secs(1)
            ),
            "/inherited"
        );
    }

    #[test]
    fn a_missing_launcher_says_what_to_install() {
        let cfg = ServerConfig::new("npx", &[]);
        let e = resolve_command(&cfg, Path::new("/x"), Some("/nonexistent")).unwrap_err();
        assert!(
            e.contains("\"npx\" was not found on PATH. Install Node.js"),
            "{e}"
        );
    }
}
