//! Tasks across a restart of the app, through [`Runtime`] as the app runs it (its store, its
//! secrets, its servers started, then `resume_tasks`): the app is killed while a task runs (the
//! turn dropped mid-task, the servers' connections closed without a word to them), and a new
//! run opens the same files.
//!
//! - server-everything over Streamable HTTP, a separate process that binds its tasks to its
//!   session: the next run rejoins the session and the task ends with its real result, which
//!   the model gets with one click; with the server restarted too (the session gone), the card
//!   says the task cannot be recovered and nothing is offered;
//! - server-everything on stdio: its tasks end with the app, at once, without asking;
//! - a 2026-07-28 server (FastMCP with fastmcp-tasks), stateless: no session to keep, the task is
//!   followed again all the same.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::chat::Broker;
use switchboard_engine::llm::Role;
use switchboard_engine::mcp::TaskEnd;
use switchboard_engine::secrets::Secrets;
use switchboard_engine::store::{Store, ToolCallStatus};
use switchboard_engine::{ChatEvent, Places, Runtime, TurnRequest};
use tokio_util::sync::CancellationToken;

use crate::support::fake_ollama::{self, last_message, FakeOllama, Stream};
use crate::support::*;
use crate::tasks::{spawn_turn, working_task};

/// The app's files in `dir`: `servers` (the `mcpServers` object) and the fake LLM as its model
/// server.
fn places(dir: &Path, fake: &FakeOllama, servers: Value) -> Places {
    let places = Places {
        database: dir.join("db.sqlite3"),
        ..Places::in_dir(dir)
    };
    std::fs::write(&places.mcp, json!({ "mcpServers": servers }).to_string()).unwrap();
    std::fs::write(
        &places.settings,
        json!({"llmUrl": fake.url, "model": fake_ollama::MODEL}).to_string(),
    )
    .unwrap();
    places
}

/// A run of the app on `places`, its secrets in `dir/secrets` (the file: no keyring here).
async fn open(dir: &Path, places: &Places) -> Runtime {
    Runtime::open_at(
        places.clone(),
        Secrets::file_only(dir.join("secrets"), "the test has no keyring"),
        builtin_bin(),
        Broker::allowing_all(),
    )
    .await
    .unwrap()
}

/// The secrets file's text (what the secrets store holds without a keyring).
fn secrets_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("secrets/secrets.json")).unwrap_or_default()
}

