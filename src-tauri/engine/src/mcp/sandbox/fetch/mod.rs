//! A launcher's package, fetched by the host before a sandbox without network starts it. `npx`
//! and `uvx` download the package they run when they start, which a server with no network
//! cannot: every npm or PyPI server installed from the catalog (network off by default) would
//! fail at its first start. So the host fetches the package and its dependencies into the
//! server's own cache (`<private>/cache/npm` or `<private>/cache/uv`, the ones
//! [`super::environment`] gives it) with the launcher's own package manager, and nothing of the
//! package runs outside the sandbox: npm with install scripts off ([`npm`]), uv with wheels only,
//! nothing built ([`uv`]). The server's launcher then installs and runs it offline, inside. Both
//! package managers verify what they download as they do for any install.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

mod npm;
mod uv;

pub use npm::npx_packages;
pub use uv::uvx_packages;

/// How long fetching may take (a large package on a slow line).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(300);

/// The package manager that fetches for a launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetcher {
    /// `npx`: npm, install scripts off.
    Npm,
    /// `uvx`: uv, wheels only.
    Uv,
}

impl Fetcher {
    /// Its name, as the server's log says it.
    pub fn name(self) -> &'static str {
        match self {
            Fetcher::Npm => "npm",
            Fetcher::Uv => "uv",
        }
    }

    /// How it keeps the package's code from running while it fetches, as the log says it.
    pub fn how(self) -> &'static str {
        match self {
            Fetcher::Npm => "scripts off",
            Fetcher::Uv => "wheels only, nothing built",
        }
    }

    /// Its folder in a server's private cache (the one [`super::environment`] points it to).
    fn cache(self, private: &Path) -> PathBuf {
        private.join("cache").join(self.name())
    }
}

/// What a launcher's command line would download when it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    pub fetcher: Fetcher,
    /// The packages, as the package manager takes them (`pkg@1.2.3`, `pkg==1.2.3`).
    pub packages: Vec<String>,
    /// What the launcher was told that the package manager must be told too, as its arguments
    /// (`--python 3.12`, `--default-index https://…`).
    pub options: Vec<String>,
}

impl Fetch {
    /// What it records, so that another set (another version) is fetched again.
    fn record(&self) -> String {
        let mut lines = self.packages.clone();
        lines.extend(self.options.iter().cloned());
        lines.join("\n")
    }
}

/// What `command` with `args` would download when it starts (`npx -y pkg@1`, `uvx pkg==1`), when
/// it comes from a registry and every option is one we know; `None` for anything else, which is
/// left to the launcher.
pub fn to_fetch(command: &str, args: &[String]) -> Option<Fetch> {
    npx_packages(command, args).or_else(|| uvx_packages(command, args))
}

/// A registry or index the fetch may be told: over https, or over http on this machine. Never a
/// `file:` one, which would copy the user's files into the server's cache.
fn remote_source(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => u.host().is_some(),
        "http" => matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")),
        _ => false,
    }
}

/// The record of what was fetched into a cache.
fn marker(fetcher: Fetcher, private: &Path) -> PathBuf {
    fetcher.cache(private).join(".switchboard-fetched")
}

/// Whether `what` is already in `private`'s cache (fetched by [`fetch`]).
pub fn fetched(private: &Path, what: &Fetch) -> bool {
    std::fs::read_to_string(marker(what.fetcher, private)).is_ok_and(|m| m == what.record())
}

/// Records that `what` is in `private`'s cache.
fn record_fetched(private: &Path, what: &Fetch) -> std::io::Result<()> {
    std::fs::write(marker(what.fetcher, private), what.record())
}

