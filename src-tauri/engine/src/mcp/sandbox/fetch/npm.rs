//! npm's part of [`super::fetch`]: the packages `npx` runs, fetched with npm, install scripts
//! off. Scripts off is not enough: npm 10 and older run a git dependency's `prepare` while they
//! pack it, and a tarball, `file:` or `link:` dependency is not the registry's. So git is off for
//! the whole fetch (npm's `git` is a program that does not exist), the tree is resolved first
//! into a lockfile only, and the fetch goes on only when every package in it comes from the
//! registry: an https (or loopback http) tarball of the configured registry with its integrity,
//! no link, every dependency a registry range ([`check_lock`]). Then npm installs exactly that
//! lockfile (`npm ci`, scripts off) into the host's staging folder, which fills the server's cache.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{command, loopback, remote_source, run, Fetch, Fetcher, Tools};

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

/// Fetches `what` into the npm cache `cache`: resolved into a lockfile in `staging` (git off),
/// refused unless every package is the registry's ([`check_lock`]), installed from that
/// lockfile (which fills the cache with every dependency), then `npm cache add` for the full
/// documents npx reads. `own`: the host's folder (npm's logs, and the git that is not there).
pub(super) async fn fetch(
    tools: &Tools,
    what: &Fetch,
    cache: &Path,
    own: &Path,
    staging: &Path,
) -> Result<(), String> {
    let logs = own.join("logs");
    let _ = std::fs::remove_dir_all(&logs);
    // npm takes these from its command line over any setting of the user's
    let base: Vec<String> = vec![
        format!("--cache={}", cache.display()),
        format!("--logs-dir={}", logs.display()),
        // no git: nothing is cloned, so no git dependency's `prepare` can run
        format!("--git={}", own.join("git-is-off").display()),
        "--ignore-scripts".into(),
        "--no-audit".into(),
        "--no-fund".into(),
        "--update-notifier=false".into(),
        // every package's tarball address in the lockfile, to check
        "--omit-lockfile-registry-resolved=false".into(),
        "--install-links=false".into(),
    ];
    let npm = |args: &[&str], extra: &[String]| {
        let mut cmd = command(tools, "npm_config_cache", cache, staging);
        cmd.args(args).args(&base).args(extra);
        cmd
    };
    let staging_arg = format!("--prefix={}", staging.display());
    let mut asked = what.options.clone();
    asked.extend(what.packages.iter().cloned());
    let mut lock_only = vec![staging_arg.clone()];
    lock_only.extend(asked.iter().cloned());
    if let Err(e) = run("npm", npm(&["install", "--package-lock-only"], &lock_only)).await {
        // a dependency npm could not resolve without git (or from a path): named from its log
        return Err(match not_from_registry_in_log(&logs) {
            Some(refusal) => refusal,
            None => e,
        });
    }
    let lock = std::fs::read_to_string(staging.join("package-lock.json"))
        .map_err(|e| format!("npm wrote no lockfile: {e}"))?;
    let lock: Value =
        serde_json::from_str(&lock).map_err(|e| format!("npm's lockfile is not JSON: {e}"))?;
    let registries = registries(tools, cache, staging, &what.options).await?;
    check_lock(&lock, &registries)?;
    run("npm", npm(&["ci"], std::slice::from_ref(&staging_arg))).await?;
    // npx reads the full document of the package it runs, which an install does not keep
    run("npm", npm(&["cache", "add"], &asked)).await
}

/// The registries npm fetches from, as it is configured (the user's settings, and the registry
/// the server's command line names): the default one and one per scope.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Registries {
    pub default: String,
    pub scoped: BTreeMap<String, String>,
}

impl Registries {
    /// The registry of package `name` (`@scope/x`: its scope's, if it has one).
    fn of(&self, name: &str) -> &str {
        name.strip_prefix('@')
            .and_then(|r| r.split_once('/'))
            .and_then(|(scope, _)| self.scoped.get(&format!("@{scope}")))
            .map(String::as_str)
            .unwrap_or(&self.default)
    }
}

