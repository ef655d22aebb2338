//! The conversation store: SQLite (WAL) with versioned migrations. Each message is written as
//! soon as it exists and updated as it streams, so an interrupted stream leaves its partial text.

use std::path::Path;

use rusqlite::{params, OptionalExtension};
use rusqlite_migration::{Migrations, M};
use serde::Serialize;
use serde_json::Value;

use crate::llm::{Message, Role, ToolCall};

pub mod debug;
pub mod exchange;
pub mod search;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("the database connection is closed")]
    Closed,
    #[error("no conversation with id {0}")]
    NoConversation(i64),
    #[error("no message with id {0}")]
    NoMessage(i64),
    #[error("{0}")]
    Import(String),
}

impl From<tokio_rusqlite::Error<StoreError>> for StoreError {
    fn from(e: tokio_rusqlite::Error<StoreError>) -> Self {
        match e {
            tokio_rusqlite::Error::Error(e) => e,
            _ => StoreError::Closed,
        }
    }
}

/// Message status values.
pub mod status {
    /// Being streamed right now (only while a turn runs).
    pub const STREAMING: &str = "streaming";
    pub const COMPLETE: &str = "complete";
    /// The user stopped it; the text is partial.
    pub const STOPPED: &str = "stopped";
    /// The app ended while it streamed; the text is what had arrived.
    pub const INTERRUPTED: &str = "interrupted";
    /// The LLM failed mid-reply; the text is what had arrived.
    pub const ERROR: &str = "error";
    /// A note from Switchboard to the user (e.g. the iteration limit); never sent to the model.
    pub const NOTICE: &str = "notice";
}

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(
            r#"
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            title TEXT NOT NULL,
            model TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX conversations_updated ON conversations(updated_at DESC);
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('system','user','assistant','tool')),
            content TEXT NOT NULL DEFAULT '',
            thinking TEXT,
            tool_calls TEXT,
            tool_name TEXT,
            tool_call_id TEXT,
            status TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (conversation_id, seq)
        );
        CREATE TABLE tool_calls (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            result_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
            call_id TEXT,
            name TEXT NOT NULL,
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            arguments TEXT NOT NULL,
            result TEXT,
            result_raw TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            duration_ms INTEGER
        );
        CREATE INDEX tool_calls_message ON tool_calls(message_id);
        "#,
        ),
        // how the call came to run or not: "read-only", "approved", "denied", …
        M::up("ALTER TABLE tool_calls ADD COLUMN approval TEXT;"),
        // the servers and tools turned off for one conversation (JSON; NULL = everything on)
        M::up("ALTER TABLE conversations ADD COLUMN tool_choice TEXT;"),
        // messages form a tree (edits and regenerations are siblings); the conversation shows the
        // path to its leaf. Pins, deletion that can be undone, per-conversation settings, and
        // full-text search over messages and tool calls.
        M::up(search::MIGRATION_TREE_AND_SEARCH),
        // the debug view: the exact request and response of recent LLM calls
        M::up(
            "CREATE TABLE llm_calls (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
                model TEXT NOT NULL,
                request TEXT NOT NULL,
                response TEXT NOT NULL,
                error TEXT,
                started_at INTEGER NOT NULL,
                duration_ms INTEGER NOT NULL
            );
            CREATE INDEX llm_calls_conversation ON llm_calls(conversation_id, id);",
        ),
    ])
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
    pub status: String,
    pub created_at: i64,
    pub parent_id: Option<i64>,
    /// Its place among the messages with the same parent (edits and regenerations), from 0.
    pub sibling_index: i64,
    pub sibling_count: i64,
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
    pub status: String,
    pub started_at: i64,
    pub duration_ms: Option<i64>,
    pub approval: Option<String>,
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
}

/// One conversation's own settings; `None` = the app-wide default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConversationSettings {
    pub system_prompt: Option<String>,
    pub temperature: Option<f64>,
    pub num_ctx: Option<u32>,
    /// The provider the conversation talks to (its id in the settings).
    pub provider: Option<String>,
}

/// Which servers and tools one conversation may use: everything, except what is turned off.
/// Tools are named `server/tool` (their own names, which stay put when exposed names change).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolChoice {
    pub disabled_servers: std::collections::BTreeSet<String>,
    pub disabled_tools: std::collections::BTreeSet<String>,
}

impl ToolChoice {
    pub fn allows(&self, server: &str, tool: &str) -> bool {
        !self.disabled_servers.contains(server)
            && !self.disabled_tools.contains(&format!("{server}/{tool}"))
    }
}

