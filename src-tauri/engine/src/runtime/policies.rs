//! The standing tool policies as the Settings window lists them (server and tool, by name), and
//! moving the entries older versions kept by the name the model was offered to their tools'
//! keys (`settings::policy`), which needs the tools the host runs now.

use serde::Serialize;

use super::Runtime;
use crate::settings::{Candidate, Policy};

/// One standing policy, as the Settings window lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    /// The configured servers with that identity (usually one; none: no configured server is
    /// that program or URL now).
    pub servers: Vec<String>,
    /// The server's identity it holds for; for an old entry, the one it was given for, if any.
    pub identity: Option<String>,
    /// The tool's own name; `None` for an old entry.
    pub tool: Option<String>,
    /// An old entry (`toolPolicies`): the name it is kept under.
    pub old_name: Option<String>,
    pub policy: Policy,
    /// An old entry: why it applies to nothing.
    pub old: Option<OldEntry>,
}

/// Why an entry an older version kept applies to nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum OldEntry {
    /// Its name leads to no tool of its server now (the server is not running, or the tool is
    /// gone), to several, or to one whose change is not accepted yet: moved when it leads to one.
    Waiting,
    /// An `allow` whose name led to a tool new to its server (renamed?): never applied.
    Inert,
}

impl Runtime {
    /// Moves the entries older versions kept by name to their tools' keys where that is safe
    /// (`settings::policy`), as far as the servers running now tell.
    pub fn migrate_old_policies(&self) {
        let host = &self.host;
        let candidates = |name: &str| -> Vec<Candidate> {
            host.tools_once_named(name)
                .iter()
                .map(Candidate::from)
                .collect()
        };
        if let Err(e) = self.settings.migrate_old_policies(None, candidates) {
            tracing::warn!("could not move old tool policies to their tools: {e}");
        }
    }

    /// Every standing policy, by server and tool (old entries moved first where they can be),
    /// then the old entries that stay, with why.
    pub fn policy_views(&self) -> Vec<PolicyView> {
        self.migrate_old_policies();
        let config = self.mcp_config();
        let named = |identity: &str| -> Vec<String> {
            config
                .servers
                .iter()
                .filter(|(_, c)| c.identity() == identity)
                .map(|(name, _)| name.clone())
                .collect()
        };
        self.settings.read(|s| {
            let current = s.standing_policies.iter().flat_map(|(identity, tools)| {
                tools.iter().map(|(tool, policy)| PolicyView {
                    servers: named(identity),
                    identity: Some(identity.clone()),
                    tool: Some(tool.clone()),
                    old_name: None,
                    policy: *policy,
                    old: None,
                })
            });
            let old = s.tool_policies.iter().map(|(name, entry)| PolicyView {
                servers: entry.server().map(named).unwrap_or_default(),
                identity: entry.server().map(str::to_string),
                tool: None,
                old_name: Some(name.clone()),
                policy: entry.policy(),
                old: Some(if entry.is_inert() {
                    OldEntry::Inert
                } else {
                    OldEntry::Waiting
                }),
            });
            current.chain(old).collect()
        })
    }
}
