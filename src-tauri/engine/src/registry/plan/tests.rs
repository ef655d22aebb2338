//! The config each kind of package (and a remote) makes, exactly; and what is refused.

use super::*;
use crate::form::{read_values, Given};
use crate::registry::server_json::ServerJson;
use serde_json::{json, Value};

fn server(packages: Value, remotes: Value) -> ServerJson {
    serde_json::from_value(json!({
        "name": "io.github.example/weather", "description": "d", "version": "1.2.0",
        "packages": packages, "remotes": remotes,
    }))
    .unwrap()
}

fn given(layout: &Layout, values: Value) -> BTreeMap<String, Given> {
    let values: BTreeMap<String, Value> = serde_json::from_value(values).unwrap();
    read_values(&layout.fields, &values, &|_| false, None).unwrap()
}

fn with_docker(p: &str) -> bool {
    p == "docker"
}

fn build(p: &Package, values: Value, network: bool, has: &dyn Fn(&str) -> bool) -> ServerConfig {
    assert_eq!(refusal(p), None);
    let l = Layout::of_package(p);
    assert_eq!(l.refused, None);
    package_config(
        p,
        &l,
        &given(&l, values),
        &Launch {
            has_program: has,
            network,
        },
    )
}

fn plain(c: &ServerConfig, k: &str) -> Option<String> {
    match c.env.get(k)? {
        SecretValue::Plain(v) => Some(v.clone()),
        _ => None,
    }
}

fn new_secret(v: Option<&SecretValue>) -> Option<String> {
    match v? {
        SecretValue::New(v) => Some(v.clone()),
        _ => None,
    }
}

