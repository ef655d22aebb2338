//! The host's part of a sandbox: the calls the seccomp filter hands over
//! ([`super::seccomp::SUPERVISED`], `SECCOMP_RET_USER_NOTIF`), answered by a thread of the host
//! for each sandboxed server.
//!
//! - **A file's metadata** (`chmod`, `chown`, `utimes` and kin, by path or descriptor): Landlock
//!   has no right for them, so a server could make `~/.ssh/id_rsa` readable to everyone. The host
//!   does the change itself, on the very file the server named (resolved by the host from the
//!   server's working folder or descriptor, never through a magic link of `/proc`), and only when that
//!   file is inside one of the server's write grants; anything else fails with EPERM and is told in the
//!   server's log. Never a set-user-ID or set-group-ID bit. The server's memory is read, never
//!   trusted twice: the call is done on the host's copy of its arguments, not continued (the
//!   man page's warning: a continued call re-reads memory the server may have changed).
//! - **A new session or process group** (`setsid`, `setpgid`): let through, and noted, so that
//!   ending the server ends the groups its processes made too ([`kill_groups`]): a grandchild
//!   that calls `setsid()` does not outlive it.
//! - **Connecting and binding a socket**, when the server may reach none or only some of the
//!   network (`network.rs`): the host takes the server's socket (`pidfd_getfd`) and connects it
//!   where `Network::route` says (the DNS stub, the address asked, or nowhere: EACCES, noted), or
//!   binds it to a loopback address; a connect that takes time is done on a thread of its own.
//!
//! The filter's listener comes from the child through a socket pair before it runs the server
//! (`Handover`); the thread ends when no process of the server is left.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use super::Groups;

/// Whether this kernel and system let the host supervise: the seccomp notification action
/// (Linux 5.0; 5.5 to let a call continue), `openat2` (5.6), and reading a child's memory (Yama's
/// `ptrace_scope` below 2). Without it, [`super::seccomp`] refuses the metadata calls by path.
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let action = libc::SECCOMP_RET_USER_NOTIF;
        let notify = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_GET_ACTION_AVAIL,
                0u32,
                &action as *const u32,
            )
        } == 0;
        // openat2 with a bad size: EINVAL or E2BIG where it exists, ENOSYS where not
        let openat2 = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                std::ptr::null::<u8>(),
                0usize,
            )
        } == 0
            || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS);
        let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(0);
        notify && openat2 && yama < 2
    })
}

/// The two ends of the socket pair the child sends its listener through.
pub struct Handover {
    pub(super) parent: OwnedFd,
    pub(super) child: OwnedFd,
}

impl Handover {
    pub fn new() -> std::io::Result<Handover> {
        let mut fds = [0; 2];
        let made = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if made != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(unsafe {
            Handover {
                parent: OwnedFd::from_raw_fd(fds[0]),
                child: OwnedFd::from_raw_fd(fds[1]),
            }
        })
    }

