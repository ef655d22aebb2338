use switchboard_engine::chat::view::{conversation_view, ConversationView};
use switchboard_engine::store::{ConversationSummary, ToolChoice};
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

/// Sets which servers and tools a conversation may use (from its next turn on).
#[tauri::command]
pub async fn set_conversation_tools(
    state: State<'_, AppState>,
    id: i64,
    choice: ToolChoice,
) -> CmdResult<()> {
    Ok(state.runtime.store.set_tool_choice(id, &choice).await?)
}
