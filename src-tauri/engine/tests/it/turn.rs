//! A turn through the real loop: the fake LLM, the real built-in servers, the store after each step.

use crate::support::fake_ollama::{self, last_message, Stream};
use crate::support::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_engine::llm::Role;
use switchboard_engine::mcp::ServerStatus;
use switchboard_engine::store::{Approval, MessageStatus, Notice, ToolCallStatus};
use switchboard_engine::{ChatEvent, TurnRequest};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn calculator_round_trip_through_the_real_builtin_server_is_stored() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("files", builtin("files")),
    ])
    .await;
    assert_eq!(r.status("calculator").status, ServerStatus::Running);
    // built-in servers run from the small binary next to the app's
    assert!(
        r.status("calculator").command.ends_with("/switchboard-mcp"),
        "{}",
        r.status("calculator").command
    );
    assert_eq!(
        r.status("calculator").protocol_version.as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(r.status("files").status, ServerStatus::Running);
    r.fake.set_responder(call_then_answer(vec![(
        "call_1",
        "calculator__add",
        json!({"a": 2, "b": 40}),
    )]));

    let (summary, events) = r.turn("what is 2+40?").await;
    assert_eq!(summary.llm_error, None);
    assert!(!summary.limit_reached);

    // the model was offered the tools with their schemas, namespaced
    let reqs = r.fake.chat_requests();
    assert_eq!(reqs.len(), 2);
    let names: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for n in [
        "calculator__add",
        "calculator__square_root",
        "files__read_file",
        "files__write_file",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let add = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "calculator__add")
        .unwrap();
    assert_eq!(add["function"]["parameters"]["required"], json!(["a", "b"]));
    assert_eq!(reqs[0]["messages"][0]["role"], "system");
    // the result went back as a tool message with tool_name and tool_call_id
    assert_eq!(
        tool_messages(&reqs[1]),
        vec![
            json!({"role": "tool", "content": "42", "tool_name": "calculator__add", "tool_call_id": "call_1"})
        ]
    );
    let assistant = &reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .nth(1)
        .unwrap()
        .clone();
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        json!({"a": 2, "b": 40})
    );

    // events, in order
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            ChatEvent::TurnStarted { .. } => "turn",
            ChatEvent::AssistantStarted { .. } => "start",
            ChatEvent::TextDelta { .. } => "text",
            ChatEvent::ThinkingDelta { .. } => "think",
            ChatEvent::AssistantDone { .. } => "done-msg",
            ChatEvent::ToolCallStarted { .. } => "call",
            ChatEvent::ToolCallFinished { .. } => "result",
            ChatEvent::Notice { .. } => "notice",
            ChatEvent::Error { .. } => "error",
            ChatEvent::Done { .. } => "done",
            ChatEvent::ApprovalRequested { .. } => "ask",
            ChatEvent::ApprovalResolved { .. } => "answer",
            ChatEvent::AppApprovalRequested { .. } => "app-ask",
            ChatEvent::AppApprovalWaiting { .. } => "app-ask-waiting",
            ChatEvent::AppApprovalResolved { .. } => "app-answer",
            ChatEvent::ToolCallProgress { .. } => "progress",
            ChatEvent::ElicitationRequested { .. } => "elicit",
            ChatEvent::SamplingRequested { .. } => "sample",
            ChatEvent::SamplingFinished { .. } => "sampled",
            ChatEvent::Context { .. } => "context",
            ChatEvent::ToolCallArguments { .. } => "args",
            ChatEvent::ToolCallTask { .. } => "task",
            ChatEvent::TaskResultWaiting { .. } => "late",
            ChatEvent::TaskFollowed { .. } => "followed",
            ChatEvent::SignInNeeded { .. } => "sign-in",
            ChatEvent::Compacting { .. } => "compacting",
            ChatEvent::LlmBusy { .. } => "busy",
            ChatEvent::Summarised { .. } => "summarised",
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "turn", "context", "start", "done-msg", "call", "result", "context", "start", "text",
            "text", "done-msg", "done"
        ]
    );
    let finished = events.iter().find_map(|e| match e {
        ChatEvent::ToolCallFinished {
            result, is_error, ..
        } => Some((result.clone(), *is_error)),
        _ => None,
    });
    assert_eq!(finished, Some(("42".into(), false)));

    // the store holds every step
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.summary.title, "what is 2+40?");
    let roles: Vec<&str> = conv.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, vec!["user", "assistant", "tool", "assistant"]);
    assert!(conv
        .messages
        .iter()
        .all(|m| m.status == MessageStatus::Complete));
    assert_eq!(conv.messages[1].tool_calls[0].name, "calculator__add");
    assert_eq!(conv.messages[3].content, "Results: 42");
    assert_eq!(conv.tool_calls.len(), 1);
    let tc = &conv.tool_calls[0];
    assert_eq!(
        (tc.server.as_str(), tc.tool.as_str(), tc.name.as_str()),
        ("calculator", "add", "calculator__add")
    );
    assert_eq!(tc.arguments, json!({"a": 2, "b": 40}));
    assert_eq!(tc.result.as_deref(), Some("42"));
    assert!(!tc.is_error);
    assert_eq!(tc.status, ToolCallStatus::Done);
    assert!(tc.duration_ms.is_some());
    assert_eq!(tc.message_id, conv.messages[1].id);
    assert_eq!(tc.result_message_id, Some(conv.messages[2].id));
    r.host.shutdown().await;
}