    /// In the child, after fork: installs `filter` with a listener and sends the listener to the
    /// parent. System calls only (no allocation: the message is built on the stack).
    ///
    /// # Safety
    /// Between fork and exec, with `filter` alive.
    pub(super) unsafe fn install_in_child(
        child: RawFd,
        filter: &[libc::sock_filter],
    ) -> std::io::Result<()> {
        let program = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr() as *mut libc::sock_filter,
        };
        let listener = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as u32,
            &program as *const libc::sock_fprog,
        );
        if listener < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let listener = listener as RawFd;
        // one byte, and the listener as SCM_RIGHTS
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        // CMSG_SPACE(4) is 24 on 64-bit systems; aligned for cmsghdr
        let mut control = [0u64; 4];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), listener);
        let sent = libc::sendmsg(child, &msg, libc::MSG_NOSIGNAL);
        let err = std::io::Error::last_os_error();
        libc::close(listener);
        if sent < 0 {
            return Err(err);
        }
        Ok(())
    }

    /// In the parent, once the child has run the server: the listener it sent.
    pub fn receive(self) -> std::io::Result<OwnedFd> {
        drop(self.child);
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 4];
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let got = unsafe {
            libc::recvmsg(
                self.parent.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            )
        };
        if got < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        if cmsg.is_null()
            || unsafe {
                (*cmsg).cmsg_level != libc::SOL_SOCKET || (*cmsg).cmsg_type != libc::SCM_RIGHTS
            }
        {
            return Err(std::io::Error::other(
                "the sandbox's listener did not arrive",
            ));
        }
        let fd = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>()) };
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// What the supervising thread needs.
pub struct Supervisor {
    pub listener: OwnedFd,
    /// Where its connections may go, when not everywhere.
    pub network: Option<std::sync::Arc<super::network::Network>>,
    /// The server's write grants, resolved (never a device).
    pub write: Vec<PathBuf>,
    pub groups: Groups,
    /// Tells the server's log what the sandbox refused.
    pub report: Box<dyn Fn(String) + Send>,
    /// Its connects under way (each on a thread of its own).
    pub connecting: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// The most connects of one server under way at once.
const MAX_CONNECTING: usize = 64;

/// The most process groups and sessions one server may have made that are still there.
const MAX_GROUPS: usize = 1024;

/// Notes group `g` (made by the process `g`); false when the server already has [`MAX_GROUPS`]
/// that are still there.
fn note_group(groups: &Groups, g: i32) -> bool {
    let mut made = groups.made.lock().unwrap();
    if made.len() >= MAX_GROUPS {
        // forget the ended ones: their leader gone and nobody left in them
        let members = group_members();
        made.retain(|g, leader| leader_alive(leader.as_ref()) || members.contains(g));
        if made.len() >= MAX_GROUPS {
            return false;
        }
    }
    made.insert(g, pidfd(g));
    true
}

fn pidfd(pid: i32) -> Option<OwnedFd> {
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Whether the process behind a pidfd is still running (a pidfd reads as ready once it ended).
fn leader_alive(pidfd: Option<&OwnedFd>) -> bool {
    let Some(fd) = pidfd else { return false };
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    unsafe { libc::poll(&mut p, 1, 0) == 0 }
}

fn ipv4_mapped_loopback(ip: std::net::IpAddr) -> bool {
    matches!(ip, std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()))
}

impl Supervisor {
    /// Answers the server's handed-over calls on a thread of its own, until no process of the
    /// server is left.
    pub fn start(self) {
        let _ = std::thread::Builder::new()
            .name("sandbox-supervisor".into())
            .spawn(move || self.run());
    }

