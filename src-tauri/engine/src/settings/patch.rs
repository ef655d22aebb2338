//! [`SettingsPatch`]: a change to the settings that names only what changes. Every writer (the
//! window's dialog, a model pick, a model's tool mode, a trusted link host, "Always allow" on a
//! card, dropping the approvals of a removed server) sends one; `LiveSettings::apply` applies it
//! to the settings as they are at that moment, so a writer never puts back what another one
//! changed meanwhile.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::{ContextPolicy, Policy, PolicyEntry, ProviderConfig, Settings, ToolMode};
use crate::mcp::ToolKey;

/// What changes. A field left out stays as it is; for an optional setting, `null` clears it.
/// Maps change per key: `{"toolModes": {"gemma3": "text", "qwen3": null}}` sets one model's mode
/// and clears another's, and leaves every other model's as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsPatch {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub llm_url: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_offered_tools: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub system_prompt: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub temperature: Option<Option<f64>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub num_ctx: Option<Option<u32>>,
    /// Per model: its context length, or `null` for "as the chat or the app says".
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_contexts: BTreeMap<String, Option<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_policy: Option<ContextPolicy>,
    /// The model that writes summaries; `null` (or empty): the conversation's own.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub summary_model: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<bool>,
    /// The whole list (only the settings dialog edits it). API keys as in `Settings`: a
    /// `{"secret": …}` marker keeps the provider's key, `{"newSecret": …}` stores a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Vec<ProviderConfig>>,
    /// Per model: its tool mode, or `null` for "by its capabilities".
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_modes: BTreeMap<String, Option<ToolMode>>,
    /// Per server identity, per tool (its own name): its standing policy, or `null` to forget it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub standing_policies: BTreeMap<String, BTreeMap<String, Option<Policy>>>,
    /// Per name an older version kept a policy under (`server__tool`): the entry, or `null` to
    /// forget it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_policies: BTreeMap<String, Option<PolicyEntry>>,
    /// Per host: `true` to open its links without asking, `false` to ask again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trusted_link_hosts: BTreeMap<String, bool>,
    /// The MCP Registry the catalog searches; `null` (or empty): the official one.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub catalog_registry: Option<Option<String>>,
    /// The longest side of an image as kept and sent (checked by `Settings::validate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_max_side: Option<u32>,
    /// Per skill (`origin/name`): `true` to switch it off by default, `false` on again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills_off: BTreeMap<String, bool>,
}

