//! MCP server configuration in the Claude Desktop shape:
//! `{"mcpServers": {"name": {"command", "args", "env", "cwd"?, "disabled"?}}}`, plus our own
//! `"sandbox"` for stdio servers (see [`SandboxSetting`]). Header values, and environment values
//! the user marked secret, are references to the secret store (`{"secret": "keyring:<id>"}`,
//! see [`crate::secrets`]).
//!
//! `config/validate.rs` checks a server before it is saved (including `plain_http_headers_refusal`:
//! headers at a plain `http://` address of another computer).

use std::collections::BTreeMap;
use std::path::Path;

mod validate;
pub use validate::{validate_server, FieldError, LOG_LEVELS};

use serde::{Deserialize, Serialize};

pub use super::transport::Transport;
use crate::secrets::SecretValue;

/// The command that means "this very binary" (the built-in servers are `switchboard mcp-server …`).
pub const SELF_COMMAND: &str = "switchboard";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpConfig {
    #[serde(rename = "mcpServers", default)]
    pub servers: BTreeMap<String, ServerConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerConfig {
    /// `stdio` (default), or `http` (Streamable HTTP) for a server at `url`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The program, for stdio servers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its environment: plain values, and secret ones (in the secret store).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, SecretValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint, for HTTP servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Extra HTTP headers (e.g. Authorization), for HTTP servers. Always secret: their values
    /// are kept in the secret store (a plain value typed into the file is moved there on the
    /// next save).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, SecretValue>,
    /// The `logging/setLevel` sent after start (debug, info, notice, warning, error, …).
    #[serde(rename = "logLevel", default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Whether its tools' annotations are believed (a read-only tool then runs without asking).
    /// Unset: yes for a local program the user added, no for a remote server; always yes for the
    /// built-in servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
    /// The kernel sandbox a stdio server runs in (`mcp/sandbox.rs`). Absent: the host's default
    /// (the built-in servers are sandboxed, other servers are not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSetting>,
    /// The longest wait in seconds for one request to this server without a sign of life (a
    /// tool call's progress restarts it; a task's polls each get it). Absent: the app's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Its apps (MCP Apps) may reach the origins their pages declare. Off: they reach nothing.
    #[serde(
        rename = "appNetwork",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub app_network: bool,
    /// The origins its app pages named when the user allowed them the network (the list the
    /// server form showed): an app reaches only those it declares *and* are here. An origin a
    /// page names later stays closed until the user allows it too.
    #[serde(rename = "appOrigins", default, skip_serializing_if = "Vec::is_empty")]
    pub app_origins: Vec<String>,
    /// How Switchboard signs in to this (HTTP) server when it asks (OAuth): the client the
    /// user registered with its authorization server. Absent: a metadata document or
    /// registration, as the authorization server allows. The tokens are never here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthClient>,
    /// Where it was installed from (the catalog: a registry entry, or a bundle), for updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<InstallSource>,
}

/// A server installed from the catalog remembers where from: the registry and the entry's name
/// and version (or the bundle's), which of its packages or remotes, and the values the user gave
/// (never a secret: those stay in the secret store, kept by field on an update).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallSource {
    /// The registry's address; none for a bundle opened from a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    pub name: String,
    pub version: String,
    /// npm, pypi, oci, nuget, mcpb, streamable-http, sse.
    pub kind: String,
    /// The package's identifier, or the remote's URL template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Where its bundle is unpacked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_dir: Option<String>,
    /// The SHA-256 of the bundle file it was unpacked from (hex): part of its identity, so what
    /// was approved and pinned for one bundle does not hold for another in its place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, serde_json::Value>,
}

/// A client registered by hand with a server's authorization server.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthClient {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Always secret (kept in the secret store, like headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<SecretValue>,
    /// A Client ID Metadata Document (https) to sign in with where the server takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
}

