//! The MCP servers: their config, their state and its changes (`watch_servers` pushes the
//! servers list on every change, at most every 100 ms), and signing in: `sign_in_mcp_server` (its
//! page opened through the opener plugin, so xdg-open and `BROWSER`; at most 5 minutes;
//! `cancel_sign_in` stops waiting), `sign_out_mcp_server` forgets the sign-in.

use std::time::Duration;

use serde::Serialize;
use switchboard_engine::mcp::import::{self, ImportChoice, ImportPreview};
use switchboard_engine::mcp::oauth::SignInError;
use switchboard_engine::mcp::{
    McpConfig, PromptText, PromptView, ResourceView, ServerConfig, ServerView,
};
use switchboard_engine::secrets::SecretsStatus;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::files::{open_text, Dialog, PickedFile};
use super::{CmdResult, UiError};
use crate::state::AppState;

/// The servers list now and after every change (status, tools, log), pushed through
/// `on_change`: at most one update per 100 ms, so a server that floods its log cannot flood the
/// window. Ends when the window no longer listens.
#[tauri::command]
pub fn watch_servers(
    state: State<'_, AppState>,
    on_change: Channel<Vec<ServerView>>,
) -> CmdResult<()> {
    let host = state.runtime.host.clone();
    let mut changes = host.subscribe();
    on_change
        .send(host.servers())
        .map_err(|e| UiError::invalid(format!("cannot reach the window: {e}")))?;
    tauri::async_runtime::spawn(async move {
        loop {
            match changes.recv().await {
                Ok(()) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            // what changed meanwhile is in the list about to be sent
            changes = changes.resubscribe();
            if on_change.send(host.servers()).is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// The MCP config as the window gets it: secret values replaced by where they are kept
/// (`{"secret": "keyring"}`), never the values.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConfigView {
    config: McpConfig,
    /// The PATH commands are looked up on.
    path: String,
    /// Where secrets are kept (the keyring, or the fallback file and why).
    secrets: SecretsStatus,
    /// The transports the form offers, with what each needs (a URL or a program, a sign-in).
    transports: &'static [switchboard_engine::mcp::TransportInfo],
    /// Each server's transport as the engine reads its entry (`ServerConfig::transport`): the
    /// form shows it, never a copy of the rule.
    transport_of: std::collections::BTreeMap<String, switchboard_engine::mcp::Transport>,
}

#[tauri::command]
pub fn mcp_config(state: State<'_, AppState>) -> McpConfigView {
    let config = state.runtime.mcp_config_view();
    let transport_of = config
        .servers
        .iter()
        .map(|(name, s)| (name.clone(), s.transport()))
        .collect();
    McpConfigView {
        config,
        transport_of,
        // the one the host uses: the login shell's, once known
        path: state
            .runtime
            .host
            .path()
            .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default()),
        secrets: state.runtime.secrets.status(),
        transports: switchboard_engine::mcp::TRANSPORTS,
    }
}

/// Adds a server, or replaces `original` (which may be renamed); `copy_of`: the server it
/// duplicates (its secrets are copied). `{"secret": …}` keeps a field's secret,
/// `{"newSecret": …}` stores a new one.
#[tauri::command]
pub async fn save_mcp_server(
    state: State<'_, AppState>,
    original: Option<String>,
    copy_of: Option<String>,
    name: String,
    server: ServerConfig,
) -> CmdResult<()> {
    state
        .runtime
        .save_server(original.as_deref(), copy_of.as_deref(), &name, server)
        .await?;
    Ok(())
}

/// Deletes a server (and its secrets).
#[tauri::command]
pub async fn delete_mcp_server(state: State<'_, AppState>, name: String) -> CmdResult<()> {
    state.runtime.delete_server(&name).await?;
    Ok(())
}

#[tauri::command]
pub async fn set_mcp_server_enabled(
    state: State<'_, AppState>,
    name: String,
    enabled: bool,
) -> CmdResult<()> {
    state.runtime.set_server_enabled(&name, enabled).await?;
    Ok(())
}

/// Lets a sandboxed server reach what its sandbox refused: one host (as it tried it), or the
/// whole network when `host` is none; saved in its config and applied (it starts again).
#[tauri::command]
pub async fn allow_mcp_server_network(
    state: State<'_, AppState>,
    name: String,
    host: Option<String>,
) -> CmdResult<()> {
    state
        .runtime
        .allow_server_network(&name, host.as_deref())
        .await?;
    Ok(())
}

/// Lets a sandboxed server read a file or folder its sandbox refused (its row's "Allow reading");
/// never a protected one. Saved in its config and applied (it starts again).
#[tauri::command]
pub async fn allow_mcp_server_read(
    state: State<'_, AppState>,
    name: String,
    path: String,
) -> CmdResult<()> {
    state.runtime.allow_server_read(&name, &path).await?;
    Ok(())
}

#[tauri::command]
pub async fn restart_mcp_server(state: State<'_, AppState>, name: String) -> CmdResult<()> {
    if state.runtime.host.restart(&name).await {
        Ok(())
    } else {
        Err(no_server(&name))
    }
}

/// Signs in to a server that wants it (its row's Sign in): its authorization page opens in the
/// system browser, the answer comes back to a listener on 127.0.0.1, and the server starts again
/// with its tokens (kept in the keyring). Ends when the sign-in has (at most 5 minutes).
#[tauri::command]
pub async fn sign_in_mcp_server(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    name: String,
) -> CmdResult<()> {
    let browser = SystemBrowser(app);
    let cancel = CancellationToken::new();
    state
        .sign_ins
        .lock()
        .unwrap()
        .insert(name.clone(), cancel.clone());
    let signed = tokio::select! {
        r = state.runtime.host.sign_in(&name, &browser) => r,
        // the listener ends with the sign-in: an answer that comes later finds nobody
        _ = cancel.cancelled() => Ok(()),
    };
    state.sign_ins.lock().unwrap().remove(&name);
    Ok(signed?)
}

/// Stops waiting for a sign-in (its Cancel): the server stays as it was.
#[tauri::command]
pub fn cancel_sign_in(state: State<'_, AppState>, name: String) -> bool {
    crate::state::cancel_in(&state.sign_ins, name.as_str())
}

/// Forgets a server's sign-in (its tokens and client), and starts it again.
#[tauri::command]
pub async fn sign_out_mcp_server(state: State<'_, AppState>, name: String) -> CmdResult<()> {
    Ok(state.runtime.host.sign_out(&name).await?)
}

/// The sign-in page, opened in the user's browser (through the opener plugin: xdg-open here).
struct SystemBrowser(tauri::AppHandle);

#[async_trait::async_trait]
impl switchboard_engine::mcp::oauth::Browser for SystemBrowser {
    async fn open(&self, url: &str) -> Result<(), SignInError> {
        use tauri_plugin_opener::OpenerExt;
        self.0
            .opener()
            .open_url(url, None::<&str>)
            .map_err(|e| SignInError::Browser(e.into()))
    }
}

/// The user accepts the changed definition of a server's tool: the one they were shown (its
/// hash), not whatever the server presents by now.
#[tauri::command]
pub async fn accept_tool_definition(
    state: State<'_, AppState>,
    server: String,
    tool: String,
    hash: String,
) -> CmdResult<()> {
    Ok(state
        .runtime
        .host
        .accept_tool_definition(&server, &tool, &hash)
        .await?)
}

fn no_server(name: &str) -> UiError {
    UiError::new(
        super::ErrorKind::NotFound,
        format!("There is no server named \"{name}\"."),
    )
}

/// Reads a config from another host (pasted), says what would be imported.
#[tauri::command]
pub fn preview_mcp_import(state: State<'_, AppState>, text: String) -> CmdResult<ImportPreview> {
    import::preview(&text, &state.runtime.mcp_config()).map_err(UiError::invalid)
}

/// The largest config file read for an import.
const MAX_IMPORT_FILE: u64 = 4 * 1024 * 1024;

/// Shows the system's Open dialog (starting where Claude Desktop keeps its config, when that
/// exists) and reads the chosen file. `None` when the user closes the dialog. The window never
/// names a path itself: it can only read what the user picked.
#[tauri::command]
pub async fn pick_mcp_import_file(app: AppHandle) -> CmdResult<Option<PickedFile>> {
    let dialog = Dialog {
        title: "Import MCP servers",
        filter: "MCP config (JSON)",
        ext: "json",
        start: switchboard_engine::paths::import_start_dir(),
    };
    open_text(&app, dialog, MAX_IMPORT_FILE).await
}

/// Adds the chosen servers (all or nothing), turned off: a server from someone else's config
/// runs only after the user says so a second time (the window lists them and asks).
#[tauri::command]
pub async fn import_mcp_servers(
    state: State<'_, AppState>,
    servers: Vec<ImportChoice>,
) -> CmdResult<usize> {
    let (_, n) = state.runtime.import_servers(servers).await?;
    Ok(n)
}

/// The whole config in the Claude Desktop shape, secrets replaced by a placeholder.
#[tauri::command]
pub fn export_mcp_config(state: State<'_, AppState>) -> String {
    state.runtime.export_mcp_config()
}

/// The prompts of the running servers (the composer lists them when the message starts with `/`).
#[tauri::command]
pub fn mcp_prompts(state: State<'_, AppState>) -> Vec<PromptView> {
    state.runtime.host.prompts()
}

/// Runs a prompt with the user's arguments; its messages as text, to put in the composer.
#[tauri::command]
pub async fn get_mcp_prompt(
    state: State<'_, AppState>,
    server: String,
    name: String,
    arguments: serde_json::Map<String, serde_json::Value>,
) -> CmdResult<Vec<PromptText>> {
    state
        .runtime
        .host
        .get_prompt(&server, &name, arguments)
        .await
        .map_err(UiError::from)
}

/// The resources of the running servers (the composer's attach menu).
#[tauri::command]
pub fn mcp_resources(state: State<'_, AppState>) -> Vec<ResourceView> {
    state.runtime.host.resources()
}
