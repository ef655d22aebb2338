//! App settings: a flat JSON object in `settings.json`, read by the window and the CLI alike.
//! [`LiveSettings`] is the one copy a running app holds: read by whoever needs a setting,
//! changed in one place only, by a [`SettingsPatch`] naming what changes (validated against the
//! settings as they are at that moment, then written to the file).
//!
//! `settings/patch.rs`: fields left out stay, `null` clears, maps change per key.
//! `settings/table.rs`: the bounded settings (numbers with a range), one row each over the bounds
//! of `crate::limits`: `check` refuses and `load` repairs by going through it, and the window
//! gets it (`schema`) for its inputs' bounds and its one check; and the settings of a few values
//! (`CHOICES`, from their enums), whose selects in the window must offer exactly those.
//! `settings/policy.rs`: the standing tool policies by `ToolKey`, which `chat::approve` reads; old
//! entries are moved by `LiveSettings::migrate_old_policies` at start, in a call's decision, and
//! when the window lists them (`Runtime::policy_views`, `runtime/policies.rs`).
//!
//! To add a setting: a field here (with its default in `Default`); if it is a number with a
//! range, its bound in `limits.rs` and its row in `table::ROWS` (its default, check, repair and
//! the window's bounds and message come from there), if it is an enum its row in
//! `table::CHOICES`, else its check in `check`/`load`; the same
//! field in `SettingsPatch` and its line in `apply_to`; what must hear of it in
//! `Runtime::change_settings`; its input in the window (`data-setting="<key>"` for a bounded one).

mod patch;
mod policy;
mod table;

pub use crate::store::ContextPolicy;
pub use patch::SettingsPatch;
pub use policy::{migration, Candidate, Migration, Policy, PolicyEntry};
pub use table::{schema, Choice, Row, CHOICES, ROWS};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::limits;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// Ollama base URL; `None` = `OLLAMA_HOST` or the default.
    pub llm_url: Option<String>,
    /// The model for new chats; `None` = the first one the server lists.
    pub model: Option<String>,
    /// Rounds of tool calls in one turn before the loop stops.
    pub max_iterations: usize,
    /// When more tools than this are on, the model is offered only this many: the most relevant
    /// to the conversation's recent text, and those it already used.
    pub max_offered_tools: usize,
    /// Longest wait for one tool call, in seconds.
    pub tool_timeout_secs: u64,
    /// Standing approval policies, by the tool's key (`mcp::ToolKey`): server identity, then
    /// the tool's own name (`settings::policy`).
    pub standing_policies: BTreeMap<String, BTreeMap<String, Policy>>,
    /// Standing policies as older versions kept them, by the name the model was offered
    /// (`server__tool`): read, and moved to `standing_policies` when that is safe
    /// (`settings::policy`); until then applied to nothing.
    pub tool_policies: BTreeMap<String, PolicyEntry>,
    /// Folders offered to MCP servers as roots, besides the files sandbox.
    pub roots: Vec<String>,
    /// The system prompt for conversations that have none of their own; `None` = the built-in one.
    pub system_prompt: Option<String>,
    /// Sampling temperature for conversations without their own; `None` = the model's default.
    pub temperature: Option<f64>,
    /// Context length (Ollama `num_ctx`) for conversations without their own.
    pub num_ctx: Option<u32>,
    /// Context length by model name, for conversations without their own (over `num_ctx`):
    /// what the app plans each request for, and what Ollama is sent.
    pub model_contexts: BTreeMap<String, u32>,
    /// What a request does when a conversation outgrows the model's context, for conversations
    /// without their own policy (`chat::context`).
    pub context_policy: ContextPolicy,
    /// The model that writes summaries of older turns (of the conversation's provider); `None`:
    /// the conversation's own model.
    pub summary_model: Option<String>,
    /// Ask models that can think to think (and show it); off: never send `think`.
    pub thinking: bool,
    /// How each model gets its tools, by model name: `native` (function calling), `text` (described
    /// in the system prompt, calls read from the reply as JSON); a model not listed: by its
    /// capabilities.
    pub tool_modes: BTreeMap<String, ToolMode>,
    /// LLM servers besides the Ollama at `llm_url` (which is always there, as `ollama`).
    pub providers: Vec<ProviderConfig>,
    /// Hosts whose links (in replies and tool results) open without asking first: the user
    /// ticked "always" when opening one. Lower case, no port.
    pub trusted_link_hosts: BTreeSet<String>,
    /// The MCP Registry the catalog searches (API v0.1); `None` = the official one
    /// (`registry::OFFICIAL_REGISTRY`). A company's sub-registry works the same way.
    pub catalog_registry: Option<String>,
    /// The longest side, in pixels, of an image as kept and sent to a model (attached ones and
    /// tools'): bigger ones are downscaled.
    pub image_max_side: u32,
    /// Skills switched off by default, by `origin/name` (`local/<name>` for the user's own, else
    /// `<server>/<name>`): not offered to the model in chats that do not turn them on for
    /// themselves (`ConversationSettings::skills`). A skill not named here is on.
    pub skills_off: BTreeSet<String>,
}