/// `"sandbox": false` (never sandboxed, not even a built-in), `true` (sandboxed with the
/// defaults: no network, no folders beyond what it needs to run) or an object ([`SandboxConfig`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "SandboxRepr", into = "SandboxRepr")]
pub enum SandboxSetting {
    Off,
    On(SandboxConfig),
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SandboxRepr {
    Flag(bool),
    Config(SandboxConfig),
}

impl From<SandboxRepr> for SandboxSetting {
    fn from(r: SandboxRepr) -> Self {
        match r {
            SandboxRepr::Flag(false) => SandboxSetting::Off,
            SandboxRepr::Flag(true) => SandboxSetting::On(SandboxConfig::default()),
            SandboxRepr::Config(c) => SandboxSetting::On(c),
        }
    }
}

impl From<SandboxSetting> for SandboxRepr {
    fn from(s: SandboxSetting) -> Self {
        match s {
            SandboxSetting::Off => SandboxRepr::Flag(false),
            SandboxSetting::On(c) => SandboxRepr::Config(c),
        }
    }
}

/// What a sandboxed server may do beyond running: `{"network": false, "read": [paths],
/// "write": [paths], "env": [names], "allowUnsandboxed": false, "onlyNamed": false, "limits": {…}}`.
/// Paths are absolute (or start
/// with `~/`); folders include everything under them (but credentials and the app's own folders,
/// unless named themselves: `mcp/sandbox/protect.rs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxConfig {
    /// May it open network connections (TCP, UDP, DNS)? Off: none at all, but to `hosts`.
    #[serde(default)]
    pub network: bool,
    /// With the network off, the hosts it may still reach (`example.com`, `*.example.com`,
    /// `example.com:443`, an address): enforced by the host (`mcp/sandbox/network.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Folders and files it may read (and run programs from).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// Folders and files it may read, write, create and delete in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<String>,
    /// Variables of the app's environment it gets besides the few every sandboxed server gets
    /// (`PATH`, `HOME`, `LANG`, `LC_*`, `TZ`): e.g. `SSH_AUTH_SOCK`, `DISPLAY`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The user agreed to run it without a sandbox where the kernel cannot sandbox (no
    /// Landlock). Ignored where it can: there the sandbox always applies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unsandboxed: bool,
    /// Its processes, memory and open files (`mcp/sandbox/limits.rs`); the defaults when left
    /// out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsConfig>,
    /// Only what is named here (and what it needs to run: the system's folders, its program's),
    /// never the folder around a path in its arguments. Servers from the catalog: their
    /// arguments are a publisher's (`~/.mozilla/firefox/profiles.ini` would grant
    /// `~/.mozilla/firefox`), so every grant they get is listed in the install's preview.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only_named: bool,
}

/// A sandboxed server's resource limits as its config sets them (`mcp/sandbox/limits.rs`); any
/// left out takes its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitsConfig {
    /// Processes and threads it may have at once, beyond the user's others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Memory each of its processes may use (MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Files (and sockets, pipes) each of its processes may have open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
}

/// One entry of a server's `hosts`: a name (or `*.` and a domain, for every name under it), or
/// an address, with a port or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// Lowercase, without a trailing dot; for `*.example.org`, `example.org`.
    pub host: String,
    pub wildcard: bool,
    pub address: Option<std::net::IpAddr>,
    pub port: Option<u16>,
}

impl HostRule {
    /// `example.com`, `example.com:443`, `*.example.com`, `10.0.0.5`, `[::1]:8080`; why not
    /// otherwise.
    pub fn parse(text: &str) -> Result<HostRule, String> {
        let t = text.trim();
        let bad = || {
            Err(format!(
                "\"{t}\" is not a host: give a name (example.com, *.example.com) or an address, \
                 with a port or not (example.com:443)"
            ))
        };
        if t.is_empty() || t.len() > 260 {
            return bad();
        }
        let (host, port) = if let Some(rest) = t.strip_prefix('[') {
            let Some((addr, after)) = rest.split_once(']') else {
                return bad();
            };
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return bad(),
            };
            (addr, port)
        } else if t.matches(':').count() > 1 {
            // a bare IPv6 address
            (t, None)
        } else {
            match t.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (t, None),
            }
        };
        let port = match port {
            Some(p) => match p.parse::<u16>() {
                Ok(p) if p > 0 => Some(p),
                _ => return bad(),
            },
            None => None,
        };
        if let Ok(address) = host.parse::<std::net::IpAddr>() {
            // every address of this computer, or many hosts at once: not one host
            if address.is_unspecified() || address.is_multicast() {
                return bad();
            }
            return Ok(HostRule {
                host: address.to_string(),
                wildcard: false,
                address: Some(address),
                port,
            });
        }
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        let (wildcard, name) = match lower.strip_prefix("*.") {
            Some(n) => (true, n.to_string()),
            None => (false, lower),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if name.is_empty() || !name.split('.').all(label_ok) {
            return bad();
        }
        // `*.com` would be a whole top-level domain
        if wildcard && name.split('.').count() < 2 {
            return bad();
        }
        Ok(HostRule {
            host: name,
            wildcard,
            address: None,
            port,
        })
    }

    /// Whether `name` (lowercase, no trailing dot) is this rule's.
    pub fn names(&self, name: &str) -> bool {
        if self.address.is_some() {
            return false;
        }
        (!self.wildcard && name == self.host)
            || (self.wildcard
                && name
                    .strip_suffix(&self.host)
                    .is_some_and(|head| head.ends_with('.')))
    }

    pub fn port_ok(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }
}

