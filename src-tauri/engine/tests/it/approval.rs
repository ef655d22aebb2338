//! Which calls run at once, which ask, and what the answers do.

use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard_engine::chat::approval::{Action, Decision, Policy};
use switchboard_engine::store::Approval;
use switchboard_engine::ChatEvent;
use tokio_util::sync::CancellationToken;

use crate::support::*;

#[tokio::test]
async fn approval_read_only_runs_destructive_asks_denied_calls_never_run() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("files", builtin("files")),
    ])
    .await;
    r.fake.set_responder(call_then_answer(vec![
        ("1", "calculator__add", json!({"a": 1, "b": 2})),
        (
            "2",
            "files__write_file",
            json!({"path": "denied.txt", "content": "no"}),
        ),
        (
            "3",
            "files__write_file",
            json!({"path": "edited.txt", "content": "original"}),
        ),
        ("4", "files__delete_file", json!({"path": "x"})),
    ]));
    let approver = Script::approving(vec![
        Decision::of(Action::Deny),
        Decision {
            action: Action::AllowOnce,
            arguments: Some(
                json!({"path": "edited.txt", "content": "edited"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        },
    ]);
    let mut engine = r.engine(5);
    engine.broker = approver.broker();
    set_policy(&engine, "files__delete_file", Policy::Deny);
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let summary = engine
        .run_turn(
            say("do it", None),
            &move |e| ev.lock().unwrap().push(e),
            CancellationToken::new(),
        )
        .await
        .unwrap();

    // only the two write_file calls were asked about, with the destructive warning
    let asked = approver.approval_requests();
    assert_eq!(
        asked.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        vec!["files__write_file", "files__write_file"]
    );
    assert!(asked.iter().all(|a| a.destructive));
    let requested = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, ChatEvent::ApprovalRequested { .. }))
        .count();
    assert_eq!(requested, 2);

    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let tc = &conv.tool_calls;
    assert_eq!(
        (tc[0].approval, tc[0].result.as_deref()),
        (Some(Approval::ReadOnly), Some("3"))
    );
    assert_eq!(tc[1].approval, Some(Approval::Denied));
    assert!(tc[1].is_error && tc[1].result.as_deref().unwrap().contains("declined"));
    assert_eq!(
        (tc[2].approval, tc[2].arguments_edited),
        (Some(Approval::Approved), true)
    );
    assert_eq!(
        tc[2].arguments,
        json!({"path": "edited.txt", "content": "edited"}),
        "the edited arguments are stored"
    );
    assert_eq!(tc[3].approval, Some(Approval::DeniedByPolicy));
    assert!(tc[3].is_error);
    // what actually happened on disk
    let sandbox = r.dir.path().join("sandbox");
    assert!(
        !sandbox.join("denied.txt").exists(),
        "a denied call never runs"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.join("edited.txt")).unwrap(),
        "edited"
    );
    // the model read why
    let tools = tool_messages(&r.fake.chat_requests()[1]);
    assert!(tools[1]["content"]
        .as_str()
        .unwrap()
        .contains("The user declined this tool call"));
    assert!(tools[3]["content"]
        .as_str()
        .unwrap()
        .contains("do not allow this tool"));
    r.host.shutdown().await;
}

#[tokio::test]
async fn allow_for_this_conversation_covers_later_turns_of_that_conversation_only() {
    // dynamic's tools carry no annotations: they ask
    let r = rig(vec![("dynamic", python("dynamic_server.py"))]).await;
    r.fake
        .set_responder(call_then_answer(vec![("1", "dynamic__t1", json!({}))]));
    let approver = Script::approving(vec![
        Decision::of(Action::AllowConversation),
        Decision::of(Action::AllowOnce),
    ]);
    let mut engine = r.engine(5);
    engine.broker = approver.broker();
    let first = engine
        .run_turn(say("a", None), &|_| {}, CancellationToken::new())
        .await
        .unwrap();
    engine
        .run_turn(
            say("b", Some(first.conversation_id)),
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        approver.asked.lock().unwrap().len(),
        1,
        "asked once for that conversation"
    );
    engine
        .run_turn(say("c", None), &|_| {}, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        approver.asked.lock().unwrap().len(),
        2,
        "a new conversation asks again"
    );
    let conv = r.store.conversation(first.conversation_id).await.unwrap();
    let approvals: Vec<_> = conv
        .tool_calls
        .iter()
        .map(|t| t.approval.unwrap())
        .collect();
    assert_eq!(
        approvals,
        vec![Approval::ApprovedForChat, Approval::AllowedInChat]
    );
    r.host.shutdown().await;
}