    fn run(self) {
        let fd = self.listener.as_raw_fd();
        loop {
            let mut poll = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            if unsafe { libc::poll(&mut poll, 1, -1) } < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return;
            }
            if poll.revents & libc::POLLIN == 0 {
                // POLLHUP: no process uses the filter any more
                return;
            }
            let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
            if unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) } != 0 {
                match errno() {
                    libc::EINTR | libc::ENOENT => continue,
                    _ => return,
                }
            }
            let answer = self.answer(&req);
            if matches!(answer, Answer::Later) {
                continue;
            }
            let mut resp = libc::seccomp_notif_resp {
                id: req.id,
                val: 0,
                error: 0,
                flags: 0,
            };
            match answer {
                Answer::Continue => resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
                Answer::Done | Answer::Later => {}
                Answer::Failed(e) => resp.error = -e,
            }
            send(fd, &mut resp);
        }
    }

    /// Whether notification `id` is still the one its process waits in (it was not killed, so
    /// its pid was not reused).
    fn still_valid(&self, id: u64) -> bool {
        let r = unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &id,
            )
        };
        r == 0
    }

    fn answer(&self, req: &libc::seccomp_notif) -> Answer {
        let tid = req.pid as i32;
        let a = req.data.args;
        let call = Call::of(req.data.nr as i64, &a);
        let Some(call) = call else {
            // a call this supervisor does not know: refused, as the allow-list refuses
            return Answer::Failed(libc::EPERM);
        };
        let closing = self
            .groups
            .closing
            .load(std::sync::atomic::Ordering::SeqCst);
        match call {
            // the server is ending: no new session or group to hide in
            Call::Session | Call::Group { .. } if closing => Answer::Failed(libc::EPERM),
            Call::Session => match tgid_of(tid) {
                Some(tgid) if note_group(&self.groups, tgid) => Answer::Continue,
                // it made too many that are still there
                Some(_) => Answer::Failed(libc::EAGAIN),
                None => Answer::Continue,
            },
            Call::Group { pid, pgid } => {
                // a new group is named after the process that leads it, the caller or a child
                // of its; joining a group is joining one of its session, which is the server's
                // or one noted already. Only what the kernel could accept is noted.
                if let Some(caller) = tgid_of(tid) {
                    let target = if pid == 0 { caller } else { pid };
                    let ours = target == caller || parent_of(target) == Some(caller);
                    if ours && (pgid == 0 || pgid == target) && !note_group(&self.groups, target) {
                        return Answer::Failed(libc::EAGAIN);
                    }
                }
                Answer::Continue
            }
            Call::Meta { target, op } => match self.meta(tid, req.id, &target, &op) {
                Ok(()) => Answer::Done,
                Err(e) => Answer::Failed(e),
            },
            Call::Connect { fd, addr, len } => match self.connect(tid, req.id, fd, addr, len) {
                Ok(()) => Answer::Later,
                Err(e) => Answer::Failed(e),
            },
            Call::Bind { fd, addr, len } => match self.bind(tid, req.id, fd, addr, len) {
                Ok(()) => Answer::Done,
                Err(e) => Answer::Failed(e),
            },
            Call::Listen { fd, backlog } => match self.listen(tid, req.id, fd, backlog) {
                Ok(()) => Answer::Done,
                Err(e) => Answer::Failed(e),
            },
        }
    }

    /// The server's socket `fd` (the notification still its process's), when it is an IPv4 or
    /// IPv6 one, and its domain.
    fn inet_socket(&self, tid: i32, id: u64, fd: i32) -> Result<(OwnedFd, i32), i32> {
        let sock = grab_fd(tid, fd)?;
        if !self.still_valid(id) {
            return Err(libc::ESRCH);
        }
        let domain = sockopt(&sock, libc::SO_DOMAIN)?;
        if domain != libc::AF_INET && domain != libc::AF_INET6 {
            return Err(libc::EPERM);
        }
        Ok((sock, domain))
    }

    /// The server's socket `fd` and the address at `addr`, read once (and the notification
    /// still its process's).
    fn socket_and_address(
        &self,
        tid: i32,
        id: u64,
        fd: i32,
        addr: u64,
        len: u32,
    ) -> Result<(OwnedFd, std::net::SocketAddr, i32), i32> {
        let bytes = read_mem(tid, addr, (len as usize).min(128))?;
        let to = sockaddr(&bytes).ok_or(libc::EAFNOSUPPORT)?;
        let (sock, domain) = self.inet_socket(tid, id, fd)?;
        Ok((sock, to, domain))
    }

    /// Connects the server's socket where its network lets it go; the answer is sent when the
    /// connect returns (on a thread of its own: a connect may wait).
    fn connect(&self, tid: i32, id: u64, fd: i32, addr: u64, len: u32) -> Result<(), i32> {
        let Some(net) = &self.network else {
            return Err(libc::EPERM);
        };
        let (sock, to, domain) = self.socket_and_address(tid, id, fd, addr, len)?;
        let dest = match net.route(to) {
            super::network::Route::Refused => return Err(libc::EACCES),
            super::network::Route::Stub(stub) => stub,
            super::network::Route::Direct => to,
        };
        // a connect that waits holds a thread of the host's: only so many at once
        if self
            .connecting
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            >= MAX_CONNECTING
        {
            self.connecting
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            return Err(libc::ENOBUFS);
        }
        let connecting = self.connecting.clone();
        let listener = self.listener.as_raw_fd();
        // the listener outlives the thread: it is closed only when no process of the server
        // is left, and this one waits in its connect
        let listener = unsafe { libc::dup(listener) };
        if listener < 0 {
            return Err(libc::EAGAIN);
        }
        let listener = unsafe { OwnedFd::from_raw_fd(listener) };
        std::thread::Builder::new()
            .name("sandbox-connect".into())
            .spawn(move || {
                let r = sys_connect(&sock, dest, domain);
                connecting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                let mut resp = libc::seccomp_notif_resp {
                    id,
                    val: 0,
                    error: r.err().map_or(0, |e| -e),
                    flags: 0,
                };
                send(listener.as_raw_fd(), &mut resp);
            })
            .map(|_| ())
            .map_err(|_| libc::EAGAIN)
    }

    /// Listens on the server's socket, only once it is bound (by the host, to a loopback
    /// address): listening on a socket never bound would bind it to every address.
    fn listen(&self, tid: i32, id: u64, fd: i32, backlog: i32) -> Result<(), i32> {
        if self.network.is_none() {
            return Err(libc::EPERM);
        }
        let (sock, _) = self.inet_socket(tid, id, fd)?;
        let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let got = unsafe {
            libc::getsockname(
                sock.as_raw_fd(),
                (&mut st as *mut libc::sockaddr_storage).cast(),
                &mut len,
            )
        };
        let raw = unsafe {
            std::slice::from_raw_parts(
                (&st as *const libc::sockaddr_storage).cast::<u8>(),
                len as usize,
            )
        };
        let bound = (got == 0).then(|| sockaddr(raw)).flatten();
        match bound {
            Some(at) if at.port() != 0 && at.ip().is_loopback() => {}
            Some(at) if at.port() != 0 && ipv4_mapped_loopback(at.ip()) => {}
            _ => {
                (self.report)("the network: it tried to listen without an address".into());
                return Err(libc::EACCES);
            }
        }
        if unsafe { libc::listen(sock.as_raw_fd(), backlog) } == 0 {
            Ok(())
        } else {
            Err(errno())
        }
    }

    /// Binds the server's socket, to a loopback address only.
    fn bind(&self, tid: i32, id: u64, fd: i32, addr: u64, len: u32) -> Result<(), i32> {
        let Some(net) = &self.network else {
            return Err(libc::EPERM);
        };
        let (sock, at, domain) = self.socket_and_address(tid, id, fd, addr, len)?;
        if !net.may_bind(at) {
            (self.report)(format!("the network: it tried to listen on {at}"));
            return Err(libc::EACCES);
        }
        let (raw, raw_len) = raw_sockaddr(at, domain);
        let r = unsafe {
            libc::bind(
                sock.as_raw_fd(),
                (&raw as *const libc::sockaddr_storage).cast(),
                raw_len,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(errno())
        }
    }

    /// Does `op` on `target` for thread `tid`, when it is inside the write grants.
    fn meta(&self, tid: i32, id: u64, target: &Target, op: &Op) -> Result<(), i32> {
        // the server's memory first, then whether it is still the same process
        let (path, times) = match target {
            Target::Fd(_) => (None, op.times(tid)?),
            Target::At { path, .. } => (Some(read_path(tid, *path)?), op.times(tid)?),
        };
        if !self.still_valid(id) {
            return Err(libc::ESRCH);
        }
        let file = open_target(tid, target, path.as_deref())?;
        let real = real_path(&file);
        let inside = real
            .as_deref()
            .is_some_and(|r| self.write.iter().any(|w| r.starts_with(w)));
        if !inside {
            let shown = real
                .map(|p| p.display().to_string())
                .or(path.map(|p| String::from_utf8_lossy(&p).into_owned()))
                .unwrap_or_else(|| "a file".into());
            (self.report)(format!("{shown} (changing its {})", op.what()));
            return Err(libc::EPERM);
        }
        op.apply(&file, times.as_ref())
    }
}

