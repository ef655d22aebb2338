use super::*;

#[test]
fn parses_claude_desktop_shape() {
    let c = McpConfig::parse(
            r#"{"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"A":"1"},"cwd":"/tmp","disabled":true},"t":{"command":"uvx"}}}"#,
            "x",
        )
        .unwrap();
    assert_eq!(c.servers["fs"].args, vec!["-y", "x"]);
    assert_eq!(c.servers["fs"].env["A"], "1".into());
    assert!(c.servers["fs"].disabled);
    assert!(!c.servers["t"].disabled);
}

#[test]
fn malformed_config_is_a_clear_error_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mcp.json");
    std::fs::write(&p, "{ not json").unwrap();
    let e = McpConfig::load_or_init(&p).unwrap_err().to_string();
    assert!(e.contains("not valid"), "{e}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "{ not json");
    std::fs::write(&p, r#"{"mcpServers":{"x":{"command":""}}}"#).unwrap();
    assert!(McpConfig::load_or_init(&p)
        .unwrap_err()
        .to_string()
        .contains("no command"));
}

#[test]
fn server_validation_names_the_field() {
    let ok = ServerConfig::new("npx", &["-y", "x"]);
    let others = ["calculator".to_string()];
    assert_eq!(validate_server("fs", &ok, &others), Ok(()));
    let f = |name: &str, cfg: &ServerConfig| validate_server(name, cfg, &others).unwrap_err().field;
    assert_eq!(f("", &ok), "name");
    assert_eq!(f("Calculator", &ok), "name");
    assert_eq!(f("a/b", &ok), "name");
    assert_eq!(f("fs", &ServerConfig::new(" ", &[])), "command");
    // a server's own timeout: whole seconds within the app's range, kept in the file as "timeout"
    for (t, ok) in [(0, false), (1, true), (3600, true), (3601, false)] {
        let cfg = ServerConfig {
            timeout: Some(t),
            ..ServerConfig::new("npx", &[])
        };
        match ok {
            true => assert_eq!(validate_server("fs", &cfg, &others), Ok(()), "{t}"),
            false => assert_eq!(f("fs", &cfg), "timeout", "{t}"),
        }
    }
    let parsed =
        McpConfig::parse(r#"{"mcpServers":{"s":{"command":"x","timeout":120}}}"#, "x").unwrap();
    assert_eq!(parsed.servers["s"].timeout, Some(120));
    let mut env = ok.clone();
    env.env.insert("1BAD".into(), "x".into());
    assert_eq!(f("fs", &env), "env");
    let mut cwd = ok.clone();
    cwd.cwd = Some("/definitely/not/here".into());
    assert_eq!(f("fs", &cwd), "cwd");
    cwd.cwd = Some("relative".into());
    assert_eq!(f("fs", &cwd), "cwd");
    assert_eq!(
        validate_server(
            "web",
            &ServerConfig::http("http://127.0.0.1:1/mcp"),
            &others
        ),
        Ok(())
    );
    assert_eq!(f("web", &ServerConfig::http("ftp://x")), "url");
    let mut h = ServerConfig::http("https://x/mcp");
    h.headers.insert("Bad Header".into(), "v".into());
    assert_eq!(f("web", &h), "headers");
    let parsed = McpConfig::parse(
        r#"{"mcpServers":{"w":{"url":"http://h/mcp","headers":{"Authorization":"Bearer t"}}}}"#,
        "x",
    )
    .unwrap();
    assert_eq!(parsed.servers["w"].transport(), Transport::Http);
    for (t, want) in [("sse", Transport::Sse), ("rest", Transport::Rest)] {
        let mut c = ServerConfig::http("http://127.0.0.1:1");
        c.transport = Some(t.into());
        assert_eq!(c.transport(), want);
        assert_eq!(validate_server("x", &c, &others), Ok(()));
    }
    let mut ws = ServerConfig::http("ws://x");
    ws.transport = Some("websocket".into());
    assert_eq!(f("x", &ws), "transport");
}

#[test]
fn missing_config_becomes_the_builtin_default() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub/mcp.json");
    let c = McpConfig::load_or_init(&p).unwrap();
    assert_eq!(c, McpConfig::default_builtin());
    assert_eq!(McpConfig::load_or_init(&p).unwrap(), c);
}

#[test]
fn a_bundles_digest_is_part_of_its_identity_and_nothing_else_changes() {
    use sha2::{Digest, Sha256};
    // the identity as it was computed before bundles were part of it
    let before = |what: serde_json::Value| -> String {
        Sha256::digest(what.to_string().as_bytes())
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let plain = ServerConfig::new("node", &["/b/x/server/index.js"]);
    assert_eq!(
        plain.identity(),
        before(serde_json::json!([
            "stdio",
            "node",
            ["/b/x/server/index.js"]
        ]))
    );
    let mut in_folder = plain.clone();
    in_folder.cwd = Some("/b/x".into());
    let source = InstallSource {
        name: "x".into(),
        version: "1.0.0".into(),
        kind: "mcpb".into(),
        bundle_dir: Some("/b/x".into()),
        ..Default::default()
    };
    // a source without a bundle's digest (every config written before it) changes nothing
    let mut old_install = in_folder.clone();
    old_install.source = Some(source.clone());
    assert_eq!(old_install.identity(), in_folder.identity());
    // the same command line, folder and environment with another bundle's files: another server
    let bundle = |sha: &str| {
        let mut c = in_folder.clone();
        c.source = Some(InstallSource {
            bundle_sha256: Some(sha.into()),
            ..source.clone()
        });
        c
    };
    let (a, b) = (bundle(&"a".repeat(64)), bundle(&"b".repeat(64)));
    assert_ne!(a.identity(), b.identity());
    assert_ne!(a.identity(), in_folder.identity());
    assert_eq!(a.identity(), bundle(&"a".repeat(64)).identity());
    // and it is kept in mcp.json
    let text = serde_json::to_string(&a).unwrap();
    assert!(text.contains("\"bundleSha256\""), "{text}");
    let back: ServerConfig = serde_json::from_str(&text).unwrap();
    assert_eq!(back.identity(), a.identity());
}

#[test]
fn secret_headers_go_over_plain_http_only_to_this_computer() {
    let others: [String; 0] = [];
    let remote = |url: &str, headers: bool| {
        let mut c: ServerConfig = serde_json::from_value(serde_json::json!({"url": url})).unwrap();
        if headers {
            c.headers
                .insert("Authorization".into(), SecretValue::New("Bearer t".into()));
        }
        validate_server("r", &c, &others)
    };
    for url in [
        "http://mcp.example.com/mcp",
        "http://10.0.0.5:8080/mcp",
        "http://localhost.example.com/mcp",
    ] {
        let e = remote(url, true).unwrap_err();
        assert_eq!(e.field, "headers", "{url}");
        assert!(e.message.contains("only over https"), "{}", e.message);
        // without headers there is nothing to give away
        assert_eq!(remote(url, false), Ok(()), "{url}");
    }
    for url in [
        "https://mcp.example.com/mcp",
        "http://127.0.0.1:3000/mcp",
        "http://[::1]:3000/mcp",
        "http://LOCALHOST:3000/mcp",
    ] {
        assert_eq!(remote(url, true), Ok(()), "{url}");
    }
}
