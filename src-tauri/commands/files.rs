//! The system's Open and Save dialogs (tauri-plugin-dialog, used from Rust only): the window never
//! names a path; it gets the text of the file the user picked, or the path the user chose.

use std::path::PathBuf;

use serde::Serialize;
use tauri::{AppHandle, Manager};
use tauri_plugin_dialog::{DialogExt, FileDialogBuilder};

use super::{CmdResult, UiError};

#[derive(Serialize)]
pub struct PickedFile {
    pub path: String,
    pub text: String,
}

/// What a dialog shows: its title, the file type to offer, where it starts.
pub struct Dialog<'a> {
    pub title: &'a str,
    pub filter: &'a str,
    pub ext: &'a str,
    pub start: Option<PathBuf>,
}

fn builder(app: &AppHandle, d: &Dialog) -> FileDialogBuilder<tauri::Wry> {
    let mut b = app.dialog().file().set_title(d.title);
    if !d.ext.is_empty() {
        b = b.add_filter(d.filter, &[d.ext]);
    }
    if let Some(w) = app.get_webview_window("main") {
        b = b.set_parent(&w);
    }
    if let Some(dir) = &d.start {
        b = b.set_directory(dir);
    }
    b
}

/// Lets the user pick a file and reads it as text (at most `max_bytes`). `None`: the dialog
/// was closed.
pub async fn open_text(
    app: &AppHandle,
    d: Dialog<'_>,
    max_bytes: u64,
) -> CmdResult<Option<PickedFile>> {
    let dialog = builder(app, &d);
    let picked = tauri::async_runtime::spawn_blocking(move || dialog.blocking_pick_file())
        .await
        .map_err(|e| UiError::new(super::ErrorKind::File, e))?;
    let Some(picked) = picked else {
        return Ok(None);
    };
    let path = picked.into_path().map_err(|e| {
        UiError::new(
            super::ErrorKind::File,
            format!("That file cannot be opened here: {e}"),
        )
    })?;
    let shown = path.display().to_string();
    let size = std::fs::metadata(&path)
        .map_err(|e| {
            UiError::new(
                super::ErrorKind::File,
                format!("Could not read {shown}: {e}"),
            )
        })?
        .len();
    if size > max_bytes {
        return Err(UiError::new(
            super::ErrorKind::File,
            format!(
                "{shown} is {} MB: that is too big for this.",
                size / (1024 * 1024)
            ),
        ));
    }
    // the limit holds while reading too (a file that grew, a pipe)
    let bytes = switchboard_engine::paths::read_at_most(&path, max_bytes).map_err(|e| {
        UiError::new(
            super::ErrorKind::File,
            match e {
                switchboard_engine::paths::ReadAtMost::TooBig { .. } => {
                    format!("{shown} is too big for this.")
                }
                e => format!("Could not read {shown}: {e}"),
            },
        )
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        UiError::new(
            super::ErrorKind::File,
            format!("Could not read {shown} as text: {e}"),
        )
    })?;
    Ok(Some(PickedFile { path: shown, text }))
}

/// Lets the user choose where to save `text` (proposing `file_name`) and writes it. The path
/// written, or `None` when the dialog was closed.
pub async fn save_text(
    app: &AppHandle,
    d: Dialog<'_>,
    file_name: &str,
    text: String,
) -> CmdResult<Option<String>> {
    let dialog = builder(app, &d).set_file_name(file_name);
    let picked = tauri::async_runtime::spawn_blocking(move || dialog.blocking_save_file())
        .await
        .map_err(|e| UiError::new(super::ErrorKind::File, e))?;
    let Some(picked) = picked else {
        return Ok(None);
    };
    let path = picked.into_path().map_err(|e| {
        UiError::new(
            super::ErrorKind::File,
            format!("That place cannot be written to here: {e}"),
        )
    })?;
    // the user's alone (0600): a conversation holds what was said and what tools read
    switchboard_engine::store::exchange::write_export(&path, &text).map_err(|e| {
        UiError::new(
            super::ErrorKind::File,
            format!("Could not write {}: {e}", path.display()),
        )
    })?;
    Ok(Some(path.display().to_string()))
}

/// Lets the user pick a file (or, `folder`, a folder); its path. `None`: the dialog was closed.
pub async fn pick_path(app: &AppHandle, d: Dialog<'_>, folder: bool) -> CmdResult<Option<PathBuf>> {
    let dialog = builder(app, &d);
    let picked = tauri::async_runtime::spawn_blocking(move || {
        if folder {
            dialog.blocking_pick_folder()
        } else {
            dialog.blocking_pick_file()
        }
    })
    .await
    .map_err(|e| UiError::new(super::ErrorKind::File, e))?;
    let Some(picked) = picked else {
        return Ok(None);
    };
    picked.into_path().map(Some).map_err(|e| {
        UiError::new(
            super::ErrorKind::File,
            format!("That cannot be opened here: {e}"),
        )
    })
}