/// A handed-over call, read from its arguments.
enum Call {
    Session,
    Group {
        pid: i32,
        pgid: i32,
    },
    Meta {
        target: Target,
        op: Op,
    },
    /// `listen(fd, backlog)`.
    Listen {
        fd: i32,
        backlog: i32,
    },
    /// `connect(fd, addr, len)`, `bind(fd, addr, len)`: the address in the server's memory.
    Connect {
        fd: i32,
        addr: u64,
        len: u32,
    },
    Bind {
        fd: i32,
        addr: u64,
        len: u32,
    },
}

/// The file a metadata call names.
enum Target {
    /// A descriptor of the server's.
    Fd(i32),
    /// A path (its address in the server's memory) from a folder descriptor or its working
    /// folder (`AT_FDCWD`), with `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH`.
    At { dirfd: i32, path: u64, flags: i32 },
}

/// What a metadata call changes.
enum Op {
    Mode(u32),
    Owner(u32, u32),
    /// The address of its times in the server's memory (0: now), and their form.
    Times(u64, TimesForm),
}

#[derive(Clone, Copy)]
enum TimesForm {
    /// `struct timespec[2]` (`utimensat`).
    Timespec,
    /// `struct timeval[2]` (`utimes`, `futimesat`).
    Timeval,
    /// `struct utimbuf` (`utime`): two `time_t`.
    Utimbuf,
}

