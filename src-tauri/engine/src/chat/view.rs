//! View models: what a UI shows of a stored conversation. Tool results are shown on their
//! tool-call cards, so `tool` messages are not items of their own.

use serde::Serialize;
use serde_json::Value;

use crate::llm::Role;
use crate::markdown;
use crate::store::{
    Approval, Conversation, ConversationSummary, MessageStatus, Notice, StoredToolCall,
    ToolCallStatus, ToolChoice,
};

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[allow(clippy::large_enum_variant)] // a view model, built once per item shown
pub enum Item {
    #[serde(rename_all = "camelCase")]
    Message {
        id: i64,
        role: Role,
        status: MessageStatus,
        content: String,
        html: Option<String>,
        thinking: Option<String>,
        /// Its place among its siblings (edits, regenerations): `‹ index+1 / count ›`.
        sibling_index: i64,
        sibling_count: i64,
        /// On an assistant message: the user message it answers (what "regenerate" starts from).
        reply_to: Option<i64>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        id: i64,
        message_id: i64,
        name: String,
        server: String,
        tool: String,
        arguments: Value,
        result: Option<String>,
        is_error: bool,
        status: ToolCallStatus,
        duration_ms: Option<i64>,
        approval: Option<Approval>,
        arguments_edited: bool,
        raw: Option<Value>,
        /// The tool's name as the model wrote it, when it was resolved to another.
        written: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Notice { id: i64, notice: Notice },
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationView {
    pub summary: ConversationSummary,
    pub items: Vec<Item>,
    pub tool_choice: ToolChoice,
    pub settings: crate::store::ConversationSettings,
}

fn card(t: &StoredToolCall) -> Item {
    Item::ToolCall {
        id: t.id,
        message_id: t.message_id,
        name: t.name.clone(),
        server: t.server.clone(),
        tool: t.tool.clone(),
        arguments: t.arguments.clone(),
        result: t.result.clone(),
        is_error: t.is_error,
        status: t.status,
        duration_ms: t.duration_ms,
        approval: t.approval,
        arguments_edited: t.arguments_edited,
        written: t.written.clone(),
        raw: t.result_raw.clone(),
    }
}

pub fn conversation_view(c: &Conversation) -> ConversationView {
    let mut items = Vec::with_capacity(c.messages.len() + c.tool_calls.len());
    let mut last_user = None;
    for m in &c.messages {
        if m.status == MessageStatus::Notice {
            items.push(Item::Notice {
                id: m.id,
                notice: m
                    .notice
                    .clone()
                    .unwrap_or_else(|| Notice::from_legacy(&m.content)),
            });
            continue;
        }
        match m.role {
            Role::Tool => continue,
            // only an imported conversation has them: shown as such, as text
            Role::System => items.push(Item::Message {
                id: m.id,
                role: m.role,
                status: m.status,
                content: m.content.clone(),
                html: None,
                thinking: None,
                sibling_index: m.sibling_index,
                sibling_count: m.sibling_count,
                reply_to: None,
            }),
            Role::User => {
                last_user = Some(m.id);
                items.push(Item::Message {
                    id: m.id,
                    role: m.role,
                    status: m.status,
                    content: m.content.clone(),
                    html: None,
                    thinking: None,
                    sibling_index: m.sibling_index,
                    sibling_count: m.sibling_count,
                    reply_to: None,
                })
            }
            Role::Assistant => {
                // a reply that only asked for tools has no bubble, just its cards (unless it has
                // siblings: then its bubble carries the switcher)
                let thinking = m.thinking.clone().filter(|t| !t.is_empty());
                if !m.content.is_empty()
                    || m.tool_calls.is_empty()
                    || thinking.is_some()
                    || m.sibling_count > 1
                {
                    items.push(Item::Message {
                        id: m.id,
                        role: m.role,
                        status: m.status,
                        content: m.content.clone(),
                        html: Some(markdown::render(&m.content)),
                        thinking,
                        sibling_index: m.sibling_index,
                        sibling_count: m.sibling_count,
                        reply_to: last_user,
                    });
                }
                items.extend(
                    c.tool_calls
                        .iter()
                        .filter(|t| t.message_id == m.id)
                        .map(card),
                );
            }
        }
    }
    ConversationView {
        summary: c.summary.clone(),
        items,
        tool_choice: c.tool_choice.clone(),
        settings: c.settings.clone(),
    }
}
