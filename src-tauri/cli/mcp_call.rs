//! `switchboard mcp-call [--call TOOL [--args JSON] [--args-schema KEY=TOOL]]... [--calls JSON]
//! [--all] [--load-skill NAME]... [--load-skills] [--elicitation …] SERVER`: one MCP server (a
//! URL, or a configured name) through the same `McpHost` as the window, its tools and skills
//! listed, the given tools called and the given skills loaded (verified, file by file), NDJSON
//! out; the client the conformance suite drives.
//!
//! It calls the tools a conformance scenario's context names, with a tool's schema as the model is
//! offered it.

use std::io::Write;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use serde_json::{json, Map, Value};
use switchboard_engine::mcp::{
    oauth, CallEvent, ElicitationAction, ElicitationAnswer, HostOptions, McpHost, OAuthClient,
    SamplingAnswer, ServerConfig, ServerStatus, ToolOutcome,
};
use switchboard_engine::secrets::SecretValue;
use tokio_util::sync::CancellationToken;

use super::{value_of, USAGE};

/// One tool to call.
#[derive(Debug, Default, PartialEq)]
struct Call {
    tool: String,
    /// Its arguments, when they were given (else sample ones from its schema).
    args: Option<Map<String, Value>>,
    /// Arguments that are another tool's `inputSchema` as the model is offered it: (argument,
    /// tool). A scenario checks with them that a schema reaches the model as the server wrote it.
    schemas_of: Vec<(String, String)>,
}

/// What `mcp-call` was asked to do.
struct Options {
    /// The tools to call.
    calls: Vec<Call>,
    /// Call every tool the server lists too.
    all: bool,
    /// The skills to load (by name).
    load: Vec<String>,
    /// Load every skill the server lists.
    load_all: bool,
    /// Accept elicitations with their defaults (else decline them).
    accept_defaults: bool,
    /// The server: an http(s) URL or a configured name.
    target: String,
    /// How a sign-in's address is opened.
    browser: Arc<dyn oauth::Browser>,
    /// A client registered by hand, or a metadata document.
    client: OAuthClient,
}

pub async fn mcp_call(rest: &[String]) -> anyhow::Result<i32> {
    super::init_cli_logging();
    let Options {
        mut calls,
        all,
        load,
        load_all,
        accept_defaults,
        target,
        browser,
        client,
    } = parse_options(rest)?;
    let exe = std::env::current_exe().context("finding this program")?;
    let bare_url = target.starts_with("http://") || target.starts_with("https://");
    let (name, server) = server_to_call(&target, bare_url, client)?;
    let mut config = switchboard_engine::mcp::McpConfig::default();
    config.servers.insert(name.clone(), server);
    // a configured server runs on the login shell's PATH, as in the window (npx, uvx and what
    // ~/.profile adds are found when the command line's own PATH lacks them)
    let path_var = if bare_url {
        None
    } else {
        let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
        let inherited = std::env::var("PATH").unwrap_or_default();
        tokio::task::spawn_blocking(move || {
            switchboard_engine::mcp::app_path(&shell, &inherited, std::time::Duration::from_secs(3))
        })
        .await
        .ok()
    };
    let host = McpHost::new(HostOptions {
        sign_in_by_itself: Some(oauth::BrowserStep(browser)),
        oauth_in_memory: bare_url,
        path_var,
        ..HostOptions::new(exe)
    });
    host.start_all(&config).await;
    let view = host.servers().remove(0);
    print_line(&json!({"server": view}));
    if view.status != ServerStatus::Running {
        host.shutdown().await;
        return Ok(1);
    }
    // its skills, when it publishes any (SEP-2640): listed (nothing of them read), and the ones
    // asked for loaded
    let mut code = 0;
    if host.offers_skills(&name) {
        match host.skills(&name).await {
            Ok(listing) => {
                print_line(&json!({"skills": listing.skills, "refused": listing.refused}));
                let wanted: Vec<String> = if load_all {
                    listing
                        .skills
                        .iter()
                        .map(|s| s.name().to_string())
                        .collect()
                } else {
                    load
                };
                for skill in wanted {
                    if !load_skill(&host, &name, &skill).await {
                        code = 1;
                    }
                }
            }
            Err(e) => {
                print_line(&json!({"skills": [], "error": e.to_string()}));
                code = i32::from(!load.is_empty() || load_all);
            }
        }
    } else if !load.is_empty() {
        print_line(&json!({"skills": [], "error": "the server publishes no skills"}));
        code = 1;
    }
    if all {
        for t in &view.tools {
            if !calls.iter().any(|c| c.tool == t.name) {
                calls.push(Call {
                    tool: t.name.clone(),
                    ..Call::default()
                });
            }
        }
    }
    let offered = host.tool_specs();
    for Call {
        tool,
        args,
        schemas_of,
    } in calls
    {
        let Some(t) = view.tools.iter().find(|t| t.name == tool) else {
            print_line(&json!({"tool": tool, "error": "no such tool"}));
            code = 1;
            continue;
        };
        let mut args = args.unwrap_or_else(|| sample_arguments(&t.input_schema));
        for (key, of) in schemas_of {
            let schema = view
                .tools
                .iter()
                .find(|o| o.name == of)
                .and_then(|o| offered.iter().find(|s| s.name == o.exposed));
            match schema {
                Some(s) => {
                    args.insert(key, s.parameters.clone());
                }
                None => {
                    print_line(&json!({"tool": of, "error": "no such tool"}));
                    code = 1;
                }
            }
        }
        let out = call_alone(&host, &t.exposed, args.clone(), accept_defaults).await;
        print_line(
            &json!({"tool": tool, "arguments": args, "isError": out.is_error, "result": out.text}),
        );
    }
    host.shutdown().await;
    Ok(code)
}