impl Call {
    fn of(nr: i64, a: &[u64; 6]) -> Option<Call> {
        let int = |i: usize| a[i] as i32;
        let at = |dirfd: usize, path: usize, flags: Option<usize>| Target::At {
            dirfd: int(dirfd),
            path: a[path],
            flags: flags.map(int).unwrap_or(0),
        };
        let cwd = |path: usize, flags: i32| Target::At {
            dirfd: libc::AT_FDCWD,
            path: a[path],
            flags,
        };
        let meta = |target, op| Some(Call::Meta { target, op });
        match nr {
            libc::SYS_setsid => Some(Call::Session),
            libc::SYS_setpgid => Some(Call::Group {
                pid: int(0),
                pgid: int(1),
            }),
            libc::SYS_connect => Some(Call::Connect {
                fd: int(0),
                addr: a[1],
                len: a[2] as u32,
            }),
            libc::SYS_listen => Some(Call::Listen {
                fd: int(0),
                backlog: int(1),
            }),
            libc::SYS_bind => Some(Call::Bind {
                fd: int(0),
                addr: a[1],
                len: a[2] as u32,
            }),
            libc::SYS_fchmod => meta(Target::Fd(int(0)), Op::Mode(a[1] as u32)),
            libc::SYS_fchmodat => meta(at(0, 1, None), Op::Mode(a[2] as u32)),
            super::seccomp::SYS_FCHMODAT2 => meta(at(0, 1, Some(3)), Op::Mode(a[2] as u32)),
            libc::SYS_fchown => meta(Target::Fd(int(0)), Op::Owner(a[1] as u32, a[2] as u32)),
            libc::SYS_fchownat => meta(at(0, 1, Some(4)), Op::Owner(a[2] as u32, a[3] as u32)),
            libc::SYS_utimensat if a[1] == 0 => {
                meta(Target::Fd(int(0)), Op::Times(a[2], TimesForm::Timespec))
            }
            libc::SYS_utimensat => meta(at(0, 1, Some(3)), Op::Times(a[2], TimesForm::Timespec)),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chmod => meta(cwd(0, 0), Op::Mode(a[1] as u32)),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_chown => meta(cwd(0, 0), Op::Owner(a[1] as u32, a[2] as u32)),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_lchown => meta(
                cwd(0, libc::AT_SYMLINK_NOFOLLOW),
                Op::Owner(a[1] as u32, a[2] as u32),
            ),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_utime => meta(cwd(0, 0), Op::Times(a[1], TimesForm::Utimbuf)),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_utimes => meta(cwd(0, 0), Op::Times(a[1], TimesForm::Timeval)),
            #[cfg(target_arch = "x86_64")]
            libc::SYS_futimesat => meta(at(0, 1, None), Op::Times(a[2], TimesForm::Timeval)),
            _ => {
                let _ = cwd;
                None
            }
        }
    }
}

impl Op {
    fn what(&self) -> &'static str {
        match self {
            Op::Mode(_) => "permissions",
            Op::Owner(..) => "owner",
            Op::Times(..) => "times",
        }
    }

    /// Its times, read from the server's memory (`None`: now).
    fn times(&self, tid: i32) -> Result<Option<[libc::timespec; 2]>, i32> {
        let Op::Times(addr, form) = *self else {
            return Ok(None);
        };
        if addr == 0 {
            return Ok(None);
        }
        let word = |b: &[u8], i: usize| i64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        let ts = |sec: i64, nsec: i64| libc::timespec {
            tv_sec: sec as libc::time_t,
            tv_nsec: nsec as _,
        };
        Ok(Some(match form {
            TimesForm::Timespec => {
                let b = read_mem(tid, addr, 32)?;
                [ts(word(&b, 0), word(&b, 1)), ts(word(&b, 2), word(&b, 3))]
            }
            TimesForm::Timeval => {
                let b = read_mem(tid, addr, 32)?;
                let usec = |u: i64| {
                    if !(0..1_000_000).contains(&u) {
                        Err(libc::EINVAL)
                    } else {
                        Ok(u * 1000)
                    }
                };
                [
                    ts(word(&b, 0), usec(word(&b, 1))?),
                    ts(word(&b, 2), usec(word(&b, 3))?),
                ]
            }
            TimesForm::Utimbuf => {
                let b = read_mem(tid, addr, 16)?;
                [ts(word(&b, 0), 0), ts(word(&b, 1), 0)]
            }
        }))
    }

    /// Does it on `file` (an `O_PATH` descriptor of the host's).
    fn apply(&self, file: &OwnedFd, times: Option<&[libc::timespec; 2]>) -> Result<(), i32> {
        let fd = file.as_raw_fd();
        let empty = c"".as_ptr();
        let r = match *self {
            Op::Mode(mode) => {
                // never set-user-ID or set-group-ID: the host may have rights the server has not
                let mode = mode & 0o1777;
                if is_symlink(file) {
                    return Err(libc::EOPNOTSUPP);
                }
                let via = CString::new(format!("/proc/self/fd/{fd}")).map_err(|_| libc::EINVAL)?;
                unsafe { libc::chmod(via.as_ptr(), mode as libc::mode_t) }
            }
            Op::Owner(uid, gid) => {
                if unsafe { libc::geteuid() } == 0 && !owner_change_allowed(file, uid, gid) {
                    return Err(libc::EPERM);
                }
                unsafe { libc::fchownat(fd, empty, uid, gid, libc::AT_EMPTY_PATH) }
            }
            Op::Times(..) => unsafe {
                libc::syscall(
                    libc::SYS_utimensat,
                    fd,
                    empty,
                    times.map_or(std::ptr::null(), |t| t.as_ptr()),
                    libc::AT_EMPTY_PATH,
                ) as i32
            },
        };
        if r == 0 {
            Ok(())
        } else {
            Err(errno())
        }
    }
}

