//! What the store holds, as Rust values: conversations, messages, tool calls, and the typed
//! states they are in (stored as short text codes, the same words the window receives).

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits;
use crate::llm::{Message, Role, ToolCall};

/// Stores a unit-variant enum as its serde name (text), and reads it back.
macro_rules! sql_text_enum {
    ($t:ty) => {
        impl ToSql for $t {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                match serde_json::to_value(self) {
                    Ok(Value::String(s)) => Ok(ToSqlOutput::from(s)),
                    _ => Err(rusqlite::Error::ToSqlConversionFailure(
                        format!("{self:?} has no text form").into(),
                    )),
                }
            }
        }
        impl FromSql for $t {
            fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
                let s = v.as_str()?;
                serde_json::from_value(Value::String(s.to_string()))
                    .map_err(|e| FromSqlError::Other(Box::new(e)))
            }
        }
    };
}

/// Where a message is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    /// Being streamed right now (only while a turn runs).
    Streaming,
    Complete,
    /// The user stopped it; the text is partial.
    Stopped,
    /// The app ended while it streamed; the text is what had arrived.
    Interrupted,
    /// The LLM failed mid-reply; the text is what had arrived.
    Error,
    /// A note from Switchboard to the user (see [`Notice`]); never sent to the model.
    Notice,
}
sql_text_enum!(MessageStatus);

/// Where a tool call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallStatus {
    Running,
    Done,
    /// The app ended before the tool answered.
    Interrupted,
}
sql_text_enum!(ToolCallStatus);

/// How a tool call came to run, or not. The window words it; the store keeps the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Approval {
    /// Asked, no answer yet.
    Waiting,
    /// Ran without asking: the tool is annotated read-only.
    ReadOnly,
    /// Ran without asking: the user allowed this tool always.
    AlwaysAllowed,
    /// Ran without asking: the user allowed it earlier in this chat.
    AllowedInChat,
    /// Not run: the user's settings deny this tool.
    DeniedByPolicy,
    /// The user allowed this call.
    Approved,
    /// The user allowed this tool for the rest of the chat.
    ApprovedForChat,
    /// The user allowed this tool always.
    ApprovedAlways,
    Denied,
    /// The turn was stopped while the call waited.
    Cancelled,
    /// Not run: the loop guard (the same call as in the previous round).
    Repeated,
    /// Not run: the tool is turned off for this chat.
    TurnedOff,
    /// Not run: the name fits no tool (or several); the model was told the closest names.
    UnknownTool,
    /// Not run: the arguments do not fit the tool's schema, even repaired; the model was told
    /// what is wrong with each.
    InvalidArguments,
    /// Not run: the name is of a server that waits for the user to sign in; the model was told,
    /// and the window offers the sign-in.
    SignInNeeded,
}
sql_text_enum!(Approval);

impl Approval {
    /// Reads what databases and exports of before the typed codes held ("approved, arguments
    /// edited", "read-only", …): the code, and whether the arguments were edited.
    pub fn from_legacy(label: &str) -> Option<(Approval, bool)> {
        let (base, edited) = match label.strip_suffix(", arguments edited") {
            Some(b) => (b, true),
            None => (label, false),
        };
        let code = match base {
            "waiting" => Approval::Waiting,
            "read-only" => Approval::ReadOnly,
            "always allowed" => Approval::AlwaysAllowed,
            "allowed in this chat" => Approval::AllowedInChat,
            "denied by policy" => Approval::DeniedByPolicy,
            "approved" => Approval::Approved,
            "approved for this chat" => Approval::ApprovedForChat,
            "approved always" => Approval::ApprovedAlways,
            "denied" => Approval::Denied,
            "cancelled" => Approval::Cancelled,
            "not run (repeated)" => Approval::Repeated,
            other => {
                return serde_json::from_value(Value::String(other.into()))
                    .ok()
                    .map(|a| (a, edited))
            }
        };
        Some((code, edited))
    }

    /// Whether the call was kept from running.
    pub fn refused(self) -> bool {
        matches!(
            self,
            Approval::DeniedByPolicy
                | Approval::Denied
                | Approval::Cancelled
                | Approval::Repeated
                | Approval::TurnedOff
                | Approval::UnknownTool
                | Approval::InvalidArguments
                | Approval::SignInNeeded
        )
    }
}