/// An LLM server the app can talk to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    /// Unique; conversations remember it.
    pub id: String,
    pub name: String,
    pub kind: ProviderKind,
    pub url: String,
    /// Sent as a bearer token (OpenAI-compatible servers that want one). Kept in the secret
    /// store (`{"secret": "keyring:<id>"}`); a plain value typed into the file works, and is
    /// moved there on the next save.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<crate::secrets::SecretValue>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Ollama,
    /// OpenAI-compatible: llama.cpp's llama-server, LM Studio, vLLM, …
    Openai,
}

/// The id of the provider that is always there: Ollama at `llmUrl`.
pub const DEFAULT_PROVIDER: &str = "ollama";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    Native,
    Text,
    /// Text, with the reply constrained to JSON (a call, or an answer) by the server's
    /// schema-constrained decoding. Not offered in the window: on the model measured it did not
    /// help (README, `make eval-tools`, which still measures it); a settings file that names it
    /// is still honoured.
    Json,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            llm_url: None,
            model: None,
            max_iterations: limits::MAX_ITERATIONS.default_value() as usize,
            max_offered_tools: limits::MAX_OFFERED_TOOLS.default_value() as usize,
            tool_timeout_secs: limits::TOOL_TIMEOUT.default_value() as u64,
            standing_policies: BTreeMap::new(),
            tool_policies: BTreeMap::new(),
            roots: Vec::new(),
            system_prompt: None,
            temperature: None,
            num_ctx: None,
            model_contexts: BTreeMap::new(),
            context_policy: ContextPolicy::default(),
            summary_model: None,
            thinking: true,
            tool_modes: BTreeMap::new(),
            providers: Vec::new(),
            trusted_link_hosts: BTreeSet::new(),
            catalog_registry: None,
            image_max_side: limits::IMAGE_MAX_SIDE.default_value() as u32,
            skills_off: BTreeSet::new(),
        }
    }
}

impl Settings {
    /// The standing policy of a tool, by its key.
    pub fn policy(&self, key: &crate::mcp::ToolKey) -> Option<Policy> {
        self.standing_policies
            .get(&key.server)?
            .get(&key.tool)
            .copied()
    }

