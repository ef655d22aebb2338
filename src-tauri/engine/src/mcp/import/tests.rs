use super::*;

#[test]
fn the_preview_names_every_variable_flags_the_risky_ones_and_shows_no_value() {
    let p = preview(
            r#"{"mcpServers": {"x": {"command": "npx", "args": ["-y", "pkg"], "cwd": "/tmp",
                "env": {"API_KEY": "secret123", "LD_PRELOAD": "/tmp/evil.so", "NODE_OPTIONS": "--require /tmp/a.js",
                        "npm_config_registry": "http://evil.example", "PYTHONPATH": "/tmp", "PATH": "/tmp:/usr/bin"}},
                "r": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}}}}"#,
            &McpConfig::default(),
        )
        .unwrap();
    let x = &p.servers[0];
    assert_eq!(x.name, "x");
    let risks: Vec<(&str, Option<EnvRisk>)> =
        x.env.iter().map(|e| (e.name.as_str(), e.risk)).collect();
    assert_eq!(
        risks,
        vec![
            ("API_KEY", None),
            ("LD_PRELOAD", Some(EnvRisk::LoadsLibraries)),
            ("NODE_OPTIONS", Some(EnvRisk::RuntimeOptions)),
            ("PATH", Some(EnvRisk::SearchPath)),
            ("PYTHONPATH", Some(EnvRisk::PythonPath)),
            ("npm_config_registry", Some(EnvRisk::PackageSource)),
        ]
    );
    assert_eq!(x.env[0].length, 9);
    assert!(!serde_json::to_string(&x.env).unwrap().contains("secret123"));
    assert_eq!(x.server.cwd.as_deref(), Some("/tmp"));
    assert_eq!(p.servers[1].headers, vec!["Authorization"]);
    // imported servers' annotations are not believed until the user says so
    assert!(p.servers.iter().all(|s| s.server.trusted == Some(false)));
}

#[test]
fn claude_desktop_cursor_and_mcp_json_shapes() {
    let existing = McpConfig::default_builtin();
    let p = preview(
            r#"{"mcpServers": {
                "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
                "calculator": {"command": "uvx", "args": ["calc"], "env": {"N": 1}},
                "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}},
                "old": {"type": "sse", "url": "https://example.com/sse"},
                "ws": {"type": "websocket", "url": "wss://example.com"}
            }, "globalShortcut": "Ctrl+Space"}"#,
            &existing,
        )
        .unwrap();
    assert!(p.format.contains("mcpServers"));
    assert_eq!(p.servers.len(), 4);
    assert_eq!(
        p.servers
            .iter()
            .find(|s| s.name == "old")
            .unwrap()
            .server
            .transport(),
        crate::mcp::Transport::Sse
    );
    let remote = p.servers.iter().find(|s| s.name == "remote").unwrap();
    assert_eq!(
        remote.server.url.as_deref(),
        Some("https://example.com/mcp")
    );
    assert_eq!(remote.server.headers["Authorization"], "Bearer t".into());
    let calc = p.servers.iter().find(|s| s.name == "calculator").unwrap();
    assert!(calc.conflict);
    assert_eq!(calc.suggested_name, "calculator-imported");
    assert_eq!(calc.server.env["N"], "1".into());
    let fs = p.servers.iter().find(|s| s.name == "filesystem").unwrap();
    assert!(!fs.conflict);
    assert_eq!(fs.server.args[0], "-y");
    assert_eq!(p.skipped.len(), 1);
    assert_eq!(p.skipped[0].name, "ws");
}

#[test]
fn vs_code_shape_and_errors() {
    let p = preview(
            r#"{"inputs": [], "servers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
                "web": {"type": "http", "url": "http://x"}, "odd": {"type": "websocket", "url": "ws://x"}}}"#,
            &McpConfig::default(),
        )
        .unwrap();
    assert!(p.format.starts_with("VS Code"));
    assert_eq!(
        p.servers
            .iter()
            .find(|s| s.name == "time")
            .unwrap()
            .server
            .command,
        "uvx"
    );
    assert_eq!(
        p.servers
            .iter()
            .find(|s| s.name == "web")
            .unwrap()
            .server
            .url
            .as_deref(),
        Some("http://x")
    );
    assert!(
        p.skipped[0]
            .reason
            .contains("\"websocket\" servers are not supported"),
        "{:?}",
        p.skipped
    );
    assert!(preview("{oops", &McpConfig::default())
        .unwrap_err()
        .to_string()
        .contains("not valid JSON"));
    assert!(preview("{}", &McpConfig::default())
        .unwrap_err()
        .to_string()
        .contains("No servers found"));
    let bad = preview(
        r#"{"mcpServers": {"x": {"args": []}}}"#,
        &McpConfig::default(),
    )
    .unwrap();
    assert_eq!(bad.skipped[0].reason, "no \"command\"");
}