/// Run by root, the host could give a file away: only what an owner without privileges could
/// do (its own user, a group it is in), else refused.
fn owner_change_allowed(file: &OwnedFd, uid: u32, gid: u32) -> bool {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0 {
        return false;
    }
    let keep = u32::MAX;
    (uid == keep || uid == st.st_uid) && (gid == keep || gid == st.st_gid)
}

fn is_symlink(file: &OwnedFd) -> bool {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstat(file.as_raw_fd(), &mut st) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The parent of process `pid`.
fn parent_of(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))?
        .trim()
        .parse()
        .ok()
}

/// The thread group (process) of thread `tid`.
fn tgid_of(tid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

/// `len` bytes of thread `tid`'s memory at `addr`.
fn read_mem(tid: i32, addr: u64, len: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    };
    let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        // EPERM: it cannot be read (an orphan, where Yama allows only descendants)
        return Err(match errno() {
            libc::ESRCH => libc::ESRCH,
            libc::EPERM => libc::EPERM,
            _ => libc::EFAULT,
        });
    }
    if n as usize != len {
        return Err(libc::EFAULT);
    }
    Ok(buf)
}

/// The NUL-terminated path at `addr` in thread `tid`'s memory (at most `PATH_MAX`), read a page
/// at a time so that the string's end may sit just before unmapped memory.
fn read_path(tid: i32, addr: u64) -> Result<Vec<u8>, i32> {
    const PAGE: u64 = 4096;
    const MAX: usize = libc::PATH_MAX as usize;
    if addr == 0 {
        return Err(libc::EFAULT);
    }
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < MAX {
        let chunk = (PAGE - at % PAGE) as usize;
        let chunk = chunk.min(MAX - out.len());
        let bytes = read_mem(tid, at, chunk)?;
        if let Some(end) = bytes.iter().position(|b| *b == 0) {
            out.extend_from_slice(&bytes[..end]);
            return Ok(out);
        }
        out.extend_from_slice(&bytes);
        at += chunk as u64;
    }
    Err(libc::ENAMETOOLONG)
}

