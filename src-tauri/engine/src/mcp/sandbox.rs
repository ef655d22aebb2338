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

use super::config::{SandboxConfig, SandboxSetting, ServerConfig};

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

mod detect;
mod policy;

pub use detect::*;
pub use policy::*;
#[cfg(test)]
use {detect::path_in, policy::program_dir};

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

#[cfg(test)]
mod tests;