/// A note from Switchboard in a conversation: stored and shown, never sent to the model. The
/// window words it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Notice {
    /// The turn used its rounds of tool calls; the model had not finished.
    #[serde(rename_all = "camelCase")]
    RoundLimit { rounds: usize },
    /// The loop guard stopped the turn: the model repeated this call.
    #[serde(rename_all = "camelCase")]
    RepeatedCall { tool: String },
    /// A note in words of its own (from a conversation written before notices were typed).
    Text { text: String },
    /// Older tool results began to go to the model as short stubs (their cards keep them).
    #[serde(rename_all = "camelCase")]
    ResultsStubbed { count: usize },
    /// The turn stopped before its request: it would not fit the model's context of `limit`
    /// tokens (about `used`). `ask`: the conversation's policy is to ask (summarising or leaving
    /// out older turns would make it fit); else even they would not (the latest messages alone
    /// are too long).
    #[serde(rename_all = "camelCase")]
    ContextFull {
        used: usize,
        limit: usize,
        ask: bool,
    },
    /// Older turns could not be summarised (`error`): this request left the oldest out instead.
    #[serde(rename_all = "camelCase")]
    SummaryFailed { error: String },
}

impl Notice {
    /// A notice as it was stored before notices were typed: its English sentence.
    pub fn from_legacy(text: &str) -> Notice {
        let rounds = text
            .strip_prefix("Stopped after ")
            .and_then(|t| t.split_once(" rounds"))
            .and_then(|(n, _)| n.parse().ok());
        let tool = text
            .strip_prefix("Stopped: the model asked for ")
            .and_then(|t| t.split_once(" with the same arguments"))
            .map(|(name, _)| name.to_string());
        match (rounds, tool) {
            (Some(rounds), _) => Notice::RoundLimit { rounds },
            (_, Some(tool)) => Notice::RepeatedCall { tool },
            _ => Notice::Text { text: text.into() },
        }
    }

    /// In words, for documents the engine writes itself (the Markdown export).
    pub fn describe(&self) -> String {
        match self {
            Notice::RoundLimit { rounds } => format!(
                "Stopped after {rounds} rounds of tool calls: that is the limit for one turn."
            ),
            Notice::RepeatedCall { tool } => format!(
                "Stopped: the model asked for {tool} with the same arguments twice in a row."
            ),
            Notice::Text { text } => text.clone(),
            Notice::ResultsStubbed { count } => format!(
                "{count} older tool results now go to the model as short stubs, to fit its context; \
                 their cards keep everything."
            ),
            Notice::ContextFull { used, limit, ask: true } => format!(
                "This conversation no longer fits the model's context (about {used} of {limit} \
                 tokens): older turns can be summarised or left out."
            ),
            Notice::ContextFull { used, limit, ask: false } => format!(
                "The latest messages alone take about {used} of the model's {limit} tokens of \
                 context: nothing was sent."
            ),
            Notice::SummaryFailed { error } => format!(
                "Older turns could not be summarised ({error}); the oldest were left out of this \
                 request instead."
            ),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub id: i64,
    pub title: String,
    pub model: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: i64,
    pub pinned: bool,
    /// The last user or assistant text on the shown branch, cut short.
    pub snippet: String,
    /// Read from a file and not yet continued here: what it says it said was not seen happen.
    pub imported: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    pub id: i64,
    pub seq: i64,
    pub role: Role,
    pub content: String,
    pub thinking: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_name: Option<String>,
    pub tool_call_id: Option<String>,
    pub status: MessageStatus,
    /// The images it carries (a user's, a tool's), in order.
    pub attachments: Vec<super::AttachedImage>,
    /// On a [`MessageStatus::Notice`] message: what it says.
    pub notice: Option<Notice>,
    pub created_at: i64,
    pub parent_id: Option<i64>,
    /// Its place among the messages with the same parent (edits and regenerations), from 0.
    pub sibling_index: i64,
    pub sibling_count: i64,
    /// The user pinned it: always sent to the model whole.
    pub pinned: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StoredToolCall {
    pub id: i64,
    pub message_id: i64,
    pub result_message_id: Option<i64>,
    pub call_id: Option<String>,
    pub name: String,
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub result: Option<String>,
    pub result_raw: Option<Value>,
    pub is_error: bool,
    pub status: ToolCallStatus,
    pub started_at: i64,
    pub duration_ms: Option<i64>,
    pub approval: Option<Approval>,
    /// The user changed the arguments before it ran.
    pub arguments_edited: bool,
    /// The tool's name as the model wrote it, when it was resolved to another.
    pub written: Option<String>,
    /// When its server runs it as a task: where the task is.
    pub task: Option<super::tasks::StoredTask>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub summary: ConversationSummary,
    /// The shown branch: the path from the first message to the conversation's leaf.
    pub messages: Vec<StoredMessage>,
    /// The tool calls of those messages.
    pub tool_calls: Vec<StoredToolCall>,
    pub tool_choice: ToolChoice,
    pub settings: ConversationSettings,
    /// The summary that stands for older turns of the shown branch in requests, when one was
    /// written (the one reaching furthest along the branch).
    pub summarised: Option<super::EarlierSummary>,
}

/// One conversation's own settings; `None` = the app-wide default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConversationSettings {
    pub system_prompt: Option<String>,
    pub temperature: Option<f64>,
    pub num_ctx: Option<u32>,
    /// The provider the conversation talks to (its id in the settings).
    pub provider: Option<String>,
    /// What happens when the conversation outgrows the model's context; `None`: the app's
    /// default (`Settings::context_policy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_policy: Option<ContextPolicy>,
    /// Skills this conversation turns on or off for itself, by `origin/name` (`local/<name>`,
    /// `<server>/<name>`); a skill not named here is as the app's settings say
    /// (`Settings::skills_off`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, bool>,
}

/// What a request does when the conversation no longer fits the model's context, once older
/// tool results are stubs (`chat::context`). The system prompt, the user's first message, the
/// messages they pinned and the latest turns are always sent whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContextPolicy {
    /// Older turns are sent as a summary the model wrote (stored, shown, editable).
    #[default]
    Summarise,
    /// The oldest turns are left out.
    DropOldest,
    /// Nothing is sent: the turn stops and the user chooses.
    Ask,
}

impl ContextPolicy {
    /// Every policy: the choices the window offers (`settings::CHOICES`).
    pub const ALL: [ContextPolicy; 3] = [
        ContextPolicy::Summarise,
        ContextPolicy::DropOldest,
        ContextPolicy::Ask,
    ];
}

/// A generation setting out of its range: which one (`field`, as the window names it) and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidSetting {
    pub field: &'static str,
    pub message: String,
}

