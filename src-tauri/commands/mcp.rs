use serde::Serialize;
use switchboard_engine::mcp::{validate_server, McpConfig, ServerConfig, ServerView};
use tauri::{AppHandle, Manager, State};

use super::{CmdResult, UiError};
use crate::AppState;

#[tauri::command]
pub fn mcp_servers(state: State<'_, AppState>) -> Vec<ServerView> {
    state.runtime.host.servers()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConfigView {
    config: McpConfig,
    /// The PATH commands are looked up on.
    path: String,
}

#[tauri::command]
pub fn mcp_config(state: State<'_, AppState>) -> McpConfigView {
    McpConfigView {
        config: state.mcp_config(),
        path: std::env::var("PATH").unwrap_or_default(),
    }
}

/// Saves the config and applies it in the background (the list shows each server's status).
fn save_and_apply(app: &AppHandle, state: &AppState, config: McpConfig) -> CmdResult<()> {
    state
        .save_mcp_config(app, &config)
        .map_err(|e| UiError::new("save", e))?;
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        state.runtime.host.apply_config(&config).await;
    });
    Ok(())
}

/// Adds a server, or replaces `original` (which may be renamed).
#[tauri::command]
pub fn save_mcp_server(
    app: AppHandle,
    state: State<'_, AppState>,
    original: Option<String>,
    name: String,
    server: ServerConfig,
) -> CmdResult<()> {
    let mut config = state.mcp_config();
    if let Some(o) = &original {
        if !config.servers.contains_key(o) {
            return Err(UiError::new(
                "invalid",
                format!("There is no server named \"{o}\" any more."),
            ));
        }
    }
    let others: Vec<String> = config
        .servers
        .keys()
        .filter(|k| Some(*k) != original.as_ref())
        .cloned()
        .collect();
    validate_server(&name, &server, &others).map_err(|e| UiError {
        field: Some(e.field.to_string()),
        ..UiError::new("invalid", e.message)
    })?;
    if let Some(o) = &original {
        config.servers.remove(o);
    }
    config.servers.insert(name, server);
    save_and_apply(&app, &state, config)
}

#[tauri::command]
pub fn delete_mcp_server(
    app: AppHandle,
    state: State<'_, AppState>,
    name: String,
) -> CmdResult<()> {
    let mut config = state.mcp_config();
    config.servers.remove(&name);
    save_and_apply(&app, &state, config)
}

#[tauri::command]
pub fn set_mcp_server_enabled(
    app: AppHandle,
    state: State<'_, AppState>,
    name: String,
    enabled: bool,
) -> CmdResult<()> {
    let mut config = state.mcp_config();
    let Some(s) = config.servers.get_mut(&name) else {
        return Err(UiError::new(
            "invalid",
            format!("There is no server named \"{name}\"."),
        ));
    };
    s.disabled = !enabled;
    save_and_apply(&app, &state, config)
}

#[tauri::command]
pub async fn restart_mcp_server(state: State<'_, AppState>, name: String) -> CmdResult<()> {
    if state.runtime.host.restart(&name).await {
        Ok(())
    } else {
        Err(UiError::new(
            "invalid",
            format!("There is no server named \"{name}\"."),
        ))
    }
}
