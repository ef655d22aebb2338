//! `switchboard catalog search|install` against a registry stand-in of our own, as a script uses
//! them: one entry a line, every page; the exact server an install would add, secrets masked;
//! installs from the registry and from a bundle file; refusals in one line with a non-zero exit.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::support::bundles::{plain_bundle, zip_of, Item};
use crate::support::registry::{listed, npm, with_status, Mode, Registry};

fn cli(home: &Path, args: &[&str]) -> Output {
    Command::new(crate::support::switchboard_bin())
        .args(args)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        // no keyring: secrets go to the private file in the data folder
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("OLLAMA_HOST")
        // only errors on stderr: the note that there is no keyring here is a log line, not
        // the refusal these tests read
        .env("SWITCHBOARD_LOG", "error")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn mcp_json(home: &Path) -> Value {
    let p = home
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("mcp.json");
    std::fs::read_to_string(p)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null)
}

fn entries() -> Vec<Value> {
    vec![
        listed(json!({
            "name": "io.github.acme/weather", "title": "Weather\tand\nmore", "description": "d",
            "version": "1.2.0",
            "packages": [{"registryType": "npm", "identifier": "@acme/weather-mcp", "version": "1.2.0",
                "packageArguments": [{"type": "positional", "valueHint": "city", "default": "; rm -rf ~ $(id)"}],
                "environmentVariables": [
                    {"name": "WEATHER_KEY", "isSecret": true, "isRequired": true},
                    {"name": "UNITS", "default": "metric"}]}]
        })),
        listed(json!({
            "name": "com.acme/remote", "description": "Hosted", "version": "3.0.0",
            "remotes": [{"type": "sse", "url": "https://mcp.acme.com/sse"}]
        })),
        with_status(
            npm("io.github.acme/old", "0.1.0", "old-mcp", "0.1.0"),
            "deprecated",
            "gone soon",
        ),
        json!({"server": {"name": "broken", "version": "1"}}),
        listed(json!({
            "name": "io.github.acme/box", "description": "d", "version": "2.0.0",
            "packages": [{"registryType": "oci", "identifier": "ghcr.io/acme/box:2.0.0"}]
        })),
    ]
}

