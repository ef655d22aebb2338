//! Calls their server runs as tasks (the 2026-07-28 tasks extension), against a real server that
//! implements it (FastMCP with fastmcp-tasks from PyPI, `fixtures/tasks_server.py`): followed to
//! their result, asking the user mid-task, cancelled on the server, and outliving the app.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchboard_engine::mcp::{
    CallEvent, ElicitationAction, ElicitationAnswer, McpHost, ServerConfig, TaskHandle, TaskState,
};
use switchboard_engine::store::Store;
use switchboard_engine::{ChatEngine, ChatEvent, TurnRequest, TurnSummary};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::fake_ollama::{self, last_message, Stream};
use crate::support::*;

pub(crate) fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

async fn tasks_host(port: u16) -> Arc<McpHost> {
    let url = format!("http://127.0.0.1:{port}/mcp");
    host_of(vec![("tasks", ServerConfig::http(url))]).await
}

/// Runs a call of `tool`, answering the server's questions with `answer`; the outcome, the task
/// states the call went through and the questions the user was asked (server, message).
pub(crate) async fn call_collecting(
    host: &McpHost,
    tool: &str,
    arguments: Value,
    cancel: &CancellationToken,
    answer: Option<ElicitationAnswer>,
) -> (
    switchboard_engine::mcp::ToolOutcome,
    Vec<TaskState>,
    Vec<(String, String)>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let during = async {
        let (mut states, mut asked) = (Vec::new(), Vec::new());
        while let Some(ev) = rx.recv().await {
            match ev {
                CallEvent::Task(s) => states.push(s),
                CallEvent::Elicitation(e, reply) => {
                    asked.push((e.server.clone(), e.message.clone()));
                    reply.send(answer.clone().unwrap());
                }
                _ => {}
            }
        }
        (states, asked)
    };
    let call = host.call_tool(tool, args(arguments), cancel, Some(tx));
    let (outcome, (states, asked)) = tokio::join!(call, during);
    (outcome, states, asked)
}

/// Calls `tool` with the user's Stop pressed as soon as the call reports its first task state,
/// checks that the call ended as cancelled by the user and its last state says so, and gives the
/// task states seen.
pub(crate) async fn stop_a_task(host: &McpHost, tool: &str, arguments: Value) -> Vec<TaskState> {
    let stop = CancellationToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let call = host.call_tool(tool, args(arguments), &stop, Some(tx));
    let stop_at_first_state = async {
        let mut states = Vec::new();
        while let Some(ev) = rx.recv().await {
            if let CallEvent::Task(s) = ev {
                stop.cancel();
                states.push(s);
            }
        }
        states
    };
    let (stopped, states) = tokio::join!(call, stop_at_first_state);
    assert!(
        stopped.is_error && stopped.text.contains("cancelled by the user"),
        "{stopped:?}"
    );
    assert_eq!(states.last().unwrap().status, "cancelled");
    states
}

