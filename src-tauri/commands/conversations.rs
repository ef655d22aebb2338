//! The conversation library: list, open, search, rename, pin, delete (undoable), duplicate,
//! branches, export and import, per-conversation settings, the debug record.

use switchboard_engine::chat::view::{open_page, ConversationView, PAGE};
use switchboard_engine::store::debug::LlmCallRecord;
use switchboard_engine::store::exchange::{self, ExportedConversation};
use switchboard_engine::store::search::SearchHit;
use switchboard_engine::store::{
    ConversationSettings, ConversationSummary, EarlierSummary, ToolChoice,
};
use tauri::{AppHandle, State};

use super::files::{open_text, save_text, Dialog, PickedFile};
use super::{CmdResult, UiError};
use crate::state::AppState;

/// The largest conversation file read (a file is read whole; the longest real conversations,
/// images included, are a few MB).
const MAX_CONVERSATION_FILE: u64 = 64 * 1024 * 1024;

#[tauri::command]
pub async fn list_conversations(state: State<'_, AppState>) -> CmdResult<Vec<ConversationSummary>> {
    Ok(state.runtime.store.list_conversations().await?)
}

/// A conversation as the window shows it: its last page of items (`all`: every item).
#[tauri::command]
pub async fn load_conversation(
    state: State<'_, AppState>,
    id: i64,
    all: Option<bool>,
) -> CmdResult<ConversationView> {
    let page = if all.unwrap_or(false) {
        usize::MAX
    } else {
        PAGE
    };
    Ok(open_page(&state.runtime.store, id, None, page).await?)
}

/// The longest summary the user may write, in characters (a summary stands for older turns in a
/// small context: a long one would leave no room for them).
const MAX_SUMMARY_CHARS: usize = 20_000;

/// The user's text for the summary `id` of older turns: the next request carries it.
#[tauri::command]
pub async fn edit_summary(
    state: State<'_, AppState>,
    id: i64,
    text: String,
) -> CmdResult<EarlierSummary> {
    let text = text.trim();
    if text.is_empty() {
        return Err(UiError::invalid(
            "A summary cannot be empty: it is what the model is told of the earlier conversation",
        )
        .on_field("text"));
    }
    if text.chars().count() > MAX_SUMMARY_CHARS {
        return Err(UiError::invalid(format!(
            "A summary can be at most {MAX_SUMMARY_CHARS} characters: it must leave room in the model's context"
        ))
        .on_field("text"));
    }
    Ok(state.runtime.store.edit_summary(id, text).await?)
}

/// Pins message `id` (always sent to the model whole, however long the chat grows), or unpins it.
#[tauri::command]
pub async fn set_message_pinned(
    state: State<'_, AppState>,
    id: i64,
    pinned: bool,
) -> CmdResult<()> {
    Ok(state.runtime.store.set_message_pinned(id, pinned).await?)
}

/// Sets which servers and tools a conversation may use (from its next turn on).
#[tauri::command]
pub async fn set_conversation_tools(
    state: State<'_, AppState>,
    id: i64,
    choice: ToolChoice,
) -> CmdResult<()> {
    Ok(state.runtime.store.set_tool_choice(id, &choice).await?)
}

/// Full-text search over messages and tool calls; the best 100 hits.
#[tauri::command]
pub async fn search_conversations(
    state: State<'_, AppState>,
    query: String,
) -> CmdResult<Vec<SearchHit>> {
    Ok(state.runtime.store.search(&query, 100).await?)
}

#[tauri::command]
pub async fn rename_conversation(
    state: State<'_, AppState>,
    id: i64,
    title: String,
) -> CmdResult<()> {
    if title.trim().is_empty() {
        return Err(UiError::invalid("The title cannot be empty").on_field("title"));
    }
    Ok(state.runtime.store.rename_conversation(id, &title).await?)
}

#[tauri::command]
pub async fn set_conversation_pinned(
    state: State<'_, AppState>,
    id: i64,
    pinned: bool,
) -> CmdResult<()> {
    Ok(state.runtime.store.set_pinned(id, pinned).await?)
}

/// Hides it; `restore_conversation` brings it back until the app is started again.
#[tauri::command]
pub async fn delete_conversation(state: State<'_, AppState>, id: i64) -> CmdResult<()> {
    Ok(state.runtime.store.delete_conversation(id).await?)
}

