use switchboard_engine::chat::view::{conversation_view, ConversationView};
use switchboard_engine::store::ConversationSummary;
use tauri::State;

use super::CmdResult;
use crate::AppState;

#[tauri::command]
pub async fn list_conversations(state: State<'_, AppState>) -> CmdResult<Vec<ConversationSummary>> {
    Ok(state.runtime.store.list_conversations().await?)
}

#[tauri::command]
pub async fn load_conversation(state: State<'_, AppState>, id: i64) -> CmdResult<ConversationView> {
    Ok(conversation_view(
        &state.runtime.store.conversation(id).await?,
    ))
}
