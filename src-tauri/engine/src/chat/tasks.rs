//! Tasks that outlive their turn. A call its server runs as a task is followed inside its turn
//! like any call (mcp/host/tasks.rs); when the app ends first, the store keeps the task's
//! handle and the next run follows it again here. Its result then comes after the turn that
//! started it has ended, so it is not given to the model by itself: it waits on the card until
//! the user sends it with one click ([`TurnRequest::late_result`](super::TurnRequest)) — a
//! result, or an error of the tool's own; a task that could not be followed (lost, stopped) has
//! nothing for the model, and its card says why.

use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{ChatEvent, Emit};
use super::{ChatEngine, ChatError};
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
        let handle = open.handle();
        let follow = self
            .tools
            .resume_task(&open.server, &open.tool, &handle, &cancel, Some(tx));
        let during = self.answer_events(id, &open.server, &open.model, rx, emit, &cancel);
        let (outcome, last) = tokio::join!(follow, during);
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
        self.store.set_tool_task(id, &open.server, &state).await?;
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

    /// The user's message that gives the model the late result of call `id` (and marks it
    /// given), for a turn in `conversation_id`.
    pub(super) async fn late_result_message(
        &self,
        conversation_id: Option<i64>,
        id: i64,
    ) -> Result<String, ChatError> {
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
        let what = format!(
            "The tool call {} (run by the server \"{}\" as a background task)",
            late.name, late.server
        );
        Ok(if late.is_error {
            format!(
                "{what} ended with an error after the app was restarted. The tool's error:\n\n{}",
                late.result
            )
        } else {
            format!(
                "{what} finished after the app was restarted. Its result:\n\n{}",
                late.result
            )
        })
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
