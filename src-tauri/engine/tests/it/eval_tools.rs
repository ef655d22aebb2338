//! `make eval-tools MODEL=… [URL=…] [PROVIDER=ollama|openai]` (not in `make test`): a fixed suite
//! of tool tasks against a real model through the real loop and the real built-in servers — single
//! calls, two calls, picking the right tool among many, arguments with types, questions that need
//! no tool — run with every aid Switchboard has for small models, then with each aid switched off,
//! and in text mode with and without schema-constrained decoding. It prints the pass rate per task
//! and overall for each, and writes the table to target/eval-tools.md.
//!
//! Without a URL it starts the llama-server and Gemma 3 270M that `scripts/real-llm.sh` sets up.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard_engine::chat::{Aids, Broker};
use switchboard_engine::llm::{LlmClient, OllamaClient, OpenAiClient, Role};
use switchboard_engine::settings::ToolMode;
use switchboard_engine::store::{Store, StoredToolCall};
use switchboard_engine::TurnRequest;
use tokio_util::sync::CancellationToken;

use crate::support::*;

/// What a task wants to see run (any order), or nothing at all.
struct Task {
    id: &'static str,
    prompt: &'static str,
    /// Tool name (or, with a trailing `*`, a prefix) and the arguments it must have had.
    calls: Vec<(&'static str, Value)>,
    /// Needs the server with many tools on (to pick among).
    many: bool,
}

fn task(id: &'static str, prompt: &'static str, calls: Vec<(&'static str, Value)>) -> Task {
    Task {
        id,
        prompt,
        calls,
        many: false,
    }
}

fn tasks() -> Vec<Task> {
    let c = |t: &'static str, a: Value| (t, a);
    let mut out = vec![
        task(
            "add",
            "What is 17 plus 25?",
            vec![c("calculator__add", json!({"a": 17, "b": 25}))],
        ),
        task(
            "subtract",
            "What is 91 minus 49?",
            vec![c("calculator__subtract", json!({"a": 91, "b": 49}))],
        ),
        task(
            "multiply",
            "What is 6 times 7?",
            vec![c("calculator__multiply", json!({"a": 6, "b": 7}))],
        ),
        task(
            "divide",
            "What is 84 divided by 2?",
            vec![c("calculator__divide", json!({"a": 84, "b": 2}))],
        ),
        task(
            "power",
            "What is 2 to the power of 10?",
            vec![c("calculator__power", json!({"base": 2, "exponent": 10}))],
        ),
        task(
            "sqrt",
            "What is the square root of 1764?",
            vec![c("calculator__square_root", json!({"x": 1764}))],
        ),
        task(
            "add decimals",
            "Add 1.5 and 2.25.",
            vec![c("calculator__add", json!({"a": 1.5, "b": 2.25}))],
        ),
        task(
            "multiply same",
            "Multiply 12 by 12.",
            vec![c("calculator__multiply", json!({"a": 12, "b": 12}))],
        ),
        task(
            "subtract from",
            "Subtract 8 from 50.",
            vec![c("calculator__subtract", json!({"a": 50, "b": 8}))],
        ),
        task(
            "divide small",
            "Divide 1 by 4.",
            vec![c("calculator__divide", json!({"a": 1, "b": 4}))],
        ),
        task(
            "power 3^4",
            "What is 3 to the power of 4?",
            vec![c("calculator__power", json!({"base": 3, "exponent": 4}))],
        ),
        task(
            "sqrt 81",
            "What is the square root of 81?",
            vec![c("calculator__square_root", json!({"x": 81}))],
        ),
        task(
            "two: add, multiply",
            "What is (3 + 4) times 5? Use the calculator for each step.",
            vec![
                c("calculator__add", json!({"a": 3, "b": 4})),
                c("calculator__multiply", json!({"a": 7, "b": 5})),
            ],
        ),
        task(
            "two: add, divide",
            "Add 10 and 20, then divide the result by 3.",
            vec![
                c("calculator__add", json!({"a": 10, "b": 20})),
                c("calculator__divide", json!({"a": 30, "b": 3})),
            ],
        ),
        task(
            "two: sqrt, add",
            "Take the square root of 16, then add 6 to it.",
            vec![
                c("calculator__square_root", json!({"x": 16})),
                c("calculator__add", json!({"a": 4, "b": 6})),
            ],
        ),
        task(
            "two: power, subtract",
            "What is 2 to the power of 5, minus 2?",
            vec![
                c("calculator__power", json!({"base": 2, "exponent": 5})),
                c("calculator__subtract", json!({"a": 32, "b": 2})),
            ],
        ),
        task(
            "two: divide, multiply",
            "Divide 100 by 4, then multiply the result by 3.",
            vec![
                c("calculator__divide", json!({"a": 100, "b": 4})),
                c("calculator__multiply", json!({"a": 25, "b": 3})),
            ],
        ),
        task(
            "two: add, power",
            "Add 5 and 7, then square the sum.",
            vec![
                c("calculator__add", json!({"a": 5, "b": 7})),
                c("calculator__power", json!({"base": 12, "exponent": 2})),
            ],
        ),
        task(
            "write a file",
            "Write the text 'hello world' to the file notes.txt.",
            vec![c(
                "files__write_file",
                json!({"path": "notes.txt", "content": "hello world"}),
            )],
        ),
        task(
            "list files",
            "Which files are in my sandbox?",
            vec![c("files__list_files", json!({}))],
        ),
        task(
            "read a file",
            "Read the file todo.txt and tell me what it says.",
            vec![c("files__read_file", json!({"path": "todo.txt"}))],
        ),
        task(
            "save a list",
            "Save 'buy milk' in a file called shopping.txt.",
            vec![c(
                "files__write_file",
                json!({"path": "shopping.txt", "content": "buy milk"}),
            )],
        ),
        task(
            "delete a file",
            "Delete the file old.txt.",
            vec![c("files__delete_file", json!({"path": "old.txt"}))],
        ),
        task("no tool: capital", "What is the capital of France?", vec![]),
        task("no tool: hello", "Say hello to me.", vec![]),
        task(
            "no tool: translate",
            "How do you say 'thank you' in French?",
            vec![],
        ),
        task(
            "no tool: sky",
            "What color is the sky on a clear day?",
            vec![],
        ),
    ];
    for (id, prompt, calls) in [
        (
            "many: multiply",
            "What is 6 times 7?",
            vec![c("calculator__multiply", json!({"a": 6, "b": 7}))],
        ),
        (
            "many: sqrt",
            "What is the square root of 49?",
            vec![c("calculator__square_root", json!({"x": 49}))],
        ),
        (
            "many: frog",
            "Tell me some facts about the frog.",
            vec![c("slow__pet_frog*", json!({}))],
        ),
        (
            "many: horse",
            "What facts do you have about horses?",
            vec![c("slow__pet_horse*", json!({}))],
        ),
    ] {
        out.push(Task {
            id,
            prompt,
            calls,
            many: true,
        });
    }
    out
}

/// One way to run the suite.
struct Variant {
    name: &'static str,
    aids: Aids,
    mode: Option<ToolMode>,
    /// Only the tasks with many tools (the aid only matters there).
    many_only: bool,
}

fn variants() -> Vec<Variant> {
    let all = Aids::default();
    let v = |name, aids, mode, many_only| Variant {
        name,
        aids,
        mode,
        many_only,
    };
    vec![
        v("all aids", all, None, false),
        v(
            "no recovery",
            Aids {
                recover: false,
                ..all
            },
            None,
            false,
        ),
        v(
            "no name resolution",
            Aids {
                resolve: false,
                ..all
            },
            None,
            false,
        ),
        v(
            "no argument repair",
            Aids {
                repair: false,
                ..all
            },
            None,
            false,
        ),
        v("no tool ranking", Aids { rank: false, ..all }, None, true),
        v("text mode", all, Some(ToolMode::Text), false),
        v("text mode constrained", all, Some(ToolMode::Json), false),
    ]
}

/// Whether the calls that ran (successfully) include each one the task wants.
fn passed(task: &Task, ran: &[StoredToolCall]) -> bool {
    let ok: Vec<&StoredToolCall> = ran.iter().filter(|t| !t.is_error).collect();
    if task.calls.is_empty() {
        return ran.is_empty();
    }
    task.calls.iter().all(|(name, args)| {
        ok.iter().any(|t| {
            let name_fits = match name.strip_suffix('*') {
                Some(prefix) => t.name.starts_with(prefix),
                None => t.name == *name,
            };
            name_fits && args_fit(args, &t.arguments)
        })
    })
}

/// Every wanted argument is there: numbers equal, text equal ignoring case and surrounding space.
fn args_fit(wanted: &Value, got: &Value) -> bool {
    let Some(wanted) = wanted.as_object() else {
        return true;
    };
    wanted.iter().all(|(k, w)| match (w, got.get(k)) {
        (Value::Number(a), Some(Value::Number(b))) => {
            (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-9
        }
        (Value::String(a), Some(Value::String(b))) => a
            .trim()
            .eq_ignore_ascii_case(b.trim().trim_matches(['\'', '"'])),
        _ => false,
    })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The model to talk to: the given server, or llama-server with Gemma 3 270M started here.
async fn llm() -> (Arc<dyn LlmClient>, String, Option<Background>) {
    let (url, server) = match env("EVAL_URL") {
        Some(url) => (url, None),
        None => {
            let path = |n: &str| {
                PathBuf::from(env(n).unwrap_or_else(|| {
                    panic!("give EVAL_URL, or run through `make eval-tools`, which sets up {n}")
                }))
            };
            // port 0: llama-server binds a port the system picks (read back from /proc)
            let mut cmd = Command::new(path("SWITCHBOARD_LLAMA_SERVER"));
            cmd.args(["--host", "127.0.0.1", "--port", "0", "-m"])
                .arg(path("SWITCHBOARD_GGUF"))
                .args(["--jinja", "--chat-template-file"])
                .arg(path("SWITCHBOARD_CHAT_TEMPLATE"))
                .args(["-c", "4096", "--temp", "0", "-n", "160"]);
            let (child, port) = serve(cmd, "llama-server");
            (format!("http://127.0.0.1:{port}"), Some(child))
        }
    };
    let openai = env("EVAL_PROVIDER").map_or(server.is_some(), |p| p == "openai");
    let client: Arc<dyn LlmClient> = if openai {
        Arc::new(OpenAiClient::new(&url, None))
    } else {
        Arc::new(OllamaClient::new(&url))
    };
    let t = Instant::now();
    let model = loop {
        match (env("EVAL_MODEL"), client.list_models().await) {
            (Some(m), Ok(_)) => break m,
            (None, Ok(models)) if !models.is_empty() => break models[0].name.clone(),
            _ => {}
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no model answers at {url}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    (client, model, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real model: run via `make eval-tools`"]
async fn eval_tools() {
    let (client, model, _server) = llm().await;
    let dir = tempfile::tempdir().unwrap();
    let sandbox = dir.path().join("sandbox");
    std::fs::create_dir_all(&sandbox).unwrap();
    let mut files = builtin("files");
    files
        .args
        .extend(["--root".into(), sandbox.display().to_string()]);
    let few = vec![("calculator", builtin("calculator")), ("files", files)];
    let mut many = few.clone();
    let mut slow = python("slow_server.py");
    slow.args.extend(["--many".into(), "40".into()]);
    many.push(("slow", slow));
    let few_host = host_of(few).await;
    let many_host = host_of(many).await;
    let store = Store::open(&dir.path().join("eval.sqlite3")).await.unwrap();
    // two worked examples first, for base models (`EVAL_EXAMPLES=0` for instruction-tuned ones)
    let with_examples = env("EVAL_EXAMPLES").is_none_or(|v| v != "0");
    let only: Option<Vec<String>> =
        env("EVAL_VARIANTS").map(|v| v.split(',').map(|s| s.trim().to_string()).collect());

    let tasks = tasks();
    let mut results: BTreeMap<&str, Vec<Option<bool>>> = BTreeMap::new();
    let all_variants = variants();
    // a name that is no variant is a mistake, not a request for none
    for name in only.iter().flatten() {
        assert!(
            all_variants.iter().any(|v| v.name == name),
            "no variant \"{name}\" (EVAL_VARIANTS is comma-separated); the variants: {:?}",
            all_variants.iter().map(|v| v.name).collect::<Vec<_>>()
        );
    }
    let variants: Vec<Variant> = all_variants
        .into_iter()
        .filter(|v| only.as_ref().is_none_or(|o| o.iter().any(|n| n == v.name)))
        .collect();
    let started = Instant::now();
    for v in &variants {
        let mut column = Vec::new();
        // what the app keeps between turns (what the model's server said of its prompts), shared
        // by the tasks of a variant as the app's turns share it
        let shared = std::sync::Arc::new(switchboard_engine::chat::EngineShared::default());
        for t in &tasks {
            if v.many_only && !t.many {
                column.push(None);
                continue;
            }
            // a fresh sandbox state for the file tasks
            std::fs::write(sandbox.join("todo.txt"), "water the plants").unwrap();
            std::fs::write(sandbox.join("old.txt"), "stale").unwrap();
            let host = if t.many { &many_host } else { &few_host };
            let mut engine = chat_engine(client.clone(), host.clone(), store.clone());
            engine.broker = Broker::allowing_all();
            engine.shared = shared.clone();
            engine.options.max_iterations = 3;
            engine.options.aids = v.aids;
            engine.options.system_prompt =
                "You are a helpful assistant. Use the tools when they help; then answer briefly."
                    .into();
            if let Some(mode) = v.mode {
                engine.options.tool_modes.insert(model.clone(), mode);
            }
            let conversation = if with_examples {
                Some(
                    store
                        .import_json(&examples::worked(&model, ""), None)
                        .await
                        .unwrap(),
                )
            } else {
                None
            };
            // the largest request of the turn, in estimated tokens
            let largest = std::sync::atomic::AtomicUsize::new(0);
            let summary = engine
                .run_turn(
                    TurnRequest {
                        conversation_id: conversation,
                        model: model.clone(),
                        text: t.prompt.into(),
                        ..Default::default()
                    },
                    &|e| {
                        if let switchboard_engine::ChatEvent::Context { used, .. } = e {
                            largest.fetch_max(used, std::sync::atomic::Ordering::Relaxed);
                        }
                    },
                    CancellationToken::new(),
                )
                .await
                .unwrap();
            let conv = store.conversation(summary.conversation_id).await.unwrap();
            // only this turn's calls (the examples' are history)
            let asked = conv
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.id)
                .unwrap_or_default();
            let ran: Vec<StoredToolCall> = conv
                .tool_calls
                .into_iter()
                .filter(|c| c.message_id > asked)
                .collect();
            let ok = summary.llm_error.is_none() && passed(t, &ran);
            eprintln!(
                "[{:>5.0} s] {:<24} {:<22} {}  {:?}{}",
                started.elapsed().as_secs_f64(),
                v.name,
                t.id,
                if ok { "pass" } else { "fail" },
                ran.iter()
                    .map(|c| format!(
                        "{}({}){}",
                        c.name,
                        c.arguments,
                        if c.is_error { "!" } else { "" }
                    ))
                    .collect::<Vec<_>>(),
                summary
                    .llm_error
                    .as_ref()
                    .map(|e| format!("  the model's server: {e:?}"))
                    .unwrap_or_else(|| {
                        // what it said last, for a task that ended without the calls it wanted
                        let said = conv
                            .messages
                            .last()
                            .map(|m| m.content.as_str())
                            .unwrap_or("");
                        if ok {
                            String::new()
                        } else {
                            format!(
                                "  said: {:?} (largest request ~{} tokens)",
                                said.chars().take(100).collect::<String>(),
                                largest.load(std::sync::atomic::Ordering::Relaxed)
                            )
                        }
                    })
            );
            column.push(Some(ok));
        }
        results.insert(v.name, column);
    }
    // the table: a row per task, a column per variant, the pass rate below
    let mut table = format!(
        "Model `{model}`{}; {} tasks; {:.0} s.\n\n| task |",
        if with_examples {
            " (two worked examples first)"
        } else {
            ""
        },
        tasks.len(),
        started.elapsed().as_secs_f64()
    );
    for v in &variants {
        table.push_str(&format!(" {} |", v.name));
    }
    table.push_str("\n|---|");
    table.push_str(&"---|".repeat(variants.len()));
    for (i, t) in tasks.iter().enumerate() {
        table.push_str(&format!("\n| {} |", t.id));
        for v in &variants {
            let mark = match results[v.name][i] {
                Some(true) => "✓",
                Some(false) => "✗",
                None => "",
            };
            table.push_str(&format!(" {mark} |"));
        }
    }
    table.push_str("\n| **pass rate** |");
    for v in &variants {
        let ran: Vec<bool> = results[v.name].iter().flatten().copied().collect();
        let pass = ran.iter().filter(|p| **p).count();
        table.push_str(&format!(
            " **{pass}/{} ({:.0} %)** |",
            ran.len(),
            100.0 * pass as f64 / ran.len().max(1) as f64
        ));
    }
    println!("\n{table}\n");
    let out = repo_dir().join("target/eval-tools.md");
    std::fs::write(&out, format!("{table}\n")).unwrap();
    eprintln!("written to {}", out.display());
    few_host.shutdown().await;
    many_host.shutdown().await;
}
