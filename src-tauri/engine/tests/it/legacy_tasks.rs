//! Tasks in the 2025-11-25 form (server-everything's `simulate-research-query`, a tool that needs
//! one): asked for when a plain call is refused, followed to the end with the server's questions,
//! stopped on the server, and followed again in that form after the app ends.

use std::sync::Arc;

use serde_json::json;
use switchboard_engine::mcp::{ElicitationAction, ElicitationAnswer, ServerConfig};
use switchboard_engine::ChatEvent;
use tokio_util::sync::CancellationToken;

use crate::support::*;
use crate::tasks::{app_ends_mid_task, call_collecting, stop_a_task};

/// A 2025-11-25 server (server-everything, stdio) whose tool needs a task: the plain call is told
/// so, the host calls again asking for one and follows it (`tasks/get` for the card, `tasks/result`
/// for the end); the server's question mid-task reaches the user and the answer the server; Stop
/// cancels the task on the server.
#[tokio::test]
async fn a_2025_11_25_task_is_asked_for_when_the_tool_needs_one_and_followed_to_its_end() {
    let host = host_of(vec![("everything", everything())]).await;
    let view = host
        .servers()
        .into_iter()
        .find(|s| s.name == "everything")
        .unwrap();
    assert_eq!(view.protocol_version.as_deref(), Some("2025-11-25"));
    assert!(
        view.tools
            .iter()
            .any(|t| t.name == "simulate-research-query"),
        "{:?}",
        view.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let none = CancellationToken::new();
    let (report, states, _) = call_collecting(
        &host,
        "everything__simulate-research-query",
        json!({"topic": "rust"}),
        &none,
        None,
    )
    .await;
    assert!(!report.is_error, "{report:?}");
    assert!(report.text.contains("Research Report"), "{}", report.text);
    assert!(states
        .iter()
        .all(|s| s.legacy && s.task_id == states[0].task_id));
    assert_eq!(states.first().unwrap().status, "working", "{states:?}");
    assert_eq!(states.last().unwrap().status, "completed", "{states:?}");
    assert!(
        states
            .iter()
            .any(|s| s.message.as_deref().is_some_and(|m| m.contains("..."))),
        "the server's status messages reach the card: {states:?}"
    );

    // a question mid-task, answered
    let (clarified, _, asked) = call_collecting(
        &host,
        "everything__simulate-research-query",
        json!({"topic": "python", "ambiguous": true}),
        &none,
        Some(ElicitationAnswer {
            action: ElicitationAction::Accept,
            content: Some(json!({"interpretation": "snake"})),
        }),
    )
    .await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].1.contains("python"), "{asked:?}");
    assert!(!clarified.is_error, "{clarified:?}");
    assert!(
        clarified.text.to_lowercase().contains("snake"),
        "{}",
        clarified.text
    );

    // Stop
    let states = stop_a_task(
        &host,
        "everything__simulate-research-query",
        json!({"topic": "go"}),
    )
    .await;
    // the server agrees: asked about it afterwards, the task is cancelled (it has no result)
    let after = host
        .resume_task(
            "everything",
            "simulate-research-query",
            &states[0].task_id,
            true,
            &none,
            None,
        )
        .await;
    assert!(after.is_error, "{after:?}");
    assert!(!after.text.contains("Research Report"), "{after:?}");
    host.shutdown().await;
}

/// A 2025-11-25 task when the app ends: its form is stored with the call, and the next start
/// follows it in that form (`tasks/get` of that era). server-everything over Streamable HTTP
/// keeps its tasks per session, so its new session no longer knows the task: the call is
/// reported lost and nothing runs it again.
#[tokio::test]
async fn a_2025_11_25_task_is_followed_again_in_its_own_form_after_the_app_ends() {
    let (_server, port) = everything_over_http("streamableHttp");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let r = rig(vec![("everything", ServerConfig::http(url.clone()))]).await;
    r.fake.set_responder(call_then_answer(vec![(
        "r",
        "everything__simulate-research-query",
        json!({"topic": "rust"}),
    )]));
    let (call_id, store) = app_ends_mid_task(&r, "research rust").await;
    let open = store.open_tasks().await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(open[0].legacy, "stored in the 2025-11-25 form");
    assert_eq!(open[0].tool_call_id, call_id);
    let host = host_of(vec![("everything", ServerConfig::http(url))]).await;
    let engine = chat_engine(
        Arc::new(switchboard_engine::llm::OllamaClient::new(&r.fake.url)),
        host.clone(),
        store.clone(),
    );
    engine
        .resume_task(open[0].clone(), &|_: ChatEvent| {})
        .await
        .unwrap();
    let conv = store.conversation(open[0].conversation_id).await.unwrap();
    let call = &conv.tool_calls[0];
    assert!(call.is_error, "{call:?}");
    assert!(
        call.result
            .as_deref()
            .is_some_and(|r| r.contains("no longer knows this task")),
        "{call:?}"
    );
    assert_eq!(call.task.as_ref().unwrap().status, "lost");
    assert!(
        store.open_tasks().await.unwrap().is_empty(),
        "not followed again"
    );
    host.shutdown().await;
}