impl StoredMessage {
    /// The message as the model sees it.
    pub fn to_llm(&self) -> Message {
        Message {
            role: self.role,
            content: self.content.clone(),
            thinking: self.thinking.clone(),
            tool_calls: self.tool_calls.clone(),
            tool_name: self.tool_name.clone(),
            tool_call_id: self.tool_call_id.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Store {
    conn: tokio_rusqlite::Connection,
}

fn setup(conn: &mut rusqlite::Connection) -> Result<(), StoreError> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    migrations().to_latest(conn)?;
    // a stream that was running when the app ended is no longer streaming
    conn.execute(
        "UPDATE messages SET status = ?1 WHERE status = ?2",
        params![status::INTERRUPTED, status::STREAMING],
    )?;
    // conversations deleted (and not restored) in an earlier run are gone for good
    conn.execute("DELETE FROM conversations WHERE deleted_at IS NOT NULL", [])?;
    conn.execute(
        "UPDATE tool_calls SET status = 'interrupted', is_error = 1,
            result = COALESCE(result, 'The app ended before the tool answered.') WHERE status = 'running'",
        [],
    )?;
    Ok(())
}

fn read_message(r: &rusqlite::Row) -> rusqlite::Result<StoredMessage> {
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
        created_at: r.get(9)?,
        parent_id: r.get(10)?,
        sibling_index: r.get(11)?,
        sibling_count: r.get(12)?,
    })
}

/// Every tool call of a conversation, in the order they were made.
fn tool_calls_of(
    c: &rusqlite::Connection,
    conversation_id: i64,
) -> rusqlite::Result<Vec<StoredToolCall>> {
    let mut st = c.prepare_cached(
        "SELECT id, message_id, result_message_id, call_id, name, server, tool, arguments, result, result_raw,
                is_error, status, started_at, duration_ms, approval
         FROM tool_calls WHERE conversation_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map([conversation_id], |r| {
        let args: String = r.get(7)?;
        let raw: Option<String> = r.get(9)?;
        Ok(StoredToolCall {
            id: r.get(0)?,
            message_id: r.get(1)?,
            result_message_id: r.get(2)?,
            call_id: r.get(3)?,
            name: r.get(4)?,
            server: r.get(5)?,
            tool: r.get(6)?,
            arguments: serde_json::from_str(&args).unwrap_or(Value::String(args)),
            result: r.get(8)?,
            result_raw: raw.and_then(|s| serde_json::from_str(&s).ok()),
            is_error: r.get(10)?,
            status: r.get(11)?,
            started_at: r.get(12)?,
            duration_ms: r.get(13)?,
            approval: r.get(14)?,
        })
    })?;
    rows.collect()
}

/// The columns `read_message` reads, for `messages m`.
const MESSAGE_COLUMNS: &str =
    "m.id, m.seq, m.role, m.content, m.thinking, m.tool_calls, m.tool_name,
    m.tool_call_id, m.status, m.created_at, m.parent_id,
    (SELECT COUNT(*) FROM messages s WHERE s.conversation_id = m.conversation_id
        AND s.parent_id IS m.parent_id AND s.id < m.id),
    (SELECT COUNT(*) FROM messages s WHERE s.conversation_id = m.conversation_id
        AND s.parent_id IS m.parent_id)";

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
     WHERE role IN ('user', 'assistant') AND content <> '' ORDER BY depth LIMIT 1))
    FROM conversations c";

