//! Thin `#[tauri::command]`s: each adapts arguments, calls the engine, and adapts the answer.
//!
//! This file holds **the one list of commands** (`handler!`), which `build.rs` reads. Errors reach
//! the window as `UiError {message, kind, url, field}` with their real kind (`invalid`,
//! `not_found`, `store`, `unreachable`, `mcp`, `file`, …). Commands only adapt (arguments →
//! engine call → view model / `UiError`); nothing the CLI would need lives here.

pub mod app;
pub mod app_bridge;
pub mod apps;
pub mod attach;
pub mod catalog;
pub mod chat;
pub mod conversations;
mod files;
pub mod mcp;
pub mod models;
pub mod settings;
pub mod skills;
pub mod window;

use serde::Serialize;
use switchboard_engine::llm::{LlmError, LlmErrorKind};

/// Every command the window may call, registered with Tauri by `lib.rs`. This list is the only
/// one: `build.rs` reads it to allow each command in the app manifest, writes the window's
/// capability file from it, and fails the build when `ui/js/ipc.js` (the one module that calls
/// commands) calls one that is not here or leaves one of these uncalled.
macro_rules! handler {
    () => {
        tauri::generate_handler![
            // commands-begin
            commands::app::app_info,
            commands::app::render_markdown,
            commands::settings::get_settings,
            commands::settings::change_settings,
            commands::settings::setting_limits,
            commands::settings::list_models,
            commands::settings::model_capabilities,
            commands::settings::model_sees_images,
            commands::settings::pull_model,
            commands::settings::cancel_pull,
            commands::settings::delete_model,
            commands::models::model_tool_format,
            commands::models::check_model,
            commands::models::cancel_model_check,
            commands::models::last_model_check,
            commands::conversations::list_conversations,
            commands::conversations::load_conversation,
            commands::conversations::search_conversations,
            commands::conversations::rename_conversation,
            commands::conversations::set_conversation_pinned,
            commands::conversations::delete_conversation,
            commands::conversations::restore_conversation,
            commands::conversations::duplicate_conversation,
            commands::conversations::show_branch,
            commands::conversations::set_conversation_settings,
            commands::conversations::set_conversation_tools,
            commands::conversations::edit_summary,
            commands::conversations::set_message_pinned,
            commands::conversations::llm_calls,
            commands::conversations::export_conversation,
            commands::conversations::import_conversation,
            commands::chat::send_message,
            commands::chat::stop_turn,
            commands::chat::answer_question,
            commands::chat::cancel_tool_call,
            commands::chat::watch_tasks,
            commands::attach::attach_file,
            commands::attach::pick_attachments,
            commands::attach::attachment_image,
            commands::apps::open_app,
            commands::app_bridge::app_call_tool,
            commands::app_bridge::app_read_resource,
            commands::app_bridge::app_list,
            commands::app_bridge::app_model_context,
            commands::app_bridge::app_grant,
            commands::app_bridge::app_csp_violation,
            commands::apps::close_app,
            commands::apps::app_log,
            commands::apps::app_pages,
            commands::apps::watch_window_close,
            commands::apps::apps_closed,
            commands::mcp::watch_servers,
            commands::mcp::mcp_config,
            commands::mcp::save_mcp_server,
            commands::mcp::delete_mcp_server,
            commands::mcp::set_mcp_server_enabled,
            commands::mcp::allow_mcp_server_network,
            commands::mcp::allow_mcp_server_read,
            commands::mcp::restart_mcp_server,
            commands::mcp::sign_in_mcp_server,
            commands::mcp::sign_out_mcp_server,
            commands::mcp::cancel_sign_in,
            commands::mcp::accept_tool_definition,
            commands::mcp::preview_mcp_import,
            commands::mcp::pick_mcp_import_file,
            commands::mcp::import_mcp_servers,
            commands::mcp::export_mcp_config,
            commands::mcp::mcp_prompts,
            commands::mcp::get_mcp_prompt,
            commands::mcp::mcp_resources,
            commands::skills::list_skills,
            commands::skills::accept_skill,
            commands::skills::open_skills_folder,
            commands::catalog::catalog_search,
            commands::catalog::catalog_icon,
            commands::catalog::catalog_prepare,
            commands::catalog::catalog_prepare_update,
            commands::catalog::catalog_preview,
            commands::catalog::catalog_install,
            commands::catalog::catalog_cancel,
            commands::catalog::catalog_updates,
            commands::catalog::set_catalog_registry,
            commands::catalog::pick_bundle,
            commands::catalog::pick_setting_path,
            commands::catalog::watch_bundles,
            commands::catalog::open_dropped_bundle,
            commands::window::window_state,
            commands::window::change_window_state,
            commands::window::notify,
            commands::window::watch_notification_clicks,
            // commands-end
        ]
    };
}
pub(crate) use handler;

