//! A launcher's package, fetched by the host before a sandbox without network starts it. `npx`
//! and `uvx` download the package they run when they start, which a server with no network
//! cannot: every npm or PyPI server installed from the catalog (network off by default) would
//! fail at its first start. So the host fetches the package and its dependencies into the
//! server's own cache (`<private>/cache/npm` or `<private>/cache/uv`, the ones
//! [`super::environment`] gives it) with the launcher's own package manager, and nothing of the
//! package runs outside the sandbox: npm with install scripts and git off, every package from
//! the registry with its integrity ([`npm`]), uv with wheels only, nothing built ([`uv`]). The
//! server's launcher then installs and runs it offline, inside. Both package managers verify
//! what they download as they do for any install.
//!
//! Nothing of the server's choosing runs here: the package manager and the interpreter it
//! starts are the app's own, found on the app's PATH outside every folder the server may write,
//! and run with a PATH of their own folders and the system's ([`tools`]); an interpreter asked
//! for (`--python`) is a version, never a path. The record of what was fetched and the staging
//! folder are the host's, beside the private folders where no server writes
//! ([`super::fetch_dir`]); a server that empties its cache only has it fetched again.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

mod npm;
mod tools;
mod uv;

pub use npm::npx_packages;
pub use tools::Tools;
pub use uv::uvx_packages;

/// How long fetching may take (a large package on a slow line).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(300);

/// The package manager that fetches for a launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetcher {
    /// `npx`: npm, install scripts and git off, registry packages only.
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
            Fetcher::Npm => "scripts and git off, registry packages only",
            Fetcher::Uv => "wheels only, nothing built",
        }
    }

    /// Its folder in a server's private cache (the one [`super::environment`] points it to).
    fn cache(self, private: &Path) -> PathBuf {
        private.join("cache").join(self.name())
    }

    /// The programs it runs.
    fn wants(self) -> tools::Wants {
        match self {
            Fetcher::Npm => tools::Wants {
                manager: "npm",
                interpreter: &["node"],
                interpreter_needed: true,
            },
            Fetcher::Uv => tools::Wants {
                manager: "uv",
                interpreter: &["python3", "python"],
                interpreter_needed: false,
            },
        }
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
/// it comes from a registry and every option is one we know; `Ok(None)` for anything else, which
/// is left to the launcher (inside the sandbox); `Err` for what the host refuses to fetch with
/// (an interpreter given as a path).
pub fn to_fetch(command: &str, args: &[String]) -> Result<Option<Fetch>, String> {
    if let Some(f) = npx_packages(command, args) {
        return Ok(Some(f));
    }
    uvx_packages(command, args)
}

/// A registry or index the fetch may be told: over https, or over http on this machine. Never a
/// `file:` one, which would copy the user's files into the server's cache.
fn remote_source(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => u.host().is_some(),
        "http" => loopback(&u),
        _ => false,
    }
}

fn loopback(u: &url::Url) -> bool {
    matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"))
}

/// Where a fetch for one server happens.
#[derive(Debug, Clone)]
pub struct FetchPlaces {
    /// The app's PATH, as the host resolved it (the login shell's); `None`: the app's own
    /// environment's. Never the server's.
    pub app_path: Option<String>,
    /// Every place the server may write (its sandbox's write grants and private folder, its
    /// working folder, the sandbox root): no program is run from there.
    pub writable: Vec<PathBuf>,
    /// Its private folder: the cache the fetch fills is in there.
    pub private: PathBuf,
    /// The host's own folder for it ([`super::fetch_dir`]): the record and the staging folder.
    pub own: PathBuf,
}

impl FetchPlaces {
    fn record_file(&self, fetcher: Fetcher) -> PathBuf {
        self.own.join(format!("{}.fetched", fetcher.name()))
    }
}

/// Whether `what` is already in the server's cache: fetched by [`fetch`] (the host's record
/// says so) and the cache is still there (a server that emptied it has it fetched again).
pub fn fetched(places: &FetchPlaces, what: &Fetch) -> bool {
    let cache = what.fetcher.cache(&places.private);
    let has_cache = std::fs::read_dir(&cache).is_ok_and(|mut d| d.next().is_some());
    has_cache
        && std::fs::read_to_string(places.record_file(what.fetcher))
            .is_ok_and(|m| m == what.record())
}