/// The command line's options and its one server.
fn parse_options(rest: &[String]) -> anyhow::Result<Options> {
    let mut calls: Vec<Call> = Vec::new();
    let mut all = false;
    let mut load = Vec::new();
    let mut load_all = false;
    let mut accept_defaults = false;
    let mut target = None;
    let mut browser: Arc<dyn oauth::Browser> = Arc::new(oauth::PrintUrl);
    let mut client = OAuthClient::default();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--call" => calls.push(Call {
                tool: value_of(&mut it, a)?,
                ..Call::default()
            }),
            "--args" => {
                let v = value_of(&mut it, a)?;
                let args: Map<String, Value> = serde_json::from_str(&v)
                    .with_context(|| format!("--args {v} is not a JSON object"))?;
                let last = calls
                    .last_mut()
                    .ok_or_else(|| anyhow!("--args goes after the --call it is for"))?;
                last.args = Some(args);
            }
            "--args-schema" => {
                let v = value_of(&mut it, a)?;
                let (key, tool) = v
                    .split_once('=')
                    .filter(|(k, t)| !k.is_empty() && !t.is_empty())
                    .ok_or_else(|| anyhow!("--args-schema takes KEY=TOOL, not {v:?}"))?;
                let last = calls
                    .last_mut()
                    .ok_or_else(|| anyhow!("--args-schema goes after the --call it is for"))?;
                last.schemas_of.push((key.to_string(), tool.to_string()));
            }
            "--calls" => calls.extend(calls_of(&value_of(&mut it, a)?)?),
            "--all" => all = true,
            "--load-skill" => load.push(value_of(&mut it, a)?),
            "--load-skills" => load_all = true,
            "--oauth-browser" => {
                browser = match it.next().map(String::as_str) {
                    Some("follow") => Arc::new(oauth::FollowRedirects),
                    Some("print") => Arc::new(oauth::PrintUrl),
                    other => bail!("--oauth-browser takes follow or print, not {other:?}"),
                }
            }
            "--oauth-client-id" => client.client_id = Some(value_of(&mut it, a)?),
            "--oauth-client-secret" => {
                client.client_secret = Some(SecretValue::Plain(value_of(&mut it, a)?))
            }
            "--oauth-client-metadata-url" => {
                client.client_metadata_url = Some(value_of(&mut it, a)?)
            }
            "--elicitation" => {
                accept_defaults = match it.next().map(String::as_str) {
                    Some("accept-defaults") => true,
                    Some("decline") => false,
                    other => bail!("--elicitation takes accept-defaults or decline, not {other:?}"),
                }
            }
            s if s.starts_with("--") => bail!("unknown option {s}\n\n{USAGE}"),
            s => {
                if target.replace(s.to_string()).is_some() {
                    bail!("give one server");
                }
            }
        }
    }
    let target =
        target.ok_or_else(|| anyhow!("which server? a URL or a configured name\n\n{USAGE}"))?;
    Ok(Options {
        calls,
        all,
        load,
        load_all,
        accept_defaults,
        target,
        browser,
        client,
    })
}

