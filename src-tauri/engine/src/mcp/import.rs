//! Importing server configs written for other hosts: Claude Desktop and Cursor (`mcpServers`),
//! `.mcp.json` (`mcpServers`), VS Code (`.vscode/mcp.json`: `servers`, entries with a `type`).
//! Exporting is the Claude Desktop shape ([`McpConfig`] serialized), secrets left out.
//!
//! Values come in as plain text only: a reference to a stored secret in someone's file (it could
//! name one of this user's secrets) or an export's placeholder is no value: it is left out, and
//! the preview says which values to set after the import.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::{McpConfig, SecretField, ServerConfig};
use crate::secrets::{looks_secret, SecretValue};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportEntry {
    pub name: String,
    pub server: ServerConfig,
    /// A server of this name exists already.
    pub conflict: bool,
    /// A free name to import it under instead, when there is a conflict.
    pub suggested_name: String,
    /// Its environment as the preview shows it: every name, no value.
    pub env: Vec<EnvEntry>,
    /// The names of the HTTP headers it sends (their values are not shown).
    pub headers: Vec<String>,
    /// Values the file did not give (an export's placeholders for secrets): what to set after
    /// the import ("environment variable X", "header Y").
    pub unset: Vec<String>,
}

/// One environment variable an imported server would get.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvEntry {
    pub name: String,
    /// How long the value is (it is not shown).
    pub length: usize,
    /// Why this variable deserves a look before the server runs, when it does.
    pub risk: Option<EnvRisk>,
    /// Its name says it holds a secret (a key, a token, a password): it is kept in the secret
    /// store once imported.
    pub secret: bool,
}

/// Variables that change what a program loads or runs, not just what it is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EnvRisk {
    /// `LD_*`: makes the program load other code (LD_PRELOAD, LD_LIBRARY_PATH).
    LoadsLibraries,
    /// `*_OPTIONS` (NODE_OPTIONS, JAVA_TOOL_OPTIONS…): options that can load code.
    RuntimeOptions,
    /// `npm_config_*`: where npm/npx fetch packages from, and how.
    PackageSource,
    /// `PYTHON*` (PYTHONPATH, PYTHONSTARTUP…): what Python imports or runs first.
    PythonPath,
    /// `PATH`: which programs run under familiar names.
    SearchPath,
}

/// Why a variable is risky, if it is.
pub fn env_risk(name: &str) -> Option<EnvRisk> {
    let upper = name.to_ascii_uppercase();
    if upper.starts_with("LD_") || upper == "DYLD_INSERT_LIBRARIES" {
        Some(EnvRisk::LoadsLibraries)
    } else if upper.ends_with("_OPTIONS") || upper == "NODE_PATH" {
        Some(EnvRisk::RuntimeOptions)
    } else if upper.starts_with("NPM_CONFIG_") || upper.starts_with("YARN_") {
        Some(EnvRisk::PackageSource)
    } else if upper.starts_with("PYTHON") {
        Some(EnvRisk::PythonPath)
    } else if upper == "PATH" {
        Some(EnvRisk::SearchPath)
    } else {
        None
    }
}

/// A server the user chose to import, as the window sends it back.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportChoice {
    /// The name to save it under.
    pub name: String,
    pub server: ServerConfig,
    /// Replace the server of that name, if there is one.
    #[serde(default)]
    pub replace: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub name: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportPreview {
    /// Which format it was read as.
    pub format: String,
    pub servers: Vec<ImportEntry>,
    pub skipped: Vec<Skipped>,
}

fn strings(v: Option<&Value>) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(format!("an argument is not a string: {other}")),
            })
            .collect(),
        Some(other) => Err(format!("\"args\" must be a list, got {other}")),
    }
}

/// The values of an `env` or `headers` object; what has no value (null, a secret reference,
/// an export's placeholder) is left out and named in `unset`.
fn string_map(
    v: Option<&Value>,
    field: fn(String) -> SecretField,
    unset: &mut Vec<String>,
) -> BTreeMap<String, SecretValue> {
    let mut out = BTreeMap::new();
    for (k, v) in v.and_then(Value::as_object).into_iter().flatten() {
        match SecretValue::from_import(v) {
            Some(v) => {
                out.insert(k.clone(), v);
            }
            None if v.is_null() => {}
            None => unset.push(field(k.clone()).describe()),
        }
    }
    out
}

