//! Running a stdio server in a kernel sandbox. On Linux: Landlock (which files and folders it may
//! read, run or write; TCP and UDP by port; path Unix sockets from ABI 9; signals and abstract
//! Unix sockets kept inside); a seccomp allow-list (`seccomp.rs`: every system call a server does
//! not need fails with EPERM; sockets only of the families its network setting allows; no
//! keyrings, System V IPC, io_uring, namespaces or `ptrace`); the changes to a file's metadata
//! done by the host, only inside its write grants, and the process groups it makes noted so they
//! end with it (`supervise.rs`); and resource limits (`limits.rs`).
//!
//! Everything that allocates is done in the parent: the paths are resolved, the ruleset is made
//! (its fd kept open), the seccomp programs compiled. Between fork and exec the child makes only
//! system calls ([`Prepared::install`]), so the exec'd server and everything it starts are
//! confined, and the host itself never is. The child also starts its own session (no
//! controlling terminal, `mcp/process.rs`), inherits no descriptor but 0–2 and only the
//! environment [`environment`] lets through.
//!
//! What it may touch ([`Policy`]): the system's read-only folders (`/usr`, `/etc`, …, see
//! [`SYSTEM_READ`]), a few device files (never `/dev/tty`), its own program's file or package
//! tree and its script's package (never a shared folder like `~/.local` or `~/bin`), version
//! managers under home (read only), a private folder of its own (its `TMPDIR` and the caches
//! its launcher writes: npm, uv, pip… are pointed there), and the folders of its config.
//! Credentials and the app's own folders are never in it unless the config names them
//! ([`protected`]). The built-in `files` and `research` servers also write in their own folders.
//!
//! **Invariant:** a server whose config asks for a sandbox never runs without one, unless the
//! kernel cannot sandbox and the user agreed (`allowUnsandboxed`), or it runs a container, which
//! is then its sandbox, as checked before each start (`container.rs`).
//!
//! The parts: `sandbox/policy.rs` what a config asks for (`wanted`: its `"sandbox"`, or the
//! built-ins' default), whether this kernel can (`decide`: Landlock ABI, the user's
//! `allowUnsandboxed`) and the paths it may read or write (`policy`, symlinks resolved; a config
//! with `onlyNamed`, a catalog install, gets nothing from its arguments: no script's package
//! guessed); `protect.rs`, `env.rs` (with any network also `CERT_PATHS`, `CERT_FLAGS`; a built-in
//! also `SWITCHBOARD_*`, and its own folder as an argument, `servers::with_own_folder`, the one its
//! sandbox grants; without network, the launchers' offline settings), `fetch/` (the record and
//! staging folder in the host's `<sandbox>/.fetched/<server>/`, `policy::fetch_dir`;
//! `Step::FetchingPackage` when it fails), `enforced.rs` (`SandboxView.protections`, shown on the
//! row), `container.rs` (`SandboxState::Container`, `run_options.rs`'s `container_image_at`,
//! `container_environment`), `detect.rs` (the `Detector`: the log's `blocked by sandbox:` lines,
//! the card's note; and `read_offer`, the row's "Allow reading <path>": a refused path that exists,
//! is not granted and not protected, which `Runtime::allow_server_read` adds to the sandbox's
//! `read`, refusing a protected one), `seccomp.rs`, `supervise.rs` (`setsid`/`setpgid` noted as the
//! server's `Groups`, which `process::terminate` ends too), `limits.rs` (`RLIMIT_NPROC`, `DATA`,
//! `NOFILE`, `CORE`), `network.rs`. This file is the kernel part: the Landlock ruleset (every right
//! of the newest ABI the crate knows, `LANDLOCK_BEST`; the kernel keeps what it has) and the
//! seccomp programs made in the parent (`prepare`), the system calls in the child (`install`, from
//! `process::spawn`'s `pre_exec`: capabilities dropped, no_new_privs, Landlock, seccomp, every fd
//! above 2 close-on-exec).
//!
//! Private folders are `<sandbox>/<paths::folder_name(server)>` (injective), deleted with their
//! server by `McpHost::apply_config` (`sandbox::forget_server`).
//!
//! A sandboxed server gets none of the host's environment but the allow-list and the names its
//! config grants, no descriptor but 0–2, no capability, no terminal; it never reads a credential or
//! the app's own folders unless its config names that path, never writes a cache another server
//! runs from, and reaches no Unix socket by path or abstract name (without the network: none at
//! all; with it: none below Landlock ABI 9, only in the folders it may write from 9). Its system
//! calls are an allow-list; a metadata change outside its write grants is refused, by the host that
//! makes it; the process groups it makes end with it. The host never continues a handed-over call
//! whose arguments are in the server's memory: it reads them once and does the call itself.
//! `tests/it/sandbox/probe.rs` tries each way out, and the same probe unsandboxed gets through
//! each, so the test can fail; `tests/it/sandbox/fetch.rs` plants programs on the server's PATH
//! (they never run) and git and tarball dependencies (refused, named);
//! `tests/it/sandbox/folders.rs` checks a private folder belongs to one server name and goes with
//! its server.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::config::{SandboxConfig, SandboxSetting, ServerConfig};

