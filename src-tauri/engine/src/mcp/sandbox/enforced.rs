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
/// ABI `abi` (0: none at all, then nothing is enforced).
pub fn protections(abi: i32, network: bool) -> Vec<Protection> {
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
            how: landlock(1),
        },
        Protection {
            what: "truncating files it may only read",
            enforced: sandboxed,
            how: either(3, "seccomp"),
        },
        Protection {
            what: "Unix sockets by path (session bus, ssh-agent, Docker)",
            enforced: sandboxed,
            how: if network && has(9) {
                "Landlock ABI 9 (only in folders it may write)".into()
            } else {
                either(9, "seccomp (no Unix socket)")
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