#[test]
fn npm_runs_the_pinned_version_through_npx_with_its_arguments_and_environment() {
    let s = server(
        json!([{
            "registryType": "npm", "identifier": "@example/weather-mcp", "version": "1.2.0",
            "transport": {"type": "stdio"},
            "runtimeArguments": [{"type": "named", "name": "--node-options", "value": "--max-old-space-size=256"}],
            "packageArguments": [
                {"type": "positional", "valueHint": "city", "isRequired": true},
                {"type": "named", "name": "--units", "choices": ["metric", "imperial"], "default": "metric"},
                {"type": "named", "name": "--verbose", "format": "boolean"},
                {"type": "named", "name": "--stdio"},
                {"type": "named", "name": "-e", "value": "MODE={mode}",
                 "variables": {"mode": {"choices": ["a", "b"], "isRequired": true}}}
            ],
            "environmentVariables": [
                {"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true},
                {"name": "LOG_LEVEL", "default": "info"}
            ]
        }]),
        json!([]),
    );
    let c = build(
        &s.packages[0],
        json!({"city": "Paris", "WEATHER_API_KEY": "k-123", "verbose": true, "mode": "b"}),
        false,
        &with_docker,
    );
    assert_eq!(c.command, "npx");
    assert_eq!(
        c.args,
        [
            "-y",
            // a value that looks like an option stays bound to its name
            "--node-options=--max-old-space-size=256",
            "@example/weather-mcp@1.2.0",
            "Paris",
            "--units",
            "metric",
            "--verbose",
            "--stdio",
            "-e",
            "MODE=b"
        ]
    );
    assert_eq!(
        new_secret(c.env.get("WEATHER_API_KEY")).as_deref(),
        Some("k-123")
    );
    assert_eq!(plain(&c, "LOG_LEVEL").as_deref(), Some("info"));
    // another npm registry is named on the command line
    let mut p = s.packages[0].clone();
    p.registry_base_url = Some("https://npm.example.com/".into());
    let c = build(
        &p,
        json!({"city": "x", "WEATHER_API_KEY": "k", "mode": "a"}),
        false,
        &with_docker,
    );
    assert_eq!(c.args[1], "--registry=https://npm.example.com");
}

#[test]
fn pypi_nuget_and_oci_run_through_their_launchers() {
    let s = server(
        json!([
            {"registryType": "pypi", "identifier": "weather-mcp", "version": "0.5.0",
             "packageArguments": [{"type": "named", "name": "--port", "format": "number", "default": "8080"}]},
            {"registryType": "nuget", "identifier": "Knapcode.SampleMcpServer", "version": "0.4.0-beta",
             "packageArguments": [{"type": "positional", "value": "mcp"}, {"type": "positional", "value": "start"}]},
            {"registryType": "oci", "identifier": "ghcr.io/example/weather:1.2.0",
             "runtimeArguments": [{"type": "named", "name": "--mount", "value": "type=bind,src={src},dst=/data",
                "variables": {"src": {"format": "filepath", "isRequired": true}}}],
             "environmentVariables": [{"name": "TOKEN", "isSecret": true, "isRequired": true}],
             "packageArguments": [{"type": "positional", "value": "/data"}]},
            {"registryType": "oci", "identifier": "docker.io/mcp/filesystem", "version": "1.0.2"}
        ]),
        json!([]),
    );
    let c = build(&s.packages[0], json!({}), false, &with_docker);
    assert_eq!(
        (c.command.as_str(), c.args.clone()),
        (
            "uvx",
            vec![
                "weather-mcp@0.5.0".to_string(),
                "--port".into(),
                "8080".into()
            ]
        )
    );
    let c = build(&s.packages[1], json!({}), false, &with_docker);
    assert_eq!(c.command, "dnx");
    assert_eq!(
        c.args,
        [
            "Knapcode.SampleMcpServer@0.4.0-beta",
            "--yes",
            "--",
            "mcp",
            "start"
        ]
    );
    let c = build(
        &s.packages[2],
        json!({"src": "/", "TOKEN": "t"}),
        false,
        &with_docker,
    );
    assert_eq!(c.command, "docker");
    assert_eq!(
        c.args,
        [
            "run",
            "--rm",
            "-i",
            "--network=none",
            "--mount",
            "type=bind,src=/,dst=/data",
            "-e",
            "TOKEN",
            "ghcr.io/example/weather:1.2.0",
            "/data"
        ],
        "the secret reaches the container by name, never on the command line"
    );
    assert_eq!(new_secret(c.env.get("TOKEN")).as_deref(), Some("t"));
    let c = build(
        &s.packages[2],
        json!({"src": "/", "TOKEN": "t"}),
        true,
        &|p| p == "podman",
    );
    assert_eq!(c.command, "podman", "docker is not there, podman is");
    assert!(
        !c.args.contains(&"--network=none".to_string()),
        "the user allowed the network"
    );
    let c = build(&s.packages[3], json!({}), false, &with_docker);
    assert_eq!(
        c.args.last().unwrap(),
        "docker.io/mcp/filesystem:1.0.2",
        "the version as the tag"
    );
}

#[test]
fn remotes_become_http_or_sse_servers_with_their_headers_as_secrets() {
    let s = server(
        json!([]),
        json!([
            {"type": "streamable-http", "url": "https://mcp.example.com/t/{tenant}/mcp",
             "variables": {"tenant": {"isRequired": true}},
             "headers": [{"name": "X-API-Key", "isRequired": true, "isSecret": true},
                         {"name": "X-Region", "default": "eu-west-1"}]},
            {"type": "sse", "url": "{base}/sse", "variables": {"base": {"isRequired": true}}}
        ]),
    );
    let l = Layout::of_remote(&s.remotes[0]);
    let c = remote_config(
        &s.remotes[0],
        &l,
        &given(&l, json!({"tenant": "../admin?x=1", "X-API-Key": "sk"})),
    )
    .unwrap();
    assert_eq!(c.transport(), crate::mcp::Transport::Http);
    assert_eq!(
        c.url.as_deref(),
        Some("https://mcp.example.com/t/..%2Fadmin%3Fx%3D1/mcp"),
        "a value cannot change the address's path or query"
    );
    assert_eq!(
        new_secret(c.headers.get("X-API-Key")).as_deref(),
        Some("sk")
    );
    assert_eq!(
        new_secret(c.headers.get("X-Region")).as_deref(),
        Some("eu-west-1"),
        "headers are kept as secrets"
    );
    let l = Layout::of_remote(&s.remotes[1]);
    let c = remote_config(
        &s.remotes[1],
        &l,
        &given(&l, json!({"base": "https://mcp.example.com"})),
    )
    .unwrap();
    assert_eq!(c.transport(), crate::mcp::Transport::Sse);
    assert_eq!(c.url.as_deref(), Some("https://mcp.example.com/sse"));
    assert!(remote_config(
        &s.remotes[1],
        &l,
        &given(&l, json!({"base": "file:///etc"}))
    )
    .is_err());
}

#[test]
fn shell_metacharacters_stay_one_argument_as_written() {
    let nasty = "; rm -rf ~ $(id) `whoami` | cat > /tmp/x && echo '\"<b>'";
    let s = server(
        json!([{"registryType": "npm", "identifier": "x-mcp", "version": "1.0.0",
                "packageArguments": [{"type": "positional", "valueHint": "q", "default": nasty},
                                     {"type": "named", "name": "--q", "default": nasty}]}]),
        json!([]),
    );
    let c = build(&s.packages[0], json!({}), false, &with_docker);
    assert_eq!(c.args, ["-y", "x-mcp@1.0.0", nasty, "--q", nasty]);
}

#[test]
fn what_cannot_run_safely_or_pinned_is_refused() {
    let cases = [
        (json!({"registryType": "npm", "identifier": "x"}), "pinned"),
        (
            json!({"registryType": "npm", "identifier": "x", "version": "^1.0.0"}),
            "pinned",
        ),
        (
            json!({"registryType": "npm", "identifier": "x", "version": "1.x"}),
            "pinned",
        ),
        // a dist-tag or a partial version is whatever is newest when npx runs
        (
            json!({"registryType": "npm", "identifier": "x", "version": "next"}),
            "not one exact version",
        ),
        (
            json!({"registryType": "npm", "identifier": "x", "version": "1"}),
            "pinned",
        ),
        (
            json!({"registryType": "npm", "identifier": "x", "version": "1.2"}),
            "pinned",
        ),
        (
            json!({"registryType": "pypi", "identifier": "x", "version": "latest"}),
            "pinned",
        ),
        (
            json!({"registryType": "pypi", "identifier": "x", "version": "1.*"}),
            "pinned",
        ),
        (
            json!({"registryType": "nuget", "identifier": "X", "version": "preview"}),
            "pinned",
        ),
        (
            json!({"registryType": "npm", "identifier": "--require=/tmp/evil", "version": "1.0.0"}),
            "name",
        ),
        (
            json!({"registryType": "pypi", "identifier": "-e", "version": "1.0.0"}),
            "name",
        ),
        (
            json!({"registryType": "oci", "identifier": "--privileged"}),
            "image",
        ),
        (
            json!({"registryType": "oci", "identifier": "example/img"}),
            "image",
        ),
        (
            json!({"registryType": "cargo", "identifier": "x", "version": "1.0.0"}),
            "cargo",
        ),
        (
            json!({"registryType": "npm", "identifier": "x", "version": "1.0.0", "transport": {"type": "streamable-http", "url": "http://localhost:3000"}}),
            "stdio",
        ),
        (
            json!({"registryType": "mcpb", "identifier": "https://example.com/x.mcpb"}),
            "fileSha256",
        ),
        (
            json!({"registryType": "mcpb", "identifier": "http://example.com/x.mcpb", "fileSha256": "a".repeat(64)}),
            "https",
        ),
    ];
    for (p, says) in cases {
        let p: Package = serde_json::from_value(p).unwrap();
        let why = refusal(&p).unwrap_or_default();
        assert!(why.contains(says), "{p:?}: {why}");
    }
    let secret_arg: Package = serde_json::from_value(json!({
        "registryType": "npm", "identifier": "x", "version": "1.0.0",
        "packageArguments": [{"type": "named", "name": "--token", "isSecret": true}]
    }))
    .unwrap();
    assert!(Layout::of_package(&secret_arg)
        .refused
        .is_some_and(|r| r.contains("command line")));
}

#[test]
fn container_options_that_widen_its_reach_are_refused_by_name() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let (given_w, given_r) = (root.join("work"), root.join("docs"));
    std::fs::create_dir_all(&given_w).unwrap();
    std::fs::create_dir_all(&given_r).unwrap();
    std::os::unix::fs::symlink("/etc", given_w.join("etc-link")).unwrap();
    let (w, r) = (vec![given_w.clone()], vec![given_r.clone()]);
    let m = Some(Mountable {
        write: &w,
        read: &r,
    });
    let words = |s: String| -> Vec<String> { s.split(' ').map(String::from).collect() };
    let (gw, gr) = (given_w.display(), given_r.display());
    for ok in [
        String::from("-e TOKEN --env=A=b -i --rm --init --read-only --network=none"),
        format!("-v {gw}:/data --volume={gw}/sub:/x:rw --mount type=bind,src={gw},dst=/w"),
        format!("-v {gr}:/docs:ro --mount type=bind,source={gr},target=/d,readonly"),
        String::from("-v /anonymous --mount type=tmpfs,dst=/t --mount type=volume,dst=/v"),
        String::from("--user 1000:1000 -u=nobody -w /app --entrypoint x --name n"),
        String::from("--net none -it --memory 512m --cpus 1"),
    ] {
        assert_eq!(container_refusal(&words(ok.clone()), m), None, "{ok}");
    }
    for (bad, named) in [
        ("--privileged".to_string(), "--privileged"),
        ("--network=host".into(), "--network=host"),
        ("--network bridge".into(), "--network"),
        ("--net=container:x".into(), "--net=container:x"),
        ("--pid=host".into(), "--pid=host"),
        ("--ipc host".into(), "--ipc"),
        ("--uts=host".into(), "--uts=host"),
        ("--userns=host".into(), "--userns=host"),
        ("--cgroupns=host".into(), "--cgroupns=host"),
        ("--cap-add=SYS_ADMIN".into(), "--cap-add=SYS_ADMIN"),
        ("--device /dev/sda".into(), "--device"),
        ("--security-opt seccomp=unconfined".into(), "--security-opt"),
        ("--user 0".into(), "--user"),
        ("-u root".into(), "-u"),
        ("-u0".into(), "-u0"),
        ("--user=1000:0".into(), "--user=1000:0"),
        ("--group-add 0".into(), "--group-add"),
        ("--sysctl net.ipv4.ip_forward=1".into(), "--sysctl"),
        ("--volumes-from other".into(), "--volumes-from"),
        ("--env-file /home/u/.env".into(), "--env-file"),
        ("-p 8080:80".into(), "-p"),
        ("-itP".into(), "-itP"),
        ("-v /:/host".into(), "-v"),
        ("-v /home/u/.ssh:/ssh:ro".into(), "-v"),
        (format!("-v {gr}:/docs"), "-v"),
        (format!("-v {gw}/../docs:/x"), "-v"),
        (format!("-v {gw}/etc-link:/x"), "-v"),
        ("-v data:/data".into(), "-v"),
        ("--volume=./rel:/x".into(), "--volume=./rel:/x"),
        ("--mount type=bind,src=/etc,dst=/e".into(), "--mount"),
        ("--mount type=volume,src=shared,dst=/v".into(), "--mount"),
        (
            format!("--mount=type=bind,source={gr},target=/d"),
            "--mount",
        ),
        ("alpine".into(), "alpine"),
        // a flag without a value never hides the next option
        ("--quiet --privileged".into(), "--privileged"),
        ("--label --privileged".into(), "--privileged"),
        ("--use-api-socket".into(), "--use-api-socket"),
        ("--volume-driver local".into(), "--volume-driver"),
        // docker reads --mount as CSV: nothing it would read otherwise than we do
        (
            format!("--mount type=bind,source={gw},\"source=/etc\",target=/x"),
            "--mount",
        ),
        (
            format!("--mount type=bind,src={gw},source=/etc,dst=/x"),
            "--mount",
        ),
        (
            "--mount type=volume,volume-opt=device=/etc,volume-opt=o=bind,dst=/x".into(),
            "--mount",
        ),
        (
            "--mount type=bind,source=/etc,target=/x,bind-propagation=rshared".into(),
            "--mount",
        ),
    ] {
        let why = container_refusal(&words(bad.clone()), m).unwrap_or_default();
        assert!(why.contains(&format!("\"{named}")), "{bad}: {why}");
    }
    // before the values are known: the fixed options only
    assert_eq!(
        container_refusal(&words("-v :/data".into()), None),
        None,
        "a mount's source is checked once given"
    );
    let privileged: Package = serde_json::from_value(json!({
        "registryType": "oci", "identifier": "example/img:1",
        "runtimeArguments": [{"type": "named", "name": "--privileged"}]
    }))
    .unwrap();
    assert!(refusal(&privileged).is_some_and(|w| w.contains("--privileged")));
}

