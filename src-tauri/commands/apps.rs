//! MCP Apps: showing a tool's app page on its card (`open_app`), forgetting a page (`close_app`,
//! after the window has told it: its server's log says how it took it), its log messages
//! (`app_log`), what a server's pages declare (`app_pages`), and the window's closing. What a
//! shown page asks (its calls, its server's resources, context for the model, browser features)
//! is in `app_bridge.rs`; the page itself is served by `crate::apps`.
//!
//! `open_app` shows no page while the tool's definition is not accepted (`McpHost::tool_app`) and
//! says the origins the page may reach, those it names but may not, and what it asks of the
//! browser. `close_app` logs why and how the page took its teardown into its server's log, and the
//! app's own log under the target `apps`; `app_log` puts a page's `notifications/message` into its
//! server's log; `watch_window_close` and `apps_closed`: the window hears that it is closing, tells
//! its apps, then closes.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use switchboard_engine::mcp::apps::{content_security_policy, AppPage, AppPermissions};
use tauri::ipc::Channel;
use tauri::State;

use super::{CmdResult, ErrorKind, UiError};
use crate::apps::NewView;
use crate::state::AppState;

/// What the window needs to show an app page and start it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppOpened {
    view_id: String,
    /// Where the window's frame loads the page between it and the app (the app's own origin).
    url: String,
    server: String,
    tool: String,
    /// The tool's definition as its server listed it (the page may look at it).
    tool_info: Value,
    /// The call's arguments and its result, as the page gets them.
    tool_input: Value,
    tool_result: Option<Value>,
    prefers_border: Option<bool>,
    /// The origins the page may reach: those it declares that the user allowed for its server
    /// (`hostCapabilities.sandbox.csp`).
    approved_csp: Value,
    /// Origins it declares that it may not reach (its server may not reach the network from
    /// apps, or the user has not seen them yet): the card says so.
    closed_origins: Vec<String>,
    /// Its server lets its apps reach the sites they name (else `closed_origins` are closed for
    /// that reason, not for being new).
    app_network: bool,
    /// What it asks of the browser (microphone, camera, …).
    permissions: AppPermissions,
    /// What the user granted this app before (in this run); none: not asked yet.
    granted: Option<AppPermissions>,
}

/// Reads the app page of tool call `call_id`'s tool and serves it at a fresh origin.
#[tauri::command]
pub async fn open_app(state: State<'_, AppState>, call_id: i64) -> CmdResult<AppOpened> {
    let runtime = &state.runtime;
    let origin = runtime
        .store
        .tool_call_origin(call_id)
        .await?
        .ok_or_else(|| UiError::new(ErrorKind::NotFound, "That tool call does not exist."))?;
    // none while the tool's definition is not one the user accepted
    let (routed, uri) = runtime.host.tool_app(&origin.server, &origin.tool)?;
    let page = runtime.host.app_resource(&origin.server, &uri).await?;
    // the origins the page declares that the user allowed, when they let this server's apps out
    let config = runtime.mcp_config().servers.get(&origin.server).cloned();
    let app_network = config.as_ref().is_some_and(|c| c.app_network);
    let seen = match &config {
        Some(c) if c.app_network => c.app_origins.clone(),
        _ => Vec::new(),
    };
    let allowed = page.domains.within(&seen);
    let csp = content_security_policy(&allowed);
    let approved_csp = json!({
        "connectDomains": allowed.connect,
        "resourceDomains": allowed.resource,
        "frameDomains": allowed.frame,
        "baseUriDomains": allowed.base_uri,
    });
    tracing::info!(
        target: "apps",
        "showing the app {uri} of {} (declares {:?}, may reach {:?}, asks {:?})",
        origin.server,
        page.domains,
        allowed,
        page.permissions
    );
    let view_id = state.apps.add(NewView {
        call_id,
        server: origin.server.clone(),
        identity: routed.identity.clone(),
        page: uri.clone(),
        html: page.html,
        csp,
        asks: page.permissions,
    });
    let tool_info = runtime
        .host
        .servers()
        .into_iter()
        .find(|s| s.name == origin.server)
        .and_then(|s| s.tools.into_iter().find(|t| t.name == origin.tool))
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
        .unwrap_or(Value::Null);
    let tool_result = match (origin.status, origin.result_raw, origin.result) {
        (switchboard_engine::store::ToolCallStatus::Done, Some(raw), _) => Some(raw),
        (switchboard_engine::store::ToolCallStatus::Done, None, Some(text)) => Some(json!({
            "content": [{"type": "text", "text": text}],
            "isError": origin.is_error,
        })),
        _ => None,
    };
    Ok(AppOpened {
        url: format!("mcpapp://{view_id}/"),
        granted: state.apps.granted(&view_id),
        view_id,
        server: origin.server,
        tool: origin.tool,
        tool_info,
        tool_input: origin.arguments,
        tool_result,
        prefers_border: page.prefers_border,
        approved_csp,
        closed_origins: page.domains.beyond(&seen),
        app_network,
        permissions: page.permissions,
    })
}

