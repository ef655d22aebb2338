use serde::Serialize;
use serde_json::json;
use switchboard_engine::llm::{LlmClient, ModelInfo, OllamaClient};
use switchboard_engine::{paths, Settings};
use tauri::{AppHandle, State};
use tauri_plugin_store::StoreExt;

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
    settings
        .validate()
        .map_err(|e| UiError::new("invalid", e))?;
    let store = app
        .store(paths::settings_file())
        .map_err(|e| UiError::new("settings", e))?;
    store.set("llmUrl", json!(settings.llm_url));
    store.set("model", json!(settings.model));
    store.set("maxIterations", json!(settings.max_iterations));
    store.set("toolTimeoutSecs", json!(settings.tool_timeout_secs));
    store
        .save()
        .map_err(|e| UiError::new("settings", format!("could not save the settings: {e}")))?;
    *state.settings.write().unwrap() = settings.clone();
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
