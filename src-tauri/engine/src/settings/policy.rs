//! Standing approval policies: what the user decided for a tool once and for all ("Always allow"
//! on a card, a policy set in Settings). The rules that read them are in `chat::approval`.
//!
//! They are kept by the tool's key (`mcp::ToolKey`: the server's identity and the tool's own
//! name), in `standingPolicies`: `{"<server identity>": {"<tool>": "allow" | "ask" | "deny"}}`.
//! Older versions kept them by the name the model is offered (`toolPolicies`:
//! `{"server__tool": "allow"}`, or `{"policy": "allow", "server": "<identity>"}` for one bound to
//! its server), which a renamed tool can share (`read_file`, `read.file`). Such an entry is read
//! and moved to its key ([`migration`]) once its name leads to exactly one tool of its server: a
//! `deny` or an `ask` whatever that tool is (refusing or asking more grants nothing); an `allow`
//! only to a tool whose definition the user accepted — never to a new one (it stays in
//! `toolPolicies`, marked `inert`, shown in Settings, applied to nothing). Until then it applies to
//! nothing.

use serde::{Deserialize, Serialize};

use crate::mcp::ToolKey;

/// A tool's standing policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Ask,
    Allow,
    Deny,
}

/// An entry of `toolPolicies`, as older versions wrote it (keyed by the name the model was
/// offered): a policy written by hand (`"allow"`), or one the user gave from a card, bound to the
/// identity of the server it was given for (`{"policy": "allow", "server": "<identity>"}`).
/// `inert`: an `allow` that led to a tool the user had not accepted when it was read; it is
/// never applied (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PolicyEntry {
    Plain(Policy),
    Bound {
        policy: Policy,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        inert: bool,
    },
}

impl PolicyEntry {
    /// An entry bound to the server whose identity is `server`.
    pub fn bound(policy: Policy, server: impl Into<String>) -> PolicyEntry {
        PolicyEntry::Bound {
            policy,
            server: Some(server.into()),
            inert: false,
        }
    }

    pub fn policy(&self) -> Policy {
        match self {
            PolicyEntry::Plain(p) | PolicyEntry::Bound { policy: p, .. } => *p,
        }
    }

    /// The identity of the server it was given for; `None` for one written by hand.
    pub fn server(&self) -> Option<&str> {
        match self {
            PolicyEntry::Plain(_) => None,
            PolicyEntry::Bound { server, .. } => server.as_deref(),
        }
    }

    pub fn is_inert(&self) -> bool {
        matches!(self, PolicyEntry::Bound { inert: true, .. })
    }

    /// The same entry, marked never to be applied.
    pub fn inert(&self) -> PolicyEntry {
        PolicyEntry::Bound {
            policy: self.policy(),
            server: self.server().map(str::to_string),
            inert: true,
        }
    }
}

/// A tool an old entry's name leads to now (`McpHost::tools_once_named`).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub key: ToolKey,
    /// Its definition is not one the user accepted (changed, new, unchecked).
    pub changed: bool,
    /// Of those: its server has accepted tools and this is not one of them (new, renamed).
    pub new: bool,
}

impl From<&crate::mcp::RoutedTool> for Candidate {
    fn from(t: &crate::mcp::RoutedTool) -> Candidate {
        Candidate {
            key: t.key(),
            changed: t.changed,
            new: t.unaccepted == Some(crate::mcp::pins::Unaccepted::New),
        }
    }
}

/// What becomes of an old entry, given the tools its name leads to now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migration {
    /// It becomes the standing policy of these tools (and leaves `toolPolicies`).
    To(Vec<ToolKey>),
    /// Not yet: its name leads to no tool of its server now, to several (an `allow`), or to
    /// one whose change is not accepted yet. It applies to nothing meanwhile.
    Wait,
    /// Never: an `allow` whose name led to a tool new to its server. Kept, marked, shown.
    Inert,
}

