//! The filters run through a small classic-BPF interpreter (the instructions seccomp programs
//! use), so each rule is checked as the kernel would apply it; the probe server
//! (`tests/it/sandbox/probe.rs`) then checks them in a real sandbox.

use super::*;

const NATIVE: u32 = 0;

/// What the kernel would do with the call: the filter's return value.
fn run(program: &[libc::sock_filter], arch: u32, nr: i64, args: [u64; 6]) -> u32 {
    let arch = if arch == NATIVE { audit_arch() } else { arch };
    // struct seccomp_data, as words
    let mut data = vec![nr as u32, arch, 0, 0];
    for a in args {
        data.push(a as u32);
        data.push((a >> 32) as u32);
    }
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let i = program[pc];
        let code = i.code as u32;
        pc += 1;
        match code {
            c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => acc = data[i.k as usize / 4],
            c if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => acc &= i.k,
            c if c == libc::BPF_RET | libc::BPF_K => return i.k,
            c if c == libc::BPF_JMP | libc::BPF_JA => pc += i.k as usize,
            c if c & 0x07 == libc::BPF_JMP => {
                let taken = match c & 0xf0 {
                    x if x == libc::BPF_JEQ => acc == i.k,
                    x if x == libc::BPF_JGT => acc > i.k,
                    x if x == libc::BPF_JGE => acc >= i.k,
                    x if x == libc::BPF_JSET => acc & i.k != 0,
                    other => panic!("jump {other:#x}"),
                };
                pc += if taken { i.jt } else { i.jf } as usize;
            }
            other => panic!("instruction {other:#x}"),
        }
    }
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

fn shape(network: bool, abi: i32, supervised: bool) -> Shape {
    Shape {
        net: if network { Net::On } else { Net::Off },
        abi,
        supervised,
    }
}

fn call(program: &[libc::sock_filter], nr: i64, args: &[u64]) -> u32 {
    let mut a = [0u64; 6];
    a[..args.len()].copy_from_slice(args);
    run(program, NATIVE, nr, a)
}

#[test]
fn what_servers_need_runs_and_the_rest_is_refused() {
    let f = allow_list(shape(false, 7, true)).unwrap();
    for nr in [
        libc::SYS_read,
        libc::SYS_openat,
        libc::SYS_mmap,
        libc::SYS_futex,
        libc::SYS_execve,
        libc::SYS_epoll_pwait,
        libc::SYS_getrandom,
        libc::SYS_rt_sigaction,
    ] {
        assert_eq!(call(&f, nr, &[]), ALLOW, "{nr}");
    }
    for nr in [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_msgget,
        libc::SYS_semget,
        libc::SYS_mq_open,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_kcmp,
        libc::SYS_pidfd_getfd,
        libc::SYS_name_to_handle_at,
        libc::SYS_open_by_handle_at,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_fremovexattr,
        libc::SYS_chroot,
        libc::SYS_reboot,
        libc::SYS_init_module,
        libc::SYS_syslog,
        libc::SYS_acct,
        libc::SYS_swapon,
        libc::SYS_settimeofday,
    ] {
        assert_eq!(call(&f, nr, &[]), EPERM, "{nr}");
    }
    // calls newer than the filter knows fail as on a kernel without them (the C library then
    // uses an older one): setxattrat, removexattrat, listmount, and numbers to come; those it
    // allows pass
    for nr in [463, 466, 458, 500, 1000] {
        assert_eq!(call(&f, nr, &[]), ENOSYS, "{nr}");
    }
    assert_eq!(call(&f, libc::SYS_mseal, &[]), ALLOW);
    assert_eq!(call(&f, SYS_FCHMODAT2, &[]), ALLOW);
    // clone3's flags are in memory: ENOSYS, so the C library uses clone
    assert_eq!(call(&f, libc::SYS_clone3, &[]), ENOSYS);
    // clone: threads and processes, no namespace
    let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
    assert_eq!(call(&f, libc::SYS_clone, &[thread]), ALLOW);
    assert_eq!(call(&f, libc::SYS_clone, &[libc::SIGCHLD as u64]), ALLOW);
    for ns in [
        libc::CLONE_PARENT,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWIPC,
    ] {
        assert_eq!(
            call(&f, libc::SYS_clone, &[libc::SIGCHLD as u64 | ns as u64]),
            EPERM
        );
    }
    // a call of another architecture, and x32's numbers, never reach the rules
    assert_ne!(run(&f, 3 | 0x4000_0000, 1, [0; 6]), ALLOW);
    #[cfg(target_arch = "x86_64")]
    assert_eq!(call(&f, 0x4000_0000 + libc::SYS_socket, &[]), EPERM);
}

