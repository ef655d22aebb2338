//! What an app shown on a card asks, each through the window's rules: a tool call of its server
//! (`app_call_tool`: the checks and the approval a model's call gets, asked once per app and
//! tool on the app's card, in the app's name), its server's resources (`app_read_resource`,
//! `app_list`), context for the model (`app_model_context`), the browser features it asks for
//! once the user answered (`app_grant`), and what its Content-Security-Policy refused
//! (`app_csp_violation`, into its server's log).
//!
//! `app_call_tool` goes to `ChatEngine::app_call`, its questions through a channel; `app_grant`'s
//! answer becomes the frames' `allow`.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use switchboard_engine::chat::AppCaller;
use switchboard_engine::mcp::apps::AppPermissions;
use switchboard_engine::mcp::AppListing;
use switchboard_engine::ChatEvent;
use tauri::ipc::Channel;
use tauri::State;

use super::apps::clip;
use super::{CmdResult, ErrorKind, UiError};
use crate::state::AppState;

/// The most CSP violations of one page its server's log hears.
const MAX_LOGGED_VIOLATIONS: u32 = 20;

fn shown(state: &AppState, view_id: &str) -> CmdResult<(i64, String)> {
    state
        .apps
        .origin(view_id)
        .ok_or_else(|| UiError::new(ErrorKind::NotFound, "That app is no longer shown."))
}

/// A `tools/call` from app page `view_id` (which calls itself `app_name`): a tool of its own
/// server, through the checks and the approval (its questions through `on_event`, on the app's
/// card); the result as the page gets it. Cancelled when the page goes.
#[tauri::command]
pub async fn app_call_tool(
    state: State<'_, AppState>,
    view_id: String,
    app_name: Option<String>,
    name: String,
    arguments: Option<Map<String, Value>>,
    on_event: Channel<ChatEvent>,
) -> CmdResult<Value> {
    let (call_id, _) = shown(&state, &view_id)?;
    let cancel = state
        .apps
        .call_token(&view_id)
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
    let caller = AppCaller {
        origin: call_id,
        name: app_name,
    };
    let outcome = engine
        .app_call(
            &caller,
            &name,
            arguments.unwrap_or_default(),
            &emit,
            &cancel,
        )
        .await?;
    Ok(outcome.raw.unwrap_or_else(|| {
        json!({"content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error})
    }))
}

/// `resources/read` from app page `view_id`: a resource of its own server, as the server gave it.
#[tauri::command]
pub async fn app_read_resource(
    state: State<'_, AppState>,
    view_id: String,
    uri: String,
) -> CmdResult<Value> {
    let (_, server) = shown(&state, &view_id)?;
    Ok(state.runtime.host.app_read_resource(&server, &uri).await?)
}

/// Which list an app asks its server for.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub enum Listing {
    Resources,
    ResourceTemplates,
}

/// `resources/list` or `resources/templates/list` (one page, from `cursor`) from app page
/// `view_id`: its own server's, as the server listed them.
#[tauri::command]
pub async fn app_list(
    state: State<'_, AppState>,
    view_id: String,
    listing: Listing,
    cursor: Option<String>,
) -> CmdResult<Value> {
    let (_, server) = shown(&state, &view_id)?;
    let listing = match listing {
        Listing::Resources => AppListing::Resources,
        Listing::ResourceTemplates => AppListing::ResourceTemplates,
    };
    Ok(state
        .runtime
        .host
        .app_list(&server, listing, cursor)
        .await?)
}

/// `ui/update-model-context` from app page `view_id`: its text blocks and structured content
/// (as JSON) become what it tells the model from the next turn on, replacing what it said
/// before; nothing clears it.
#[tauri::command]
pub async fn app_model_context(
    state: State<'_, AppState>,
    view_id: String,
    app_name: Option<String>,
    content: Option<Vec<Value>>,
    structured_content: Option<Value>,
) -> CmdResult<()> {
    let (call_id, server) = shown(&state, &view_id)?;
    let mut parts: Vec<String> = content
        .unwrap_or_default()
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str().map(String::from))
        .collect();
    if let Some(s) = structured_content.filter(|s| s.as_object().is_some_and(|o| !o.is_empty())) {
        parts.push(s.to_string());
    }
    let text = parts.join("\n");
    let caller = AppCaller {
        origin: call_id,
        name: app_name,
    };
    tracing::info!(target: "apps", "{server}'s app gives the model {} characters of context", text.len());
    state
        .runtime
        .chat_engine(None)
        .set_app_context(&caller, &view_id, &text)
        .await?;
    Ok(())
}

/// The user answered what app page `view_id` asks of the browser: `granted` (none: refused).
/// Remembered for that app in this run; what its frames may use, as their `allow` attribute.
#[tauri::command]
pub fn app_grant(
    state: State<'_, AppState>,
    view_id: String,
    granted: AppPermissions,
) -> CmdResult<String> {
    let (_, server) = shown(&state, &view_id)?;
    let allow = state
        .apps
        .grant(&view_id, granted)
        .ok_or_else(|| UiError::new(ErrorKind::NotFound, "That app is no longer shown."))?;
    let said = if allow.is_empty() {
        "nothing".to_string()
    } else {
        allow.clone()
    };
    state.runtime.host.note(
        &server,
        format!("[switchboard] the user granted its app: {said}"),
    );
    Ok(allow)
}

/// App page `view_id` had something refused by its Content-Security-Policy (`directive`, the
/// address `blocked`): into its server's log (the first few) and the app log.
#[tauri::command]
pub fn app_csp_violation(
    state: State<'_, AppState>,
    view_id: String,
    directive: String,
    blocked: String,
) {
    let Some((server, n)) = state.apps.violation(&view_id) else {
        return;
    };
    let (directive, blocked) = (clip(&directive, 60), clip(&blocked, 200));
    tracing::warn!(target: "apps", "{server}'s app: its policy refused {blocked} ({directive})");
    if n <= MAX_LOGGED_VIOLATIONS {
        let blocked = if blocked.is_empty() {
            "something"
        } else {
            &blocked
        };
        state.runtime.host.note(
            &server,
            format!("[switchboard] its app was refused {blocked} ({directive}) by its Content-Security-Policy"),
        );
    }
}