/// Fetches `what` and its dependencies into `private`'s cache with the package manager beside
/// `launcher` (else the one on `path_var`), outside the sandbox and with the user's own settings
/// (registry or index, proxy), and nothing of the package run; then records it. The error says
/// what the package manager said.
pub async fn fetch(
    launcher: &Path,
    path_var: Option<&str>,
    what: &Fetch,
    private: &Path,
) -> Result<(), String> {
    let staging = private.join("tmp").join("fetch");
    let _ = std::fs::remove_dir_all(&staging);
    let done = async {
        match what.fetcher {
            Fetcher::Npm => npm::fetch(launcher, path_var, what, private, &staging).await,
            Fetcher::Uv => uv::fetch(launcher, path_var, what, private, &staging).await,
        }
    };
    let result = match tokio::time::timeout(FETCH_TIMEOUT, done).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "fetching took longer than {} s",
            FETCH_TIMEOUT.as_secs()
        )),
    };
    let _ = std::fs::remove_dir_all(&staging);
    result?;
    record_fetched(private, what).map_err(|e| format!("cannot record the fetched package: {e}"))
}

/// A package manager's command: its cache is the server's, its PATH the server's, its output
/// kept for the error.
fn command(
    program: &Path,
    path_var: Option<&str>,
    cache_var: &str,
    cache: &Path,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.env(cache_var, cache)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(p) = path_var {
        cmd.env("PATH", p);
    }
    cmd
}

/// Runs a package manager (`name`); its error is the last lines it wrote.
async fn run(name: &str, mut cmd: tokio::process::Command) -> Result<(), String> {
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {name}: {e}"))?;
    let mut err = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut err).await;
    }
    let status = child.wait().await.map_err(|e| e.to_string())?;
    if status.success() {
        return Ok(());
    }
    let said: Vec<&str> = err
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.contains("A complete log of this run"))
        .collect();
    let tail = said[said.len().saturating_sub(3)..].join(" ");
    Err(format!("{name} could not fetch it ({status}): {tail}"))
}

/// `name` in the folder `launcher` was found in (npm beside npx, uv beside uvx), else on
/// `path_var`.
fn beside(launcher: &Path, name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    let here = launcher.with_file_name(name);
    if here.is_file() {
        return Some(here);
    }
    let cwd = std::env::current_dir().ok()?;
    which::which_in(
        name,
        path_var.or(std::env::var("PATH").ok().as_deref()),
        cwd,
    )
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_fetched_is_recorded_by_its_specs() {
        let dir = tempfile::tempdir().unwrap();
        let npm = |p: &[&str]| Fetch {
            fetcher: Fetcher::Npm,
            packages: p.iter().map(|s| s.to_string()).collect(),
            options: Vec::new(),
        };
        let a1 = npm(&["a@1"]);
        assert!(!fetched(dir.path(), &a1));
        std::fs::create_dir_all(dir.path().join("cache/npm")).unwrap();
        record_fetched(dir.path(), &a1).unwrap();
        assert!(fetched(dir.path(), &a1));
        // another version, or another set, is fetched again
        assert!(!fetched(dir.path(), &npm(&["a@2"])));
        assert!(!fetched(dir.path(), &npm(&["a@1", "b@1"])));
        // each package manager has its own record, and the interpreter counts
        let uv = Fetch {
            fetcher: Fetcher::Uv,
            packages: vec!["a==1".into()],
            options: Vec::new(),
        };
        assert!(!fetched(dir.path(), &uv));
        std::fs::create_dir_all(dir.path().join("cache/uv")).unwrap();
        record_fetched(dir.path(), &uv).unwrap();
        assert!(fetched(dir.path(), &uv) && fetched(dir.path(), &a1));
        let other_python = Fetch {
            options: vec!["--python".into(), "3.12".into()],
            ..uv.clone()
        };
        assert!(!fetched(dir.path(), &other_python));
    }

    #[test]
    fn only_npx_and_uvx_fetch() {
        let w = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(
            to_fetch("npx", &w("-y a@1")).map(|f| f.fetcher),
            Some(Fetcher::Npm)
        );
        assert_eq!(
            to_fetch("/home/u/.local/bin/uvx", &w("a==1")).map(|f| f.fetcher),
            Some(Fetcher::Uv)
        );
        assert_eq!(to_fetch("python3", &w("server.py")), None);
        assert_eq!(to_fetch("node", &w("a@1")), None);
    }
}
