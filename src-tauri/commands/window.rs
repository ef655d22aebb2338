//! The window's own state (`window_state/`) and its desktop notifications (`notify.rs`).

use std::sync::Arc;

use serde::Serialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};

use super::{CmdResult, ErrorKind, UiError};
use crate::notify::{Notifier, NotifyKind};
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

/// Shows a desktop notification of `kind` unless the window is focused or the user turned that
/// kind off; true when it went to the desktop's notification server.
#[tauri::command]
pub fn notify(
    app: AppHandle,
    notifier: State<'_, Notifier>,
    kind: NotifyKind,
    title: String,
    body: String,
    conversation_id: Option<i64>,
) -> bool {
    notifier.notify(&app, kind, &title, &body, conversation_id)
}

/// `on_click` hears a click on a notification: the conversation to open, or null.
#[tauri::command]
pub fn watch_notification_clicks(notifier: State<'_, Notifier>, on_click: Channel<Option<i64>>) {
    notifier.watch(on_click);
}
