use serde_json::Value;
use switchboard_engine::chat::approval::{validate_arguments, Decision};
use switchboard_engine::chat::Resume;
use switchboard_engine::chat::{with_attachments, Attachment};
use switchboard_engine::mcp::ElicitationAnswer;
use switchboard_engine::store::ToolChoice;
use switchboard_engine::{ChatEvent, TurnRequest, TurnSummary};
use tauri::ipc::Channel;
use tauri::{AppHandle, State};
use tokio_util::sync::CancellationToken;

use super::{CmdResult, UiError};
use crate::AppState;

/// A resource the user attached to a message.
#[derive(serde::Deserialize)]
pub struct ResourceRef {
    server: String,
    uri: String,
    name: String,
}

/// What the window sends for one turn.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendRequest {
    /// Chosen by the window, so it can stop the turn while it runs.
    turn_id: String,
    conversation_id: Option<i64>,
    model: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    attachments: Vec<ResourceRef>,
    tool_choice: Option<ToolChoice>,
    /// Edit: the message this text replaces (a new branch).
    edit_of: Option<i64>,
    /// Regenerate the reply to this user message (a new branch).
    regenerate: Option<i64>,
    /// After the tool-round limit: continue or wrap up.
    resume: Option<Resume>,
    /// The provider of `model` (an id from the settings); `None`: the conversation's, or Ollama.
    provider: Option<String>,
    /// A new chat's own settings (system prompt, temperature, context length).
    chat_settings: Option<switchboard_engine::store::ConversationSettings>,
}

/// Runs one turn; its events stream through `on_event`.
#[tauri::command]
pub async fn send_message(
    app: AppHandle,
    state: State<'_, AppState>,
    request: SendRequest,
    on_event: Channel<ChatEvent>,
) -> CmdResult<TurnSummary> {
    let r = request;
    let adds_message = r.regenerate.is_none() && r.resume.is_none();
    if adds_message && r.text.trim().is_empty() {
        return Err(UiError::new("invalid", "The message is empty"));
    }
    if r.model.trim().is_empty() {
        return Err(UiError::new("invalid", "Choose a model first"));
    }
    // attached resources are read now; one that cannot be read stops the send (nothing is lost:
    // the window keeps the text and the attachments)
    let mut read = Vec::new();
    for a in r.attachments {
        let got = state
            .runtime
            .host
            .read_resource(&a.server, &a.uri)
            .await
            .map_err(|e| UiError::new("attachment", format!("Could not attach {}: {e}", a.name)))?;
        read.push(Attachment {
            name: a.name,
            uri: a.uri,
            text: got.text,
        });
    }
    let text = with_attachments(&r.text, &read);
    let cancel = CancellationToken::new();
    state
        .turns
        .lock()
        .unwrap()
        .insert(r.turn_id.clone(), cancel.clone());
    let provider = match (&r.provider, r.conversation_id) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(id)) => state.runtime.store.settings(id).await?.provider,
        (None, None) => None,
    };
    let engine = state.chat_engine(&app, provider.as_deref());
    let emit = move |ev: ChatEvent| {
        if let Err(e) = on_event.send(ev) {
            tracing::warn!("could not deliver a chat event to the window: {e}");
        }
    };
    let result = engine
        .run_turn(
            TurnRequest {
                conversation_id: r.conversation_id,
                model: r.model,
                text,
                tool_choice: r.tool_choice,
                edit_of: r.edit_of,
                regenerate: r.regenerate,
                resume: r.resume,
                provider,
                settings: r.chat_settings,
            },
            &emit,
            cancel,
        )
        .await;
    state.turns.lock().unwrap().remove(&r.turn_id);
    Ok(result?)
}

#[tauri::command]
pub fn stop_turn(state: State<'_, AppState>, turn_id: String) -> bool {
    match state.turns.lock().unwrap().get(&turn_id) {
        Some(t) => {
            t.cancel();
            true
        }
        None => false,
    }
}

/// Answers a tool call that waits for approval. Edited arguments are checked against the tool's
/// `inputSchema` first: if they do not fit, the call keeps waiting and the error says why.
#[tauri::command]
pub fn resolve_approval(
    state: State<'_, AppState>,
    id: i64,
    decision: Decision,
) -> CmdResult<bool> {
    let mut pending = state.approvals.lock().unwrap();
    let Some((name, _)) = pending.get(&id) else {
        return Ok(false);
    };
    if let Some(args) = &decision.arguments {
        if let Some(schema) = state.runtime.host.tool_schema(name) {
            validate_arguments(&schema, &Value::Object(args.clone())).map_err(|errors| {
                UiError {
                    field: Some("arguments".into()),
                    ..UiError::new(
                        "invalid",
                        format!("The arguments do not fit the tool: {}", errors.join("; ")),
                    )
                }
            })?;
        }
    }
    let (_, tx) = pending.remove(&id).expect("checked above");
    Ok(tx.send(decision).is_ok())
}

/// Stops one running tool call (the card's Stop): the server gets `notifications/cancelled`, the
/// model reads that the user cancelled it, the turn goes on.
#[tauri::command]
pub fn cancel_tool_call(state: State<'_, AppState>, id: i64) -> bool {
    match state.runtime.running_calls.lock().unwrap().get(&id) {
        Some(t) => {
            t.cancel();
            true
        }
        None => false,
    }
}

/// Answers a server's request for input (elicitation) shown in a tool card.
#[tauri::command]
pub fn answer_elicitation(
    state: State<'_, AppState>,
    id: u64,
    answer: ElicitationAnswer,
) -> CmdResult<bool> {
    if !matches!(answer.action.as_str(), "accept" | "decline" | "cancel") {
        return Err(UiError::new(
            "invalid",
            "The answer must be accept, decline or cancel",
        ));
    }
    Ok(state.runtime.host.answer_elicitation(id, answer))
}

/// Answers a server's request to use the model (sampling), shown in a tool card.
#[tauri::command]
pub fn resolve_sampling(state: State<'_, AppState>, id: u64, approve: bool) -> bool {
    match state.sampling.lock().unwrap().remove(&id) {
        Some(tx) => tx.send(approve).is_ok(),
        None => false,
    }
}