#[test]
fn search_lists_every_entry_on_every_page_one_a_line() {
    let reg = Registry::start(entries());
    let home = tempfile::tempdir().unwrap();
    let out = cli(home.path(), &["catalog", "search", "--registry", &reg.url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<Vec<&str>> = stdout.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(
        lines,
        [
            vec!["io.github.acme/weather", "1.2.0", "npm", "Weather and more"],
            vec!["com.acme/remote", "3.0.0", "sse", "Hosted"],
            vec![
                "io.github.acme/old",
                "0.1.0",
                "npm",
                "io.github.acme/old, from npm (deprecated)"
            ],
            vec!["io.github.acme/box", "2.0.0", "oci", "d"],
        ]
    );
    assert!(
        text(&out.stderr).contains("skipped an entry (broken)"),
        "{}",
        text(&out.stderr)
    );
    let pages = reg.requests().len();
    assert_eq!(pages, 3, "every page, two at a time");

    let out = cli(
        home.path(),
        &[
            "catalog",
            "search",
            "acme/w",
            "--registry",
            &reg.url,
            "--json",
        ],
    );
    assert!(out.status.success());
    let found: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["name"], "io.github.acme/weather");
    assert_eq!(found[0]["needsSecrets"], true);
    assert_eq!(found[0]["kinds"], json!(["npm"]));

    // out of reach: the list as it was, and a line saying so; never asked: one clear error
    reg.set_mode(Mode::Refuse);
    let out = cli(home.path(), &["catalog", "search", "--registry", &reg.url]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).lines().count(), 4);
    assert!(
        text(&out.stderr).contains("as it was fetched before"),
        "{}",
        text(&out.stderr)
    );
    let out = cli(
        home.path(),
        &[
            "catalog",
            "search",
            "nothing cached",
            "--registry",
            &reg.url,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot be reached"), "{err}");
}

#[test]
fn install_dry_run_shows_exactly_what_would_run_and_adds_nothing() {
    let reg = Registry::start(entries());
    let home = tempfile::tempdir().unwrap();
    let out = cli(
        home.path(),
        &[
            "catalog",
            "install",
            "io.github.acme/weather",
            "--registry",
            &reg.url,
            "--set",
            "WEATHER_KEY=sk-live-123",
            "--dry-run",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("command:   npx\n"), "{stdout}");
    assert!(
        stdout.contains(r#"args:      ["-y","@acme/weather-mcp@1.2.0","; rm -rf ~ $(id)"]"#),
        "{stdout}"
    );
    assert!(
        stdout.contains("env:       WEATHER_KEY=•••• (secret"),
        "{stdout}"
    );
    assert!(stdout.contains(r#"env:       UNITS="metric""#), "{stdout}");
    assert!(stdout.contains("sandbox:   on; network: no"), "{stdout}");
    assert!(!stdout.contains("sk-live-123"), "{stdout}");
    assert!(stdout.contains("dry run"));
    assert!(mcp_json(home.path())["mcpServers"].get("weather").is_none());
}

#[test]
fn install_adds_the_server_on_when_its_secrets_are_set_and_off_when_not() {
    let reg = Registry::start(entries());
    let home = tempfile::tempdir().unwrap();
    let out = cli(
        home.path(),
        &[
            "catalog",
            "install",
            "io.github.acme/weather",
            "--registry",
            &reg.url,
            "--set",
            "WEATHER_KEY=sk-live-123",
            "--set",
            "city=Paris",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cfg = mcp_json(home.path());
    let s = &cfg["mcpServers"]["weather"];
    assert_eq!(s["args"], json!(["-y", "@acme/weather-mcp@1.2.0", "Paris"]));
    assert!(
        s["env"]["WEATHER_KEY"]["secret"]
            .as_str()
            .unwrap()
            .starts_with("file:"),
        "{s}"
    );
    assert_eq!(s["disabled"], Value::Null, "on: its secret is set");
    assert_eq!(s["trusted"], false);
    assert_eq!(s["source"]["version"], "1.2.0");
    assert_eq!(s["source"]["inputs"]["city"], "Paris");
    assert!(!cfg.to_string().contains("sk-live-123"));

    let out = cli(
        home.path(),
        &[
            "catalog",
            "install",
            "com.acme/remote",
            "--registry",
            &reg.url,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(mcp_json(home.path())["mcpServers"]["remote"]["type"], "sse");

    // a required secret not given: added, turned off, and it says what to set
    let home = tempfile::tempdir().unwrap();
    let out = cli(
        home.path(),
        &[
            "catalog",
            "install",
            "io.github.acme/weather",
            "--registry",
            &reg.url,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("turned off until these are set: WEATHER_KEY"),
        "{}",
        text(&out.stdout)
    );
    let s = &mcp_json(home.path())["mcpServers"]["weather"];
    assert_eq!(s["disabled"], true);
    assert!(s["env"].get("WEATHER_KEY").is_none());

    // installed again with the secret: that server is completed and turned on, no weather-2,
    // and what it was installed with is kept (the city's default)
    let out = cli(
        home.path(),
        &[
            "catalog",
            "install",
            "io.github.acme/weather",
            "--registry",
            &reg.url,
            "--set",
            "WEATHER_KEY=sk-live-456",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("this completes it"), "{stdout}");
    assert!(stdout.contains("Completed \"weather\""), "{stdout}");
    let servers = &mcp_json(home.path())["mcpServers"];
    assert!(
        !servers
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("weather-")),
        "{servers}"
    );
    let s = &servers["weather"];
    assert_eq!(s["disabled"], Value::Null, "on: its secret is set now");
    assert!(s["env"]["WEATHER_KEY"]["secret"].is_string(), "{s}");
}

/// The sandbox is set on the command line as in the window: the network (all, or some hosts),
/// folders it may read and write, each listed with why.
#[test]
fn install_sets_the_network_and_the_folders_it_may_read_and_write() {
    let reg = Registry::start(entries());
    let home = tempfile::tempdir().unwrap();
    let (docs, out_dir) = (home.path().join("docs"), home.path().join("out"));
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::create_dir_all(&out_dir).unwrap();
    let (docs, out_dir) = (docs.display().to_string(), out_dir.display().to_string());
    let run = |extra: &[&str]| {
        let mut args = vec![
            "catalog",
            "install",
            "io.github.acme/weather",
            "--registry",
            &reg.url,
            "--set",
            "WEATHER_KEY=k",
            "--dry-run",
        ];
        args.extend_from_slice(extra);
        let out = cli(home.path(), &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let out = run(&[
        "--allow-host",
        "api.weather.example",
        "--allow-host",
        "*.tiles.example:443",
        "--read",
        &docs,
        "--write",
        &out_dir,
    ]);
    assert!(
        out.contains(&format!(
            "sandbox:   on; network: only api.weather.example, *.tiles.example:443; read: [\"{docs}\"]; write: [\"{out_dir}\"]"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("grant:     read {docs} (you listed it (--read))")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "grant:     read and write {out_dir} (you listed it (--write))"
        )),
        "{out}"
    );
    let out = run(&["--allow-network"]);
    assert!(out.contains("sandbox:   on; network: yes"), "{out}");
    // refused, in one line: a host it cannot read, a folder that is not there
    for (flag, value) in [("--allow-host", "http://x/"), ("--write", "/no/such/dir")] {
        let out = cli(
            home.path(),
            &[
                "catalog",
                "install",
                "io.github.acme/weather",
                "--registry",
                &reg.url,
                flag,
                value,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert_eq!(
            text(&out.stderr).lines().count(),
            1,
            "{}",
            text(&out.stderr)
        );
    }
    assert!(mcp_json(home.path())["mcpServers"].get("weather").is_none());
}

#[test]
fn a_bundle_file_installs_and_refusals_are_one_line_with_nothing_written() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("tiny.mcpb");
    std::fs::write(&file, plain_bundle("tiny", "1.0.0", &[])).unwrap();
    let out = cli(home.path(), &["catalog", "install", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("signature: unsigned"),
        "{}",
        text(&out.stdout)
    );
    let bundles = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("bundles/Tiny-tiny");
    let s = &mcp_json(home.path())["mcpServers"]["Tiny-tiny"];
    // a folder of its own: its server's, its version and a tag of this install
    let dir = std::path::PathBuf::from(s["cwd"].as_str().unwrap());
    assert_eq!(dir.parent(), Some(bundles.as_path()));
    assert!(dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("1.0.0-"));
    assert!(dir.join("server/index.js").is_file());

    let before = mcp_json(home.path());
    let evil = home.path().join("evil.mcpb");
    std::fs::write(&evil, zip_of(&[Item::File("../../outside", b"x".to_vec())])).unwrap();
    let reg = Registry::start(vec![]);
    for args in [
        vec!["catalog", "install", evil.to_str().unwrap()],
        vec![
            "catalog",
            "install",
            "io.github.acme/nothing",
            "--registry",
            reg.url.as_str(),
        ],
        vec![
            "catalog",
            "install",
            "x/y",
            "--registry",
            "http://127.0.0.1:9",
        ],
        vec![
            "catalog",
            "install",
            file.to_str().unwrap(),
            "--set",
            "nope=1",
        ],
    ] {
        let out = cli(home.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("switchboard: "), "{err}");
    }
    assert_eq!(mcp_json(home.path()), before);
    assert!(!home.path().join("outside").exists());
}

/// The .deb's desktop entry makes Switchboard the handler of `.mcpb` files and hands it the file
/// (`%F`: the running app gets it through single-instance); the type is declared for `*.mcpb`.
#[test]
fn the_desktop_entry_opens_bundles_with_the_app() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let conf: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tauri.conf.json")).unwrap())
            .unwrap();
    let deb = &conf["bundle"]["linux"]["deb"];
    let template =
        std::fs::read_to_string(root.join(deb["desktopTemplate"].as_str().unwrap())).unwrap();
    let lines: Vec<&str> = template.lines().collect();
    assert!(lines.contains(&"Exec={{exec}} %F"), "{template}");
    assert!(
        lines.contains(&"MimeType=application/x-mcpb;"),
        "{template}"
    );
    assert_eq!(
        conf["bundle"]["fileAssociations"][0]["mimeType"],
        "application/x-mcpb"
    );
    let mime = deb["files"]["/usr/share/mime/packages/switchboard-mcpb.xml"]
        .as_str()
        .unwrap();
    let mime = std::fs::read_to_string(root.join(mime)).unwrap();
    assert!(
        mime.contains(r#"<mime-type type="application/x-mcpb">"#)
            && mime.contains(r#"<glob pattern="*.mcpb"/>"#)
    );
}
