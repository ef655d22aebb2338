//! A container entry (`docker run …` or `podman run …`) is its own sandbox. The docker command
//! cannot work inside Switchboard's: it talks to its daemon over a Unix socket by path
//! (`/var/run/docker.sock`), which the sandbox refuses by design, and podman needs namespaces the
//! seccomp allow-list refuses. So a sandboxed server whose command is docker or podman `run`
//! runs without Landlock and seccomp, and the container is what holds it, but only as Switchboard
//! checked it before each start: every option before the image passes
//! `run_options::container_image_at` (no privileges, host namespaces, capabilities, devices,
//! security options, root, published ports, the API socket, a network other than none, and
//! mounts only of the folders its sandbox lists: read-only ones `:ro`); without the network it
//! must say `--network=none` (the container's network is Docker's, so per-host rules cannot hold
//! there: some hosts is none); and the docker command gets only the sandbox's environment
//! allow-list, the names its config grants and Docker's own settings ([`CONTAINER_ENV`]), so
//! `-e NAME` passes nothing else of the app's environment. Anything else is refused before it
//! starts, its reason on the row.

use std::ffi::OsString;

use super::*;

/// The programs that run containers this way.
pub const CONTAINER_PROGRAMS: &[&str] = &["docker", "podman"];

/// What the docker or podman command reads of the app's environment to find its daemon (never
/// passed into the container unless an `-e NAME` names it and the config sets it).
pub const CONTAINER_ENV: &[&str] = &[
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "DOCKER_API_VERSION",
    "CONTAINER_HOST",
    "CONTAINER_CONNECTION",
    "CONTAINERS_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "CONTAINERS_STORAGE_CONF",
    "XDG_RUNTIME_DIR",
];

/// Whether `cfg` runs a container: its command is docker or podman, and its first argument
/// `run`.
pub fn is_container(cfg: &ServerConfig) -> bool {
    let program = Path::new(&cfg.command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    CONTAINER_PROGRAMS.contains(&program) && cfg.args.first().map(String::as_str) == Some("run")
}

/// Why the container `cfg` runs cannot start as its sandbox `wanted` says (its options, its
/// network, its mounts: see the module's words); `None` when it can. `home` expands `~` in the
/// sandbox's folders.
pub fn container_refusal(
    cfg: &ServerConfig,
    wanted: &Wanted,
    home: Option<&Path>,
) -> Option<String> {
    let folders = |list: &[String]| -> Vec<PathBuf> {
        list.iter()
            .map(|p| {
                let p = expand_home(p, home);
                p.canonicalize().unwrap_or(p)
            })
            .collect()
    };
    let (write, read) = (folders(&wanted.config.write), folders(&wanted.config.read));
    let options = cfg.args.get(1..).unwrap_or_default();
    let mountable = super::run_options::Mountable {
        write: &write,
        read: &read,
    };
    let image = match super::run_options::container_image_at(options, mountable) {
        Ok(at) => at,
        Err(why) => return Some(why),
    };
    if !wanted.config.network && !network_none(&options[..image]) {
        return Some(
            "its sandbox has no network, and the container would have Docker's: add \
             --network=none to its arguments, or allow it the network"
                .into(),
        );
    }
    None
}

/// Whether `docker run` options give the container no network (`--network=none`, `--net none`).
pub fn network_none(options: &[String]) -> bool {
    options.iter().enumerate().any(|(i, a)| {
        matches!(a.as_str(), "--network=none" | "--net=none")
            || (matches!(a.as_str(), "--network" | "--net")
                && options.get(i + 1).map(String::as_str) == Some("none"))
    })
}

/// The environment of a container's docker command: of the app's (`inherited`) the sandbox's
/// allow-list ([`ENV_ALLOWED`], `LC_*`), the names in `granted` and [`CONTAINER_ENV`]. Its
/// configured environment goes over this (the caller adds it), which is what `-e NAME` passes.
pub fn container_environment(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    granted: &[String],
) -> Vec<(OsString, OsString)> {
    inherited
        .into_iter()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            ENV_ALLOWED.contains(&k.as_ref())
                || k.starts_with("LC_")
                || CONTAINER_ENV.contains(&k.as_ref())
                || granted.iter().any(|g| *g == k)
        })
        .collect()
}

