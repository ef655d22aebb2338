//! Running a stdio server in a kernel sandbox. On Linux: Landlock (which files and folders it may
//! read, run or write; TCP bind/connect by port; signals and abstract Unix sockets kept inside),
//! and, for "no network", a seccomp filter that refuses every socket but a Unix one (Landlock up
//! to ABI 9 cannot refuse UDP, so DNS would still get out).
//!
//! Everything that allocates is done in the parent: the paths are resolved, the ruleset is made
//! (its fd kept open), the seccomp program compiled. Between fork and exec the child makes only
//! three system calls ([`Prepared::install`]), so the exec'd server and everything it starts are
//! confined, and the host itself never is.
//!
//! What it may touch ([`Policy`]): the system's read-only folders (`/usr`, `/etc`, …, see
//! [`SYSTEM_READ`]), a few device files, its own program's folder and its script's package, the
//! PATH's folders and version managers under home (read only), its launcher's cache (`~/.npm`
//! for npx, …), a private folder of its own (its `TMPDIR`), and the folders of its config. The
//! built-in `files` and `research` servers also write in their own folders.
//!
//! **Invariant:** a server whose config asks for a sandbox never runs without one, unless the
//! kernel cannot sandbox and the user agreed (`allowUnsandboxed`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::config::{SandboxConfig, SandboxSetting, ServerConfig, Transport};

/// The oldest Landlock ABI the sandbox runs on. ABI 1 already confines files; what later ABIs
/// add is either covered by the seccomp filter (TCP from ABI 4: every non-Unix socket is refused
/// when the network is off; `truncate` by path from ABI 3: refused outright below it) or a
/// hardening that is used where the kernel has it (device ioctls from 5, signal and abstract
/// socket scoping from 6). [`kernel_abi`] is shown with each sandboxed server.
pub const MIN_ABI: i32 = 1;

/// Read-only (and executable) for every sandboxed server: programs, libraries, the system's
/// configuration (ld.so.cache, certificates, resolv.conf, time zones, locale aliases: symlinks
/// under `/usr/share` point into `/etc`), `/proc` (`/proc/self`; other processes' memory and
/// environment stay out of reach: Landlock treats them as ptrace), CPU and cgroup facts that Node
/// and Python read. Missing ones are skipped.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/etc",
    "/nix/store",
    "/proc",
    "/sys/fs/cgroup",
    "/sys/devices/system/cpu",
];

/// Device files a program expects to open for reading and writing.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Version managers and user-wide tools under home, read only: `npx` and `uvx` servers run
/// from them.
const HOME_TOOLS: &[&str] = &[
    ".nvm",
    ".volta",
    ".fnm",
    ".local/share/fnm",
    ".pyenv",
    ".rye",
    ".asdf",
    ".local/share/mise",
    ".local/share/uv",
    ".local/share/pipx",
    ".cargo/bin",
    ".deno",
    ".bun",
    ".local/bin",
    ".local/lib",
    ".npmrc",
    ".config/uv",
];

/// The Landlock ABI of this kernel: 0 when it has none (not built in, or disabled at boot).
pub fn kernel_abi() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // LANDLOCK_CREATE_RULESET_VERSION: no ruleset, just the version (the crate keeps this private)
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                1u32,
            )
        };
        if v < 0 {
            0
        } else {
            v as i32
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// Whether the built-in servers are sandboxed when their config names no sandbox: where the
/// sandbox exists (Linux).
const BUILTINS_SANDBOXED: bool = cfg!(target_os = "linux");

/// The sandbox a server's config asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub config: SandboxConfig,
    /// The host's default for a built-in server (its config names no sandbox).
    pub default: bool,
    /// Folders it writes in because they are its own: the built-in `files` server's folder, the
    /// `research` server's paper store.
    pub own: Vec<PathBuf>,
}