/// Waits (at most 20 s) until the events of a turn say a call runs as a task: its call id.
pub(crate) async fn working_task(events: &Mutex<Vec<ChatEvent>>) -> i64 {
    let t = std::time::Instant::now();
    loop {
        let got = events.lock().unwrap().iter().find_map(|e| match e {
            ChatEvent::ToolCallTask { id, status, .. } if status == "working" => Some(*id),
            _ => None,
        });
        if let Some(id) = got {
            return id;
        }
        assert!(t.elapsed() < READY, "no task state came");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A turn of `engine` on `text`, running in its own task: its handle, and its events as they come.
pub(crate) fn spawn_turn(
    engine: &Arc<ChatEngine>,
    text: &'static str,
) -> (
    tokio::task::JoinHandle<TurnSummary>,
    Arc<Mutex<Vec<ChatEvent>>>,
) {
    let events = Arc::new(Mutex::new(Vec::<ChatEvent>::new()));
    let ev = events.clone();
    let engine = engine.clone();
    let turn = tokio::spawn(async move {
        let emit = move |x: ChatEvent| ev.lock().unwrap().push(x);
        engine
            .run_turn(say(text, None), &emit, CancellationToken::new())
            .await
            .unwrap()
    });
    (turn, events)
}

/// A turn on `r` whose model calls a tool its server runs as a task, and the app ending as soon
/// as the card hears that it does (the turn dropped, the host shut down: nothing is said to the
/// server). The call's id, and the store as the next run opens it.
pub(crate) async fn app_ends_mid_task(r: &Rig, text: &'static str) -> (i64, Store) {
    let engine = Arc::new(r.engine(5));
    let (turn, events) = spawn_turn(&engine, text);
    let call_id = working_task(&events).await;
    turn.abort();
    let _ = turn.await;
    drop(engine);
    r.host.shutdown().await;
    let store = Store::open(&r.dir.path().join("db.sqlite3")).await.unwrap();
    (call_id, store)
}

/// A call the server turns into a task is polled to its result, which the model gets like any
/// other; a question the server asks mid-task reaches the user once and its answer reaches the
/// server; Stop cancels the task on the server (`tasks/cancel`), not only here.
#[tokio::test]
async fn a_task_is_followed_to_its_result_asks_the_user_and_is_cancelled_on_its_server() {
    let (_server, port) = tasks_server();
    let host = tasks_host(port).await;
    let view = host
        .servers()
        .into_iter()
        .find(|s| s.name == "tasks")
        .unwrap();
    assert_eq!(
        view.protocol_version.as_deref(),
        Some("2026-07-28"),
        "{view:?}"
    );

    let none = CancellationToken::new();
    let (sum, states, _) = call_collecting(
        &host,
        "tasks__slow_sum",
        json!({"a": 40, "b": 2, "seconds": 1}),
        &none,
        None,
    )
    .await;
    assert_eq!((sum.text.as_str(), sum.is_error), ("42", false), "{sum:?}");
    // it ran as a task: created working, polled until completed, one handle throughout
    assert_eq!(states.first().unwrap().status, "working", "{states:?}");
    assert_eq!(states.last().unwrap().status, "completed", "{states:?}");
    assert!(!states[0].task_id.is_empty());
    assert!(states.iter().all(|s| s.task_id == states[0].task_id));
    assert_eq!(
        states[0].poll_ms,
        Some(200),
        "the server's poll interval is kept"
    );

    let (hello, states, asked) = call_collecting(
        &host,
        "tasks__ask_name",
        json!({}),
        &none,
        Some(ElicitationAnswer {
            action: ElicitationAction::Accept,
            content: Some(json!({"name": "Luca"})),
        }),
    )
    .await;
    assert_eq!(
        (hello.text.as_str(), hello.is_error),
        ("Hello, Luca!", false)
    );
    assert_eq!(
        asked,
        [("tasks".to_string(), "What is your name?".to_string())],
        "asked once, though the server repeats the question until read"
    );
    assert!(
        states.iter().any(|s| s.status == "input_required"),
        "{states:?}"
    );

    // Stop while it runs: the task is cancelled on the server
    let states = stop_a_task(
        &host,
        "tasks__slow_sum",
        json!({"a": 1, "b": 2, "seconds": 30}),
    )
    .await;
    // the server says so too, when asked about the same task afterwards
    let asked_again = host
        .resume_task(
            "tasks",
            "slow_sum",
            &TaskHandle {
                task_id: states[0].task_id.clone(),
                ..Default::default()
            },
            &none,
            None,
        )
        .await;
    assert_eq!(
        asked_again.text, "The server cancelled the task.",
        "{asked_again:?}"
    );
    host.shutdown().await;
}

/// The app ends while a task runs (the turn is dropped mid-poll, the host and store closed); the
/// next run finds the call still running in the store, follows the same task on the server, keeps
/// its result on the call for the user, and sends it to the model when the user asks, once.
#[tokio::test]
async fn a_task_outlives_the_app_and_its_result_waits_for_the_user() {
    let (_server, port) = tasks_server();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let r = rig(vec![("tasks", ServerConfig::http(url.clone()))]).await;
    r.fake.set_responder(call_then_answer(vec![(
        "a",
        "tasks__slow_sum",
        json!({"a": 40, "b": 2, "seconds": 4}),
    )]));
    let (call_id, store) = app_ends_mid_task(&r, "add 40 and 2").await;
    let open = store.open_tasks().await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(
        (open[0].tool_call_id, open[0].server.as_str()),
        (call_id, "tasks")
    );
    let conversation_id = open[0].conversation_id;
    let conv = store.conversation(conversation_id).await.unwrap();
    let call = &conv.tool_calls[0];
    assert_eq!(
        call.status,
        switchboard_engine::store::ToolCallStatus::Running
    );
    assert_eq!(call.task.as_ref().unwrap().status, "working");

    let host = tasks_host(port).await;
    let engine = chat_engine(
        Arc::new(switchboard_engine::llm::OllamaClient::new(&r.fake.url)),
        host.clone(),
        store.clone(),
    );
    let seen = Arc::new(Mutex::new(Vec::<ChatEvent>::new()));
    let s = seen.clone();
    let emit = move |x: ChatEvent| s.lock().unwrap().push(x);
    engine.resume_task(open[0].clone(), &emit).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(
            |e| matches!(e, ChatEvent::ToolCallFinished { id, result, is_error: false, .. }
            if *id == call_id && result == "42")
        ),
        "{seen:?}"
    );
    assert!(matches!(
        seen.last(),
        Some(ChatEvent::TaskResultWaiting { id, conversation_id: c }) if *id == call_id && *c == conversation_id
    ));
    let conv = store.conversation(conversation_id).await.unwrap();
    let call = &conv.tool_calls[0];
    assert_eq!(call.result.as_deref(), Some("42"));
    let task = call.task.as_ref().unwrap();
    assert_eq!(task.status, "completed");
    assert!(task.awaiting_delivery);
    assert!(store.open_tasks().await.unwrap().is_empty());

    // one click: the result goes to the model as the tool's result, never as the user's words
    let asked = Arc::new(Mutex::new(Value::Null));
    let a = asked.clone();
    r.fake.set_responder(move |req: &Value| {
        *a.lock().unwrap() = req.clone();
        let said = last_message(req)["content"].as_str().unwrap().to_string();
        Stream::new().text(&format!("Got: {said}")).done().reply()
    });
    let late = TurnRequest {
        conversation_id: Some(conversation_id),
        model: fake_ollama::MODEL.into(),
        late_result: Some(call_id),
        ..Default::default()
    };
    let none = |_: ChatEvent| {};
    let users_before = store
        .conversation(conversation_id)
        .await
        .unwrap()
        .messages
        .iter()
        .filter(|m| m.role == switchboard_engine::llm::Role::User)
        .count();
    engine
        .run_turn(late.clone(), &none, CancellationToken::new())
        .await
        .unwrap();
    let sent = asked.lock().unwrap().clone();
    let msgs = sent["messages"].as_array().unwrap();
    let n = msgs.len();
    // the call again, then its result in the tool's role, last
    assert_eq!(msgs[n - 1]["role"], "tool", "{sent}");
    assert_eq!(msgs[n - 1]["content"], "42");
    assert_eq!(msgs[n - 2]["role"], "assistant");
    assert_eq!(
        msgs[n - 2]["tool_calls"][0]["function"]["name"],
        "tasks__slow_sum"
    );
    assert!(
        !msgs
            .iter()
            .any(|m| m["role"] == "user" && m["content"].as_str().unwrap_or("").contains("42")),
        "{sent}"
    );
    let conv = store.conversation(conversation_id).await.unwrap();
    let users_after = conv
        .messages
        .iter()
        .filter(|m| m.role == switchboard_engine::llm::Role::User)
        .count();
    assert_eq!(users_before, users_after, "no message in the user's name");
    assert_eq!(conv.messages.last().unwrap().content, "Got: 42");
    assert!(!conv.tool_calls[0].task.as_ref().unwrap().awaiting_delivery);
    // and only once
    assert!(engine
        .run_turn(late, &none, CancellationToken::new())
        .await
        .is_err());
    host.shutdown().await;
}

/// A task is followed again only on the server that started it: when the name now stands for
/// another URL (or program), the task is reported lost and that server is never asked about it.
#[tokio::test]
async fn a_task_is_not_followed_on_another_server_under_its_name() {
    let (_server, port) = tasks_server();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let r = rig(vec![("tasks", ServerConfig::http(url.clone()))]).await;
    r.fake.set_responder(call_then_answer(vec![(
        "a",
        "tasks__slow_sum",
        json!({"a": 40, "b": 2, "seconds": 4}),
    )]));
    let (call_id, store) = app_ends_mid_task(&r, "add 40 and 2").await;
    let open = store.open_tasks().await.unwrap();
    assert_eq!(open.len(), 1);
    assert!(open[0].server_identity.is_some());
    // the next run has "tasks" at another address (the same server, reached otherwise: for the
    // host, another server)
    let other = format!("http://localhost:{port}/mcp");
    let host = host_of(vec![("tasks", ServerConfig::http(other))]).await;
    let engine = chat_engine(
        Arc::new(switchboard_engine::llm::OllamaClient::new(&r.fake.url)),
        host.clone(),
        store.clone(),
    );
    let seen = Arc::new(Mutex::new(Vec::<ChatEvent>::new()));
    let s = seen.clone();
    let emit = move |x: ChatEvent| s.lock().unwrap().push(x);
    engine.resume_task(open[0].clone(), &emit).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|e| matches!(e, ChatEvent::ToolCallTask { id, status, .. }
            if *id == call_id && status == "lost")),
        "{seen:?}"
    );
    assert!(!seen
        .iter()
        .any(|e| matches!(e, ChatEvent::TaskResultWaiting { .. })));
    let conv = store.conversation(open[0].conversation_id).await.unwrap();
    let call = &conv.tool_calls[0];
    assert!(
        call.result
            .as_deref()
            .unwrap()
            .contains("no longer the one that started this task"),
        "{call:?}"
    );
    assert_eq!(call.task.as_ref().unwrap().status, "lost");
    assert!(store.open_tasks().await.unwrap().is_empty());
    host.shutdown().await;
}

