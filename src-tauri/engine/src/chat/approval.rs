//! Tool approval: which calls run at once, which are refused, and which wait for the user.
//!
//! Rules, in order: a tool whose policy is `deny` never runs; a tool annotated
//! `destructiveHint: true` always asks (with a warning), whatever else was allowed; a tool whose
//! policy is `allow`, or that the user allowed for this conversation, runs; a tool annotated
//! `readOnlyHint: true` runs unless its policy is `ask`; everything else asks.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::mcp::{RoutedTool, SamplingRequest};

/// A tool's standing policy (settings: `toolPolicies`, keyed by exposed name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Ask,
    Allow,
    Deny,
}

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
}

/// Asks the user. Called after the `approvalRequested` event went out.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: &ApprovalRequest, cancel: &CancellationToken) -> Decision;
    /// May the server's sampling request go to the model? Called after `samplingRequested`.
    async fn decide_sampling(&self, request: &SamplingRequest, cancel: &CancellationToken) -> bool;
}

/// Approves everything (tests, and the CLI's `--approve-all`).
pub struct AllowAll;

#[async_trait]
impl Approver for AllowAll {
    async fn decide(&self, _: &ApprovalRequest, _: &CancellationToken) -> Decision {
        Decision::of(Action::AllowOnce)
    }
    async fn decide_sampling(&self, _: &SamplingRequest, _: &CancellationToken) -> bool {
        true
    }
}

/// Refuses every call that needs approval (the CLI without `--approve-all`).
pub struct DenyAll;

#[async_trait]
impl Approver for DenyAll {
    async fn decide(&self, _: &ApprovalRequest, _: &CancellationToken) -> Decision {
        Decision::of(Action::Deny)
    }
    async fn decide_sampling(&self, _: &SamplingRequest, _: &CancellationToken) -> bool {
        false
    }
}

/// What happens to a call before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Runs without asking; the word says why (stored on the card).
    Allow(&'static str),
    Deny,
    Ask,
}

pub fn need(policy: Option<Policy>, tool: &RoutedTool, allowed_in_conversation: bool) -> Need {
    match policy {
        Some(Policy::Deny) => Need::Deny,
        _ if tool.destructive => Need::Ask,
        Some(Policy::Allow) => Need::Allow("always allowed"),
        _ if allowed_in_conversation => Need::Allow("allowed in this chat"),
        Some(Policy::Ask) => Need::Ask,
        None if tool.read_only => Need::Allow("read-only"),
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

/// How a decision is stored on the card.
pub fn approval_label(action: Action, edited: bool) -> String {
    let base = match action {
        Action::AllowOnce => "approved",
        Action::AllowConversation => "approved for this chat",
        Action::AlwaysAllow => "approved always",
        Action::Deny => "denied",
    };
    if edited && action != Action::Deny {
        format!("{base}, arguments edited")
    } else {
        base.to_string()
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
        }
    }

    #[test]
    fn the_rules() {
        // read-only runs by default; plain tools ask
        assert_eq!(need(None, &t(true, false), false), Need::Allow("read-only"));
        assert_eq!(need(None, &t(false, false), false), Need::Ask);
        // a policy of ask overrides read-only; deny beats everything
        assert_eq!(need(Some(Policy::Ask), &t(true, false), false), Need::Ask);
        assert_eq!(need(Some(Policy::Deny), &t(true, false), true), Need::Deny);
        // allowed always / in this chat
        assert_eq!(
            need(Some(Policy::Allow), &t(false, false), false),
            Need::Allow("always allowed")
        );
        assert_eq!(
            need(None, &t(false, false), true),
            Need::Allow("allowed in this chat")
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
            approval_label(Action::AllowOnce, true),
            "approved, arguments edited"
        );
    }
}
