//! What a sandbox enforces on this kernel, protection by protection: from the kernel's Landlock
//! ABI (the rights the ruleset asks for that the kernel does not have are dropped) and what the
//! seccomp filter and the start itself add. Each sandboxed server's row shows the missing ones
//! before it runs.

use super::*;

/// One protection of a sandboxed server, and whether this kernel gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Protection {
    /// What it keeps the server from, in a few words ("other processes' memory").
    pub what: &'static str,
    pub enforced: bool,
    /// What enforces it here, or why it is missing ("Landlock ABI 6 (this kernel has 5)").
    pub how: String,
}

/// The protections of a server sandboxed with or without the network on a kernel with Landlock
/// ABI `abi` (0: none at all, then nothing is enforced), where the host supervises or not
/// ([`super::supervise::available`]) and runs as root or not.
pub fn protections(abi: i32, network: bool) -> Vec<Protection> {
    #[cfg(target_os = "linux")]
    let supervised = super::supervise::available();
    #[cfg(not(target_os = "linux"))]
    let supervised = false;
    protections_with(abi, network, supervised, super::processes_counted())
}

/// [`protections`], with what the host can do told.
pub fn protections_with(
    abi: i32,
    network: bool,
    supervised: bool,
    processes_counted: bool,
) -> Vec<Protection> {
    let has = |n: i32| abi >= n;
    let landlock = |n: i32| {
        if has(n) {
            format!("Landlock ABI {n}")
        } else {
            format!("needs Landlock ABI {n} (this kernel has {abi})")
        }
    };
    let either = |n: i32, other: &str| {
        if has(n) {
            format!("Landlock ABI {n} and {other}")
        } else {
            other.to_string()
        }
    };
    let sandboxed = has(MIN_ABI);
    let mut out = vec![
        Protection {
            what: "files and folders outside its own",
            enforced: sandboxed,
            how: landlock(1),
        },
        Protection {
            what: "credentials and the app's own data",
            enforced: sandboxed,
            how: landlock(1),
        },
        Protection {
            what: "other processes (ptrace, their memory and environment in /proc)",
            enforced: sandboxed,
            how: either(1, "seccomp (no ptrace, no process_vm_*)"),
        },
        Protection {
            what: "truncating files it may only read",
            enforced: sandboxed,
            how: either(3, "seccomp"),
        },
        Protection {
            what: "permissions, owner and times of files outside its write grants",
            enforced: sandboxed,
            how: if supervised {
                "done by Switchboard, only inside its write grants".into()
            } else {
                "seccomp (refused by path; this system cannot supervise, so on files it may only \
                 read and has opened, not enforced)"
                    .into()
            },
        },
        Protection {
            what: "Unix sockets by path (session bus, ssh-agent, Docker)",
            enforced: sandboxed,
            how: if network && has(9) {
                "Landlock ABI 9 (only in folders it may write)".into()
            } else {
                either(9, "seccomp (no Unix socket; no datagram socket pair)")
            },
        },
        Protection {
            what: "abstract Unix sockets outside its sandbox",
            enforced: sandboxed,
            how: if network && has(9) {
                landlock(6)
            } else {
                either(6, "seccomp (no Unix socket)")
            },
        },
        Protection {
            what: "the kernel keyrings, System V IPC and POSIX message queues",
            enforced: sandboxed,
            how: "seccomp".into(),
        },
        Protection {
            what:
                "io_uring, namespaces, eBPF, perf and other kernel interfaces servers do not need",
            enforced: sandboxed,
            how: "seccomp (an allow-list)".into(),
        },
        Protection {
            what: "signals to processes outside its sandbox",
            enforced: has(6),
            how: landlock(6),
        },
        Protection {
            what: "device ioctls",
            enforced: has(5),
            how: landlock(5),
        },
        Protection {
            what: "typing into a terminal (TIOCSTI, TIOCLINUX)",
            enforced: sandboxed,
            how: "its own session, no /dev/tty, and seccomp".into(),
        },
        Protection {
            what: "the host's descriptors and environment",
            enforced: sandboxed,
            how: "closed before it starts; an allow-list of variables".into(),
        },
        Protection {
            what: "privileges (a server started by root holds no capability)",
            enforced: sandboxed,
            how: "dropped before it starts, and no_new_privs".into(),
        },
        Protection {
            what: "processes it starts outliving it (a new session or process group)",
            enforced: sandboxed && supervised,
            how: if supervised {
                "noted by Switchboard and ended with it".into()
            } else {
                "needs seccomp notifications (Linux 5.6) and Yama's ptrace_scope below 2".into()
            },
        },
        Protection {
            what: "memory and open files (a runaway server)",
            enforced: sandboxed,
            how: "resource limits per process".into(),
        },
        Protection {
            what: "processes and threads (a fork bomb)",
            enforced: sandboxed && processes_counted,
            how: if processes_counted {
                "a resource limit on the user's processes".into()
            } else {
                "the kernel does not count processes against root, which runs Switchboard".into()
            },
        },
    ];
    if !network {
        out.push(Protection {
            what: "the network (TCP, UDP, DNS)",
            enforced: sandboxed,
            how: either(4, "seccomp (no socket)"),
        });
    }
    out
}
