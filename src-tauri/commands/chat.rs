use switchboard_engine::chat::approval::Decision;
use switchboard_engine::{ChatEvent, TurnRequest, TurnSummary};
use tauri::ipc::Channel;
use tauri::{AppHandle, State};
use tokio_util::sync::CancellationToken;

use super::{CmdResult, UiError};
use crate::AppState;

/// Runs one turn; its events stream through `on_event`. `turn_id` is chosen by the window so it
/// can stop the turn while it runs.
#[tauri::command]
pub async fn send_message(
    app: AppHandle,
    state: State<'_, AppState>,
    turn_id: String,
    conversation_id: Option<i64>,
    model: String,
    text: String,
    on_event: Channel<ChatEvent>,
) -> CmdResult<TurnSummary> {
    if text.trim().is_empty() {
        return Err(UiError::new("invalid", "The message is empty"));
    }
    if model.trim().is_empty() {
        return Err(UiError::new("invalid", "Choose a model first"));
    }
    let cancel = CancellationToken::new();
    state
        .turns
        .lock()
        .unwrap()
        .insert(turn_id.clone(), cancel.clone());
    let engine = state.chat_engine(&app);
    let emit = move |ev: ChatEvent| {
        if let Err(e) = on_event.send(ev) {
            tracing::warn!("could not deliver a chat event to the window: {e}");
        }
    };
    let result = engine
        .run_turn(
            TurnRequest {
                conversation_id,
                model,
                text,
            },
            &emit,
            cancel,
        )
        .await;
    state.turns.lock().unwrap().remove(&turn_id);
    Ok(result?)
}

#[tauri::command]
pub fn stop_turn(state: State<'_, AppState>, turn_id: String) -> bool {
    match state.turns.lock().unwrap().get(&turn_id) {
        Some(t) => {
            t.cancel();
            true
        }
        None => false,
    }
}

/// Answers a tool call that waits for approval. False when nothing waits under that id.
#[tauri::command]
pub fn resolve_approval(state: State<'_, AppState>, id: i64, decision: Decision) -> bool {
    match state.approvals.lock().unwrap().remove(&id) {
        Some(tx) => tx.send(decision).is_ok(),
        None => false,
    }
}
