//! View models: what a UI shows of a stored conversation. Tool results are shown on their
//! tool-call cards, so `tool` messages are not items of their own.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::llm::Role;
use crate::markdown;
use crate::store::{
    Approval, Conversation, ConversationSummary, MessageStatus, Notice, StoredMessage,
    StoredToolCall, ToolCallStatus, ToolChoice,
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
    /// How many items come before `items` and were not sent (the window offers to show them).
    pub earlier: usize,
}

/// How many items a conversation opens with; the earlier ones are sent when the user asks.
pub const PAGE: usize = 300;

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

/// The whole conversation as the window shows it.
pub fn conversation_view(c: &Conversation) -> ConversationView {
    conversation_page(c, None, usize::MAX)
}

/// What one item is made of: references only, so that laying out a long conversation costs
/// nothing for the items that are not sent.
enum Shown<'a> {
    Notice(&'a StoredMessage),
    /// A bubble; `reply_to`: on an assistant message, the user message it answers.
    Message(&'a StoredMessage, Option<i64>),
    Card(&'a StoredToolCall),
}

impl Shown<'_> {
    /// The message the item stands for (a card: the message that made the call).
    fn message_id(&self) -> i64 {
        match self {
            Shown::Notice(m) | Shown::Message(m, _) => m.id,
            Shown::Card(t) => t.message_id,
        }
    }

    /// The item, with its text copied and an assistant's Markdown rendered.
    fn item(&self) -> Item {
        match *self {
            Shown::Notice(m) => Item::Notice {
                id: m.id,
                notice: m
                    .notice
                    .clone()
                    .unwrap_or_else(|| Notice::from_legacy(&m.content)),
            },
            Shown::Message(m, reply_to) => {
                let assistant = m.role == Role::Assistant;
                Item::Message {
                    id: m.id,
                    role: m.role,
                    status: m.status,
                    content: m.content.clone(),
                    // user and system messages are shown as text
                    html: assistant.then(|| markdown::render(&m.content)),
                    thinking: m.thinking.clone().filter(|t| assistant && !t.is_empty()),
                    sibling_index: m.sibling_index,
                    sibling_count: m.sibling_count,
                    reply_to,
                }
            }
            Shown::Card(t) => card(t),
        }
    }
}

/// The last `page` items of the conversation, reaching further back to `focus` (a message, for
/// a search hit) when it is earlier. Only the items sent are built: opening a 10,000-message
/// conversation copies and renders its last page, not every reply in it.
pub fn conversation_page(c: &Conversation, focus: Option<i64>, page: usize) -> ConversationView {
    let mut cards: HashMap<i64, Vec<&StoredToolCall>> = HashMap::new();
    for t in &c.tool_calls {
        cards.entry(t.message_id).or_default().push(t);
    }
    let mut shown = Vec::with_capacity(c.messages.len() + c.tool_calls.len());
    let mut last_user = None;
    for m in &c.messages {
        if m.status == MessageStatus::Notice {
            shown.push(Shown::Notice(m));
            continue;
        }
        match m.role {
            Role::Tool => {}
            // only an imported conversation has them: shown as such, as text
            Role::System => shown.push(Shown::Message(m, None)),
            Role::User => {
                last_user = Some(m.id);
                shown.push(Shown::Message(m, None));
            }
            Role::Assistant => {
                // a reply that only asked for tools has no bubble, just its cards (unless it has
                // siblings: then its bubble carries the switcher)
                if !m.content.is_empty()
                    || m.tool_calls.is_empty()
                    || m.thinking.as_ref().is_some_and(|t| !t.is_empty())
                    || m.sibling_count > 1
                {
                    shown.push(Shown::Message(m, last_user));
                }
                shown.extend(
                    cards
                        .get(&m.id)
                        .into_iter()
                        .flatten()
                        .map(|t| Shown::Card(t)),
                );
            }
        }
    }
    let mut start = shown.len().saturating_sub(page);
    // a tool's result is shown on the card of the call
    let focus = focus.map(|f| {
        c.tool_calls
            .iter()
            .find(|t| t.result_message_id == Some(f))
            .map_or(f, |t| t.message_id)
    });
    if let Some(i) = focus.and_then(|f| shown.iter().position(|s| s.message_id() == f)) {
        start = start.min(i);
    }
    ConversationView {
        summary: c.summary.clone(),
        earlier: start,
        items: shown[start..].iter().map(Shown::item).collect(),
        tool_choice: c.tool_choice.clone(),
        settings: c.settings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::exchange::{ExportedConversation, ExportedMessage, ExportedToolCall};
    use crate::store::Store;

    /// `n` turns: a question, an answer that calls a tool (its card), the tool's result, a reply.
    async fn conversation(n: i64) -> Conversation {
        let mut messages = Vec::new();
        let mut tool_calls = Vec::new();
        let mut id = 0;
        let mut msg = |role, content: String, calls: Vec<crate::llm::ToolCall>, call_id| {
            id += 1;
            messages.push(ExportedMessage {
                tool_calls: calls,
                tool_call_id: call_id,
                created_at: id,
                ..ExportedMessage::text(id, (id > 1).then(|| id - 1), role, content)
            });
            id
        };
        for t in 0..n {
            msg(Role::User, format!("question {t}"), vec![], None);
            let call = crate::llm::ToolCall {
                id: Some(format!("c{t}")),
                name: "calc__add".into(),
                arguments: serde_json::json!({"a": t}),
                written: None,
            };
            let asked = msg(Role::Assistant, String::new(), vec![call], None);
            let result = msg(Role::Tool, format!("{t}"), vec![], Some(format!("c{t}")));
            msg(Role::Assistant, format!("answer *{t}*"), vec![], None);
            tool_calls.push(ExportedToolCall {
                message: asked,
                result_message: Some(result),
                call_id: Some(format!("c{t}")),
                name: "calc__add".into(),
                server: "calc".into(),
                tool: "add".into(),
                arguments: serde_json::json!({"a": t}),
                result: Some(format!("{t}")),
                result_raw: None,
                is_error: false,
                status: ToolCallStatus::Done,
                started_at: 0,
                duration_ms: Some(1),
                approval: None,
                arguments_edited: false,
                written: None,
            });
        }
        let doc = ExportedConversation::new("t", "m", messages, tool_calls);
        let s = Store::open_in_memory().await.unwrap();
        let id = s.import_json(&doc, None).await.unwrap();
        s.conversation(id).await.unwrap()
    }

    fn html_of(item: &Item) -> Option<&str> {
        match item {
            Item::Message { html, .. } => html.as_deref(),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_page_is_the_last_items_with_their_cards_rendered_and_reaches_back_to_a_focus() {
        let c = conversation(100).await;
        // per turn: the question, the card, the reply (the message that only asked has no bubble)
        let all = conversation_view(&c);
        assert_eq!(all.items.len(), 300);
        assert_eq!(all.earlier, 0);
        let page = conversation_page(&c, None, 30);
        assert_eq!(page.earlier, 270);
        assert_eq!(page.items.len(), 30);
        // the same items as the whole view's end, Markdown rendered the same
        for (a, b) in page.items.iter().zip(&all.items[270..]) {
            assert_eq!(
                serde_json::to_value(a).unwrap(),
                serde_json::to_value(b).unwrap()
            );
        }
        assert_eq!(
            html_of(&page.items[29]),
            Some("<p>answer <em>99</em></p>\n")
        );
        assert!(matches!(&page.items[1], Item::ToolCall { result: Some(r), .. } if r == "90"));
        // a focus before the page: the page starts at it (the question of turn 5)
        let q5 = c
            .messages
            .iter()
            .find(|m| m.content == "question 5")
            .unwrap()
            .id;
        let reached = conversation_page(&c, Some(q5), 30);
        assert_eq!(reached.earlier, 15);
        assert!(matches!(&reached.items[0], Item::Message { id, .. } if *id == q5));
        assert_eq!(reached.items.len(), 285);
        // a focus on the message that only asked for a tool: its card starts the page
        let asked = c.tool_calls[3].message_id;
        let at_card = conversation_page(&c, Some(asked), 30);
        assert!(
            matches!(&at_card.items[0], Item::ToolCall { message_id, .. } if *message_id == asked)
        );
        // a focus on a tool's result: the card of its call
        let result = c.tool_calls[3].result_message_id.unwrap();
        let at_result = conversation_page(&c, Some(result), 30);
        assert!(
            matches!(&at_result.items[0], Item::ToolCall { message_id, .. } if *message_id == asked)
        );
        // a focus inside the page, or one not in it at all, changes nothing
        assert_eq!(
            conversation_page(&c, Some(c.messages.last().unwrap().id), 30).earlier,
            270
        );
        assert_eq!(conversation_page(&c, Some(-1), 30).earlier, 270);
    }
}