/// npm's registries, as `npm config list --json` says them with `options`.
async fn registries(
    tools: &Tools,
    cache: &Path,
    staging: &Path,
    options: &[String],
) -> Result<Registries, String> {
    let mut cmd = command(tools, "npm_config_cache", cache, staging);
    cmd.args(["config", "list", "--json"])
        .args(options)
        .stdout(std::process::Stdio::piped());
    let out = cmd
        .output()
        .await
        .map_err(|e| format!("cannot run npm: {e}"))?;
    let config: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("npm did not say its settings: {e}"))?;
    let mut r = Registries {
        default: config["registry"]
            .as_str()
            .unwrap_or("https://registry.npmjs.org/")
            .to_string(),
        scoped: BTreeMap::new(),
    };
    if let Some(o) = config.as_object() {
        for (k, v) in o {
            if let (Some(scope), Some(url)) = (k.strip_suffix(":registry"), v.as_str()) {
                if scope.starts_with('@') {
                    r.scoped.insert(scope.to_string(), url.to_string());
                }
            }
        }
    }
    Ok(r)
}

/// A dependency as a package's manifest writes it, from the registry: a version, a range or a
/// tag (`1.2.3`, `^1`, `>=1 <2`, `latest`, `*`, empty), or an alias of one (`npm:x@^1`). Not
/// git, GitHub's `user/repo`, a URL, `file:`, `link:` or a path.
pub(super) fn registry_spec(spec: &str) -> bool {
    let s = spec.trim();
    if let Some(alias) = s.strip_prefix("npm:") {
        let at = alias
            .char_indices()
            .skip(1)
            .find(|(_, c)| *c == '@')
            .map(|(i, _)| i);
        let (name, range) = match at {
            Some(i) => (&alias[..i], &alias[i + 1..]),
            None => (alias, ""),
        };
        return from_registry(name) && registry_spec(range);
    }
    !s.contains([':', '/', '\\']) && !s.starts_with('.')
}

/// Why a package of npm's lockfile is not the registry's, if one is not. Every entry: under
/// `node_modules/` (not a folder elsewhere), no link, its tarball over https (or loopback http)
/// from its registry, with an integrity; every dependency of every package a registry range
/// ([`registry_spec`]). Packages bundled inside another's tarball come with it.
pub(super) fn check_lock(lock: &Value, registries: &Registries) -> Result<(), String> {
    let Some(packages) = lock["packages"].as_object() else {
        return Err("npm's lockfile lists no packages (an older lockfile format)".into());
    };
    let refused = |what: String| {
        Err(format!(
            "refused: {what}. Only packages from the registry are fetched outside the sandbox \
             (git, a URL or a path could run its code or read your files)"
        ))
    };
    for (key, entry) in packages {
        let name = entry["name"].as_str().map(String::from).unwrap_or_else(|| {
            key.rsplit("node_modules/")
                .next()
                .unwrap_or(key)
                .to_string()
        });
        let version = entry["version"].as_str().unwrap_or("");
        let label = if key.is_empty() {
            "the package asked for".to_string()
        } else {
            format!("{name}@{version}")
        };
        for field in [
            "dependencies",
            "optionalDependencies",
            "peerDependencies",
            "devDependencies",
        ] {
            for (dep, spec) in entry[field].as_object().into_iter().flatten() {
                let spec = spec.as_str().unwrap_or("");
                if !registry_spec(spec) {
                    return refused(format!(
                        "the dependency {dep} of {label} comes from \"{spec}\", not from the registry"
                    ));
                }
            }
        }
        if key.is_empty() {
            continue;
        }
        if !key.starts_with("node_modules/") || key.split('/').any(|p| p == "..") {
            return refused(format!(
                "{key} is a folder, not a package from the registry"
            ));
        }
        if entry["link"].as_bool() == Some(true) {
            return refused(format!("{name} is a link to {}", entry["resolved"]));
        }
        if entry["inBundle"].as_bool() == Some(true) {
            continue;
        }
        let resolved = entry["resolved"].as_str().unwrap_or("");
        let registry = registries.of(&name);
        let tarball = url::Url::parse(resolved).ok().filter(|u| {
            (u.scheme() == "https" || (u.scheme() == "http" && loopback(u)))
                && u.path().ends_with(".tgz")
                && u.query().is_none()
        });
        if tarball.is_none() || !under(resolved, registry) {
            return refused(format!(
                "{label} comes from \"{resolved}\", not from the registry {registry}"
            ));
        }
        let integrity = entry["integrity"].as_str().unwrap_or("");
        if !["sha512-", "sha384-", "sha256-", "sha1-"]
            .iter()
            .any(|p| integrity.starts_with(p))
        {
            return refused(format!("{label} has no integrity to check it by"));
        }
    }
    Ok(())
}

