//! The MCP Registry's documents (API v0.1, `server.json` 2025-12-11): a page of servers, one
//! server with the registry's `_meta`, its packages, remotes and inputs. Each server of a page is
//! read on its own, so a malformed one is refused with a reason and the others are kept.
//!
//! Deleted and not-latest entries are hidden, deprecated ones marked (`_meta`
//! `io.modelcontextprotocol.registry/official`).

use std::collections::BTreeMap;

use crate::form::is_one_version;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `_meta` key of what the official registry (and registries speaking its API) says of an entry.
pub const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";

/// A server as its publisher describes it (`ServerDetail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerJson {
    pub name: String,
    pub description: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Repository>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<Package>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remotes: Vec<TransportSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repository {
    pub url: String,
    #[serde(default)]
    pub source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    pub src: String,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub theme: Option<String>,
}

/// One way to get the server as a package (`registryType`: npm, pypi, oci, nuget, mcpb, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    pub registry_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_base_url: Option<String>,
    pub identifier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_hint: Option<String>,
    /// Required by the schema; entries written before it was are stdio servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_arguments: Vec<Argument>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub package_arguments: Vec<Argument>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment_variables: Vec<KeyValueInput>,
}

/// A transport: a package's (`stdio`, or a local HTTP one) or a remote's (`streamable-http`,
/// `sse`, with its URL, headers and the variables of its URL template).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransportSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<KeyValueInput>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// What a user may be asked for (`Input`, `InputWithVariables`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_required: bool,
    /// `string` (default), `number`, `boolean`, `filepath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A fixed value (not for the user to change); `{name}` in it is filled from `variables`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_secret: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// A command-line argument: `positional` (its value as is) or `named` (`--flag=value`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Argument {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_hint: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_repeated: bool,
    #[serde(flatten)]
    pub input: Input,
}

/// An environment variable or a header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyValueInput {
    pub name: String,
    #[serde(flatten)]
    pub input: Input,
}

/// What the registry says of an entry (`_meta` of a `ServerResponse`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Official {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub status_message: Option<String>,
    #[serde(default)]
    pub is_latest: Option<bool>,
    #[serde(default)]
    pub published_at: Option<String>,
}

/// An entry as a page lists it: the publisher's server and what the registry says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub server: ServerJson,
    pub official: Official,
}

/// An entry of a page that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// Its name, when it has a readable one.
    pub name: Option<String>,
    pub reason: String,
}

/// A page of `GET /v0.1/servers`.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub entries: Vec<Listed>,
    pub skipped: Vec<Skipped>,
    pub next_cursor: Option<String>,
}

/// Why a document from the registry is not a page (or a server) at all.
#[derive(Debug, thiserror::Error)]
#[error("the registry's answer is not what API v0.1 describes: {0}")]
pub struct NotV01(pub String);

/// Reads a page; each server on its own (a malformed one is skipped with its reason).
pub fn parse_page(body: &[u8]) -> Result<Page, NotV01> {
    let v: Value = serde_json::from_slice(body).map_err(|e| NotV01(e.to_string()))?;
    let servers = v
        .get("servers")
        .and_then(Value::as_array)
        .ok_or_else(|| NotV01("no \"servers\" list".into()))?;
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    for item in servers {
        match parse_response(item) {
            Ok(l) => entries.push(l),
            Err(reason) => skipped.push(Skipped {
                name: item
                    .pointer("/server/name")
                    .and_then(Value::as_str)
                    .map(|n| n.chars().take(200).collect()),
                reason,
            }),
        }
    }
    let next_cursor = v
        .pointer("/metadata/nextCursor")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(String::from);
    Ok(Page {
        entries,
        skipped,
        next_cursor,
    })
}

/// Reads one `ServerResponse` (`GET /v0.1/servers/{name}/versions/{version}`).
pub fn parse_one(body: &[u8]) -> Result<Listed, NotV01> {
    let v: Value = serde_json::from_slice(body).map_err(|e| NotV01(e.to_string()))?;
    parse_response(&v).map_err(NotV01)
}

fn parse_response(item: &Value) -> Result<Listed, String> {
    let server = item.get("server").ok_or("it has no \"server\"")?;
    let server: ServerJson = serde_json::from_value(server.clone()).map_err(|e| e.to_string())?;
    check(&server)?;
    let official = match item.get("_meta").and_then(|m| m.get(OFFICIAL_META)) {
        Some(o) => serde_json::from_value(o.clone())
            .map_err(|e| format!("its registry metadata is not valid: {e}"))?,
        None => Official::default(),
    };
    Ok(Listed { server, official })
}

/// What the schema requires beyond the shape: a name `namespace/name`, a description, a version
/// that is one version (not a range), packages with an identifier.
fn check(s: &ServerJson) -> Result<(), String> {
    let name_ok = (3..=200).contains(&s.name.len())
        && s.name.split_once('/').is_some_and(|(ns, n)| {
            !ns.is_empty()
                && !n.is_empty()
                && ns
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        });
    if !name_ok {
        return Err(format!(
            "its name \"{}\" is not of the form namespace/name",
            s.name.chars().take(200).collect::<String>()
        ));
    }
    if s.description.trim().is_empty() {
        return Err("it has no description".into());
    }
    if !is_one_version(&s.version) {
        return Err(format!("its version \"{}\" is not one version", s.version));
    }
    for p in &s.packages {
        if p.identifier.trim().is_empty() || p.registry_type.trim().is_empty() {
            return Err("one of its packages has no identifier or no type".into());
        }
    }
    Ok(())
}

impl Listed {
    /// Deleted (never installed, hidden from lists).
    pub fn deleted(&self) -> bool {
        self.official.status.as_deref() == Some("deleted")
    }

    pub fn deprecated(&self) -> bool {
        self.official.status.as_deref() == Some("deprecated")
    }
}