#[test]
fn without_all_of_the_network_connecting_and_binding_are_the_hosts() {
    let inet = libc::AF_INET as u64;
    let (stream, dgram) = (libc::SOCK_STREAM as u64, libc::SOCK_DGRAM as u64);
    let netlink = libc::AF_NETLINK as u64;
    let route = libc::NETLINK_ROUTE as u64;
    for net in [Net::Off, Net::Hosts] {
        let s = Shape {
            net,
            abi: 7,
            supervised: true,
        };
        let f = allow_list(s).unwrap();
        let handed = handed_over(s);
        // TCP sockets, whose connect and bind go to the host
        assert_eq!(call(&f, libc::SYS_socket, &[inet, stream]), ALLOW);
        assert_eq!(call(&f, libc::SYS_socket, &[inet, dgram]), EPERM);
        for nr in [libc::SYS_connect, libc::SYS_bind] {
            assert_eq!(call(&f, nr, &[3, 0x1000, 16]), ALLOW);
            assert_eq!(call(&handed, nr, &[]), libc::SECCOMP_RET_USER_NOTIF);
        }
        // nothing sent to an address, no TCP fast open
        assert_eq!(call(&f, libc::SYS_sendto, &[3, 0x1000, 5, 0, 0, 0]), ALLOW);
        assert_eq!(
            call(&f, libc::SYS_sendto, &[3, 0x1000, 5, 0, 0x2000, 16]),
            EPERM
        );
        let fast = libc::MSG_FASTOPEN as u64;
        assert_eq!(
            call(&f, libc::SYS_sendto, &[3, 0x1000, 5, fast, 0, 0]),
            EPERM
        );
        assert_eq!(call(&f, libc::SYS_sendmsg, &[3, 0x1000, 0]), ALLOW);
        assert_eq!(call(&f, libc::SYS_sendmsg, &[3, 0x1000, fast]), EPERM);
        assert_eq!(call(&f, libc::SYS_sendmmsg, &[3, 0x1000, 1, fast]), EPERM);
        // listen too (on a socket never bound it binds to every address); no routing header
        assert_eq!(call(&f, libc::SYS_listen, &[3, 5]), ALLOW);
        assert_eq!(
            call(&handed, libc::SYS_listen, &[]),
            libc::SECCOMP_RET_USER_NOTIF
        );
        let v6 = libc::IPPROTO_IPV6 as u64;
        assert_eq!(call(&f, libc::SYS_setsockopt, &[3, v6, 57]), EPERM);
        assert_eq!(call(&f, libc::SYS_setsockopt, &[3, v6, 9]), EPERM);
        assert_eq!(call(&f, libc::SYS_setsockopt, &[3, v6, 26]), ALLOW);
        assert_eq!(
            call(&f, libc::SYS_setsockopt, &[3, 0, libc::IP_OPTIONS as u64]),
            EPERM
        );
        assert_eq!(
            call(&f, libc::SYS_setsockopt, &[3, 1, libc::SO_KEEPALIVE as u64]),
            ALLOW
        );
        // the routing table only for some hosts
        let want = if net == Net::Hosts { ALLOW } else { EPERM };
        assert_eq!(call(&f, libc::SYS_socket, &[netlink, 3, route]), want);
    }
    // with all of it, the kernel has them; without supervision, no socket at all
    let on = Shape {
        net: Net::On,
        abi: 7,
        supervised: true,
    };
    assert_eq!(call(&handed_over(on), libc::SYS_connect, &[]), ALLOW);
    let alone = allow_list(shape(false, 7, false)).unwrap();
    assert_eq!(call(&alone, libc::SYS_socket, &[inet, stream]), EPERM);
}