/// The sandbox `cfg` asks for: its own, or the built-ins' default (no folders; no network but
/// for `research`) when
/// it names none; `None` for servers that run unsandboxed (and every remote server).
pub fn wanted(cfg: &ServerConfig) -> Option<Wanted> {
    if cfg.transport() != Transport::Stdio {
        return None;
    }
    let own = cfg
        .builtin()
        .map(|b| crate::servers::own_folders(b, &cfg.args))
        .unwrap_or_default();
    match &cfg.sandbox {
        Some(SandboxSetting::Off) => None,
        Some(SandboxSetting::On(c)) => Some(Wanted {
            config: c.clone(),
            default: false,
            own,
        }),
        None if BUILTINS_SANDBOXED && cfg.builtin().is_some() => Some(Wanted {
            config: crate::servers::default_sandbox(cfg.builtin().unwrap_or_default()),
            default: true,
            own,
        }),
        None => None,
    }
}

/// What happens to a server that asks for a sandbox, on a kernel with Landlock ABI `abi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SandboxState {
    /// It runs sandboxed.
    On,
    /// The kernel cannot sandbox: it is not started until the user agrees to run it without.
    Unsupported,
    /// The kernel cannot sandbox and the user agreed: it runs without.
    Waived,
}

pub fn decide(wanted: &Wanted, abi: i32) -> SandboxState {
    if abi >= MIN_ABI {
        SandboxState::On
    } else if wanted.config.allow_unsandboxed {
        SandboxState::Waived
    } else {
        SandboxState::Unsupported
    }
}

/// Why a server that asks for a sandbox was not started.
pub fn unsupported_reason() -> String {
    "this system's kernel has no Landlock (the Linux sandbox Switchboard uses), so this server, \
     which is set to run in a sandbox, was not started. Run it without the sandbox if you trust it."
        .to_string()
}

/// Where a server lives and runs, for its [`Policy`].
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// The program as resolved (perhaps a symlink: `.venv/bin/python`, `npx`).
    pub program: PathBuf,
    /// The command as configured (`npx`, `uvx`, a path): picks the launcher's cache.
    pub command: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// The PATH it runs with.
    pub path_var: Option<String>,
    pub home: Option<PathBuf>,
    /// The user's cache folder (`~/.cache`).
    pub cache: Option<PathBuf>,
    /// Its private folder (made before the policy is built); `tmp/` inside is its `TMPDIR`.
    pub private: PathBuf,
}

/// Every path a sandboxed server may reach, resolved (Landlock rules apply to the inode a path
/// leads to, so symlinks are followed here and the real places are listed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// Read and execute.
    pub read: Vec<PathBuf>,
    /// Read, write, create, delete (files: read, write, truncate).
    pub write: Vec<PathBuf>,
    pub network: bool,
    /// Its `TMPDIR`.
    pub tmp: PathBuf,
    /// Configured folders that do not exist, left out.
    pub missing: Vec<String>,
}

/// `~/x` → home/x.
fn expand(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix('~'), home) {
        (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
            h.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(p),
    }
}

/// Whether granting `dir` wholesale would be too much for a guess: `/`, home, or a folder above
/// home.
fn too_broad(dir: &Path, home: Option<&Path>) -> bool {
    dir.parent().is_none() || home.is_some_and(|h| h.starts_with(dir))
}

/// The folder to grant for a program at `p`: its folder's parent (`/usr` for `/usr/bin/node`,
/// the venv for `.venv/bin/python`, the version for `~/.nvm/versions/node/v20/bin/node`), or
/// its own folder when that would be too broad.
fn program_dir(p: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let dir = p.parent()?;
    match dir.parent() {
        Some(up) if !too_broad(up, home) => Some(up.to_path_buf()),
        _ => (!too_broad(dir, home)).then(|| dir.to_path_buf()),
    }
}

/// The folder to grant for a script the program is given (`node …/dist/index.js`,
/// `python3 server.py`): the outermost `node_modules` it is in (its package and the packages it
/// imports), else the nearest folder above it that looks like a project (package.json,
/// pyproject.toml, …), else its own folder. A folder given as an argument is data, never granted.
fn script_dir(p: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(nm) = p
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
    {
        return Some(nm.to_path_buf());
    }
    const MARKERS: [&str; 5] = [
        "package.json",
        "pyproject.toml",
        "setup.py",
        "requirements.txt",
        "Cargo.toml",
    ];
    let dir = p.parent()?;
    let project = dir
        .ancestors()
        .take(4)
        .take_while(|a| !too_broad(a, home))
        .find(|a| MARKERS.iter().any(|m| a.join(m).exists()));
    match project {
        Some(d) => Some(d.to_path_buf()),
        None => (!too_broad(dir, home)).then(|| dir.to_path_buf()),
    }
}

