//! View models: what a UI shows of a stored conversation. Tool results are shown on their
//! tool-call cards, so `tool` messages are not items of their own.
//!
//! A conversation opens at its last page of `PAGE` (300) items, or reaching back to a search hit:
//! `open_page` lays the page out from the store's outline of the branch and reads and renders only
//! the page's messages; the rest comes on "Show earlier messages". A message's images are shown as
//! thumbnails, and a card's kept images.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::llm::Role;
use crate::markdown;
use crate::store::page::{Outline, OutlineMessage};
use crate::store::{
    Approval, AttachedImage, Conversation, ConversationSummary, MessageStatus, Notice, Store,
    StoreError, StoredMessage, StoredToolCall, ToolCallStatus, ToolChoice,
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
        /// The images it carries (thumbnails; the whole image on request).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<AttachedImage>,
        /// The user pinned it: always sent to the model whole, however long the chat grows.
        pinned: bool,
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
        /// When its server runs it as a task: where the task is.
        task: Option<crate::store::StoredTask>,
        /// The images of its result as kept with the conversation (what a model that sees
        /// images got), shown when the raw result is not kept.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        images: Vec<AttachedImage>,
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
    /// The summary that stands for older turns of this branch in requests (shown folded after
    /// the last message it covers, editable), when one was written.
    pub summarised: Option<crate::store::EarlierSummary>,
}

/// How many items a conversation opens with; the earlier ones are sent when the user asks.
pub const PAGE: usize = 300;

fn card(t: &StoredToolCall, images: Vec<AttachedImage>) -> Item {
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
        task: t.task.clone(),
        images,
    }
}

/// The whole conversation as the window shows it.
pub fn conversation_view(c: &Conversation) -> ConversationView {
    conversation_page(c, None, usize::MAX)
}

/// How many items a message is shown as: its bubble, if it has one, and its cards.
fn items_of(m: &OutlineMessage) -> usize {
    if m.notice {
        return 1;
    }
    match m.role {
        Role::Tool => 0,
        // only an imported conversation has system messages: shown as such, as text
        Role::System | Role::User => 1,
        Role::Assistant => usize::from(has_bubble(m)) + m.calls,
    }
}

/// A reply that only asked for tools has no bubble, just its cards (unless it has siblings: then
/// its bubble carries the switcher).
fn has_bubble(m: &OutlineMessage) -> bool {
    m.has_content || !m.asks_tools || m.has_thinking || m.has_siblings
}

/// Where a page starts.
struct Plan {
    /// Its first message (an index into the branch).
    start: usize,
    /// How many items come before it.
    earlier: usize,
    /// The last user message before it (what its first reply answers).
    reply_to: Option<i64>,
}

/// The page: the last messages that make at least `page` items, reaching further back to
/// `focus` (a message, for a search hit; a tool's result counts as the call's message) when it
/// is earlier.
fn plan(o: &Outline, focus: Option<i64>, page: usize) -> Plan {
    let counts: Vec<usize> = o.messages.iter().map(items_of).collect();
    let (mut start, mut shown) = (counts.len(), 0usize);
    while start > 0 && shown < page {
        start -= 1;
        shown += counts[start];
    }
    let focus = focus.map(|f| o.results.get(&f).copied().unwrap_or(f));
    if let Some(i) = focus.and_then(|f| o.messages.iter().position(|m| m.id == f)) {
        start = start.min(i);
    }
    Plan {
        start,
        earlier: counts[..start].iter().sum(),
        reply_to: o.messages[..start]
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !m.notice)
            .map(|m| m.id),
    }
}

/// The items of `messages` (a tail of the branch) with their cards among `tool_calls`; an
/// assistant's Markdown is rendered. `last_user`: the user message before the first of them.
fn items(
    messages: &[StoredMessage],
    tool_calls: &[StoredToolCall],
    mut last_user: Option<i64>,
) -> Vec<Item> {
    let mut cards: HashMap<i64, Vec<&StoredToolCall>> = HashMap::new();
    for t in tool_calls {
        cards.entry(t.message_id).or_default().push(t);
    }
    // a tool's images are on its result message
    let result_images: HashMap<i64, &Vec<AttachedImage>> = messages
        .iter()
        .filter(|m| m.role == Role::Tool && !m.attachments.is_empty())
        .map(|m| (m.id, &m.attachments))
        .collect();
    let images_of = |t: &StoredToolCall| {
        t.result_message_id
            .and_then(|r| result_images.get(&r))
            .map(|a| a.to_vec())
            .unwrap_or_default()
    };
    let mut items = Vec::new();
    for m in messages {
        let calls = cards.get(&m.id).map_or(&[][..], Vec::as_slice);
        let outline = OutlineMessage::of(m, calls.len());
        if outline.notice {
            items.push(Item::Notice {
                id: m.id,
                notice: m
                    .notice
                    .clone()
                    .unwrap_or_else(|| Notice::from_legacy(&m.content)),
            });
            continue;
        }
        let reply_to = match m.role {
            Role::Tool => continue,
            Role::User => {
                last_user = Some(m.id);
                None
            }
            Role::System => None,
            Role::Assistant => last_user,
        };
        if m.role != Role::Assistant || has_bubble(&outline) {
            let assistant = m.role == Role::Assistant;
            items.push(Item::Message {
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
                attachments: m.attachments.clone(),
                pinned: m.pinned,
            });
        }
        items.extend(calls.iter().map(|t| card(t, images_of(t))));
    }
    items
}