/// How an app page took being closed (`ui/resource-teardown`), as the window saw it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Teardown {
    /// The page answered (else the window stopped waiting).
    answered: bool,
    /// It answered with an error (its message).
    error: Option<String>,
    /// How long the window waited.
    ms: u64,
}

/// The app page `view_id` is no longer shown: its address serves nothing any more. Its server's
/// log says why, and how the page took it (`teardown`; none: it was not asked, as it had not
/// started or had left its page).
#[tauri::command]
pub fn close_app(
    state: State<'_, AppState>,
    view_id: String,
    reason: String,
    teardown: Option<Teardown>,
) {
    let Some((_, server)) = state.apps.remove(&view_id) else {
        return;
    };
    // what it gave the model goes with it
    state.runtime.shared.forget_app_context(&view_id);
    let reason = clip(&reason, 200);
    let how = match teardown {
        None => "it was not asked (it had not started, or had left its page)".to_string(),
        Some(Teardown {
            answered: true,
            error: None,
            ms,
        }) => format!("it answered the teardown in {ms} ms"),
        Some(Teardown {
            answered: true,
            error: Some(e),
            ms,
        }) => format!(
            "it answered the teardown with an error in {ms} ms: {}",
            clip(&e, 200)
        ),
        Some(Teardown { ms, .. }) => {
            format!("it did not answer the teardown within {ms} ms")
        }
    };
    tracing::info!(target: "apps", "{server}'s app closed ({reason}): {how}");
    state.runtime.host.note(
        &server,
        format!("[switchboard] app closed ({reason}): {how}"),
    );
}

/// `on_close` hears when the window is asked to close while apps are shown: it tells them
/// (`ui/resource-teardown`), then calls `apps_closed`.
#[tauri::command]
pub fn watch_window_close(state: State<'_, AppState>, on_close: Channel<()>) {
    state.apps.watch_close(on_close);
}

/// The window has told its apps it is closing: it closes now.
#[tauri::command]
pub fn apps_closed(window: tauri::Window) {
    let _ = window.close();
}

/// A log message from app page `view_id` (`notifications/message`), into its server's log.
#[tauri::command]
pub fn app_log(state: State<'_, AppState>, view_id: String, level: String, data: Value) {
    let Some((_, server)) = state.apps.origin(&view_id) else {
        return;
    };
    let level = if switchboard_engine::mcp::LOG_LEVELS.contains(&level.as_str()) {
        level
    } else {
        "info".into()
    };
    let data = match data {
        Value::String(s) => s,
        other => other.to_string(),
    };
    let data = clip(&data, 2000);
    tracing::info!(target: "apps", "{server}'s app: [{level}] {data}");
    state
        .runtime
        .host
        .note(&server, format!("[app] [{level}] {data}"));
}

/// The app pages of `server`'s tools and the origins each declares (the settings form shows
/// them next to "Let its apps reach the sites they name").
#[tauri::command]
pub async fn app_pages(state: State<'_, AppState>, server: String) -> CmdResult<Vec<AppPage>> {
    Ok(state.runtime.host.app_pages(&server).await?)
}

/// `s`, at most `max` characters (a log line from a page stays a line).
pub(super) fn clip(s: &str, max: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one_line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}
