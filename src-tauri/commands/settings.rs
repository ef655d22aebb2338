use serde::Serialize;
use switchboard_engine::llm::ollama::PullProgress;
use switchboard_engine::llm::{ModelInfo, OllamaClient};
use switchboard_engine::secrets::SecretsStatus;
use switchboard_engine::settings::{ProviderKind, SettingsPatch};
use switchboard_engine::{PolicyView, Settings};
use tauri::ipc::Channel;
use tauri::State;
use tokio_util::sync::CancellationToken;

use super::{CmdResult, UiError};
use crate::state::AppState;

/// The settings as the window gets them: API keys replaced by where they are kept
/// (`{"secret": "keyring"}`), never their values.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingsView {
    #[serde(flatten)]
    settings: Settings,
    /// The URL in effect (the setting, else OLLAMA_HOST, else the default).
    effective_llm_url: String,
    /// Where secrets are kept (the keyring, or the fallback file and why), for the note.
    secrets: SecretsStatus,
    /// The standing tool policies, by server and tool (and those older versions kept by name
    /// that apply to nothing, with why), for the list in the dialog.
    policies: Vec<PolicyView>,
}

fn view(state: &AppState, settings: Settings) -> SettingsView {
    SettingsView {
        policies: state.runtime.policy_views(),
        effective_llm_url: settings.llm_url(),
        settings: settings.redacted(),
        secrets: state.runtime.secrets.status(),
    }
}

#[tauri::command]
pub fn get_settings(state: State<'_, AppState>) -> SettingsView {
    view(&state, state.runtime.settings.get())
}

/// Changes what `patch` names (the window keeps no copy of the settings to send back); the reply
/// is the settings as they are now.
#[tauri::command]
pub async fn change_settings(
    state: State<'_, AppState>,
    patch: SettingsPatch,
) -> CmdResult<SettingsView> {
    let settings = state.runtime.change_settings(patch).await?;
    Ok(view(&state, settings))
}

/// The bounded settings' table (`settings::schema`): by key, each one's range, step, default and
/// the message for a value outside; the window sets its inputs' bounds and its one check from it.
#[tauri::command]
pub fn setting_limits() -> serde_json::Value {
    switchboard_engine::settings::schema()
}

/// The models of one provider, or why they could not be listed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderModels {
    provider: String,
    provider_name: String,
    kind: ProviderKind,
    url: String,
    models: Vec<ModelInfo>,
    error: Option<UiError>,
}

/// Every provider's models (the default Ollama first), asked in parallel; a provider that does
/// not answer says why and does not hide the others.
#[tauri::command]
pub async fn list_models(state: State<'_, AppState>) -> CmdResult<Vec<ProviderModels>> {
    let providers = state.runtime.settings.get().all_providers();
    let secrets = &state.runtime.secrets;
    let asks = providers.iter().map(|p| async move {
        let client = switchboard_engine::llm_client(p, secrets);
        let result = client.list_models().await;
        let (models, error) = match result {
            Ok(m) => (m, None),
            Err(e) => (
                vec![],
                Some(UiError {
                    url: Some(p.url.clone()),
                    ..UiError::from(e)
                }),
            ),
        };
        ProviderModels {
            provider: p.id.clone(),
            provider_name: p.name.clone(),
            kind: p.kind,
            url: p.url.clone(),
            models,
            error,
        }
    });
    Ok(futures::future::join_all(asks).await)
}

/// What a model can do (`tools`, `thinking`, `vision`, …), as its server says (Ollama's
/// `/api/show`; OpenAI-compatible servers do not say).
#[tauri::command]
pub async fn model_capabilities(
    state: State<'_, AppState>,
    provider: Option<String>,
    model: String,
) -> CmdResult<Vec<String>> {
    let p = state.runtime.settings.get().provider(provider.as_deref());
    Ok(switchboard_engine::llm_client(&p, &state.runtime.secrets)
        .capabilities(&model)
        .await?)
}

/// Whether a model sees images, as its server says (Ollama: the `vision` capability;
/// llama-server: `/props`' `modalities.vision`); null when it does not say. The same answer the
/// engine refuses a turn's images by.
#[tauri::command]
pub async fn model_sees_images(
    state: State<'_, AppState>,
    provider: Option<String>,
    model: String,
) -> CmdResult<Option<bool>> {
    let p = state.runtime.settings.get().provider(provider.as_deref());
    Ok(switchboard_engine::llm_client(&p, &state.runtime.secrets)
        .model_details(&model)
        .await?
        .vision)
}

/// Downloads a model into the default Ollama; progress streams through `on_progress`. Returns
/// false when it was cancelled (`cancel_pull`).
#[tauri::command]
pub async fn pull_model(
    state: State<'_, AppState>,
    name: String,
    on_progress: Channel<PullProgress>,
) -> CmdResult<bool> {
    let name = name.trim().to_string();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(
            UiError::invalid("Give a model name such as llama3.2 or qwen3:0.6b").on_field("name"),
        );
    }
    let cancel = CancellationToken::new();
    state
        .pulls
        .lock()
        .unwrap()
        .insert(name.clone(), cancel.clone());
    let client = OllamaClient::new(state.runtime.settings.get().llm_url());
    let result = client
        .pull(
            &name,
            &mut |p| {
                let _ = on_progress.send(p);
            },
            &cancel,
        )
        .await;
    state.pulls.lock().unwrap().remove(&name);
    Ok(result?)
}

#[tauri::command]
pub fn cancel_pull(state: State<'_, AppState>, name: String) -> bool {
    crate::state::cancel_in(&state.pulls, name.trim())
}

/// Deletes a model from the default Ollama (the window asks first).
#[tauri::command]
pub async fn delete_model(state: State<'_, AppState>, name: String) -> CmdResult<()> {
    let client = OllamaClient::new(state.runtime.settings.get().llm_url());
    Ok(client.delete_model(&name).await?)
}