/// Fetches `what` and its dependencies into the server's cache with the app's own package
/// manager ([`tools`]), outside the sandbox and with the user's own settings (registry or index,
/// proxy), nothing of the package run; then records it. The error says what was refused, or
/// what the package manager said.
pub async fn fetch(places: &FetchPlaces, what: &Fetch) -> Result<(), String> {
    let tools = tools::find(
        what.fetcher.wants(),
        places.app_path.as_deref(),
        &places.writable,
    )?;
    let _ = std::fs::remove_file(places.record_file(what.fetcher));
    let staging = places.own.join("staging");
    let _ = std::fs::remove_dir_all(&staging);
    crate::paths::private_dir(&staging)
        .map_err(|e| format!("cannot make its staging folder: {e}"))?;
    let cache = what.fetcher.cache(&places.private);
    let done = async {
        match what.fetcher {
            Fetcher::Npm => npm::fetch(&tools, what, &cache, &places.own, &staging).await,
            Fetcher::Uv => uv::fetch(&tools, what, &cache, &staging, &places.writable).await,
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
    std::fs::write(places.record_file(what.fetcher), what.record())
        .map_err(|e| format!("cannot record the fetched package: {e}"))
}

/// A package manager's command: the app's own program with its PATH ([`Tools::path`]), the
/// server's cache, run in the host's staging folder, its output kept for the error.
fn command(
    tools: &Tools,
    cache_var: &str,
    cache: &Path,
    staging: &Path,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&tools.manager);
    cmd.env(cache_var, cache)
        .env("PATH", &tools.path)
        .current_dir(staging)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
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

/// What the parsers' tests build.
#[cfg(test)]
mod testing {
    use super::{Fetch, Fetcher};

    pub fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    pub fn fetch_of(fetcher: Fetcher, packages: &[&str], options: &[&str]) -> Fetch {
        let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Fetch {
            fetcher,
            packages: owned(packages),
            options: owned(options),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testing::{fetch_of, words};

    #[test]
    fn what_was_fetched_is_recorded_by_the_host_and_its_specs() {
        let dir = tempfile::tempdir().unwrap();
        let places = FetchPlaces {
            app_path: None,
            writable: vec![],
            private: dir.path().join("private/x"),
            own: dir.path().join("private/.fetched/x"),
        };
        std::fs::create_dir_all(&places.own).unwrap();
        let npm = |p: &[&str]| fetch_of(Fetcher::Npm, p, &[]);
        let a1 = npm(&["a@1"]);
        let record = |f: &Fetch| std::fs::write(places.record_file(f.fetcher), f.record()).unwrap();
        let cache = |f: Fetcher| {
            let c = f.cache(&places.private);
            std::fs::create_dir_all(&c).unwrap();
            std::fs::write(c.join("x"), "").unwrap();
        };
        assert!(!fetched(&places, &a1));
        record(&a1);
        assert!(!fetched(&places, &a1), "no cache: fetched again");
        cache(Fetcher::Npm);
        assert!(fetched(&places, &a1));
        // another version, or another set, is fetched again
        assert!(!fetched(&places, &npm(&["a@2"])));
        assert!(!fetched(&places, &npm(&["a@1", "b@1"])));
        // each package manager has its own record, and the interpreter counts
        let uv = fetch_of(Fetcher::Uv, &["a==1"], &[]);
        assert!(!fetched(&places, &uv));
        cache(Fetcher::Uv);
        record(&uv);
        assert!(fetched(&places, &uv) && fetched(&places, &a1));
        let other_python = Fetch {
            options: vec!["--python".into(), "3.12".into()],
            ..uv.clone()
        };
        assert!(!fetched(&places, &other_python));
        // the record is the host's, not in the server's folder
        assert!(!places
            .record_file(Fetcher::Npm)
            .starts_with(&places.private));
        // a server that empties its cache has it fetched again
        std::fs::remove_dir_all(Fetcher::Npm.cache(&places.private)).unwrap();
        assert!(!fetched(&places, &a1));
    }

    #[test]
    fn only_npx_and_uvx_fetch() {
        let w = words;
        let by = |c: &str, a: &str| to_fetch(c, &w(a)).unwrap().map(|f| f.fetcher);
        assert_eq!(by("npx", "-y a@1"), Some(Fetcher::Npm));
        assert_eq!(by("/home/u/.local/bin/uvx", "a==1"), Some(Fetcher::Uv));
        assert_eq!(by("python3", "server.py"), None);
        assert_eq!(by("node", "a@1"), None);
        // an interpreter is asked for by version, never run from a path
        let e = to_fetch("uvx", &w("--python /tmp/x/python3 a==1")).unwrap_err();
        assert!(e.contains("/tmp/x/python3"), "{e}");
    }
}