fn open_proc(path: &str, flags: i32) -> Result<OwnedFd, i32> {
    let c = CString::new(path).map_err(|_| libc::EINVAL)?;
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(match errno() {
            libc::ENOENT => libc::EBADF,
            e => e,
        });
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A path through the server's own descriptors as the C library writes them
/// (`/proc/self/fd/N`, `/proc/thread-self/fd/N`, `/proc/<its pid>/fd/N`, then maybe more): the
/// descriptor, and the rest of the path. It changes a link's mode through `/proc/self/fd/N`.
fn own_fd_path(path: &[u8], tid: i32) -> Option<(i32, &[u8])> {
    let tgid = tgid_of(tid).unwrap_or(tid);
    let mut rest = None;
    for prefix in [
        "/proc/self/fd/".to_string(),
        "/proc/thread-self/fd/".to_string(),
        format!("/proc/{tgid}/fd/"),
        format!("/proc/{tgid}/task/{tid}/fd/"),
    ] {
        if let Some(r) = path.strip_prefix(prefix.as_bytes()) {
            rest = Some(r);
            break;
        }
    }
    let rest = rest?;
    let end = rest.iter().position(|b| *b == b'/').unwrap_or(rest.len());
    let fd = std::str::from_utf8(&rest[..end])
        .ok()?
        .parse::<i32>()
        .ok()?;
    let after = rest[end..].strip_prefix(b"/").unwrap_or(&rest[end..]);
    Some((fd, after))
}

/// The file `target` names, as an `O_PATH` descriptor of the host's: resolved from the
/// server's folder descriptor, working folder or (`/proc/self/fd/N`) own descriptor, following
/// the last link unless told not to, and never a magic link of `/proc` (those are the host's:
/// another process's root or descriptors). What is done to it then depends only on where it is
/// (its [`real_path`] against the write grants).
fn open_target(tid: i32, target: &Target, path: Option<&[u8]>) -> Result<OwnedFd, i32> {
    match (target, path) {
        (Target::Fd(fd), _) => open_proc(&format!("/proc/{tid}/fd/{fd}"), 0),
        (Target::At { dirfd, flags, .. }, Some(path)) => {
            let (base, path, own) = match own_fd_path(path, tid) {
                Some((fd, rest)) => (open_proc(&format!("/proc/{tid}/fd/{fd}"), 0)?, rest, true),
                None if *dirfd == libc::AT_FDCWD => {
                    (open_proc(&format!("/proc/{tid}/cwd"), 0)?, path, false)
                }
                None => (
                    open_proc(&format!("/proc/{tid}/fd/{dirfd}"), 0)?,
                    path,
                    false,
                ),
            };
            if path.is_empty() {
                return if own || flags & libc::AT_EMPTY_PATH != 0 {
                    Ok(base)
                } else {
                    Err(libc::ENOENT)
                };
            }
            let c = CString::new(path).map_err(|_| libc::EINVAL)?;
            let mut how: libc::open_how = unsafe { std::mem::zeroed() };
            how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
            if flags & libc::AT_SYMLINK_NOFOLLOW != 0 {
                how.flags |= libc::O_NOFOLLOW as u64;
            }
            how.resolve = libc::RESOLVE_NO_MAGICLINKS;
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    base.as_raw_fd(),
                    c.as_ptr(),
                    &how as *const libc::open_how,
                    std::mem::size_of::<libc::open_how>(),
                )
            };
            if fd < 0 {
                return Err(errno());
            }
            Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
        }
        (Target::At { .. }, None) => Err(libc::EFAULT),
    }
}

/// Where the file behind the host's descriptor is (`None` for what is not a file of a folder
/// of this mount namespace's: a pipe, a socket, a deleted file, a file of another namespace's
/// mount, whose path would be written as that namespace sees it).
fn real_path(file: &OwnedFd) -> Option<PathBuf> {
    if !mounted_here(file) {
        return None;
    }
    let p = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    let text = p.to_str()?;
    (p.is_absolute() && !text.ends_with(" (deleted)")).then_some(p)
}

/// Whether the file's mount is one of this process's mount namespace.
fn mounted_here(file: &OwnedFd) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", file.as_raw_fd()))
    else {
        return false;
    };
    let Some(id) = info
        .lines()
        .find_map(|l| l.strip_prefix("mnt_id:"))
        .map(|v| v.trim().to_string())
    else {
        return false;
    };
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    mounts
        .lines()
        .any(|l| l.split_whitespace().next() == Some(id.as_str()))
}

enum Answer {
    /// Let the call run as it is (only for calls whose arguments are values, not memory).
    Continue,
    /// Done by the host.
    Done,
    /// Answered by the host from another thread.
    Later,
    Failed(i32),
}

/// Sends the answer to a notification (ENOENT: the process is gone, killed while it waited).
fn send(listener: RawFd, resp: &mut libc::seccomp_notif_resp) {
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, resp) };
}

/// Thread `tid`'s process's descriptor `fd`, as a descriptor of the host's (the same open
/// socket or file).
fn grab_fd(tid: i32, fd: i32) -> Result<OwnedFd, i32> {
    let tgid = tgid_of(tid).ok_or(libc::ESRCH)?;
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, tgid, 0u32) };
    if pidfd < 0 {
        return Err(errno());
    }
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) };
    if got < 0 {
        return Err(match errno() {
            libc::EBADF => libc::EBADF,
            // an orphan, where Yama lets only ancestors take a descriptor
            _ => libc::EPERM,
        });
    }
    Ok(unsafe { OwnedFd::from_raw_fd(got as RawFd) })
}