impl ConversationSettings {
    /// Why these settings cannot be used, if they cannot: checked against the same bounds as
    /// the app's own (`crate::limits`, the rows of `settings::ROWS`).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        let values = [
            (&limits::TEMPERATURE, self.temperature),
            (&limits::NUM_CTX, self.num_ctx.map(f64::from)),
        ];
        for (limit, value) in values {
            if let Some(v) = value {
                limit.check(v).map_err(|message| InvalidSetting {
                    field: limit.key,
                    message,
                })?;
            }
        }
        Ok(())
    }
}

/// Which servers and tools one conversation may use: everything, except what is turned off.
/// Tools are named `server/tool` (their own names, which stay put when exposed names change).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolChoice {
    pub disabled_servers: BTreeSet<String>,
    pub disabled_tools: BTreeSet<String>,
}

impl ToolChoice {
    pub fn allows(&self, server: &str, tool: &str) -> bool {
        !self.disabled_servers.contains(server)
            && !self.disabled_tools.contains(&format!("{server}/{tool}"))
    }
}

impl StoredMessage {
    /// The message as the model sees it, but for its images (their bytes are in files: the
    /// chat loop reads them, see [`StoredMessage::attachments`]).
    pub fn to_llm(&self) -> Message {
        Message {
            role: self.role,
            content: self.content.clone(),
            thinking: self.thinking.clone(),
            tool_calls: self.tool_calls.clone(),
            tool_name: self.tool_name.clone(),
            tool_call_id: self.tool_call_id.clone(),
            images: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_labels_and_sentences_become_codes() {
        assert_eq!(
            Approval::from_legacy("approved, arguments edited"),
            Some((Approval::Approved, true))
        );
        assert_eq!(
            Approval::from_legacy("not run (repeated)"),
            Some((Approval::Repeated, false))
        );
        assert_eq!(
            Approval::from_legacy("readOnly"),
            Some((Approval::ReadOnly, false))
        );
        assert_eq!(Approval::from_legacy("something else"), None);
        assert_eq!(
            Notice::from_legacy("Stopped after 5 rounds of tool calls: that is the limit"),
            Notice::RoundLimit { rounds: 5 }
        );
        assert_eq!(
            Notice::from_legacy("Stopped: the model asked for calculator__add with the same arguments twice in a row"),
            Notice::RepeatedCall { tool: "calculator__add".into() }
        );
        assert_eq!(
            Notice::from_legacy("hello"),
            Notice::Text {
                text: "hello".into()
            }
        );
    }

    #[test]
    fn states_are_stored_as_the_words_the_window_gets() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let (a, s): (Approval, MessageStatus) = c
            .query_row(
                "SELECT ?1, ?2",
                rusqlite::params![Approval::ApprovedForChat, MessageStatus::Interrupted],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (a, s),
            (Approval::ApprovedForChat, MessageStatus::Interrupted)
        );
        let raw: String = c
            .query_row("SELECT ?1", [ToolCallStatus::Done], |r| r.get(0))
            .unwrap();
        assert_eq!(raw, "done");
        assert!(c
            .query_row("SELECT 'nonsense'", [], |r| r.get::<_, Approval>(0))
            .is_err());
    }
}
