//! A model's tool use: the tool-call format detected for it (shown in its row), and the model
//! check (Settings → Models → Check tool use), its progress, its cancel, its remembered result.
//!
//! Commands: `model_tool_format`, `check_model` (progress through a Channel), `cancel_model_check`,
//! `last_model_check`.

use switchboard_engine::chat::check::{CheckEvent, CheckReport};
use switchboard_engine::chat::families::ToolFormat;
use tauri::ipc::Channel;
use tauri::State;
use tokio_util::sync::CancellationToken;

use super::CmdResult;
use crate::state::AppState;

/// Where a check of `model` on `provider` is registered (so Cancel finds it).
fn key(provider: Option<&str>, model: &str) -> String {
    format!("{}\n{model}", provider.unwrap_or(""))
}

/// The tool-call format detected for `model` from what its server says (its chat template, its
/// name, its family); `None` when none fits.
#[tauri::command]
pub async fn model_tool_format(
    state: State<'_, AppState>,
    provider: Option<String>,
    model: String,
) -> CmdResult<Option<ToolFormat>> {
    let p = state.runtime.settings.get().provider(provider.as_deref());
    Ok(state.runtime.tool_format(&p, &model).await?)
}

/// Checks how `model` uses tools; each probe's start and result stream through `on_event`.
/// The report is remembered for the model unless the check was cancelled (`cancel_model_check`).
#[tauri::command]
pub async fn check_model(
    state: State<'_, AppState>,
    provider: Option<String>,
    model: String,
    on_event: Channel<CheckEvent>,
) -> CmdResult<CheckReport> {
    let cancel = CancellationToken::new();
    let k = key(provider.as_deref(), &model);
    state
        .checks
        .lock()
        .unwrap()
        .insert(k.clone(), cancel.clone());
    let p = state.runtime.settings.get().provider(provider.as_deref());
    let mut send = |e: CheckEvent| {
        let _ = on_event.send(e);
    };
    let report = state
        .runtime
        .check_model(&p, &model, &mut send, &cancel)
        .await;
    state.checks.lock().unwrap().remove(&k);
    Ok(report?)
}

#[tauri::command]
pub fn cancel_model_check(
    state: State<'_, AppState>,
    provider: Option<String>,
    model: String,
) -> bool {
    crate::state::cancel_in(&state.checks, key(provider.as_deref(), &model).as_str())
}

/// The last check of `model`, as remembered.
#[tauri::command]
pub async fn last_model_check(
    state: State<'_, AppState>,
    provider: Option<String>,
    model: String,
) -> CmdResult<Option<CheckReport>> {
    let p = state.runtime.settings.get().provider(provider.as_deref());
    Ok(state.runtime.last_model_check(&p, &model).await?)
}