fn sockopt(sock: &OwnedFd, name: i32) -> Result<i32, i32> {
    let mut v: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&mut v as *mut i32).cast(),
            &mut len,
        )
    };
    if r == 0 {
        Ok(v)
    } else {
        Err(libc::ENOTSOCK)
    }
}

/// An IPv4 or IPv6 address as the server wrote it (`struct sockaddr_in`, `sockaddr_in6`).
fn sockaddr(b: &[u8]) -> Option<std::net::SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
    let family = u16::from_ne_bytes(b.get(0..2)?.try_into().ok()?) as i32;
    let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
    match family {
        libc::AF_INET => {
            let o: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::new(Ipv4Addr::from(o).into(), port))
        }
        libc::AF_INET6 => {
            let o: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::new(Ipv6Addr::from(o).into(), port))
        }
        _ => None,
    }
}

/// `at` as a socket of `domain` takes it (an IPv4 address as IPv4-mapped IPv6 for an IPv6
/// socket).
fn raw_sockaddr(at: std::net::SocketAddr, domain: i32) -> (libc::sockaddr_storage, u32) {
    use std::net::{IpAddr, SocketAddr};
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let ip6 = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    match (at, domain) {
        (SocketAddr::V4(v4), libc::AF_INET) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            unsafe { std::ptr::write((&mut st as *mut libc::sockaddr_storage).cast(), sin) };
            (st, std::mem::size_of::<libc::sockaddr_in>() as u32)
        }
        _ => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: at.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr {
                    s6_addr: ip6(at.ip()).octets(),
                },
                sin6_scope_id: 0,
            };
            unsafe { std::ptr::write((&mut st as *mut libc::sockaddr_storage).cast(), sin6) };
            (st, std::mem::size_of::<libc::sockaddr_in6>() as u32)
        }
    }
}

/// Connects the host's copy of the server's socket to `to`.
fn sys_connect(sock: &OwnedFd, to: std::net::SocketAddr, domain: i32) -> Result<(), i32> {
    if domain == libc::AF_INET && to.is_ipv6() {
        return Err(libc::EAFNOSUPPORT);
    }
    let (raw, len) = raw_sockaddr(to, domain);
    let r = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&raw as *const libc::sockaddr_storage).cast(),
            len,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// Ends the process groups (and sessions) a sandboxed server's processes made, with `signal`:
/// each only while a sandboxed process is still in it (a group whose processes all ended may
/// have its number reused by someone else's). From the first signal on, the server makes no new
/// group; with SIGKILL, again until none of its groups holds a process (a process that forked
/// while it was being signalled).
pub fn kill_groups(groups: &Groups, signal: i32) {
    groups
        .closing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let rounds = if signal == libc::SIGKILL { 20 } else { 1 };
    for round in 0..rounds {
        let ours: Vec<i32> = {
            let made = groups.made.lock().unwrap();
            if made.is_empty() {
                return;
            }
            let members = sandboxed_groups();
            made.iter()
                .filter(|(g, leader)| {
                    **g > 1
                        && members.contains(g)
                        // its leader ended: the number is still the group's only while no
                        // process has it (a process of that number is someone else's)
                        && (leader_alive(leader.as_ref())
                            || !std::path::Path::new(&format!("/proc/{g}")).exists())
                })
                .map(|(g, _)| *g)
                .collect()
        };
        if ours.is_empty() {
            return;
        }
        for g in ours {
            unsafe { libc::kill(-g, signal) };
        }
        if round + 1 < rounds {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// The process groups that hold any process.
fn group_members() -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        if let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
            let pgid = unsafe { libc::getpgid(pid) };
            if pgid > 0 {
                out.insert(pgid);
            }
        }
    }
    out
}

/// The process groups that hold a sandboxed process (`NoNewPrivs` and a seccomp filter).
fn sandboxed_groups() -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        if field("NoNewPrivs:") != "1" || field("Seccomp:") != "2" {
            continue;
        }
        let pgid = unsafe { libc::getpgid(pid) };
        if pgid > 0 {
            out.insert(pgid);
        }
    }
    out
}
