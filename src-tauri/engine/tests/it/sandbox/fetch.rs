//! The package fetch a server without network gets from the host runs nothing of the server's
//! choosing: not a program it planted on its PATH (the host uses the app's own npm and node,
//! never from a folder the server may write), and no package that is not the registry's (a git
//! or tarball dependency is refused, named, before anything of it runs). Against npm packages
//! served by the registry stand-in on loopback.

use std::path::{Path, PathBuf};

use crate::support::npm_packages::*;
use crate::support::registry::Registry;

use super::*;

/// A program at `dir/name` that, when run, appends to `proof` (which the sandbox does not let a
/// server write), then runs the real `name`.
fn plant(dir: &Path, name: &str, proof: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let real = which::which(name).unwrap_or_else(|_| panic!("{name} is on this PATH"));
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"$0 ran\" >> '{}' 2>/dev/null\nexec '{}' \"$@\"\n",
            proof.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn npx(base: &str, package: &str) -> ServerConfig {
    ServerConfig::new("npx", &["-y", &format!("--registry={base}"), package])
}

/// A server that may write a folder on its PATH (its config's, and the app's too) plants `npm`
/// and `node` there; after its start it empties its cache (all it can reach of what the host
/// fetched: the record is the host's) and is started again: the fetch runs again, with the
/// app's own npm and node, and the planted programs never run outside the sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_a_server_plants_on_its_path_never_runs_outside_its_sandbox() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let reg = Registry::start(vec![]);
    publish_tiny_server(&reg, "mcp-tiny", "1.0.0", json!({}));
    let planted = root.join("planted");
    std::fs::create_dir_all(&planted).unwrap();
    let proof = root.join("proof");
    for name in ["npm", "node"] {
        plant(&planted, name, &proof);
    }
    let path = format!("{}:{}", planted.display(), std::env::var("PATH").unwrap());
    let mut server = sandboxed(
        npx(&npm_base(&reg), "mcp-tiny@1.0.0"),
        SandboxConfig {
            write: vec![planted.display().to_string()],
            ..Default::default()
        },
    );
    server
        .env
        .insert("PATH".into(), SecretValue::Plain(path.clone()));
    let servers = || vec![("tiny", server.clone())];

    let host = host_with_path(&root, servers(), Some(path.clone())).await;
    let v = view(&host, "tiny");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    let log = v.stderr_tail.join("\n");
    assert!(
        log.contains("fetching mcp-tiny@1.0.0 for its sandbox"),
        "{log}"
    );
    // the planted node did run, but inside: npx found it on the server's PATH
    let r = call(&host, "tiny__argv", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        !proof.exists(),
        "{}",
        std::fs::read_to_string(&proof).unwrap()
    );
    // what the host keeps of the fetch is out of the server's reach
    let private = root.join("private/tiny");
    let record = root.join("private/.fetched/tiny/npm.fetched");
    assert!(record.is_file());
    for granted in [&private, &planted] {
        assert!(!record.starts_with(granted));
    }
    host.shutdown().await;

    // all the server can do to the fetch: empty its cache (an old marker would be in there)
    std::fs::remove_dir_all(private.join("cache")).unwrap();
    let host = host_with_path(&root, servers(), Some(path)).await;
    let v = view(&host, "tiny");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    let log = v.stderr_tail.join("\n");
    assert!(
        log.contains("fetching mcp-tiny@1.0.0"),
        "fetched again: {log}"
    );
    assert!(
        !proof.exists(),
        "{}",
        std::fs::read_to_string(&proof).unwrap()
    );
    host.shutdown().await;

    // the same planted programs, run by the host's PATH as the fetch once did, would have left
    // the proof: the test can fail
    let out = std::process::Command::new(planted.join("npm"))
        .arg("--version")
        .env("PATH", format!("{}:/usr/bin:/bin", planted.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(proof.exists());
}

/// A package whose dependency is a git repository (whose `prepare` would write a file while npm
/// packs it), and one whose dependency is a tarball URL: each fetch is refused with the
/// dependency named, and nothing of either ran. npm here is 11, which would skip `prepare`
/// anyway: the refusal is Switchboard's, as its words say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_from_git_or_a_url_is_refused_before_anything_of_it_runs() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let proof = root.join("proof");
    let reg = Registry::start(vec![]);
    let repo = root.join("dep-git");
    git_package(&repo, "dep-git", &proof);
    publish_tiny_server(
        &reg,
        "mcp-gitdep",
        "1.0.0",
        json!({"dep-git": format!("git+file://{}", repo.display())}),
    );
    // a tarball that would write the proof if its install script ran
    let tar = tarball(
        "dep-tar",
        "1.0.0",
        &json!({"scripts": {"install": format!("echo ran > '{}'", proof.display())}}),
        &[],
    );
    let url = serve_tarball(&reg, "dep-tar", "1.0.0", tar);
    publish_tiny_server(&reg, "mcp-urldep", "1.0.0", json!({"dep-tar": url}));
    let base = npm_base(&reg);
    let locked = |pkg: &str| sandboxed(npx(&base, pkg), SandboxConfig::default());
    let host = host_with_path(
        &root,
        vec![
            ("git", locked("mcp-gitdep@1.0.0")),
            ("url", locked("mcp-urldep@1.0.0")),
        ],
        None,
    )
    .await;
    for (name, dep, source) in [
        ("git", "dep-git", format!("git+file://{}", repo.display())),
        ("url", "dep-tar", url.clone()),
    ] {
        let v = view(&host, name);
        assert_eq!(v.status, ServerStatus::Failed, "{v:?}");
        assert_eq!(v.failed_step, Some(Step::FetchingPackage), "{v:?}");
        let e = v.error.clone().unwrap_or_default();
        assert!(
            e.starts_with("refused: ") && e.contains(dep) && e.contains(&source),
            "{name}: {e}"
        );
        // nothing of it was kept as fetched
        let record: PathBuf = root.join(format!("private/.fetched/{name}/npm.fetched"));
        assert!(!record.exists());
    }
    assert!(!proof.exists());
    host.shutdown().await;
}
