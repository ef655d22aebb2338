//! The slow opt-in test (`make test-real-llm`, not in `make test`): a real model — Gemma 3 270M on
//! llama.cpp's llama-server, set up by `scripts/real-llm.sh` — through the OpenAI-compatible
//! provider, one turn that reaches the built-in calculator. The model is tiny: the conversation
//! starts with two worked examples (imported, as a user would import a conversation), and the
//! test asserts the plumbing (a real tool call reaches the real server, its result goes back, a
//! final reply is stored), not the quality of the answer. And a 30-turn chat in a 2,048-token
//! context keeps answering (issue 37: the app makes every request fit, never the server).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_engine::llm::{LlmClient, OpenAiClient, Role};
use switchboard_engine::store::Store;
use switchboard_engine::{ChatEvent, ChatOptions, TurnRequest};
use tokio_util::sync::CancellationToken;

fn env_path(name: &str) -> PathBuf {
    let p = PathBuf::from(std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run `make test-real-llm` (it runs scripts/real-llm.sh first)")
    }));
    assert!(p.exists(), "{} does not exist", p.display());
    p
}

/// llama-server on the real model, started and ready: the process (ended when dropped), its URL
/// and the model's name.
async fn llama_server(context: usize) -> (crate::support::Background, String, String) {
    // port 0: llama-server binds a port the system picks (read back from /proc)
    let mut cmd = Command::new(env_path("SWITCHBOARD_LLAMA_SERVER"));
    cmd.args(["--host", "127.0.0.1", "--port", "0", "-m"])
        .arg(env_path("SWITCHBOARD_GGUF"))
        .arg("--jinja")
        .arg("--chat-template-file")
        .arg(env_path("SWITCHBOARD_CHAT_TEMPLATE"))
        .args(["-c", &context.to_string(), "--temp", "0", "-n", "256"]);
    // stopped (and waited for) when the test ends, whatever happens
    let (server, port) = crate::support::serve(cmd, "llama-server");
    let url = format!("http://127.0.0.1:{port}");
    let client = OpenAiClient::new(&url, None);
    let t = Instant::now();
    let model = loop {
        if let Ok(models) = client.list_models().await {
            if let Some(m) = models.first() {
                break m.name.clone();
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "llama-server did not come up"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    eprintln!(
        "llama-server up in {:.1} s, model {model}",
        t.elapsed().as_secs_f64()
    );
    (server, url, model)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow, needs a real model: run via `make test-real-llm`"]
async fn a_real_small_model_calls_the_builtin_calculator_through_an_openai_compatible_server() {
    let (server, url, model) = llama_server(4096).await;
    let host = crate::support::calculator_host().await;
    let store = Store::open_in_memory().await.unwrap();
    let conversation = store
        .import_json(
            &crate::support::examples::worked("gemma", " Use the calculator."),
            None,
        )
        .await
        .unwrap();
    let mut engine = crate::support::chat_engine(
        Arc::new(OpenAiClient::new(&url, None)),
        host.clone(),
        store.clone(),
    );
    engine.options = ChatOptions {
        max_iterations: 3,
        system_prompt: "You answer arithmetic questions by calling the calculator tools, then state the result.".into(),
        ..ChatOptions::default()
    };
    let t = Instant::now();
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: Some(conversation),
                model: model.clone(),
                text: "What is 2 + 40? Use the calculator.".into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    eprintln!("turn took {:.1} s: {summary:?}", t.elapsed().as_secs_f64());
    let conv = store.conversation(conversation).await.unwrap();
    for m in &conv.messages {
        eprintln!("{:?}: {:?} {:?}", m.role, m.content, m.tool_calls);
    }
    drop(server);
    host.shutdown().await;
    assert!(summary.llm_error.is_none(), "{summary:?}");
    // a real call from the model reached the real calculator and got a result
    let new_calls: Vec<_> = conv.tool_calls.iter().skip(2).collect();
    assert!(!new_calls.is_empty(), "the model made no tool call");
    assert_eq!(new_calls[0].server, "calculator");
    assert!(!new_calls[0].is_error, "{:?}", new_calls[0]);
    assert!(new_calls[0]
        .result
        .as_deref()
        .is_some_and(|r| !r.is_empty()));
    // and the model answered after reading it
    let last = conv.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert!(last.tool_calls.is_empty() || summary.limit_reached);
}

/// The model check against the real model: every probe runs and is classified (the server
/// answers each one), whatever the tiny model makes of them; the table is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow, needs a real model: run via `make test-real-llm`"]
async fn the_model_check_runs_against_a_real_small_model() {
    use switchboard_engine::chat::check::{self, Outcome};
    let (server, url, model) = llama_server(4096).await;
    let client = OpenAiClient::new(&url, None);
    let report = check::check_model(&client, &model, &mut |_| {}, &CancellationToken::new()).await;
    drop(server);
    for r in &report.results {
        eprintln!("{:<26} {:?} {:?} {} ms", r.title, r.mode, r.outcome, r.ms);
    }
    eprintln!("format {:?}, proposed {:?}", report.format, report.proposal);
    assert!(!report.cancelled);
    assert!(report.results.len() >= 5, "{report:#?}");
    assert!(
        report
            .results
            .iter()
            .all(|r| !matches!(r.outcome, Outcome::Failed { .. })),
        "{report:#?}"
    );
}

/// Issue 37: a 30-turn chat with tool calls on a server whose context is 2,048 tokens (read from
/// its `/props`): every turn is answered (llama-server refuses a request longer than its context,
/// so a request that did not fit would fail the turn), older turns are summarised by the model
/// itself, and the stored conversation keeps every turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow, needs a real model: run via `make test-real-llm`"]
async fn a_thirty_turn_chat_keeps_answering_in_a_2k_context() {
    const TURNS: usize = 30;
    let (server, url, model) = llama_server(2048).await;
    let host = crate::support::calculator_host().await;
    let store = Store::open_in_memory().await.unwrap();
    let mut engine = crate::support::chat_engine(
        Arc::new(OpenAiClient::new(&url, None)),
        host.clone(),
        store.clone(),
    );
    engine.options = ChatOptions {
        max_iterations: 2,
        system_prompt:
            "You are a friendly assistant. Answer in a few sentences; use the calculator for sums."
                .into(),
        ..ChatOptions::default()
    };
    let mut id = None;
    for n in 0..TURNS {
        let text = if n == 0 {
            "Please always end your answers with the word 'Cheers'.".to_string()
        } else {
            format!("Tell me something about the number {n}, and what {n} + 7 is.")
        };
        let t = Instant::now();
        let summary = engine
            .run_turn(
                TurnRequest {
                    conversation_id: id,
                    model: model.clone(),
                    text,
                    ..Default::default()
                },
                &|e| {
                    if let ChatEvent::Context { used, room, .. } = e {
                        eprintln!("  request: {used} of {room}");
                    }
                },
                CancellationToken::new(),
            )
            .await
            .unwrap();
        eprintln!("turn {n}: {:.1} s", t.elapsed().as_secs_f64());
        assert!(summary.llm_error.is_none(), "turn {n}: {summary:?}");
        assert!(!summary.context_full, "turn {n}: {summary:?}");
        id = Some(summary.conversation_id);
        let conv = store.conversation(summary.conversation_id).await.unwrap();
        let last = conv.messages.last().unwrap();
        assert_eq!(last.role, Role::Assistant, "turn {n}");
    }
    let id = id.unwrap();
    engine.compaction_done(id).await;
    let conv = store.conversation(id).await.unwrap();
    let summaries = store.summaries(id).await.unwrap();
    drop(server);
    host.shutdown().await;
    let users = conv
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .count();
    assert_eq!(users, TURNS, "every turn is stored");
    assert!(!summaries.is_empty(), "older turns were summarised");
    for s in &summaries {
        eprintln!(
            "summary through {} ({} messages): {}",
            s.through_id, s.covers, s.text
        );
    }
}
