//! A launcher's package, fetched by the host before a sandbox without network starts it. `npx`
//! downloads the package it runs when it starts, which a server with no network cannot: every
//! npm server installed from the catalog (network off by default) would fail at its first start.
//! So the host fetches the package and its dependencies into the server's own npm cache
//! (`<private>/cache/npm`, the one [`super::environment`] gives it) with npm itself, scripts
//! off — nothing of the package runs outside the sandbox — and the server's npx then installs
//! and runs it offline, inside. npm verifies every tarball against the registry's integrity hash,
//! as it does for any install.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

/// How long fetching may take (a large package on a slow line).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(300);

/// The npm packages `npx` with `args` runs (`-p`/`--package` specs, else the first word), when
/// they come from a registry and every option before them is known; `None` when `command` is not
/// npx or the arguments say something else (a path, a git URL, an option we do not know).
pub fn npx_packages(command: &str, args: &[String]) -> Option<Vec<String>> {
    let program = Path::new(command).file_name()?.to_str()?;
    if program != "npx" {
        return None;
    }
    let mut packages = Vec::new();
    let mut words = args.iter();
    while let Some(a) = words.next() {
        match a.as_str() {
            "-y" | "--yes" | "-q" | "--quiet" => {}
            "-p" | "--package" => packages.push(words.next()?.clone()),
            "--" => {
                if packages.is_empty() {
                    packages.push(words.next()?.clone());
                }
                break;
            }
            _ if a.starts_with("--package=") => packages.push(a["--package=".len()..].into()),
            _ if a.starts_with('-') => return None,
            _ => {
                if packages.is_empty() {
                    packages.push(a.clone());
                }
                break;
            }
        }
    }
    (!packages.is_empty() && packages.iter().all(|p| from_registry(p))).then_some(packages)
}

/// `name`, `name@range`, `@scope/name@range`: a package a registry gives (not a path, a URL,
/// a git or file spec, an alias).
fn from_registry(spec: &str) -> bool {
    let name = match spec.strip_prefix('@') {
        Some(rest) => {
            let Some((scope, name)) = rest.split_once('/') else {
                return false;
            };
            let name = name.split('@').next().unwrap_or_default();
            if scope.is_empty() {
                return false;
            }
            name
        }
        None => spec.split('@').next().unwrap_or_default(),
    };
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
        && !spec.contains(':')
}

/// The record of what was fetched into a cache: the specs, one a line.
fn marker(private: &Path) -> PathBuf {
    private
        .join("cache")
        .join("npm")
        .join(".switchboard-fetched")
}

/// Whether `packages` are already in `private`'s npm cache (fetched by [`fetch_npm`]).
pub fn npm_fetched(private: &Path, packages: &[String]) -> bool {
    std::fs::read_to_string(marker(private)).is_ok_and(|m| m == packages.join("\n"))
}

/// Records that `packages` are in `private`'s npm cache.
fn record_fetched(private: &Path, packages: &[String]) -> std::io::Result<()> {
    std::fs::write(marker(private), packages.join("\n"))
}

/// Fetches `packages` and their dependencies into `private`'s npm cache with the npm beside
/// `npx` (else the one on `path_var`), outside the sandbox and with the user's own npm settings
/// (registry, proxy), install scripts off; then records them. The error says what npm said.
pub async fn fetch_npm(
    npx: &Path,
    path_var: Option<&str>,
    packages: &[String],
    private: &Path,
) -> Result<(), String> {
    let npm = npm_beside(npx, path_var).ok_or_else(|| {
        "npm was not found (npx needs it to fetch the package for the sandbox)".to_string()
    })?;
    let cache = private.join("cache").join("npm");
    let staging = private.join("tmp").join("fetch");
    let _ = std::fs::remove_dir_all(&staging);
    let run = |args: Vec<&str>| {
        let mut cmd = tokio::process::Command::new(&npm);
        cmd.args(args)
            .env("npm_config_cache", &cache)
            .env("npm_config_update_notifier", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(p) = path_var {
            cmd.env("PATH", p);
        }
        cmd
    };
    let staging_arg = staging.display().to_string();
    let mut install = vec![
        "install",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--no-package-lock",
        "--prefix",
        &staging_arg,
    ];
    install.extend(packages.iter().map(String::as_str));
    // npx reads the full document of the package it runs, which an install does not keep
    let mut add = vec!["cache", "add"];
    add.extend(packages.iter().map(String::as_str));
    let done = async {
        for args in [install, add] {
            run_npm(run(args)).await?;
        }
        Ok::<(), String>(())
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
    record_fetched(private, packages).map_err(|e| format!("cannot record the fetched package: {e}"))
}

/// Runs npm; its error is the last lines it wrote.
async fn run_npm(mut cmd: tokio::process::Command) -> Result<(), String> {
    let mut child = cmd.spawn().map_err(|e| format!("cannot run npm: {e}"))?;
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
        .filter(|l| !l.contains("A complete log of this run"))
        .collect();
    let tail = said[said.len().saturating_sub(3)..].join(" ");
    Err(format!("npm could not fetch it ({status}): {tail}"))
}

/// `npm` in the folder `npx` was found in, else on `path_var`.
fn npm_beside(npx: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    let beside = npx.with_file_name("npm");
    if beside.is_file() {
        return Some(beside);
    }
    let cwd = std::env::current_dir().ok()?;
    which::which_in(
        "npm",
        path_var.or(std::env::var("PATH").ok().as_deref()),
        cwd,
    )
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_packages_npx_runs() {
        let p = |cmd: &str, args: &str| npx_packages(cmd, &words(args));
        let one = |s: &str| Some(vec![s.to_string()]);
        assert_eq!(
            p(
                "npx",
                "-y @modelcontextprotocol/server-everything@2026.8.31 stdio"
            ),
            one("@modelcontextprotocol/server-everything@2026.8.31")
        );
        assert_eq!(p("/usr/bin/npx", "--yes left-pad"), one("left-pad"));
        assert_eq!(p("npx", "-y -- mcp-x@1.0.0 --flag"), one("mcp-x@1.0.0"));
        assert_eq!(
            p("npx", "-y -p a@1 --package=@s/b@2 run-it"),
            Some(vec!["a@1".to_string(), "@s/b@2".to_string()])
        );
        // not npx, or not a registry's package, or an option we do not know: left to npx
        for (cmd, args) in [
            ("node", "server.js"),
            ("uvx", "mcp-server-time"),
            ("npx", "-y ./local"),
            ("npx", "-y /abs/pkg"),
            ("npx", "-y github:user/repo"),
            ("npx", "-y git+https://x/y.git"),
            ("npx", "-y file:../x"),
            ("npx", "-y alias@npm:real@1"),
            ("npx", "--registry http://evil pkg"),
            ("npx", "-y"),
            ("npx", "-y @/x"),
            ("npx", "-y @scope"),
        ] {
            assert_eq!(p(cmd, args), None, "{cmd} {args}");
        }
    }

    #[test]
    fn what_was_fetched_is_recorded_by_its_specs() {
        let dir = tempfile::tempdir().unwrap();
        let pkgs = vec!["a@1".to_string()];
        assert!(!npm_fetched(dir.path(), &pkgs));
        std::fs::create_dir_all(dir.path().join("cache/npm")).unwrap();
        record_fetched(dir.path(), &pkgs).unwrap();
        assert!(npm_fetched(dir.path(), &pkgs));
        // another version, or another set, is fetched again
        assert!(!npm_fetched(dir.path(), &["a@2".to_string()]));
        assert!(!npm_fetched(
            dir.path(),
            &["a@1".to_string(), "b@1".to_string()]
        ));
    }
}
