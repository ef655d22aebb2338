//! Files the user attaches to the next message: the bytes of a paste or a drop (the window
//! reads them and sends them as the raw body, the file's name in a header), or files picked in
//! the system's dialog (opened from here: the window never names a path). What comes back is
//! ready to send: an image kept in the store with its thumbnail, or a document's text. And a
//! kept image whole, for the window to show it at full size.
//!
//! A kept image is returned whole as a `data:` URL. `send_message` takes `images` (by SHA-256) and
//! `documents`.

use serde::Serialize;
use switchboard_engine::chat::{attach_file as attach, AttachedFile};
use switchboard_engine::media::MAX_FILE_BYTES;
use tauri::ipc::{InvokeBody, Request};
use tauri::{AppHandle, Manager, State};
use tauri_plugin_dialog::DialogExt;

use super::{CmdResult, ErrorKind, UiError};
use crate::state::AppState;

/// The header that names a file sent as bytes (percent-encoded UTF-8).
const NAME_HEADER: &str = "x-file-name";

/// `%XX` escapes (as `encodeURIComponent` writes them) turned back into UTF-8; anything that
/// does not decode is kept as it was.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn ready(state: &AppState, name: &str, bytes: Vec<u8>) -> CmdResult<AttachedFile> {
    let runtime = &state.runtime;
    let max_side = runtime.settings.read(|s| s.image_max_side);
    attach(&runtime.store, name, bytes, max_side)
        .await
        .map_err(|e| UiError::invalid(format!("Could not attach {name}: {e}")))
}

/// The name of a file sent as bytes (`x-file-name`), or "file".
pub(super) fn file_name(request: &Request<'_>) -> String {
    request
        .headers()
        .get(NAME_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(percent_decoded)
        .unwrap_or_else(|| "file".into())
}

/// A pasted or dropped file: its bytes are the request's body, its name in `x-file-name`.
#[tauri::command]
pub async fn attach_file(
    state: State<'_, AppState>,
    request: Request<'_>,
) -> CmdResult<AttachedFile> {
    let name = file_name(&request);
    let InvokeBody::Raw(bytes) = request.body() else {
        return Err(UiError::invalid("A file is sent as its bytes"));
    };
    // refused before it is copied
    if bytes.len() > MAX_FILE_BYTES {
        return Err(UiError::invalid(format!(
            "Could not attach {name}: it is {} MB; files up to {} MB can be attached",
            bytes.len() / (1024 * 1024),
            MAX_FILE_BYTES / (1024 * 1024)
        )));
    }
    ready(&state, &name, bytes.clone()).await
}

/// One file picked in the dialog: ready, or why not.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Picked {
    pub name: String,
    pub file: Option<AttachedFile>,
    pub error: Option<String>,
}

/// Lets the user pick files (images, PDFs, text), and makes each ready to send. Empty when
/// the dialog was closed.
#[tauri::command]
pub async fn pick_attachments(
    app: AppHandle,
    state: State<'_, AppState>,
) -> CmdResult<Vec<Picked>> {
    let mut dialog = app
        .dialog()
        .file()
        .set_title("Attach files")
        .add_filter(
            "Images, PDFs and text",
            &[
                "png", "jpg", "jpeg", "webp", "pdf", "txt", "md", "markdown", "csv", "tsv", "json",
                "log", "xml", "yaml", "yml", "toml", "ini", "html", "css", "js", "ts", "py", "rs",
                "go", "java", "c", "h", "cpp", "sh", "sql",
            ],
        )
        .add_filter("All files", &["*"]);
    if let Some(w) = app.get_webview_window("main") {
        dialog = dialog.set_parent(&w);
    }
    let picked = tauri::async_runtime::spawn_blocking(move || dialog.blocking_pick_files())
        .await
        .map_err(|e| UiError::new(ErrorKind::File, e))?
        .unwrap_or_default();
    let mut out = Vec::with_capacity(picked.len());
    for p in picked {
        let Ok(path) = p.into_path() else {
            out.push(Picked {
                name: "file".into(),
                file: None,
                error: Some("That file cannot be opened here".into()),
            });
            continue;
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        let read = {
            let path = path.clone();
            tauri::async_runtime::spawn_blocking(move || -> Result<Vec<u8>, String> {
                let size = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
                if size > MAX_FILE_BYTES as u64 {
                    return Err(format!(
                        "it is {} MB; files up to {} MB can be attached",
                        size / (1024 * 1024),
                        MAX_FILE_BYTES / (1024 * 1024)
                    ));
                }
                // the limit holds while reading too (a file that grew, a pipe)
                switchboard_engine::paths::read_at_most(&path, MAX_FILE_BYTES as u64).map_err(|e| {
                    match e {
                        switchboard_engine::paths::ReadAtMost::TooBig { .. } => format!(
                            "it is larger than {} MB, the most that can be attached",
                            MAX_FILE_BYTES / (1024 * 1024)
                        ),
                        e => e.to_string(),
                    }
                })
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
        };
        let result = match read {
            Ok(bytes) => ready(&state, &name, bytes).await.map_err(|e| e.message),
            Err(why) => Err(format!("Could not attach {name}: {why}")),
        };
        out.push(match result {
            Ok(file) => Picked {
                name,
                file: Some(file),
                error: None,
            },
            Err(error) => Picked {
                name,
                file: None,
                error: Some(error),
            },
        });
    }
    Ok(out)
}

/// A kept image whole, as a `data:` URL (built here from the file Switchboard wrote).
#[tauri::command]
pub async fn attachment_image(state: State<'_, AppState>, sha256: String) -> CmdResult<String> {
    let kept = state.runtime.store.kept_image(&sha256).await?;
    Ok(switchboard_engine::media::data_url(&kept.mime, &kept.bytes))
}

#[cfg(test)]
mod tests {
    use super::percent_decoded;

    #[test]
    fn names_come_back_from_their_escapes() {
        assert_eq!(percent_decoded("caf%C3%A9%20menu.png"), "café menu.png");
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("a%zzb%4"), "a%zzb%4");
    }
}
