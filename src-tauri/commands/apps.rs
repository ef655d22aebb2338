//! MCP Apps: showing a tool's app page on its card (`open_app`), the calls the page makes
//! (`app_call_tool`, through the same approval as the model's calls, each on its own card), and
//! forgetting a page (`close_app`). The page itself is served by `crate::apps`.

use serde::Serialize;
use serde_json::{json, Map, Value};
use switchboard_engine::mcp::apps::content_security_policy;
use switchboard_engine::ChatEvent;
use tauri::ipc::Channel;
use tauri::State;
use tokio_util::sync::CancellationToken;

use super::{CmdResult, ErrorKind, UiError};
use crate::AppState;

/// What the window needs to show an app page and start it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppOpened {
    view_id: String,
    /// Where the frame loads it from.
    url: String,
    server: String,
    tool: String,
    /// The tool's definition as its server listed it (the page may look at it).
    tool_info: Value,
    /// The call's arguments and its result, as the page gets them.
    tool_input: Value,
    tool_result: Option<Value>,
    prefers_border: Option<bool>,
}

/// Reads the app page of tool call `call_id`'s tool and serves it at a fresh address.
#[tauri::command]
pub async fn open_app(state: State<'_, AppState>, call_id: i64) -> CmdResult<AppOpened> {
    let runtime = &state.runtime;
    let origin = runtime
        .store
        .tool_call_origin(call_id)
        .await?
        .ok_or_else(|| UiError::new(ErrorKind::NotFound, "That tool call does not exist."))?;
    let uri = runtime
        .host
        .route_server_tool(&origin.server, &origin.tool)
        .and_then(|r| r.ui.resource_uri)
        .ok_or_else(|| UiError::invalid("This tool has no app."))?;
    let page = runtime.host.app_resource(&origin.server, &uri).await?;
    // the origins the page declares, only if the user allowed this server's apps the network
    let network = runtime
        .mcp_config()
        .servers
        .get(&origin.server)
        .is_some_and(|c| c.app_network);
    let csp = content_security_policy(&page.domains, network);
    tracing::info!(
        "showing the app {uri} of {} (declared: {:?})",
        origin.server,
        page.domains
    );
    let view_id = state
        .apps
        .add(call_id, origin.server.clone(), page.html, csp);
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
        url: format!("mcpapp://localhost/v/{view_id}"),
        view_id,
        server: origin.server,
        tool: origin.tool,
        tool_info,
        tool_input: origin.arguments,
        tool_result,
        prefers_border: page.prefers_border,
    })
}

/// A `tools/call` from app page `view_id`: a tool of its own server, through approval, shown as
/// its own card (events through `on_event`); the result as the page gets it.
#[tauri::command]
pub async fn app_call_tool(
    state: State<'_, AppState>,
    view_id: String,
    name: String,
    arguments: Option<Map<String, Value>>,
    on_event: Channel<ChatEvent>,
) -> CmdResult<Value> {
    let (call_id, _) = state
        .apps
        .origin(&view_id)
        .ok_or_else(|| UiError::new(ErrorKind::NotFound, "That app is no longer shown."))?;
    let provider = match state.runtime.store.tool_call_origin(call_id).await? {
        Some(o) => {
            state
                .runtime
                .store
                .settings(o.conversation_id)
                .await?
                .provider
        }
        None => None,
    };
    let engine = state.runtime.chat_engine(provider.as_deref());
    let emit = move |ev: ChatEvent| {
        let _ = on_event.send(ev);
    };
    let outcome = engine
        .app_call(
            call_id,
            &name,
            arguments.unwrap_or_default(),
            &emit,
            &CancellationToken::new(),
        )
        .await?;
    Ok(outcome.raw.unwrap_or_else(|| {
        json!({"content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error})
    }))
}

/// The app page `view_id` is no longer shown: its address serves nothing any more.
#[tauri::command]
pub fn close_app(state: State<'_, AppState>, view_id: String) {
    state.apps.remove(&view_id);
}
