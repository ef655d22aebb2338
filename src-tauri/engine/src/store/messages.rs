//! Messages form a tree: edits and regenerations are siblings, and a conversation shows the path
//! from its first message to its leaf. Appending always continues the shown branch.

use rusqlite::{named_params, params, OptionalExtension};

use super::schema::SHOWN_PATH;
use super::{now_ms, MessageStatus, Notice, Store, StoreError, StoredMessage};
use crate::llm::{Message, Role};

pub(super) fn read_message(r: &rusqlite::Row) -> rusqlite::Result<StoredMessage> {
    let role: String = r.get(2)?;
    let calls: Option<String> = r.get(5)?;
    Ok(StoredMessage {
        id: r.get(0)?,
        seq: r.get(1)?,
        role: Role::parse(&role).unwrap_or(Role::Assistant),
        content: r.get(3)?,
        thinking: r.get(4)?,
        tool_calls: calls
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or_default(),
        tool_name: r.get(6)?,
        tool_call_id: r.get(7)?,
        status: r.get(8)?,
        attachments: vec![],
        notice: r
            .get::<_, Option<String>>(13)?
            .and_then(|n| serde_json::from_str::<Notice>(&n).ok()),
        created_at: r.get(9)?,
        parent_id: r.get(10)?,
        sibling_index: r.get(11)?,
        sibling_count: r.get(12)?,
        pinned: r.get(14)?,
    })
}
/// The columns `read_message` reads, for `messages m`.
pub(super) const MESSAGE_COLUMNS: &str =
    "m.id, m.seq, m.role, m.content, m.thinking, m.tool_calls, m.tool_name,
    m.tool_call_id, m.status, m.created_at, m.parent_id,
    (SELECT COUNT(*) FROM messages s WHERE s.conversation_id = m.conversation_id
        AND s.parent_id IS m.parent_id AND s.id < m.id),
    (SELECT COUNT(*) FROM messages s WHERE s.conversation_id = m.conversation_id
        AND s.parent_id IS m.parent_id),
    m.notice, m.pinned";
/// Appends `m` to the shown branch of a conversation (it becomes the leaf), inside the caller's
/// transaction; returns its id.
pub(super) fn insert(
    tx: &rusqlite::Transaction,
    conversation_id: i64,
    m: &Message,
    status: MessageStatus,
    notice: Option<&str>,
) -> Result<i64, StoreError> {
    let now = now_ms();
    let seq: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
        [conversation_id],
        |r| r.get(0),
    )?;
    let calls = (!m.tool_calls.is_empty()).then(|| serde_json::to_string(&m.tool_calls).unwrap());
    let parent: Option<i64> = tx
        .query_row(
            "SELECT leaf_id FROM conversations WHERE id = ?1",
            [conversation_id],
            |r| r.get(0),
        )
        .optional()?
        .ok_or(StoreError::NoConversation(conversation_id))?;
    tx.execute(
        "INSERT INTO messages (conversation_id, seq, role, content, thinking, tool_calls, tool_name,
            tool_call_id, status, created_at, parent_id, notice)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            conversation_id, seq, m.role.as_str(), m.content, m.thinking, calls, m.tool_name,
            m.tool_call_id, status, now, parent, notice
        ],
    )?;
    let id = tx.last_insert_rowid();
    super::attachments::link(
        tx,
        id,
        m.images.iter().map(|i| (i.sha256.clone(), i.name.clone())),
    )?;
    tx.execute(
        "UPDATE conversations SET updated_at = ?1, leaf_id = ?3 WHERE id = ?2",
        params![now, conversation_id, id],
    )?;
    Ok(id)
}

impl Store {
    /// Appends a message to a conversation; returns its id.
    pub async fn append_message(
        &self,
        conversation_id: i64,
        m: &Message,
        status: MessageStatus,
    ) -> Result<i64, StoreError> {
        self.insert_message(conversation_id, m.clone(), status, None)
            .await
    }

    /// Appends a note from Switchboard (never sent to the model); returns its id.
    pub async fn append_notice(
        &self,
        conversation_id: i64,
        notice: &Notice,
    ) -> Result<i64, StoreError> {
        let json = serde_json::to_string(notice).expect("a notice serializes");
        let m = Message::new(Role::Assistant, "");
        self.insert_message(conversation_id, m, MessageStatus::Notice, Some(json))
            .await
    }

