//! Calls their servers run as tasks (mcp/host/tasks.rs): the server's handle for the task and
//! where it is, beside its tool call. A task still open when the app ends keeps its call
//! running (not interrupted) so the next run follows it again; a result that comes after the
//! turn ended is kept on the call until the user sends it to the model.
//!
//! A row holds the server's id for the task, where it is, whether a late result waits for the user,
//! why it ended, whether it was resumed, and the id of its kept session (the session itself is in
//! the secrets store). It gives the open ones to follow after a restart, and the kept sessions no
//! open task needs any more.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;
use serde_json::Value;

use super::{now_ms, Store, StoreError, ToolCallStatus};
use crate::mcp::{TaskEnd, TaskState};

/// A call's task as the card shows it. The server's handle for it (and its session's) stays in
/// the store.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StoredTask {
    /// `working`, `input_required`, `completed`, `failed`, `cancelled` or `lost`.
    pub status: String,
    pub message: Option<String>,
    /// Why it ended, when that was not its tool's doing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TaskEnd>,
    /// Its result came after the turn that started it had ended, and has not been sent to the
    /// model yet.
    pub awaiting_delivery: bool,
    /// A later run of the app than the one that started it followed it again.
    pub resumed: bool,
    /// When its call started (ms since the epoch).
    pub started_at: i64,
}

/// A task that was still open when the app last ended, to follow again.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenTask {
    pub tool_call_id: i64,
    pub conversation_id: i64,
    pub server: String,
    pub tool: String,
    pub task_id: String,
    pub started_at: i64,
    /// The conversation's model (it answers the server's sampling requests).
    pub model: String,
    /// In the 2025-11-25 form.
    pub legacy: bool,
    /// The id in the secrets store of the HTTP session it ran in, when that was kept.
    pub session: Option<String>,
    /// The identity of the server that started it (`None`: kept by an older version).
    pub server_identity: Option<String>,
}

impl OpenTask {
    /// What the host needs to follow it again.
    pub fn handle(&self) -> crate::mcp::TaskHandle {
        crate::mcp::TaskHandle {
            task_id: self.task_id.clone(),
            legacy: self.legacy,
            session: self.session.clone(),
        }
    }
}

/// The result of a task that ended after its turn, as it is sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct LateResult {
    pub conversation_id: i64,
    pub name: String,
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub result: String,
    pub is_error: bool,
    /// The result as the server sent it (its images), when it was small enough to keep.
    pub result_raw: Option<Value>,
}

/// A stored call, as an MCP App shown on its card needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOrigin {
    pub conversation_id: i64,
    pub message_id: i64,
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub result_raw: Option<Value>,
    pub result: Option<String>,
    pub is_error: bool,
    pub status: ToolCallStatus,
}

/// SQL: the call ids whose task is still open.
pub(super) const OPEN_TASK_CALLS: &str =
    "SELECT tool_call_id FROM tool_tasks WHERE status IN ('working', 'input_required')";

impl Store {
    /// Where call `tool_call_id`'s task is now (its first state creates the row, with the
    /// identity of the server that runs it).
    pub async fn set_tool_task(
        &self,
        tool_call_id: i64,
        server: &str,
        identity: Option<&str>,
        state: &TaskState,
    ) -> Result<(), StoreError> {
        let (server, state) = (server.to_string(), state.clone());
        let identity = identity.map(String::from);
        self.call(move |c| {
            c.execute(
                "INSERT INTO tool_tasks (tool_call_id, server, task_id, status, message, poll_ms, ttl_ms, updated_at, legacy, session, reason, server_identity)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT (tool_call_id) DO UPDATE SET status = ?4, message = ?5, poll_ms = ?6,
                    ttl_ms = ?7, updated_at = ?8, session = COALESCE(?10, session), reason = ?11",
                params![tool_call_id, server, state.task_id, state.status, state.message,
                    state.poll_ms.map(|v| v as i64), state.ttl_ms.map(|v| v as i64), now_ms(),
                    state.legacy, state.session, state.reason.map(TaskEnd::code), identity],
            )?;
            Ok(())
        })
        .await
    }

