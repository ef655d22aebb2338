//! App settings. The window writes them with tauri-plugin-store (a flat JSON object in
//! `settings.json`); the engine and the CLI read the same file.

use std::collections::BTreeMap;
use std::path::Path;

use crate::chat::approval::Policy;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// Ollama base URL; `None` = `OLLAMA_HOST` or the default.
    pub llm_url: Option<String>,
    /// The model for new chats; `None` = the first one the server lists.
    pub model: Option<String>,
    /// Rounds of tool calls in one turn before the loop stops.
    pub max_iterations: usize,
    /// Longest wait for one tool call, in seconds.
    pub tool_timeout_secs: u64,
    /// Standing approval policies by exposed tool name (`server__tool`).
    pub tool_policies: BTreeMap<String, Policy>,
    /// Folders offered to MCP servers as roots, besides the files sandbox.
    pub roots: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            llm_url: None,
            model: None,
            max_iterations: 5,
            tool_timeout_secs: 60,
            tool_policies: BTreeMap::new(),
            roots: Vec::new(),
        }
    }
}

pub const MAX_ITERATIONS_RANGE: std::ops::RangeInclusive<u64> = 1..=100;
pub const TOOL_TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=3600;

impl Settings {
    /// Why these settings cannot be saved, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(u) = self
            .llm_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
        {
            let ok = (u.starts_with("http://") || u.starts_with("https://"))
                && reqwest::Url::parse(u).is_ok();
            if !ok {
                return Err(format!(
                    "\"{u}\" is not a valid URL: it must start with http:// or https://"
                ));
            }
        }
        if !MAX_ITERATIONS_RANGE.contains(&(self.max_iterations as u64)) {
            return Err("Max tool rounds must be between 1 and 100".into());
        }
        for r in &self.roots {
            if !Path::new(r).is_absolute() || !Path::new(r).is_dir() {
                return Err(format!(
                    "{r} is not an existing folder (give its absolute path)"
                ));
            }
        }
        if !TOOL_TIMEOUT_RANGE.contains(&self.tool_timeout_secs) {
            return Err("The tool timeout must be between 1 and 3600 seconds".into());
        }
        Ok(())
    }

    /// The LLM base URL in effect: this setting, else `OLLAMA_HOST`, else the default.
    pub fn llm_url(&self) -> String {
        crate::llm::ollama::resolve_base_url(
            self.llm_url.as_deref(),
            std::env::var("OLLAMA_HOST").ok().as_deref(),
        )
    }

    /// Reads the settings; a missing or unreadable file gives the defaults (with a warning), and
    /// a bad value falls back to its default without losing the others.
    pub fn load(path: &Path) -> Settings {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(_) => return Settings::default(),
        };
        let v: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(
                    "settings file {} is not valid JSON ({e}); using defaults",
                    path.display()
                );
                return Settings::default();
            }
        };
        let mut s = Settings::default();
        let str_opt = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_str())
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(String::from)
        };
        s.llm_url = str_opt("llmUrl");
        s.model = str_opt("model");
        if let Some(n) = v
            .get("maxIterations")
            .and_then(|x| x.as_u64())
            .filter(|n| MAX_ITERATIONS_RANGE.contains(n))
        {
            s.max_iterations = n as usize;
        }
        if let Some(n) = v
            .get("toolTimeoutSecs")
            .and_then(|x| x.as_u64())
            .filter(|n| TOOL_TIMEOUT_RANGE.contains(n))
        {
            s.tool_timeout_secs = n;
        }
        if let Some(r) = v.get("roots").and_then(|x| x.as_array()) {
            s.roots = r
                .iter()
                .filter_map(|x| x.as_str())
                .map(String::from)
                .collect();
        }
        if let Some(p) = v.get("toolPolicies").and_then(|x| x.as_object()) {
            s.tool_policies = p
                .iter()
                .filter_map(|(k, v)| {
                    Some((k.clone(), serde_json::from_value::<Policy>(v.clone()).ok()?))
                })
                .collect();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_fall_back_one_by_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("settings.json");
        assert_eq!(Settings::load(&p), Settings::default());
        std::fs::write(
            &p,
            r#"{"llmUrl":"http://h:1","model":"m","maxIterations":0,"toolTimeoutSecs":"x",
                "toolPolicies":{"a__b":"allow","c__d":"bogus","e__f":"deny"}}"#,
        )
        .unwrap();
        let s = Settings::load(&p);
        assert_eq!(s.llm_url.as_deref(), Some("http://h:1"));
        assert_eq!(s.model.as_deref(), Some("m"));
        assert_eq!(s.max_iterations, 5);
        assert_eq!(s.tool_timeout_secs, 60);
        assert_eq!(s.tool_policies.len(), 2);
        assert_eq!(s.tool_policies["e__f"], Policy::Deny);
        assert!(Settings {
            max_iterations: 0,
            ..Settings::default()
        }
        .validate()
        .is_err());
        assert!(Settings {
            llm_url: Some("localhost:11434".into()),
            ..Settings::default()
        }
        .validate()
        .is_err());
        assert!(Settings {
            llm_url: Some("http://localhost:11434".into()),
            ..Settings::default()
        }
        .validate()
        .is_ok());
        std::fs::write(&p, "garbage").unwrap();
        assert_eq!(Settings::load(&p), Settings::default());
    }
}
