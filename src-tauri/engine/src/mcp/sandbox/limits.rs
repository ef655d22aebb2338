//! How much of the computer a sandboxed server may take: processes (and threads), memory and
//! open files, as the kernel's resource limits (`setrlimit`, systemd's `LimitNPROC=`,
//! `LimitDATA=`, `LimitNOFILE=`), so a fork bomb or a runaway server cannot take the desktop
//! down. Each sandboxed server has them; its config may set its own
//! (`"sandbox": {"limits": {"processes": 512, "memoryMb": 2048, "openFiles": 4096}}`).
//!
//! What the kernel counts: open files and memory per process (memory is what it may write: its
//! heap and private mappings, `RLIMIT_DATA`; `RLIMIT_AS` would refuse the address space Node
//! reserves and never uses); processes per user (`RLIMIT_NPROC` counts every thread of the user,
//! so the limit is the user's threads when the server starts plus the server's share). The
//! kernel does not count processes against a server run by root: that one limit does not hold
//! there, and the server's row says so.

use serde::Serialize;

use super::super::config::LimitsConfig;

/// The limits a server runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub processes: u64,
    pub memory_mb: u64,
    pub open_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

impl Limits {
    /// A headless browser's threads fit, a fork bomb does not; Node's and Python's heaps fit, a
    /// runaway one stops at 4 GiB; a busy server's sockets and files fit.
    pub const DEFAULT: Limits = Limits {
        processes: 1024,
        memory_mb: 4096,
        open_files: 8192,
    };

    pub fn of(c: Option<&LimitsConfig>) -> Limits {
        let d = Limits::DEFAULT;
        let c = c.copied().unwrap_or_default();
        Limits {
            processes: c.processes.unwrap_or(d.processes),
            memory_mb: c.memory_mb.unwrap_or(d.memory_mb),
            open_files: c.open_files.unwrap_or(d.open_files),
        }
    }
}

/// The `setrlimit` calls for `limits`, computed now (the user's threads are counted here, in
/// the parent). A limit is never raised above what the host itself may have.
#[cfg(target_os = "linux")]
pub fn rlimits(limits: &Limits) -> Vec<(libc::__rlimit_resource_t, u64)> {
    let hard = |r| {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if unsafe { libc::getrlimit(r, &mut lim) } == 0 {
            lim.rlim_max
        } else {
            libc::RLIM_INFINITY
        }
    };
    let capped = |r, v: u64| (r, v.min(hard(r)));
    vec![
        capped(
            libc::RLIMIT_NPROC,
            user_tasks().saturating_add(limits.processes),
        ),
        capped(libc::RLIMIT_DATA, limits.memory_mb.saturating_mul(1 << 20)),
        capped(libc::RLIMIT_NOFILE, limits.open_files),
        // no core files: a crashed server's memory is nobody's to keep
        (libc::RLIMIT_CORE, 0),
    ]
}

/// The threads of this process's real user now (what `RLIMIT_NPROC` counts).
#[cfg(target_os = "linux")]
fn user_tasks() -> u64 {
    let uid = unsafe { libc::getuid() };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in dir.flatten() {
        let name = e.file_name();
        if !name
            .to_str()
            .is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::trim)
        };
        let real = field("Uid:").and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok());
        if real == Some(uid) {
            n += field("Threads:")
                .and_then(|t| t.parse::<u64>().ok())
                .unwrap_or(1);
        }
    }
    n
}

/// Whether the kernel counts processes against a server run by this user (not root's).
pub fn processes_counted() -> bool {
    #[cfg(unix)]
    {
        unsafe { libc::getuid() != 0 }
    }
    #[cfg(not(unix))]
    {
        false
    }
}
