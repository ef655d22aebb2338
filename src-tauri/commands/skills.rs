//! Settings → Skills: every skill there is (the user's own folder and each running server's),
//! accepting a server's changed skill as shown, and opening the folder of the user's own. A
//! skill's on/off is a setting (`skillsOff`, through `change_settings`); per chat, the chat's
//! own settings (`set_conversation_settings`).
//!
//! `list_skills` (`McpHost::skills_overview`: the user's folder read again, each running server's
//! listing, with the skills off by default), `accept_skill` (by the hash shown),
//! `open_skills_folder` (made when missing, opened through the opener plugin).

use serde::Serialize;
use switchboard_engine::mcp::SkillsOverview;
use tauri::{AppHandle, State};

use super::{CmdResult, UiError};
use crate::state::AppState;

/// What Settings → Skills lists.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsPage {
    #[serde(flatten)]
    overview: SkillsOverview,
    /// The folder of the user's own skills (`None`: not looked for).
    folder: Option<String>,
    /// The skills off by default (`origin/name`).
    off: Vec<String>,
}

/// Every skill, the user's folder read again.
#[tauri::command]
pub fn list_skills(state: State<'_, AppState>) -> SkillsPage {
    let host = &state.runtime.host;
    SkillsPage {
        overview: host.skills_overview(),
        folder: host.skills_dir().map(|d| d.display().to_string()),
        off: state
            .runtime
            .settings
            .read(|s| s.skills_off.iter().cloned().collect()),
    }
}

/// The user accepts `server`'s changed skill `uri` as they were shown it (its `hash`); false when
/// it changed again meanwhile (the list shows it as it is now).
#[tauri::command]
pub async fn accept_skill(
    state: State<'_, AppState>,
    server: String,
    uri: String,
    hash: String,
) -> CmdResult<bool> {
    Ok(state
        .runtime
        .host
        .accept_skill(&server, &uri, &hash)
        .await?)
}

/// Opens the folder of the user's own skills in the file manager (made first when missing).
#[tauri::command]
pub fn open_skills_folder(app: AppHandle, state: State<'_, AppState>) -> CmdResult<String> {
    use tauri_plugin_opener::OpenerExt;
    let dir = state
        .runtime
        .host
        .skills_dir()
        .ok_or_else(|| UiError::invalid("Skills of your own are not looked for."))?;
    std::fs::create_dir_all(&dir).map_err(|e| {
        UiError::invalid(format!("The folder {} cannot be made: {e}", dir.display()))
    })?;
    let path = dir.display().to_string();
    app.opener()
        .open_path(&path, None::<&str>)
        .map_err(|e| UiError::invalid(format!("The folder {path} cannot be opened: {e}")))?;
    Ok(path)
}