/// Every byte the store has on disk (the database and its write-ahead log), as text.
fn database_bytes(dir: &Path) -> String {
    ["db.sqlite3", "db.sqlite3-wal"]
        .iter()
        .filter_map(|f| std::fs::read(dir.join(f)).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
}

/// A turn on `rt` whose model calls a tool its server runs as a task, and the app killed as
/// soon as the card hears that it does: the turn dropped mid-task, the connections closed as a
/// kill closes them. The call's id.
async fn killed_mid_task(rt: &Runtime, text: &'static str) -> i64 {
    let engine = Arc::new(rt.chat_engine(None));
    let (turn, events) = spawn_turn(&engine, text);
    let call_id = working_task(&events).await;
    turn.abort();
    let _ = turn.await;
    drop(engine);
    rt.host.shutdown().await;
    call_id
}

/// The next run follows the tasks again; the events that came until `done` says they are enough.
async fn resumed(rt: &Runtime, done: impl Fn(&[ChatEvent]) -> bool) -> Vec<ChatEvent> {
    let events = Arc::new(Mutex::new(Vec::<ChatEvent>::new()));
    let ev = events.clone();
    let n = rt
        .resume_tasks(Arc::new(move |e| ev.lock().unwrap().push(e)))
        .await;
    assert_eq!(n, 1, "one task to follow");
    let t = std::time::Instant::now();
    loop {
        let seen = events.lock().unwrap().clone();
        if done(&seen) {
            return seen;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the task did not end: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Call `id` has finished (the store has its end: it is written before it is told).
fn finished(id: i64) -> impl Fn(&[ChatEvent]) -> bool {
    move |seen| {
        seen.iter()
            .any(|e| matches!(e, ChatEvent::ToolCallFinished { id: i, .. } if *i == id))
    }
}

/// Call `id`'s result (or error) waits for the user (told right after its end).
fn waiting(id: i64) -> impl Fn(&[ChatEvent]) -> bool {
    move |seen| offered(seen, id)
}

fn offered(events: &[ChatEvent], id: i64) -> bool {
    events
        .iter()
        .any(|e| matches!(e, ChatEvent::TaskResultWaiting { id: i, .. } if *i == id))
}

/// The last state the card heard for call `id`.
fn last_task_event(events: &[ChatEvent], id: i64) -> (String, Option<TaskEnd>) {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            ChatEvent::ToolCallTask {
                id: i,
                status,
                reason,
                ..
            } if *i == id => Some((status.clone(), *reason)),
            _ => None,
        })
        .expect("a task state")
}

/// The research call's conversation, from the store.
async fn the_call(store: &Store, id: i64) -> switchboard_engine::store::StoredToolCall {
    let open = store.tool_call_origin(id).await.unwrap().unwrap();
    let conv = store.conversation(open.conversation_id).await.unwrap();
    conv.tool_calls.into_iter().find(|c| c.id == id).unwrap()
}

fn research_model() -> impl Fn(&Value) -> fake_ollama::Reply {
    call_then_answer(vec![(
        "r",
        "everything__simulate-research-query",
        json!({"topic": "rust"}),
    )])
}

/// server-everything over Streamable HTTP keeps its tasks per session. The app is killed while
/// `simulate-research-query` runs as a task; the next run starts in the same session (kept in
/// the secrets store, never in the database), follows the task to its real result, offers it,
/// and the model gets it with one click; the kept session is then forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_a_session_bound_server_survives_the_app_being_killed() {
    let (_server, port) = everything_over_http("streamableHttp");
    let fake = FakeOllama::start().await;
    fake.set_responder(research_model());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let places = places(
        dir.path(),
        &fake,
        json!({"everything": {"type": "http", "url": url}}),
    );

    let rt = open(dir.path(), &places).await;
    rt.start_servers().await;
    let id = killed_mid_task(&rt, "research rust").await;
    drop(rt);
    // the session is kept as a secret, not in the database
    let file: Value = serde_json::from_str(&secrets_text(dir.path())).unwrap();
    let (name, entry) = file["secrets"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .expect("one secret kept");
    assert!(name.starts_with("mcp-session-"), "{name}");
    let kept: Value = serde_json::from_str(entry["value"].as_str().unwrap()).unwrap();
    assert_eq!(kept["url"], url.as_str());
    assert_eq!(kept["initialize"]["protocolVersion"], "2025-11-25");
    let session_id = kept["sessionId"].as_str().unwrap().to_string();
    assert!(session_id.len() >= 16, "{session_id}");
    assert!(
        !database_bytes(dir.path()).contains(&session_id),
        "the session id never reaches the database"
    );

    let rt = open(dir.path(), &places).await;
    rt.start_servers().await;
    let events = resumed(&rt, waiting(id)).await;
    let call = the_call(&rt.store, id).await;
    assert!(!call.is_error, "{call:?}");
    assert!(
        call.result
            .as_deref()
            .is_some_and(|r| r.contains("Research Report: rust")),
        "{call:?}"
    );
    let task = call.task.as_ref().unwrap();
    assert_eq!(task.status, "completed");
    assert!(task.awaiting_delivery && task.resumed, "{task:?}");
    assert_eq!(task.reason, None);
    assert!(events
        .iter()
        .any(|e| matches!(e, ChatEvent::TaskFollowed { id: i, .. } if *i == id)));
    assert!(
        !secrets_text(dir.path()).contains("mcp-session-"),
        "the session is forgotten once no task runs in it"
    );

    // one click: the model gets the result
    fake.set_responder(|req: &Value| {
        let said = last_message(req)["content"].as_str().unwrap().to_string();
        Stream::new().text(&format!("Got: {said}")).done().reply()
    });
    let origin = rt.store.tool_call_origin(id).await.unwrap().unwrap();
    let late = TurnRequest {
        conversation_id: Some(origin.conversation_id),
        model: fake_ollama::MODEL.into(),
        late_result: Some(id),
        ..Default::default()
    };
    let engine = rt.chat_engine(None);
    engine
        .run_turn(late, &|_| {}, CancellationToken::new())
        .await
        .unwrap();
    let asked = fake.chat_requests();
    let last = asked.last().unwrap();
    // as the tool's result (main's form of a late result), never as something the user said
    let told = last_message(last);
    let said = told["content"].as_str().unwrap().to_string();
    assert_eq!(told["role"], "tool", "{told}");
    assert!(said.contains("Research Report: rust"), "{said}");
    rt.host.shutdown().await;
}

/// The same, with the server restarted too: the session the task ran in is gone (server-everything
/// answers 400 "No valid session ID" for it), so the next run starts a new session, the card says
/// the server ended the session and the task cannot be recovered, nothing is offered to the
/// model, and nothing is lost from the conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_session_the_server_ended_says_so_and_offers_nothing() {
    let (server, port) = everything_over_http("streamableHttp");
    let fake = FakeOllama::start().await;
    fake.set_responder(research_model());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let places = places(
        dir.path(),
        &fake,
        json!({"everything": {"type": "http", "url": url}}),
    );
    let rt = open(dir.path(), &places).await;
    rt.start_servers().await;
    let id = killed_mid_task(&rt, "research rust").await;
    let origin = rt.store.tool_call_origin(id).await.unwrap().unwrap();
    let before = rt
        .store
        .conversation(origin.conversation_id)
        .await
        .unwrap()
        .messages;
    drop(rt);
    drop(server);
    let _server = everything_over_http_at("streamableHttp", port);

    let rt = open(dir.path(), &places).await;
    rt.start_servers().await;
    let view = rt.host.servers().remove(0);
    assert_eq!(
        view.status,
        switchboard_engine::mcp::ServerStatus::Running,
        "a new session: {view:?}"
    );
    let events = resumed(&rt, finished(id)).await;
    assert_eq!(
        last_task_event(&events, id),
        ("lost".to_string(), Some(TaskEnd::SessionEnded))
    );
    assert!(!offered(&events, id), "nothing for the model");
    let call = the_call(&rt.store, id).await;
    assert!(call.is_error);
    assert_eq!(call.status, ToolCallStatus::Done);
    assert!(
        call.result
            .as_deref()
            .is_some_and(|r| r.contains("ended the session")),
        "{call:?}"
    );
    let task = call.task.unwrap();
    assert_eq!(
        (task.status.as_str(), task.reason, task.awaiting_delivery),
        ("lost", Some(TaskEnd::SessionEnded), false)
    );
    let after = rt
        .store
        .conversation(origin.conversation_id)
        .await
        .unwrap()
        .messages;
    assert_eq!(after, before, "the conversation is as it was");
    assert!(after.iter().any(|m| m.role == Role::User));
    assert!(rt.store.open_tasks().await.unwrap().is_empty());
    // the server works in its new session
    let out = rt
        .host
        .call_tool(
            "everything__echo",
            json!({"message": "still here"})
                .as_object()
                .unwrap()
                .clone(),
            &Default::default(),
            None,
        )
        .await;
    assert!(out.text.contains("still here"), "{out:?}");
    rt.host.shutdown().await;
}

/// A stdio server ends with the app (and its tasks with it): the next run ends its tasks at once
/// with that reason — before its servers even start, so without asking anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_a_stdio_server_ends_with_the_app_and_says_so_at_once() {
    let fake = FakeOllama::start().await;
    fake.set_responder(research_model());
    let dir = tempfile::tempdir().unwrap();
    let everything = everything_server().display().to_string();
    let places = places(
        dir.path(),
        &fake,
        json!({"everything": {"command": "node", "args": [everything, "stdio"]}}),
    );
    let rt = open(dir.path(), &places).await;
    rt.start_servers().await;
    let id = killed_mid_task(&rt, "research rust").await;
    drop(rt);

    let rt = open(dir.path(), &places).await;
    // no server started: nothing could be asked
    let events = resumed(&rt, finished(id)).await;
    assert_eq!(
        last_task_event(&events, id),
        ("lost".to_string(), Some(TaskEnd::EndedWithApp))
    );
    assert!(!offered(&events, id));
    let call = the_call(&rt.store, id).await;
    assert!(
        call.is_error
            && call
                .result
                .as_deref()
                .unwrap()
                .contains("ran inside the app")
    );
    assert_eq!(call.task.unwrap().reason, Some(TaskEnd::EndedWithApp));
}