impl LimitsConfig {
    /// Why a configured limit is not one (too small to start anything, or absurd).
    pub fn check(&self) -> Result<(), String> {
        let within = |v: Option<u64>, name: &str, lo: u64, hi: u64| match v {
            Some(v) if !(lo..=hi).contains(&v) => {
                Err(format!("{name} must be between {lo} and {hi}"))
            }
            _ => Ok(()),
        };
        within(self.processes, "limits.processes", 8, 1 << 20)?;
        within(self.memory_mb, "limits.memoryMb", 64, 1 << 24)?;
        within(self.open_files, "limits.openFiles", 64, 1 << 20)
    }
}

impl SandboxConfig {
    /// The sandbox a built-in runs in when its config names none, and on a fresh install: no
    /// network (but for those that reach it, [`crate::servers::reaches_network`]) and no folders
    /// but its own (`servers::own_folders`, added by the sandbox's policy).
    pub fn builtin_default(name: &str) -> SandboxConfig {
        SandboxConfig {
            network: crate::servers::reaches_network(name),
            ..Default::default()
        }
    }
}

impl SandboxSetting {
    /// Sandboxed with no network and no folders of its own.
    pub fn locked() -> Self {
        SandboxSetting::On(SandboxConfig::default())
    }
}

/// One field of a server that can hold a secret.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SecretField {
    Env(String),
    Header(String),
    /// `oauth.clientSecret`.
    OAuthClientSecret,
}

impl SecretField {
    /// Headers are always secret; an environment value only when the user says so.
    pub fn always_secret(&self) -> bool {
        matches!(
            self,
            SecretField::Header(_) | SecretField::OAuthClientSecret
        )
    }

    /// How a keyring item or an error names it.
    pub fn describe(&self) -> String {
        match self {
            SecretField::Env(n) => format!("environment variable {n}"),
            SecretField::Header(n) => format!("header {n}"),
            SecretField::OAuthClientSecret => "OAuth client secret".into(),
        }
    }
}

/// Why headers may not go to `url`: they are secrets (often credentials), so they go over https,
/// or over plain http only to this computer (127.0.0.0/8, ::1, `localhost`), where nobody on the
/// way can read them. `None` when they may (or there are none).
pub fn plain_http_headers_refusal(url: &str, has_headers: bool) -> Option<String> {
    let u = reqwest::Url::parse(url.trim()).ok()?;
    if !has_headers || u.scheme() != "http" {
        return None;
    }
    let local = match u.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    (!local).then(|| {
        format!(
            "Its headers are secrets and are sent only over https (or plain http to this computer): \
             {} is plain http to {}, where anyone on the way could read them. Use its https:// \
             address, or remove the headers.",
            u.as_str(),
            u.host_str().unwrap_or("another computer")
        )
    })
}

