//! What servers ask during a call: progress, input from the user (elicitation), the model (sampling), and a single call's Stop.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::chat::approval::Policy;
use switchboard_engine::chat::{Answer, AnswerError, Broker, SamplingOutcome};
use switchboard_engine::mcp::{ElicitationAction, ElicitationAnswer};
use switchboard_engine::ChatEvent;
use tokio_util::sync::CancellationToken;

use crate::support::fake_ollama::{self, last_message, Stream};
use crate::support::*;

#[tokio::test]
async fn a_server_can_ask_the_model_for_a_completion_after_the_user_approves() {
    let r = rig(vec![("everything", everything())]).await;
    // server-everything offers its sampling tool only to clients that declare sampling
    assert!(r
        .status("everything")
        .tools
        .iter()
        .any(|t| t.name == "trigger-sampling-request"));
    let tool_turn = call_then_answer(vec![
        (
            "a",
            "everything__trigger-sampling-request",
            json!({"prompt": "name a colour", "maxTokens": 20}),
        ),
        (
            "b",
            "everything__trigger-sampling-request",
            json!({"prompt": "name a fruit"}),
        ),
    ]);
    r.fake.set_responder(move |req: &Value| {
        // the server's own request: its system prompt, no tools
        if req["messages"][0]["content"] == "You are a helpful test server." {
            let asked = last_message(req)["content"].as_str().unwrap().to_string();
            return Stream::new()
                .text("Sampled: ")
                .text(&format!("teal ({asked})"))
                .done()
                .reply();
        }
        tool_turn(req)
    });
    let approver = Script::sampling(vec![true, false]);
    let mut engine = r.engine(5);
    engine.broker = approver.broker();
    let (summary, events) = collecting(&engine, say("sample twice", None)).await;
    let asked = approver.sampling_requests();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0].server, "everything");
    assert_eq!(
        asked[0].system_prompt.as_deref(),
        Some("You are a helpful test server.")
    );
    assert_eq!(asked[0].messages[0].role, "user");
    assert!(asked[0].messages[0].text.contains("name a colour"));
    assert_eq!(asked[0].max_tokens, 20);
    // the model was asked once (the approved request), without tools
    let sampling_requests: Vec<Value> = r
        .fake
        .chat_requests()
        .into_iter()
        .filter(|q| q["messages"][0]["content"] == "You are a helpful test server.")
        .collect();
    assert_eq!(sampling_requests.len(), 1);
    assert!(sampling_requests[0]["tools"]
        .as_array()
        .is_none_or(|t| t.is_empty()));
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let first = conv.tool_calls[0].result.clone().unwrap();
    assert!(!conv.tool_calls[0].is_error, "{first}");
    assert!(
        first.contains("Sampled: teal"),
        "the server got the reply: {first}"
    );
    assert!(
        first.contains(fake_ollama::MODEL),
        "and the model's name: {first}"
    );
    let second = conv.tool_calls[1].result.clone().unwrap();
    assert!(conv.tool_calls[1].is_error, "{second}");
    assert!(second.contains("declined"), "{second}");
    let outcomes: Vec<(SamplingOutcome, Option<String>)> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::SamplingFinished { outcome, text, .. } => Some((*outcome, text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0].0, SamplingOutcome::Answered);
    assert!(outcomes[0]
        .1
        .as_deref()
        .unwrap()
        .starts_with("Sampled: teal"));
    assert_eq!(outcomes[1], (SamplingOutcome::Declined, None));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, ChatEvent::SamplingRequested { .. }))
            .count(),
        2
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn progress_is_reported_and_a_single_call_can_be_cancelled_while_the_turn_goes_on() {
    let r = rig(vec![("everything", everything())]).await;
    // everything's long-running operation reports progress every duration/steps seconds
    r.fake.set_responder(call_then_answer(vec![
        (
            "p",
            "everything__trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
        ),
        (
            "c",
            "everything__trigger-long-running-operation",
            json!({"duration": 300, "steps": 300}),
        ),
    ]));
    let engine = r.engine(5);
    set_policy(
        &engine,
        "everything__trigger-long-running-operation",
        Policy::Allow,
    );
    let shared = engine.shared.clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    // cancel the second call once it has reported progress
    let emit = move |e: ChatEvent| {
        if let ChatEvent::ToolCallProgress { id, .. } = &e {
            let second = ev
                .lock()
                .unwrap()
                .iter()
                .filter_map(|x| match x {
                    ChatEvent::ToolCallStarted { id, .. } => Some(*id),
                    _ => None,
                })
                .nth(1);
            if second == Some(*id) {
                shared.cancel_call(*id);
            }
        }
        ev.lock().unwrap().push(e);
    };
    let t = std::time::Instant::now();
    let summary = engine
        .run_turn(say("go", None), &emit, CancellationToken::new())
        .await
        .unwrap();
    // the operation's own 300 s are far past READY: what is measured is that it was not
    // waited for, not how fast the machine is
    assert!(
        t.elapsed() < READY,
        "the cancelled 300 s operation held the turn up"
    );
    assert!(
        !summary.stopped,
        "cancelling one call does not stop the turn"
    );
    let events = events.lock().unwrap().clone();
    let progress: Vec<(i64, f64, Option<f64>)> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCallProgress {
                id,
                progress,
                total,
                ..
            } => Some((*id, *progress, *total)),
            _ => None,
        })
        .collect();
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let (first, second) = (conv.tool_calls[0].id, conv.tool_calls[1].id);
    let first_progress: Vec<_> = progress.iter().filter(|p| p.0 == first).collect();
    assert!(first_progress.len() >= 3, "{progress:?}");
    assert_eq!(first_progress.last().unwrap().2, Some(4.0));
    assert!(!conv.tool_calls[0].is_error, "{:?}", conv.tool_calls[0]);
    assert!(conv.tool_calls[1].is_error);
    assert!(conv.tool_calls[1]
        .result
        .as_deref()
        .unwrap()
        .contains("cancelled by the user"));
    // after the cancel, late progress for that call is not passed on
    let after_finish = events
        .iter()
        .skip_while(|e| !matches!(e, ChatEvent::ToolCallFinished { id, .. } if *id == second))
        .filter(|e| matches!(e, ChatEvent::ToolCallProgress { id, .. } if *id == second))
        .count();
    assert_eq!(after_finish, 0);
    // the model got its answer
    assert!(matches!(
        events.last(),
        Some(ChatEvent::Done { stopped: false, .. })
    ));
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_server_can_ask_the_user_for_input_during_a_call() {
    let r = rig(vec![("everything", everything())]).await;
    // server-everything offers its elicitation tool only to clients that declare elicitation
    assert!(r
        .status("everything")
        .tools
        .iter()
        .any(|t| t.name == "trigger-elicitation-request"));
    r.fake.set_responder(call_then_answer(vec![
        ("a", "everything__trigger-elicitation-request", json!({})),
        ("b", "everything__trigger-elicitation-request", json!({})),
    ]));
    let mut engine = r.engine(5);
    set_policy(
        &engine,
        "everything__trigger-elicitation-request",
        Policy::Allow,
    );
    // the questions wait for answers, given here as the window would
    engine.broker = Broker::new();
    let (emit, asked) = answering(
        &engine.broker,
        json!({"name": "Ada Lovelace", "check": true, "email": "ada@example.com", "integer": 7}),
    );
    let summary = engine
        .run_turn(say("ask me", None), &emit, CancellationToken::new())
        .await
        .unwrap();
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].1.server, "everything");
    let props = asked[0].1.schema.as_ref().unwrap()["properties"]
        .as_object()
        .unwrap()
        .clone();
    for k in [
        "name",
        "check",
        "email",
        "integer",
        "untitledMultipleSelectEnum",
    ] {
        assert!(props.contains_key(k), "{k} in {props:?}");
    }
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let first = conv.tool_calls[0].result.clone().unwrap();
    assert!(
        first.contains("Ada Lovelace"),
        "the server got the answer: {first}"
    );
    let second = conv.tool_calls[1].result.clone().unwrap().to_lowercase();
    assert!(second.contains("decline"), "{second}");
    // nothing waits any more
    assert_eq!(
        engine.broker.answer(
            asked[0].0,
            Answer::Elicitation(ElicitationAnswer::of(ElicitationAction::Cancel))
        ),
        Err(AnswerError::NotWaiting)
    );
    r.host.shutdown().await;
}