#[test]
fn one_name_twice_in_a_file_gets_two_free_suggestions() {
    let existing = McpConfig::default_builtin();
    let p = preview(
        r#"{"mcpServers": {"A": {"command": "a"}, "a": {"command": "b"},
                "Files": {"command": "c"}, "files-imported": {"command": "d"}}}"#,
        &existing,
    )
    .unwrap();
    let names: Vec<(&str, &str, bool)> = p
        .servers
        .iter()
        .map(|e| (e.name.as_str(), e.suggested_name.as_str(), e.conflict))
        .collect();
    assert_eq!(
        names,
        vec![
            ("A", "A", false),
            ("a", "a-2", false),
            ("Files", "Files-imported-2", true),
            ("files-imported", "files-imported", false),
        ]
    );
}

#[test]
fn switchboards_own_transports_and_log_level_come_back() {
    let mut cfg = McpConfig::default();
    let rest = ServerConfig {
        transport: Some("rest".into()),
        log_level: Some("debug".into()),
        ..ServerConfig::http("http://127.0.0.1:9/")
    };
    cfg.servers.insert("rest".into(), rest);
    let p = preview(&export(&cfg), &McpConfig::default()).unwrap();
    assert_eq!(p.skipped, vec![]);
    // everything comes back; only the consent mark is new
    assert_eq!(p.servers[0].server.trusted, Some(false));
    assert_eq!(
        ServerConfig {
            trusted: None,
            ..p.servers[0].server.clone()
        },
        cfg.servers["rest"]
    );
    // Cline writes Streamable HTTP as "streamableHttp"
    let p = preview(
        r#"{"mcpServers": {"w": {"type": "streamableHttp", "url": "http://x/mcp"}}}"#,
        &McpConfig::default(),
    )
    .unwrap();
    assert_eq!(
        p.servers[0].server,
        ServerConfig {
            trusted: Some(false),
            ..ServerConfig::http("http://x/mcp")
        }
    );
}

#[test]
fn exports_leave_secrets_out_and_imports_take_no_reference() {
    let mut cfg = McpConfig::default();
    let mut web = ServerConfig::http("https://example.com/mcp");
    web.headers.insert(
        "Authorization".into(),
        SecretValue::Stored("keyring:ab".into()),
    );
    web.headers.insert("X-Typed".into(), "hand-typed".into());
    cfg.servers.insert("web".into(), web);
    let mut gh = ServerConfig::new("npx", &["-y", "gh"]);
    gh.env
        .insert("GITHUB_TOKEN".into(), SecretValue::Stored("file:cd".into()));
    gh.env.insert("LOG".into(), "debug".into());
    cfg.servers.insert("gh".into(), gh);
    let text = export(&cfg);
    for leak in ["keyring:ab", "file:cd", "hand-typed"] {
        assert!(!text.contains(leak), "{leak} in {text}");
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["mcpServers"]["web"]["headers"]["Authorization"],
        crate::secrets::EXPORT_PLACEHOLDER
    );
    assert_eq!(v["mcpServers"]["gh"]["env"]["LOG"], "debug");
    // imported back: the placeholders are no values, and say what to set
    let p = preview(&text, &McpConfig::default()).unwrap();
    let gh = p.servers.iter().find(|s| s.name == "gh").unwrap();
    assert_eq!(gh.unset, vec!["environment variable GITHUB_TOKEN"]);
    assert_eq!(gh.server.env.len(), 1);
    let web = p.servers.iter().find(|s| s.name == "web").unwrap();
    assert_eq!(web.unset.len(), 2);
    assert!(web.server.headers.is_empty());
    // a reference in someone's file is never taken (it could name one of this user's secrets)
    let p = preview(
        r#"{"mcpServers": {"evil": {"url": "https://evil.example/mcp",
                "headers": {"Authorization": {"secret": "keyring:0123"}}}}}"#,
        &McpConfig::default(),
    )
    .unwrap();
    assert!(p.servers[0].server.headers.is_empty());
    assert_eq!(p.servers[0].unset, vec!["header Authorization"]);
}

#[test]
fn export_round_trips_through_import() {
    let cfg = McpConfig::default_builtin();
    let p = preview(&export(&cfg), &McpConfig::default()).unwrap();
    // the same servers, marked as not (yet) trusted: they came from a file
    let back: std::collections::BTreeMap<String, ServerConfig> = p
        .servers
        .into_iter()
        .map(|e| {
            assert_eq!(e.server.trusted, Some(false));
            (
                e.name,
                ServerConfig {
                    trusted: None,
                    ..e.server
                },
            )
        })
        .collect();
    assert_eq!(back, cfg.servers);
}