    /// Why these settings cannot be saved, if they cannot.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.check().map_err(SettingsError::Invalid)
    }

    fn check(&self) -> Result<(), String> {
        for u in [&self.llm_url, &self.catalog_registry]
            .into_iter()
            .filter_map(|u| u.as_deref().map(str::trim))
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
        for row in ROWS {
            row.check(self)?;
        }
        if let Some(h) = self.trusted_link_hosts.iter().find(|h| !is_host(h)) {
            return Err(format!("\"{h}\" is not a host name"));
        }
        for r in &self.roots {
            if !Path::new(r).is_absolute() || !Path::new(r).is_dir() {
                return Err(format!(
                    "{r} is not an existing folder (give its absolute path)"
                ));
            }
        }
        let mut ids = std::collections::HashSet::from([DEFAULT_PROVIDER.to_string()]);
        for p in &self.providers {
            if p.id.trim().is_empty() || !ids.insert(p.id.clone()) {
                return Err(format!("Provider id \"{}\" is empty or used twice", p.id));
            }
            if p.name.trim().is_empty() {
                return Err("Every provider needs a name".into());
            }
            let u = p.url.trim();
            if !(u.starts_with("http://") || u.starts_with("https://"))
                || reqwest::Url::parse(u).is_err()
            {
                return Err(format!(
                    "The URL of {} must start with http:// or https://",
                    p.name
                ));
            }
        }
        Ok(())
    }

    /// As the window gets them: API keys replaced by where they are kept.
    pub fn redacted(&self) -> Settings {
        let mut s = self.clone();
        for p in &mut s.providers {
            p.api_key = p.api_key.as_ref().map(|k| k.redacted(true));
        }
        s
    }

    /// The references to stored secrets they hold.
    pub fn secret_references(&self) -> std::collections::BTreeSet<String> {
        crate::secrets::references(self.providers.iter().filter_map(|p| p.api_key.as_ref()))
    }

    /// Every provider: the default Ollama first, then the configured ones.
    pub fn all_providers(&self) -> Vec<ProviderConfig> {
        let mut all = vec![ProviderConfig {
            id: DEFAULT_PROVIDER.into(),
            name: "Ollama".into(),
            kind: ProviderKind::Ollama,
            url: self.llm_url(),
            api_key: None,
        }];
        all.extend(self.providers.iter().cloned());
        all
    }

    /// The provider with this id; the default one for `None` or an id that is gone.
    pub fn provider(&self, id: Option<&str>) -> ProviderConfig {
        let all = self.all_providers();
        id.and_then(|id| all.iter().find(|p| p.id == id).cloned())
            .unwrap_or_else(|| all[0].clone())
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
        let Some(obj) = v.as_object() else {
            return Settings::default();
        };
        // each key on its own: a bad value falls back to its default without losing the others
        let mut merged = serde_json::to_value(Settings::default()).expect("settings serialize");
        for (k, val) in obj {
            // and each policy on its own
            let val = match k.as_str() {
                "toolPolicies" => only_valid::<PolicyEntry>(val),
                "standingPolicies" => serde_json::Value::Object(
                    val.as_object()
                        .into_iter()
                        .flatten()
                        .map(|(server, tools)| (server.clone(), only_valid::<Policy>(tools)))
                        .collect(),
                ),
                _ => val.clone(),
            };
            let mut trial = merged.clone();
            trial[k] = val;
            if serde_json::from_value::<Settings>(trial.clone()).is_ok() {
                merged = trial;
            } else {
                tracing::warn!(
                    "setting {k} in {} is not valid; using its default",
                    path.display()
                );
            }
        }
        let mut s: Settings = serde_json::from_value(merged).unwrap_or_default();
        let trimmed = |x: Option<String>| x.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        s.llm_url = trimmed(s.llm_url);
        s.model = trimmed(s.model);
        for row in ROWS {
            row.repair(&mut s);
        }
        s.summary_model = trimmed(s.summary_model);
        s.trusted_link_hosts.retain(|h| is_host(h));
        s
    }
}

/// A host as a URL's host names it, in lower case (a name, IPv4, or IPv6 in brackets).
fn is_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '[' | ']' | ':')
        })
}

/// Why settings could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{0}")]
    Invalid(String),
    #[error("could not save {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    /// An API key could not be stored or kept.
    #[error("{0}")]
    Secret(crate::secrets::SecretError),
}