fn entry(v: &Value, unset: &mut Vec<String>) -> Result<ServerConfig, String> {
    let o = v.as_object().ok_or("not an object")?;
    let kind = o.get("type").and_then(Value::as_str);
    let url = o
        .get("url")
        .or_else(|| o.get("serverUrl"))
        .and_then(Value::as_str);
    let disabled = o.get("disabled").and_then(Value::as_bool).unwrap_or(false);
    // Switchboard's own (an export of ours read back); other hosts do not write it
    let log_level = o.get("logLevel").and_then(Value::as_str).map(String::from);
    let server = match (kind, url) {
        // the legacy HTTP+SSE transport, and the REST dialect (Switchboard's own export)
        (Some(t @ ("sse" | "rest")), Some(url)) => ServerConfig {
            transport: Some(t.into()),
            headers: string_map(o.get("headers"), SecretField::Header, unset),
            disabled,
            ..ServerConfig::http(url)
        },
        (Some("http" | "streamable-http" | "streamableHttp") | None, Some(url))
            if o.get("command").is_none() =>
        {
            ServerConfig {
                headers: string_map(o.get("headers"), SecretField::Header, unset),
                disabled,
                ..ServerConfig::http(url)
            }
        }
        (Some(t), _) if !matches!(t, "stdio" | "http" | "streamable-http" | "streamableHttp") => {
            return Err(format!("\"{t}\" servers are not supported"))
        }
        _ => {
            let command = o
                .get("command")
                .and_then(Value::as_str)
                .ok_or("no \"command\"")?
                .to_string();
            ServerConfig {
                args: strings(o.get("args"))?,
                env: string_map(o.get("env"), SecretField::Env, unset),
                cwd: o.get("cwd").and_then(Value::as_str).map(String::from),
                disabled,
                // our own key (a Switchboard export): kept; other hosts have none
                sandbox: match o.get("sandbox") {
                    Some(v) => Some(
                        serde_json::from_value(v.clone())
                            .map_err(|e| format!("\"sandbox\" is not valid: {e}"))?,
                    ),
                    None => None,
                },
                ..ServerConfig::new(command, &[])
            }
        }
    };
    Ok(ServerConfig {
        log_level,
        ..server
    })
}

fn free_name(base: &str, taken: &dyn Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (2..)
        .map(|i| format!("{base}-{i}"))
        .find(|n| !taken(n))
        .unwrap()
}

/// Why a text cannot be imported as a config.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ImportError(String);

/// Reads a config another host wrote; `existing` are the servers already configured here.
pub fn preview(text: &str, existing: &McpConfig) -> Result<ImportPreview, ImportError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| ImportError(format!("This is not valid JSON: {e}")))?;
    let (format, map) = if let Some(m) = v.get("mcpServers").and_then(Value::as_object) {
        ("Claude Desktop / Cursor / .mcp.json (mcpServers)", m)
    } else if let Some(m) = v.get("servers").and_then(Value::as_object) {
        ("VS Code (servers)", m)
    } else if let Some(m) = v
        .get("mcp")
        .and_then(|m| m.get("servers"))
        .and_then(Value::as_object)
    {
        ("VS Code settings (mcp.servers)", m)
    } else {
        return Err(ImportError(
            "No servers found: expected an \"mcpServers\" object (Claude Desktop, Cursor, .mcp.json) \
             or a \"servers\" object (VS Code)."
                .into(),
        ));
    };
    let mut servers: Vec<ImportEntry> = Vec::new();
    let mut skipped = Vec::new();
    for (name, raw) in map {
        let mut unset = Vec::new();
        match entry(raw, &mut unset) {
            Ok(server) => {
                // names are compared as the import compares them: without regard to case
                let suggested = |n: &str| {
                    servers
                        .iter()
                        .any(|e| e.suggested_name.eq_ignore_ascii_case(n))
                };
                let taken = |n: &str| {
                    existing.servers.keys().any(|k| k.eq_ignore_ascii_case(n))
                        || map.keys().any(|k| k != name && k.eq_ignore_ascii_case(n))
                        || suggested(n)
                };
                let conflict = existing
                    .servers
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case(name));
                let suggested_name = if conflict {
                    free_name(&format!("{name}-imported"), &taken)
                } else if suggested(name) {
                    // the same name twice in one file ("a" and "A"): the second gets another
                    free_name(name, &taken)
                } else {
                    name.clone()
                };
                let env = server
                    .env
                    .iter()
                    .map(|(k, v)| EnvEntry {
                        name: k.clone(),
                        length: v.plain().unwrap_or_default().chars().count(),
                        risk: env_risk(k),
                        secret: looks_secret(k),
                    })
                    .collect();
                let headers = server.headers.keys().cloned().collect();
                servers.push(ImportEntry {
                    name: name.clone(),
                    // a server from someone else's config: its annotations are not believed
                    // until the user says so, and it does not start until the user says so
                    server: ServerConfig {
                        trusted: Some(false),
                        ..server
                    },
                    conflict,
                    suggested_name,
                    env,
                    headers,
                    unset,
                });
            }
            Err(reason) => skipped.push(Skipped {
                name: name.clone(),
                reason,
            }),
        }
    }
    Ok(ImportPreview {
        format: format.into(),
        servers,
        skipped,
    })
}