impl Store {
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = tokio_rusqlite::Connection::open(path).await?;
        conn.call(setup).await?;
        Ok(Store { conn })
    }

    pub async fn open_in_memory() -> Result<Store, StoreError> {
        let conn = tokio_rusqlite::Connection::open_in_memory().await?;
        conn.call(setup).await?;
        Ok(Store { conn })
    }

    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        Ok(self.conn.call(f).await?)
    }

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
        self.call(move |c| {
            let summary = c
                .query_row(&format!("{SUMMARY_SQL} WHERE c.id = ?1"), [id], read_summary)
                .optional()?
                .ok_or(StoreError::NoConversation(id))?;
            let mut st = c.prepare_cached(&format!(
                "WITH RECURSIVE path(id) AS (
                    SELECT leaf_id FROM conversations WHERE id = ?1 AND leaf_id IS NOT NULL
                    UNION ALL
                    SELECT m.parent_id FROM messages m JOIN path ON m.id = path.id WHERE m.parent_id IS NOT NULL)
                 SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id IN path ORDER BY m.seq"
            ))?;
            let messages = st.query_map([id], read_message)?.collect::<Result<Vec<_>, _>>()?;
            let on_path: std::collections::HashSet<i64> = messages.iter().map(|m| m.id).collect();
            let tool_calls = tool_calls_of(c, id)?
                .into_iter()
                .filter(|t| on_path.contains(&t.message_id))
                .collect();
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
            Ok(Conversation { summary, messages, tool_calls, tool_choice, settings })
        })
        .await
    }

    /// Appends a message to a conversation; returns its id.
    pub async fn append_message(
        &self,
        conversation_id: i64,
        m: &Message,
        status: &str,
    ) -> Result<i64, StoreError> {
        let m = m.clone();
        let status = status.to_string();
        self.call(move |c| {
            let tx = c.transaction()?;
            let now = now_ms();
            let seq: i64 = tx.query_row(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
                [conversation_id],
                |r| r.get(0),
            )?;
            let calls = (!m.tool_calls.is_empty()).then(|| serde_json::to_string(&m.tool_calls).unwrap());
            let parent: Option<i64> = tx
                .query_row("SELECT leaf_id FROM conversations WHERE id = ?1", [conversation_id], |r| r.get(0))
                .optional()?
                .ok_or(StoreError::NoConversation(conversation_id))?;
            tx.execute(
                "INSERT INTO messages (conversation_id, seq, role, content, thinking, tool_calls, tool_name, tool_call_id, status, created_at, parent_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![conversation_id, seq, m.role.as_str(), m.content, m.thinking, calls, m.tool_name, m.tool_call_id, status, now, parent],
            )?;
            let id = tx.last_insert_rowid();
            tx.execute(
                "UPDATE conversations SET updated_at = ?1, leaf_id = ?3 WHERE id = ?2",
                params![now, conversation_id, id],
            )?;
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
        status: &str,
    ) -> Result<(), StoreError> {
        let m = m.clone();
        let status = status.to_string();
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
                    "WITH RECURSIVE path(id) AS (
                        SELECT leaf_id FROM conversations WHERE id = ?1 AND leaf_id IS NOT NULL
                        UNION ALL
                        SELECT m.parent_id FROM messages m JOIN path ON m.id = path.id WHERE m.parent_id IS NOT NULL)
                     SELECT id FROM path WHERE id = ?2",
                    params![conversation_id, message_id],
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

    /// One message, wherever it is in the tree.
    pub async fn message(&self, id: i64) -> Result<StoredMessage, StoreError> {
        self.call(move |c| {
            c.query_row(
                &format!("SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?1"),
                [id],
                read_message,
            )
            .optional()?
            .ok_or(StoreError::NoMessage(id))
        })
        .await
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

    /// A conversation's own settings (without loading its messages).
    pub async fn settings(&self, id: i64) -> Result<ConversationSettings, StoreError> {
        self.call(move |c| {
            let t: Option<String> = c
                .query_row(
                    "SELECT settings FROM conversations WHERE id = ?1",
                    [id],
                    |r| r.get(0),
                )
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

    #[allow(clippy::too_many_arguments)]
    pub async fn start_tool_call(
        &self,
        conversation_id: i64,
        message_id: i64,
        call_id: Option<&str>,
        name: &str,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<i64, StoreError> {
        let (call_id, name, server, tool) = (
            call_id.map(String::from),
            name.to_string(),
            server.to_string(),
            tool.to_string(),
        );
        let args = serde_json::to_string(arguments).unwrap();
        self.call(move |c| {
            c.execute(
                "INSERT INTO tool_calls (conversation_id, message_id, call_id, name, server, tool, arguments, status, started_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8)",
                params![conversation_id, message_id, call_id, name, server, tool, args, now_ms()],
            )?;
            Ok(c.last_insert_rowid())
        })
        .await
    }

    pub async fn set_tool_call_approval(&self, id: i64, approval: &str) -> Result<(), StoreError> {
        let approval = approval.to_string();
        self.call(move |c| {
            c.execute(
                "UPDATE tool_calls SET approval = ?1 WHERE id = ?2",
                params![approval, id],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn set_tool_call_arguments(
        &self,
        id: i64,
        arguments: &Value,
    ) -> Result<(), StoreError> {
        let args = serde_json::to_string(arguments).unwrap();
        self.call(move |c| {
            c.execute(
                "UPDATE tool_calls SET arguments = ?1 WHERE id = ?2",
                params![args, id],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn finish_tool_call(
        &self,
        id: i64,
        result: &str,
        result_raw: Option<&Value>,
        is_error: bool,
        duration_ms: i64,
        result_message_id: Option<i64>,
    ) -> Result<(), StoreError> {
        let result = result.to_string();
        let raw = result_raw.map(|v| serde_json::to_string(v).unwrap());
        self.call(move |c| {
            c.execute(
                "UPDATE tool_calls SET result = ?1, result_raw = ?2, is_error = ?3, duration_ms = ?4,
                    result_message_id = ?5, status = 'done' WHERE id = ?6",
                params![result, raw, is_error, duration_ms, result_message_id, id],
            )?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn messages_and_tool_calls_round_trip_and_streaming_becomes_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let s = Store::open(&path).await.unwrap();
        let c = s.create_conversation("t", "m").await.unwrap();
        let u = s
            .append_message(c, &Message::new(Role::User, "hi"), status::COMPLETE)
            .await
            .unwrap();
        let mut a = Message::new(Role::Assistant, "");
        let aid = s.append_message(c, &a, status::STREAMING).await.unwrap();
        a.content = "part".into();
        a.tool_calls = vec![ToolCall {
            id: Some("c1".into()),
            name: "x__y".into(),
            arguments: json!({"a": 1}),
        }];
        s.update_message(aid, &a, status::STREAMING).await.unwrap();
        let tc = s
            .start_tool_call(c, aid, Some("c1"), "x__y", "x", "y", &json!({"a": 1}))
            .await
            .unwrap();
        drop(s);
        // reopen: as after a crash
        let s = Store::open(&path).await.unwrap();
        let conv = s.conversation(c).await.unwrap();
        assert_eq!(conv.messages.len(), 2);
        assert_eq!(conv.messages[0].id, u);
        assert_eq!(conv.messages[1].content, "part");
        assert_eq!(conv.messages[1].status, status::INTERRUPTED);
        assert_eq!(conv.messages[1].tool_calls[0].arguments, json!({"a": 1}));
        assert_eq!(conv.tool_calls[0].id, tc);
        assert_eq!(conv.tool_calls[0].status, "interrupted");
        assert!(conv.tool_calls[0].is_error);
        assert_eq!(s.list_conversations().await.unwrap()[0].message_count, 2);
        assert!(matches!(
            s.conversation(999).await,
            Err(StoreError::NoConversation(999))
        ));
    }

    async fn path(s: &Store, c: i64) -> Vec<(i64, i64, i64)> {
        s.conversation(c)
            .await
            .unwrap()
            .messages
            .iter()
            .map(|m| (m.id, m.sibling_index, m.sibling_count))
            .collect()
    }

    #[tokio::test]
    async fn edits_and_regenerations_are_branches_and_the_leaf_picks_the_shown_one() {
        let s = Store::open_in_memory().await.unwrap();
        let c = s.create_conversation("t", "m").await.unwrap();
        let msg = |r, t: &str| Message::new(r, t);
        let u1 = s
            .append_message(c, &msg(Role::User, "hello"), status::COMPLETE)
            .await
            .unwrap();
        let a1 = s
            .append_message(c, &msg(Role::Assistant, "hi"), status::COMPLETE)
            .await
            .unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 1), (a1, 0, 1)]);
        // edit the first message: a sibling at the root
        s.branch_after(c, None).await.unwrap();
        let u2 = s
            .append_message(c, &msg(Role::User, "hello again"), status::COMPLETE)
            .await
            .unwrap();
        let a2 = s
            .append_message(c, &msg(Role::Assistant, "hey"), status::COMPLETE)
            .await
            .unwrap();
        assert_eq!(path(&s, c).await, vec![(u2, 1, 2), (a2, 0, 1)]);
        assert_eq!(s.message(a2).await.unwrap().parent_id, Some(u2));
        assert_eq!(s.sibling(u2, -1).await.unwrap(), u1);
        assert_eq!(s.sibling(u2, -5).await.unwrap(), u1, "clamped");
        assert_eq!(s.sibling(u1, 1).await.unwrap(), u2);
        assert_eq!(s.sibling(a2, 1).await.unwrap(), a2, "an only child");
        // back to the first branch, to its newest end
        s.show_branch(c, u1).await.unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a1, 0, 1)]);
        // regenerate the reply to u1: a sibling of a1
        s.branch_after(c, Some(u1)).await.unwrap();
        let a3 = s
            .append_message(c, &msg(Role::Assistant, "hi, v2"), status::COMPLETE)
            .await
            .unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a3, 1, 2)]);
        s.show_branch(c, a1).await.unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a1, 0, 2)]);
        // revealing a message already shown changes nothing (a search hit on the shown branch)...
        s.reveal(c, u1).await.unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a1, 0, 2)]);
        // ...one on another branch shows that branch
        s.reveal(c, a3).await.unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a3, 1, 2)]);
        s.show_branch(c, a1).await.unwrap();
        // showing u1's branch again follows its newest child
        s.show_branch(c, u1).await.unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a3, 1, 2)]);
        // deleting the leaf shows its parent
        s.delete_message(a3).await.unwrap();
        assert_eq!(path(&s, c).await, vec![(u1, 0, 2)]);
        assert_eq!(s.list_conversations().await.unwrap()[0].message_count, 4);
        // a message of another conversation is refused
        let other = s.create_conversation("o", "m").await.unwrap();
        assert!(matches!(
            s.branch_after(other, Some(u1)).await,
            Err(StoreError::NoMessage(_))
        ));
        assert!(matches!(
            s.show_branch(other, u1).await,
            Err(StoreError::NoMessage(_))
        ));
    }

    #[tokio::test]
    async fn search_finds_text_and_tool_calls_follows_edits_and_skips_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let s = Store::open(&path).await.unwrap();
        let c = s.create_conversation("Otters", "m").await.unwrap();
        let other = s.create_conversation("Other", "m").await.unwrap();
        s.append_message(
            c,
            &Message::new(Role::User, "Tell me how the otter swims"),
            status::COMPLETE,
        )
        .await
        .unwrap();
        let a = s
            .append_message(c, &Message::new(Role::Assistant, ""), status::STREAMING)
            .await
            .unwrap();
        let tc = s
            .start_tool_call(
                c,
                a,
                None,
                "web__lookup",
                "web",
                "lookup",
                &json!({"city": "Lisbon"}),
            )
            .await
            .unwrap();
        s.finish_tool_call(tc, "The lighthouse keeper says hello", None, false, 5, None)
            .await
            .unwrap();
        s.update_message(
            a,
            &Message::new(Role::Assistant, "Paddling with its tail."),
            status::COMPLETE,
        )
        .await
        .unwrap();
        let hits = s.search("otter", 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(
            (hits[0].conversation_id, hits[0].kind.as_str()),
            (c, "message")
        );
        assert!(
            hits[0]
                .snippet
                .contains(&format!("{}otter{}", search::MARK_START, search::MARK_END)),
            "{:?}",
            hits[0]
        );
        // words inside a tool result and inside the arguments, by prefix; the hit names the message
        let hits = s.search("lighthouse", 10).await.unwrap();
        assert_eq!(
            (hits.len(), hits[0].kind.as_str(), hits[0].message_id),
            (1, "tool", a)
        );
        assert_eq!(s.search("lisb", 10).await.unwrap().len(), 1);
        // the streamed text was indexed as it changed: the final text, not the empty start
        assert_eq!(
            s.search("paddling tail", 10).await.unwrap()[0].message_id,
            a
        );
        s.update_message(
            a,
            &Message::new(Role::Assistant, "Rewritten."),
            status::COMPLETE,
        )
        .await
        .unwrap();
        assert!(s.search("paddling", 10).await.unwrap().is_empty());
        assert!(
            s.search("\"(*", 10).await.unwrap().is_empty(),
            "odd input is no error"
        );
        // pinned first, deleted hidden, restore brings it back
        s.set_pinned(other, true).await.unwrap();
        let ids: Vec<i64> = s
            .list_conversations()
            .await
            .unwrap()
            .iter()
            .map(|x| x.id)
            .collect();
        assert_eq!(ids, vec![other, c]);
        s.delete_conversation(c).await.unwrap();
        assert!(s.search("otter", 10).await.unwrap().is_empty());
        assert_eq!(s.list_conversations().await.unwrap().len(), 1);
        s.restore_conversation(c).await.unwrap();
        assert_eq!(s.search("otter", 10).await.unwrap().len(), 1);
        let listed = s.list_conversations().await.unwrap();
        assert_eq!(listed[1].snippet, "Rewritten.");
        // a leaf without text of its own (a tool result, an empty reply): the nearest text above
        s.append_message(
            c,
            &Message::new(Role::Tool, "tool output"),
            status::COMPLETE,
        )
        .await
        .unwrap();
        s.append_message(c, &Message::new(Role::Assistant, ""), status::COMPLETE)
            .await
            .unwrap();
        let listed = s.list_conversations().await.unwrap();
        assert_eq!(listed[1].snippet, "Rewritten.");
        s.rename_conversation(c, "  Sea otters ").await.unwrap();
        assert_eq!(s.conversation(c).await.unwrap().summary.title, "Sea otters");
        // deleted and not restored: gone when the store opens next, index rows too
        s.delete_conversation(c).await.unwrap();
        drop(s);
        let s = Store::open(&path).await.unwrap();
        assert!(matches!(
            s.conversation(c).await,
            Err(StoreError::NoConversation(_))
        ));
        let left: i64 = s
            .call(|c| Ok(c.query_row("SELECT COUNT(*) FROM search", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!(left, 0);
    }

    #[tokio::test]
    async fn a_database_from_before_branches_becomes_one_branch_and_is_searchable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        {
            let mut conn = rusqlite::Connection::open(&path).unwrap();
            migrations().to_version(&mut conn, 3).unwrap();
            conn.execute_batch(
                "INSERT INTO conversations (id, title, model, created_at, updated_at) VALUES (7, 'old', 'm', 1, 1);
                 INSERT INTO messages (id, conversation_id, seq, role, content, status, created_at)
                   VALUES (10, 7, 1, 'user', 'quokka question', 'complete', 1),
                          (11, 7, 2, 'assistant', '', 'complete', 1),
                          (12, 7, 3, 'tool', 'tool said wombat', 'complete', 1),
                          (13, 7, 4, 'assistant', 'answer', 'complete', 1);
                 INSERT INTO tool_calls (conversation_id, message_id, name, server, tool, arguments, result, status, started_at)
                   VALUES (7, 11, 'z__w', 'z', 'w', '{}', 'tool said wombat', 'done', 1);",
            )
            .unwrap();
        }
        let s = Store::open(&path).await.unwrap();
        let conv = s.conversation(7).await.unwrap();
        let ids: Vec<i64> = conv.messages.iter().map(|m| m.id).collect();
        assert_eq!(ids, vec![10, 11, 12, 13]);
        assert_eq!(conv.messages[3].parent_id, Some(12));
        assert_eq!(conv.tool_calls.len(), 1);
        assert_eq!(s.search("quokka", 5).await.unwrap()[0].message_id, 10);
        assert_eq!(s.search("wombat", 5).await.unwrap()[0].kind, "tool");
        // appending continues the branch
        let next = s
            .append_message(7, &Message::new(Role::User, "more"), status::COMPLETE)
            .await
            .unwrap();
        assert_eq!(s.message(next).await.unwrap().parent_id, Some(13));
    }

    /// A long conversation (a chain of 3,000 messages) is deleted and purged in one go: no cascade
    /// runs along the chain (SQLite allows 1,000 trigger levels).
    #[tokio::test]
    async fn a_very_long_conversation_can_be_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let s = Store::open(&path).await.unwrap();
        let c = s.create_conversation("long", "m").await.unwrap();
        let mut ids = vec![];
        for i in 0..3000 {
            ids.push(
                s.append_message(
                    c,
                    &Message::new(Role::User, format!("m{i}")),
                    status::COMPLETE,
                )
                .await
                .unwrap(),
            );
        }
        // a subtree: the last 10 go with their ancestor
        s.delete_message(ids[2990]).await.unwrap();
        assert_eq!(s.conversation(c).await.unwrap().messages.len(), 2990);
        s.delete_conversation(c).await.unwrap();
        drop(s);
        let s = Store::open(&path).await.unwrap();
        assert!(s.list_conversations().await.unwrap().is_empty());
        let left: i64 = s
            .call(|c| Ok(c.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!(left, 0);
    }

    #[tokio::test]
    async fn conversations_are_listed_newest_first() {
        let s = Store::open_in_memory().await.unwrap();
        let a = s.create_conversation("a", "m").await.unwrap();
        let b = s.create_conversation("b", "m").await.unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
        s.append_message(a, &Message::new(Role::User, "x"), status::COMPLETE)
            .await
            .unwrap();
        let ids: Vec<i64> = s
            .list_conversations()
            .await
            .unwrap()
            .iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, vec![a, b]);
    }
}
