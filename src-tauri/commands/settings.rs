use serde::Serialize;
use switchboard_engine::llm::{LlmClient, ModelInfo, OllamaClient};
use switchboard_engine::Settings;
use tauri::{AppHandle, State};

use super::{CmdResult, UiError};
use crate::AppState;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingsView {
    #[serde(flatten)]
    settings: Settings,
    /// The URL in effect (the setting, else OLLAMA_HOST, else the default).
    effective_llm_url: String,
}

#[tauri::command]
pub fn get_settings(state: State<'_, AppState>) -> SettingsView {
    let settings = state.settings();
    SettingsView {
        effective_llm_url: settings.llm_url(),
        settings,
    }
}

#[tauri::command]
pub fn save_settings(
    app: AppHandle,
    state: State<'_, AppState>,
    settings: Settings,
) -> CmdResult<SettingsView> {
    state
        .save_settings(&app, settings.clone())
        .map_err(|e| UiError::new("invalid", e))?;
    Ok(SettingsView {
        effective_llm_url: settings.llm_url(),
        settings,
    })
}

#[tauri::command]
pub async fn list_models(state: State<'_, AppState>) -> CmdResult<Vec<ModelInfo>> {
    let url = state.settings().llm_url();
    let client = OllamaClient::new(url.clone());
    client.list_models().await.map_err(|e| UiError {
        url: Some(url),
        ..UiError::from(e)
    })
}
