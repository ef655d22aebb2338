//! Telling a refusal by the sandbox from other failures in a server's stderr and error results (a heuristic).

use super::*;

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
    pub(super) read: Vec<PathBuf>,
    pub(super) write: Vec<PathBuf>,
    pub(super) network: bool,
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
                    format!("{}{READ_ONLY_WORDS}", path.display())
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

/// What the row may offer to let a server read, from the newest refusal its log tells of
/// (`note`: what follows [`BLOCKED_NOTE`]): the path it names, when the refusal was of a path it
/// may not read at all (not a write where it may read), the path exists, is not in its read
/// grants already (`read`, as its config lists them, `~` for `home`), and is not protected
/// (credentials, the app's own folders: `protected`, as written and resolved). Never `/` or
/// home.
pub fn read_offer(
    note: &str,
    read: &[String],
    home: Option<&Path>,
    protected: &[PathBuf],
) -> Option<PathBuf> {
    if !note.starts_with('/') || note.ends_with(READ_ONLY_WORDS) {
        return None;
    }
    let path = PathBuf::from(note);
    path.symlink_metadata().ok()?;
    let real = resolved(&path);
    if path.parent().is_none() || home.is_some_and(|h| h == path || h == real) {
        return None;
    }
    if protected
        .iter()
        .any(|p| path.starts_with(p) || real.starts_with(p))
    {
        return None;
    }
    let granted = read.iter().any(|r| {
        let r = match (r.strip_prefix('~'), home) {
            (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                h.join(rest.trim_start_matches('/'))
            }
            _ => PathBuf::from(r),
        };
        path.starts_with(&r) || real.starts_with(resolved(&r))
    });
    (!granted).then_some(path)
}

/// What a refusal of a write where the server may read says after the path.
const READ_ONLY_WORDS: &str = " (it may only read there)";

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
pub(super) fn path_in(line: &str) -> Option<PathBuf> {
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
