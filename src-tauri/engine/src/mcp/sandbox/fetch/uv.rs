//! uv's part of [`super::fetch`]: the PyPI packages `uvx` runs, fetched with `uv pip install
//! --no-build` into a staging folder, which fills the server's uv cache with the wheels and the
//! index's answers that `uvx` then resolves from offline. Wheels only: building a source
//! distribution runs its code, which must not happen outside the sandbox, so a package that has
//! no wheel for this machine is refused with uv's own words. The interpreter uv runs to learn
//! its version is found by uv on the fetch's PATH (the app's, [`super::tools`]) or among the
//! ones uv installed; one asked for with `--python` is a version request, never a path.

use std::path::{Path, PathBuf};

use super::{command, remote_source, run, tools, Fetch, Fetcher, Tools};

/// The PyPI packages `uvx` with `args` runs (`--from` and `--with` specs, else the command
/// itself) and the interpreter it was told to use, when every spec is a package from an index
/// and every option one we know; `Ok(None)` when `command` is not uvx or the arguments say
/// something else (a path, a URL, a git source, an option we do not know). `Err` when it asks
/// for an interpreter that is not a version (`--python /some/python`): the host would run it.
pub fn uvx_packages(command: &str, args: &[String]) -> Result<Option<Fetch>, String> {
    let program = Path::new(command).file_name().and_then(|p| p.to_str());
    if program != Some("uvx") {
        return Ok(None);
    }
    // `None` in here: not ours to fetch (left to uvx, inside the sandbox)
    macro_rules! or_leave {
        ($e:expr) => {
            match $e {
                Some(v) => v,
                None => return Ok(None),
            }
        };
    }
    let (mut from, mut with, mut options) = (None, Vec::new(), Vec::new());
    let mut words = args.iter();
    let first = loop {
        let a = or_leave!(words.next());
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| words.next().cloned());
        match flag {
            "-q" | "--quiet" | "--isolated" | "--offline" => {}
            "--from" => from = Some(or_leave!(value())),
            "--with" => with.extend(or_leave!(value()).split(',').map(|s| s.trim().to_string())),
            "-p" | "--python" => {
                let p = or_leave!(value());
                if !python_request(&p) {
                    return Err(format!(
                        "its interpreter \"{p}\" is not a Python version (like 3.12): the host \
                         fetches its package with the app's own Python, never a program a \
                         server's settings point to"
                    ));
                }
                options.extend(["--python".to_string(), p]);
            }
            // an index the entry names (the catalog's registry base URL), fetched from as uvx
            // would; only over the network: a `file:` index would copy the user's files into
            // the server's cache
            "--default-index" | "--index" | "--index-url" | "--extra-index-url" => {
                let url = or_leave!(value());
                if !remote_source(&url) {
                    return Ok(None);
                }
                options.extend([flag.to_string(), url]);
            }
            _ if a.starts_with('-') => return Ok(None),
            _ => break a.clone(),
        }
    };
    let mut packages = vec![or_leave!(pypi_spec(from.as_deref().unwrap_or(&first)))];
    for w in with.iter().filter(|w| !w.is_empty()) {
        packages.push(or_leave!(pypi_spec(w)));
    }
    Ok(Some(Fetch {
        fetcher: Fetcher::Uv,
        packages,
        options,
    }))
}

/// An interpreter uv is asked for by version (`3.12`, `>=3.11,<3.13`, `cpython@3.12`,
/// `pypy3.10`, `python3.12`: found by uv on the fetch's PATH or among its own), never by path:
/// nothing with `/` or `\\`, nothing hidden, no option, nothing from home.
pub fn python_request(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 64
        && !p.starts_with(['.', '-', '~'])
        && p.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '.' | '@' | '<' | '>' | '=' | '!' | ',' | '+' | '*' | '_' | '-' | '~'
                )
        })
}

/// A requirement an index gives (`name`, `name[extra]`, with `==1.2`, `>=1,<2` or uvx's
/// `@1.2`), as `uv pip install` takes it (`@1.2` → `==1.2`, `@latest` → the name); `None` for a
/// path, a URL, a git source, markers or anything else.
fn pypi_spec(spec: &str) -> Option<String> {
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    let (name, mut rest) = spec.split_at(end);
    if !is_name(name) {
        return None;
    }
    let mut out = name.to_string();
    if let Some(r) = rest.strip_prefix('[') {
        let (extras, after) = r.split_once(']')?;
        if !extras.split(',').all(|e| is_name(e.trim())) {
            return None;
        }
        out.push_str(&format!("[{extras}]"));
        rest = after;
    }
    let version_ok = |v: &str| {
        !v.is_empty()
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '*' | '+' | '!' | '_'))
    };
    if rest.is_empty() {
        return Some(out);
    }
    if let Some(v) = rest.strip_prefix('@') {
        if v == "latest" {
            return Some(out);
        }
        return version_ok(v).then(|| format!("{out}=={v}"));
    }
    const OPS: [&str; 8] = ["===", "==", "!=", "~=", ">=", "<=", ">", "<"];
    for clause in rest.split(',') {
        let op = OPS.iter().find(|op| clause.starts_with(**op))?;
        if !version_ok(&clause[op.len()..]) {
            return None;
        }
    }
    Some(out + rest)
}

