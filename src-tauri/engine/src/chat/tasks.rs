//! Tasks that outlive their turn. A call its server runs as a task is followed inside its turn
//! like any call (mcp/host/tasks.rs); when the app ends first, the store keeps the task's
//! handle and the next run follows it again here. Its result then comes after the turn that
//! started it has ended, so it is not given to the model by itself: it waits on the card until
//! the user sends it with one click ([`TurnRequest::late_result`](super::TurnRequest)) — a
//! result, or an error of the tool's own; a task that could not be followed (lost, stopped, or
//! its server is now another program) has nothing for the model, and its card says why. It goes
//! to the model as what it is, a tool's result (the call again, and its result), never as
//! something the user said.
//!
//! `Runtime::resume_tasks` starts one `resume_task` per open task after the servers; a stdio
//! server's task is ended at once by `end_task`, and so is a legacy SSE server's (its session ended
//! with its stream). The store marks a followed task resumed.

use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{ChatEvent, Emit};
use super::{ChatEngine, ChatError};
use crate::llm::{Message, Role, ToolCall};
use crate::mcp::{TaskEnd, TaskState, ToolOutcome};
use crate::store::{now_ms, OpenTask};

impl ChatEngine {
    /// Follows a task that was open when the app last ended, until it ends (or is lost); its
    /// card hears where it is, and its result (or its tool's error) waits for the user. Stopping
    /// the call cancels the task on its server.
    pub async fn resume_task(&self, open: OpenTask, emit: Emit<'_>) -> Result<(), ChatError> {
        let id = open.tool_call_id;
        let cancel = CancellationToken::new();
        self.shared
            .running_calls
            .lock()
            .unwrap()
            .insert(id, cancel.clone());
        self.store.mark_task_resumed(id).await?;
        emit(ChatEvent::TaskFollowed {
            id,
            conversation_id: open.conversation_id,
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let started = Instant::now();
        // a task is followed on the server that started it, not on another program or URL that
        // now has its name (it would be asked about a handle it never gave)
        let same = open
            .server_identity
            .as_ref()
            .is_none_or(|i| self.tools.server_identity(&open.server).as_ref() == Some(i));
        let (outcome, last) = if same {
            let handle = open.handle();
            let follow =
                self.tools
                    .resume_task(&open.server, &open.tool, &handle, &cancel, Some(tx));
            let during = self.answer_events(id, &open.server, &open.model, rx, emit, &cancel);
            tokio::join!(follow, during)
        } else {
            (self.not_the_same_server(&open, emit).await?, None)
        };
        self.shared.running_calls.lock().unwrap().remove(&id);
        tracing::info!(
            "a task of {} followed after a restart ended after {:.1} s",
            open.server,
            started.elapsed().as_secs_f64()
        );
        // a task the user stopped has nothing to send
        let offer = !cancel.is_cancelled() && for_the_model(&outcome, last.as_ref());
        self.finish_late(&open, outcome, offer, emit).await
    }

    /// A task of the app's last run that cannot be followed again, ended at once for `reason`
    /// (its server ran inside the app, or its session ended with the app): its card says why,
    /// and nothing waits for the model.
    pub async fn end_task(
        &self,
        open: OpenTask,
        reason: TaskEnd,
        emit: Emit<'_>,
    ) -> Result<(), ChatError> {
        let id = open.tool_call_id;
        let mut state = TaskState {
            task_id: open.task_id.clone(),
            status: "working".into(),
            message: None,
            poll_ms: None,
            ttl_ms: None,
            legacy: open.legacy,
            session: open.session.clone(),
            reason: None,
        };
        let outcome = state.lost(reason, &open.server, &open.tool, None);
        self.store
            .set_tool_task(id, &open.server, open.server_identity.as_deref(), &state)
            .await?;
        emit(ChatEvent::ToolCallTask {
            id,
            status: state.status,
            message: state.message,
            reason: state.reason,
        });
        self.finish_late(&open, outcome, false, emit).await
    }

    /// The end of a task of the app's last run: the call gets its outcome (the card shows it);
    /// with `offer`, the outcome waits for the user to send it to the model.
    async fn finish_late(
        &self,
        open: &OpenTask,
        outcome: ToolOutcome,
        offer: bool,
        emit: Emit<'_>,
    ) -> Result<(), ChatError> {
        let id = open.tool_call_id;
        let duration_ms = (now_ms() - open.started_at).max(0);
        self.store
            .finish_late_task(
                id,
                &outcome.text,
                outcome.raw.as_ref(),
                outcome.is_error,
                duration_ms,
                offer,
            )
            .await?;
        emit(ChatEvent::ToolCallFinished {
            id,
            result: outcome.text,
            is_error: outcome.is_error,
            duration_ms,
            raw: outcome.raw,
        });
        if offer {
            emit(ChatEvent::TaskResultWaiting {
                id,
                conversation_id: open.conversation_id,
            });
        }
        Ok(())
    }

    /// A task whose server is now another program or URL: reported lost, not followed.
    async fn not_the_same_server(
        &self,
        open: &OpenTask,
        emit: Emit<'_>,
    ) -> Result<ToolOutcome, ChatError> {
        let text = format!(
            "The server \"{}\" is no longer the one that started this task (its command, \
             folder, environment or URL changed), so the task was not followed.",
            open.server
        );
        let lost = TaskState {
            task_id: open.task_id.clone(),
            status: "lost".into(),
            message: Some(text.clone()),
            poll_ms: None,
            ttl_ms: None,
            legacy: open.legacy,
            session: open.session.clone(),
            reason: None,
        };
        self.store
            .set_tool_task(open.tool_call_id, &open.server, None, &lost)
            .await?;
        emit(ChatEvent::ToolCallTask {
            id: open.tool_call_id,
            status: lost.status,
            message: lost.message,
            reason: None,
        });
        Ok(ToolOutcome {
            server: open.server.clone(),
            tool: open.tool.clone(),
            text,
            is_error: true,
            raw: None,
            images: vec![],
        })
    }

    /// The messages that give the model the late result of call `id` (and mark it given), for a
    /// turn in `conversation_id`: the call again (an assistant message, its id new) and its
    /// result as the tool's message. The server's words stay in the tool's role.
    pub(super) async fn late_result_messages(
        &self,
        conversation_id: Option<i64>,
        id: i64,
    ) -> Result<Vec<Message>, ChatError> {
        let late = self.store.take_late_result(id).await?.ok_or_else(|| {
            ChatError::Invalid(
                "There is no result waiting for that call: it was already sent.".into(),
            )
        })?;
        if conversation_id != Some(late.conversation_id) {
            return Err(ChatError::Invalid(
                "That result belongs to another conversation.".into(),
            ));
        }
        let call_id = format!("late-{id}");
        let mut call = Message::new(Role::Assistant, "");
        call.tool_calls = vec![ToolCall {
            id: Some(call_id.clone()),
            name: late.name.clone(),
            arguments: late.arguments,
            written: None,
        }];
        let text = if late.is_error && !late.result.starts_with("Error") {
            format!("Error: {}", late.result)
        } else {
            late.result
        };
        let mut result = Message::new(Role::Tool, text);
        // its images, kept with it like a result inside a turn (the turn gives them only to a
        // model known to see images)
        if let Some(raw) = &late.result_raw {
            let found = crate::mcp::result_images(raw);
            let (images, notes) = self.server_images(&late.name, &found, true).await;
            for note in notes {
                result.content.push_str(&format!("\n{note}"));
            }
            result.images = images;
        }
        result.tool_name = Some(late.name);
        result.tool_call_id = Some(call_id);
        Ok(vec![call, result])
    }
}

/// Whether a task's end is for the model: its result, or its tool's own error (the task failed
/// on the server, or ended with an error result) — not a task the host could not follow (`lost`,
/// with its reason) or that the server cancelled.
fn for_the_model(outcome: &ToolOutcome, last: Option<&TaskState>) -> bool {
    !outcome.is_error
        || last.is_some_and(|s| {
            s.reason.is_none() && matches!(s.status.as_str(), "failed" | "completed")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(is_error: bool) -> ToolOutcome {
        ToolOutcome {
            server: "s".into(),
            tool: "t".into(),
            text: "x".into(),
            is_error,
            raw: None,
            images: vec![],
        }
    }

    fn state(status: &str, reason: Option<TaskEnd>) -> TaskState {
        TaskState {
            task_id: "id".into(),
            status: status.into(),
            message: None,
            poll_ms: None,
            ttl_ms: None,
            legacy: false,
            session: None,
            reason,
        }
    }

    #[test]
    fn only_a_result_or_the_tools_own_error_is_offered_to_the_model() {
        assert!(for_the_model(
            &outcome(false),
            Some(&state("completed", None))
        ));
        assert!(for_the_model(&outcome(true), Some(&state("failed", None))));
        assert!(for_the_model(
            &outcome(true),
            Some(&state("completed", None))
        ));
        for lost in [
            TaskEnd::Forgotten,
            TaskEnd::SessionEnded,
            TaskEnd::EndedWithApp,
        ] {
            assert!(!for_the_model(
                &outcome(true),
                Some(&state("lost", Some(lost)))
            ));
        }
        assert!(!for_the_model(
            &outcome(true),
            Some(&state("cancelled", None))
        ));
        assert!(!for_the_model(
            &outcome(true),
            Some(&state("working", None))
        ));
        assert!(!for_the_model(&outcome(true), None));
    }
}