/// A field that is present, even as `null` (`Some(None)`); one left out is `None` (by `default`).
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A text setting as stored: trimmed, and empty means none.
fn text(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

impl SettingsPatch {
    /// Changes `s` as this patch says, and nothing else.
    pub fn apply_to(&self, s: &mut Settings) {
        if let Some(v) = &self.llm_url {
            s.llm_url = text(v);
        }
        if let Some(v) = &self.model {
            s.model = text(v);
        }
        if let Some(v) = self.max_iterations {
            s.max_iterations = v;
        }
        if let Some(v) = self.max_offered_tools {
            s.max_offered_tools = v;
        }
        if let Some(v) = self.tool_timeout_secs {
            s.tool_timeout_secs = v;
        }
        if let Some(v) = &self.roots {
            s.roots = v.clone();
        }
        if let Some(v) = &self.system_prompt {
            s.system_prompt = text(v);
        }
        if let Some(v) = self.temperature {
            s.temperature = v;
        }
        if let Some(v) = self.num_ctx {
            s.num_ctx = v;
        }
        if let Some(v) = self.thinking {
            s.thinking = v;
        }
        for (model, n) in &self.model_contexts {
            match n {
                Some(n) => s.model_contexts.insert(model.clone(), *n),
                None => s.model_contexts.remove(model),
            };
        }
        if let Some(v) = self.context_policy {
            s.context_policy = v;
        }
        if let Some(v) = &self.summary_model {
            s.summary_model = text(v);
        }
        if let Some(v) = self.image_max_side {
            s.image_max_side = v;
        }
        if let Some(v) = &self.providers {
            s.providers = v.clone();
        }
        for (model, mode) in &self.tool_modes {
            match mode {
                Some(m) => s.tool_modes.insert(model.clone(), *m),
                None => s.tool_modes.remove(model),
            };
        }
        for (server, tools) in &self.standing_policies {
            let mut kept = s.standing_policies.remove(server).unwrap_or_default();
            for (tool, policy) in tools {
                match policy {
                    Some(p) => kept.insert(tool.clone(), *p),
                    None => kept.remove(tool),
                };
            }
            if !kept.is_empty() {
                s.standing_policies.insert(server.clone(), kept);
            }
        }
        for (tool, policy) in &self.tool_policies {
            match policy {
                Some(p) => s.tool_policies.insert(tool.clone(), p.clone()),
                None => s.tool_policies.remove(tool),
            };
        }
        if let Some(v) = &self.catalog_registry {
            s.catalog_registry = text(v);
        }
        for (skill, off) in &self.skills_off {
            if *off {
                s.skills_off.insert(skill.clone());
            } else {
                s.skills_off.remove(skill);
            }
        }
        for (host, trusted) in &self.trusted_link_hosts {
            let host = host.trim().to_ascii_lowercase();
            if *trusted {
                s.trusted_link_hosts.insert(host);
            } else {
                s.trusted_link_hosts.remove(&host);
            }
        }
    }

    /// One tool's standing policy set (or forgotten, with `None`).
    pub fn policy(key: &ToolKey, policy: Option<Policy>) -> SettingsPatch {
        SettingsPatch {
            standing_policies: BTreeMap::from([(
                key.server.clone(),
                BTreeMap::from([(key.tool.clone(), policy)]),
            )]),
            ..SettingsPatch::default()
        }
    }

    /// An entry an older version kept under `tool` (the name the model was offered) set (or
    /// forgotten, with `None`).
    pub fn tool_policy(tool: impl Into<String>, policy: Option<PolicyEntry>) -> SettingsPatch {
        SettingsPatch {
            tool_policies: BTreeMap::from([(tool.into(), policy)]),
            ..SettingsPatch::default()
        }
    }

    /// Whether it changes the LLM providers (and so, perhaps, which secrets are referenced).
    pub fn changes_providers(&self) -> bool {
        self.providers.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Policy;
    use super::*;
    use serde_json::json;

    fn patch(v: serde_json::Value) -> SettingsPatch {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_what_it_names_changes() {
        let mut s = Settings {
            model: Some("qwen3".into()),
            system_prompt: Some("Be brief.".into()),
            temperature: Some(0.3),
            ..Settings::default()
        };
        s.tool_modes.insert("gemma3".into(), ToolMode::Text);
        s.tool_modes.insert("phi4".into(), ToolMode::Native);
        s.tool_policies
            .insert("calculator__add".into(), PolicyEntry::Plain(Policy::Allow));
        s.trusted_link_hosts.insert("docs.rs".into());
        let before = s.clone();

        patch(json!({"model": "llama3.2"})).apply_to(&mut s);
        assert_eq!(s.model.as_deref(), Some("llama3.2"));
        assert_eq!(
            Settings {
                model: before.model.clone(),
                ..s.clone()
            },
            before,
            "nothing else changed"
        );

        // null clears an optional setting; a field left out stays
        patch(json!({"systemPrompt": null})).apply_to(&mut s);
        assert_eq!(s.system_prompt, None);
        assert_eq!(s.temperature, Some(0.3));
        patch(json!({"temperature": null, "numCtx": 8192})).apply_to(&mut s);
        assert_eq!((s.temperature, s.num_ctx), (None, Some(8192)));
        patch(json!({"imageMaxSide": 768})).apply_to(&mut s);
        assert_eq!((s.image_max_side, s.num_ctx), (768, Some(8192)));

        // maps change per key
        patch(json!({"toolModes": {"gemma3": null, "qwen3": "native"}})).apply_to(&mut s);
        assert_eq!(
            s.tool_modes,
            BTreeMap::from([
                ("phi4".to_string(), ToolMode::Native),
                ("qwen3".to_string(), ToolMode::Native)
            ])
        );
        patch(json!({"modelContexts": {"gemma3:270m": 2048, "qwen3": 8192}})).apply_to(&mut s);
        patch(
            json!({"modelContexts": {"qwen3": null}, "contextPolicy": "dropOldest",
            "summaryModel": " qwen3:0.6b "}),
        )
        .apply_to(&mut s);
        assert_eq!(
            s.model_contexts,
            BTreeMap::from([("gemma3:270m".to_string(), 2048)])
        );
        assert_eq!(s.context_policy, ContextPolicy::DropOldest);
        assert_eq!(s.summary_model.as_deref(), Some("qwen3:0.6b"));
        patch(json!({"summaryModel": null})).apply_to(&mut s);
        assert_eq!(
            (s.summary_model.as_deref(), s.context_policy),
            (None, ContextPolicy::DropOldest)
        );
        patch(json!({"trustedLinkHosts": {"Example.org": true, "docs.rs": false}}))
            .apply_to(&mut s);
        assert_eq!(
            s.trusted_link_hosts.iter().collect::<Vec<_>>(),
            ["example.org"]
        );
        SettingsPatch::tool_policy(
            "files__write",
            Some(PolicyEntry::bound(Policy::Allow, "builtin:files")),
        )
        .apply_to(&mut s);
        assert_eq!(s.tool_policies.len(), 2, "the other policy stays");
        SettingsPatch::tool_policy("calculator__add", None).apply_to(&mut s);
        assert_eq!(s.tool_policies.keys().collect::<Vec<_>>(), ["files__write"]);
        // standing policies change per server identity and tool
        let read = ToolKey::new("id1", "read.file");
        SettingsPatch::policy(&read, Some(Policy::Deny)).apply_to(&mut s);
        patch(json!({"standingPolicies": {"id1": {"write": "allow"}, "id2": {"x": "ask"}}}))
            .apply_to(&mut s);
        assert_eq!(s.policy(&read), Some(Policy::Deny), "the other tool stays");
        assert_eq!(s.policy(&ToolKey::new("id1", "write")), Some(Policy::Allow));
        assert_eq!(s.policy(&ToolKey::new("id2", "read.file")), None);
        patch(json!({"standingPolicies": {"id1": {"read.file": null, "write": null}}}))
            .apply_to(&mut s);
        assert_eq!(
            s.standing_policies.keys().collect::<Vec<_>>(),
            ["id2"],
            "a server with no policy left is gone"
        );
        // texts are kept trimmed, and empty is none
        patch(json!({"model": "  ", "llmUrl": " http://h:1 "})).apply_to(&mut s);
        assert_eq!(s.model, None);
        assert_eq!(s.llm_url.as_deref(), Some("http://h:1"));
        // the catalog's registry: set (trimmed), kept when left out, empty or null is the official one
        patch(json!({"catalogRegistry": " https://reg.example.com "})).apply_to(&mut s);
        assert_eq!(
            s.catalog_registry.as_deref(),
            Some("https://reg.example.com")
        );
        patch(json!({"model": "m"})).apply_to(&mut s);
        assert_eq!(
            s.catalog_registry.as_deref(),
            Some("https://reg.example.com")
        );
        patch(json!({"catalogRegistry": ""})).apply_to(&mut s);
        assert_eq!(s.catalog_registry, None);
        s.catalog_registry = Some("https://x.example".into());
        patch(json!({"catalogRegistry": null})).apply_to(&mut s);
        assert_eq!(s.catalog_registry, None);
    }

    #[test]
    fn a_patch_names_known_settings_only() {
        let err = serde_json::from_value::<SettingsPatch>(json!({"modle": "x"})).unwrap_err();
        assert!(err.to_string().contains("unknown field `modle`"), "{err}");
        assert!(serde_json::from_value::<SettingsPatch>(json!({"maxIterations": "5"})).is_err());
        assert_eq!(patch(json!({})), SettingsPatch::default());
        // what it serializes to reads back the same (null kept apart from left out)
        let p = patch(json!({"model": null, "toolModes": {"a": null}, "thinking": false}));
        let again: SettingsPatch =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(again, p);
        assert_eq!(again.model, Some(None));
        assert_eq!(again.llm_url, None);
    }
}
