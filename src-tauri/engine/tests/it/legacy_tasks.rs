//! Tasks in the 2025-11-25 form (server-everything's `simulate-research-query`, a tool that needs
//! one): asked for when a plain call is refused, followed to the end with the server's questions,
//! and stopped on the server. Followed again after the app ends: `task_restarts.rs`.

use serde_json::json;
use switchboard_engine::mcp::{ElicitationAction, ElicitationAnswer, TaskHandle};
use tokio_util::sync::CancellationToken;

use crate::support::*;
use crate::tasks::{call_collecting, stop_a_task};

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
    let handle = TaskHandle {
        task_id: states[0].task_id.clone(),
        legacy: true,
        session: None,
    };
    let after = host
        .resume_task(
            "everything",
            "simulate-research-query",
            &handle,
            &none,
            None,
        )
        .await;
    assert!(after.is_error, "{after:?}");
    assert!(!after.text.contains("Research Report"), "{after:?}");
    host.shutdown().await;
}