/// The oldest Landlock ABI the sandbox runs on. ABI 1 already confines files and other
/// processes; what later ABIs add is either covered by the seccomp filter (TCP from ABI 4 and
/// UDP from 10: every socket is refused when the network is off; path Unix sockets from 9: all
/// refused below it; `truncate` by path from ABI 3: refused outright below it) or a hardening
/// that is missing where the kernel lacks it (device ioctls from 5, signal scoping from 6):
/// [`protections`] tells, and each sandboxed server's row shows what is missing.
pub const MIN_ABI: i32 = 1;

/// The newest Landlock ABI the `landlock` crate knows: its rights are all asked for, and the
/// kernel keeps those it has (a test fails when the crate learns a newer one, so it is looked
/// at before it is used).
#[cfg(target_os = "linux")]
pub const LANDLOCK_BEST: landlock::ABI = landlock::ABI::V10;

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

/// Device files a program expects to open for reading and writing (not `/dev/tty`: a server has
/// no terminal).
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Version managers and user-wide tool installs under home, read only: `npx` and `uvx` servers
/// run from them. Never a shared folder of programs (`~/.local/bin`, `~/.cargo/bin`), nor a
/// settings file that may hold a token (`~/.npmrc`, `~/.config/uv`).
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
    ".deno",
    ".bun",
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

mod container;
mod detect;
mod enforced;
mod env;
mod fetch;
mod limits;
pub mod network;
mod policy;
mod protect;
pub mod run_options;
#[cfg(target_os = "linux")]
pub mod seccomp;
#[cfg(target_os = "linux")]
pub mod supervise;

pub use container::*;
pub use detect::*;
pub use enforced::*;
pub use env::*;
pub use fetch::*;
pub use limits::*;
pub use network::{Attempts, NetAttempt, Reach};
pub use policy::*;
pub use protect::*;
#[cfg(test)]
use {detect::path_in, policy::program_dir};

/// The process groups (and sessions) a sandboxed server's processes made, and whether it is
/// ending (then it may make no more).
#[derive(Debug, Default)]
pub struct ProcessGroups {
    /// Each group by its number, with a pidfd of the process that made it (while it lives, the
    /// number is that group's; once it ended, a process of that number is someone else's).
    pub made: std::sync::Mutex<std::collections::BTreeMap<i32, Option<std::os::fd::OwnedFd>>>,
    pub closing: std::sync::atomic::AtomicBool,
}

pub type Groups = std::sync::Arc<ProcessGroups>;

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
    #[error("cannot make its system call filter: {0}")]
    Seccomp(String),
}

/// A server's sandbox, ready to be applied in its child process.
pub struct Prepared {
    #[cfg(target_os = "linux")]
    ruleset: std::os::fd::OwnedFd,
    /// The allow-list (`seccomp.rs`), for `SECCOMP_SET_MODE_FILTER`.
    #[cfg(target_os = "linux")]
    filter: Vec<libc::sock_filter>,
    /// The filter that hands calls to the host, and the socket pair its listener comes
    /// through, when the host supervises (`supervise.rs`); taken once the server runs.
    #[cfg(target_os = "linux")]
    supervision: std::sync::Mutex<Option<(Vec<libc::sock_filter>, supervise::Handover)>>,
    /// The resource limits, as `setrlimit` takes them.
    #[cfg(target_os = "linux")]
    rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    /// The highest capability this kernel knows (`/proc/sys/kernel/cap_last_cap`).
    #[cfg(target_os = "linux")]
    last_cap: u32,
}

