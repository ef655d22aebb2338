//! Where Switchboard keeps its files. The same folders Tauri uses for the app's identifier, so the
//! window and the headless CLI share config, conversations and the files sandbox.

use std::path::PathBuf;

pub const APP_IDENTIFIER: &str = "dev.switchboard.desktop";

/// Conversations database, the files sandbox, logs.
pub fn data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(APP_IDENTIFIER)
}

/// `mcp.json`, `settings.json`.
pub fn config_dir() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(APP_IDENTIFIER)
}

pub fn database_file() -> PathBuf {
    data_dir().join("conversations.sqlite3")
}

pub fn mcp_config_file() -> PathBuf {
    config_dir().join("mcp.json")
}

pub fn settings_file() -> PathBuf {
    config_dir().join("settings.json")
}

/// Where an import dialog starts: Claude Desktop's config folder when it exists, else home.
pub fn import_start_dir() -> Option<PathBuf> {
    dirs::config_dir()
        .map(|d| d.join("Claude"))
        .filter(|d| d.is_dir())
        .or_else(dirs::home_dir)
}

/// Where an export dialog starts: the Documents folder when there is one.
pub fn documents_dir() -> Option<PathBuf> {
    dirs::document_dir()
        .filter(|d| d.is_dir())
        .or_else(dirs::home_dir)
}