#[tauri::command]
pub async fn restore_conversation(state: State<'_, AppState>, id: i64) -> CmdResult<()> {
    Ok(state.runtime.store.restore_conversation(id).await?)
}

#[tauri::command]
pub async fn duplicate_conversation(state: State<'_, AppState>, id: i64) -> CmdResult<i64> {
    Ok(state.runtime.store.duplicate_conversation(id).await?)
}

/// Shows the branch through `message_id` (a search hit on another branch), or through its
/// sibling `step` places away (the `‹ n/m ›` switcher).
#[tauri::command]
pub async fn show_branch(
    state: State<'_, AppState>,
    id: i64,
    message_id: i64,
    step: Option<i64>,
) -> CmdResult<ConversationView> {
    let store = &state.runtime.store;
    let focus = match step.unwrap_or(0) {
        // a search hit: its branch, unless it is shown already
        0 => {
            store.reveal(id, message_id).await?;
            message_id
        }
        step => {
            let target = store.sibling(message_id, step).await?;
            store.show_branch(id, target).await?;
            target
        }
    };
    // the page reaches back to the message shown, however early it is
    Ok(open_page(store, id, Some(focus), PAGE).await?)
}

#[tauri::command]
pub async fn set_conversation_settings(
    state: State<'_, AppState>,
    id: i64,
    settings: ConversationSettings,
) -> CmdResult<()> {
    settings.validate()?;
    Ok(state.runtime.store.set_settings(id, &settings).await?)
}

/// The exact requests and responses of the conversation's recent LLM calls.
#[tauri::command]
pub async fn llm_calls(state: State<'_, AppState>, id: i64) -> CmdResult<Vec<LlmCallRecord>> {
    Ok(state.runtime.store.llm_calls(id).await?)
}

/// A file name from a title: letters, digits, spaces and dashes.
fn file_stem(title: &str) -> String {
    let s: String = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == ' ' || c == '-' {
                c
            } else {
                ' '
            }
        })
        .collect();
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.is_empty() {
        "conversation".into()
    } else {
        s.chars().take(60).collect()
    }
}

/// How a conversation is exported.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// The shown branch, for reading.
    Markdown,
    /// Everything (every branch, tool calls, settings), to import again.
    Json,
}

/// Writes the conversation to a file the user picks in the system's Save dialog. The path
/// written, or `None` when the dialog was closed.
#[tauri::command]
pub async fn export_conversation(
    app: AppHandle,
    state: State<'_, AppState>,
    id: i64,
    format: ExportFormat,
) -> CmdResult<Option<String>> {
    let store = &state.runtime.store;
    let (text, ext, filter) = match format {
        ExportFormat::Markdown => (
            exchange::markdown(&store.conversation(id).await?),
            "md",
            "Markdown",
        ),
        ExportFormat::Json => (
            serde_json::to_string_pretty(&store.export_json(id).await?).unwrap_or_default(),
            "json",
            "Switchboard conversation (JSON)",
        ),
    };
    let title = store.conversation(id).await?.summary.title;
    let dialog = Dialog {
        title: "Export conversation",
        filter,
        ext,
        start: switchboard_engine::paths::documents_dir(),
    };
    save_text(&app, dialog, &format!("{}.{ext}", file_stem(&title)), text).await
}

/// Imports a conversation exported as JSON, from a file the user picks. Its new id, or `None`
/// when the dialog was closed.
#[tauri::command]
pub async fn import_conversation(
    app: AppHandle,
    state: State<'_, AppState>,
) -> CmdResult<Option<i64>> {
    let dialog = Dialog {
        title: "Import a conversation",
        filter: "Switchboard conversation (JSON)",
        ext: "json",
        start: switchboard_engine::paths::documents_dir(),
    };
    let Some(PickedFile { path: shown, text }) =
        open_text(&app, dialog, MAX_CONVERSATION_FILE).await?
    else {
        return Ok(None);
    };
    let doc: ExportedConversation = serde_json::from_str(&text).map_err(|e| {
        UiError::invalid(format!(
            "{shown} is not an exported Switchboard conversation: {e}"
        ))
    })?;
    Ok(Some(state.runtime.store.import_json(&doc, None).await?))
}
