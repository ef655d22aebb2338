//! The seccomp filters of a sandboxed server: an allow-list (every system call not in
//! [`ALLOWED`] fails with EPERM) and, where the host supervises, a second filter that hands the
//! calls of [`SUPERVISED`] to the host (`supervise.rs`) instead of the kernel.
//!
//! The allow-list is what servers need, read from systemd's `@system-service` set and Flatpak's
//! and Chromium's policies, and from what Node, npm, Python and uv were seen calling. What
//! `@system-service` allows and this does not: the kernel keyrings (`@keyring`: a server would
//! read the user's session keyring), System V IPC and POSIX message queues (another process's
//! shared memory), `process_vm_*`, `ptrace`, `kcmp`, `pidfd_getfd`, namespaces (`unshare`,
//! `setns`, `clone` with a `CLONE_NEW*` flag), `io_uring_*` (its operations make sockets and open
//! files without the system calls this filter sees), `userfaultfd`, `name_to_handle_at` and
//! `open_by_handle_at`, `mq_*`, and the changes to a file's metadata by path or descriptor
//! (`chmod`, `chown`, `utimes` and their kin: Landlock has no right for them; the host does them
//! for the server inside its write grants, see [`SUPERVISED`]; extended attributes are never
//! written). Arguments are checked where a call can reach outside: `socket` only for the families
//! the network setting allows, `socketpair` only for stream and seqpacket Unix pairs (a datagram
//! end can be pointed at any socket by path), `ioctl` never `TIOCSTI` or `TIOCLINUX`,
//! `personality` only to ask or to stay Linux, `prlimit64`, `setpriority` and the scheduler's
//! setters only on the caller itself. `clone3` fails with ENOSYS (its flags are in memory, out of
//! a filter's sight), so the C libraries fall back to `clone`, whose flags are checked.
//!
//! `ENOSYS` also answers calls newer than the list knows. To let servers make a new system call:
//! its row in `ALLOWED` (or a rule in `allow_list` when an argument matters), a case in
//! `seccomp/tests.rs`, and the probe (`tests/it/sandbox/probe.rs`) if it could reach outside.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