    async fn insert_message(
        &self,
        conversation_id: i64,
        m: Message,
        status: MessageStatus,
        notice: Option<String>,
    ) -> Result<i64, StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            let id = insert(&tx, conversation_id, &m, status, notice.as_deref())?;
            tx.commit()?;
            Ok(id)
        })
        .await
    }

    /// Rewrites a message's text, thinking, tool calls and status (used while and after it streams).
    pub async fn update_message(
        &self,
        id: i64,
        m: &Message,
        status: MessageStatus,
    ) -> Result<(), StoreError> {
        let m = m.clone();
        self.call(move |c| {
            let calls = (!m.tool_calls.is_empty()).then(|| serde_json::to_string(&m.tool_calls).unwrap());
            c.execute(
                "UPDATE messages SET content = ?1, thinking = ?2, tool_calls = ?3, status = ?4 WHERE id = ?5",
                params![m.content, m.thinking, calls, status, id],
            )?;
            Ok(())
        })
        .await
    }

    /// Deletes a message (and what hangs below it); a conversation whose leaf it was shows its
    /// parent from now on.
    pub async fn delete_message(&self, id: i64) -> Result<(), StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            // it and everything below it; a leaf among them moves up to its parent
            const BELOW: &str = "WITH RECURSIVE below(id) AS (
                SELECT ?1 UNION ALL SELECT m.id FROM messages m JOIN below ON m.parent_id = below.id)";
            tx.execute(
                &format!(
                    "{BELOW} UPDATE conversations SET leaf_id = (SELECT parent_id FROM messages WHERE id = ?1)
                     WHERE leaf_id IN below"
                ),
                [id],
            )?;
            tx.execute(&format!("{BELOW} DELETE FROM messages WHERE id IN below"), [id])?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Makes sure `message_id` is shown: when it is on the shown branch already nothing changes;
    /// otherwise [`Store::show_branch`] (a search hit on another branch).
    pub async fn reveal(&self, conversation_id: i64, message_id: i64) -> Result<(), StoreError> {
        let shown = self.call(move |c| {
            let on: Option<i64> = c
                .query_row(
                    &format!("{SHOWN_PATH} SELECT id FROM path WHERE id = :message"),
                    named_params! {":conversation": conversation_id, ":limit": -1, ":message": message_id},
                    |r| r.get(0),
                )
                .optional()?;
            Ok(on.is_some())
        })
        .await?;
        if shown {
            Ok(())
        } else {
            self.show_branch(conversation_id, message_id).await
        }
    }

    /// Shows the branch through `message_id`: the leaf becomes its newest descendant (the newest
    /// child at each step), or the message itself.
    pub async fn show_branch(
        &self,
        conversation_id: i64,
        message_id: i64,
    ) -> Result<(), StoreError> {
        self.call(move |c| {
            let leaf: i64 = c
                .query_row(
                    "WITH RECURSIVE down(id, depth) AS (
                    SELECT id, 0 FROM messages WHERE id = ?1 AND conversation_id = ?2
                    UNION ALL
                    SELECT (SELECT MAX(m.id) FROM messages m WHERE m.parent_id = down.id), depth + 1
                    FROM down WHERE EXISTS (SELECT 1 FROM messages m WHERE m.parent_id = down.id))
                 SELECT id FROM down ORDER BY depth DESC LIMIT 1",
                    params![message_id, conversation_id],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or(StoreError::NoMessage(message_id))?;
            c.execute(
                "UPDATE conversations SET leaf_id = ?1 WHERE id = ?2",
                params![leaf, conversation_id],
            )?;
            Ok(())
        })
        .await
    }

    /// The next message appended goes right after `parent` (`None`: at the start), as a sibling of
    /// what follows it there: this is how an edit or a regeneration starts a branch.
    pub async fn branch_after(
        &self,
        conversation_id: i64,
        parent: Option<i64>,
    ) -> Result<(), StoreError> {
        self.call(move |c| {
            if let Some(p) = parent {
                let ok: Option<i64> = c
                    .query_row(
                        "SELECT id FROM messages WHERE id = ?1 AND conversation_id = ?2",
                        params![p, conversation_id],
                        |r| r.get(0),
                    )
                    .optional()?;
                ok.ok_or(StoreError::NoMessage(p))?;
            }
            let n = c.execute(
                "UPDATE conversations SET leaf_id = ?1 WHERE id = ?2",
                params![parent, conversation_id],
            )?;
            if n == 0 {
                return Err(StoreError::NoConversation(conversation_id));
            }
            Ok(())
        })
        .await
    }

    /// The sibling `step` places from `message_id` (edits and regenerations of the same point),
    /// clamped to the first and last; the message itself for step 0.
    pub async fn sibling(&self, message_id: i64, step: i64) -> Result<i64, StoreError> {
        self.call(move |c| {
            let mut st = c.prepare_cached(
                "SELECT s.id FROM messages m JOIN messages s
                   ON s.conversation_id = m.conversation_id AND s.parent_id IS m.parent_id
                 WHERE m.id = ?1 ORDER BY s.id",
            )?;
            let ids: Vec<i64> = st
                .query_map([message_id], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let at = ids
                .iter()
                .position(|&i| i == message_id)
                .ok_or(StoreError::NoMessage(message_id))?;
            let to = (at as i64 + step).clamp(0, ids.len() as i64 - 1) as usize;
            Ok(ids[to])
        })
        .await
    }

    /// Pins a message (it is always sent to the model whole, however long the conversation
    /// grows), or unpins it.
    pub async fn set_message_pinned(&self, id: i64, pinned: bool) -> Result<(), StoreError> {
        self.call(move |c| {
            if c.execute(
                "UPDATE messages SET pinned = ?2 WHERE id = ?1",
                params![id, pinned],
            )? == 0
            {
                return Err(StoreError::NoMessage(id));
            }
            Ok(())
        })
        .await
    }

    /// One message, wherever it is in the tree (with the images it carries).
    pub async fn message(&self, id: i64) -> Result<StoredMessage, StoreError> {
        self.call(move |c| {
            let mut m = c
                .query_row(
                    &format!("SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?1"),
                    [id],
                    read_message,
                )
                .optional()?
                .ok_or(StoreError::NoMessage(id))?;
            super::attachments::fill_one(c, &mut m)?;
            Ok(m)
        })
        .await
    }
}
