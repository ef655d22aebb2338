//! The library (list, create, rename, pin, delete with undo) and one conversation as a whole: its
//! shown branch with its tool calls, its own settings and its choice of tools.

use std::collections::HashSet;

use rusqlite::{named_params, params, OptionalExtension};

use super::messages::{read_message, MESSAGE_COLUMNS};
use super::schema::SHOWN_PATH;
use super::tool_calls::tool_calls_of;
use super::{
    now_ms, Conversation, ConversationSettings, ConversationSummary, Store, StoreError, ToolChoice,
};

fn read_summary(r: &rusqlite::Row) -> rusqlite::Result<ConversationSummary> {
    let snippet: Option<String> = r.get(7)?;
    Ok(ConversationSummary {
        id: r.get(0)?,
        title: r.get(1)?,
        model: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
        message_count: r.get(5)?,
        pinned: r.get(6)?,
        snippet: snippet.unwrap_or_default(),
        imported: r.get(8)?,
    })
}
/// The snippet is the leaf's text, or its nearest user/assistant ancestor's with text (a tool
/// message or an empty reply at the end is skipped). The leaf is tried first on its own: the walk
/// up is only needed when it has no text, and COALESCE stops at the first answer.
const SUMMARY_SQL: &str = "SELECT c.id, c.title, c.model, c.created_at, c.updated_at,
    (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id), c.pinned,
    COALESCE(
     (SELECT substr(m.content, 1, 160) FROM messages m
      WHERE m.id = c.leaf_id AND m.role IN ('user', 'assistant') AND m.content <> ''),
     (WITH RECURSIVE up(id, parent_id, role, content, depth) AS (
        SELECT m.id, m.parent_id, m.role, m.content, 0 FROM messages m WHERE m.id = c.leaf_id
        UNION ALL
        SELECT m.id, m.parent_id, m.role, m.content, up.depth + 1 FROM messages m JOIN up ON m.id = up.parent_id
        WHERE up.depth < 8)
     SELECT substr(content, 1, 160) FROM up
     WHERE role IN ('user', 'assistant') AND content <> '' ORDER BY depth LIMIT 1)),
    c.imported
    FROM conversations c";