/// A task whose server restarted (and so forgot it) is reported lost, and is not run again.
#[tokio::test]
async fn a_task_its_server_forgot_is_reported_lost_and_not_run_again() {
    let (server, port) = tasks_server();
    let host = tasks_host(port).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let call = host.call_tool(
        "tasks__slow_sum",
        args(json!({"a": 1, "b": 2, "seconds": 60})),
        &stop,
        Some(tx),
    );
    // the app ends once the task exists
    let first = tokio::select! {
        _ = call => panic!("the call ended before its task was created"),
        s = async { loop { if let Some(CallEvent::Task(s)) = rx.recv().await { break s } } } => s,
    };
    host.shutdown().await;
    drop(server);
    let _server = tasks_server_at(port);
    let host = tasks_host(port).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = TaskHandle {
        task_id: first.task_id.clone(),
        ..Default::default()
    };
    let outcome = host
        .resume_task(
            "tasks",
            "slow_sum",
            &handle,
            &CancellationToken::new(),
            Some(&tx),
        )
        .await;
    drop(tx);
    assert!(
        outcome.is_error && outcome.text.contains("no longer knows this task"),
        "{outcome:?}"
    );
    let mut last = None;
    while let Some(ev) = rx.recv().await {
        if let CallEvent::Task(s) = ev {
            last = Some(s.status);
        }
    }
    assert_eq!(last.as_deref(), Some("lost"));
    host.shutdown().await;
}

