//! uv's part of [`super::fetch`]: the PyPI packages `uvx` runs, fetched with `uv pip install
//! --no-build` into a staging folder, which fills the server's uv cache with the wheels and the
//! index's answers that `uvx` then resolves from offline. Wheels only: building a source
//! distribution runs its code, which must not happen outside the sandbox, so a package that has
//! no wheel for this machine is refused with uv's own words.

use std::path::Path;

use super::{beside, command, remote_source, run, Fetch, Fetcher};

/// The PyPI packages `uvx` with `args` runs (`--from` and `--with` specs, else the command
/// itself) and the interpreter it was told to use, when every spec is a package from an index
/// and every option one we know; `None` when `command` is not uvx or the arguments say
/// something else (a path, a URL, a git source, an option we do not know).
pub fn uvx_packages(command: &str, args: &[String]) -> Option<Fetch> {
    let program = Path::new(command).file_name()?.to_str()?;
    if program != "uvx" {
        return None;
    }
    let (mut from, mut with, mut options) = (None, Vec::new(), Vec::new());
    let mut words = args.iter();
    let first = loop {
        let a = words.next()?;
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| words.next().cloned());
        match flag {
            "-q" | "--quiet" | "--isolated" | "--offline" => {}
            "--from" => from = Some(value()?),
            "--with" => with.extend(value()?.split(',').map(|s| s.trim().to_string())),
            "-p" | "--python" => {
                let p = value()?;
                if p.is_empty() || p.starts_with('-') {
                    return None;
                }
                options.extend(["--python".to_string(), p]);
            }
            // an index the entry names (the catalog's registry base URL), fetched from as uvx
            // would; only over the network: a `file:` index would copy the user's files into
            // the server's cache
            "--default-index" | "--index" | "--index-url" | "--extra-index-url" => {
                let url = value()?;
                if !remote_source(&url) {
                    return None;
                }
                options.extend([flag.to_string(), url]);
            }
            _ if a.starts_with('-') => return None,
            _ => break a.clone(),
        }
    };
    let mut packages = vec![pypi_spec(from.as_deref().unwrap_or(&first))?];
    for w in with.iter().filter(|w| !w.is_empty()) {
        packages.push(pypi_spec(w)?);
    }
    Some(Fetch {
        fetcher: Fetcher::Uv,
        packages,
        options,
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

/// Fetches `what` into `private`'s uv cache: `uv pip install --no-build --target staging`, with
/// the interpreter uvx would find on the same PATH (or the one it was told).
pub(super) async fn fetch(
    uvx: &Path,
    path_var: Option<&str>,
    what: &Fetch,
    private: &Path,
    staging: &Path,
) -> Result<(), String> {
    let uv = beside(uvx, "uv", path_var).ok_or_else(|| {
        "uv was not found (uvx needs it to fetch the package for the sandbox)".to_string()
    })?;
    let cache = Fetcher::Uv.cache(private);
    let mut cmd = command(&uv, path_var, "UV_CACHE_DIR", &cache);
    cmd.env_remove("VIRTUAL_ENV")
        .env("UV_NO_PROGRESS", "1")
        .args(["pip", "install", "--no-build", "--quiet", "--target"])
        .arg(staging);
    cmd.args(&what.options).arg("--").args(&what.packages);
    run("uv", cmd).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_packages_uvx_runs() {
        let p = |cmd: &str, args: &str| uvx_packages(cmd, &words(args));
        let fetch = |pkgs: &[&str], options: &[&str]| {
            Some(Fetch {
                fetcher: Fetcher::Uv,
                packages: pkgs.iter().map(|s| s.to_string()).collect(),
                options: options.iter().map(|s| s.to_string()).collect(),
            })
        };
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
            ("uvx", "--python -q pkg"),
        ] {
            assert_eq!(p(cmd, args), None, "{cmd} {args}");
        }
    }
}