impl From<crate::store::InvalidSetting> for SettingsError {
    fn from(e: crate::store::InvalidSetting) -> Self {
        SettingsError::Invalid(e.message)
    }
}

/// The entries of a JSON object that read as a `T`; anything else: an empty object.
fn only_valid<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> serde_json::Value {
    serde_json::Value::Object(
        v.as_object()
            .into_iter()
            .flatten()
            .filter(|(_, x)| serde_json::from_value::<T>((*x).clone()).is_ok())
            .map(|(n, x)| (n.clone(), x.clone()))
            .collect(),
    )
}

/// The settings of a running app: one copy, read by everyone, changed only through
/// [`LiveSettings::apply`]: a patch applied to the settings as they are (under the one lock),
/// validated, then written to its file (other keys in it kept). Two changes at once both stay.
pub struct LiveSettings {
    current: std::sync::RwLock<Settings>,
    file: Option<std::path::PathBuf>,
}

impl LiveSettings {
    /// The settings in `file` (defaults where it has none); changes are written back to it.
    pub fn load(file: &Path) -> std::sync::Arc<LiveSettings> {
        std::sync::Arc::new(LiveSettings {
            current: std::sync::RwLock::new(Settings::load(file)),
            file: Some(file.to_path_buf()),
        })
    }

    /// Settings kept in memory only (tests, one-off runs).
    pub fn in_memory(settings: Settings) -> std::sync::Arc<LiveSettings> {
        std::sync::Arc::new(LiveSettings {
            current: std::sync::RwLock::new(settings),
            file: None,
        })
    }

    pub fn get(&self) -> Settings {
        self.current.read().unwrap().clone()
    }

    pub fn read<R>(&self, f: impl FnOnce(&Settings) -> R) -> R {
        f(&self.current.read().unwrap())
    }

    /// Applies `patch` to the current settings; refused (nothing changes) when the result is not
    /// valid or cannot be written. Returns the new settings. The one way settings change.
    pub fn apply(&self, patch: &SettingsPatch) -> Result<Settings, SettingsError> {
        self.update(|s| patch.apply_to(s))
    }

    /// Moves the entries older versions kept by the name the model was offered (`toolPolicies`)
    /// to their tools' keys, where that is safe (`policy::migration`): those named `names`, or
    /// all for `None`. `candidates(name)`: every tool whose offered name was `name` now. Written
    /// only when something moves (or is marked inert), under the one lock like any change.
    pub fn migrate_old_policies(
        &self,
        names: Option<&[String]>,
        candidates: impl Fn(&str) -> Vec<Candidate>,
    ) -> Result<(), SettingsError> {
        let outcomes = |s: &Settings| -> Vec<(String, PolicyEntry, Migration)> {
            s.tool_policies
                .iter()
                .filter(|(name, e)| !e.is_inert() && names.is_none_or(|n| n.contains(name)))
                .map(|(name, e)| (name.clone(), e.clone(), migration(e, &candidates(name))))
                .filter(|(_, _, m)| *m != Migration::Wait)
                .collect()
        };
        if self.read(|s| outcomes(s).is_empty()) {
            return Ok(());
        }
        self.update(|s| {
            for (name, entry, outcome) in outcomes(s) {
                match outcome {
                    Migration::To(keys) => {
                        s.tool_policies.remove(&name);
                        for key in keys {
                            // a policy already kept for the tool is the newer word
                            s.standing_policies
                                .entry(key.server)
                                .or_default()
                                .entry(key.tool)
                                .or_insert(entry.policy());
                        }
                    }
                    Migration::Inert => {
                        s.tool_policies.insert(name, entry.inert());
                    }
                    Migration::Wait => {}
                }
            }
        })
        .map(|_| ())
    }

