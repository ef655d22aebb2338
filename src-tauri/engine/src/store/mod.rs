//! The conversation store: SQLite (WAL) with versioned migrations (`schema.rs`). Each message is
//! written as soon as it exists and updated as it streams, so an interrupted stream leaves its
//! partial text. One file per concern: `conversations.rs` (the library and a conversation's
//! settings), `messages.rs` (the message tree and its branches), `tool_calls.rs`, `search.rs`,
//! `debug.rs` (the LLM call record), `exchange.rs` (export, import, duplicate), `page.rs` (part of
//! a long conversation: an outline of its branch, then the rows of the part shown), `summaries.rs`
//! (what stands for older turns in requests).
//!
//! Opening: WAL, migrations, a crash's leftovers cleaned (`streaming` rows become `interrupted`,
//! and so do running tool calls, except those whose task is still open on its server: they stay
//! running, to be followed again; a conversation deleted and not restored is removed), unused
//! images collected (`attachments.rs`). Also `tasks.rs`, `model_checks.rs` (the last model check's
//! report per provider URL and model, as JSON the store does not read), `pins.rs` (the accepted
//! tool definitions, `mcp::pins::ToolPins`), `attachments.rs`, `types.rs` (what the store holds,
//! its typed states stored as text codes). Appending always continues the shown branch.

use std::path::Path;

use rusqlite::params;

mod attachments;
mod conversations;
pub mod debug;
pub mod exchange;
mod messages;
mod model_checks;
pub mod page;
mod pins;
mod schema;
pub mod search;
mod summaries;
mod tasks;
#[cfg(test)]
mod tests;
mod tool_calls;
mod types;

pub use attachments::{AttachedImage, KeptImage};
pub use summaries::EarlierSummary;
pub use tasks::{CallOrigin, LateResult, OpenTask, StoredTask};
pub use tool_calls::FinishedCall;

pub use types::{
    Approval, ContextPolicy, Conversation, ConversationSettings, ConversationSummary,
    InvalidSetting, MessageStatus, Notice, StoredMessage, StoredToolCall, ToolCallStatus,
    ToolChoice,
};

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
    #[error("no summary with id {0}")]
    NoSummary(i64),
    /// A conversation file that cannot be imported, and why.
    #[error("{0}")]
    Import(String),
    /// No image with this name is kept (or its file is gone).
    #[error("the attached image {0} is not there any more")]
    NoAttachment(String),
    /// An attachment's file could not be written or read.
    #[error("could not keep the attached file: {0}")]
    File(String),
}

impl From<tokio_rusqlite::Error<StoreError>> for StoreError {
    fn from(e: tokio_rusqlite::Error<StoreError>) -> Self {
        match e {
            tokio_rusqlite::Error::Error(e) => e,
            _ => StoreError::Closed,
        }
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[derive(Clone)]
pub struct Store {
    conn: tokio_rusqlite::Connection,
    /// Where attached images are kept.
    files: attachments::Files,
}

fn setup(conn: &mut rusqlite::Connection, files: &attachments::Files) -> Result<(), StoreError> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    schema::migrations().to_latest(conn)?;
    // a stream that was running when the app ended is no longer streaming
    conn.execute(
        "UPDATE messages SET status = ?1 WHERE status = ?2",
        params![MessageStatus::Interrupted, MessageStatus::Streaming],
    )?;
    // conversations deleted (and not restored) in an earlier run are gone for good
    conn.execute("DELETE FROM conversations WHERE deleted_at IS NOT NULL", [])?;
    // (a call its server runs as a task goes on running there: the next run follows it again)
    conn.execute(
        &format!(
            "UPDATE tool_calls SET status = ?1, is_error = 1,
                result = COALESCE(result, 'The app ended before the tool answered.')
             WHERE status = ?2 AND id NOT IN ({})",
            tasks::OPEN_TASK_CALLS
        ),
        params![ToolCallStatus::Interrupted, ToolCallStatus::Running],
    )?;
    // images no conversation refers to any more are gone for good too
    attachments::collect_garbage(conn, files)?;
    Ok(())
}

/// `db.sqlite3` → `db.sqlite3-wal`.
fn side_file(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    s.into()
}

impl Store {
    /// Opens (or makes) the database at `path`: its folder `0700`, the file and its journal
    /// files `0600` (SQLite gives those the database's mode), whatever the umask. Attached images are
    /// kept in `attachments/` next to it.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            let _ = crate::paths::private_dir(dir);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // made before SQLite makes it with the umask's mode
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path);
        }
        for p in [
            path.to_path_buf(),
            side_file(path, "-wal"),
            side_file(path, "-shm"),
        ] {
            let _ = crate::paths::private_file(&p);
        }
        let files = attachments::Files::Dir(path.with_file_name("attachments"));
        let conn = tokio_rusqlite::Connection::open(path).await?;
        let f = files.clone();
        conn.call(move |c| setup(c, &f)).await?;
        Ok(Store { conn, files })
    }

    /// A store in memory, its attached images too (for tests and benchmarks).
    pub async fn open_in_memory() -> Result<Store, StoreError> {
        let files = attachments::Files::Memory(Default::default());
        let conn = tokio_rusqlite::Connection::open_in_memory().await?;
        let f = files.clone();
        conn.call(move |c| setup(c, &f)).await?;
        Ok(Store { conn, files })
    }

    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        Ok(self.conn.call(f).await?)
    }
}