#[tokio::test]
async fn errors_reach_the_model_divide_by_zero_unknown_tool_invalid_json() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake.set_responder(call_then_answer(vec![
        ("c1", "calculator__divide", json!({"a": 1, "b": 0})),
        ("c2", "nope__missing", json!({})),
        ("c3", "calculator__add", json!("{\"a\": 1, ")),
    ]));
    let (summary, _) = r.turn("break things").await;
    let reqs = r.fake.chat_requests();
    let tools = tool_messages(&reqs[1]);
    assert_eq!(tools.len(), 3);
    assert!(
        tools[0]["content"]
            .as_str()
            .unwrap()
            .contains("Cannot divide by zero"),
        "{}",
        tools[0]
    );
    assert!(
        tools[1]["content"]
            .as_str()
            .unwrap()
            .contains("Unknown tool \"nope__missing\""),
        "{}",
        tools[1]
    );
    assert!(
        tools[1]["content"]
            .as_str()
            .unwrap()
            .contains("calculator__add"),
        "lists the real tools: {}",
        tools[1]
    );
    // cut-off JSON is read as far as it goes; what is still missing is said, and nothing runs
    let third = tools[2]["content"].as_str().unwrap();
    assert!(
        third.contains("\"b\"") && third.contains("required"),
        "{third}"
    );
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls.len(), 3);
    assert!(conv.tool_calls.iter().all(|t| t.is_error));
    assert_eq!(conv.tool_calls[1].server, "");
    assert_eq!(conv.messages.last().unwrap().role.as_str(), "assistant");
    r.host.shutdown().await;
}