impl Policy {
    /// Makes the Landlock ruleset, the seccomp programs and the resource limits (in the
    /// parent: this allocates). `abi` is the kernel's, for what Landlock cannot do there
    /// itself; `supervised`: the host answers the calls `seccomp::SUPERVISED` hands it.
    #[cfg(target_os = "linux")]
    pub fn prepare(&self, abi: i32, supervised: bool) -> Result<Prepared, SandboxError> {
        use landlock::{
            path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset,
            RulesetAttr, RulesetCreatedAttr, Scope,
        };
        // every right the crate knows; the kernel drops what it lacks (best effort), and
        // [`protections`] says what that leaves out
        let v = LANDLOCK_BEST;
        let ll = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(v))
            .map_err(ll)?
            .scope(Scope::from_all(v))
            .map_err(ll)?;
        if !self.network {
            // no rule for any port: every TCP (and from ABI 10 UDP) bind and connect is refused
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
        let shape = seccomp::Shape {
            net: self.net(supervised),
            abi,
            supervised,
        };
        let supervision = if supervised {
            let pair = supervise::Handover::new()
                .map_err(|e| SandboxError::Seccomp(format!("cannot make its socket pair: {e}")))?;
            Some((seccomp::handed_over(shape), pair))
        } else {
            None
        };
        Ok(Prepared {
            ruleset: fd.ok_or(SandboxError::NoLandlock)?,
            filter: seccomp::allow_list(shape)?,
            supervision: std::sync::Mutex::new(supervision),
            rlimits: limits::rlimits(&self.limits),
            last_cap: std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(63),
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn prepare(&self, _abi: i32, _supervised: bool) -> Result<Prepared, SandboxError> {
        Err(SandboxError::NoLandlock)
    }

    /// What it may reach of the network, as the filters see it: some hosts only where the host
    /// supervises (else none).
    #[cfg(target_os = "linux")]
    pub fn net(&self, supervised: bool) -> seccomp::Net {
        match self.reach() {
            Reach::All => seccomp::Net::On,
            Reach::Hosts(_) if supervised => seccomp::Net::Hosts,
            _ => seccomp::Net::Off,
        }
    }

    /// Whether it reaches any of the network: all of it, or some hosts (these only where the
    /// host supervises).
    pub fn reaches_any(&self, supervised: bool) -> bool {
        self.network || (supervised && !self.hosts.is_empty())
    }

    /// What it may reach of the network.
    pub fn reach(&self) -> Reach {
        if self.network {
            Reach::All
        } else if self.hosts.is_empty() {
            Reach::None
        } else {
            Reach::Hosts(self.hosts.clone())
        }
    }
}

impl Prepared {
    /// Applies the sandbox in `cmd`'s child, after fork and before exec. The child only calls
    /// `prctl` (to drop every capability from its bounding and ambient sets: a server started
    /// by root holds none, and so cannot use CAP_SYS_ADMIN or CAP_PERFMON to read other
    /// processes' `/proc` files past Landlock; then `PR_SET_NO_NEW_PRIVS`), `setrlimit`,
    /// `landlock_restrict_self`, `seccomp` (the filter that hands calls to the host first, with
    /// its listener sent to the parent by `sendmsg` and closed; then the allow-list), and
    /// `close_range` (or `fcntl` on a kernel before 5.11): no allocation, no lock. Every
    /// descriptor above 2 is made close-on-exec, so the server inherits nothing of the host's
    /// (the pipe that tells the parent an exec failed is close-on-exec already). `self` must
    /// live until the spawn returned (the child uses its ruleset fd and socket pair, both
    /// close-on-exec, so the server never holds them).
    #[cfg(target_os = "linux")]
    pub fn install(&self, cmd: &mut tokio::process::Command) {
        use std::os::fd::AsRawFd;
        let fd = self.ruleset.as_raw_fd();
        let filter = self.filter.clone();
        let handed = self
            .supervision
            .lock()
            .unwrap()
            .as_ref()
            .map(|(f, pair)| (f.clone(), pair.child.as_raw_fd()));
        let rlimits = self.rlimits.clone();
        let last_cap = self.last_cap;
        unsafe {
            cmd.pre_exec(move || {
                // without CAP_SETPCAP (any user but root) these fail: there is nothing to drop
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                );
                for cap in 0..=last_cap {
                    libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
                }
                // if the host dies, the server dies: SIGKILL, which it cannot ignore (what it
                // started is still confined, and its handed-over calls fail: no listener)
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                for (resource, value) in &rlimits {
                    let lim = libc::rlimit {
                        rlim_cur: *value,
                        rlim_max: *value,
                    };
                    if libc::setrlimit(*resource, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some((handed, child)) = &handed {
                    supervise::Handover::install_in_child(*child, handed)?;
                }
                let program = libc::sock_fprog {
                    len: filter.len() as u16,
                    filter: filter.as_ptr() as *mut libc::sock_filter,
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
                close_inherited();
                Ok(())
            });
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn install(&self, _cmd: &mut tokio::process::Command) {}

    /// After the spawn: the listener of the filter that hands calls to the host, when it
    /// supervises (`None` when it does not).
    #[cfg(target_os = "linux")]
    pub fn listener(&self) -> Option<std::io::Result<std::os::fd::OwnedFd>> {
        let (_, pair) = self.supervision.lock().unwrap().take()?;
        Some(pair.receive())
    }

    #[cfg(not(target_os = "linux"))]
    pub fn listener(&self) -> Option<std::io::Result<std::os::fd::OwnedFd>> {
        None
    }
}

/// Marks every descriptor from 3 up close-on-exec (between fork and exec: system calls only).
#[cfg(target_os = "linux")]
fn close_inherited() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    let done =
        unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) } == 0;
    if !done {
        // before Linux 5.11: each one up to the limit
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            lim.rlim_cur.min(1 << 20) as i32
        } else {
            4096
        };
        for fd in 3..max {
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
    }
}

/// A server's sandbox, set up for one start: the policy, applied in the child, and the means to
/// tell its refusals.
pub struct Sandboxed {
    /// Its private folder: `tmp/` (its `TMPDIR`) and `cache/` (its launchers' caches) inside.
    pub private: PathBuf,
    pub policy: Policy,
    pub prepared: Prepared,
    pub detector: std::sync::Arc<Detector>,
    /// The host answers the calls the filter hands it (`supervise.rs`).
    pub supervised: bool,
    /// The process groups its processes made (when supervised), ended with it.
    pub groups: Groups,
    /// What it tried of the network (noted when supervised and not on all of it).
    pub attempts: Attempts,
}

/// Makes a server's private folder (`0700`, whatever the umask) and its own folders (as the
/// user has them), then its policy and ruleset.
pub fn set_up(
    wanted: &Wanted,
    places: &Places,
    abi: i32,
    attempts: Attempts,
) -> Result<Sandboxed, SandboxError> {
    fn folder(dir: &Path) -> impl FnOnce(std::io::Error) -> SandboxError + '_ {
        move |source| SandboxError::Folder {
            path: dir.display().to_string(),
            source,
        }
    }
    for dir in &wanted.own {
        std::fs::create_dir_all(dir).map_err(folder(dir))?;
    }
    for dir in [
        places.private.clone(),
        places.private.join("tmp"),
        places.private.join("cache"),
    ] {
        crate::paths::private_dir(&dir).map_err(folder(&dir))?;
    }
    let policy = policy(wanted, places);
    #[cfg(target_os = "linux")]
    let supervised = supervise::available();
    #[cfg(not(target_os = "linux"))]
    let supervised = false;
    let prepared = policy.prepare(abi, supervised)?;
    Ok(Sandboxed {
        private: places.private.clone(),
        detector: std::sync::Arc::new(Detector::new(&policy)),
        policy,
        prepared,
        supervised,
        groups: Default::default(),
        attempts,
    })
}

#[cfg(test)]
mod tests;