/// What a launcher writes to: its download cache (npx runs packages from `~/.npm/_npx`, uvx
/// from `~/.cache/uv`).
fn launcher_caches(command: &str, home: Option<&Path>, cache: Option<&Path>) -> Vec<PathBuf> {
    let name = Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let h = |p: &str| home.map(|h| h.join(p));
    let c = |p: &str| cache.map(|c| c.join(p));
    let all = match name {
        "npx" | "npm" => vec![h(".npm")],
        "pnpm" | "pnpx" => vec![h(".npm"), c("pnpm"), h(".local/share/pnpm")],
        "yarn" => vec![h(".npm"), c("yarn")],
        "uvx" | "uv" => vec![c("uv"), h(".local/share/uv")],
        "pipx" => vec![c("pip"), h(".local/share/pipx")],
        "bunx" | "bun" => vec![h(".bun/install/cache")],
        "deno" => vec![c("deno")],
        _ => vec![],
    };
    all.into_iter().flatten().collect()
}

/// Adds `p` resolved, if it exists and is not there yet.
fn add(list: &mut Vec<PathBuf>, p: &Path) -> bool {
    match p.canonicalize() {
        Ok(real) => {
            if !list.contains(&real) {
                list.push(real);
            }
            true
        }
        Err(_) => false,
    }
}

/// The places `wanted` lets a server at `places` reach.
pub fn policy(wanted: &Wanted, places: &Places) -> Policy {
    let home = places.home.as_deref();
    let mut read = Vec::new();
    let mut write = Vec::new();
    let mut missing = Vec::new();
    for p in SYSTEM_READ {
        add(&mut read, Path::new(p));
    }
    for p in DEVICES {
        add(&mut write, Path::new(p));
    }
    // the program, as given and resolved (a venv's python is a symlink to the interpreter)
    let real_program = places.program.canonicalize().ok();
    for p in std::iter::once(&places.program).chain(real_program.as_ref()) {
        if let Some(d) = program_dir(p, home) {
            add(&mut read, &d);
        }
    }
    for a in &places.args {
        let p = Path::new(a);
        if p.is_absolute() && p.is_file() {
            let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            if let Some(d) = script_dir(&real, home) {
                add(&mut read, &d);
            }
        }
    }
    if let Some(cwd) = &places.cwd {
        add(&mut read, cwd);
    }
    for entry in places.path_var.as_deref().unwrap_or_default().split(':') {
        let p = Path::new(entry);
        if p.is_absolute() && !too_broad(p, home) {
            add(&mut read, p);
        }
    }
    if let Some(h) = home {
        for t in HOME_TOOLS {
            add(&mut read, &h.join(t));
        }
    }
    for c in launcher_caches(&places.command, home, places.cache.as_deref()) {
        add(&mut write, &c);
    }
    add(&mut write, &places.private);
    for d in &wanted.own {
        add(&mut write, d);
    }
    for p in &wanted.config.read {
        if !add(&mut read, &expand(p, home)) {
            missing.push(p.clone());
        }
    }
    for p in &wanted.config.write {
        if !add(&mut write, &expand(p, home)) {
            missing.push(p.clone());
        }
    }
    Policy {
        read,
        write,
        network: wanted.config.network,
        tmp: places.private.join("tmp"),
        missing,
    }
}

/// A server's private folder under `root`, from its name (any character a folder name should
/// not have becomes `_`).
pub fn private_dir(root: &Path, server: &str) -> PathBuf {
    let mut safe: String = server
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') => c,
            ' ' => '+',
            _ => '_',
        })
        .collect();
    if safe.is_empty() || safe.starts_with('.') {
        safe.insert(0, '_');
    }
    root.join(safe)
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot make its folder {path}: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    #[error("the kernel refused the Landlock ruleset: {0}")]
    Landlock(String),
    #[error("the kernel has no Landlock")]
    NoLandlock,
    #[error("cannot make the network filter: {0}")]
    Seccomp(String),
}