/// The calls a JSON text lists: an array of `{"name", "arguments"}`, or an object whose
/// `toolCalls` is one (the context the conformance suite gives a scenario).
fn calls_of(text: &str) -> anyhow::Result<Vec<Call>> {
    let v: Value =
        serde_json::from_str(text).with_context(|| format!("--calls {text} is not JSON"))?;
    let list = match &v {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("toolCalls") {
            Some(Value::Array(a)) => a,
            _ => return Ok(vec![]),
        },
        _ => bail!("--calls takes a JSON array of calls or an object with toolCalls"),
    };
    list.iter()
        .map(|c| {
            let tool = c["name"]
                .as_str()
                .ok_or_else(|| anyhow!("a call in --calls has no name: {c}"))?;
            let args = match c.get("arguments") {
                None | Some(Value::Null) => None,
                Some(Value::Object(o)) => Some(o.clone()),
                Some(other) => {
                    bail!("the arguments of {tool} in --calls are not an object: {other}")
                }
            };
            Ok(Call {
                tool: tool.to_string(),
                args,
                schemas_of: vec![],
            })
        })
        .collect()
}

/// The server to call and the name it goes by: a bare URL as "server", else the configured
/// server of that name; with the client given on the command line, if any.
fn server_to_call(
    target: &str,
    bare_url: bool,
    client: OAuthClient,
) -> anyhow::Result<(String, ServerConfig)> {
    let (name, mut server) = if bare_url {
        ("server".to_string(), ServerConfig::http(target.to_string()))
    } else {
        let config = switchboard_engine::mcp::McpConfig::load_or_init(
            &switchboard_engine::paths::mcp_config_file(),
        )?;
        let s = config
            .servers
            .get(target)
            .cloned()
            .ok_or_else(|| anyhow!("no configured MCP server is named \"{target}\""))?;
        (target.to_string(), s)
    };
    if client != OAuthClient::default() {
        server.oauth = Some(client);
    }
    Ok((name, server))
}

/// Loads `server`'s skill `name` as the model would (its `SKILL.md`, verified), then reads each
/// of its other files (each verified), stopping at the first that fails; whether all did.
async fn load_skill(host: &McpHost, server: &str, name: &str) -> bool {
    let loaded = match host.load_skill(server, name).await {
        Ok(l) => l,
        Err(e) => {
            print_line(&json!({"skill": name, "error": e.to_string()}));
            return false;
        }
    };
    print_line(&json!({"skill": name, "loaded": loaded.entry.uri, "text": loaded.text}));
    for path in &loaded.files {
        match host.read_skill_file(server, name, path).await {
            Ok(text) => print_line(&json!({"skill": name, "file": path, "text": text})),
            Err(e) => {
                print_line(&json!({"skill": name, "file": path, "error": e.to_string()}));
                return false;
            }
        }
    }
    true
}

/// Calls one tool with nobody to ask: its elicitations accepted with their defaults (when
/// `accept_defaults`, and not for a URL) or declined, its sampling refused.
async fn call_alone(
    host: &McpHost,
    exposed: &str,
    args: Map<String, Value>,
    accept_defaults: bool,
) -> ToolOutcome {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let answers = tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            match ev {
                CallEvent::Elicitation(e, reply) => {
                    reply.send(if accept_defaults && e.url.is_none() {
                        ElicitationAnswer {
                            action: ElicitationAction::Accept,
                            content: Some(defaults_of(e.schema.as_ref())),
                        }
                    } else {
                        ElicitationAnswer::of(ElicitationAction::Decline)
                    });
                }
                CallEvent::Sampling(_, reply) => {
                    reply.send(SamplingAnswer::Refused(
                        "mcp-call has no model to sample".into(),
                    ));
                }
                CallEvent::Progress(_) | CallEvent::Task(_) => {}
            }
        }
    });
    let out = host
        .call_tool(exposed, args, &CancellationToken::new(), Some(tx))
        .await;
    let _ = answers.await;
    out
}

/// One NDJSON line on stdout, flushed (a script reads it as it comes).
fn print_line(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, v);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Arguments for a smoke call when none are given: each required property's default, or a
/// plain value of its type.
fn sample_arguments(schema: &Value) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema["properties"].as_object() {
        for (name, p) in props {
            let value = match (p.get("default"), p["type"].as_str()) {
                (Some(d), _) => d.clone(),
                _ if !required.contains(&name.as_str()) => continue,
                (None, Some("number" | "integer")) => json!(1),
                (None, Some("boolean")) => json!(true),
                (None, Some("array")) => json!([]),
                (None, Some("object")) => json!({}),
                (None, _) => p
                    .get("enum")
                    .and_then(|e| e.get(0))
                    .cloned()
                    .unwrap_or_else(|| json!("test")),
            };
            out.insert(name.clone(), value);
        }
    }
    out
}

/// An elicitation answered without a person: accept with the schema's defaults.
fn defaults_of(schema: Option<&Value>) -> Value {
    let mut content = serde_json::Map::new();
    if let Some(props) = schema.and_then(|s| s["properties"].as_object()) {
        for (name, p) in props {
            if let Some(d) = p.get("default") {
                content.insert(name.clone(), d.clone());
            }
        }
    }
    Value::Object(content)
}