/// What kind of failure a [`UiError`] is, for the window to choose how to show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request cannot be carried out as sent (an empty message, a bad form field).
    Invalid,
    /// What it names is not there (a conversation, a message, a server, a question, a model).
    NotFound,
    /// The conversation database failed.
    Store,
    /// The LLM server cannot be reached.
    Unreachable,
    /// The LLM server answered with an HTTP error.
    Http,
    /// The LLM failed mid-reply.
    Stream,
    /// The LLM server sent something that is not valid.
    Protocol,
    /// An MCP server could not answer.
    Mcp,
    /// A file could not be picked, read or written.
    File,
    /// A secret could not be stored or read (the keyring, or the secrets file).
    Secret,
}

/// An error as the window shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiError {
    pub message: String,
    pub kind: ErrorKind,
    pub url: Option<String>,
    /// The form field the error is about, when it is about one.
    pub field: Option<String>,
}

impl UiError {
    pub fn new(kind: ErrorKind, message: impl ToString) -> Self {
        UiError {
            message: message.to_string(),
            kind,
            url: None,
            field: None,
        }
    }

    pub fn invalid(message: impl ToString) -> Self {
        UiError::new(ErrorKind::Invalid, message)
    }

    pub fn on_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
}

impl From<switchboard_engine::store::StoreError> for UiError {
    fn from(e: switchboard_engine::store::StoreError) -> Self {
        use switchboard_engine::store::StoreError as E;
        let kind = match &e {
            E::NoConversation(_) | E::NoMessage(_) | E::NoAttachment(_) | E::NoSummary(_) => {
                ErrorKind::NotFound
            }
            E::Import(_) => ErrorKind::Invalid,
            E::Sqlite(_) | E::Migration(_) | E::Closed => ErrorKind::Store,
            E::File(_) => ErrorKind::File,
        };
        UiError::new(kind, e)
    }
}

impl From<LlmError> for UiError {
    fn from(e: LlmError) -> Self {
        let kind = match e.kind() {
            LlmErrorKind::Unreachable => ErrorKind::Unreachable,
            LlmErrorKind::NotFound => ErrorKind::NotFound,
            LlmErrorKind::Http => ErrorKind::Http,
            LlmErrorKind::Stream => ErrorKind::Stream,
            LlmErrorKind::Protocol => ErrorKind::Protocol,
            LlmErrorKind::Secret => ErrorKind::Secret,
        };
        let url = match &e {
            LlmError::Unreachable { url, .. } => Some(url.clone()),
            _ => None,
        };
        UiError {
            url,
            ..UiError::new(kind, &e)
        }
    }
}

impl From<switchboard_engine::chat::ChatError> for UiError {
    fn from(e: switchboard_engine::chat::ChatError) -> Self {
        use switchboard_engine::chat::ChatError as E;
        match e {
            E::Store(e) => e.into(),
            E::Invalid(m) => UiError::invalid(m),
        }
    }
}

impl From<switchboard_engine::mcp::HostError> for UiError {
    fn from(e: switchboard_engine::mcp::HostError) -> Self {
        use switchboard_engine::mcp::HostError as E;
        let kind = match &e {
            E::NotConfigured(_) => ErrorKind::NotFound,
            E::NoTool { .. } => ErrorKind::NotFound,
            E::NotRunning(_)
            | E::Timeout { .. }
            | E::Request { .. }
            | E::Unusable(_)
            | E::SignIn(_)
            | E::ChangedAgain { .. }
            | E::NotAccepted { .. } => ErrorKind::Mcp,
        };
        UiError::new(kind, e)
    }
}

impl From<switchboard_engine::settings::SettingsError> for UiError {
    fn from(e: switchboard_engine::settings::SettingsError) -> Self {
        use switchboard_engine::settings::SettingsError as E;
        let kind = match &e {
            E::Invalid(_) => ErrorKind::Invalid,
            E::Write { .. } => ErrorKind::File,
            E::Secret(_) => ErrorKind::Secret,
        };
        UiError::new(kind, e)
    }
}

impl From<switchboard_engine::store::InvalidSetting> for UiError {
    fn from(e: switchboard_engine::store::InvalidSetting) -> Self {
        let field = e.field.to_string();
        UiError::invalid(e).on_field(field)
    }
}

impl From<switchboard_engine::McpConfigError> for UiError {
    fn from(e: switchboard_engine::McpConfigError) -> Self {
        use switchboard_engine::McpConfigError as E;
        match &e {
            E::Write { .. } => UiError::new(ErrorKind::File, e),
            E::Unreadable(_) => UiError::invalid(e),
            E::Invalid { field, .. } => {
                let field = field.clone();
                UiError::invalid(e).on_field(field)
            }
            E::NoServer(_) => UiError::new(ErrorKind::NotFound, e),
            E::Secret(_) => UiError::new(ErrorKind::Secret, e),
        }
    }
}

impl From<switchboard_engine::chat::AnswerError> for UiError {
    fn from(e: switchboard_engine::chat::AnswerError) -> Self {
        use switchboard_engine::chat::AnswerError as E;
        match &e {
            E::NotWaiting => UiError::new(ErrorKind::NotFound, e),
            E::WrongKind => UiError::invalid(e),
            E::InvalidArguments(_) => UiError::invalid(e).on_field("arguments"),
        }
    }
}

pub type CmdResult<T> = Result<T, UiError>;
