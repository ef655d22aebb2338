use serde::Serialize;
use switchboard_engine::{markdown, paths};
use tauri::State;

use crate::state::AppState;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    version: &'static str,
    data_dir: String,
    mcp_config_file: String,
    mcp_config_error: Option<String>,
}

#[tauri::command]
pub fn app_info(state: State<'_, AppState>) -> AppInfo {
    AppInfo {
        version: env!("CARGO_PKG_VERSION"),
        data_dir: paths::data_dir().display().to_string(),
        mcp_config_file: paths::mcp_config_file().display().to_string(),
        mcp_config_error: state.runtime.mcp_config_error(),
    }
}

/// Markdown → sanitized HTML (the only HTML the window ever inserts).
#[tauri::command]
pub fn render_markdown(text: String) -> String {
    markdown::render(&text)
}