/// The config in the Claude Desktop shape, pretty-printed; every secret (headers, environment
/// values marked secret) replaced by [`crate::secrets::EXPORT_PLACEHOLDER`].
pub fn export(config: &McpConfig) -> String {
    let mut config = config.clone();
    for server in config.servers.values_mut() {
        for (f, v) in server.secret_fields_mut() {
            *v = SecretValue::Plain(v.exported(f.always_secret()));
        }
    }
    serde_json::to_string_pretty(&config).expect("config serializes")
}

#[cfg(test)]
mod tests {
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
}

/// Properties: any text is read or refused without a panic; every server in a file is either
/// offered or skipped with a reason; suggested names are free; our own export comes back whole.
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::json;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const WORDS: &[&str] = &[
        "mcpServers",
        "servers",
        "mcp",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "serverUrl",
        "type",
        "headers",
        "disabled",
        "logLevel",
        "stdio",
        "http",
        "sse",
        "rest",
        "streamable-http",
        "streamableHttp",
        "websocket",
        "calculator",
        "files",
        "Files",
        "files-imported",
    ];

    fn server() -> impl Strategy<Value = ServerConfig> {
        let text = "\\PC{1,16}";
        let map = || prop::collection::btree_map("[A-Za-z_][A-Za-z0-9_-]{0,8}", "\\PC{0,12}", 0..3);
        let level = prop::option::of(prop::sample::select(&["debug", "info", "warning"][..]))
            .prop_map(|l| l.map(String::from));
        let stdio = (
            text,
            prop::collection::vec("\\PC{0,12}", 0..4),
            map(),
            prop::option::of(text),
            level.clone(),
            any::<bool>(),
        )
            .prop_map(
                |(command, args, env, cwd, log_level, disabled)| ServerConfig {
                    args,
                    env: env.into_iter().map(|(k, v)| (k, v.into())).collect(),
                    cwd,
                    log_level,
                    disabled,
                    ..ServerConfig::new(command, &[])
                },
            );
        let remote = (
            prop::sample::select(&["http", "sse", "rest"][..]),
            "https?://[a-z0-9.]{1,12}(:[0-9]{1,5})?/[ -~]{0,12}",
            map(),
            level,
            any::<bool>(),
        )
            .prop_map(|(t, url, headers, log_level, disabled)| ServerConfig {
                transport: Some(t.into()),
                headers: headers.into_iter().map(|(k, v)| (k, v.into())).collect(),
                log_level,
                disabled,
                ..ServerConfig::http(url)
            });
        prop_oneof![stdio, remote]
    }

    proptest! {
        #[test]
        fn never_panics_on_any_text(text in "\\PC{0,300}") {
            let _ = preview(&text, &McpConfig::default_builtin());
        }

        #[test]
        fn every_server_is_offered_or_skipped_under_a_free_name(
            servers in json(WORDS),
            shape in 0..3usize,
        ) {
            let doc = match shape {
                0 => serde_json::json!({"mcpServers": servers}),
                1 => serde_json::json!({"servers": servers}),
                _ => serde_json::json!({"mcp": {"servers": servers}}),
            };
            let existing = McpConfig::default_builtin();
            let Ok(p) = preview(&doc.to_string(), &existing) else {
                prop_assert!(!servers.is_object());
                return Ok(());
            };
            let map = servers.as_object().unwrap();
            let mut seen: Vec<&str> = p.servers.iter().map(|e| e.name.as_str())
                .chain(p.skipped.iter().map(|s| s.name.as_str()))
                .collect();
            seen.sort_unstable();
            let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
            keys.sort_unstable();
            prop_assert_eq!(seen, keys);
            for (i, e) in p.servers.iter().enumerate() {
                let n = &e.suggested_name;
                prop_assert!(!existing.servers.keys().any(|k| k.eq_ignore_ascii_case(n)), "{n} exists");
                prop_assert!(
                    !p.servers[..i].iter().any(|o| o.suggested_name.eq_ignore_ascii_case(n)),
                    "{n} suggested twice"
                );
            }
        }

        #[test]
        fn our_export_comes_back_whole(servers in prop::collection::btree_map("\\PC{1,20}", server(), 0..6)) {
            let cfg = McpConfig { servers };
            let p = preview(&export(&cfg), &McpConfig::default()).unwrap();
            prop_assert_eq!(p.skipped, vec![]);
            // whole, but marked as not (yet) trusted: it came from a file; and headers (always
            // secrets) are left out of an export: named as still to set
            prop_assert!(p.servers.iter().all(|e| e.server.trusted == Some(false)));
            for e in &p.servers {
                prop_assert_eq!(e.unset.len(), cfg.servers[&e.name].headers.len());
            }
            let back: BTreeMap<String, ServerConfig> = p
                .servers
                .into_iter()
                .map(|e| (e.name, ServerConfig { trusted: None, ..e.server }))
                .collect();
            let sent: BTreeMap<String, ServerConfig> = cfg
                .servers
                .into_iter()
                .map(|(n, s)| (n, ServerConfig { headers: Default::default(), ..s }))
                .collect();
            prop_assert_eq!(back, sent);
        }
    }
}