#[test]
fn an_image_by_tag_is_a_tag_and_by_digest_is_pinned() {
    assert_eq!(
        oci_tag("ghcr.io/acme/box:2.0.0"),
        Some(("ghcr.io/acme/box".into(), "2.0.0".into()))
    );
    assert_eq!(
        oci_tag("localhost:5000/box:latest"),
        Some(("localhost:5000/box".into(), "latest".into()))
    );
    assert_eq!(oci_tag("localhost:5000/box"), None);
    let digest = format!("ghcr.io/acme/box@sha256:{}", "a".repeat(64));
    assert_eq!(oci_tag(&digest), None);
}

/// A named argument is two words, `--name value` (the reference client's form; a server such as
/// arxiv-mcp-server reads only this one), repeated as a pair; a value that looks like an option
/// stays bound (`--name=-x`).
#[test]
fn a_named_argument_is_its_name_then_its_value() {
    let s = server(
        json!([{"registryType": "pypi", "identifier": "arxiv-mcp-server", "version": "0.2.0",
                "packageArguments": [
                    {"type": "named", "name": "--storage-path", "isRequired": true},
                    {"type": "named", "name": "--tag", "description": "t", "isRepeated": true},
                    {"type": "named", "name": "--level", "description": "l"}]}]),
        json!([]),
    );
    let c = build(
        &s.packages[0],
        json!({"storage-path": "/home/u/papers", "tag": ["a", "b"], "level": "-3"}),
        false,
        &with_docker,
    );
    assert_eq!(
        c.args,
        [
            "arxiv-mcp-server@0.2.0",
            "--storage-path",
            "/home/u/papers",
            "--tag",
            "a",
            "--tag",
            "b",
            "--level=-3"
        ]
    );
}

