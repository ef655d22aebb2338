//! The chat: sending a message and stopping a turn, `answer_question` (answers whatever the
//! broker asked), and `watch_tasks` (pushes the events of tasks followed outside a turn, after a
//! restart; `state::TaskEvents` keeps them, so a window that listens late gets what it missed
//! first, in order).

use switchboard_engine::chat::{
    with_attachments, Answer, Attachment, ImageRef, QuestionId, Resume,
};
use switchboard_engine::store::ToolChoice;
use switchboard_engine::{ChatEvent, TurnRequest, TurnSummary};
use tauri::ipc::Channel;
use tauri::State;
use tokio_util::sync::CancellationToken;

use super::{CmdResult, ErrorKind, UiError};
use crate::state::cancel_in;
use crate::state::AppState;

/// A resource the user attached to a message.
#[derive(serde::Deserialize)]
pub struct ResourceRef {
    server: String,
    uri: String,
    name: String,
}

/// A document the user attached (its text, as `attach_file` read it).
#[derive(serde::Deserialize)]
pub struct DocumentRef {
    name: String,
    mime: String,
    text: String,
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
    /// Images kept by `attach_file`, to go with the message.
    #[serde(default)]
    images: Vec<ImageRef>,
    /// Documents' text, to go into the message.
    #[serde(default)]
    documents: Vec<DocumentRef>,
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
    /// Send the model the result of this tool call, whose task ended after its turn.
    late_result: Option<i64>,
    /// For this turn only: what it does if the conversation outgrows the context (the user's
    /// choice after a turn stopped to ask).
    #[serde(default)]
    context_policy: Option<switchboard_engine::store::ContextPolicy>,
}

/// Runs one turn; its events stream through `on_event`.
#[tauri::command]
pub async fn send_message(
    state: State<'_, AppState>,
    request: SendRequest,
    on_event: Channel<ChatEvent>,
) -> CmdResult<TurnSummary> {
    let r = request;
    let adds_message = r.regenerate.is_none() && r.resume.is_none() && r.late_result.is_none();
    let attaches = !r.images.is_empty() || !r.documents.is_empty() || !r.attachments.is_empty();
    if adds_message && r.text.trim().is_empty() && !attaches {
        return Err(UiError::invalid("The message is empty"));
    }
    if r.model.trim().is_empty() {
        return Err(UiError::invalid("Choose a model first"));
    }
    let runtime = &state.runtime;
    // attached resources are read now; one that cannot be read stops the send (nothing is lost:
    // the window keeps the text and the attachments)
    let mut read = Vec::new();
    for a in r.attachments {
        let got = runtime
            .host
            .read_resource(&a.server, &a.uri)
            .await
            .map_err(|e| {
                UiError::new(ErrorKind::Mcp, format!("Could not attach {}: {e}", a.name))
            })?;
        read.push(Attachment {
            name: a.name,
            uri: Some(a.uri),
            mime: None,
            text: got.text,
        });
    }
    read.extend(r.documents.into_iter().map(|d| Attachment {
        name: switchboard_engine::chat::clean_name(&d.name),
        uri: None,
        mime: Some(d.mime),
        text: d.text,
    }));
    let text = with_attachments(&r.text, &read);
    let provider = match (&r.provider, r.conversation_id) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(id)) => runtime.store.settings(id).await?.provider,
        (None, None) => None,
    };
    let engine = runtime.chat_engine(provider.as_deref());
    let emit = move |ev: ChatEvent| {
        if let Err(e) = on_event.send(ev) {
            tracing::warn!("could not deliver a chat event to the window: {e}");
        }
    };
    let cancel = CancellationToken::new();
    state
        .turns
        .lock()
        .unwrap()
        .insert(r.turn_id.clone(), cancel.clone());
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
                late_result: r.late_result,
                images: r.images,
                context_policy: r.context_policy,
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
    cancel_in(&state.turns, turn_id.as_str())
}

/// Answers a question waiting for the user: a tool call's approval (edited arguments must fit
/// the tool's schema, or the call keeps waiting and the error says why), a server's request for
/// input (elicitation), or its request to use the model (sampling).
#[tauri::command]
pub fn answer_question(
    state: State<'_, AppState>,
    id: QuestionId,
    answer: Answer,
) -> CmdResult<()> {
    Ok(state.runtime.broker.answer(id, answer)?)
}

/// Stops one running tool call (the card's Stop): the server gets `notifications/cancelled`, the
/// model reads that the user cancelled it, the turn goes on.
/// What happens to tasks followed outside a turn (after a restart: their state, their result,
/// their questions), pushed through `on_event` until the window no longer listens.
#[tauri::command]
pub fn watch_tasks(state: State<'_, AppState>, on_event: Channel<ChatEvent>) {
    let (past, mut events) = state.task_events.subscribe();
    tauri::async_runtime::spawn(async move {
        for ev in past {
            if on_event.send(ev).is_err() {
                return;
            }
        }
        loop {
            match events.recv().await {
                Ok(ev) => {
                    if on_event.send(ev).is_err() {
                        return;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

#[tauri::command]
pub fn cancel_tool_call(state: State<'_, AppState>, id: i64) -> bool {
    state.runtime.shared.cancel_call(id)
}
