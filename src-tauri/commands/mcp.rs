use switchboard_engine::mcp::ServerView;
use tauri::State;

use crate::AppState;

#[tauri::command]
pub fn mcp_servers(state: State<'_, AppState>) -> Vec<ServerView> {
    state.runtime.host.servers()
}