/// Fetches `what` into the uv cache `cache`: `uv pip install --no-build --target staging`,
/// uv and its interpreter the app's own ([`Tools`]). When the server may write where uv keeps
/// the interpreters it installed, uv is told not to use them.
pub(super) async fn fetch(
    tools: &Tools,
    what: &Fetch,
    cache: &Path,
    staging: &Path,
    writable: &[PathBuf],
) -> Result<(), String> {
    let mut cmd = command(tools, "UV_CACHE_DIR", cache, staging);
    cmd.env_remove("VIRTUAL_ENV")
        .env_remove("UV_PYTHON")
        .env("UV_NO_PROGRESS", "1")
        .args(["pip", "install", "--no-build", "--quiet", "--target"])
        .arg(staging.join("target"));
    if !managed_out_of_reach(writable) {
        cmd.arg("--no-managed-python");
    }
    cmd.args(&what.options).arg("--").args(&what.packages);
    run("uv", cmd).await
}

/// Whether the interpreters uv installed (`UV_PYTHON_INSTALL_DIR`, else
/// `~/.local/share/uv/python`) are out of the server's reach: no write grant of it, in it or
/// above it.
fn managed_out_of_reach(writable: &[PathBuf]) -> bool {
    let dir = std::env::var_os("UV_PYTHON_INSTALL_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("uv/python")));
    let Some(dir) = dir else { return true };
    let writable = tools::with_resolved(writable);
    let real = dir.canonicalize().unwrap_or(dir.clone());
    !writable.iter().any(|w| {
        [&dir, &real]
            .iter()
            .any(|d| d.starts_with(w) || w.starts_with(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::mcp::sandbox::fetch::testing::{fetch_of, words};

    #[test]
    fn the_packages_uvx_runs() {
        let p = |cmd: &str, args: &str| uvx_packages(cmd, &words(args)).unwrap();
        let fetch = |pkgs: &[&str], options: &[&str]| Some(fetch_of(Fetcher::Uv, pkgs, options));
        assert_eq!(
            p("uvx", "mcp-server-time==2026.10.19 --local-timezone UTC"),
            fetch(&["mcp-server-time==2026.10.19"], &[])
        );
        assert_eq!(
            p("/home/u/.local/bin/uvx", "mcp-server-fetch@2025.4.7"),
            fetch(&["mcp-server-fetch==2025.4.7"], &[])
        );
        assert_eq!(
            p("uvx", "pkg@latest"),
            fetch(&["pkg"], &[]),
            "@latest is the newest"
        );
        assert_eq!(
            p(
                "uvx",
                "-q --python 3.12 --from mcp-x[cli]>=1.0,<2 --with=a==1,b mcp-x serve"
            ),
            fetch(&["mcp-x[cli]>=1.0,<2", "a==1", "b"], &["--python", "3.12"])
        );
        assert_eq!(
            p("uvx", "--from=Some_Pkg.x==0.1.dev3 run"),
            fetch(&["Some_Pkg.x==0.1.dev3"], &[])
        );
        // the catalog's own index, as plan.rs writes it
        assert_eq!(
            p(
                "uvx",
                "--default-index https://pypi.example.com/simple weather-mcp@0.5.0"
            ),
            fetch(
                &["weather-mcp==0.5.0"],
                &["--default-index", "https://pypi.example.com/simple"]
            )
        );
        assert_eq!(
            p("uvx", "--index-url=http://127.0.0.1:8080/simple x"),
            fetch(&["x"], &["--index-url", "http://127.0.0.1:8080/simple"])
        );
        // not uvx, or not an index's package, or an option we do not know: left to uvx
        for (cmd, args) in [
            ("uv", "tool run x"),
            ("npx", "-y x"),
            ("uvx", ""),
            ("uvx", "--from ./local run"),
            ("uvx", "--from /abs/pkg run"),
            ("uvx", "--from git+https://x/y.git run"),
            ("uvx", "--from x@https://evil/x.whl run"),
            ("uvx", "--from"),
            ("uvx", "--index-url http://evil pkg"),
            ("uvx", "--default-index file:///home/u/.ssh pkg"),
            ("uvx", "--extra-index-url /home/u/.ssh pkg"),
            ("uvx", "--keyring-provider subprocess pkg"),
            ("uvx", "-n pkg"),
            ("uvx", "pkg;os_name=='nt'"),
            ("uvx", "pkg==1;rm"),
            ("uvx", "-x"),
            ("uvx", "_pkg"),
            ("uvx", "pkg[a b]"),
            ("uvx", "pkg==1$(x)"),
        ] {
            assert_eq!(p(cmd, args), None, "{cmd} {args}");
        }
        // an interpreter by version, never by path: the host would run it
        for ok in [
            "3.12",
            ">=3.11,<3.13",
            "cpython@3.12",
            "pypy3.10",
            "python3.12",
            "3.13t",
        ] {
            assert!(python_request(ok), "{ok}");
        }
        for bad in [
            "/usr/bin/python3",
            "./py",
            "../py",
            "~/py",
            "py/thon",
            "-q",
            "",
            "a\\b",
            ".venv",
            "py thon",
        ] {
            assert!(!python_request(bad), "{bad}");
            let e = uvx_packages("uvx", &["--python".into(), bad.into(), "pkg".into()]);
            assert!(e.is_err(), "{bad}: {e:?}");
        }
    }
}