/// The conversation with the last `limit` messages of its shown branch (all: -1) and their tool
/// calls.
pub(super) fn read_branch(
    c: &rusqlite::Connection,
    id: i64,
    limit: i64,
) -> Result<Conversation, StoreError> {
    let (summary, tool_choice, settings) = conversation_head(c, id)?;
    let mut st = c.prepare_cached(&format!(
        "{SHOWN_PATH} SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id IN path ORDER BY m.seq"
    ))?;
    let mut messages = st
        .query_map(
            named_params! {":conversation": id, ":limit": limit},
            read_message,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    super::attachments::fill_branch(c, id, limit, &mut messages)?;
    let read: HashSet<i64> = messages.iter().map(|m| m.id).collect();
    // only the calls of the messages read (the index narrows to ids from the smallest)
    let first = read.iter().min().copied().unwrap_or(i64::MAX);
    let tool_calls = tool_calls_of(c, id, first)?
        .into_iter()
        .filter(|t| read.contains(&t.message_id))
        .collect();
    Ok(Conversation {
        summary,
        messages,
        tool_calls,
        tool_choice,
        settings,
        summarised: super::summaries::of_branch(c, id)?,
    })
}

/// A conversation's summary, choice of tools and settings (no messages).
fn conversation_head(
    c: &rusqlite::Connection,
    id: i64,
) -> Result<(ConversationSummary, ToolChoice, ConversationSettings), StoreError> {
    let summary = c
        .query_row(
            &format!("{SUMMARY_SQL} WHERE c.id = ?1"),
            [id],
            read_summary,
        )
        .optional()?
        .ok_or(StoreError::NoConversation(id))?;
    let (choice, settings): (Option<String>, Option<String>) = c.query_row(
        "SELECT tool_choice, settings FROM conversations WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let tool_choice = choice
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let settings = settings
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    Ok((summary, tool_choice, settings))
}

impl Store {
    pub async fn create_conversation(&self, title: &str, model: &str) -> Result<i64, StoreError> {
        let (title, model) = (title.to_string(), model.to_string());
        self.call(move |c| {
            let now = now_ms();
            c.execute(
                "INSERT INTO conversations (title, model, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
                params![title, model, now],
            )?;
            Ok(c.last_insert_rowid())
        })
        .await
    }

    /// Sets the servers and tools a conversation may use.
    pub async fn set_tool_choice(&self, id: i64, choice: &ToolChoice) -> Result<(), StoreError> {
        let json = serde_json::to_string(choice).unwrap_or_default();
        self.call(move |c| {
            let n = c.execute(
                "UPDATE conversations SET tool_choice = ?2 WHERE id = ?1",
                params![id, json],
            )?;
            if n == 0 {
                return Err(StoreError::NoConversation(id));
            }
            Ok(())
        })
        .await
    }

    /// Newest first.
    pub async fn list_conversations(&self) -> Result<Vec<ConversationSummary>, StoreError> {
        self.call(|c| {
            let mut st = c.prepare_cached(&format!(
                "{SUMMARY_SQL} WHERE c.deleted_at IS NULL ORDER BY c.pinned DESC, c.updated_at DESC, c.id DESC"
            ))?;
            let rows = st
                .query_map([], read_summary)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
    }

    pub async fn conversation(&self, id: i64) -> Result<Conversation, StoreError> {
        self.call(move |c| read_branch(c, id, -1)).await
    }

    pub async fn rename_conversation(&self, id: i64, title: &str) -> Result<(), StoreError> {
        let title = title.trim().to_string();
        self.update_conversation(
            id,
            "UPDATE conversations SET title = ?2 WHERE id = ?1",
            title,
        )
        .await
    }

    pub async fn set_pinned(&self, id: i64, pinned: bool) -> Result<(), StoreError> {
        self.update_conversation(
            id,
            "UPDATE conversations SET pinned = ?2 WHERE id = ?1",
            pinned,
        )
        .await
    }

    /// Hides a conversation (list, search); [`Store::restore_conversation`] brings it back until
    /// the store is opened again, which deletes it for good.
    pub async fn delete_conversation(&self, id: i64) -> Result<(), StoreError> {
        self.update_conversation(
            id,
            "UPDATE conversations SET deleted_at = ?2 WHERE id = ?1",
            now_ms(),
        )
        .await
    }

    pub async fn restore_conversation(&self, id: i64) -> Result<(), StoreError> {
        self.update_conversation(
            id,
            "UPDATE conversations SET deleted_at = ?2 WHERE id = ?1",
            Option::<i64>::None,
        )
        .await
    }

    /// The servers and tools a conversation may use (without loading its messages).
    pub async fn tool_choice(&self, id: i64) -> Result<ToolChoice, StoreError> {
        self.json_column(id, "SELECT tool_choice FROM conversations WHERE id = ?1")
            .await
    }

    /// A conversation's own settings (without loading its messages).
    pub async fn settings(&self, id: i64) -> Result<ConversationSettings, StoreError> {
        self.json_column(id, "SELECT settings FROM conversations WHERE id = ?1")
            .await
    }

    /// A conversation's JSON column read by `sql` (which selects it by `?1`, the id): its value,
    /// or the default when it is empty or no longer reads.
    async fn json_column<T>(&self, id: i64, sql: &'static str) -> Result<T, StoreError>
    where
        T: serde::de::DeserializeOwned + Default + Send + 'static,
    {
        self.call(move |c| {
            let t: Option<String> = c
                .query_row(sql, [id], |r| r.get(0))
                .optional()?
                .ok_or(StoreError::NoConversation(id))?;
            Ok(t.and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default())
        })
        .await
    }

    /// The model the conversation talks to from now on.
    pub async fn set_model(&self, id: i64, model: &str) -> Result<(), StoreError> {
        self.update_conversation(
            id,
            "UPDATE conversations SET model = ?2 WHERE id = ?1",
            model.to_string(),
        )
        .await
    }

    pub async fn set_settings(
        &self,
        id: i64,
        settings: &ConversationSettings,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(settings).unwrap_or_default();
        self.update_conversation(
            id,
            "UPDATE conversations SET settings = ?2 WHERE id = ?1",
            json,
        )
        .await
    }

    async fn update_conversation<V: rusqlite::ToSql + Send + 'static>(
        &self,
        id: i64,
        sql: &'static str,
        value: V,
    ) -> Result<(), StoreError> {
        self.call(move |c| {
            if c.execute(sql, params![id, value])? == 0 {
                return Err(StoreError::NoConversation(id));
            }
            Ok(())
        })
        .await
    }
}