/// What becomes of the old entry `entry`, when its name leads to `candidates` (every tool whose
/// offered name was that name, of any server).
pub fn migration(entry: &PolicyEntry, candidates: &[Candidate]) -> Migration {
    if entry.is_inert() {
        return Migration::Inert;
    }
    let of_its_server: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| entry.server().is_none_or(|s| s == c.key.server))
        .collect();
    match (entry.policy(), of_its_server.as_slice()) {
        (_, []) => Migration::Wait,
        // refusing or asking grants nothing: it holds for whatever the name leads to
        (Policy::Deny | Policy::Ask, all) => {
            Migration::To(all.iter().map(|c| c.key.clone()).collect())
        }
        (Policy::Allow, [one]) if !one.changed => Migration::To(vec![one.key.clone()]),
        (Policy::Allow, [one]) if one.new => Migration::Inert,
        (Policy::Allow, _) => Migration::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(server: &str, tool: &str, changed: bool, new: bool) -> Candidate {
        Candidate {
            key: ToolKey::new(server, tool),
            changed,
            new,
        }
    }

    #[test]
    fn an_old_allow_moves_only_to_one_accepted_tool_of_its_server() {
        let bound = PolicyEntry::bound(Policy::Allow, "id");
        let accepted = c("id", "read_file", false, false);
        assert_eq!(
            migration(&bound, std::slice::from_ref(&accepted)),
            Migration::To(vec![accepted.key.clone()])
        );
        // renamed: the name now leads to a tool the server did not have when it was accepted
        assert_eq!(
            migration(&bound, &[c("id", "read.file", true, true)]),
            Migration::Inert
        );
        // changed, not accepted yet: later
        assert_eq!(
            migration(&bound, &[c("id", "read_file", true, false)]),
            Migration::Wait
        );
        // another program's tool of that name is not its own; none of its own: later
        assert_eq!(
            migration(&bound, &[c("other", "read_file", false, false)]),
            Migration::Wait
        );
        assert_eq!(migration(&bound, &[]), Migration::Wait);
        // two: not one
        assert_eq!(
            migration(
                &bound,
                &[accepted.clone(), c("id", "read.file", false, false)]
            ),
            Migration::Wait
        );
        // one written by hand holds for the one tool of whatever server
        assert_eq!(
            migration(
                &PolicyEntry::Plain(Policy::Allow),
                &[c("other", "x", false, false)]
            ),
            Migration::To(vec![ToolKey::new("other", "x")])
        );
        // marked inert: stays inert, whatever the tools are now
        assert_eq!(
            migration(&bound.inert(), std::slice::from_ref(&accepted)),
            Migration::Inert
        );
    }

    #[test]
    fn an_old_deny_or_ask_holds_for_whatever_its_name_leads_to() {
        for policy in [Policy::Deny, Policy::Ask] {
            let all = [c("id", "read.file", true, true), c("id", "x", false, false)];
            assert_eq!(
                migration(&PolicyEntry::bound(policy, "id"), &all),
                Migration::To(vec![
                    ToolKey::new("id", "read.file"),
                    ToolKey::new("id", "x")
                ])
            );
        }
    }

    #[test]
    fn old_entries_parse_as_older_versions_wrote_them() {
        let read = |s: &str| serde_json::from_str::<PolicyEntry>(s).unwrap();
        assert_eq!(read(r#""deny""#), PolicyEntry::Plain(Policy::Deny));
        assert_eq!(
            read(r#"{"policy":"allow","server":"abc"}"#),
            PolicyEntry::bound(Policy::Allow, "abc")
        );
        let inert = PolicyEntry::bound(Policy::Allow, "abc").inert();
        assert_eq!(
            serde_json::to_string(&inert).unwrap(),
            r#"{"policy":"allow","server":"abc","inert":true}"#
        );
        assert!(read(r#"{"policy":"allow","server":"abc","inert":true}"#).is_inert());
        assert!(serde_json::from_str::<PolicyEntry>(r#""sometimes""#).is_err());
    }
}