/// A 2026-07-28 server has no sessions (FastMCP with fastmcp-tasks over HTTP): nothing is kept
/// for its task, and the next run follows it again to its result all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_a_stateless_server_survives_the_app_being_killed() {
    let (_server, port) = tasks_server();
    let fake = FakeOllama::start().await;
    fake.set_responder(call_then_answer(vec![(
        "a",
        "tasks__slow_sum",
        json!({"a": 40, "b": 2, "seconds": 4}),
    )]));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let places = places(
        dir.path(),
        &fake,
        json!({"tasks": {"type": "http", "url": url}}),
    );
    let rt = open(dir.path(), &places).await;
    rt.start_servers().await;
    let view = rt.host.servers().remove(0);
    assert_eq!(view.protocol_version.as_deref(), Some("2026-07-28"));
    let id = killed_mid_task(&rt, "add 40 and 2").await;
    let open_tasks = rt.store.open_tasks().await.unwrap();
    assert_eq!(open_tasks.len(), 1);
    assert_eq!(open_tasks[0].session, None, "no session to keep");
    assert!(!secrets_text(dir.path()).contains("mcp-session-"));
    drop(rt);

    let rt = open(dir.path(), &places).await;
    rt.start_servers().await;
    resumed(&rt, waiting(id)).await;
    let call = the_call(&rt.store, id).await;
    assert_eq!(call.result.as_deref(), Some("42"), "{call:?}");
    let task = call.task.unwrap();
    assert_eq!(task.status, "completed");
    assert!(task.resumed && task.awaiting_delivery);
    rt.host.shutdown().await;
}
