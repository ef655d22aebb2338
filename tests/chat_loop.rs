//! The whole loop, headless: the fake LLM, the REAL built-in servers (spawned from the built
//! binary), the REAL npm server-everything, misbehaving servers, and the store after each.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::fake_ollama::{self, last_message, FakeOllama, Stream};
use switchboard_engine::chat::approval::{Action, ApprovalRequest, Approver, Decision, Policy};
use switchboard_engine::llm::{OllamaClient, Role};
use switchboard_engine::mcp::{
    HostOptions, McpConfig, McpHost, SamplingRequest, ServerConfig, ServerStatus,
};
use switchboard_engine::store::{status, Store};
use switchboard_engine::{ChatEngine, ChatEvent, TurnRequest};
use tokio_util::sync::CancellationToken;

struct Rig {
    fake: FakeOllama,
    host: Arc<McpHost>,
    store: Store,
    _dir: tempfile::TempDir,
}

fn builtin(name: &str) -> ServerConfig {
    ServerConfig::new("switchboard", &["mcp-server", name])
}

fn everything() -> ServerConfig {
    ServerConfig::new(
        "node",
        &[support::everything_server().to_str().unwrap(), "stdio"],
    )
}

fn python(fixture: &str) -> ServerConfig {
    ServerConfig::new("python3", &[support::fixture(fixture).to_str().unwrap()])
}

async fn rig(servers: Vec<(&str, ServerConfig)>) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let mut config = McpConfig::default();
    for (name, mut cfg) in servers {
        if cfg.args == ["mcp-server", "files"] {
            cfg.args.extend([
                "--root".into(),
                dir.path().join("sandbox").display().to_string(),
            ]);
        }
        config.servers.insert(name.into(), cfg);
    }
    let mut opts = HostOptions::new(support::switchboard_bin());
    opts.call_timeout = Duration::from_secs(20);
    opts.start_timeout = Duration::from_secs(4);
    // crashes are restarted automatically; keep that out of these tests' way
    opts.restart_base_delay = Duration::from_secs(30);
    let host = McpHost::new(opts);
    host.start_all(&config).await;
    let store = Store::open(&dir.path().join("db.sqlite3")).await.unwrap();
    Rig {
        fake: FakeOllama::start().await,
        host,
        store,
        _dir: dir,
    }
}

impl Rig {
    fn engine(&self, max_iterations: usize) -> ChatEngine {
        let mut engine = support::chat_engine(
            Arc::new(OllamaClient::new(&self.fake.url)),
            self.host.clone(),
            self.store.clone(),
        );
        engine.options.max_iterations = max_iterations;
        engine
    }

    async fn turn(&self, text: &str) -> (switchboard_engine::TurnSummary, Vec<ChatEvent>) {
        self.turn_with(text, 5, CancellationToken::new()).await
    }

    async fn turn_with(
        &self,
        text: &str,
        max: usize,
        cancel: CancellationToken,
    ) -> (switchboard_engine::TurnSummary, Vec<ChatEvent>) {
        let events = Arc::new(Mutex::new(Vec::new()));
        let ev = events.clone();
        let emit = move |e: ChatEvent| ev.lock().unwrap().push(e);
        let s = self
            .engine(max)
            .run_turn(
                TurnRequest {
                    conversation_id: None,
                    model: fake_ollama::MODEL.into(),
                    text: text.into(),
                    ..Default::default()
                },
                &emit,
                cancel,
            )
            .await
            .unwrap();
        let events = events.lock().unwrap().clone();
        (s, events)
    }

    fn status(&self, name: &str) -> switchboard_engine::mcp::ServerView {
        self.host
            .servers()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
    }
}

/// The fake model: calls the given tools once, then answers with what the tools returned.
fn call_then_answer(calls: Vec<(&str, &str, Value)>) -> impl Fn(&Value) -> fake_ollama::Reply {
    let calls: Vec<(String, String, Value)> = calls
        .into_iter()
        .map(|(i, n, a)| (i.to_string(), n.to_string(), a))
        .collect();
    move |req: &Value| {
        if last_message(req)["role"] == "user" {
            Stream::new()
                .tool_calls(
                    &calls
                        .iter()
                        .map(|(i, n, a)| (i.as_str(), n.as_str(), a.clone()))
                        .collect::<Vec<_>>(),
                )
                .done()
                .reply()
        } else {
            let results: Vec<String> = req["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap().to_string())
                .collect();
            Stream::new()
                .text("Results: ")
                .text(&results.join(" | "))
                .done()
                .reply()
        }
    }
}

fn tool_messages(req: &Value) -> Vec<Value> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

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
            ChatEvent::ToolCallProgress { .. } => "progress",
            ChatEvent::ElicitationRequested { .. } => "elicit",
            ChatEvent::SamplingRequested { .. } => "sample",
            ChatEvent::SamplingFinished { .. } => "sampled",
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "turn", "start", "done-msg", "call", "result", "start", "text", "text", "done-msg",
            "done"
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
    assert!(conv.messages.iter().all(|m| m.status == status::COMPLETE));
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
    assert_eq!(tc.status, "done");
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
    assert!(
        tools[2]["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{}",
        tools[2]
    );
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls.len(), 3);
    assert!(conv.tool_calls.iter().all(|t| t.is_error));
    assert_eq!(conv.tool_calls[1].server, "");
    assert_eq!(conv.messages.last().unwrap().role.as_str(), "assistant");
    r.host.shutdown().await;
}