fn expand_home(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix('~'), home) {
        (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
            h.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docker(args: &[&str], sandbox: &str) -> (ServerConfig, Wanted) {
        let cfg: ServerConfig = serde_json::from_value(serde_json::json!({
            "command": "docker", "args": args, "sandbox": serde_json::from_str::<serde_json::Value>(sandbox).unwrap()
        }))
        .unwrap();
        let w = wanted(&cfg).unwrap();
        (cfg, w)
    }

    #[test]
    fn a_container_runs_only_as_checked() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().canonicalize().unwrap();
        let d = data.display().to_string();
        let ok = |args: &[&str], sandbox: &str| {
            let (c, w) = docker(args, sandbox);
            assert!(is_container(&c) && w.container, "{args:?}");
            container_refusal(&c, &w, None)
        };
        let none = r#"{"network": false}"#;
        assert_eq!(
            ok(
                &[
                    "run",
                    "--rm",
                    "-i",
                    "--network=none",
                    "-e",
                    "KEY",
                    "img:1",
                    "--flag"
                ],
                none
            ),
            None
        );
        assert_eq!(
            ok(&["run", "--rm", "-i", "--net", "none", "img:1"], none),
            None
        );
        // a folder it was given, mounted as given
        let with = format!(r#"{{"network": false, "write": ["{d}"]}}"#);
        assert_eq!(
            ok(
                &[
                    "run",
                    "-i",
                    "--network=none",
                    "-v",
                    &format!("{d}:/data"),
                    "img:1"
                ],
                &with
            ),
            None
        );
        // with the network: Docker's
        assert_eq!(ok(&["run", "-i", "img:1"], r#"{"network": true}"#), None);
        // refused, named
        for (args, said) in [
            (vec!["run", "-i", "img:1"], "--network=none"),
            (
                vec!["run", "-i", "--network=none", "--privileged", "img:1"],
                "--privileged",
            ),
            (
                vec!["run", "-i", "--network=host", "img:1"],
                "--network=host",
            ),
            (
                vec!["run", "-i", "--network=none", "-v", "/:/host", "img:1"],
                "did not give",
            ),
            (
                vec![
                    "run",
                    "-i",
                    "--network=none",
                    "-v",
                    "/var/run/docker.sock:/s",
                    "img:1",
                ],
                "did not give",
            ),
            (
                vec!["run", "-i", "--network=none", "--user", "0", "img:1"],
                "root",
            ),
            (vec!["run", "-i", "--network=none"], "no image"),
        ] {
            let why = ok(&args, none).unwrap_or_else(|| panic!("{args:?} passed"));
            assert!(why.contains(said), "{args:?}: {why}");
        }
        // the container's own arguments after the image are its own
        assert_eq!(
            ok(
                &["run", "-i", "--network=none", "img:1", "--privileged"],
                none
            ),
            None
        );
        // not a container: docker ps, another program
        let (c, w) = docker(&["ps"], none);
        assert!(!is_container(&c) && !w.container);
        let cfg: ServerConfig = serde_json::from_value(
            serde_json::json!({"command": "/usr/bin/podman", "args": ["run"], "sandbox": true}),
        )
        .unwrap();
        assert!(is_container(&cfg));
    }

    #[test]
    fn the_docker_command_gets_the_allow_list_and_dockers_own_settings_only() {
        let host: Vec<(OsString, OsString)> = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("DOCKER_HOST", "unix:///run/user/1000/docker.sock"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("AWS_SECRET_ACCESS_KEY", "s3cret"),
            ("SSH_AUTH_SOCK", "/run/ssh"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let names = |granted: &[String]| -> Vec<String> {
            container_environment(host.clone(), granted)
                .into_iter()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(&[]),
            ["PATH", "HOME", "DOCKER_HOST", "XDG_RUNTIME_DIR"]
        );
        assert!(names(&["SSH_AUTH_SOCK".into()]).contains(&"SSH_AUTH_SOCK".to_string()));
    }
}
