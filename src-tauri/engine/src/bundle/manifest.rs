//! An MCP Bundle's `manifest.json` (manifest_version 0.1 to 0.4): read, checked, and what this
//! computer needs to run it (`compatibility`). What decides what runs (`server`, its
//! `mcp_config`, `user_config`) is read strictly: an unknown key there is refused, never guessed.
//!
//! Server types: node, python, binary, uv; `entry_point` must be in the bundle and every
//! `${user_config.x}` declared. `compatibility`: platforms, and the runtime's version from `node
//! --version` / `python3 --version`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The manifest versions read (0.4 adds the `uv` server type).
pub const VERSIONS: [&str; 4] = ["0.1", "0.2", "0.3", "0.4"];

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Manifest {
    #[serde(default)]
    pub manifest_version: Option<String>,
    /// The name 0.1 used for `manifest_version`.
    #[serde(default)]
    pub dxt_version: Option<String>,
    pub name: String,
    #[serde(default)]
    pub display_name: Option<String>,
    pub version: String,
    pub description: String,
    pub author: Author,
    pub server: ServerSpec,
    #[serde(default)]
    pub compatibility: Option<Compatibility>,
    #[serde(default)]
    pub user_config: BTreeMap<String, UserConfigOption>,
    #[serde(default)]
    pub repository: Option<Value>,
    #[serde(default)]
    pub homepage: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Author {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    #[serde(rename = "type")]
    pub kind: ServerType,
    pub entry_point: String,
    #[serde(default)]
    pub mcp_config: Option<McpConfigSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerType {
    Node,
    Python,
    Binary,
    Uv,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfigSpec {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub platform_overrides: BTreeMap<String, PlatformOverride>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformOverride {
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Option<Vec<String>>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Compatibility {
    #[serde(default)]
    pub platforms: Option<Vec<String>>,
    #[serde(default)]
    pub runtimes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfigOption {
    #[serde(rename = "type")]
    pub kind: OptionType,
    pub title: String,
    pub description: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub multiple: bool,
    #[serde(default)]
    pub sensitive: bool,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptionType {
    String,
    Number,
    Boolean,
    Directory,
    File,
}

/// Reads and checks a manifest; the sentence says what is wrong.
pub fn parse(text: &[u8]) -> Result<Manifest, String> {
    let m: Manifest = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    let version = m
        .manifest_version
        .as_deref()
        .or(m.dxt_version.as_deref())
        .ok_or("it has no manifest_version")?;
    if !VERSIONS.contains(&version) {
        return Err(format!(
            "its manifest_version is \"{version}\"; Switchboard reads {}",
            VERSIONS.join(", ")
        ));
    }
    if m.server.kind == ServerType::Uv && version != "0.4" {
        return Err("a \"uv\" server needs manifest_version 0.4".into());
    }
    if m.server.mcp_config.is_none() && m.server.kind != ServerType::Uv {
        return Err("its server has no mcp_config".into());
    }
    for (what, v) in [
        ("name", &m.name),
        ("version", &m.version),
        ("author's name", &m.author.name),
    ] {
        if v.trim().is_empty() {
            return Err(format!("its {what} is empty"));
        }
    }
    if !crate::form::is_one_version(&m.version) {
        return Err(format!("its version \"{}\" is not a version", m.version));
    }
    relative_path(&m.server.entry_point)
        .map_err(|e| format!("its entry_point \"{}\" {e}", m.server.entry_point))?;
    if let Some(c) = &m.server.mcp_config {
        if c.command.trim().is_empty() {
            return Err("its mcp_config has no command".into());
        }
        check_variables(c, &m.user_config)?;
    }
    for (key, o) in &m.user_config {
        if o.sensitive && o.kind != OptionType::String {
            return Err(format!(
                "its setting \"{key}\" is sensitive but not a string"
            ));
        }
        if o.multiple && !matches!(o.kind, OptionType::Directory | OptionType::File) {
            return Err(format!(
                "its setting \"{key}\" takes several values but is no directory or file"
            ));
        }
    }
    Ok(m)
}

/// Every `${user_config.KEY}` names a declared setting.
fn check_variables(
    c: &McpConfigSpec,
    options: &BTreeMap<String, UserConfigOption>,
) -> Result<(), String> {
    let overrides = c.platform_overrides.values();
    let texts = std::iter::once(&c.command)
        .chain(&c.args)
        .chain(c.env.values())
        .chain(overrides.clone().flat_map(|o| o.command.iter()))
        .chain(overrides.clone().flat_map(|o| o.args.iter().flatten()))
        .chain(overrides.flat_map(|o| o.env.iter().flat_map(|e| e.values())));
    for t in texts {
        for var in variables(t) {
            if let Some(key) = var.strip_prefix("user_config.") {
                if !options.contains_key(key) {
                    return Err(format!(
                        "its mcp_config uses ${{{var}}}, a setting it does not declare"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The `${name}`s in a text.
pub fn variables(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) => {
                out.push(&after[..j]);
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
    out
}

/// A path inside the bundle: relative, no `..`, no backslash, no NUL.
pub fn relative_path(p: &str) -> Result<(), &'static str> {
    if p.is_empty() {
        return Err("is empty");
    }
    if p.starts_with('/') || p.contains('\\') || p.contains('\0') || p.contains(':') {
        return Err("is not a relative path inside the bundle");
    }
    if p.split('/').any(|c| c == "..") {
        return Err("leaves the bundle (..)");
    }
    Ok(())
}

/// This computer's platform as bundles name it.
pub fn this_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// Whether `have` (a version as a program prints it: `v20.1.0`, `Python 3.12.3`) meets
/// `wanted` (`>=16.0.0`, `>=3.8,<4.0`, `>=1 <2`, `^1.2 || ^2`). `None`: `wanted` cannot be read.
pub fn meets(have: &str, wanted: &str) -> Option<bool> {
    let have = have
        .split_whitespace()
        .find(|w| {
            w.trim_start_matches('v')
                .starts_with(|c: char| c.is_ascii_digit())
        })?
        .trim_start_matches('v');
    let mut parts = have.split(['-', '+']).next()?.split('.');
    let version = semver::Version::new(
        parts.next()?.parse().ok()?,
        parts.next().and_then(|p| p.parse().ok()).unwrap_or(0),
        parts.next().and_then(|p| p.parse().ok()).unwrap_or(0),
    );
    let mut any = false;
    for alt in wanted.split("||") {
        // npm writes comparators apart with spaces, Cargo and Python with commas
        let mut req = String::new();
        for (i, c) in alt.split([',', ' ']).filter(|c| !c.is_empty()).enumerate() {
            if i > 0 && !c.starts_with(['<', '>', '=', '^', '~']) {
                // "> = 1" style spacing: glue to the operator before it
                req.push_str(c);
                continue;
            }
            if i > 0 {
                req.push(',');
            }
            req.push_str(c);
        }
        let r = semver::VersionReq::parse(&req).ok()?;
        any |= r.matches(&version);
    }
    Some(any)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn manifest(v: Value) -> Result<Manifest, String> {
        parse(v.to_string().as_bytes())
    }

    fn base() -> Value {
        json!({
            "manifest_version": "0.3", "name": "hello", "version": "1.0.0",
            "description": "d", "author": {"name": "A"},
            "server": {"type": "node", "entry_point": "server/index.js",
              "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"],
                "env": {"KEY": "${user_config.key}"}}},
            "user_config": {"key": {"type": "string", "title": "Key", "description": "k", "sensitive": true}}
        })
    }

    #[test]
    fn a_valid_manifest_is_read() {
        let m = manifest(base()).unwrap();
        assert_eq!(m.server.kind, ServerType::Node);
        assert!(m.user_config["key"].sensitive);
        let mut old = base();
        old.as_object_mut().unwrap().remove("manifest_version");
        old["dxt_version"] = json!("0.1");
        old["id"] = json!("extra keys at the top are metadata, not refused");
        assert!(manifest(old).is_ok());
    }

    #[test]
    fn what_decides_what_runs_is_read_strictly() {
        let cases: Vec<(Value, &str)> = vec![
            (json!({"manifest_version": "0.9"}), "manifest_version"),
            (
                json!({"server": {"type": "deno", "entry_point": "a.js"}}),
                "deno",
            ),
            (
                json!({"server": {"type": "uv", "entry_point": "a.py"}}),
                "0.4",
            ),
            (
                json!({"server": {"type": "node", "entry_point": "../a.js", "mcp_config": {"command": "node"}}}),
                "..",
            ),
            (
                json!({"server": {"type": "node", "entry_point": "/a.js", "mcp_config": {"command": "node"}}}),
                "relative",
            ),
            (
                json!({"server": {"type": "node", "entry_point": "a.js"}}),
                "mcp_config",
            ),
            (
                json!({"server": {"type": "node", "entry_point": "a.js", "mcp_config": {"command": "node", "shell": true}}}),
                "shell",
            ),
            (
                json!({"server": {"type": "node", "entry_point": "a.js", "mcp_config": {"command": "node", "args": ["${user_config.nope}"]}}}),
                "nope",
            ),
            (json!({"version": "^1.0"}), "version"),
            (
                json!({"user_config": {
                    "key": {"type": "string", "title": "Key", "description": "k"},
                    "n": {"type": "number", "title": "N", "description": "n", "sensitive": true}}}),
                "sensitive",
            ),
        ];
        for (patch, says) in cases {
            let mut v = base();
            for (k, x) in patch.as_object().unwrap() {
                v[k] = x.clone();
            }
            let e = manifest(v.clone()).unwrap_err();
            assert!(e.contains(says), "{v}: {e}");
        }
    }

    #[test]
    fn runtime_requirements_are_compared_as_versions() {
        assert_eq!(meets("v20.20.2", ">=16.0.0"), Some(true));
        assert_eq!(meets("v14.1.0", ">=16.0.0"), Some(false));
        assert_eq!(meets("Python 3.12.3", ">=3.8,<4.0"), Some(true));
        assert_eq!(meets("Python 3.7.1", ">=3.8"), Some(false));
        assert_eq!(meets("v18.0.0", ">=16 <18"), Some(false));
        assert_eq!(meets("v17.2.0", ">=16 <18"), Some(true));
        assert_eq!(meets("v22.0.0", "^18 || ^22"), Some(true));
        assert_eq!(meets("v20.0.0", "nonsense!"), None);
    }

    #[test]
    fn variables_are_found() {
        assert_eq!(
            variables("--x=${user_config.a}/${HOME}${"),
            ["user_config.a", "HOME"]
        );
    }
}
