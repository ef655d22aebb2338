use super::*;

fn cfg(json: &str) -> ServerConfig {
    serde_json::from_str(json).unwrap()
}

#[test]
fn builtins_are_sandboxed_by_default_and_others_only_when_asked() {
    let calc = cfg(r#"{"command":"switchboard","args":["mcp-server","calculator"]}"#);
    let w = wanted(&calc).unwrap();
    assert!(w.default && !w.config.network && w.own.is_empty());
    let files = cfg(r#"{"command":"switchboard","args":["mcp-server","files","--root","/x/y"]}"#);
    assert_eq!(wanted(&files).unwrap().own, vec![PathBuf::from("/x/y")]);
    // the user can turn it off, or configure it
    let off =
        cfg(r#"{"command":"switchboard","args":["mcp-server","calculator"],"sandbox":false}"#);
    assert_eq!(wanted(&off), None);
    let net = cfg(
        r#"{"command":"switchboard","args":["mcp-server","files"],"sandbox":{"network":true,"read":["/a"]}}"#,
    );
    let w = wanted(&net).unwrap();
    assert!(!w.default && w.config.network && w.config.read == ["/a"]);
    assert_eq!(w.own, vec![crate::servers::default_files_root()]);
    // other servers: only when asked; remote ones never
    assert_eq!(wanted(&cfg(r#"{"command":"npx","args":["-y","x"]}"#)), None);
    let asked = cfg(r#"{"command":"npx","sandbox":true}"#);
    assert_eq!(wanted(&asked).unwrap().config, SandboxConfig::default());
    assert_eq!(
        wanted(&cfg(r#"{"url":"http://127.0.0.1:1/mcp","sandbox":true}"#)),
        None
    );
    // not a built-in: the app binary doing something else
    assert_eq!(
        wanted(&cfg(
            r#"{"command":"switchboard","args":["mcp-server","nope"]}"#
        )),
        None
    );
}

#[test]
fn the_config_shape_round_trips() {
    let c = cfg(
        r#"{"command":"x","sandbox":{"network":false,"read":["~/docs"],"write":["/tmp/w"],"allowUnsandboxed":true}}"#,
    );
    let Some(SandboxSetting::On(sb)) = &c.sandbox else {
        panic!("{c:?}")
    };
    assert!(sb.allow_unsandboxed && sb.read == ["~/docs"] && sb.write == ["/tmp/w"]);
    let back = serde_json::to_value(&c).unwrap();
    assert_eq!(
        back["sandbox"],
        serde_json::json!({"network":false,"read":["~/docs"],"write":["/tmp/w"],"allowUnsandboxed":true})
    );
    let off = cfg(r#"{"command":"x","sandbox":false}"#);
    assert_eq!(serde_json::to_value(&off).unwrap()["sandbox"], false);
    assert_eq!(
        serde_json::to_value(cfg(r#"{"command":"x","sandbox":true}"#)).unwrap()["sandbox"],
        serde_json::json!({"network": false})
    );
}

#[test]
fn the_kernel_decides_and_the_user_may_waive() {
    let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    assert_eq!(decide(&w, 7), SandboxState::On);
    assert_eq!(decide(&w, 1), SandboxState::On);
    assert_eq!(decide(&w, 0), SandboxState::Unsupported);
    w.config.allow_unsandboxed = true;
    assert_eq!(decide(&w, 0), SandboxState::Waived);
    // where it can sandbox, the agreement changes nothing
    assert_eq!(decide(&w, 7), SandboxState::On);
}

fn places(dir: &Path) -> Places {
    let private = dir.join("private/srv");
    std::fs::create_dir_all(&private).unwrap();
    Places {
        program: PathBuf::from("/usr/bin/env"),
        command: "env".into(),
        private,
        home: Some(dir.join("home")),
        ..Places::default()
    }
}

#[test]
fn the_policy_has_the_system_the_program_and_the_configured_folders_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let data = d.join("data");
    std::fs::create_dir_all(data.join("sub")).unwrap();
    std::os::unix::fs::symlink(&data, d.join("link")).unwrap();
    std::fs::create_dir_all(d.join("home/.pyenv")).unwrap();
    let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    w.config.read = vec![
        d.join("link/sub").display().to_string(),
        "/nope/never".into(),
    ];
    w.config.write = vec!["~/out".into()];
    std::fs::create_dir_all(d.join("home/out")).unwrap();
    let p = policy(&w, &places(&d));
    // symlinks resolved: the rule is on the real folder
    assert!(p.read.contains(&data.join("sub")), "{:?}", p.read);
    assert!(!p.read.iter().any(|r| r.starts_with(d.join("link"))));
    assert_eq!(p.missing, vec!["/nope/never".to_string()]);
    // ~ is home
    assert!(p.write.contains(&d.join("home/out")), "{:?}", p.write);
    // the system, the program's folder (/usr for /usr/bin/env), version managers under home
    for sys in ["/usr", "/etc", "/proc"] {
        assert!(
            p.read.contains(&PathBuf::from(sys)),
            "{sys} in {:?}",
            p.read
        );
    }
    assert!(p.read.contains(&d.join("home/.pyenv")));
    assert!(p.write.contains(&PathBuf::from("/dev/null")));
    // its private folder is writable and its TMPDIR is in it
    assert!(p.write.contains(&d.join("private/srv")));
    assert_eq!(p.tmp, d.join("private/srv/tmp"));
    // never home itself, nor what is not asked for
    assert!(!p.read.contains(&d.join("home")) && !p.write.contains(&d.join("home")));
    assert!(!p.read.contains(&data) && !p.write.contains(&data));
    assert!(!p.network);
    // nothing under /tmp or home is readable unless listed
    assert!(!p
        .read
        .iter()
        .any(|r| r == Path::new("/tmp") || r == Path::new("/")));
}

#[test]
fn a_script_brings_its_package_but_a_folder_argument_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let script = d.join("proj/node_modules/@scope/pkg/dist/index.js");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, "").unwrap();
    let py = d.join("tool/src/server.py");
    std::fs::create_dir_all(py.parent().unwrap()).unwrap();
    std::fs::write(&py, "").unwrap();
    std::fs::write(d.join("tool/pyproject.toml"), "").unwrap();
    std::fs::create_dir_all(d.join("documents")).unwrap();
    let mut pl = places(&d);
    pl.args = vec![
        script.display().to_string(),
        py.display().to_string(),
        d.join("documents").display().to_string(),
        "-y".into(),
    ];
    pl.command = "npx".into();
    std::fs::create_dir_all(d.join("home/.npm")).unwrap();
    let w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    let p = policy(&w, &pl);
    // the outermost node_modules: the package and what it imports
    assert!(
        p.read.contains(&d.join("proj/node_modules")),
        "{:?}",
        p.read
    );
    // the Python project around the script
    assert!(p.read.contains(&d.join("tool")), "{:?}", p.read);
    // a folder given as an argument is the server's data: never granted by guess
    assert!(!p.read.iter().any(|r| r.starts_with(d.join("documents"))));
    // npx's shared cache is neither writable nor readable: its own cache is in its private
    // folder (mcp/sandbox/env.rs)
    assert!(
        !p.write.iter().any(|w| w.starts_with(d.join("home"))),
        "{:?}",
        p.write
    );
    assert!(!p.read.iter().any(|r| r.starts_with(d.join("home/.npm"))));
}

#[test]
fn a_program_in_a_shared_folder_brings_only_itself_never_the_folder_or_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let home = d.join("home");
    // uvx's layout: ~/.local/bin/tool → the tool's venv; uvx and uv themselves in ~/.local/bin
    let venv = home.join(".local/share/uv/tools/tool");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(venv.join("bin/tool"), "").unwrap();
    std::fs::write(venv.join("pyvenv.cfg"), "").unwrap();
    let bin = home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(venv.join("bin/tool"), bin.join("tool")).unwrap();
    for f in ["uvx", "uv", "other-tool"] {
        std::fs::write(bin.join(f), "").unwrap();
    }
    std::fs::create_dir_all(home.join(".local/share/dev.switchboard.desktop")).unwrap();
    std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
    std::fs::write(home.join(".npmrc"), "//registry/:_authToken=x").unwrap();
    let w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    let mut pl = places(&d);
    pl.path_var = Some(format!(
        "{}:{}:/usr/bin",
        bin.display(),
        home.join(".cargo/bin").display()
    ));
    pl.program = bin.join("tool");
    let p = policy(&w, &pl);
    // the link itself and the package it leads to; never ~/.local or the PATH's home folders
    assert!(p.read.contains(&bin.join("tool").canonicalize().unwrap()));
    assert!(p.read.contains(&venv), "{:?}", p.read);
    for never in [
        home.join(".local"),
        bin.clone(),
        bin.join("other-tool"),
        home.join(".cargo/bin"),
        home.join(".npmrc"),
    ] {
        assert!(
            !p.read.contains(&never),
            "{} in {:?}",
            never.display(),
            p.read
        );
    }
    // a launcher: itself and what it execs beside it
    pl.program = bin.join("uvx");
    pl.command = "uvx".into();
    let p = policy(&w, &pl);
    assert!(p.read.contains(&bin.join("uvx")) && p.read.contains(&bin.join("uv")));
    assert!(!p.read.contains(&bin.join("other-tool")) && !p.read.contains(&bin));
}

#[test]
fn credentials_and_the_apps_data_are_never_granted_unless_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let home = d.join("home");
    let app_data = home.join(".local/share/dev.switchboard.desktop");
    for f in [
        ".ssh/id_rsa",
        ".aws/credentials",
        "notes/a.txt",
        "proj/server.py",
    ] {
        std::fs::create_dir_all(home.join(f).parent().unwrap()).unwrap();
        std::fs::write(home.join(f), "x").unwrap();
    }
    std::fs::create_dir_all(&app_data).unwrap();
    let mut pl = places(&d);
    pl.protected = protected(Some(&home), std::slice::from_ref(&app_data));
    // the user lists all of home, and its cwd is home
    pl.cwd = Some(home.clone());
    let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    w.config.read = vec!["~".into(), "~/.aws".into()];
    let p = policy(&w, &pl);
    assert!(p.read.contains(&home.join("notes")), "{:?}", p.read);
    assert!(p.read.contains(&home.join(".aws")), "named: {:?}", p.read);
    for never in [home.join(".ssh"), app_data.clone(), home.clone()] {
        assert!(
            !p.read.iter().any(|r| never.starts_with(r)),
            "{} reachable through {:?}",
            never.display(),
            p.read
        );
    }
    assert!(p.left_out.contains(&home.join(".ssh")), "{:?}", p.left_out);
}

#[test]
fn a_link_to_a_credential_grants_nothing_whether_listed_or_found_in_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let home = d.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
    std::fs::create_dir_all(home.join("notes")).unwrap();
    std::fs::write(home.join("notes/a.txt"), "x").unwrap();
    // links that already sit in home: to the keys, and to a harmless folder
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
    std::os::unix::fs::symlink(home.join("notes"), home.join("notes-link")).unwrap();
    let mut pl = places(&d);
    pl.protected = protected(Some(&home), &[]);
    let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    // all of home (split around .ssh), and the link to the keys by its own name
    w.config.read = vec!["~".into(), "~/keys".into()];
    w.config.write = vec!["~/keys".into()];
    let p = policy(&w, &pl);
    let keys = home.join(".ssh");
    for list in [&p.read, &p.write] {
        assert!(
            !list
                .iter()
                .any(|r| keys.starts_with(r) || r.starts_with(&keys)),
            "{list:?}"
        );
    }
    // the links among home's entries are not granted; what they point to is, on its own
    assert!(!p.read.contains(&home.join("keys")), "{:?}", p.read);
    assert!(!p.read.contains(&home.join("notes-link")), "{:?}", p.read);
    assert!(p.read.contains(&home.join("notes")), "{:?}", p.read);
    assert!(p.left_out.contains(&home.join("keys")), "{:?}", p.left_out);
    // naming the folder itself still grants it
    w.config.read = vec!["~/.ssh".into()];
    w.config.write = vec![];
    assert!(policy(&w, &pl).read.contains(&keys));
}

#[test]
fn program_folders_are_never_home_root_or_shared() {
    let home = Path::new("/home/u");
    assert_eq!(
        program_dir(Path::new("/usr/bin/node"), Some(home)),
        Some(PathBuf::from("/usr"))
    );
    // ~/bin, ~/.local/bin, ~/.cargo/bin hold other programs: the program alone
    for p in [
        "/home/u/bin/srv",
        "/home/u/.local/bin/srv",
        "/home/u/.cargo/bin/srv",
        "/home/u/srv",
        "/srv",
    ] {
        assert_eq!(
            program_dir(Path::new(p), Some(home)),
            Some(PathBuf::from(p))
        );
    }
    assert_eq!(
        program_dir(Path::new("/home/u/tools/srv/bin/srv"), Some(home)),
        Some(PathBuf::from("/home/u/tools/srv"))
    );
    assert_eq!(
        program_dir(
            Path::new("/home/u/.nvm/versions/node/v20/bin/node"),
            Some(home)
        ),
        Some(PathBuf::from("/home/u/.nvm/versions/node/v20"))
    );
}

#[test]
fn private_folders_are_safe_names() {
    let r = Path::new("/c");
    assert_eq!(private_dir(r, "files"), PathBuf::from("/c/files"));
    assert_eq!(private_dir(r, "my server"), PathBuf::from("/c/my%20server"));
    assert_eq!(private_dir(r, "../x"), PathBuf::from("/c/%2E%2E%2Fx"));
    assert_eq!(private_dir(r, ""), PathBuf::from("/c/%"));
    // one folder per name, and never the host's own
    assert_ne!(private_dir(r, ".c"), private_dir(r, "_.c"));
    assert_ne!(private_dir(r, "a b"), private_dir(r, "a_b"));
    assert_ne!(private_dir(r, ".fetched"), r.join(".fetched"));
    assert!(fetch_dir(r, "x").starts_with(r.join(".fetched")));
}

#[test]
fn refusals_are_told_apart_from_other_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(d.join("rw")).unwrap();
    std::fs::create_dir_all(d.join("ro")).unwrap();
    std::fs::write(d.join("secret.txt"), "x").unwrap();
    std::fs::write(d.join("ro/a.txt"), "x").unwrap();
    let det = Detector {
        read: vec![d.join("ro")],
        write: vec![d.join("rw")],
        network: false,
    };
    let secret = d.join("secret.txt").display().to_string();
    // Node, Python, Go
    assert_eq!(
        det.blocked(&format!(
            "Error: EACCES: permission denied, open '{secret}'"
        )),
        Some(secret.clone())
    );
    assert_eq!(
        det.blocked(&format!(
            "PermissionError: [Errno 13] Permission denied: '{secret}'"
        )),
        Some(secret.clone())
    );
    assert_eq!(
        det.blocked(&format!("open {secret}: permission denied")),
        Some(secret.clone())
    );
    // a write where it may only read
    let ro = d.join("ro/a.txt").display().to_string();
    assert_eq!(
        det.blocked(&format!("EACCES: permission denied, open '{ro}'")),
        Some(format!("{ro} (it may only read there)"))
    );
    // inside a folder it may write: not the sandbox
    let rw = d.join("rw/new.txt").display().to_string();
    assert_eq!(
        det.blocked(&format!("EACCES: permission denied, open '{rw}'")),
        None
    );
    // the network, with it off
    assert_eq!(
        det.blocked("Error: connect EACCES 127.0.0.1:8080"),
        Some("network access (Error: connect EACCES 127.0.0.1:8080)".into())
    );
    // nothing about permissions: nothing
    assert_eq!(det.blocked("ENOENT: no such file, open '/x'"), None);
    assert_eq!(det.blocked("[Errno 111] Connection refused"), None);
    assert_eq!(det.blocked("all good\nfine"), None);
    // the first matching line of several
    assert_eq!(
        det.blocked(&format!(
            "Traceback\n  ...\nPermissionError: [Errno 13] Permission denied: '{secret}'"
        )),
        Some(secret)
    );
}

#[test]
fn paths_are_found_in_messages() {
    assert_eq!(path_in("open '/a b/c'"), Some(PathBuf::from("/a b/c")));
    assert_eq!(path_in(r#"x "/q" y"#), Some(PathBuf::from("/q")));
    assert_eq!(path_in("stat /x/y: denied"), Some(PathBuf::from("/x/y")));
    assert_eq!(path_in("(/x/y)"), Some(PathBuf::from("/x/y")));
    assert_eq!(path_in("see http://h/x and 'rel'"), None);
}

#[cfg(target_os = "linux")]
#[test]
fn the_newest_abi_the_crate_knows_is_asked_for() {
    // a newer crate knows a newer ABI: look at what it adds, then raise LANDLOCK_BEST
    assert_eq!(landlock::ABI::from(i32::MAX), LANDLOCK_BEST);
}

#[test]
fn an_older_kernel_says_what_it_cannot_enforce() {
    let missing = |abi, network| -> Vec<&str> {
        protections_with(abi, network, true, true)
            .into_iter()
            .filter(|p| !p.enforced)
            .map(|p| p.what)
            .collect()
    };
    assert!(missing(7, false).is_empty() && missing(10, true).is_empty());
    assert_eq!(
        missing(5, false),
        vec!["signals to processes outside its sandbox"]
    );
    assert_eq!(
        missing(4, true),
        vec!["signals to processes outside its sandbox", "device ioctls"]
    );
    assert_eq!(
        missing(0, false).len(),
        protections_with(0, false, true, true).len()
    );
    // a system that cannot supervise, and root, whose processes the kernel does not count
    let without = |supervised, counted| -> Vec<&str> {
        protections_with(10, false, supervised, counted)
            .into_iter()
            .filter(|p| !p.enforced)
            .map(|p| p.what)
            .collect()
    };
    assert_eq!(
        without(false, true),
        vec!["processes it starts outliving it (a new session or process group)"]
    );
    assert_eq!(
        without(true, false),
        vec!["processes and threads (a fork bomb)"]
    );
}

#[test]
fn a_server_that_gets_only_what_is_named_gets_nothing_from_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    // a publisher's argument: a file in a folder of the user's
    let profiles = d.join("home/.mozilla/firefox/profiles.ini");
    std::fs::create_dir_all(profiles.parent().unwrap()).unwrap();
    std::fs::write(&profiles, "").unwrap();
    let package = d.join("bundle");
    std::fs::create_dir_all(&package).unwrap();
    let mut pl = places(&d);
    pl.args = vec![profiles.display().to_string()];
    let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    w.config.read = vec![package.display().to_string()];
    let guessed = policy(&w, &pl);
    assert!(
        guessed.read.contains(&d.join("home/.mozilla/firefox")),
        "{:?}",
        guessed.read
    );
    w.config.only_named = true;
    let named = policy(&w, &pl);
    assert!(
        !named.read.iter().any(|r| r.starts_with(d.join("home"))),
        "{:?}",
        named.read
    );
    assert!(named.read.contains(&package));
    assert!(named.read.contains(&PathBuf::from("/usr")));
}

#[test]
fn a_path_the_server_may_change_brings_no_grant_of_its_own() {
    // its cwd and its script sit in a folder it may write: swapped for links to `/` and a
    // document before a restart, they must not grant `/` or the document's folder
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let work = d.join("work");
    std::fs::create_dir_all(d.join("docs")).unwrap();
    std::fs::write(d.join("docs/doc.txt"), "private").unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink("/", work.join("cwd")).unwrap();
    std::os::unix::fs::symlink(d.join("docs/doc.txt"), work.join("config.json")).unwrap();
    let mut pl = places(&d);
    pl.cwd = Some(work.join("cwd"));
    pl.args = vec![work.join("config.json").display().to_string()];
    let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    w.config.write = vec![work.display().to_string()];
    let p = policy(&w, &pl);
    assert!(!p.read.contains(&PathBuf::from("/")), "{:?}", p.read);
    assert!(!p.read.contains(&d.join("docs")), "{:?}", p.read);
    assert!(p.write.contains(&work), "{:?}", p.write);
    // the same paths where it may not write: derived as before
    let mut w2 = w.clone();
    w2.config.write = vec![];
    assert!(policy(&w2, &pl).read.contains(&d.join("docs")));
}

#[test]
fn with_any_network_the_certificates_it_is_told_to_trust_are_readable_but_never_a_protected_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let home = d.join("home");
    let corp = d.join("corp");
    std::fs::create_dir_all(corp.join("certs")).unwrap();
    std::fs::write(corp.join("ca.pem"), "-----BEGIN CERTIFICATE-----").unwrap();
    std::fs::write(corp.join("secret.txt"), "not a certificate").unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
    let mut pl = places(&d);
    pl.protected = protected(Some(&home), &[]);
    pl.certs = cert_paths([
        ("SSL_CERT_FILE", corp.join("ca.pem").to_str().unwrap()),
        ("SSL_CERT_DIR", corp.join("certs").to_str().unwrap()),
        (
            "NODE_EXTRA_CA_CERTS",
            home.join(".ssh/id_rsa").to_str().unwrap(),
        ),
        ("GIT_SSL_CAPATH", home.to_str().unwrap()),
    ]);
    let mut w = wanted(&cfg(r#"{"command":"x","sandbox":true}"#)).unwrap();
    // without network: none of it
    let p = policy(&w, &pl);
    assert!(!p.read.iter().any(|r| r.starts_with(&corp)), "{:?}", p.read);
    for (network, hosts) in [(true, vec![]), (false, vec!["example.com".to_string()])] {
        w.config.network = network;
        w.config.hosts = hosts;
        let p = policy(&w, &pl);
        // the file itself (not its folder) and the folder
        assert!(p.read.contains(&corp.join("ca.pem")), "{:?}", p.read);
        assert!(p.read.contains(&corp.join("certs")), "{:?}", p.read);
        assert!(!p.read.contains(&corp) && !p.read.contains(&corp.join("secret.txt")));
        // a protected path named by a certificate setting stays out; home is never granted
        assert!(
            !p.read
                .iter()
                .any(|r| home.join(".ssh/id_rsa").starts_with(r)),
            "{:?}",
            p.read
        );
        assert!(
            p.left_out.contains(&home.join(".ssh/id_rsa")),
            "{:?}",
            p.left_out
        );
    }
}

#[test]
fn a_refused_path_is_offered_for_reading_unless_protected_or_granted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let home = d.join("home");
    for f in [".gitconfig", ".ssh/id_rsa", "docs/a.txt"] {
        std::fs::create_dir_all(home.join(f).parent().unwrap()).unwrap();
        std::fs::write(home.join(f), "x").unwrap();
    }
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
    let prot = protected(Some(&home), &[]);
    let offer = |note: &str, read: &[&str]| {
        let read: Vec<String> = read.iter().map(|r| r.to_string()).collect();
        read_offer(note, &read, Some(&home), &prot)
    };
    let gitconfig = home.join(".gitconfig").display().to_string();
    assert_eq!(offer(&gitconfig, &[]), Some(home.join(".gitconfig")));
    // granted already (as written with ~, or a folder above): nothing to offer
    assert_eq!(offer(&gitconfig, &["~/.gitconfig"]), None);
    assert_eq!(
        offer(&home.join("docs/a.txt").display().to_string(), &["~/docs"]),
        None
    );
    // a write where it may read; not a path; not there; a credential, by its name or a link
    assert_eq!(
        offer(&format!("{gitconfig} (it may only read there)"), &[]),
        None
    );
    assert_eq!(offer("network access (connect refused)", &[]), None);
    assert_eq!(offer(&home.join("nope").display().to_string(), &[]), None);
    assert_eq!(
        offer(&home.join(".ssh/id_rsa").display().to_string(), &[]),
        None
    );
    assert_eq!(
        offer(&home.join("keys/id_rsa").display().to_string(), &[]),
        None
    );
    // never home or /
    assert_eq!(offer(&home.display().to_string(), &[]), None);
    assert_eq!(offer("/", &[]), None);
}