/// Every kind has exactly one row, found by its registry type in any letter case; a kind not in
/// the table is refused, never run as another; each row's checks refuse what they should.
#[test]
fn the_kinds_table_has_one_row_each_and_drives_the_checks() {
    use std::collections::BTreeSet;
    let kinds = [
        PackageKind::Npm,
        PackageKind::Pypi,
        PackageKind::Nuget,
        PackageKind::Oci,
        PackageKind::Mcpb,
    ];
    assert_eq!(KINDS.len(), kinds.len());
    let types: BTreeSet<_> = KINDS.iter().map(|r| r.registry_type).collect();
    assert_eq!(types.len(), KINDS.len(), "one row per registry type");
    for k in kinds {
        let row = k.row();
        assert_eq!(PackageKind::of(row.registry_type), Some(k));
        assert_eq!(PackageKind::of(&row.registry_type.to_uppercase()), Some(k));
    }
    let package = |kind: &str, id: &str, version: Option<&str>| -> Package {
        serde_json::from_value(json!({
            "registryType": kind, "identifier": id, "version": version,
            "transport": {"type": "stdio"}
        }))
        .unwrap()
    };
    let unknown = refusal(&package("cargo", "ripgrep", Some("14.1.0"))).unwrap();
    assert!(unknown.contains("cannot run cargo packages"), "{unknown}");
    for (kind, bad_id, good_id, version) in [
        ("npm", "--foo", "@acme/weather", "1.2.0"),
        ("pypi", "-rf", "mcp-server-time", "2025.9.25"),
        ("nuget", "-x", "Acme.Weather", "1.2.0"),
    ] {
        let why = refusal(&package(kind, bad_id, Some(version))).unwrap();
        assert!(why.contains("name is not valid"), "{kind}: {why}");
        let why = refusal(&package(kind, good_id, Some("latest"))).unwrap();
        assert!(why.contains("not pinned"), "{kind}: {why}");
        assert_eq!(
            refusal(&package(kind, good_id, Some(version))),
            None,
            "{kind}"
        );
    }
}