#[tokio::test]
async fn files_builtin_writes_and_reads_inside_its_sandbox_only() {
    let r = rig(vec![("files", builtin("files"))]).await;
    r.fake.set_responder(call_then_answer(vec![
        (
            "w",
            "files__write_file",
            json!({"path": "notes/todo.txt", "content": "buy milk"}),
        ),
        ("r", "files__read_file", json!({"path": "notes/todo.txt"})),
        ("x", "files__read_file", json!({"path": "../db.sqlite3"})),
    ]));
    let (summary, _) = r.turn("save a note").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let results: Vec<(Option<String>, bool)> = conv
        .tool_calls
        .iter()
        .map(|t| (t.result.clone(), t.is_error))
        .collect();
    assert!(!results[0].1 && results[0].0.as_deref().unwrap().contains("Wrote 8 bytes"));
    assert_eq!(results[1], (Some("buy milk".into()), false));
    assert!(
        results[2].1 && results[2].0.as_deref().unwrap().starts_with("Refused"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(r._dir.path().join("sandbox/notes/todo.txt")).unwrap(),
        "buy milk"
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn server_everything_echo_get_sum_and_a_bad_argument() {
    let r = rig(vec![("everything", everything())]).await;
    let s = r.status("everything");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));
    assert!(s.tools.iter().any(|t| t.exposed == "everything__echo"));
    assert!(s.tools.iter().any(|t| t.exposed == "everything__get-sum"));
    r.fake.set_responder(call_then_answer(vec![
        (
            "e",
            "everything__echo",
            json!({"message": "hello from Switchboard"}),
        ),
        ("s", "everything__get-sum", json!({"a": 2, "b": 40})),
        ("b", "everything__get-sum", json!({"a": "two", "b": 40})),
    ]));
    let (summary, _) = r.turn("use everything").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let tc = &conv.tool_calls;
    assert_eq!(tc.len(), 3);
    assert!(!tc[0].is_error);
    assert!(
        tc[0]
            .result
            .as_deref()
            .unwrap()
            .contains("hello from Switchboard"),
        "{:?}",
        tc[0].result
    );
    assert!(!tc[1].is_error);
    assert!(
        tc[1].result.as_deref().unwrap().contains("42"),
        "{:?}",
        tc[1].result
    );
    assert!(
        tc[2].is_error,
        "a bad argument is an isError result: {:?}",
        tc[2]
    );
    assert!(tc[2].result_raw.as_ref().unwrap()["isError"] == json!(true));
    // the model saw all three
    assert_eq!(tool_messages(&r.fake.chat_requests()[1]).len(), 3);
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_server_crashing_mid_call_fails_alone_and_the_turn_goes_on() {
    let r = rig(vec![
        ("crashy", python("crash_server.py")),
        ("calculator", builtin("calculator")),
    ])
    .await;
    assert_eq!(r.status("crashy").status, ServerStatus::Running);
    r.fake.set_responder(call_then_answer(vec![
        ("1", "crashy__crash", json!({})),
        ("2", "calculator__multiply", json!({"a": 6, "b": 7})),
        ("3", "crashy__ok", json!({})),
    ]));
    let (summary, _) = r.turn("crash it").await;
    assert_eq!(summary.llm_error, None);
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let tc = &conv.tool_calls;
    assert!(tc[0].is_error);
    assert!(
        tc[0]
            .result
            .as_deref()
            .unwrap()
            .contains("stopped during the call (exited with code 3)"),
        "{:?}",
        tc[0].result
    );
    assert_eq!(
        tc[1].result.as_deref(),
        Some("42"),
        "the other server keeps working"
    );
    assert!(tc[2].is_error);
    assert!(
        tc[2].result.as_deref().unwrap().contains("is not running"),
        "{:?}",
        tc[2].result
    );
    let s = r.status("crashy");
    assert_eq!(s.status, ServerStatus::Failed);
    assert_eq!(s.exit.as_deref(), Some("exited with code 3"));
    assert_eq!(s.failed_step.as_deref(), Some("running"));
    assert!(
        s.stderr_tail
            .iter()
            .any(|l| l.contains("simulated fatal error")),
        "{:?}",
        s.stderr_tail
    );
    assert_eq!(
        conv.messages.last().unwrap().content,
        format!(
            "Results: {}",
            tool_messages(&r.fake.chat_requests()[1])
                .iter()
                .map(|m| m["content"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join(" | ")
        )
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_missing_command_and_a_garbage_server_fail_clearly_while_others_run() {
    let r = rig(vec![
        (
            "ghost",
            ServerConfig::new("definitely-not-a-command-7f3a", &[]),
        ),
        ("garbage", python("garbage_server.py")),
        ("calculator", builtin("calculator")),
    ])
    .await;
    let ghost = r.status("ghost");
    assert_eq!(ghost.status, ServerStatus::Failed);
    assert!(
        ghost
            .error
            .as_deref()
            .unwrap()
            .contains("\"definitely-not-a-command-7f3a\" was not found on PATH"),
        "{ghost:?}"
    );
    assert_eq!(ghost.failed_step.as_deref(), Some("finding the command"));
    assert!(
        ghost
            .error
            .as_deref()
            .unwrap()
            .contains("Check the command, or give its full path"),
        "{ghost:?}"
    );
    let garbage = r.status("garbage");
    assert_eq!(garbage.status, ServerStatus::Failed, "{garbage:?}");
    assert_eq!(
        garbage.failed_step.as_deref(),
        Some("the MCP handshake (initialize)")
    );
    assert!(
        garbage
            .stderr_tail
            .iter()
            .any(|l| l.contains("garbage: starting up")),
        "{garbage:?}"
    );
    assert_eq!(r.status("calculator").status, ServerStatus::Running);
    assert!(r
        .host
        .tool_specs()
        .iter()
        .all(|t| t.name.starts_with("calculator__")));
    // the garbage server's process is gone, not left running
    if let Some(pid) = garbage.pid {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "garbage server {pid} still running"
        );
    }
    r.host.shutdown().await;
}

/// A model that always wants one more sum: calculator__add with a different `a` each round.
fn counting_calls(req: &Value) -> fake_ollama::Reply {
    let done = req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    Stream::new()
        .tool_call("c", "calculator__add", json!({"a": done, "b": 1}))
        .done()
        .reply()
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
    assert_eq!(
        conv.tool_calls[1].approval.as_deref(),
        Some("not run (repeated)")
    );
    let notice = events.iter().find_map(|e| match e {
        ChatEvent::Notice { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert!(notice.unwrap().contains("twice in a row"));
    // every call the model made has its answer, so the next turn's history is sound
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    r.engine(5)
        .run_turn(
            TurnRequest {
                conversation_id: Some(summary.conversation_id),
                model: fake_ollama::MODEL.into(),
                text: "next".into(),
                ..Default::default()
            },
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
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let more = engine
        .run_turn(
            resume(switchboard_engine::chat::Resume::Continue),
            &move |e| ev.lock().unwrap().push(e),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(more.limit_reached);
    assert!(matches!(
        events.lock().unwrap()[0],
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
async fn edits_and_regenerations_make_branches_and_the_model_sees_only_the_shown_one() {
    let r = rig(vec![]).await;
    // the fake answers with what it was sent, so the test sees the history the model got
    r.fake.set_responder(|req: &Value| {
        let said: Vec<String> = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] != "system")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect();
        Stream::new().text(&said.join(" / ")).done().reply()
    });
    let engine = r.engine(5);
    let turn = |req: TurnRequest| engine.run_turn(req, &|_| {}, CancellationToken::new());
    let first = turn(TurnRequest {
        model: fake_ollama::MODEL.into(),
        text: "two plus two".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let id = first.conversation_id;
    let ask = |text: &str| TurnRequest {
        conversation_id: Some(id),
        model: fake_ollama::MODEL.into(),
        text: text.into(),
        ..Default::default()
    };
    turn(ask("three plus three")).await.unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    let (u1, u2) = (conv.messages[0].id, conv.messages[2].id);
    // edit the second question: the model sees the edit, not the original
    turn(TurnRequest {
        edit_of: Some(u2),
        ..ask("five plus five")
    })
    .await
    .unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(
        conv.messages.last().unwrap().content,
        "two plus two / two plus two / five plus five"
    );
    assert_eq!(
        (
            conv.messages[2].sibling_index,
            conv.messages[2].sibling_count
        ),
        (1, 2)
    );
    // regenerate the first reply: the model sees the question alone
    turn(TurnRequest {
        regenerate: Some(u1),
        ..ask("")
    })
    .await
    .unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(conv.messages.len(), 2);
    assert_eq!(conv.messages[1].content, "two plus two");
    assert_eq!(
        (
            conv.messages[1].sibling_index,
            conv.messages[1].sibling_count
        ),
        (1, 2)
    );
    // the old branch is still there
    r.store.show_branch(id, u2).await.unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(conv.messages[2].content, "three plus three");
    // only user messages are edited; regenerating needs the user message
    let reply = conv.messages[1].id;
    assert!(turn(TurnRequest {
        edit_of: Some(reply),
        ..ask("x")
    })
    .await
    .is_err());
    assert!(turn(TurnRequest {
        regenerate: Some(reply),
        ..ask("")
    })
    .await
    .is_err());
}

async fn run(
    engine: &ChatEngine,
    conversation_id: Option<i64>,
    model: &str,
) -> switchboard_engine::TurnSummary {
    let req = TurnRequest {
        conversation_id,
        model: model.into(),
        text: "hi".into(),
        ..Default::default()
    };
    engine
        .run_turn(req, &|_| {}, CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn conversation_settings_and_thinking_shape_what_the_model_is_sent() {
    let r = rig(vec![]).await;
    r.fake.set_models(&[fake_ollama::MODEL, "thinker:latest"]);
    r.fake
        .set_capabilities("thinker:latest", &["completion", "tools", "thinking"]);
    r.fake.set_responder(|req: &Value| {
        if req["model"] == "thinker:latest" {
            Stream::new()
                .thinking("Let me see…")
                .text("Done.")
                .done()
                .reply()
        } else {
            Stream::new().text("ok").done().reply()
        }
    });
    let mut engine = r.engine(5);
    engine.options.system_prompt = "App prompt.".into();
    engine.options.temperature = Some(0.7);
    let first = run(&engine, None, fake_ollama::MODEL).await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(sent["messages"][0]["content"], "App prompt.");
    assert_eq!(sent["options"], json!({"temperature": 0.7}));
    assert!(sent.get("think").is_none(), "not a thinking model: {sent}");
    // the conversation's own settings win
    let id = first.conversation_id;
    r.store
        .set_settings(
            id,
            &switchboard_engine::store::ConversationSettings {
                system_prompt: Some("Conversation prompt.".into()),
                temperature: Some(0.1),
                num_ctx: Some(4096),
                provider: None,
            },
        )
        .await
        .unwrap();
    run(&engine, Some(id), fake_ollama::MODEL).await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(sent["messages"][0]["content"], "Conversation prompt.");
    assert_eq!(
        sent["options"],
        json!({"temperature": 0.1, "num_ctx": 4096})
    );
    // a model that can think is asked to, and its thinking is kept
    let t = run(&engine, None, "thinker:latest").await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(sent["think"], true);
    let conv = r.store.conversation(t.conversation_id).await.unwrap();
    assert_eq!(conv.messages[1].thinking.as_deref(), Some("Let me see…"));
    // unless thinking is off in the settings
    engine.options.thinking = false;
    run(&engine, None, "thinker:latest").await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert!(sent.get("think").is_none());
}

#[tokio::test]
async fn a_model_without_native_tools_gets_them_in_text_and_its_json_calls_run() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake.set_models(&[fake_ollama::MODEL, "plain:latest"]);
    r.fake.set_capabilities("plain:latest", &["completion"]);
    r.fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let text = last["content"].as_str().unwrap();
        if text.starts_with("Result of calculator__add:") {
            Stream::new().text("It is 42.").done().reply()
        } else {
            // the call arrives as JSON in a fence, split across chunks
            Stream::new()
                .text("Let me add.\n```json\n{\"tool\": \"calculator__add\", ")
                .text("\"arguments\": {\"a\": 2, \"b\": 40}}\n```")
                .done()
                .reply()
        }
    });
    let engine = r.engine(5);
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let summary = engine
        .run_turn(
            TurnRequest {
                model: "plain:latest".into(),
                text: "what is 2+40?".into(),
                ..Default::default()
            },
            &move |e| ev.lock().unwrap().push(e),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let sent = r.fake.chat_requests();
    // no native tools (Ollama would refuse them with 400); they are in the system prompt
    assert!(sent[0].get("tools").is_none(), "{}", sent[0]);
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("- calculator__add: "), "{system}");
    assert!(system.contains("{\"tool\": \"<tool name>\""), "{system}");
    // the second request: the call as JSON text, the result as a user message
    let msgs = sent[1]["messages"].as_array().unwrap();
    let n = msgs.len();
    assert_eq!(msgs[n - 2]["role"], "assistant");
    assert!(msgs[n - 2].get("tool_calls").is_none());
    assert!(msgs[n - 2]["content"]
        .as_str()
        .unwrap()
        .ends_with(r#"{"tool":"calculator__add","arguments":{"a":2,"b":40}}"#));
    assert_eq!(
        msgs[n - 1],
        json!({"role": "user", "content": "Result of calculator__add:\n42"})
    );
    // stored as a real call; the JSON is not in the text
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls[0].result.as_deref(), Some("42"));
    assert_eq!(conv.messages[1].content, "Let me add.");
    assert_eq!(conv.messages.last().unwrap().content, "It is 42.");
    let done = events.lock().unwrap().iter().find_map(|e| match e {
        ChatEvent::AssistantDone { content, .. } => Some(content.clone()),
        _ => None,
    });
    assert_eq!(done.as_deref(), Some("Let me add."));

    // malformed JSON is just text; and the per-model setting can force text mode
    r.fake.set_responder(|_req: &Value| {
        Stream::new()
            .text("{\"tool\": \"calculator__add\", \"arguments\": {\"a\": }")
            .done()
            .reply()
    });
    let mut engine = r.engine(5);
    engine.options.tool_modes.insert(
        fake_ollama::MODEL.into(),
        switchboard_engine::settings::ToolMode::Text,
    );
    let s = run(&engine, None, fake_ollama::MODEL).await;
    assert!(r
        .fake
        .chat_requests()
        .last()
        .unwrap()
        .get("tools")
        .is_none());
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    assert!(conv.tool_calls.is_empty());
    assert!(conv.messages[1].content.starts_with("{\"tool\""));
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
        ChatEvent::Notice { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert!(notice
        .unwrap()
        .contains("Stopped after 3 rounds of tool calls"));
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
    assert_eq!(last.status, status::NOTICE);
    // the notice is never sent to the model on the next turn
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    let engine = r.engine(3);
    engine
        .run_turn(
            TurnRequest {
                conversation_id: Some(summary.conversation_id),
                model: fake_ollama::MODEL.into(),
                text: "next".into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let req = r.fake.chat_requests().last().unwrap().clone();
    assert!(
        !req.to_string().contains("Stopped after"),
        "notice leaked to the model"
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
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(450)).await;
        c.cancel();
    });
    let (summary, events) = r.turn_with("tell a story", 5, cancel).await;
    assert!(summary.stopped);
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let m = conv.messages.last().unwrap();
    assert_eq!(m.status, status::STOPPED);
    assert!(m.content.starts_with("Once "), "{:?}", m.content);
    assert!(!m.content.contains("time"), "{:?}", m.content);
    assert!(matches!(
        events.last(),
        Some(ChatEvent::Done { stopped: true, .. })
    ));
}

#[tokio::test]
async fn every_llm_call_is_recorded_exactly_for_the_debug_view() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake.set_responder(call_then_answer(vec![(
        "a",
        "calculator__add",
        json!({"a": 2, "b": 40}),
    )]));
    let (summary, _) = r.turn("what is 2+40?").await;
    let calls = r.store.llm_calls(summary.conversation_id).await.unwrap();
    let sent = r.fake.chat_requests();
    assert_eq!(calls.len(), 2);
    // the request exactly as sent, the response object by object
    assert_eq!(calls[0].request, sent[0]);
    assert_eq!(calls[1].request, sent[1]);
    assert_eq!(calls[0].model, fake_ollama::MODEL);
    assert_eq!(
        calls[0].response[0]["message"]["tool_calls"][0]["function"]["name"],
        "calculator__add"
    );
    assert_eq!(calls[1].response.last().unwrap()["done"], true);
    assert!(calls
        .iter()
        .all(|c| c.error.is_none() && c.message_id.is_some()));
    // only the most recent calls of a conversation are kept
    let id = summary.conversation_id;
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    let engine = r.engine(5);
    for _ in 0..switchboard_engine::store::debug::KEEP_PER_CONVERSATION {
        run(&engine, Some(id), fake_ollama::MODEL).await;
    }
    let kept = r.store.llm_calls(id).await.unwrap();
    assert_eq!(
        kept.len() as i64,
        switchboard_engine::store::debug::KEEP_PER_CONVERSATION
    );
    assert!(kept[0].id > calls[1].id, "the oldest went first");
    r.host.shutdown().await;
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
        .any(|e| matches!(e, ChatEvent::Error { kind, .. } if kind == "stream")));
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.messages[1].content, "Half an ");
    assert_eq!(conv.messages[1].status, status::ERROR);
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

#[tokio::test]
async fn shutdown_ends_every_server_and_its_children() {
    // bash stays the parent of node, so the server has a child process
    let wrapped = ServerConfig::new(
        "bash",
        &[
            "-c",
            &format!(
                "node {} stdio; echo done",
                support::everything_server().display()
            ),
        ],
    );
    let r = rig(vec![
        ("wrapped", wrapped),
        ("calculator", builtin("calculator")),
    ])
    .await;
    let pids: Vec<u32> = r.host.servers().iter().map(|s| s.pid.unwrap()).collect();
    assert_eq!(
        r.status("wrapped").status,
        ServerStatus::Running,
        "{:?}",
        r.status("wrapped")
    );
    let group_members = |pgid: u32| -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit(')')
                            .next()
                            .map(|r| r.split_whitespace().nth(2).map(String::from))
                    })
                    .flatten()
                    .and_then(|g| g.parse::<u32>().ok())
                    == Some(pgid)
            })
            .collect()
    };
    assert!(
        group_members(pids[1]).len() >= 2 || group_members(pids[0]).len() >= 2,
        "bash and node both run"
    );
    r.host.shutdown().await;
    for pid in pids {
        let left: Vec<u32> = group_members(pid)
            .into_iter()
            .filter(|p| {
                !std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ")
            })
            .collect();
        assert!(
            left.is_empty(),
            "processes of group {pid} still alive: {left:?}"
        );
    }
    assert!(r
        .host
        .servers()
        .iter()
        .all(|s| s.status == ServerStatus::Stopped));
}

/// mcp-server-time (PyPI, Python SDK 2.x, stdio) and an SDK 2.x server over Streamable HTTP speak
/// both eras: with discovery the host starts them with 2026-07-28 `server/discover`; without, with
/// the 2025 `initialize` handshake. The 2025-only server-everything (stdio and HTTP) falls back to
/// `initialize` either way. Calls work in every case.
#[tokio::test]
async fn both_protocol_eras_discover_with_fallback_to_initialize() {
    let time = ServerConfig::new(
        support::pypi_server("mcp-server-time").to_str().unwrap(),
        &["--local-timezone", "UTC"],
    );
    let (_dual, dual_port) = support::dual_era_http_server();
    let (_legacy_http, legacy_port) = support::everything_over_http("streamableHttp");
    for discover in [true, false] {
        let mut config = McpConfig::default();
        config.servers.insert("time".into(), time.clone());
        config.servers.insert("everything".into(), everything());
        config.servers.insert(
            "dual".into(),
            ServerConfig::http(format!("http://127.0.0.1:{dual_port}/mcp")),
        );
        config.servers.insert(
            "legacy".into(),
            ServerConfig::http(format!("http://127.0.0.1:{legacy_port}/mcp")),
        );
        let mut opts = HostOptions::new(support::switchboard_bin());
        opts.discover = discover;
        let host = McpHost::new(opts);
        host.start_all(&config).await;
        let views = host.servers();
        let version = |name: &str| {
            let v = views.iter().find(|s| s.name == name).unwrap();
            assert_eq!(v.status, ServerStatus::Running, "{v:?}");
            v.protocol_version.clone().unwrap()
        };
        let expected = if discover { "2026-07-28" } else { "2025-11-25" };
        assert_eq!(version("time"), expected, "discover = {discover}");
        assert_eq!(version("dual"), expected, "discover = {discover}");
        assert_eq!(version("everything"), "2025-11-25", "discover = {discover}");
        assert_eq!(version("legacy"), "2025-11-25", "discover = {discover}");
        let added = host
            .call_tool(
                "dual__add",
                json!({"a": 2, "b": 40}).as_object().unwrap().clone(),
                &CancellationToken::new(),
            )
            .await;
        assert_eq!((added.text.as_str(), added.is_error), ("42.0", false));
        let none = CancellationToken::new();
        let now = host
            .call_tool(
                "time__get_current_time",
                json!({"timezone": "Europe/Lisbon"})
                    .as_object()
                    .unwrap()
                    .clone(),
                &none,
            )
            .await;
        assert!(!now.is_error, "{}", now.text);
        assert!(now.text.contains("Europe/Lisbon"), "{}", now.text);
        let structured = &now.raw.as_ref().unwrap()["structuredContent"];
        assert_eq!(structured["timezone"], "Europe/Lisbon", "{:?}", now.raw);
        // a bad timezone is the tool's error, passed on for the model
        let bad = host
            .call_tool(
                "time__get_current_time",
                json!({"timezone": "Mars/Olympus"})
                    .as_object()
                    .unwrap()
                    .clone(),
                &none,
            )
            .await;
        assert!(bad.is_error, "{}", bad.text);
        let sum = host
            .call_tool(
                "everything__get-sum",
                json!({"a": 2, "b": 40}).as_object().unwrap().clone(),
                &none,
            )
            .await;
        assert!(sum.text.contains("42"), "{}", sum.text);
        host.shutdown().await;
    }
}

#[tokio::test]
async fn a_conversation_uses_only_the_servers_and_tools_chosen_for_it() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("files", builtin("files")),
    ])
    .await;
    // the model tries a tool that was turned off for this conversation
    r.fake.set_responder(call_then_answer(vec![(
        "m",
        "calculator__multiply",
        json!({"a": 6, "b": 7}),
    )]));
    let engine = r.engine(5);
    let choice = switchboard_engine::store::ToolChoice {
        disabled_servers: ["files".to_string()].into(),
        disabled_tools: ["calculator/multiply".to_string()].into(),
    };
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "six times seven".into(),
                tool_choice: Some(choice.clone()),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let offered = |req: &Value| -> Vec<String> {
        req["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = offered(&r.fake.chat_requests()[0]);
    assert!(first.contains(&"calculator__add".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("files__")), "{first:?}");
    assert!(
        !first.contains(&"calculator__multiply".to_string()),
        "{first:?}"
    );
    // the call to the turned-off tool did not run; the model was told why
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert!(conv.tool_calls[0].is_error);
    assert!(conv.tool_calls[0]
        .result
        .as_deref()
        .unwrap()
        .contains("turned off for this conversation"));
    assert_eq!(conv.tool_choice, choice, "stored with the conversation");

    // the next turn (no choice given) keeps the stored one
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    engine
        .run_turn(
            TurnRequest {
                conversation_id: Some(summary.conversation_id),
                model: fake_ollama::MODEL.into(),
                text: "again".into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let later = offered(r.fake.chat_requests().last().unwrap());
    assert_eq!(later, first);
    // a new conversation offers everything
    engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "fresh".into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let fresh = offered(r.fake.chat_requests().last().unwrap());
    assert!(fresh.contains(&"calculator__multiply".to_string()));
    assert!(fresh.iter().any(|n| n.starts_with("files__")));
    r.host.shutdown().await;
}

#[tokio::test]
async fn prompts_and_resources_come_from_every_page_and_refresh_on_list_changed() {
    let mut config = McpConfig::default();
    config
        .servers
        .insert("dynamic".into(), python("dynamic_server.py"));
    config
        .servers
        .insert("calculator".into(), builtin("calculator"));
    let host = McpHost::new(HostOptions::new(support::switchboard_bin()));
    host.start_all(&config).await;
    let prompts =
        |h: &McpHost| -> Vec<String> { h.prompts().into_iter().map(|p| p.name).collect() };
    let resources =
        |h: &McpHost| -> Vec<String> { h.resources().into_iter().map(|r| r.uri).collect() };
    // two pages each; the calculator offers neither (and is not asked: no capability)
    assert_eq!(prompts(&host), vec!["p1", "p2", "p3"]);
    assert_eq!(resources(&host), vec!["dyn://r1", "dyn://r2", "dyn://r3"]);
    let p = &host.prompts()[0];
    assert_eq!(p.server, "dynamic");
    assert_eq!(p.arguments[0].name, "topic");
    assert!(p.arguments[0].required);
    let got = host
        .get_prompt(
            "dynamic",
            "p2",
            json!({"topic": "otters"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(got[0].text, "p2 about otters");
    assert_eq!(got[0].role, "user");
    let read = host.read_resource("dynamic", "dyn://r3").await.unwrap();
    assert_eq!(read.text, "contents of dyn://r3");
    assert_eq!(read.mime_type.as_deref(), Some("text/plain"));
    assert!(host
        .read_resource("nope", "dyn://r1")
        .await
        .unwrap_err()
        .contains("not configured"));

    host.call_tool(
        "dynamic__grow",
        Default::default(),
        &CancellationToken::new(),
    )
    .await;
    let t = std::time::Instant::now();
    while prompts(&host).len() < 4 || resources(&host).len() < 4 {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "list_changed did not refresh: {:?} {:?}",
            prompts(&host),
            resources(&host)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(prompts(&host)[3], "p4");
    assert_eq!(resources(&host)[3], "dyn://r4");
    host.shutdown().await;
}

#[tokio::test]
async fn prompts_and_resources_of_server_everything() {
    let r = rig(vec![("everything", everything())]).await;
    let names: Vec<String> = r.host.prompts().into_iter().map(|p| p.name).collect();
    for n in ["simple-prompt", "args-prompt", "resource-prompt"] {
        assert!(names.contains(&n.to_string()), "{n} in {names:?}");
    }
    let args = r
        .host
        .prompts()
        .into_iter()
        .find(|p| p.name == "args-prompt")
        .unwrap();
    let required: Vec<(String, bool)> = args
        .arguments
        .iter()
        .map(|a| (a.name.clone(), a.required))
        .collect();
    assert_eq!(
        required,
        vec![("city".to_string(), true), ("state".to_string(), false)]
    );
    let got = r
        .host
        .get_prompt(
            "everything",
            "args-prompt",
            json!({"city": "Lisbon"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(got[0].text, "What's weather in Lisbon?");
    // a prompt with an embedded resource: its text comes along
    let embedded = r
        .host
        .get_prompt(
            "everything",
            "resource-prompt",
            json!({"resourceType": "Text", "resourceId": "2"})
                .as_object()
                .unwrap()
                .clone(),
        )
        .await
        .unwrap();
    assert_eq!(embedded.len(), 2, "{embedded:?}");
    assert!(!embedded[1].text.starts_with('['), "{embedded:?}");
    // a missing required argument is the server's error, passed on
    assert!(r
        .host
        .get_prompt("everything", "args-prompt", Default::default())
        .await
        .is_err());
    let resources = r.host.resources();
    let doc = resources
        .iter()
        .find(|r| r.name == "features.md")
        .unwrap_or_else(|| panic!("features.md in {resources:?}"));
    assert_eq!(doc.mime_type.as_deref(), Some("text/markdown"));
    let read = r.host.read_resource("everything", &doc.uri).await.unwrap();
    assert!(read.text.len() > 100, "{}", read.text);
    r.host.shutdown().await;
}

#[tokio::test]
async fn tools_come_from_every_page_refresh_on_list_changed_and_calls_time_out() {
    let mut config = McpConfig::default();
    config
        .servers
        .insert("dynamic".into(), python("dynamic_server.py"));
    let mut opts = HostOptions::new(support::switchboard_bin());
    opts.call_timeout = Duration::from_secs(1);
    let host = McpHost::new(opts);
    host.start_all(&config).await;
    let names =
        |h: &McpHost| -> Vec<String> { h.tool_specs().into_iter().map(|t| t.name).collect() };
    assert_eq!(
        names(&host),
        vec![
            "dynamic__grow",
            "dynamic__hang",
            "dynamic__t1",
            "dynamic__log",
            "dynamic__level"
        ],
        "all three pages of tools/list"
    );

    let none = CancellationToken::new();
    let grown = host
        .call_tool("dynamic__grow", Default::default(), &none)
        .await;
    assert_eq!(grown.text, "now 6 tools");
    let t = std::time::Instant::now();
    while !names(&host).contains(&"dynamic__t2".to_string()) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "tools/list_changed did not refresh: {:?}",
            names(&host)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let hung = host
        .call_tool("dynamic__hang", Default::default(), &none)
        .await;
    assert!(hung.is_error);
    assert!(
        hung.text.contains("did not answer within 1 s"),
        "{}",
        hung.text
    );
    // the server is still usable after a timed-out call
    let ok = host
        .call_tool("dynamic__t1", Default::default(), &none)
        .await;
    assert_eq!((ok.text.as_str(), ok.is_error), ("t1", false));

    // a cancelled call returns at once with an error the model can read
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let cancelled = host
        .call_tool("dynamic__hang", Default::default(), &cancel)
        .await;
    assert!(
        cancelled.is_error && cancelled.text.contains("cancelled"),
        "{}",
        cancelled.text
    );
    host.shutdown().await;
}

/// Answers approval requests from a script and records them.
struct ScriptedApprover {
    answers: Mutex<Vec<Decision>>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait::async_trait]
impl Approver for ScriptedApprover {
    async fn decide(&self, request: &ApprovalRequest, _cancel: &CancellationToken) -> Decision {
        self.asked.lock().unwrap().push(request.clone());
        self.answers.lock().unwrap().remove(0)
    }
    async fn decide_sampling(&self, _: &SamplingRequest, _: &CancellationToken) -> bool {
        false
    }
}

/// Allows every tool call; answers sampling requests from a script and records them.
struct SamplingApprover {
    answers: Mutex<Vec<bool>>,
    asked: Mutex<Vec<SamplingRequest>>,
}

#[async_trait::async_trait]
impl Approver for SamplingApprover {
    async fn decide(&self, _: &ApprovalRequest, _: &CancellationToken) -> Decision {
        Decision::of(Action::AllowOnce)
    }
    async fn decide_sampling(&self, request: &SamplingRequest, _: &CancellationToken) -> bool {
        self.asked.lock().unwrap().push(request.clone());
        self.answers.lock().unwrap().remove(0)
    }
}

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
    let approver = Arc::new(SamplingApprover {
        answers: Mutex::new(vec![true, false]),
        asked: Mutex::new(vec![]),
    });
    let mut engine = r.engine(5);
    engine.approver = approver.clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let emit = move |e: ChatEvent| ev.lock().unwrap().push(e);
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "sample twice".into(),
                ..Default::default()
            },
            &emit,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let asked = approver.asked.lock().unwrap().clone();
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
    let events = events.lock().unwrap().clone();
    let outcomes: Vec<(String, Option<String>)> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::SamplingFinished { outcome, text, .. } => {
                Some((outcome.clone(), text.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0].0, "answered");
    assert!(outcomes[0]
        .1
        .as_deref()
        .unwrap()
        .starts_with("Sampled: teal"));
    assert_eq!(outcomes[1], ("declined".to_string(), None));
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
    let approver = Arc::new(ScriptedApprover {
        answers: Mutex::new(vec![
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
        ]),
        asked: Mutex::new(vec![]),
    });
    let mut engine = r.engine(5);
    engine.approver = approver.clone();
    engine
        .policies
        .insert("files__delete_file".into(), Policy::Deny);
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "do it".into(),
                ..Default::default()
            },
            &move |e| ev.lock().unwrap().push(e),
            CancellationToken::new(),
        )
        .await
        .unwrap();

    // only the two write_file calls were asked about, with the destructive warning
    let asked = approver.asked.lock().unwrap().clone();
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
        (tc[0].approval.as_deref(), tc[0].result.as_deref()),
        (Some("read-only"), Some("3"))
    );
    assert_eq!(tc[1].approval.as_deref(), Some("denied"));
    assert!(tc[1].is_error && tc[1].result.as_deref().unwrap().contains("declined"));
    assert_eq!(
        tc[2].approval.as_deref(),
        Some("approved, arguments edited")
    );
    assert_eq!(
        tc[2].arguments,
        json!({"path": "edited.txt", "content": "edited"}),
        "the edited arguments are stored"
    );
    assert_eq!(tc[3].approval.as_deref(), Some("denied by policy"));
    assert!(tc[3].is_error);
    // what actually happened on disk
    let sandbox = r._dir.path().join("sandbox");
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
    let approver = Arc::new(ScriptedApprover {
        answers: Mutex::new(vec![
            Decision::of(Action::AllowConversation),
            Decision::of(Action::AllowOnce),
        ]),
        asked: Mutex::new(vec![]),
    });
    let mut engine = r.engine(5);
    engine.approver = approver.clone();
    let first = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "a".into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    engine
        .run_turn(
            TurnRequest {
                conversation_id: Some(first.conversation_id),
                model: fake_ollama::MODEL.into(),
                text: "b".into(),
                ..Default::default()
            },
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
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "c".into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
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
        .map(|t| t.approval.clone().unwrap())
        .collect();
    assert_eq!(
        approvals,
        vec!["approved for this chat", "allowed in this chat"]
    );
    r.host.shutdown().await;
}

async fn wait_for_status(
    host: &McpHost,
    name: &str,
    f: impl Fn(&switchboard_engine::mcp::ServerView) -> bool,
) -> switchboard_engine::mcp::ServerView {
    let t = std::time::Instant::now();
    loop {
        let s = host.servers().into_iter().find(|s| s.name == name).unwrap();
        if f(&s) {
            return s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "timed out; last: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_crashed_server_is_restarted_with_backoff_and_given_up_on_when_it_keeps_crashing() {
    let mut config = McpConfig::default();
    config
        .servers
        .insert("crashy".into(), python("crash_server.py"));
    config
        .servers
        .insert("flaky".into(), python("flaky_server.py"));
    let mut opts = HostOptions::new(support::switchboard_bin());
    opts.restart_base_delay = Duration::from_millis(100);
    opts.max_restarts = 2;
    let host = McpHost::new(opts);
    host.start_all(&config).await;
    let none = CancellationToken::new();

    // crash it mid-call: it is marked failed, says it will restart, and comes back
    let out = host
        .call_tool("crashy__crash", Default::default(), &none)
        .await;
    assert!(out.is_error);
    let failed = wait_for_status(&host, "crashy", |s| s.status == ServerStatus::Failed).await;
    assert!(
        failed
            .error
            .as_deref()
            .unwrap()
            .contains("restarting in 0.1 s (attempt 1 of 2)"),
        "{failed:?}"
    );
    let back = wait_for_status(&host, "crashy", |s| s.status == ServerStatus::Running).await;
    assert_eq!(back.restarts, 1);
    assert_eq!(
        host.call_tool("crashy__ok", Default::default(), &none)
            .await
            .text,
        "fine"
    );

    // one that dies every time: two restarts (0.1 s, then 0.2 s), then it stays failed
    let gave_up = wait_for_status(&host, "flaky", |s| {
        s.status == ServerStatus::Failed
            && s.error.as_deref().unwrap_or_default().contains("gave up")
    })
    .await;
    assert_eq!(gave_up.restarts, 2);
    // it answers `server/discover` with an empty result: not 2026, not an error; the host
    // starts it again with `initialize` (which it speaks), and says so in its log
    assert!(
        gave_up
            .stderr_tail
            .iter()
            .any(|l| l.contains("starting it again with the 2025 initialize handshake")),
        "{:?}",
        gave_up.stderr_tail
    );
    assert!(gave_up
        .error
        .unwrap()
        .contains("gave up after 2 automatic restarts"));
    host.shutdown().await;
}

#[tokio::test]
async fn a_streamable_http_server_works_like_a_stdio_one() {
    let (_server, port) = support::everything_over_http("streamableHttp");
    let r = rig(vec![
        (
            "remote",
            ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
        ),
        (
            "nothing-there",
            ServerConfig::http(format!("http://127.0.0.1:{}/mcp", support::free_port())),
        ),
    ])
    .await;
    let s = r.status("remote");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(s.transport, switchboard_engine::mcp::Transport::Http);
    assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));
    let down = r.status("nothing-there");
    assert_eq!(down.status, ServerStatus::Failed);
    assert!(
        down.error.as_deref().unwrap().contains("127.0.0.1"),
        "{down:?}"
    );
    echo_and_sum_through(&r, "remote", "over HTTP").await;
    r.host.shutdown().await;
}

/// A turn that calls server-everything's echo and get-sum on `server` (any transport): both results
/// arrive and are stored.
async fn echo_and_sum_through(r: &Rig, server: &str, message: &str) {
    r.fake.set_responder(call_then_answer(vec![
        ("e", &format!("{server}__echo"), json!({"message": message})),
        ("s", &format!("{server}__get-sum"), json!({"a": 40, "b": 2})),
    ]));
    let (summary, _) = r.turn(&format!("use {server}")).await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert!(
        conv.tool_calls[0]
            .result
            .as_deref()
            .unwrap()
            .contains(message),
        "{:?}",
        conv.tool_calls[0]
    );
    assert!(
        conv.tool_calls[1].result.as_deref().unwrap().contains("42"),
        "{:?}",
        conv.tool_calls[1]
    );
}

/// Over Streamable HTTP and legacy SSE too, a call reports progress, and the server's
/// elicitation and sampling requests reach the user and the model (server-everything sends them on
/// the POST response stream; on SSE on the event stream); prompts and resources are listed; image
/// content arrives, roots reach the server, and a call can be cancelled.
#[tokio::test]
async fn progress_elicitation_and_sampling_work_over_http_and_sse() {
    let (_http, http_port) = support::everything_over_http("streamableHttp");
    let (_sse, sse_port) = support::everything_over_http("sse");
    let mut sse = ServerConfig::http(format!("http://127.0.0.1:{sse_port}/sse"));
    sse.transport = Some("sse".into());
    let r = rig(vec![
        (
            "http",
            ServerConfig::http(format!("http://127.0.0.1:{http_port}/mcp")),
        ),
        ("sse", sse),
    ])
    .await;
    for server in ["http", "sse"] {
        assert_eq!(r.status(server).status, ServerStatus::Running);
        assert!(r
            .host
            .prompts()
            .iter()
            .any(|p| p.server == server && p.name == "args-prompt"));
        assert!(r.host.resources().iter().any(|x| x.server == server));
    }
    let tool_turn = call_then_answer(vec![
        (
            "p1",
            "http__trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        ),
        ("e1", "http__trigger-elicitation-request", json!({})),
        (
            "s1",
            "http__trigger-sampling-request",
            json!({"prompt": "http colour"}),
        ),
        (
            "p2",
            "sse__trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        ),
        ("e2", "sse__trigger-elicitation-request", json!({})),
        (
            "s2",
            "sse__trigger-sampling-request",
            json!({"prompt": "sse colour"}),
        ),
    ]);
    r.fake.set_responder(move |req: &Value| {
        if req["messages"][0]["content"] == "You are a helpful test server." {
            return Stream::new().text("Sampled teal").done().reply();
        }
        tool_turn(req)
    });
    let mut engine = r.engine(5);
    engine.approver = Arc::new(SamplingApprover {
        answers: Mutex::new(vec![true, true]),
        asked: Mutex::new(vec![]),
    });
    let host = r.host.clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let emit = move |e: ChatEvent| {
        if let ChatEvent::ElicitationRequested { elicitation, .. } = &e {
            host.answer_elicitation(
                elicitation.id,
                switchboard_engine::mcp::ElicitationAnswer {
                    action: "accept".into(),
                    content: Some(json!({"name": "Ada", "check": true, "email": "ada@example.com", "integer": 7})),
                },
            );
        }
        ev.lock().unwrap().push(e);
    };
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "everything, remotely".into(),
                ..Default::default()
            },
            &emit,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls.len(), 6);
    for c in &conv.tool_calls {
        assert!(!c.is_error, "{c:?}");
    }
    let events = events.lock().unwrap().clone();
    for (i, call) in conv.tool_calls.iter().enumerate() {
        let result = call.result.clone().unwrap();
        match i % 3 {
            0 => assert!(
                events
                    .iter()
                    .any(|e| matches!(e, ChatEvent::ToolCallProgress { id, .. } if *id == call.id)),
                "no progress for {}",
                call.name
            ),
            1 => assert!(result.contains("Ada"), "{}: {result}", call.name),
            _ => assert!(result.contains("Sampled teal"), "{}: {result}", call.name),
        }
    }
    // and, on both transports: image content, roots (with roots/list_changed), cancel
    let roots_dir = tempfile::tempdir().unwrap();
    r.host.set_roots(vec![roots_dir.path().to_path_buf()]).await;
    let none = CancellationToken::new();
    for server in ["http", "sse"] {
        let image = r
            .host
            .call_tool(
                &format!("{server}__get-tiny-image"),
                Default::default(),
                &none,
            )
            .await;
        let blocks = image.raw.as_ref().unwrap()["content"]
            .as_array()
            .unwrap()
            .clone();
        assert!(
            blocks
                .iter()
                .any(|b| b["type"] == "image" && b["mimeType"] == "image/png"),
            "{server}: {blocks:?}"
        );
        let t = std::time::Instant::now();
        loop {
            let roots = r
                .host
                .call_tool(
                    &format!("{server}__get-roots-list"),
                    Default::default(),
                    &none,
                )
                .await;
            if roots.text.contains(&roots_dir.path().display().to_string()) {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{server} never saw the new root: {}",
                roots.text
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            c.cancel();
        });
        let t = std::time::Instant::now();
        let long = r
            .host
            .call_tool(
                &format!("{server}__trigger-long-running-operation"),
                json!({"duration": 30, "steps": 30})
                    .as_object()
                    .unwrap()
                    .clone(),
                &cancel,
            )
            .await;
        assert!(
            long.is_error && long.text.contains("cancelled"),
            "{server}: {}",
            long.text
        );
        assert!(t.elapsed() < Duration::from_secs(5));
    }
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_legacy_http_sse_server_works_through_our_own_transport() {
    let (_server, port) = support::everything_over_http("sse");
    let mut sse = ServerConfig::http(format!("http://127.0.0.1:{port}/sse"));
    sse.transport = Some("sse".into());
    let mut wrong = ServerConfig::http(format!("http://127.0.0.1:{port}/nope"));
    wrong.transport = Some("sse".into());
    let r = rig(vec![("legacy", sse), ("wrong-path", wrong)]).await;
    let s = r.status("legacy");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(s.transport, switchboard_engine::mcp::Transport::Sse);
    assert!(s.tools.iter().any(|t| t.name == "get-sum"));
    let wrong = r.status("wrong-path");
    assert_eq!(wrong.status, ServerStatus::Failed);
    assert_eq!(
        wrong.failed_step.as_deref(),
        Some("opening the event stream (GET)")
    );
    assert!(
        wrong.error.as_deref().unwrap().contains("answered 404"),
        "{wrong:?}"
    );
    echo_and_sum_through(&r, "legacy", "over SSE").await;
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_rest_dialect_server_is_a_tool_source_like_any_other() {
    let (_server, port) = support::rest_server();
    let mut rest = ServerConfig::http(format!("http://127.0.0.1:{port}"));
    rest.transport = Some("rest".into());
    let r = rig(vec![("legacy-rest", rest)]).await;
    let s = r.status("legacy-rest");
    assert_eq!(s.status, ServerStatus::Running, "{s:?}");
    assert_eq!(
        s.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        vec!["word_count", "shout"]
    );
    r.fake.set_responder(call_then_answer(vec![
        (
            "1",
            "legacy-rest__word_count",
            json!({"text": "one two three"}),
        ),
        ("2", "legacy-rest__shout", json!({"text": "hey"})),
        ("3", "legacy-rest__word_count", json!({"text": 5})),
    ]));
    let (summary, _) = r.turn("count").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let got: Vec<(Option<String>, bool)> = conv
        .tool_calls
        .iter()
        .map(|t| (t.result.clone(), t.is_error))
        .collect();
    assert_eq!(got[0], (Some("3".into()), false));
    assert_eq!(got[1], (Some("HEY".into()), false));
    assert!(got[2].1, "the server's isError comes through: {got:?}");
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
            json!({"duration": 30, "steps": 30}),
        ),
    ]));
    let mut engine = r.engine(5);
    engine.policies.insert(
        "everything__trigger-long-running-operation".into(),
        Policy::Allow,
    );
    let running = engine.running_calls.clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    // cancel the second call once it has reported progress
    let emit = move |e: ChatEvent| {
        if let ChatEvent::ToolCallProgress { id, .. } = &e {
            let second = ev
                .lock()
                .unwrap()
                .iter()
                .filter(|x| matches!(x, ChatEvent::ToolCallStarted { .. }))
                .count()
                == 2;
            if second {
                if let Some(t) = running.lock().unwrap().get(id) {
                    t.cancel();
                }
            }
        }
        ev.lock().unwrap().push(e);
    };
    let t = std::time::Instant::now();
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "go".into(),
                ..Default::default()
            },
            &emit,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "the cancelled 30 s operation did not hold the turn up"
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
    engine.policies.insert(
        "everything__trigger-elicitation-request".into(),
        Policy::Allow,
    );
    let host = r.host.clone();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a = asked.clone();
    let emit = move |e: ChatEvent| {
        if let ChatEvent::ElicitationRequested { elicitation, .. } = e {
            let first = a.lock().unwrap().is_empty();
            a.lock().unwrap().push(elicitation.clone());
            let answer = if first {
                switchboard_engine::mcp::ElicitationAnswer {
                    action: "accept".into(),
                    content: Some(
                        json!({"name": "Ada Lovelace", "check": true, "email": "ada@example.com", "integer": 7}),
                    ),
                }
            } else {
                switchboard_engine::mcp::ElicitationAnswer {
                    action: "decline".into(),
                    content: None,
                }
            };
            assert!(host.answer_elicitation(elicitation.id, answer));
        }
    };
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "ask me".into(),
                ..Default::default()
            },
            &emit,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].server, "everything");
    let props = asked[0].schema.as_ref().unwrap()["properties"]
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
    assert!(!r.host.answer_elicitation(
        asked[0].id,
        switchboard_engine::mcp::ElicitationAnswer {
            action: "cancel".into(),
            content: None
        }
    ));
    r.host.shutdown().await;
}

#[tokio::test]
async fn hostile_servers_hang_flood_or_answer_50_mb_and_the_others_keep_working() {
    let hostile = |mode: &str| {
        let mut c = python("hostile_server.py");
        c.args.push(mode.into());
        c
    };
    let r = rig(vec![
        ("hangs", hostile("hang-init")),
        ("floods", hostile("flood")),
        ("huge", hostile("huge")),
        ("calculator", builtin("calculator")),
    ])
    .await;
    let hangs = r.status("hangs");
    assert_eq!(hangs.status, ServerStatus::Failed);
    assert!(
        hangs
            .error
            .as_deref()
            .unwrap()
            .contains("no answer to the MCP handshake within 4 s"),
        "{hangs:?}"
    );
    assert_eq!(r.status("floods").status, ServerStatus::Running);
    r.fake.set_responder(call_then_answer(vec![
        ("1", "huge__huge", json!({})),
        ("2", "floods__ok", json!({})),
        ("3", "calculator__add", json!({"a": 1, "b": 1})),
    ]));
    let t = std::time::Instant::now();
    let (summary, _) = r.turn("misbehave").await;
    assert!(t.elapsed() < Duration::from_secs(30));
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let huge = conv.tool_calls[0].result.clone().unwrap();
    assert!(
        huge.len() < 300 * 1024,
        "the 50 MB result is cut: {} bytes",
        huge.len()
    );
    assert!(
        huge.contains("[Switchboard cut this result: it was 52428800 bytes"),
        "{}",
        &huge[huge.len() - 200..]
    );
    assert!(
        conv.tool_calls[0].result_raw.is_none(),
        "the 50 MB raw result is not stored"
    );
    assert_eq!(conv.tool_calls[1].result.as_deref(), Some("ok"));
    assert_eq!(conv.tool_calls[2].result.as_deref(), Some("2"));
    // what the model got is bounded too
    let sent = r.fake.chat_requests()[1].to_string();
    assert!(
        sent.len() < 400 * 1024,
        "{} bytes sent to the model",
        sent.len()
    );
    // the flood is kept to its last lines
    let floods = r.status("floods");
    assert!(floods.stderr_tail.len() <= 200);
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_servers_log_level_is_set_and_its_log_messages_are_kept() {
    let mut config = McpConfig::default();
    let mut dynamic = python("dynamic_server.py");
    dynamic.log_level = Some("debug".into());
    config.servers.insert("dynamic".into(), dynamic);
    let host = McpHost::new(HostOptions::new(support::switchboard_bin()));
    host.start_all(&config).await;
    let none = CancellationToken::new();
    let t = std::time::Instant::now();
    // logging/setLevel is sent right after start
    while host
        .call_tool("dynamic__level", Default::default(), &none)
        .await
        .text
        != "debug"
    {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the level was not set"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        host.call_tool("dynamic__log", Default::default(), &none)
            .await
            .text,
        "logged"
    );
    let log = host.servers()[0].stderr_tail.clone();
    assert!(
        log.contains(&"[warning] dyn: disk almost full".to_string()),
        "{log:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn roots_are_offered_and_a_change_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("alpha"), dir.path().join("beta dir"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut config = McpConfig::default();
    config.servers.insert("everything".into(), everything());
    let host = McpHost::new(HostOptions::new(support::switchboard_bin()));
    host.set_roots(vec![a.clone()]).await;
    host.start_all(&config).await;
    let none = CancellationToken::new();
    // server-everything offers get-roots-list only to clients that declare roots, and asks for them
    let t = std::time::Instant::now();
    let listed = loop {
        let out = host
            .call_tool("everything__get-roots-list", Default::default(), &none)
            .await;
        if out.text.contains("alpha") || t.elapsed() > Duration::from_secs(5) {
            break out;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        listed.text.contains(&format!("file://{}", a.display())),
        "{}",
        listed.text
    );
    host.set_roots(vec![a.clone(), b.clone()]).await;
    let t = std::time::Instant::now();
    loop {
        let out = host
            .call_tool("everything__get-roots-list", Default::default(), &none)
            .await;
        if out.text.contains("beta%20dir") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "roots/list_changed was not acted on: {}",
            out.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host.shutdown().await;
}
