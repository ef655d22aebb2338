//! Tool calls: one row per call the model made, from the moment it starts (running) until it
//! is done, with how it came to run (its approval) and its result.

use rusqlite::params;
use serde_json::Value;

use super::tasks::StoredTask;
use super::MessageStatus;
use super::{now_ms, Approval, Store, StoreError, StoredToolCall, ToolCallStatus};
use crate::llm::{Message, ToolCall};

/// The tool calls of a conversation made by messages with ids from `from_message` on (0: all),
/// in the order they were made.
pub(super) fn tool_calls_of(
    c: &rusqlite::Connection,
    conversation_id: i64,
    from_message: i64,
) -> rusqlite::Result<Vec<StoredToolCall>> {
    let mut st = c.prepare_cached(
        "SELECT t.id, t.message_id, t.result_message_id, t.call_id, t.name, t.server, t.tool, t.arguments,
                t.result, t.result_raw, t.is_error, t.status, t.started_at, t.duration_ms, t.approval,
                t.arguments_edited, t.written_name, k.status, k.message, k.delivered, k.reason, k.resumed
         FROM tool_calls t LEFT JOIN tool_tasks k ON k.tool_call_id = t.id
         WHERE t.conversation_id = ?1 AND t.message_id >= ?2 ORDER BY t.id",
    )?;
    let rows = st.query_map([conversation_id, from_message], |r| {
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
            arguments_edited: r.get(15)?,
            written: r.get(16)?,
            task: match r.get::<_, Option<String>>(17)? {
                Some(status) => Some(StoredTask {
                    status,
                    message: r.get(18)?,
                    awaiting_delivery: !r.get::<_, bool>(19)?,
                    reason: r
                        .get::<_, Option<String>>(20)?
                        .as_deref()
                        .and_then(crate::mcp::TaskEnd::from_code),
                    resumed: r.get(21)?,
                    started_at: r.get(12)?,
                }),
                None => None,
            },
        })
    })?;
    rows.collect()
}
impl Store {
    /// A call the model made, from the moment it is known (running); `server` and `tool` are
    /// where its name leads (empty when it leads nowhere).
    pub async fn start_tool_call(
        &self,
        conversation_id: i64,
        message_id: i64,
        call: &ToolCall,
        server: &str,
        tool: &str,
    ) -> Result<i64, StoreError> {
        let started = vec![(call.clone(), server.to_string(), tool.to_string())];
        let ids = self
            .start_tool_calls(conversation_id, message_id, started)
            .await?;
        Ok(ids[0])
    }

    /// The calls of one reply, each with its server and tool, in one transaction; their ids.
    pub async fn start_tool_calls(
        &self,
        conversation_id: i64,
        message_id: i64,
        calls: Vec<(ToolCall, String, String)>,
    ) -> Result<Vec<i64>, StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            let mut ids = Vec::with_capacity(calls.len());
            {
                let mut st = tx.prepare_cached(
                    "INSERT INTO tool_calls (conversation_id, message_id, call_id, name, server, tool,
                        arguments, status, started_at, written_name)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
                for (call, server, tool) in &calls {
                    let args = serde_json::to_string(&call.arguments).unwrap();
                    st.execute(params![conversation_id, message_id, call.id, call.name, server,
                        tool, args, ToolCallStatus::Running, now_ms(), call.written])?;
                    ids.push(tx.last_insert_rowid());
                }
            }
            tx.commit()?;
            Ok(ids)
        })
        .await
    }

    /// How the call came to run, or not; `edited`: the user changed its arguments first.
    pub async fn set_tool_call_approval(
        &self,
        id: i64,
        approval: Approval,
        edited: bool,
    ) -> Result<(), StoreError> {
        self.call(move |c| {
            c.execute(
                "UPDATE tool_calls SET approval = ?1, arguments_edited = ?2 WHERE id = ?3",
                params![approval, edited, id],
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

    /// A call's end, in one transaction: `tool_message` (what the model reads) joins the
    /// conversation, and the call gets its result (what the card shows), its raw result and its
    /// duration.
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_tool_call(
        &self,
        id: i64,
        conversation_id: i64,
        tool_message: &Message,
        result: &str,
        result_raw: Option<&Value>,
        is_error: bool,
        duration_ms: i64,
    ) -> Result<i64, StoreError> {
        let finished = FinishedCall {
            id,
            tool_message: tool_message.clone(),
            result: result.to_string(),
            result_raw: result_raw.cloned(),
            is_error,
            duration_ms,
        };
        let ids = self
            .finish_tool_calls(conversation_id, vec![finished])
            .await?;
        Ok(ids[0])
    }

    /// The ends of a round's calls, in order and in one transaction (see `finish_tool_call`);
    /// the ids of their tool messages.
    pub async fn finish_tool_calls(
        &self,
        conversation_id: i64,
        finished: Vec<FinishedCall>,
    ) -> Result<Vec<i64>, StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            let mut ids = Vec::with_capacity(finished.len());
            for f in &finished {
                let message_id = super::messages::insert(
                    &tx,
                    conversation_id,
                    &f.tool_message,
                    MessageStatus::Complete,
                    None,
                )?;
                let raw = f.result_raw.as_ref().map(|v| serde_json::to_string(v).unwrap());
                tx.prepare_cached(
                    "UPDATE tool_calls SET result = ?1, result_raw = ?2, is_error = ?3, duration_ms = ?4,
                        result_message_id = ?5, status = ?6 WHERE id = ?7",
                )?
                .execute(params![f.result, raw, f.is_error, f.duration_ms, message_id,
                    ToolCallStatus::Done, f.id])?;
                ids.push(message_id);
            }
            tx.commit()?;
            Ok(ids)
        })
        .await
    }
}

/// A call's end as `finish_tool_calls` stores it.
#[derive(Debug, Clone)]
pub struct FinishedCall {
    pub id: i64,
    /// What the model reads (a `tool` message).
    pub tool_message: Message,
    /// What the card shows.
    pub result: String,
    pub result_raw: Option<Value>,
    pub is_error: bool,
    pub duration_ms: i64,
}