/// A 2026-07-28 server asks through a multi round-trip request (its `tools/call` answers
/// `input_required` with an elicitation; the Python SDK 2.x's `Resolve`/`Elicit`): the user is
/// asked exactly as during any call (the card's form, here the broker), and the call is made
/// again with the answer; a decline ends it without the server running the tool.
#[tokio::test]
async fn a_2026_server_asks_the_user_through_a_multi_round_trip_request() {
    let (_server, port) = mrtr_server();
    let r = rig(vec![(
        "mrtr",
        switchboard_engine::mcp::ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
    )])
    .await;
    assert_eq!(
        r.status("mrtr").protocol_version.as_deref(),
        Some("2026-07-28")
    );
    r.fake.set_responder(call_then_answer(vec![
        ("a", "mrtr__greet", json!({})),
        ("b", "mrtr__greet", json!({})),
    ]));
    let mut engine = r.engine(5);
    set_policy(&engine, "mrtr__greet", Policy::Allow);
    engine.broker = Broker::new();
    let (emit, asked) = answering(&engine.broker, json!({"name": "Ada"}));
    let summary = engine
        .run_turn(say("greet someone", None), &emit, CancellationToken::new())
        .await
        .unwrap();
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "one question per call: {asked:?}");
    assert_eq!(asked[0].1.server, "mrtr");
    assert_eq!(asked[0].1.message, "Who should I greet?");
    assert!(asked[0].1.schema.as_ref().unwrap()["properties"]["name"].is_object());
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let first = conv.tool_calls[0].result.clone().unwrap();
    assert_eq!(first, "Hello, Ada!");
    let second = conv.tool_calls[1].result.clone().unwrap();
    assert!(
        !second.contains("Hello"),
        "declined, the tool did not run: {second}"
    );
    r.host.shutdown().await;
}