/// The configured HTTP headers (their values as they are used) as a header map (for the HTTP,
/// SSE and REST transports).
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<http::HeaderMap, String> {
    let mut map = http::HeaderMap::new();
    for (k, v) in headers {
        let (Ok(name), Ok(mut value)) = (
            http::HeaderName::from_bytes(k.as_bytes()),
            http::HeaderValue::from_str(v),
        ) else {
            return Err(format!("the header {k} is not valid"));
        };
        // secret: never in a Debug output (hyper's and reqwest's logs)
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

impl ServerConfig {
    pub fn new(command: impl Into<String>, args: &[&str]) -> Self {
        ServerConfig {
            transport: None,
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            log_level: None,
            disabled: false,
            trusted: None,
            sandbox: None,
            timeout: None,
            app_network: false,
            app_origins: Vec::new(),
            oauth: None,
            source: None,
        }
    }

    /// Which built-in server this is (`switchboard mcp-server calculator|files|research …`), if it is one.
    pub fn builtin(&self) -> Option<&str> {
        if self.command != SELF_COMMAND
            || self.args.first().map(String::as_str) != Some("mcp-server")
        {
            return None;
        }
        let name = self.args.get(1)?.as_str();
        crate::servers::names().contains(&name).then_some(name)
    }

    /// What makes it the same server (hashed): its transport and command line, its working
    /// folder, its environment's names and a hash of each value (a secret's by its reference),
    /// or its URL; and for a server installed from a bundle, the bundle's SHA-256 (what is in
    /// its folder, not only the folder's path). Standing approvals ("always allow", allowed in
    /// this chat), pinned tool definitions and tasks followed across starts hold for this
    /// identity only: another program, folder, environment or bundle under the same name is
    /// asked about again. (A server with neither a folder nor an environment hashes as before
    /// these were part of it, and one without a bundle as before bundles were.)
    pub fn identity(&self) -> String {
        use sha2::{Digest, Sha256};
        let hex = |bytes: &[u8]| -> String {
            Sha256::digest(bytes)
                .iter()
                .take(16)
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let what = match self.transport() {
            t if !t.is_remote() && self.cwd.is_none() && self.env.is_empty() => {
                serde_json::json!(["stdio", self.command, self.args])
            }
            t if !t.is_remote() => {
                let env: BTreeMap<&String, String> = self
                    .env
                    .iter()
                    .map(|(k, v)| {
                        let value = match v {
                            SecretValue::Plain(p) | SecretValue::New(p) => format!("plain:{p}"),
                            SecretValue::Stored(r) => format!("stored:{r}"),
                        };
                        (k, hex(value.as_bytes()))
                    })
                    .collect();
                serde_json::json!(["stdio", self.command, self.args, self.cwd, env])
            }
            t => serde_json::json!([format!("{t:?}"), self.url]),
        };
        let bundle = self
            .source
            .as_ref()
            .and_then(|s| s.bundle_sha256.as_deref());
        let what = match (what, bundle) {
            (serde_json::Value::Array(mut parts), Some(sha)) => {
                parts.push(serde_json::json!({ "bundleSha256": sha }));
                serde_json::Value::Array(parts)
            }
            (what, _) => what,
        };
        hex(what.to_string().as_bytes())
    }

    /// Whether its tools' annotations are believed: the built-in servers always; else the user's
    /// choice; else local programs yes, remote servers no.
    pub fn trusts_hints(&self) -> bool {
        self.builtin().is_some() || self.trusted.unwrap_or(!self.transport().is_remote())
    }

    /// A Streamable HTTP server.
    pub fn http(url: impl Into<String>) -> Self {
        ServerConfig {
            transport: Some("http".into()),
            url: Some(url.into()),
            ..ServerConfig::new("", &[])
        }
    }

    /// Its fields that may hold secrets: every environment variable and header.
    pub fn secret_fields(&self) -> impl Iterator<Item = (SecretField, &SecretValue)> {
        self.env
            .iter()
            .map(|(k, v)| (SecretField::Env(k.clone()), v))
            .chain(
                self.headers
                    .iter()
                    .map(|(k, v)| (SecretField::Header(k.clone()), v)),
            )
            .chain(
                self.oauth
                    .iter()
                    .filter_map(|o| o.client_secret.as_ref())
                    .map(|v| (SecretField::OAuthClientSecret, v)),
            )
    }

    pub fn secret_fields_mut(&mut self) -> impl Iterator<Item = (SecretField, &mut SecretValue)> {
        self.env
            .iter_mut()
            .map(|(k, v)| (SecretField::Env(k.clone()), v))
            .chain(
                self.headers
                    .iter_mut()
                    .map(|(k, v)| (SecretField::Header(k.clone()), v)),
            )
            .chain(
                self.oauth
                    .iter_mut()
                    .filter_map(|o| o.client_secret.as_mut())
                    .map(|v| (SecretField::OAuthClientSecret, v)),
            )
    }

    /// The value of a field, if it has one.
    pub fn secret_field(&self, f: &SecretField) -> Option<&SecretValue> {
        match f {
            SecretField::Env(n) => self.env.get(n),
            SecretField::Header(n) => self.headers.get(n),
            SecretField::OAuthClientSecret => {
                self.oauth.as_ref().and_then(|o| o.client_secret.as_ref())
            }
        }
    }

    /// As the window gets it: secret values replaced by where they are kept.
    pub fn redacted(&self) -> ServerConfig {
        let mut c = self.clone();
        for (f, v) in c.secret_fields_mut() {
            *v = v.redacted(f.always_secret());
        }
        c
    }

    /// Its transport: the one its `"type"` names ([`super::transport::TRANSPORTS`]); without one,
    /// Streamable HTTP for a URL and no command, else stdio.
    pub fn transport(&self) -> Transport {
        match self.transport.as_deref() {
            Some(name) => Transport::named(name).unwrap_or(Transport::Stdio),
            None if self.url.is_some() && self.command.is_empty() => Transport::Http,
            None => Transport::Stdio,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the MCP config {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("the MCP config {path} is not valid: {detail}. Fix or remove the file; nothing was overwritten.")]
    Invalid { path: String, detail: String },
}

impl McpConfig {
    /// What a fresh install starts with: the three built-in servers, sandboxed with no folders
    /// (`files` and `research` always get their own folder, see `sandbox::wanted`) and no
    /// network but for `research`, which reaches arXiv.
    pub fn default_builtin() -> Self {
        let mut servers = BTreeMap::new();
        for name in crate::servers::names() {
            let mut cfg = ServerConfig::new(SELF_COMMAND, &["mcp-server", name]);
            cfg.sandbox = Some(SandboxSetting::On(SandboxConfig::builtin_default(name)));
            servers.insert(name.to_string(), cfg);
        }
        McpConfig { servers }
    }

    /// As the window gets it: every secret value replaced by where it is kept.
    pub fn redacted(&self) -> McpConfig {
        McpConfig {
            servers: self
                .servers
                .iter()
                .map(|(k, v)| (k.clone(), v.redacted()))
                .collect(),
        }
    }

    /// The references to stored secrets it holds.
    pub fn secret_references(&self) -> std::collections::BTreeSet<String> {
        crate::secrets::references(
            self.servers
                .values()
                .flat_map(|s| s.secret_fields().map(|(_, v)| v)),
        )
    }

    pub fn parse(text: &str, path_for_errors: &str) -> Result<Self, ConfigError> {
        let cfg: McpConfig = serde_json::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path_for_errors.into(),
            detail: e.to_string(),
        })?;
        for (name, s) in &cfg.servers {
            if name.trim().is_empty() {
                return Err(ConfigError::Invalid {
                    path: path_for_errors.into(),
                    detail: "a server has an empty name".into(),
                });
            }
            if !s.transport().is_remote() && s.command.trim().is_empty() {
                return Err(ConfigError::Invalid {
                    path: path_for_errors.into(),
                    detail: format!("server \"{name}\" has no command"),
                });
            }
        }
        Ok(cfg)
    }

    /// Loads the config; a missing file is created with [`McpConfig::default_builtin`].
    /// A malformed file is an error and is left untouched.
    pub fn load_or_init(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, &shown),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let cfg = Self::default_builtin();
                cfg.save(path).map_err(|source| ConfigError::Io {
                    path: shown,
                    source,
                })?;
                Ok(cfg)
            }
            Err(source) => Err(ConfigError::Io {
                path: shown,
                source,
            }),
        }
    }

    /// Writes the servers under `mcpServers`, keeping the file's other keys; atomically (temp
    /// file + rename, so a crash never leaves half a config) and private (0600).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut keys = serde_json::Map::new();
        keys.insert(
            "mcpServers".into(),
            serde_json::to_value(&self.servers).expect("config serializes"),
        );
        crate::paths::write_json_merged(path, keys)
    }
}

#[cfg(test)]
mod tests;
