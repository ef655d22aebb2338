//! Importing server configs written for other hosts: Claude Desktop and Cursor (`mcpServers`),
//! `.mcp.json` (`mcpServers`), VS Code (`.vscode/mcp.json`: `servers`, entries with a `type`).
//! Exporting is the Claude Desktop shape ([`McpConfig`] serialized), secrets left out.
//!
//! Values come in as plain text only: a reference to a stored secret in someone's file (it could
//! name one of this user's secrets) or an export's placeholder is no value: it is left out, and
//! the preview says which values to set after the import.
//!
//! An imported server is added turned off and not trusted (its annotations are not believed,
//! `ServerConfig::trusts_hints`): it starts only after a second confirmation that lists what runs
//! (command, folder, environment names, header names).

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
mod tests;

/// Properties: any text is read or refused without a panic; every server in a file is either
/// offered or skipped with a reason; suggested names are free; our own export comes back whole.
#[cfg(test)]
mod props;