/// A server's sandbox, ready to be applied in its child process.
pub struct Prepared {
    #[cfg(target_os = "linux")]
    ruleset: std::os::fd::OwnedFd,
    /// The seccomp program (for `SECCOMP_SET_MODE_FILTER`), when one is needed.
    #[cfg(target_os = "linux")]
    filter: Option<Vec<libc::sock_filter>>,
}

impl Policy {
    /// Makes the Landlock ruleset and the seccomp program (in the parent: this allocates).
    /// `abi` is the kernel's, for what Landlock cannot do there itself.
    #[cfg(target_os = "linux")]
    pub fn prepare(&self, abi: i32) -> Result<Prepared, SandboxError> {
        use landlock::{
            path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset,
            RulesetAttr, RulesetCreatedAttr, Scope, ABI,
        };
        // the rights of the ABI this is tested on; an older kernel drops what it lacks
        let v = ABI::V7;
        let ll = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(v))
            .map_err(ll)?
            .scope(Scope::from_all(v))
            .map_err(ll)?;
        if !self.network {
            // no rule for any port: every TCP bind and connect is refused
            ruleset = ruleset.handle_access(AccessNet::from_all(v)).map_err(ll)?;
        }
        let created = ruleset
            .create()
            .map_err(ll)?
            .add_rules(path_beneath_rules(&self.read, AccessFs::from_read(v)))
            .map_err(ll)?
            .add_rules(path_beneath_rules(&self.write, AccessFs::from_all(v)))
            .map_err(ll)?;
        let fd: Option<std::os::fd::OwnedFd> = created.into();
        Ok(Prepared {
            ruleset: fd.ok_or(SandboxError::NoLandlock)?,
            filter: seccomp_filter(self.network, abi)?,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn prepare(&self, _abi: i32) -> Result<Prepared, SandboxError> {
        Err(SandboxError::NoLandlock)
    }
}

/// The seccomp program: with the network off, `socket()` of any family but `AF_UNIX` and
/// `io_uring_setup` (io_uring makes sockets without `socket()`) fail with EACCES, the errno
/// Landlock uses, so a server sees one kind of refusal; below Landlock ABI 3, `truncate` by path
/// too (Landlock cannot control it there). `None` when nothing is to be filtered.
#[cfg(target_os = "linux")]
fn seccomp_filter(network: bool, abi: i32) -> Result<Option<Vec<libc::sock_filter>>, SandboxError> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    use std::collections::BTreeMap;
    let sc = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(sc)?;
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(sc)?],
        );
        rules.insert(libc::SYS_io_uring_setup, vec![]);
    }
    if abi < 3 {
        rules.insert(libc::SYS_truncate, vec![]);
    }
    if rules.is_empty() {
        return Ok(None);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(sc)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(sc)?;
    let program: BpfProgram = filter.try_into().map_err(sc)?;
    // seccompiler's sock_filter is the kernel's struct, as libc's is
    Ok(Some(
        program
            .iter()
            .map(|f| libc::sock_filter {
                code: f.code,
                jt: f.jt,
                jf: f.jf,
                k: f.k,
            })
            .collect(),
    ))
}

