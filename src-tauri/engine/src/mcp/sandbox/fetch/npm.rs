//! npm's part of [`super::fetch`]: the packages `npx` runs, fetched with npm, install scripts off.

use std::path::Path;

use super::{beside, command, remote_source, run, Fetch, Fetcher};

/// The npm packages `npx` with `args` runs (`-p`/`--package` specs, else the first word) and the
/// registry it was told (the catalog's own, over https), when they come from a registry and every
/// option before them is known; `None` when `command` is not npx or the arguments say something
/// else (a path, a git URL, an option we do not know).
pub fn npx_packages(command: &str, args: &[String]) -> Option<Fetch> {
    let program = Path::new(command).file_name()?.to_str()?;
    if program != "npx" {
        return None;
    }
    let (mut packages, mut options) = (Vec::new(), Vec::new());
    let mut words = args.iter();
    while let Some(a) = words.next() {
        match a.as_str() {
            "-y" | "--yes" | "-q" | "--quiet" => {}
            "--registry" => {
                let url = words.next()?;
                remote_source(url).then(|| options.push(format!("--registry={url}")))?;
            }
            _ if a.starts_with("--registry=") => {
                remote_source(&a["--registry=".len()..]).then(|| options.push(a.clone()))?;
            }
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
    (!packages.is_empty() && packages.iter().all(|p| from_registry(p))).then_some(Fetch {
        fetcher: Fetcher::Npm,
        packages,
        options,
    })
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

/// Fetches `what` into `private`'s npm cache: installed into `staging` (which fills the cache
/// with every dependency), then `npm cache add` for the full documents npx reads.
pub(super) async fn fetch(
    npx: &Path,
    path_var: Option<&str>,
    what: &Fetch,
    private: &Path,
    staging: &Path,
) -> Result<(), String> {
    let npm = beside(npx, "npm", path_var).ok_or_else(|| {
        "npm was not found (npx needs it to fetch the package for the sandbox)".to_string()
    })?;
    let cache = super::Fetcher::Npm.cache(private);
    let run_npm = |args: Vec<&str>| {
        let mut cmd = command(&npm, path_var, "npm_config_cache", &cache);
        cmd.env("npm_config_update_notifier", "false").args(args);
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
    install.extend(what.options.iter().map(String::as_str));
    install.extend(what.packages.iter().map(String::as_str));
    // npx reads the full document of the package it runs, which an install does not keep
    let mut add = vec!["cache", "add"];
    add.extend(what.options.iter().map(String::as_str));
    add.extend(what.packages.iter().map(String::as_str));
    for args in [install, add] {
        run("npm", run_npm(args)).await?;
    }
    Ok(())
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
        let fetch = |pkgs: &[&str], options: &[&str]| {
            Some(Fetch {
                fetcher: Fetcher::Npm,
                packages: pkgs.iter().map(|s| s.to_string()).collect(),
                options: options.iter().map(|s| s.to_string()).collect(),
            })
        };
        let one = |s: &str| fetch(&[s], &[]);
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
            fetch(&["a@1", "@s/b@2"], &[])
        );
        // the catalog's own registry, as plan.rs writes it
        assert_eq!(
            p("npx", "-y --registry=https://npm.example.com x@1"),
            fetch(&["x@1"], &["--registry=https://npm.example.com"])
        );
        assert_eq!(
            p("npx", "--registry http://localhost:4873 x@1"),
            fetch(&["x@1"], &["--registry=http://localhost:4873"])
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
            ("npx", "--registry=file:///home/u/.ssh pkg"),
            ("npx", "--registry"),
            ("npx", "-y"),
            ("npx", "-y @/x"),
            ("npx", "-y @scope"),
        ] {
            assert_eq!(p(cmd, args), None, "{cmd} {args}");
        }
    }
}