#[test]
fn sockets_are_only_of_the_families_the_network_setting_allows() {
    let inet = libc::AF_INET as u64;
    let stream = libc::SOCK_STREAM as u64;
    let off = allow_list(shape(false, 7, false)).unwrap();
    for family in [
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_UNIX,
        libc::AF_NETLINK,
    ] {
        assert_eq!(
            call(&off, libc::SYS_socket, &[family as u64, stream]),
            EPERM
        );
    }
    let on = allow_list(shape(true, 7, true)).unwrap();
    assert_eq!(call(&on, libc::SYS_socket, &[inet, stream]), ALLOW);
    let cloexec = (libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u64;
    assert_eq!(call(&on, libc::SYS_socket, &[inet, cloexec]), ALLOW);
    // raw IP packets: never
    assert_eq!(
        call(&on, libc::SYS_socket, &[inet, libc::SOCK_RAW as u64]),
        EPERM
    );
    assert_eq!(
        call(
            &on,
            libc::SYS_socket,
            &[libc::AF_INET6 as u64, libc::SOCK_DGRAM as u64]
        ),
        ALLOW
    );
    // the routing table only, of netlink
    let netlink = libc::AF_NETLINK as u64;
    let raw = libc::SOCK_RAW as u64;
    assert_eq!(
        call(
            &on,
            libc::SYS_socket,
            &[netlink, raw, libc::NETLINK_ROUTE as u64]
        ),
        ALLOW
    );
    assert_eq!(
        call(
            &on,
            libc::SYS_socket,
            &[netlink, raw, libc::NETLINK_AUDIT as u64]
        ),
        EPERM
    );
    for family in [
        libc::AF_UNIX,
        libc::AF_PACKET,
        libc::AF_ALG,
        libc::AF_VSOCK,
        libc::AF_BLUETOOTH,
        libc::AF_KEY,
        libc::AF_XDP,
    ] {
        assert_eq!(call(&on, libc::SYS_socket, &[family as u64, stream]), EPERM);
    }
    // Unix sockets where Landlock confines them to the folders it may write
    let scoped = allow_list(shape(true, UNIX_SCOPED_ABI, true)).unwrap();
    assert_eq!(
        call(&scoped, libc::SYS_socket, &[libc::AF_UNIX as u64, stream]),
        ALLOW
    );
    // socket pairs: stream and seqpacket, never datagram (nor raw, which becomes one)
    for f in [&off, &on, &scoped] {
        let pair = |t: i32| call(f, libc::SYS_socketpair, &[libc::AF_UNIX as u64, t as u64]);
        assert_eq!(pair(libc::SOCK_STREAM | libc::SOCK_CLOEXEC), ALLOW);
        assert_eq!(pair(libc::SOCK_SEQPACKET), ALLOW);
        assert_eq!(pair(libc::SOCK_DGRAM), EPERM);
        assert_eq!(pair(libc::SOCK_RAW | libc::SOCK_NONBLOCK), EPERM);
    }
}

#[test]
fn arguments_that_reach_outside_are_refused() {
    let f = allow_list(shape(true, 7, true)).unwrap();
    // typing into a terminal; a high word does not hide the request
    assert_eq!(call(&f, libc::SYS_ioctl, &[0, libc::TIOCSTI]), EPERM);
    assert_eq!(
        call(&f, libc::SYS_ioctl, &[0, 1 << 32 | libc::TIOCSTI]),
        EPERM
    );
    assert_eq!(call(&f, libc::SYS_ioctl, &[0, TIOCLINUX]), EPERM);
    assert_eq!(call(&f, libc::SYS_ioctl, &[0, libc::FIONREAD]), ALLOW);
    // another process's limits, priority or CPUs
    assert_eq!(call(&f, libc::SYS_prlimit64, &[0]), ALLOW);
    assert_eq!(call(&f, libc::SYS_prlimit64, &[1234]), EPERM);
    assert_eq!(call(&f, libc::SYS_setpriority, &[0, 0, 10]), ALLOW);
    assert_eq!(call(&f, libc::SYS_setpriority, &[0, 1234, 10]), EPERM);
    // all of the user's processes, or a group: never
    let (prio_pgrp, prio_user) = (libc::PRIO_PGRP as u64, libc::PRIO_USER as u64);
    assert_eq!(call(&f, libc::SYS_setpriority, &[prio_user, 0, 19]), EPERM);
    assert_eq!(call(&f, libc::SYS_setpriority, &[prio_pgrp, 0, 19]), EPERM);
    assert_eq!(call(&f, libc::SYS_ioprio_set, &[2, 0, 0]), EPERM);
    // a file's attribute flags, a lease
    assert_eq!(call(&f, libc::SYS_ioctl, &[3, 0x4008_6602]), EPERM);
    assert_eq!(call(&f, libc::SYS_ioctl, &[3, 0x401c_5820]), EPERM);
    assert_eq!(
        call(&f, libc::SYS_fcntl, &[3, libc::F_SETLEASE as u64, 1]),
        EPERM
    );
    assert_eq!(
        call(&f, libc::SYS_fcntl, &[3, libc::F_SETFD as u64, 1]),
        ALLOW
    );
    // more seccomp filters, never one with a listener
    assert_eq!(call(&f, libc::SYS_seccomp, &[1, 0, 0x1000]), ALLOW);
    let listener = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
    assert_eq!(call(&f, libc::SYS_seccomp, &[1, listener, 0x1000]), EPERM);
    assert_eq!(call(&f, libc::SYS_sched_setaffinity, &[1234]), EPERM);
    // personality: only asked, or Linux
    assert_eq!(call(&f, libc::SYS_personality, &[0xffff_ffff]), ALLOW);
    assert_eq!(call(&f, libc::SYS_personality, &[0x0040000]), EPERM);
    // truncating by path: Landlock's from ABI 3, refused below
    assert_eq!(call(&f, libc::SYS_truncate, &[]), ALLOW);
    let old = allow_list(shape(true, 2, true)).unwrap();
    assert_eq!(call(&old, libc::SYS_truncate, &[]), EPERM);
}

#[test]
fn metadata_and_sessions_go_to_the_host_when_it_supervises() {
    let handed = handed_over(shape(true, 7, true));
    let supervised = allow_list(shape(false, 7, true)).unwrap();
    for (nr, name) in SUPERVISED {
        // the allow-list lets them through to the host's filter, which hands them over
        assert_eq!(call(&supervised, *nr, &[1, 1]), ALLOW, "{name}");
        assert_eq!(
            call(&handed, *nr, &[]),
            libc::SECCOMP_RET_USER_NOTIF,
            "{name}"
        );
    }
    for nr in [libc::SYS_read, libc::SYS_openat, libc::SYS_keyctl] {
        assert_eq!(call(&handed, nr, &[]), ALLOW);
    }
    // another architecture's calls are the allow-list's to refuse
    assert_eq!(
        run(&handed, 3 | 0x4000_0000, libc::SYS_fchmodat, [0; 6]),
        ALLOW
    );
    // without the host: by path refused, on a descriptor (a file it could open) allowed
    let alone = allow_list(shape(false, 7, false)).unwrap();
    assert_eq!(call(&alone, libc::SYS_fchmodat, &[]), EPERM);
    assert_eq!(call(&alone, libc::SYS_fchownat, &[]), EPERM);
    assert_eq!(call(&alone, libc::SYS_fchmod, &[3, 0o644]), ALLOW);
    assert_eq!(call(&alone, libc::SYS_utimensat, &[3, 0, 0, 0]), ALLOW);
    assert_eq!(
        call(&alone, libc::SYS_utimensat, &[3, 0x7fff_0000, 0, 0]),
        EPERM
    );
    assert_eq!(call(&alone, libc::SYS_setsid, &[]), ALLOW);
}

#[test]
fn the_allow_list_has_nothing_it_must_not() {
    let names: Vec<&str> = allowed_names().collect();
    for forbidden in [
        "SYS_keyctl",
        "SYS_ptrace",
        "SYS_io_uring_setup",
        "SYS_shmget",
        "SYS_unshare",
        "SYS_chmod",
        "SYS_fchmodat",
        "SYS_socket",
        "SYS_socketpair",
        "SYS_clone",
        "SYS_clone3",
        "SYS_ioctl",
        "SYS_seccomp",
        "SYS_fcntl",
    ] {
        assert!(!names.contains(&forbidden), "{forbidden}");
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "listed twice");
}
