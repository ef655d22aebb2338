//! Summaries of older turns (`chat::context`): what stands for them in requests once the
//! conversation outgrows the model's context. Each is tied to the last message it covers (it
//! holds for every branch through that message, none that left before it, and goes with that
//! message); a branch uses the one reaching furthest along it. The user may edit one: the next
//! request carries the edit.

use rusqlite::{named_params, params, OptionalExtension};
use serde::Serialize;

use super::schema::SHOWN_PATH;
use super::{now_ms, Store, StoreError};

/// A summary as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EarlierSummary {
    pub id: i64,
    /// The last message it covers (it covers the branch from after the user's first message).
    pub through_id: i64,
    /// How many messages it stands for (user, assistant and tool messages; pinned ones are sent
    /// whole and not counted).
    pub covers: i64,
    pub text: String,
    /// The model that wrote it.
    pub model: String,
    /// The user changed its text.
    pub edited: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str =
    "s.id, s.through_id, s.covers, s.text, s.model, s.edited, s.created_at, s.updated_at";

fn read(r: &rusqlite::Row) -> rusqlite::Result<EarlierSummary> {
    Ok(EarlierSummary {
        id: r.get(0)?,
        through_id: r.get(1)?,
        covers: r.get(2)?,
        text: r.get(3)?,
        model: r.get(4)?,
        edited: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

/// The summary of conversation `id`'s shown branch: the one reaching furthest along it (the
/// newest of those, when several reach as far).
pub(super) fn of_branch(
    c: &rusqlite::Connection,
    id: i64,
) -> Result<Option<EarlierSummary>, StoreError> {
    Ok(c.query_row(
        &format!(
            "{SHOWN_PATH} SELECT {COLUMNS} FROM summaries s
             WHERE s.conversation_id = :conversation AND s.through_id IN path
             ORDER BY s.through_id DESC, s.id DESC LIMIT 1"
        ),
        named_params! {":conversation": id, ":limit": -1},
        read,
    )
    .optional()?)
}

impl Store {
    /// Keeps a summary of conversation `conversation_id` covering up to message `through_id`.
    pub async fn add_summary(
        &self,
        conversation_id: i64,
        through_id: i64,
        covers: usize,
        text: &str,
        model: &str,
    ) -> Result<EarlierSummary, StoreError> {
        let (text, model) = (text.to_string(), model.to_string());
        self.call(move |c| {
            let now = now_ms();
            // only for a message of that conversation
            let n = c.execute(
                "INSERT INTO summaries (conversation_id, through_id, covers, text, model, created_at, updated_at)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6 FROM messages WHERE id = ?2 AND conversation_id = ?1",
                params![conversation_id, through_id, covers as i64, text, model, now],
            )?;
            if n == 0 {
                return Err(StoreError::NoMessage(through_id));
            }
            let id = c.last_insert_rowid();
            Ok(c.query_row(
                &format!("SELECT {COLUMNS} FROM summaries s WHERE s.id = ?1"),
                [id],
                read,
            )?)
        })
        .await
    }

    /// The summary that stands for older turns of the conversation's shown branch, if any.
    pub async fn branch_summary(
        &self,
        conversation_id: i64,
    ) -> Result<Option<EarlierSummary>, StoreError> {
        self.call(move |c| of_branch(c, conversation_id)).await
    }

    /// Every summary of a conversation (all its branches), oldest first.
    pub async fn summaries(&self, conversation_id: i64) -> Result<Vec<EarlierSummary>, StoreError> {
        self.call(move |c| {
            let mut st = c.prepare(&format!(
                "SELECT {COLUMNS} FROM summaries s WHERE s.conversation_id = ?1 ORDER BY s.id"
            ))?;
            let rows = st
                .query_map([conversation_id], read)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
    }

    /// The user's text for summary `id` (the next request carries it).
    pub async fn edit_summary(&self, id: i64, text: &str) -> Result<EarlierSummary, StoreError> {
        let text = text.trim().to_string();
        self.call(move |c| {
            let n = c.execute(
                "UPDATE summaries SET text = ?2, edited = 1, updated_at = ?3 WHERE id = ?1",
                params![id, text, now_ms()],
            )?;
            if n == 0 {
                return Err(StoreError::NoSummary(id));
            }
            Ok(c.query_row(
                &format!("SELECT {COLUMNS} FROM summaries s WHERE s.id = ?1"),
                [id],
                read,
            )?)
        })
        .await
    }
}