/// A system call by number, with its name (for the tests and the docs).
pub type Call = (i64, &'static str);

macro_rules! calls {
    ($($name:ident),* $(,)?) => {
        &[$((libc::$name, stringify!($name))),*]
    };
}

/// Allowed as they are, on every architecture.
const ALLOWED: &[Call] = calls![
    // memory
    SYS_brk,
    SYS_mmap,
    SYS_munmap,
    SYS_mremap,
    SYS_mprotect,
    SYS_madvise,
    SYS_mincore,
    SYS_msync,
    SYS_mlock,
    SYS_mlock2,
    SYS_munlock,
    SYS_mlockall,
    SYS_munlockall,
    SYS_membarrier,
    SYS_mbind,
    SYS_get_mempolicy,
    SYS_set_mempolicy,
    SYS_memfd_create,
    SYS_pkey_alloc,
    SYS_pkey_free,
    SYS_pkey_mprotect,
    SYS_mseal,
    // reading and writing descriptors
    SYS_read,
    SYS_readv,
    SYS_pread64,
    SYS_preadv,
    SYS_preadv2,
    SYS_write,
    SYS_writev,
    SYS_pwrite64,
    SYS_pwritev,
    SYS_pwritev2,
    SYS_lseek,
    SYS_close,
    SYS_close_range,
    SYS_dup,
    SYS_dup3,
    SYS_flock,
    SYS_fsync,
    SYS_fdatasync,
    SYS_sync,
    SYS_syncfs,
    SYS_sync_file_range,
    SYS_fadvise64,
    SYS_readahead,
    SYS_fallocate,
    SYS_ftruncate,
    SYS_copy_file_range,
    SYS_sendfile,
    SYS_splice,
    SYS_tee,
    SYS_vmsplice,
    SYS_pipe2,
    // the file system (Landlock decides where)
    SYS_openat,
    SYS_openat2,
    SYS_newfstatat,
    SYS_fstat,
    SYS_statx,
    SYS_statfs,
    SYS_fstatfs,
    SYS_faccessat,
    SYS_faccessat2,
    SYS_getcwd,
    SYS_chdir,
    SYS_fchdir,
    SYS_getdents64,
    SYS_readlinkat,
    SYS_mkdirat,
    SYS_mknodat,
    SYS_unlinkat,
    SYS_renameat,
    SYS_renameat2,
    SYS_linkat,
    SYS_symlinkat,
    SYS_umask,
    SYS_getxattr,
    SYS_lgetxattr,
    SYS_fgetxattr,
    SYS_listxattr,
    SYS_llistxattr,
    SYS_flistxattr,
    SYS_inotify_init1,
    SYS_inotify_add_watch,
    SYS_inotify_rm_watch,
    // waiting for events
    SYS_epoll_create1,
    SYS_epoll_ctl,
    SYS_epoll_pwait,
    SYS_epoll_pwait2,
    SYS_ppoll,
    SYS_pselect6,
    SYS_eventfd2,
    SYS_signalfd4,
    SYS_timerfd_create,
    SYS_timerfd_settime,
    SYS_timerfd_gettime,
    // the older asynchronous I/O (not io_uring)
    SYS_io_setup,
    SYS_io_destroy,
    SYS_io_submit,
    SYS_io_cancel,
    SYS_io_getevents,
    // the network (`socket`, `socketpair`, `connect`, `bind` and sending to an address are
    // checked: [`allow_list`])
    SYS_accept,
    SYS_accept4,
    SYS_getsockname,
    SYS_getpeername,
    SYS_getsockopt,
    SYS_recvfrom,
    SYS_recvmsg,
    SYS_recvmmsg,
    SYS_shutdown,
    // processes and threads (`clone` is checked)
    SYS_execve,
    SYS_execveat,
    SYS_exit,
    SYS_exit_group,
    SYS_wait4,
    SYS_waitid,
    SYS_kill,
    SYS_tkill,
    SYS_tgkill,
    SYS_rt_sigqueueinfo,
    SYS_rt_tgsigqueueinfo,
    SYS_pidfd_open,
    SYS_pidfd_send_signal,
    SYS_getpid,
    SYS_getppid,
    SYS_gettid,
    SYS_getpgid,
    SYS_getsid,
    SYS_getuid,
    SYS_geteuid,
    SYS_getgid,
    SYS_getegid,
    SYS_getresuid,
    SYS_getresgid,
    SYS_getgroups,
    SYS_setuid,
    SYS_setgid,
    SYS_setreuid,
    SYS_setregid,
    SYS_setresuid,
    SYS_setresgid,
    SYS_setfsuid,
    SYS_setfsgid,
    SYS_setgroups,
    SYS_capget,
    SYS_capset,
    SYS_prctl,
    SYS_landlock_create_ruleset,
    SYS_landlock_add_rule,
    SYS_landlock_restrict_self,
    SYS_set_tid_address,
    SYS_set_robust_list,
    SYS_get_robust_list,
    SYS_rseq,
    SYS_futex,
    SYS_futex_waitv,
    SYS_restart_syscall,
    SYS_getrusage,
    SYS_times,
    SYS_getrlimit,
    SYS_setrlimit,
    SYS_getpriority,
    SYS_sched_yield,
    SYS_sched_getaffinity,
    SYS_sched_getparam,
    SYS_sched_getscheduler,
    SYS_sched_getattr,
    SYS_sched_get_priority_max,
    SYS_sched_get_priority_min,
    SYS_sched_rr_get_interval,
    SYS_ioprio_get,
    SYS_getcpu,
    // signals
    SYS_rt_sigaction,
    SYS_rt_sigprocmask,
    SYS_rt_sigreturn,
    SYS_rt_sigpending,
    SYS_rt_sigsuspend,
    SYS_rt_sigtimedwait,
    SYS_sigaltstack,
    // time
    SYS_clock_gettime,
    SYS_clock_getres,
    SYS_clock_nanosleep,
    SYS_gettimeofday,
    SYS_nanosleep,
    SYS_getitimer,
    SYS_setitimer,
    SYS_timer_create,
    SYS_timer_settime,
    SYS_timer_gettime,
    SYS_timer_getoverrun,
    SYS_timer_delete,
    // the system, read only
    SYS_uname,
    SYS_sysinfo,
    SYS_getrandom,
];

/// The calls that exist only on x86-64 (the generic table has their `*at` forms).
#[cfg(target_arch = "x86_64")]
const ALLOWED_X86_64: &[Call] = calls![
    SYS_arch_prctl,
    SYS_open,
    SYS_creat,
    SYS_stat,
    SYS_lstat,
    SYS_access,
    SYS_readlink,
    SYS_mkdir,
    SYS_rmdir,
    SYS_unlink,
    SYS_rename,
    SYS_link,
    SYS_symlink,
    SYS_mknod,
    SYS_getdents,
    SYS_pipe,
    SYS_dup2,
    SYS_poll,
    SYS_select,
    SYS_epoll_create,
    SYS_epoll_wait,
    SYS_eventfd,
    SYS_signalfd,
    SYS_inotify_init,
    SYS_fork,
    SYS_vfork,
    SYS_getpgrp,
    SYS_alarm,
    SYS_pause,
    SYS_time,
];

#[cfg(not(target_arch = "x86_64"))]
const ALLOWED_X86_64: &[Call] = &[];

/// Handed to the host when it supervises (`supervise.rs`): the changes to a file's metadata,
/// done by the host only inside the server's write grants; and the calls that start a session or
/// a process group, which the host notes so that whatever the server started ends with it.
/// Without supervision the metadata calls by path are refused, those on a descriptor (a file the
/// server could open, so one Landlock allowed) run, and the others run as they are.
pub const SUPERVISED: &[Call] = &[
    (libc::SYS_fchmod, "fchmod"),
    (libc::SYS_fchmodat, "fchmodat"),
    (SYS_FCHMODAT2, "fchmodat2"),
    (libc::SYS_fchown, "fchown"),
    (libc::SYS_fchownat, "fchownat"),
    (libc::SYS_utimensat, "utimensat"),
    (libc::SYS_setsid, "setsid"),
    (libc::SYS_setpgid, "setpgid"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chmod, "chmod"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chown, "chown"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_lchown, "lchown"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_utime, "utime"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_utimes, "utimes"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_futimesat, "futimesat"),
];

/// `fchmodat2` (Linux 6.6; not in libc for every target): the same number everywhere.
pub const SYS_FCHMODAT2: i64 = 452;

/// The first system call number of Linux 6.6 and later that this filter does not know by name
/// (`cachestat`, 451): from there on, calls it does not allow fail with ENOSYS, as for a kernel
/// that has none of them, so a C library falls back to the older call it has (systemd does the
/// same). Known ones below fail with EPERM.
const NEWER_CALLS: u32 = 451;

/// What `clone` may not do: make namespaces (`CLONE_NEWTIME` is an exit signal bit to `clone`),
/// or make its child the host's (`CLONE_PARENT`: a sibling of the server, left to the host to
/// reap).
const CLONE_NEW: u64 = (libc::CLONE_PARENT
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u64;

/// The IPv6 socket options that route packets (`IPV6_2292RTHDR`, `IPV6_2292PKTOPTIONS`,
/// `IPV6_NEXTHOP`, `IPV6_RTHDR`).
const ROUTING_OPTIONS_V6: &[u64] = &[5, 6, 9, 57];

/// The ioctls that set a file's attribute flags: `FS_IOC_SETFLAGS` (and its 32-bit twin) and
/// `FS_IOC_FSSETXATTR`.
const FILE_FLAGS_IOCTLS: &[u64] = &[0x4008_6602, 0x4004_6602, 0x401c_5820];

/// `IOPRIO_WHO_PROCESS`.
const IOPRIO_WHO_PROCESS: u64 = 1;

/// `TIOCLINUX` (not in libc for every target): the Linux console's ioctl that can paste the
/// selection into its input.
const TIOCLINUX: u64 = 0x541C;

/// What a server may reach of the network, as the filters see it (`network.rs` decides where).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// Nothing: where the host supervises, TCP sockets whose `connect` and `bind` go to the
    /// host (which refuses them and notes where they went); else no socket at all.
    Off,
    /// Some hosts: TCP sockets whose `connect` and `bind` go to the host, which does them when
    /// allowed.
    Hosts,
    /// All of it.
    On,
}

/// The socket families (and a protocol, or the types) a server may open: with the network,
/// IPv4, IPv6 and the kernel's routing table (`NETLINK_ROUTE`: the C library reads the
/// interfaces' addresses there for `getaddrinfo`), and Unix sockets where Landlock confines them
/// to its folders (`unix_scoped`); with some hosts (or none, supervised), IPv4 and IPv6 streams
/// only (no datagram: its destination is in memory a filter cannot read), and the routing table
/// for some hosts; without the network and supervision, none.
fn socket_families(shape: Shape) -> Vec<(u64, Option<u64>, &'static [i32])> {
    const IP: &[i32] = &[libc::SOCK_STREAM, libc::SOCK_DGRAM];
    const STREAM: &[i32] = &[libc::SOCK_STREAM];
    let (inet, inet6, netlink) = (
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
        libc::AF_NETLINK as u64,
    );
    let route = Some(libc::NETLINK_ROUTE as u64);
    match (shape.net, shape.supervised) {
        (Net::On, _) => {
            let mut out = vec![
                (inet, None, IP),
                (inet6, None, IP),
                (netlink, route, &[][..]),
            ];
            if shape.abi >= UNIX_SCOPED_ABI {
                out.push((libc::AF_UNIX as u64, None, &[][..]));
            }
            out
        }
        (Net::Hosts, true) => vec![
            (inet, None, STREAM),
            (inet6, None, STREAM),
            (netlink, route, &[][..]),
        ],
        (Net::Off, true) => vec![(inet, None, STREAM), (inet6, None, STREAM)],
        (Net::Hosts | Net::Off, false) => vec![],
    }
}

/// What the filters are made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub net: Net,
    /// The kernel's Landlock ABI.
    pub abi: i32,
    /// The host supervises [`SUPERVISED`] (else they are refused or allowed, see there).
    pub supervised: bool,
}

