//! Tool approval: which calls run at once, which are refused, and which wait for the user.
//!
//! Rules, in order: a tool whose policy is `deny` never runs; a tool annotated
//! `destructiveHint: true` always asks (with a warning), whatever else was allowed; a tool whose
//! policy is `allow`, or that the user allowed for this conversation, runs; a tool annotated
//! `readOnlyHint: true` by a server whose annotations are believed (a built-in one, or one the
//! user trusts) runs unless its policy is `ask` or it is annotated `openWorldHint: true` (it
//! reaches outside); everything else asks. Annotations are the server's word, not proof.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mcp::RoutedTool;
pub use crate::settings::{Policy, PolicyEntry};
pub use crate::store::Approval;

/// What the user chose for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    AllowOnce,
    AllowConversation,
    AlwaysAllow,
    Deny,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub action: Action,
    /// Arguments the user edited (already validated against the tool's schema).
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

impl Decision {
    pub fn of(action: Action) -> Self {
        Decision {
            action,
            arguments: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The tool call's id in the store.
    pub id: i64,
    pub conversation_id: i64,
    pub name: String,
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub destructive: bool,
    /// The tool's definition is not one the user accepted: what changed (for a new or
    /// unchecked tool, all of it). Allowing the call runs it once; it accepts nothing.
    pub changed: Option<Vec<crate::mcp::pins::DiffLine>>,
    /// Why it is not accepted, when it is not: changed, new (or renamed), unchecked.
    pub unaccepted: Option<crate::mcp::pins::Unaccepted>,
    /// The tool's `inputSchema`: edited arguments must fit it.
    #[serde(skip)]
    pub schema: Option<Value>,
    /// An MCP App makes this call, not the model: how the user knows it (`AppCaller::label`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
}

/// What happens to a call before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Runs without asking; the code says why (stored on the card).
    Allow(Approval),
    Deny,
    Ask,
}

pub fn need(policy: Option<Policy>, tool: &RoutedTool, allowed_in_conversation: bool) -> Need {
    match policy {
        Some(Policy::Deny) => Need::Deny,
        _ if tool.destructive => Need::Ask,
        // a changed definition suspends every standing approval until the user accepts it
        _ if tool.changed => Need::Ask,
        Some(Policy::Allow) => Need::Allow(Approval::AlwaysAllowed),
        _ if allowed_in_conversation => Need::Allow(Approval::AllowedInChat),
        Some(Policy::Ask) => Need::Ask,
        None if tool.read_only && tool.trusted && !tool.open_world => {
            Need::Allow(Approval::ReadOnly)
        }
        None => Need::Ask,
    }
}

/// Checks arguments the user edited against the tool's `inputSchema`; the errors say where.
pub fn validate_arguments(schema: &Value, args: &Value) -> Result<(), Vec<String>> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| vec![format!("the tool's own schema is not valid: {e}")])?;
    let errors: Vec<String> = validator
        .iter_errors(args)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// How the user's decision is recorded on the card.
pub fn decided(action: Action) -> Approval {
    match action {
        Action::AllowOnce => Approval::Approved,
        Action::AllowConversation => Approval::ApprovedForChat,
        Action::AlwaysAllow => Approval::ApprovedAlways,
        Action::Deny => Approval::Denied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(read_only: bool, destructive: bool) -> RoutedTool {
        RoutedTool {
            server: "s".into(),
            tool: "t".into(),
            read_only,
            destructive,
            open_world: false,
            trusted: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_changed_definition_suspends_every_standing_approval_but_not_a_deny() {
        let changed = RoutedTool {
            changed: true,
            ..t(true, false)
        };
        assert_eq!(need(None, &changed, false), Need::Ask, "read-only");
        assert_eq!(need(Some(Policy::Allow), &changed, false), Need::Ask);
        assert_eq!(
            need(None, &changed, true),
            Need::Ask,
            "allowed in this chat"
        );
        assert_eq!(need(Some(Policy::Deny), &changed, false), Need::Deny);
    }

    #[test]
    fn a_servers_word_counts_only_when_it_is_believed_and_the_tool_stays_inside() {
        let untrusted = RoutedTool {
            trusted: false,
            ..t(true, false)
        };
        assert_eq!(
            need(None, &untrusted, false),
            Need::Ask,
            "read-only is only a claim"
        );
        let open = RoutedTool {
            open_world: true,
            ..t(true, false)
        };
        assert_eq!(
            need(None, &open, false),
            Need::Ask,
            "it reaches the internet"
        );
        assert_eq!(
            need(Some(Policy::Allow), &open, false),
            Need::Allow(Approval::AlwaysAllowed),
            "unless the user allowed it"
        );
        assert_eq!(
            need(None, &untrusted, true),
            Need::Allow(Approval::AllowedInChat)
        );
    }

    #[test]
    fn the_rules() {
        // read-only runs by default; plain tools ask
        assert_eq!(
            need(None, &t(true, false), false),
            Need::Allow(Approval::ReadOnly)
        );
        assert_eq!(need(None, &t(false, false), false), Need::Ask);
        // a policy of ask overrides read-only; deny beats everything
        assert_eq!(need(Some(Policy::Ask), &t(true, false), false), Need::Ask);
        assert_eq!(need(Some(Policy::Deny), &t(true, false), true), Need::Deny);
        // allowed always / in this chat
        assert_eq!(
            need(Some(Policy::Allow), &t(false, false), false),
            Need::Allow(Approval::AlwaysAllowed)
        );
        assert_eq!(
            need(None, &t(false, false), true),
            Need::Allow(Approval::AllowedInChat)
        );
        // destructive always asks
        assert_eq!(need(Some(Policy::Allow), &t(false, true), true), Need::Ask);
        assert_eq!(need(None, &t(true, true), false), Need::Ask);
    }

    #[test]
    fn edited_arguments_are_checked_against_the_schema() {
        let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"], "additionalProperties": false});
        assert!(validate_arguments(&schema, &serde_json::json!({"a": 1, "b": 2})).is_ok());
        let errs = validate_arguments(&schema, &serde_json::json!({"a": "one"})).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs.iter().any(|e| e.starts_with("/a:")), "{errs:?}");
        assert!(
            errs.iter()
                .any(|e| e.contains("\"b\" is a required property")),
            "{errs:?}"
        );
    }

    #[test]
    fn decisions_parse_from_the_window() {
        let d: Decision = serde_json::from_str(r#"{"action":"allowConversation"}"#).unwrap();
        assert_eq!(d, Decision::of(Action::AllowConversation));
        let d: Decision =
            serde_json::from_str(r#"{"action":"allowOnce","arguments":{"a":1}}"#).unwrap();
        assert_eq!(d.arguments.unwrap()["a"], 1);
        assert_eq!(
            decided(Action::AllowConversation),
            Approval::ApprovedForChat
        );
    }
}