    fn update(&self, change: impl FnOnce(&mut Settings)) -> Result<Settings, SettingsError> {
        let mut current = self.current.write().unwrap();
        let mut next = current.clone();
        change(&mut next);
        next.validate()?;
        if let Some(file) = &self.file {
            let keys = match serde_json::to_value(&next) {
                Ok(serde_json::Value::Object(m)) => m,
                _ => unreachable!("settings are an object"),
            };
            crate::paths::write_json_merged(file, keys).map_err(|source| SettingsError::Write {
                path: file.display().to_string(),
                source,
            })?;
        }
        *current = next.clone();
        Ok(next)
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
        assert_eq!(s.tool_policies["e__f"], PolicyEntry::Plain(Policy::Deny));
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
        for (url, ok) in [
            ("https://registry.example.com", true),
            ("registry.example.com", false),
        ] {
            let s = Settings {
                catalog_registry: Some(url.into()),
                ..Settings::default()
            };
            assert_eq!(s.validate().is_ok(), ok, "{url}");
        }
        assert!(Settings {
            trusted_link_hosts: ["docs.rs".into(), "[::1]".into()].into(),
            ..Settings::default()
        }
        .validate()
        .is_ok());
        for bad in ["Docs.rs", "a b", "x/y", ""] {
            assert!(
                Settings {
                    trusted_link_hosts: [bad.to_string()].into(),
                    ..Settings::default()
                }
                .validate()
                .is_err(),
                "{bad}"
            );
        }
        std::fs::write(
            &p,
            r#"{"trustedLinkHosts": ["docs.rs", "evil.example/path"]}"#,
        )
        .unwrap();
        assert_eq!(
            Settings::load(&p).trusted_link_hosts,
            ["docs.rs".to_string()].into(),
            "a bad host is dropped, the good ones stay"
        );
        std::fs::write(&p, "garbage").unwrap();
        assert_eq!(Settings::load(&p), Settings::default());
        std::fs::write(
            &p,
            r#"{"temperature": 7, "numCtx": 8192, "thinking": "yes", "systemPrompt": "Be brief.",
                "toolModes": {"gemma3:270m": "text"}, "somethingNew": 1,
                "modelContexts": {"gemma3:270m": 2048, "tiny": 12}, "contextPolicy": "nonsense"}"#,
        )
        .unwrap();
        let s = Settings::load(&p);
        assert_eq!(
            s.model_contexts.len(),
            1,
            "a context out of range is dropped"
        );
        assert_eq!(s.model_contexts["gemma3:270m"], 2048);
        assert_eq!(
            s.context_policy,
            ContextPolicy::Summarise,
            "a bad policy: the default"
        );
        assert_eq!(s.temperature, None, "out of range");
        assert_eq!(s.num_ctx, Some(8192));
        assert!(s.thinking, "a bad value keeps the default");
        assert_eq!(s.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(s.tool_modes["gemma3:270m"], ToolMode::Text);
        // providers: the default Ollama is always first; ids are unique; URLs are URLs
        let llama = ProviderConfig {
            id: "llamacpp".into(),
            name: "llama.cpp".into(),
            kind: ProviderKind::Openai,
            url: "http://127.0.0.1:8080".into(),
            api_key: None,
        };
        let with = |p: Vec<ProviderConfig>| Settings {
            providers: p,
            ..Settings::default()
        };
        let s = with(vec![llama.clone()]);
        assert!(s.validate().is_ok());
        assert_eq!(s.all_providers()[0].id, DEFAULT_PROVIDER);
        assert_eq!(s.provider(Some("llamacpp")), llama);
        assert_eq!(s.provider(Some("gone")).id, DEFAULT_PROVIDER);
        assert_eq!(s.provider(None).kind, ProviderKind::Ollama);
        assert!(with(vec![llama.clone(), llama.clone()]).validate().is_err());
        let mut bad = llama.clone();
        bad.id = DEFAULT_PROVIDER.into();
        assert!(with(vec![bad]).validate().is_err());
        let mut bad = llama;
        bad.url = "localhost:8080".into();
        assert!(with(vec![bad]).validate().is_err());
    }
}