/// The Landlock ABI from which connecting to a Unix socket by path is confined to the folders
/// a server may write (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`).
pub const UNIX_SCOPED_ABI: i32 = 9;

/// The allow-list filter (every call not allowed fails with EPERM).
pub fn allow_list(shape: Shape) -> Result<Vec<libc::sock_filter>, SandboxError> {
    let sc = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    // arguments the kernel reads as 32-bit (int, unsigned int) are compared on their low half
    let arg = |i: u8, op: SeccompCmpOp, v: u64| {
        SeccompCondition::new(i, SeccompCmpArgLen::Dword, op, v).map_err(sc)
    };
    let rule = |c: Vec<SeccompCondition>| SeccompRule::new(c).map_err(sc);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (nr, _) in ALLOWED.iter().chain(ALLOWED_X86_64) {
        rules.insert(*nr, vec![]);
    }
    // socket(family, type, protocol); the type without SOCK_CLOEXEC and SOCK_NONBLOCK (the
    // kernel's SOCK_TYPE_MASK, 0xf)
    let kind = |t: i32| arg(1, SeccompCmpOp::MaskedEq(0xf), t as u64);
    let mut socket = Vec::new();
    for (family, protocol, types) in socket_families(shape) {
        let f = || arg(0, SeccompCmpOp::Eq, family);
        match protocol {
            Some(p) => socket.push(rule(vec![f()?, arg(2, SeccompCmpOp::Eq, p)?])?),
            // IP: streams (and datagrams, ICMP's "ping" sockets too), never raw packets
            None if !types.is_empty() => {
                for t in types {
                    socket.push(rule(vec![f()?, kind(*t)?])?);
                }
            }
            None => socket.push(rule(vec![f()?])?),
        }
    }
    // connecting, binding and sending to an address: with the network as they are; else
    // `connect` and `bind` are the host's (supervised) and nothing is sent to an address (a TCP
    // fast open connects without `connect`)
    let sending = [libc::SYS_sendto, libc::SYS_sendmsg, libc::SYS_sendmmsg];
    let hands_network = shape.supervised && shape.net != Net::On;
    if hands_network {
        // connect, bind and listen are the host's (listen on a socket never bound binds it to
        // every address, unseen)
        rules.insert(libc::SYS_connect, vec![]);
        rules.insert(libc::SYS_bind, vec![]);
        rules.insert(libc::SYS_listen, vec![]);
        // no option that sends its packets elsewhere than the address the host connected it to:
        // an IPv6 routing header (segment routing needs no privilege), a next hop, IPv4 options
        let level = |l: i32| arg(1, SeccompCmpOp::Eq, l as u64);
        let not = |o: u64| arg(2, SeccompCmpOp::Ne, o);
        let mut v6 = vec![level(libc::IPPROTO_IPV6)?];
        for o in ROUTING_OPTIONS_V6 {
            v6.push(not(*o)?);
        }
        rules.insert(
            libc::SYS_setsockopt,
            vec![
                rule(vec![
                    arg(1, SeccompCmpOp::Ne, libc::IPPROTO_IPV6 as u64)?,
                    arg(1, SeccompCmpOp::Ne, libc::IPPROTO_IP as u64)?,
                ])?,
                rule(v6)?,
                rule(vec![
                    level(libc::IPPROTO_IP)?,
                    not(libc::IP_OPTIONS as u64)?,
                ])?,
            ],
        );
        let no_fast_open = |i: u8| arg(i, SeccompCmpOp::MaskedEq(libc::MSG_FASTOPEN as u64), 0);
        let no_address =
            SeccompCondition::new(4, SeccompCmpArgLen::Qword, SeccompCmpOp::Eq, 0).map_err(sc)?;
        rules.insert(
            libc::SYS_sendto,
            vec![rule(vec![no_fast_open(3)?, no_address])?],
        );
        rules.insert(libc::SYS_sendmsg, vec![rule(vec![no_fast_open(2)?])?]);
        rules.insert(libc::SYS_sendmmsg, vec![rule(vec![no_fast_open(3)?])?]);
    } else {
        for nr in [
            libc::SYS_connect,
            libc::SYS_bind,
            libc::SYS_listen,
            libc::SYS_setsockopt,
        ]
        .into_iter()
        .chain(sending)
        {
            rules.insert(nr, vec![]);
        }
    }
    if !socket.is_empty() {
        rules.insert(libc::SYS_socket, socket);
    }
    // socketpair(AF_UNIX, SOCK_STREAM | SOCK_SEQPACKET, …), whatever SOCK_CLOEXEC and
    // SOCK_NONBLOCK (SOCK_TYPE_MASK 0xf): a raw one is made a datagram one by the kernel
    let unix = || arg(0, SeccompCmpOp::Eq, libc::AF_UNIX as u64);
    rules.insert(
        libc::SYS_socketpair,
        vec![
            rule(vec![unix()?, kind(libc::SOCK_STREAM)?])?,
            rule(vec![unix()?, kind(libc::SOCK_SEQPACKET)?])?,
        ],
    );
    // ioctl: never typing into a terminal, nor a file's attribute flags (immutable, append
    // only, no dump: Landlock does not see them, so a file it may only read would get them)
    let mut ioctl = vec![
        arg(1, SeccompCmpOp::Ne, libc::TIOCSTI)?,
        arg(1, SeccompCmpOp::Ne, TIOCLINUX)?,
    ];
    for request in FILE_FLAGS_IOCTLS {
        ioctl.push(arg(1, SeccompCmpOp::Ne, *request)?);
    }
    rules.insert(libc::SYS_ioctl, vec![rule(ioctl)?]);
    rules.insert(
        libc::SYS_clone,
        vec![rule(vec![arg(0, SeccompCmpOp::MaskedEq(CLONE_NEW), 0)?])?],
    );
    // personality(PER_LINUX), personality(PER_LINUX32), personality(0xffffffff): ask
    rules.insert(
        libc::SYS_personality,
        [0u64, 0x0008, 0xffff_ffff]
            .into_iter()
            .map(|p| rule(vec![arg(0, SeccompCmpOp::Eq, p)?]))
            .collect::<Result<_, _>>()?,
    );
    // on itself only (pid 0, or `who` 0)
    let own = |i: u8| -> Result<Vec<SeccompRule>, SandboxError> {
        Ok(vec![rule(vec![arg(i, SeccompCmpOp::Eq, 0)?])?])
    };
    for nr in [
        libc::SYS_prlimit64,
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setattr,
    ] {
        rules.insert(nr, own(0)?);
    }
    // truncate by path: Landlock's from ABI 3, refused below
    if shape.abi >= 3 {
        rules.insert(libc::SYS_truncate, vec![]);
    }
    // setpriority(PRIO_PROCESS, 0, …), ioprio_set(IOPRIO_WHO_PROCESS, 0, …): itself, never a
    // process group or all of its user's processes
    rules.insert(
        libc::SYS_setpriority,
        vec![rule(vec![
            arg(0, SeccompCmpOp::Eq, libc::PRIO_PROCESS as u64)?,
            arg(1, SeccompCmpOp::Eq, 0)?,
        ])?],
    );
    rules.insert(
        libc::SYS_ioprio_set,
        vec![rule(vec![
            arg(0, SeccompCmpOp::Eq, IOPRIO_WHO_PROCESS)?,
            arg(1, SeccompCmpOp::Eq, 0)?,
        ])?],
    );
    // more filters of its own, never one with a listener: a process that outlived the host
    // would answer its own handed-over calls
    rules.insert(
        libc::SYS_seccomp,
        vec![rule(vec![arg(
            1,
            SeccompCmpOp::MaskedEq(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER),
            0,
        )?])?],
    );
    // fcntl: never a lease on a file (it would hold up others' writes to a file it may only read)
    rules.insert(
        libc::SYS_fcntl,
        vec![rule(vec![arg(
            1,
            SeccompCmpOp::Ne,
            libc::F_SETLEASE as u64,
        )?])?],
    );
    // the metadata calls and sessions: the host's when it supervises (the second filter hands
    // them over; this one must let them through for that), else only on a descriptor
    if shape.supervised {
        for (nr, _) in SUPERVISED {
            rules.insert(*nr, vec![]);
        }
    } else {
        for nr in [
            libc::SYS_fchmod,
            libc::SYS_fchown,
            libc::SYS_setsid,
            libc::SYS_setpgid,
        ] {
            rules.insert(nr, vec![]);
        }
        // utimensat(fd, NULL, …): futimens
        rules.insert(
            libc::SYS_utimensat,
            vec![rule(vec![SeccompCondition::new(
                1,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::Eq,
                0,
            )
            .map_err(sc)?])?],
        );
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(sc)?;
    let rules_for_prelude: BTreeMap<i64, Vec<SeccompRule>> =
        rules.keys().map(|k| (*k, vec![])).collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .map_err(sc)?;
    let program: BpfProgram = filter.try_into().map_err(sc)?;
    let mut out = prelude(&rules_for_prelude);
    // seccompiler's sock_filter is the kernel's struct, as libc's is
    out.extend(program.iter().map(|f| libc::sock_filter {
        code: f.code,
        jt: f.jt,
        jf: f.jf,
        k: f.k,
    }));
    Ok(out)
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

/// `struct seccomp_data`: the call's number at 0, the architecture at 4.
const NR: u32 = 0;
const ARCH: u32 = 4;

/// This architecture's `AUDIT_ARCH_*`.
fn audit_arch() -> u32 {
    const LE64: u32 = 0x8000_0000 | 0x4000_0000;
    if cfg!(target_arch = "x86_64") {
        62 | LE64
    } else if cfg!(target_arch = "aarch64") {
        183 | LE64
    } else if cfg!(target_arch = "riscv64") {
        243 | LE64
    } else {
        0
    }
}

/// Before the allow-list: on x86-64, the x32 calls (numbers with bit 30 set, which the rules
/// would not see) fail with EPERM; on every architecture `clone3` fails with ENOSYS (its flags are
/// in memory: the C library then uses `clone`), and so does every call from [`NEWER_CALLS`] on
/// that `allowed` does not hold. A call of another architecture goes on to seccompiler's own
/// check (which kills it).
fn prelude(allowed: &BTreeMap<i64, Vec<SeccompRule>>) -> Vec<libc::sock_filter> {
    let ld = |k| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, k);
    let ret = |k| stmt(libc::BPF_RET | libc::BPF_K, k);
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | e as u32;
    let jge = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let mut body = vec![ld(NR)];
    if cfg!(target_arch = "x86_64") {
        body.push(jge(X32_SYSCALL_BIT, 0, 1));
        body.push(ret(errno(libc::EPERM)));
    }
    body.push(jump(libc::SYS_clone3 as u32, 0, 1));
    body.push(ret(errno(libc::ENOSYS)));
    // newer calls: those allowed go on to the rules, the others fail with ENOSYS
    let newer: Vec<u32> = allowed
        .keys()
        .map(|nr| *nr as u32)
        .filter(|nr| *nr >= NEWER_CALLS)
        .collect();
    body.push(jge(NEWER_CALLS, 0, (newer.len() + 1) as u8));
    for (i, nr) in newer.iter().enumerate() {
        // allowed: past the remaining checks and the ENOSYS
        body.push(jump(*nr, (newer.len() - i) as u8, 0));
    }
    body.push(ret(errno(libc::ENOSYS)));
    // another architecture: past all of this, to seccompiler's own check
    let mut out = vec![ld(ARCH), jump(audit_arch(), 0, body.len() as u8)];
    out.extend(body);
    out
}

/// The network calls handed to the host when the server may not reach all of the network.
pub const SUPERVISED_NETWORK: &[Call] = &[
    (libc::SYS_connect, "connect"),
    (libc::SYS_bind, "bind"),
    (libc::SYS_listen, "listen"),
];

/// What the host answers for a server of `shape`.
pub fn supervised_calls(shape: Shape) -> Vec<Call> {
    let mut out = SUPERVISED.to_vec();
    if shape.net != Net::On {
        out.extend_from_slice(SUPERVISED_NETWORK);
    }
    out
}

/// The filter that hands [`supervised_calls`] to the host (`SECCOMP_RET_USER_NOTIF`), and lets
/// every other call through to the allow-list. Installed with a listener (`supervise.rs`).
pub fn handed_over(shape: Shape) -> Vec<libc::sock_filter> {
    let ld = |k| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, k);
    let ret = |k| stmt(libc::BPF_RET | libc::BPF_K, k);
    let calls = supervised_calls(shape);
    let n = calls.len();
    let mut out = vec![
        ld(ARCH),
        jump(audit_arch(), 1, 0),
        ret(libc::SECCOMP_RET_ALLOW),
        ld(NR),
    ];
    for (i, (nr, _)) in calls.iter().enumerate() {
        // to the notify return, after the remaining checks and the allow
        let to_notify = (n - i) as u8;
        out.push(jump(*nr as u32, to_notify, 0));
    }
    out.push(ret(libc::SECCOMP_RET_ALLOW));
    out.push(ret(libc::SECCOMP_RET_USER_NOTIF));
    out
}

/// The names of the calls allowed without conditions (for the docs and tests).
pub fn allowed_names() -> impl Iterator<Item = &'static str> {
    ALLOWED.iter().chain(ALLOWED_X86_64).map(|(_, n)| *n)
}

#[cfg(test)]
mod tests;
