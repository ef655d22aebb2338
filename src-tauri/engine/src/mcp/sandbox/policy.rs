//! Whether a server is sandboxed and what it may touch: the places it needs, computed in the parent.

use super::*;

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
    /// It runs a container (`docker run`, `podman run`): the container is its sandbox
    /// (`container.rs`).
    pub container: bool,
}

/// The sandbox `cfg` asks for: its own, or the built-ins' default (no folders; no network but
/// for `research`) when
/// it names none; `None` for servers that run unsandboxed (and every remote server).
pub fn wanted(cfg: &ServerConfig) -> Option<Wanted> {
    if cfg.transport().is_remote() {
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
            container: super::is_container(cfg),
        }),
        None if BUILTINS_SANDBOXED && cfg.builtin().is_some() => Some(Wanted {
            config: SandboxConfig::builtin_default(cfg.builtin().unwrap_or_default()),
            default: true,
            own,
            container: false,
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
    /// It runs a container, which is its sandbox (`container.rs`): the docker command runs
    /// without Switchboard's, with only the options Switchboard checked.
    Container,
}

pub fn decide(wanted: &Wanted, abi: i32) -> SandboxState {
    if wanted.container {
        SandboxState::Container
    } else if abi >= MIN_ABI {
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
    /// Its private folder (made before the policy is built); `tmp/` inside is its `TMPDIR`,
    /// `cache/` its launcher's caches.
    pub private: PathBuf,
    /// What is never granted unless named ([`protected`]).
    pub protected: Vec<PathBuf>,
    /// The files and folders the certificate settings it gets name ([`cert_paths`]): readable
    /// when it has any network.
    pub certs: Vec<PathBuf>,
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
    /// Without the network, the hosts it may still reach (`network.rs`).
    pub hosts: Vec<crate::mcp::config::HostRule>,
    /// Its `TMPDIR`.
    pub tmp: PathBuf,
    /// Configured folders that do not exist, left out.
    pub missing: Vec<String>,
    /// Protected paths (credentials, the app's folders) that a grant held and that were left
    /// out of it.
    pub left_out: Vec<PathBuf>,
    /// Its processes, memory and open files.
    pub limits: Limits,
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

/// Whether granting `dir` wholesale would be too much for a guess: `/`, home, a folder above
/// home, or a folder under home that many programs share (`~/.local`, `~/bin`, …).
fn too_broad(dir: &Path, home: Option<&Path>) -> bool {
    const SHARED: &[&str] = &[
        ".local",
        ".local/bin",
        ".local/lib",
        ".local/share",
        ".local/state",
        "bin",
        ".cargo",
        ".cargo/bin",
        "go",
        "go/bin",
        ".config",
        ".cache",
        ".npm",
        ".npm-global",
        ".npm-global/bin",
        "node_modules",
    ];
    dir.parent().is_none()
        || home.is_some_and(|h| h.starts_with(dir) || SHARED.iter().any(|s| dir == h.join(s)))
}

/// The folder to grant for a program at `p`: its folder's parent (`/usr` for `/usr/bin/node`,
/// the venv for `.venv/bin/python`, the version for `~/.nvm/versions/node/v20/bin/node`), or
/// its own folder when that would be too broad, or the program alone when that would be too
/// (`~/.local/bin/tool`: the file only, never `~/.local`).
pub(super) fn program_dir(p: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let dir = p.parent()?;
    match dir.parent() {
        Some(up) if !too_broad(up, home) => Some(up.to_path_buf()),
        _ if !too_broad(dir, home) => Some(dir.to_path_buf()),
        _ => p.is_absolute().then(|| p.to_path_buf()),
    }
}

/// Programs a launcher runs from its own folder (`uvx` execs `uv` beside it): granted with it
/// when the launcher alone is.
fn companions(program: &Path) -> Vec<PathBuf> {
    let name = program
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let with: &[&str] = match name {
        "uvx" => &["uv"],
        "uv" => &["uvx"],
        "npx" | "npm" => &["node", "npm", "npx"],
        "pnpx" | "pnpm" => &["node", "pnpm"],
        "bunx" => &["bun"],
        _ => &[],
    };
    with.iter().map(|w| program.with_file_name(w)).collect()
}

/// The folder to grant for a script the program is given (`node …/dist/index.js`,
/// `python3 server.py`): the outermost `node_modules` it is in (its package and the packages it
/// imports), else the nearest folder above it that looks like a project (package.json,
/// pyproject.toml, …), else its own folder, else (a shared folder) the script alone. A folder
/// given as an argument is data, never granted.
fn script_dir(p: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(nm) = p
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .filter(|a| !too_broad(a, home))
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
        None if !too_broad(dir, home) => Some(dir.to_path_buf()),
        None => Some(p.to_path_buf()),
    }
}

/// What a launcher reads of the user's shared caches and toolchains, read only (cargo's
/// registry, rustup's toolchains, uv's interpreters). The caches launchers write (npm, uv, pip…) are never
/// shared: [`environment`] points them into the server's private folder.
fn launcher_shared(command: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let name = Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let h = |p: &str| home.map(|h| h.join(p));
    let all = match name {
        "cargo" => vec![h(".cargo/registry"), h(".cargo/git"), h(".rustup")],
        // the interpreters uv installs, which uvx runs a package with
        "uvx" | "uv" => vec![h(".local/share/uv/python")],
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
    // what the host finds it needs, and what the config (or the host, for a built-in's own
    // folders and the private one) names
    let (mut found, mut named_read, mut write) = (Vec::new(), Vec::new(), Vec::new());
    let mut missing = Vec::new();
    for p in SYSTEM_READ {
        add(&mut found, Path::new(p));
    }
    // what the server may change itself: a grant derived from a path in there could lead, by a
    // link it put there before a restart, anywhere (its cwd made a link to `/`); such a path
    // brings nothing, the write grant covers it as it is
    let writable: Vec<PathBuf> = std::iter::once(places.private.clone())
        .chain(wanted.own.iter().cloned())
        .chain(wanted.config.write.iter().map(|w| expand(w, home)))
        .flat_map(|w| {
            let real = w.canonicalize().ok();
            std::iter::once(w).chain(real)
        })
        .collect();
    let changeable = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    // the program, as given and resolved (a venv's python is a symlink to the interpreter)
    let real_program = places.program.canonicalize().ok();
    let programs: Vec<&PathBuf> = if changeable(&places.program) {
        vec![]
    } else {
        std::iter::once(&places.program)
            .chain(real_program.as_ref())
            .collect()
    };
    for p in programs {
        if let Some(d) = program_dir(p, home) {
            if d == *p {
                for c in companions(p) {
                    add(&mut found, &c);
                }
            }
            add(&mut found, &d);
        }
    }
    // the script it is given, and its package (not for a server whose config says only what it
    // names: a catalog install, whose arguments are a publisher's)
    let args = if wanted.config.only_named {
        &[][..]
    } else {
        &places.args[..]
    };
    for a in args {
        let p = Path::new(a);
        if p.is_absolute() && p.is_file() && !changeable(p) {
            let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            if let Some(d) = script_dir(&real, home) {
                add(&mut found, &d);
            }
        }
    }
    if let Some(cwd) = places.cwd.as_ref().filter(|c| !changeable(c)) {
        add(&mut found, cwd);
    }
    for entry in places.path_var.as_deref().unwrap_or_default().split(':') {
        let p = Path::new(entry);
        // the PATH's folders under home are other programs' (`~/.local/bin`): not granted
        if p.is_absolute() && !too_broad(p, home) && !home.is_some_and(|h| p.starts_with(h)) {
            add(&mut found, p);
        }
    }
    if let Some(h) = home {
        for t in HOME_TOOLS {
            add(&mut found, &h.join(t));
        }
    }
    for c in launcher_shared(&places.command, home) {
        add(&mut found, &c);
    }
    // with any network, the certificates its TLS clients are told to trust (`env.rs`): a file
    // as itself, a folder unless it is one many programs share (never home)
    if wanted.config.network || !wanted.config.hosts.is_empty() {
        for c in places.certs.iter().filter(|c| !changeable(c)) {
            if c.is_file() || (c.is_dir() && !too_broad(c, home)) {
                add(&mut found, c);
            }
        }
    }
    let protected = &places.protected;
    // a configured path names a protected one only when it is written as it (or inside it):
    // one that leads there through a link (`~/keys → ~/.ssh`) does not
    let names = |p: &Path| protected.iter().any(|x| p.starts_with(x));
    let mut named = |list: &mut Vec<(PathBuf, bool)>, p: &str| {
        let written = expand(p, home);
        let mut real = Vec::new();
        if add(&mut real, &written) {
            list.push((real.remove(0), names(&written)));
        } else {
            missing.push(p.to_string());
        }
    };
    for p in &wanted.config.read {
        named(&mut named_read, p);
    }
    for p in &wanted.config.write {
        named(&mut write, p);
    }
    // the host's own choices: its private folder, a built-in's own folders
    for d in std::iter::once(&places.private).chain(&wanted.own) {
        if let Ok(real) = d.canonicalize() {
            write.push((real, true));
        }
    }
    let mut devices = Vec::new();
    for p in DEVICES {
        add(&mut devices, Path::new(p));
    }
    let (mut read, mut writable, mut left_out) = (Vec::new(), devices, Vec::new());
    for g in &found {
        split_around(g, protected, false, &mut read, &mut left_out);
    }
    for (g, named) in &named_read {
        split_around(g, protected, *named, &mut read, &mut left_out);
    }
    for (g, named) in &write {
        split_around(g, protected, *named, &mut writable, &mut left_out);
    }
    Policy {
        read,
        write: writable,
        network: wanted.config.network,
        hosts: wanted
            .config
            .hosts
            .iter()
            .filter_map(|h| crate::mcp::config::HostRule::parse(h).ok())
            .collect(),
        tmp: places.private.join("tmp"),
        missing,
        left_out,
        limits: Limits::of(wanted.config.limits.as_ref()),
    }
}

/// A server's private folder under `root`: its own, from its exact name
/// ([`crate::paths::folder_name`]: `.c` and `_.c`, `a b` and `a_b` each get their own). It is
/// deleted with its server ([`forget_server`]), so a server made later under the same name starts
/// with an empty one.
pub fn private_dir(root: &Path, server: &str) -> PathBuf {
    root.join(crate::paths::folder_name(server))
}

/// Where the host keeps what it fetched for a server ([`super::fetch`]: its record, its staging
/// folder): beside the private folders, in `root/.fetched/`, which no server's private folder
/// can be (their names never start with `.`) and no server may write.
pub fn fetch_dir(root: &Path, server: &str) -> PathBuf {
    root.join(FETCHED).join(crate::paths::folder_name(server))
}

/// The host's own folder under the sandbox root ([`fetch_dir`]).
const FETCHED: &str = ".fetched";

/// Deletes what the sandbox kept for `server` under `root`: its private folder (temporary
/// files, caches) and the host's record of what was fetched for it. For a server that is no
/// longer configured; a missing folder is no error.
pub fn forget_server(root: &Path, server: &str) -> std::io::Result<()> {
    for dir in [private_dir(root, server), fetch_dir(root, server)] {
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}
