//! The debug view's record (the original CLI's `debug`): the exact request and response of each
//! LLM call, kept for the most recent calls of each conversation.
//!
//! The exact requests and responses of the last 30 LLM calls per conversation; image data replaced
//! by a note of its size.

use rusqlite::params;
use serde::Serialize;
use serde_json::Value;

use super::{now_ms, Store, StoreError};

/// Calls kept per conversation; older ones are dropped as new ones come.
pub const KEEP_PER_CONVERSATION: i64 = 30;
/// Response objects kept per call (a long reply streams one per token).
pub const MAX_RESPONSE_OBJECTS: usize = 5000;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmCallRecord {
    pub id: i64,
    /// The assistant message it produced (gone when the call failed before any text).
    pub message_id: Option<i64>,
    pub model: String,
    pub request: Value,
    /// What the server sent, object by object.
    pub response: Vec<Value>,
    pub error: Option<String>,
    pub started_at: i64,
    pub duration_ms: i64,
}

impl Store {
    #[allow(clippy::too_many_arguments)]
    pub async fn record_llm_call(
        &self,
        conversation_id: i64,
        message_id: Option<i64>,
        model: &str,
        request: &Value,
        response: &[Value],
        error: Option<String>,
        duration_ms: i64,
    ) -> Result<(), StoreError> {
        let (model, request, response) = (
            model.to_string(),
            serde_json::to_string(request).unwrap_or_default(),
            serde_json::to_string(response).unwrap_or_default(),
        );
        self.call(move |c| {
            let started = now_ms() - duration_ms;
            c.execute(
                "INSERT INTO llm_calls (conversation_id, message_id, model, request, response, error, started_at, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![conversation_id, message_id, model, request, response, error, started, duration_ms],
            )?;
            c.execute(
                "DELETE FROM llm_calls WHERE conversation_id = ?1 AND id NOT IN
                    (SELECT id FROM llm_calls WHERE conversation_id = ?1 ORDER BY id DESC LIMIT ?2)",
                params![conversation_id, KEEP_PER_CONVERSATION],
            )?;
            Ok(())
        })
        .await
    }

    /// The recorded LLM calls of a conversation, oldest first.
    pub async fn llm_calls(&self, conversation_id: i64) -> Result<Vec<LlmCallRecord>, StoreError> {
        self.call(move |c| {
            let mut st = c.prepare(
                "SELECT id, message_id, model, request, response, error, started_at, duration_ms
                 FROM llm_calls WHERE conversation_id = ?1 ORDER BY id",
            )?;
            let rows = st
                .query_map([conversation_id], |r| {
                    let req: String = r.get(3)?;
                    let resp: String = r.get(4)?;
                    Ok(LlmCallRecord {
                        id: r.get(0)?,
                        message_id: r.get(1)?,
                        model: r.get(2)?,
                        request: serde_json::from_str(&req).unwrap_or(Value::Null),
                        response: serde_json::from_str(&resp).unwrap_or_default(),
                        error: r.get(5)?,
                        started_at: r.get(6)?,
                        duration_ms: r.get(7)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
    }
}