impl Prepared {
    /// Applies the sandbox in `cmd`'s child, after fork and before exec. The child only calls
    /// `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self` and `seccomp`: no allocation, no
    /// lock. `self` must live until the spawn returned (the child uses its ruleset fd, which is
    /// close-on-exec, so the server never holds it).
    #[cfg(target_os = "linux")]
    pub fn install(&self, cmd: &mut tokio::process::Command) {
        use std::os::fd::AsRawFd;
        let fd = self.ruleset.as_raw_fd();
        let filter = self.filter.clone();
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(f) = &filter {
                    let program = libc::sock_fprog {
                        len: f.len() as u16,
                        filter: f.as_ptr() as *mut libc::sock_filter,
                    };
                    let set = libc::syscall(
                        libc::SYS_seccomp,
                        libc::SECCOMP_SET_MODE_FILTER,
                        0u32,
                        &program as *const libc::sock_fprog,
                    );
                    if set != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn install(&self, _cmd: &mut tokio::process::Command) {}
}

/// A server's sandbox, set up for one start: the policy, applied in the child, and the means to
/// tell its refusals.
pub struct Sandboxed {
    pub policy: Policy,
    pub prepared: Prepared,
    pub detector: std::sync::Arc<Detector>,
}

/// Makes a server's private folder and its own folders, then its policy and ruleset.
pub fn set_up(wanted: &Wanted, places: &Places, abi: i32) -> Result<Sandboxed, SandboxError> {
    for dir in wanted
        .own
        .iter()
        .chain([&places.private, &places.private.join("tmp")])
    {
        std::fs::create_dir_all(dir).map_err(|source| SandboxError::Folder {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let policy = policy(wanted, places);
    let prepared = policy.prepare(abi)?;
    Ok(Sandboxed {
        detector: std::sync::Arc::new(Detector::new(&policy)),
        policy,
        prepared,
    })
}

/// The prefix of the log line that says the sandbox refused something.
pub const BLOCKED_NOTE: &str = "[switchboard] blocked by sandbox: ";

/// Tells, from what a sandboxed server writes (stderr, an error result), that the sandbox
/// refused it something. A heuristic: a permission error (EACCES, EPERM, "Permission denied",
/// "Operation not permitted", Python's `[Errno 13]`, Rust's `os error 13`) is put on the
/// sandbox unless it names a path the server may write, or a path the host itself could not
/// reach either (then it is the file's own permissions). Without a path, it is put on the
/// sandbox too, named as network access when it speaks of sockets and the network is off.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    network: bool,
}

const DENIED: [&str; 8] = [
    "eacces",
    "eperm",
    "permission denied",
    "operation not permitted",
    "[errno 13]",
    "[errno 1]",
    "os error 13)",
    "os error 1)",
];

const NETWORK_WORDS: [&str; 12] = [
    "connect",
    "socket",
    "bind",
    "listen",
    "getaddrinfo",
    "eai_again",
    "network",
    "dial",
    "sendto",
    "udp",
    "tcp",
    "dns",
];

impl Detector {
    pub fn new(p: &Policy) -> Self {
        Detector {
            read: p.read.clone(),
            write: p.write.clone(),
            network: p.network,
        }
    }

    /// What the sandbox refused, if `text` (one or more lines) says it refused something.
    pub fn blocked(&self, text: &str) -> Option<String> {
        text.lines().find_map(|l| self.blocked_line(l))
    }

    fn blocked_line(&self, line: &str) -> Option<String> {
        let lower = line.to_ascii_lowercase();
        if !DENIED.iter().any(|d| lower.contains(d)) {
            return None;
        }
        if let Some(path) = path_in(line) {
            return self.path_blocked(&path).then(|| {
                let real = resolved(&path);
                if self.read.iter().any(|r| real.starts_with(r)) {
                    format!("{} (it may only read there)", path.display())
                } else {
                    path.display().to_string()
                }
            });
        }
        let line = line.trim();
        let short: String = line.chars().take(200).collect();
        if !self.network && NETWORK_WORDS.iter().any(|w| lower.contains(w)) {
            return Some(format!("network access ({short})"));
        }
        Some(short)
    }

    /// Whether refusing `path` is the sandbox's doing: not a place it may write, and one the host
    /// can reach.
    fn path_blocked(&self, path: &Path) -> bool {
        let real = resolved(path);
        if self.write.iter().any(|w| real.starts_with(w)) {
            return false;
        }
        host_can_reach(&real)
    }
}

/// `path` with symlinks resolved as far as it exists.
fn resolved(path: &Path) -> PathBuf {
    let mut probe = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = probe.canonicalize() {
            return rest
                .iter()
                .rev()
                .fold(real, |p, c: &std::ffi::OsString| p.join(c));
        }
        match (probe.file_name().map(|n| n.to_owned()), probe.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                probe = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether this (unsandboxed) process could read `path`, or create it in its folder.
fn host_can_reach(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let probe = |p: &Path, mode| {
            std::ffi::CString::new(p.as_os_str().as_bytes())
                .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), mode) } == 0)
        };
        if path.symlink_metadata().is_ok() {
            probe(path, libc::R_OK)
        } else {
            path.parent().is_some_and(|d| probe(d, libc::W_OK))
        }
    }
    #[cfg(not(unix))]
    {
        path.exists()
    }
}

/// The first absolute path in a message: quoted (`open '/x/y'`, Python's `: '/x/y'`) or a bare
/// word (`open /x/y: permission denied`).
fn path_in(line: &str) -> Option<PathBuf> {
    for q in ['\'', '"'] {
        let mut rest = line;
        while let Some(i) = rest.find(q) {
            let after = &rest[i + 1..];
            if after.starts_with('/') {
                if let Some(end) = after.find(q) {
                    return Some(PathBuf::from(&after[..end]));
                }
            }
            rest = after;
        }
    }
    line.split_whitespace()
        .map(|w| w.trim_start_matches(['(', '[', '<']))
        .find(|w| w.starts_with('/') && !w.starts_with("//"))
        .map(|w| w.trim_end_matches([':', ',', ';', ')', ']', '>', '.', '\'', '"']))
        .filter(|w| w.len() > 1)
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(json: &str) -> ServerConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn builtins_are_sandboxed_by_default_and_others_only_when_asked() {
        let calc = cfg(r#"{"command":"switchboard","args":["mcp-server","calculator"]}"#);
        let w = wanted(&calc).unwrap();
        assert!(w.default && !w.config.network && w.own.is_empty());
        let files =
            cfg(r#"{"command":"switchboard","args":["mcp-server","files","--root","/x/y"]}"#);
        assert_eq!(wanted(&files).unwrap().own, vec![PathBuf::from("/x/y")]);
        // the user can turn it off, or configure it
        let off =
            cfg(r#"{"command":"switchboard","args":["mcp-server","calculator"],"sandbox":false}"#);
        assert_eq!(wanted(&off), None);
        let net = cfg(
            r#"{"command":"switchboard","args":["mcp-server","files"],"sandbox":{"network":true,"read":["/a"]}}"#,
        );
        let w = wanted(&net).unwrap();
        assert!(!w.default && w.config.network && w.config.read == ["/a"]);
        assert_eq!(w.own, vec![crate::servers::default_files_root()]);
        // other servers: only when asked; remote ones never
        assert_eq!(wanted(&cfg(r#"{"command":"npx","args":["-y","x"]}"#)), None);
        let asked = cfg(r#"{"command":"npx","sandbox":true}"#);
        assert_eq!(wanted(&asked).unwrap().config, SandboxConfig::default());
        assert_eq!(
            wanted(&cfg(r#"{"url":"http://127.0.0.1:1/mcp","sandbox":true}"#)),
            None
        );
        // not a built-in: the app binary doing something else
        assert_eq!(
            wanted(&cfg(
                r#"{"command":"switchboard","args":["mcp-server","nope"]}"#
            )),
            None
        );
    }

    #[test]
    fn the_config_shape_round_trips() {
        let c = cfg(
            r#"{"command":"x","sandbox":{"network":false,"read":["~/docs"],"write":["/tmp/w"],"allowUnsandboxed":true}}"#,
        );
        let Some(SandboxSetting::On(sb)) = &c.sandbox else {
            panic!("{c:?}")
        };
        assert!(sb.allow_unsandboxed && sb.read == ["~/docs"] && sb.write == ["/tmp/w"]);
        let back = serde_json::to_value(&c).unwrap();
        assert_eq!(
            back["sandbox"],
            serde_json::json!({"network":false,"read":["~/docs"],"write":["/tmp/w"],"allowUnsandboxed":true})
        );
        let off = cfg(r#"{"command":"x","sandbox":false}"#);
        assert_eq!(serde_json::to_value(&off).unwrap()["sandbox"], false);
        assert_eq!(
            serde_json::to_value(cfg(r#"{"command":"x","sandbox":true}"#)).unwrap()["sandbox"],
            serde_json::json!({"network": false})
        );
    }

    #[test]
    fn the_kernel_decides_and_the_user_may_waive() {
        let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
        assert_eq!(decide(&w, 7), SandboxState::On);
        assert_eq!(decide(&w, 1), SandboxState::On);
        assert_eq!(decide(&w, 0), SandboxState::Unsupported);
        w.config.allow_unsandboxed = true;
        assert_eq!(decide(&w, 0), SandboxState::Waived);
        // where it can sandbox, the agreement changes nothing
        assert_eq!(decide(&w, 7), SandboxState::On);
    }

    fn places(dir: &Path) -> Places {
        let private = dir.join("private/srv");
        std::fs::create_dir_all(&private).unwrap();
        Places {
            program: PathBuf::from("/usr/bin/env"),
            command: "env".into(),
            private,
            home: Some(dir.join("home")),
            ..Places::default()
        }
    }

    #[test]
    fn the_policy_has_the_system_the_program_and_the_configured_folders_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let data = d.join("data");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        std::os::unix::fs::symlink(&data, d.join("link")).unwrap();
        std::fs::create_dir_all(d.join("home/.pyenv")).unwrap();
        let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
        w.config.read = vec![
            d.join("link/sub").display().to_string(),
            "/nope/never".into(),
        ];
        w.config.write = vec!["~/out".into()];
        std::fs::create_dir_all(d.join("home/out")).unwrap();
        let p = policy(&w, &places(&d));
        // symlinks resolved: the rule is on the real folder
        assert!(p.read.contains(&data.join("sub")), "{:?}", p.read);
        assert!(!p.read.iter().any(|r| r.starts_with(d.join("link"))));
        assert_eq!(p.missing, vec!["/nope/never".to_string()]);
        // ~ is home
        assert!(p.write.contains(&d.join("home/out")), "{:?}", p.write);
        // the system, the program's folder (/usr for /usr/bin/env), version managers under home
        for sys in ["/usr", "/etc", "/proc"] {
            assert!(
                p.read.contains(&PathBuf::from(sys)),
                "{sys} in {:?}",
                p.read
            );
        }
        assert!(p.read.contains(&d.join("home/.pyenv")));
        assert!(p.write.contains(&PathBuf::from("/dev/null")));
        // its private folder is writable and its TMPDIR is in it
        assert!(p.write.contains(&d.join("private/srv")));
        assert_eq!(p.tmp, d.join("private/srv/tmp"));
        // never home itself, nor what is not asked for
        assert!(!p.read.contains(&d.join("home")) && !p.write.contains(&d.join("home")));
        assert!(!p.read.contains(&data) && !p.write.contains(&data));
        assert!(!p.network);
        // nothing under /tmp or home is readable unless listed
        assert!(!p
            .read
            .iter()
            .any(|r| r == Path::new("/tmp") || r == Path::new("/")));
    }

    #[test]
    fn a_script_brings_its_package_but_a_folder_argument_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let script = d.join("proj/node_modules/@scope/pkg/dist/index.js");
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        std::fs::write(&script, "").unwrap();
        let py = d.join("tool/src/server.py");
        std::fs::create_dir_all(py.parent().unwrap()).unwrap();
        std::fs::write(&py, "").unwrap();
        std::fs::write(d.join("tool/pyproject.toml"), "").unwrap();
        std::fs::create_dir_all(d.join("documents")).unwrap();
        let mut pl = places(&d);
        pl.args = vec![
            script.display().to_string(),
            py.display().to_string(),
            d.join("documents").display().to_string(),
            "-y".into(),
        ];
        pl.command = "npx".into();
        std::fs::create_dir_all(d.join("home/.npm")).unwrap();
        let w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
        let p = policy(&w, &pl);
        // the outermost node_modules: the package and what it imports
        assert!(
            p.read.contains(&d.join("proj/node_modules")),
            "{:?}",
            p.read
        );
        // the Python project around the script
        assert!(p.read.contains(&d.join("tool")), "{:?}", p.read);
        // a folder given as an argument is the server's data: never granted by guess
        assert!(!p.read.iter().any(|r| r.starts_with(d.join("documents"))));
        // npx's cache is writable
        assert!(p.write.contains(&d.join("home/.npm")), "{:?}", p.write);
    }

    #[test]
    fn program_folders_are_never_home_or_root() {
        let home = Path::new("/home/u");
        assert_eq!(
            program_dir(Path::new("/usr/bin/node"), Some(home)),
            Some(PathBuf::from("/usr"))
        );
        assert_eq!(
            program_dir(Path::new("/home/u/bin/srv"), Some(home)),
            Some(PathBuf::from("/home/u/bin"))
        );
        assert_eq!(program_dir(Path::new("/home/u/srv"), Some(home)), None);
        assert_eq!(program_dir(Path::new("/srv"), Some(home)), None);
        assert_eq!(
            program_dir(
                Path::new("/home/u/.nvm/versions/node/v20/bin/node"),
                Some(home)
            ),
            Some(PathBuf::from("/home/u/.nvm/versions/node/v20"))
        );
    }

    #[test]
    fn private_folders_are_safe_names() {
        let r = Path::new("/c");
        assert_eq!(private_dir(r, "files"), PathBuf::from("/c/files"));
        assert_eq!(private_dir(r, "my server"), PathBuf::from("/c/my+server"));
        assert_eq!(private_dir(r, "../x"), PathBuf::from("/c/_.._x"));
        assert_eq!(private_dir(r, ""), PathBuf::from("/c/_"));
    }

    #[test]
    fn refusals_are_told_apart_from_other_errors() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(d.join("rw")).unwrap();
        std::fs::create_dir_all(d.join("ro")).unwrap();
        std::fs::write(d.join("secret.txt"), "x").unwrap();
        std::fs::write(d.join("ro/a.txt"), "x").unwrap();
        let det = Detector {
            read: vec![d.join("ro")],
            write: vec![d.join("rw")],
            network: false,
        };
        let secret = d.join("secret.txt").display().to_string();
        // Node, Python, Go
        assert_eq!(
            det.blocked(&format!(
                "Error: EACCES: permission denied, open '{secret}'"
            )),
            Some(secret.clone())
        );
        assert_eq!(
            det.blocked(&format!(
                "PermissionError: [Errno 13] Permission denied: '{secret}'"
            )),
            Some(secret.clone())
        );
        assert_eq!(
            det.blocked(&format!("open {secret}: permission denied")),
            Some(secret.clone())
        );
        // a write where it may only read
        let ro = d.join("ro/a.txt").display().to_string();
        assert_eq!(
            det.blocked(&format!("EACCES: permission denied, open '{ro}'")),
            Some(format!("{ro} (it may only read there)"))
        );
        // inside a folder it may write: not the sandbox
        let rw = d.join("rw/new.txt").display().to_string();
        assert_eq!(
            det.blocked(&format!("EACCES: permission denied, open '{rw}'")),
            None
        );
        // the network, with it off
        assert_eq!(
            det.blocked("Error: connect EACCES 127.0.0.1:8080"),
            Some("network access (Error: connect EACCES 127.0.0.1:8080)".into())
        );
        // nothing about permissions: nothing
        assert_eq!(det.blocked("ENOENT: no such file, open '/x'"), None);
        assert_eq!(det.blocked("[Errno 111] Connection refused"), None);
        assert_eq!(det.blocked("all good\nfine"), None);
        // the first matching line of several
        assert_eq!(
            det.blocked(&format!(
                "Traceback\n  ...\nPermissionError: [Errno 13] Permission denied: '{secret}'"
            )),
            Some(secret)
        );
    }

    #[test]
    fn paths_are_found_in_messages() {
        assert_eq!(path_in("open '/a b/c'"), Some(PathBuf::from("/a b/c")));
        assert_eq!(path_in(r#"x "/q" y"#), Some(PathBuf::from("/q")));
        assert_eq!(path_in("stat /x/y: denied"), Some(PathBuf::from("/x/y")));
        assert_eq!(path_in("(/x/y)"), Some(PathBuf::from("/x/y")));
        assert_eq!(path_in("see http://h/x and 'rel'"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_network_filter_is_built_only_when_needed() {
        assert!(seccomp_filter(true, 7).unwrap().is_none());
        assert!(!seccomp_filter(false, 7).unwrap().unwrap().is_empty());
        // below ABI 3 truncate is filtered even with the network on
        assert!(seccomp_filter(true, 2).unwrap().is_some());
    }
}