#[tokio::test]
async fn the_same_call_twice_in_a_row_stops_the_loop_with_an_explanation() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    // the second time the arguments come as a JSON string: still the same call
    r.fake.set_responder(|req: &Value| {
        let first = !req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool");
        let args = if first {
            json!({"a": 1, "b": 1})
        } else {
            json!("{\"b\": 1, \"a\": 1}")
        };
        Stream::new()
            .tool_call("same", "calculator__add", args)
            .done()
            .reply()
    });
    let (summary, events) = r
        .turn_with("add forever", 5, CancellationToken::new())
        .await;
    assert_eq!(summary.repeated_call.as_deref(), Some("calculator__add"));
    assert!(!summary.limit_reached);
    assert_eq!(r.fake.chat_requests().len(), 2, "stopped after the repeat");
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls.len(), 2);
    assert!(!conv.tool_calls[0].is_error);
    assert!(conv.tool_calls[1].is_error);
    assert_eq!(conv.tool_calls[1].approval, Some(Approval::Repeated));
    let notice = events.iter().find_map(|e| match e {
        ChatEvent::Notice { notice, .. } => Some(notice.clone()),
        _ => None,
    });
    assert_eq!(
        notice,
        Some(Notice::RepeatedCall {
            tool: "calculator__add".into()
        })
    );
    // every call the model made has its answer, so the next turn's history is sound
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    r.engine(5)
        .run_turn(
            say("next", Some(summary.conversation_id)),
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let sent = r.fake.chat_requests().last().unwrap().clone();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        vec![
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "user"
        ]
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn after_the_limit_continue_goes_on_and_wrap_up_answers_without_tools() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake.set_responder(counting_calls);
    let (summary, _) = r.turn_with("count", 2, CancellationToken::new()).await;
    assert!(summary.limit_reached);
    let id = summary.conversation_id;
    let engine = r.engine(2);
    let resume = |how| TurnRequest {
        conversation_id: Some(id),
        model: fake_ollama::MODEL.into(),
        resume: Some(how),
        ..Default::default()
    };
    // continue: two more rounds, no new user message
    let (more, events) =
        collecting(&engine, resume(switchboard_engine::chat::Resume::Continue)).await;
    assert!(more.limit_reached);
    assert!(matches!(
        events[0],
        ChatEvent::TurnStarted {
            user_message_id: None,
            ..
        }
    ));
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(conv.tool_calls.len(), 4);
    assert_eq!(
        conv.messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count(),
        1
    );
    // wrap up: one reply, no tools offered, told to answer now
    r.fake.set_responder(|req: &Value| {
        assert!(
            req["tools"].as_array().is_none_or(|t| t.is_empty()),
            "{req}"
        );
        Stream::new().text("The count reached 4.").done().reply()
    });
    let done = engine
        .run_turn(
            resume(switchboard_engine::chat::Resume::WrapUp),
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!done.limit_reached);
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(
        last_message(&sent)["content"],
        switchboard_engine::chat::WRAP_UP_PROMPT
    );
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(
        conv.messages.last().unwrap().content,
        "The count reached 4."
    );
    // a new conversation cannot be continued
    assert!(engine
        .run_turn(
            TurnRequest {
                resume: Some(switchboard_engine::chat::Resume::Continue),
                model: fake_ollama::MODEL.into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .is_err());
    r.host.shutdown().await;
}

#[tokio::test]
async fn the_iteration_limit_stops_the_loop_and_says_so() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake.set_responder(counting_calls);
    let (summary, events) = r
        .turn_with("loop forever", 3, CancellationToken::new())
        .await;
    assert!(summary.limit_reached);
    assert_eq!(r.fake.chat_requests().len(), 3);
    let notice = events.iter().find_map(|e| match e {
        ChatEvent::Notice { notice, .. } => Some(notice.clone()),
        _ => None,
    });
    assert_eq!(notice, Some(Notice::RoundLimit { rounds: 3 }));
    assert!(matches!(
        events.last(),
        Some(ChatEvent::Done {
            limit_reached: true,
            ..
        })
    ));
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls.len(), 3);
    let last = conv.messages.last().unwrap();
    assert_eq!(last.status, MessageStatus::Notice);
    // the notice is never sent to the model on the next turn
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    let engine = r.engine(3);
    engine
        .run_turn(
            say("next", Some(summary.conversation_id)),
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let req = r.fake.chat_requests().last().unwrap().clone();
    // the notice is an assistant message with no text of its own: had it been sent, the message
    // before the new question would be it rather than the last tool result
    let sent = req["messages"].as_array().unwrap();
    assert_eq!(sent[sent.len() - 1]["content"], "next");
    assert_eq!(
        sent[sent.len() - 2]["role"],
        "tool",
        "notice leaked to the model: {sent:?}"
    );
    assert_eq!(
        req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count(),
        3
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn stopping_keeps_the_partial_reply_marked_stopped() {
    let r = rig(vec![]).await;
    let mut reply = Stream::new()
        .text("Once ")
        .text("upon ")
        .text("a ")
        .text("time")
        .done()
        .reply();
    reply.pause = Duration::from_millis(300);
    r.fake.push(reply);
    // Stop is pressed as the first words arrive (no timer racing the stream's pauses)
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let emit = move |e: ChatEvent| {
        if matches!(e, ChatEvent::TextDelta { .. }) {
            c.cancel();
        }
        ev.lock().unwrap().push(e);
    };
    let summary = r
        .engine(5)
        .run_turn(say("tell a story", None), &emit, cancel)
        .await
        .unwrap();
    let events = events.lock().unwrap().clone();
    assert!(summary.stopped);
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let m = conv.messages.last().unwrap();
    assert_eq!(m.status, MessageStatus::Stopped);
    assert!(m.content.starts_with("Once "), "{:?}", m.content);
    assert!(!m.content.contains("time"), "{:?}", m.content);
    assert!(matches!(
        events.last(),
        Some(ChatEvent::Done { stopped: true, .. })
    ));
}

#[tokio::test]
async fn an_llm_error_mid_stream_keeps_the_partial_text_and_reports_it() {
    let r = rig(vec![]).await;
    r.fake.push(
        Stream::new()
            .text("Half an ")
            .error("an error was encountered while running the model")
            .reply(),
    );
    let (summary, events) = r.turn("hi").await;
    assert!(summary
        .llm_error
        .unwrap()
        .contains("an error was encountered"));
    assert!(events
        .iter()
        .any(|e| matches!(e, ChatEvent::Error { kind, .. } if *kind == switchboard_engine::llm::LlmErrorKind::Stream)));
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.messages[1].content, "Half an ");
    assert_eq!(conv.messages[1].status, MessageStatus::Error);
    // the debug record has what came before the error, and the error
    let calls = r.store.llm_calls(summary.conversation_id).await.unwrap();
    assert_eq!(calls.len(), 1);
    assert!(calls[0]
        .error
        .as_deref()
        .unwrap()
        .contains("an error was encountered"));
    assert_eq!(calls[0].response.len(), 2);
    assert_eq!(calls[0].response[0]["message"]["content"], "Half an ");
    assert_eq!(calls[0].message_id, Some(conv.messages[1].id));

    // unknown model: a 404 with Ollama's message, and no empty assistant message left behind
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let s = r
        .engine(5)
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: "missing:7b".into(),
                text: "hi".into(),
                ..Default::default()
            },
            &move |e| ev.lock().unwrap().push(e),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(s
        .llm_error
        .unwrap()
        .contains("model \"missing:7b\" not found"));
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    assert_eq!(conv.messages.len(), 1, "only the user's message is kept");
}
