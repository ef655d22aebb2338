//! Tasks that outlive their turn. A call its server runs as a task is followed inside its turn
//! like any call (mcp/host/tasks.rs); when the app ends first, the store keeps the task's
//! handle and the next run follows it again here. Its result then comes after the turn that
//! started it has ended, so it is not given to the model by itself: it waits on the card until
//! the user sends it with one click ([`TurnRequest::late_result`](super::TurnRequest)).

use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{ChatEvent, Emit};
use super::{ChatEngine, ChatError};
use crate::store::{now_ms, OpenTask};

impl ChatEngine {
    /// Follows a task that was open when the app last ended, until it ends (or is lost); its
    /// card hears where it is, and its result waits for the user. Stopping the call cancels the
    /// task on its server.
    pub async fn resume_task(&self, open: OpenTask, emit: Emit<'_>) -> Result<(), ChatError> {
        let id = open.tool_call_id;
        let cancel = CancellationToken::new();
        self.shared
            .running_calls
            .lock()
            .unwrap()
            .insert(id, cancel.clone());
        emit(ChatEvent::TaskFollowed {
            id,
            conversation_id: open.conversation_id,
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let started = Instant::now();
        let follow = self.tools.resume_task(
            &open.server,
            &open.tool,
            &open.task_id,
            open.legacy,
            &cancel,
            Some(tx),
        );
        let during = self.answer_events(id, &open.server, &open.model, rx, emit, &cancel);
        let (outcome, ()) = tokio::join!(follow, during);
        self.shared.running_calls.lock().unwrap().remove(&id);
        tracing::info!(
            "a task of {} followed after a restart ended after {:.1} s",
            open.server,
            started.elapsed().as_secs_f64()
        );
        let duration_ms = (now_ms() - open.started_at).max(0);
        // a task the user stopped has nothing to send
        let offer = !cancel.is_cancelled();
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
        let how = if late.is_error {
            "ended with an error"
        } else {
            "finished"
        };
        Ok(format!(
            "The tool call {} (run by the server \"{}\" as a background task) {how} after the app \
             was restarted. Its result:\n\n{}",
            late.name, late.server, late.result
        ))
    }
}
