//! The window's own state (`window_state/`).

use std::sync::Arc;

use serde::Serialize;
use tauri::State;

use super::{CmdResult, ErrorKind, UiError};
use crate::window_state::{PagePatch, PageState, WindowState};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowStateView {
    #[serde(flatten)]
    page: PageState,
    /// Why the saved state was set aside at start (given once).
    note: Option<String>,
}

#[tauri::command]
pub fn window_state(state: State<'_, Arc<WindowState>>) -> WindowStateView {
    let (page, note) = state.page();
    WindowStateView { page, note }
}

/// Changes what `patch` names of the window's state and writes it (atomically).
#[tauri::command]
pub fn change_window_state(state: State<'_, Arc<WindowState>>, patch: PagePatch) -> CmdResult<()> {
    state
        .change(patch)
        .map_err(|e| UiError::new(ErrorKind::File, format!("saving the window's state: {e}")))
}
