//! Part of a conversation's shown branch. An outline of every message on it (no text) lets the
//! caller choose where to start; only the messages from there on are read whole. Opening a
//! 10,000-message conversation reads the text, tool calls and sibling counts of its last page,
//! not of every message in it.

use std::collections::{HashMap, HashSet};

use super::conversations::read_branch;
use super::{Conversation, MessageStatus, Store, StoreError, StoredMessage};
use crate::llm::Role;

/// One message of the shown branch without its text: what laying out a page needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineMessage {
    pub id: i64,
    pub role: Role,
    /// A notice from Switchboard (status `notice`).
    pub notice: bool,
    pub has_content: bool,
    pub has_thinking: bool,
    /// The model asked for tools in it.
    pub asks_tools: bool,
    /// Another message has the same parent (an edit or a regeneration).
    pub has_siblings: bool,
    /// How many of the conversation's tool calls it made.
    pub calls: usize,
}

impl OutlineMessage {
    /// The outline of a message read whole, with `calls` tool calls.
    pub fn of(m: &StoredMessage, calls: usize) -> OutlineMessage {
        OutlineMessage {
            id: m.id,
            role: m.role,
            notice: m.status == MessageStatus::Notice,
            has_content: !m.content.is_empty(),
            has_thinking: m.thinking.as_ref().is_some_and(|t| !t.is_empty()),
            asks_tools: !m.tool_calls.is_empty(),
            has_siblings: m.sibling_count > 1,
            calls,
        }
    }
}

/// The shown branch, first message first.
#[derive(Debug, Clone, Default)]
pub struct Outline {
    pub messages: Vec<OutlineMessage>,
    /// A tool's result message → the message whose call it answers.
    pub results: HashMap<i64, i64>,
}

impl Outline {
    /// Counts each message's tool calls and notes which result answers which call. `calls`:
    /// (the message that made a call, its result message); calls of messages not on the branch
    /// are left out.
    pub fn add_calls(&mut self, calls: impl IntoIterator<Item = (i64, Option<i64>)>) {
        let at: HashMap<i64, usize> = self
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id, i))
            .collect();
        for (message, result) in calls {
            if let Some(&i) = at.get(&message) {
                self.messages[i].calls += 1;
                if let Some(result) = result {
                    self.results.insert(result, message);
                }
            }
        }
    }
}

/// The outline's flags, computed as the walk up the branch reads each message (one lookup per
/// message; the text itself is not copied out).
const OUTLINE_COLUMNS: &str = "m.id, m.parent_id, m.role, m.status = ?2, m.content <> '',
    COALESCE(m.thinking, '') <> '', COALESCE(m.tool_calls, '[]') <> '[]'";

fn outline(c: &rusqlite::Connection, id: i64) -> Result<Outline, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "WITH RECURSIVE up(id, parent, role, notice, content, thinking, asks) AS (
            SELECT {OUTLINE_COLUMNS} FROM conversations c JOIN messages m ON m.id = c.leaf_id
            WHERE c.id = ?1
            UNION ALL
            SELECT {OUTLINE_COLUMNS} FROM up JOIN messages m ON m.id = up.parent)
         SELECT * FROM up"
    ))?;
    let mut parents = Vec::new();
    let mut messages = Vec::new();
    let mut rows = st.query(rusqlite::params![id, MessageStatus::Notice])?;
    while let Some(r) = rows.next()? {
        let role = r.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
        parents.push(r.get::<_, Option<i64>>(1)?);
        messages.push(OutlineMessage {
            id: r.get(0)?,
            role: Role::parse(role).unwrap_or(Role::Assistant),
            notice: r.get(3)?,
            has_content: r.get(4)?,
            has_thinking: r.get(5)?,
            asks_tools: r.get(6)?,
            has_siblings: false,
            calls: 0,
        });
    }
    messages.reverse();
    parents.reverse();
    // the parents with more than one child: one pass over the conversation's (covering) index
    // instead of a count per message
    let mut st = c.prepare_cached(
        "SELECT parent_id FROM messages WHERE conversation_id = ?1
         GROUP BY parent_id HAVING COUNT(*) > 1",
    )?;
    let forks = st
        .query_map([id], |r| r.get::<_, Option<i64>>(0))?
        .collect::<Result<HashSet<_>, _>>()?;
    if !forks.is_empty() {
        for (m, parent) in messages.iter_mut().zip(&parents) {
            m.has_siblings = forks.contains(parent);
        }
    }
    let mut outline = Outline {
        messages,
        results: HashMap::new(),
    };
    let mut st = c.prepare_cached(
        "SELECT message_id, result_message_id FROM tool_calls WHERE conversation_id = ?1",
    )?;
    let calls = st
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    outline.add_calls(calls);
    Ok(outline)
}

impl Store {
    /// The conversation with only part of its shown branch: `choose` reads the outline of the
    /// whole branch and says from which message on (an index into it) the messages and their
    /// tool calls are read whole. Returns that conversation and what `choose` returned besides.
    pub async fn conversation_from<T: Send + 'static>(
        &self,
        id: i64,
        choose: impl FnOnce(&Outline) -> (usize, T) + Send + 'static,
    ) -> Result<(Conversation, T), StoreError> {
        self.call(move |c| {
            // one snapshot: another process writing meanwhile (`switchboard chat` on the same
            // store) cannot move the branch between the outline and the rows
            let tx = c.transaction()?;
            let outline = outline(&tx, id)?;
            let (start, chosen) = choose(&outline);
            let wanted = outline.messages.len().saturating_sub(start);
            let conversation = read_branch(&tx, id, wanted as i64)?;
            Ok((conversation, chosen))
        })
        .await
    }
}
