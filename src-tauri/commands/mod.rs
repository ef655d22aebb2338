//! Thin `#[tauri::command]`s: each adapts arguments, calls the engine, and adapts the answer.

pub mod app;
pub mod chat;
pub mod conversations;
mod files;
pub mod mcp;
pub mod settings;

use serde::Serialize;

/// An error as the window shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiError {
    pub message: String,
    pub kind: String,
    pub url: Option<String>,
    /// The form field the error is about, when it is about one.
    pub field: Option<String>,
}

impl UiError {
    pub fn new(kind: &str, message: impl ToString) -> Self {
        UiError {
            message: message.to_string(),
            kind: kind.into(),
            url: None,
            field: None,
        }
    }
}

impl From<switchboard_engine::store::StoreError> for UiError {
    fn from(e: switchboard_engine::store::StoreError) -> Self {
        UiError::new("store", e)
    }
}

impl From<switchboard_engine::llm::LlmError> for UiError {
    fn from(e: switchboard_engine::llm::LlmError) -> Self {
        UiError::new(e.kind(), &e)
    }
}

impl From<switchboard_engine::chat::ChatError> for UiError {
    fn from(e: switchboard_engine::chat::ChatError) -> Self {
        UiError::new("store", e)
    }
}

pub type CmdResult<T> = Result<T, UiError>;