/// What the window would do with a turn's questions: the first is answered with `content`,
/// every later one declined. The questions asked, in order, with their ids.
#[allow(clippy::type_complexity)]
fn answering(
    broker: &Arc<Broker>,
    content: Value,
) -> (
    impl Fn(ChatEvent),
    Arc<
        Mutex<
            Vec<(
                switchboard_engine::chat::QuestionId,
                switchboard_engine::mcp::Elicitation,
            )>,
        >,
    >,
) {
    let broker = broker.clone();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a = asked.clone();
    let emit = move |e: ChatEvent| {
        if let ChatEvent::ElicitationRequested {
            elicitation,
            question_id,
            ..
        } = e
        {
            let first = a.lock().unwrap().is_empty();
            a.lock().unwrap().push((question_id, elicitation.clone()));
            let answer = if first {
                ElicitationAnswer {
                    action: ElicitationAction::Accept,
                    content: Some(content.clone()),
                }
            } else {
                ElicitationAnswer::of(ElicitationAction::Decline)
            };
            broker
                .answer(question_id, Answer::Elicitation(answer))
                .unwrap();
        }
    };
    (emit, asked)
}

/// A call's timeout restarts with each progress notification: with a 2 s timeout, an operation of
/// 4 s that reports progress every half second ends well; one of 60 s with its only progress at
/// the end is cut at the timeout, and what the model reads says so.
#[tokio::test]
async fn progress_restarts_a_calls_timeout_and_a_silent_call_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = switchboard_engine::mcp::McpConfig::default();
    let mut server = everything();
    server.timeout = Some(2);
    config.servers.insert("everything".into(), server);
    let mut opts = host_options();
    opts.sandbox_dir = dir.path().join("private");
    let host = switchboard_engine::mcp::McpHost::new(opts);
    host.start_all(&config).await;
    let call = |duration: u64, steps: u64| {
        let host = host.clone();
        async move {
            let t = std::time::Instant::now();
            // as the chat loop calls: with a channel for the call's events (so with a progress
            // token the server reports against)
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let drain = tokio::spawn(async move {
                let mut progress = 0;
                while let Some(e) = rx.recv().await {
                    if matches!(e, switchboard_engine::mcp::CallEvent::Progress { .. }) {
                        progress += 1;
                    }
                }
                progress
            });
            let out = host
                .call_tool(
                    "everything__trigger-long-running-operation",
                    json!({"duration": duration, "steps": steps})
                        .as_object()
                        .unwrap()
                        .clone(),
                    &CancellationToken::new(),
                    Some(tx),
                )
                .await;
            (out, t.elapsed(), drain.await.unwrap())
        }
    };
    // progress every 0.5 s: the 4 s operation completes past the 2 s timeout
    let (out, took, progress) = call(4, 8).await;
    assert!(!out.is_error, "{out:?}");
    assert!(took >= Duration::from_secs(4), "{took:?}");
    assert!(progress >= 6, "{progress} progress notifications");
    // one step of 60 s: silent far longer than the timeout, cut at it (not waited out, however
    // busy the machine)
    let (out, took, _) = call(60, 1).await;
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("did not answer within 2 s"), "{out:?}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    host.shutdown().await;
}