/// Whether `url` is at or below the registry address `base` (same scheme, host, port; its
/// path under the base's).
fn under(url: &str, base: &str) -> bool {
    let (Ok(u), Ok(b)) = (url::Url::parse(url), url::Url::parse(base)) else {
        return false;
    };
    let base_path = b.path().trim_end_matches('/');
    u.scheme() == b.scheme()
        && u.host_str() == b.host_str()
        && u.port_or_known_default() == b.port_or_known_default()
        && u.path().starts_with(&format!("{base_path}/"))
}

/// From npm's log of a resolution that failed: the dependencies it was fetching that are not
/// the registry's (a git one fails there, git being off), as a refusal naming them.
fn not_from_registry_in_log(logs: &Path) -> Option<String> {
    let mut named = Vec::new();
    for e in std::fs::read_dir(logs).ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for line in text.lines() {
            let Some(i) = line.find("fetch manifest ") else {
                continue;
            };
            let what = line[i + "fetch manifest ".len()..].trim();
            let at = what
                .char_indices()
                .skip(1)
                .find(|(_, c)| *c == '@')
                .map(|(i, _)| i);
            let Some(at) = at else { continue };
            let (name, spec) = (&what[..at], &what[at + 1..]);
            let this = format!("{name} (\"{spec}\")");
            if !registry_spec(spec) && !named.contains(&this) {
                named.push(this);
            }
        }
    }
    (!named.is_empty()).then(|| {
        format!(
            "refused: the dependency {} does not come from the registry (git is off for the \
             fetch: a git dependency could run its code while it is packed, outside the sandbox)",
            named.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::mcp::sandbox::fetch::testing::{fetch_of, words};

    #[test]
    fn the_packages_npx_runs() {
        let p = |cmd: &str, args: &str| npx_packages(cmd, &words(args));
        let fetch = |pkgs: &[&str], options: &[&str]| Some(fetch_of(Fetcher::Npm, pkgs, options));
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

    #[test]
    fn only_registry_specs_are_registry_specs() {
        for ok in [
            "1.2.3",
            "^1.0.0",
            "~1.2",
            ">=1 <2",
            "1.x",
            "*",
            "",
            "latest",
            "next",
            "npm:real@^1",
            "npm:@s/real@1.0.0",
            "1.0.0 || 2.0.0",
        ] {
            assert!(registry_spec(ok), "{ok}");
        }
        for bad in [
            "git+file:///tmp/x",
            "git://github.com/a/b.git",
            "git+ssh://git@h/a.git",
            "github:user/repo",
            "user/repo",
            "gitlab:u/r",
            "bitbucket:u/r",
            "gist:1234",
            "https://h/x.tgz",
            "http://127.0.0.1/x.tgz",
            "file:../x",
            "file:/abs",
            "link:../x",
            "../x",
            "./x",
            "/abs/x",
            "~/x",
            "..",
            "workspace:*",
            "npm:x@git+file:///y",
            "npm:../x",
            "C:\\x",
        ] {
            assert!(!registry_spec(bad), "{bad}");
        }
    }

    fn registry() -> Registries {
        Registries {
            default: "http://127.0.0.1:4873/npm/".into(),
            scoped: [("@s".to_string(), "https://s.example.com/".to_string())].into(),
        }
    }

    fn lock(packages: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"lockfileVersion": 3, "packages": packages})
    }

    fn good() -> serde_json::Value {
        serde_json::json!({
            "": {"dependencies": {"a": "1.0.0"}},
            "node_modules/a": {
                "version": "1.0.0",
                "resolved": "http://127.0.0.1:4873/npm/a/-/a-1.0.0.tgz",
                "integrity": "sha512-AAAA",
                "dependencies": {"@s/b": "^2", "c": "npm:c-real@1"}
            },
            "node_modules/@s/b": {
                "version": "2.0.0",
                "resolved": "https://s.example.com/@s/b/-/b-2.0.0.tgz",
                "integrity": "sha512-BBBB"
            },
            "node_modules/c": {
                "name": "c-real",
                "version": "1.0.0",
                "resolved": "http://127.0.0.1:4873/npm/c-real/-/c-real-1.0.0.tgz",
                "integrity": "sha1-CCCC"
            },
            "node_modules/a/node_modules/d": {"version": "1.0.0", "inBundle": true}
        })
    }

    #[test]
    fn a_lockfile_passes_only_when_every_package_is_the_registrys() {
        assert_eq!(check_lock(&lock(good()), &registry()), Ok(()));
        let with = |key: &str, patch: serde_json::Value| {
            let mut p = good();
            match patch {
                serde_json::Value::Null => {
                    p.as_object_mut().unwrap().remove(key);
                }
                serde_json::Value::Object(o) => {
                    let entry = p[key].as_object_mut().cloned().unwrap_or_default();
                    let mut entry = entry;
                    entry.extend(o);
                    p[key] = serde_json::Value::Object(entry);
                }
                _ => unreachable!(),
            }
            check_lock(&lock(p), &registry())
        };
        use serde_json::json;
        for (key, patch, named) in [
            // a git dependency, as npm with git would have locked it
            (
                "node_modules/a",
                json!({"dependencies": {"g": "git+file:///tmp/g"}}),
                "g",
            ),
            (
                "node_modules/a",
                json!({"optionalDependencies": {"u": "user/repo"}}),
                "u",
            ),
            (
                "node_modules/a",
                json!({"dependencies": {"t": "http://127.0.0.1:4873/npm/t/-/t-1.tgz"}}),
                "t",
            ),
            ("", json!({"dependencies": {"f": "file:../f"}}), "f"),
            (
                "node_modules/a",
                json!({"resolved": "git+file:///tmp/a#abc"}),
                "a@1.0.0",
            ),
            (
                "node_modules/a",
                json!({"resolved": "https://evil.example.com/npm/a/-/a-1.0.0.tgz"}),
                "evil",
            ),
            (
                "node_modules/a",
                json!({"resolved": "http://10.0.0.1:4873/npm/a/-/a-1.0.0.tgz"}),
                "a@1.0.0",
            ),
            (
                "node_modules/a",
                json!({"resolved": "http://127.0.0.1:4873/other/a-1.0.0.tgz"}),
                "a@1.0.0",
            ),
            (
                "node_modules/a",
                json!({"resolved": "file:../a.tgz"}),
                "a@1.0.0",
            ),
            ("node_modules/a", json!({"integrity": null}), "no integrity"),
            ("node_modules/a", json!({"link": true}), "link"),
            // a scoped package from the default registry, not its scope's
            (
                "node_modules/@s/b",
                json!({"resolved": "http://127.0.0.1:4873/npm/@s/b/-/b-2.0.0.tgz"}),
                "@s/b",
            ),
            ("../outside", json!({"version": "1.0.0"}), "../outside"),
            ("local", json!({"version": "1.0.0"}), "local"),
        ] {
            let e = with(key, patch.clone()).unwrap_err();
            assert!(
                e.starts_with("refused: ") && e.contains(named),
                "{key} {patch}: {e}"
            );
        }
        assert!(check_lock(
            &json!({"lockfileVersion": 1, "dependencies": {}}),
            &registry()
        )
        .is_err());
    }

    #[test]
    fn a_failed_resolution_names_the_dependency_that_is_not_the_registrys() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(not_from_registry_in_log(dir.path()), None);
        std::fs::write(
            dir.path().join("x-debug-0.log"),
            "13 silly idealTree buildDeps\n\
             14 silly fetch manifest mcp-x@1.0.0\n\
             15 silly fetch manifest @s/y@^2\n\
             16 silly fetch manifest dep@git+file:///tmp/exp/dep\n\
             17 silly fetch manifest other@user/repo\n",
        )
        .unwrap();
        let e = not_from_registry_in_log(dir.path()).unwrap();
        assert!(
            e.contains("dep (\"git+file:///tmp/exp/dep\")") && e.contains("other (\"user/repo\")"),
            "{e}"
        );
        assert!(!e.contains("mcp-x") && !e.contains("@s/y"), "{e}");
    }
}