    /// The tasks still open on their servers, oldest first (after a restart: to follow again).
    pub async fn open_tasks(&self) -> Result<Vec<OpenTask>, StoreError> {
        self.call(|c| {
            let mut st = c.prepare(&format!(
                "SELECT t.id, t.conversation_id, k.server, t.tool, k.task_id, t.started_at, c.model, k.legacy, k.session,
                    k.server_identity
                 FROM tool_tasks k JOIN tool_calls t ON t.id = k.tool_call_id
                    JOIN conversations c ON c.id = t.conversation_id
                 WHERE k.tool_call_id IN ({OPEN_TASK_CALLS}) AND t.status = ?1 ORDER BY t.id"
            ))?;
            let rows = st.query_map([ToolCallStatus::Running], |r| {
                Ok(OpenTask {
                    tool_call_id: r.get(0)?,
                    conversation_id: r.get(1)?,
                    server: r.get(2)?,
                    tool: r.get(3)?,
                    task_id: r.get(4)?,
                    started_at: r.get(5)?,
                    model: r.get(6)?,
                    legacy: r.get(7)?,
                    session: r.get(8)?,
                    server_identity: r.get(9)?,
                })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
        .await
    }

    /// A run after the one that started it follows call `tool_call_id`'s task again (its card
    /// says so).
    pub async fn mark_task_resumed(&self, tool_call_id: i64) -> Result<(), StoreError> {
        self.call(move |c| {
            c.execute(
                "UPDATE tool_tasks SET resumed = 1 WHERE tool_call_id = ?1",
                [tool_call_id],
            )?;
            Ok(())
        })
        .await
    }

    /// The HTTP sessions kept for tasks (ids in the secrets store) that no open task runs in any
    /// more: to forget in the secrets store, then with [`Store::forget_task_sessions`].
    pub async fn ended_task_sessions(&self) -> Result<Vec<String>, StoreError> {
        self.call(|c| {
            let mut st = c.prepare(&format!(
                "SELECT DISTINCT session FROM tool_tasks WHERE session IS NOT NULL
                 AND session NOT IN (SELECT session FROM tool_tasks
                    WHERE tool_call_id IN ({OPEN_TASK_CALLS}) AND session IS NOT NULL)"
            ))?;
            let rows = st.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
        .await
    }

    /// The sessions `ids` were forgotten in the secrets store: no task refers to them any more.
    pub async fn forget_task_sessions(&self, ids: Vec<String>) -> Result<(), StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            for id in &ids {
                tx.execute(
                    "UPDATE tool_tasks SET session = NULL WHERE session = ?1",
                    [id],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Where call `id` was made: its conversation, the message that made it, its server.
    pub async fn tool_call_origin(&self, id: i64) -> Result<Option<CallOrigin>, StoreError> {
        self.call(move |c| {
            Ok(c.query_row(
                "SELECT conversation_id, message_id, server, tool, arguments, result_raw, result, is_error, status
                 FROM tool_calls WHERE id = ?1",
                [id],
                |r| {
                    let args: String = r.get(4)?;
                    let raw: Option<String> = r.get(5)?;
                    Ok(CallOrigin {
                        conversation_id: r.get(0)?,
                        message_id: r.get(1)?,
                        server: r.get(2)?,
                        tool: r.get(3)?,
                        arguments: serde_json::from_str(&args).unwrap_or(Value::Null),
                        result_raw: raw.and_then(|s| serde_json::from_str(&s).ok()),
                        result: r.get(6)?,
                        is_error: r.get(7)?,
                        status: r.get(8)?,
                    })
                },
            )
            .optional()?)
        })
        .await
    }

    /// A call's end that the model does not read (an MCP App's own call, a task's late result):
    /// the call gets its result, no tool message joins the conversation.
    pub async fn finish_call_quietly(
        &self,
        tool_call_id: i64,
        result: &str,
        result_raw: Option<&Value>,
        is_error: bool,
        duration_ms: i64,
    ) -> Result<(), StoreError> {
        let result = result.to_string();
        let raw = result_raw.map(|v| serde_json::to_string(v).unwrap());
        self.call(move |c| {
            set_result(c, tool_call_id, &result, raw, is_error, duration_ms)?;
            Ok(())
        })
        .await
    }

    /// The end of a task followed after its turn had ended: the call gets its result (the card
    /// shows it); with `offer`, the result waits for the user to send it to the model.
    pub async fn finish_late_task(
        &self,
        tool_call_id: i64,
        result: &str,
        result_raw: Option<&Value>,
        is_error: bool,
        duration_ms: i64,
        offer: bool,
    ) -> Result<(), StoreError> {
        let result = result.to_string();
        let raw = result_raw.map(|v| serde_json::to_string(v).unwrap());
        self.call(move |c| {
            let tx = c.transaction()?;
            set_result(&tx, tool_call_id, &result, raw, is_error, duration_ms)?;
            tx.execute(
                "UPDATE tool_tasks SET delivered = ?1, updated_at = ?2 WHERE tool_call_id = ?3",
                params![!offer, now_ms(), tool_call_id],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// The result of a task that ended after its turn, marked as sent to the model; `None` when
    /// there is none waiting (never one, or already sent).
    pub async fn take_late_result(
        &self,
        tool_call_id: i64,
    ) -> Result<Option<LateResult>, StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            let got = tx
                .query_row(
                    "SELECT t.conversation_id, t.name, t.server, t.tool, COALESCE(t.result, ''), t.is_error,
                        t.arguments, t.result_raw
                     FROM tool_tasks k JOIN tool_calls t ON t.id = k.tool_call_id
                     WHERE k.tool_call_id = ?1 AND k.delivered = 0 AND t.status = ?2",
                    params![tool_call_id, ToolCallStatus::Done],
                    |r| {
                        let args: String = r.get(6)?;
                        let raw: Option<String> = r.get(7)?;
                        Ok(LateResult {
                            conversation_id: r.get(0)?,
                            name: r.get(1)?,
                            server: r.get(2)?,
                            tool: r.get(3)?,
                            arguments: serde_json::from_str(&args).unwrap_or(Value::Null),
                            result: r.get(4)?,
                            is_error: r.get(5)?,
                            result_raw: raw.and_then(|v| serde_json::from_str(&v).ok()),
                        })
                    },
                )
                .optional()?;
            if got.is_some() {
                tx.execute(
                    "UPDATE tool_tasks SET delivered = 1 WHERE tool_call_id = ?1",
                    [tool_call_id],
                )?;
            }
            tx.commit()?;
            Ok(got)
        })
        .await
    }
}

/// A call's result, without a tool message (see `finish_call_quietly`).
fn set_result(
    c: &rusqlite::Connection,
    id: i64,
    result: &str,
    raw: Option<String>,
    is_error: bool,
    duration_ms: i64,
) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE tool_calls SET result = ?1, result_raw = ?2, is_error = ?3, duration_ms = ?4,
            status = ?5 WHERE id = ?6",
        params![result, raw, is_error, duration_ms, ToolCallStatus::Done, id],
    )?;
    Ok(())
}