fn view(c: &Conversation, messages: &[StoredMessage], plan: Plan) -> ConversationView {
    ConversationView {
        items: items(messages, &c.tool_calls, plan.reply_to),
        earlier: plan.earlier,
        summary: c.summary.clone(),
        tool_choice: c.tool_choice.clone(),
        settings: c.settings.clone(),
        summarised: c.summarised.clone(),
    }
}

/// The last `page` items (or a few more: a page starts with a whole message) of a conversation
/// already read whole, reaching further back to `focus` when it is earlier.
pub fn conversation_page(c: &Conversation, focus: Option<i64>, page: usize) -> ConversationView {
    let mut outline = Outline {
        messages: c
            .messages
            .iter()
            .map(|m| OutlineMessage::of(m, 0))
            .collect(),
        results: HashMap::new(),
    };
    outline.add_calls(
        c.tool_calls
            .iter()
            .map(|t| (t.message_id, t.result_message_id)),
    );
    let plan = plan(&outline, focus, page);
    view(c, &c.messages[plan.start..], plan)
}

/// [`conversation_page`] read from the store: only the page's messages and tool calls are read
/// whole, so opening a 10,000-message conversation reads and renders its last page, not every
/// reply in it.
pub async fn open_page(
    store: &Store,
    id: i64,
    focus: Option<i64>,
    page: usize,
) -> Result<ConversationView, StoreError> {
    let (c, plan) = store
        .conversation_from(id, move |o| {
            let plan = plan(o, focus, page);
            (plan.start, plan)
        })
        .await?;
    Ok(view(&c, &c.messages, plan))
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

    /// A turn of `store`'s conversation `c`: the user's question, then [`reply`]; the question.
    async fn turn(store: &Store, c: i64, n: usize, think: bool) -> i64 {
        let q = crate::llm::Message::new(Role::User, format!("question {n}"));
        let asked = store
            .append_message(c, &q, MessageStatus::Complete)
            .await
            .unwrap();
        reply(store, c, n, think).await;
        asked
    }

    /// A reply that only asks for a tool (its card), the tool's result, and an answer (with
    /// thinking when `think`).
    async fn reply(store: &Store, c: i64, n: usize, think: bool) {
        use crate::llm::{Message, ToolCall};
        let call = ToolCall {
            id: Some(format!("c{n}")),
            name: "calc__add".into(),
            arguments: serde_json::json!({"a": n}),
            written: None,
        };
        let reply = Message {
            tool_calls: vec![call.clone()],
            ..Message::new(Role::Assistant, "")
        };
        let m = store
            .append_message(c, &reply, MessageStatus::Complete)
            .await
            .unwrap();
        let t = store
            .start_tool_call(c, m, &call, "calc", "add")
            .await
            .unwrap();
        let result = Message::new(Role::Tool, format!("{n}"));
        store
            .finish_tool_call(t, c, &result, &format!("{n}"), None, false, 1)
            .await
            .unwrap();
        let answer = Message {
            thinking: think.then(|| "hm".to_string()),
            ..Message::new(Role::Assistant, format!("answer *{n}*"))
        };
        store
            .append_message(c, &answer, MessageStatus::Complete)
            .await
            .unwrap();
    }

    /// Every page size and every focus: the page read from the store is the page laid out from
    /// the conversation read whole, item for item.
    async fn pages_agree(store: &Store, c: i64) {
        let whole = store.conversation(c).await.unwrap();
        let mut focuses: Vec<Option<i64>> = whole.messages.iter().map(|m| Some(m.id)).collect();
        focuses.extend([None, Some(-1)]);
        let total = conversation_view(&whole).items.len();
        for page in (1..=total + 1).chain([usize::MAX]) {
            for &focus in &focuses {
                let read = open_page(store, c, focus, page).await.unwrap();
                let laid = conversation_page(&whole, focus, page);
                assert_eq!(
                    serde_json::to_value(&read).unwrap(),
                    serde_json::to_value(&laid).unwrap(),
                    "page {page}, focus {focus:?}"
                );
                assert!(
                    read.items.len() >= page.min(total) && read.earlier + read.items.len() <= total
                );
            }
        }
    }

    #[tokio::test]
    async fn a_page_read_from_the_store_is_the_page_of_the_whole_conversation_on_every_branch() {
        let store = Store::open_in_memory().await.unwrap();
        let c = store.create_conversation("t", "m").await.unwrap();
        let first = turn(&store, c, 0, false).await;
        let second = turn(&store, c, 1, true).await;
        store
            .append_notice(c, &Notice::RoundLimit { rounds: 5 })
            .await
            .unwrap();
        turn(&store, c, 2, false).await;
        pages_agree(&store, c).await;
        // a regeneration of the first reply: a sibling, so its tool-only reply has a bubble
        store.branch_after(c, Some(first)).await.unwrap();
        reply(&store, c, 3, false).await;
        let regenerated = store.conversation(c).await.unwrap();
        assert!(regenerated
            .messages
            .iter()
            .any(|m| m.role == Role::Assistant && m.content.is_empty() && m.sibling_count == 2));
        pages_agree(&store, c).await;
        // an edit of the first question (a second root), then back to the older branch
        store.branch_after(c, None).await.unwrap();
        turn(&store, c, 4, true).await;
        pages_agree(&store, c).await;
        store.show_branch(c, second).await.unwrap();
        pages_agree(&store, c).await;
        // an empty conversation has an empty page
        let empty = store.create_conversation("e", "m").await.unwrap();
        let page = open_page(&store, empty, None, PAGE).await.unwrap();
        assert!(page.items.is_empty() && page.earlier == 0);
    }
}
