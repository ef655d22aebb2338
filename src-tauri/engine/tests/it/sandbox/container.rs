//! A container entry is its own sandbox (`mcp/sandbox/container.rs`): the docker command runs
//! outside Switchboard's sandbox (it must reach its daemon by a Unix socket), but only with the
//! options checked before each start, `--network=none` without the network, and only the
//! sandbox's environment allow-list. Against a stand-in `docker` (a script that notes how it was
//! run, reads a file no sandbox would let it, then runs a Python MCP server as "the container"),
//! since this machine has no Docker daemon; the real one in the last test, skipped without one.

use std::path::{Path, PathBuf};

use super::*;

/// A `docker` in `dir/<name>/` that notes its arguments and environment in `dir/<name>.args`
/// and `.env`, copies `outside` (a file of the test's) into `dir/<name>.outside`, then runs the
/// network fixture server. Its path.
fn stand_in(dir: &Path, name: &str, outside: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join(name);
    std::fs::create_dir_all(&bin).unwrap();
    let docker = bin.join("docker");
    let note = |ext: &str| dir.join(format!("{name}.{ext}")).display().to_string();
    std::fs::write(
        &docker,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nenv > '{}'\ncat '{}' > '{}'\nexec python3 '{}'\n",
            note("args"),
            note("env"),
            outside.display(),
            note("outside"),
            fixture("net_server.py").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
    docker
}

fn container(docker: &Path, args: &[&str], sandbox: SandboxConfig) -> ServerConfig {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    sandboxed(
        ServerConfig::new(docker.display().to_string(), &all),
        sandbox,
    )
}

#[tokio::test]
async fn a_container_runs_its_docker_command_outside_the_sandbox_only_as_checked() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let outside = root.join("not-granted.txt");
    std::fs::write(&outside, "the daemon's socket stands for this").unwrap();
    let data = root.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let d = data.display().to_string();
    let mut ok = container(
        &stand_in(&root, "ok", &outside),
        &[
            "--rm",
            "-i",
            "--network=none",
            "-e",
            "GREETING",
            "-v",
            &format!("{d}:/data"),
            "img:1",
        ],
        SandboxConfig {
            write: vec![d.clone()],
            ..Default::default()
        },
    );
    ok.env
        .insert("GREETING".into(), SecretValue::Plain("hello".into()));
    let none = SandboxConfig::default();
    let refused = [
        (
            "privileged",
            vec!["-i", "--network=none", "--privileged", "img:1"],
            "--privileged",
        ),
        ("netless", vec!["-i", "img:1"], "--network=none"),
        (
            "socket",
            vec![
                "-i",
                "--network=none",
                "-v",
                "/var/run/docker.sock:/s",
                "img:1",
            ],
            "did not give",
        ),
    ];
    let mut servers = vec![("ok", ok)];
    for (name, args, _) in &refused {
        servers.push((
            name,
            container(&stand_in(&root, name, &outside), args, none.clone()),
        ));
    }
    let host = host(&root, servers, None).await;

    let v = view(&host, "ok");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    let sb = v.sandbox.clone().unwrap();
    assert_eq!(sb.state, SandboxState::Container);
    assert!(sb.protections.is_empty());
    assert!(
        v.stderr_tail
            .join("\n")
            .contains("runs a container, which is its sandbox"),
        "{:?}",
        v.stderr_tail
    );
    // run as configured, outside Switchboard's sandbox: it read what a sandbox would refuse,
    // and no seccomp filter is on it
    let args = std::fs::read_to_string(root.join("ok.args")).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "run",
            "--rm",
            "-i",
            "--network=none",
            "-e",
            "GREETING",
            "-v",
            &format!("{d}:/data"),
            "img:1"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("ok.outside")).unwrap(),
        "the daemon's socket stands for this"
    );
    assert_eq!(proc_status(v.pid.unwrap(), "Seccomp"), "0");
    // its environment: the allow-list and its own, what `-e GREETING` passes; nothing else of
    // the app's
    let env = std::fs::read_to_string(root.join("ok.env")).unwrap();
    assert!(env.lines().any(|l| l == "GREETING=hello"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    for (k, _) in std::env::vars() {
        // what the stand-in's shell sets itself
        let shell = ["PWD", "OLDPWD", "SHLVL", "_"].contains(&k.as_str());
        let passes = shell
            || ["PATH", "HOME", "LANG", "LANGUAGE", "TZ"].contains(&k.as_str())
            || k.starts_with("LC_")
            || switchboard_engine::mcp::sandbox::CONTAINER_ENV.contains(&k.as_str());
        if !passes {
            assert!(
                !env.lines().any(|l| l.starts_with(&format!("{k}="))),
                "{k} reached the docker command"
            );
        }
    }
    let r = call(&host, "ok__env", json!({"name": "GREETING"})).await;
    assert_eq!(r.text, "hello");

    // refused before anything ran, named
    for (name, _, said) in refused {
        let v = view(&host, name);
        assert_eq!(v.status, ServerStatus::Failed, "{name}: {v:?}");
        assert_eq!(v.failed_step, Some(Step::Sandbox), "{name}");
        let e = v.error.unwrap_or_default();
        assert!(
            e.starts_with("its container is refused") && e.contains(said),
            "{name}: {e}"
        );
        assert!(!root.join(format!("{name}.args")).exists(), "{name} ran");
    }
    host.shutdown().await;
}

/// The real Docker: a container without network, its MCP server answering over stdin/stdout.
/// Skipped (and says so) where no Docker daemon answers, as on the machine these tests were
/// written on; pulls `python:3.12-alpine` when it is not there.
#[tokio::test]
async fn a_real_container_runs_with_no_network() {
    let running = std::process::Command::new("docker")
        .arg("info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !running {
        eprintln!("skipped: no Docker daemon answers here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = std::fs::read_to_string(fixture("net_server.py")).unwrap();
    let cfg = container(
        Path::new("docker"),
        &[
            "--rm",
            "-i",
            "--network=none",
            "python:3.12-alpine",
            "python3",
            "-c",
            &server,
        ],
        SandboxConfig::default(),
    );
    let mut opts = host_options();
    opts.sandbox_dir = dir.path().join("private");
    opts.start_timeout = Duration::from_secs(300);
    let host = McpHost::new(opts);
    host.start_all(&config(vec![("box", cfg)])).await;
    let v = view(&host, "box");
    assert_eq!(v.status, ServerStatus::Running, "{v:?}");
    assert_eq!(v.sandbox.unwrap().state, SandboxState::Container);
    // no network in there
    let r = call(&host, "box__resolve", json!({"name": "example.com"})).await;
    assert!(r.is_error, "{r:?}");
    host.shutdown().await;
}