/// A task that ends within its turn: the turn waits for it (the card following its states), the
/// result goes to the model like any other, and the model answers from it. A second task in the
/// next turn is stopped from its card (the engine's `cancel_call`, what the window's Stop calls)
/// while it runs: the call ends as stopped and the turn goes on to the model's answer.
#[tokio::test]
async fn a_task_ends_inside_its_turn_and_one_stopped_from_its_card_lets_the_turn_go_on() {
    let (_server, port) = tasks_server();
    let r = rig(vec![(
        "tasks",
        ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
    )])
    .await;
    // the model asks for a task that takes `seconds`, then says what it got
    let sum_taking = |seconds: u64| {
        move |req: &Value| {
            let last = last_message(req);
            if last["role"] == "tool" {
                let said = last["content"].as_str().unwrap_or_default().to_string();
                return Stream::new().text(&format!("Got: {said}")).done().reply();
            }
            Stream::new()
                .tool_call(
                    "a",
                    "tasks__slow_sum",
                    json!({"a": 40, "b": 2, "seconds": seconds}),
                )
                .done()
                .reply()
        }
    };
    r.fake.set_responder(sum_taking(1));
    let engine = Arc::new(r.engine(5));

    let (summary, events) = collecting(&engine, say("add 40 and 2", None)).await;
    let states: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCallTask { status, .. } => Some(status.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        states.first().map(String::as_str),
        Some("working"),
        "{states:?}"
    );
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls[0].result.as_deref(), Some("42"));
    assert_eq!(conv.messages.last().unwrap().content, "Got: 42");

    // the next task runs long; Stop on its card while it runs
    // (300 s: far past READY, so the turn's end is the Stop's doing, not the task's)
    r.fake.set_responder(sum_taking(300));
    let (turn, events) = spawn_turn(&engine, "add them again, slowly");
    let call_id = working_task(&events).await;
    assert!(engine.shared.cancel_call(call_id));
    let summary = tokio::time::timeout(READY, turn)
        .await
        .expect("the turn goes on after Stop")
        .unwrap();
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let call = &conv.tool_calls[0];
    assert!(call.is_error, "{call:?}");
    assert!(
        call.result
            .as_deref()
            .unwrap()
            .contains("cancelled by the user"),
        "{call:?}"
    );
    assert!(conv.messages.last().unwrap().content.starts_with("Got: "));
    r.host.shutdown().await;
}
