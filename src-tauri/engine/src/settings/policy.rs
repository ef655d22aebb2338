//! Standing approval policies (settings: `toolPolicies`): what the user decided for a tool once
//! and for all. The rules that read them are in `chat::approval`.

use serde::{Deserialize, Serialize};

/// A tool's standing policy (settings: `toolPolicies`, keyed by exposed name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Ask,
    Allow,
    Deny,
}

/// A tool's entry in `toolPolicies`: a policy written by hand (`"allow"`), or one the user gave
/// from a card ("Always allow"), bound to the identity of the server it was given for
/// (`{"policy": "allow", "server": "<identity>"}`): it holds only while that server is the same
/// program or URL. A `deny` holds whatever the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PolicyEntry {
    Plain(Policy),
    Bound { policy: Policy, server: String },
}

impl PolicyEntry {
    /// The policy, if it holds for a server with this identity.
    pub fn for_server(&self, identity: &str) -> Option<Policy> {
        match self {
            PolicyEntry::Plain(p) => Some(*p),
            PolicyEntry::Bound {
                policy: Policy::Deny,
                ..
            } => Some(Policy::Deny),
            PolicyEntry::Bound { policy, server } => (server == identity).then_some(*policy),
        }
    }
}
