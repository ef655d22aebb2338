//! Shared by the engine's integration tests: the fake LLM, where the real MCP servers are, and a
//! rig (host + store + fake LLM) to run turns on.
#![allow(dead_code)]

pub mod arxiv;
pub mod bundles;
pub mod examples;
pub mod fake_ollama;
pub mod npm_packages;
pub mod registry;
pub mod samples;
pub mod servers;

pub use arxiv::*;
pub use servers::*;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::chat::Broker;
use switchboard_engine::llm::OllamaClient;
use switchboard_engine::mcp::{HostOptions, McpConfig, McpHost, ServerConfig};
use switchboard_engine::store::Store;
use switchboard_engine::{ChatEngine, ChatEvent, TurnRequest};
use tokio_util::sync::CancellationToken;

use fake_ollama::{last_message, FakeOllama, Stream};

/// The engine's small binary, which serves the built-in MCP servers (no GUI libraries linked).
/// Every file under `dir` (its folders too) whose name ends in `.{ext}`, in no set order.
pub fn files_under(dir: &std::path::Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
    out
}

pub fn builtin_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard-mcp"))
}

/// A chat engine on `llm`, `host` and `store` that allows every tool call, with default options.
pub fn chat_engine(
    llm: Arc<dyn switchboard_engine::llm::LlmClient>,
    host: Arc<McpHost>,
    store: Store,
) -> ChatEngine {
    ChatEngine {
        llm,
        tools: host,
        store,
        options: Default::default(),
        broker: Broker::allowing_all(),
        settings: switchboard_engine::LiveSettings::in_memory(Default::default()),
        shared: Default::default(),
    }
}

/// A host with some servers, a store in a temp folder, and the fake LLM.
pub struct Rig {
    pub fake: FakeOllama,
    pub host: Arc<McpHost>,
    pub store: Store,
    pub dir: tempfile::TempDir,
}

impl Rig {
    pub fn engine(&self, max_iterations: usize) -> ChatEngine {
        let mut engine = chat_engine(
            Arc::new(OllamaClient::new(&self.fake.url)),
            self.host.clone(),
            self.store.clone(),
        );
        engine.options.max_iterations = max_iterations;
        engine
    }

    pub async fn turn(&self, text: &str) -> (switchboard_engine::TurnSummary, Vec<ChatEvent>) {
        self.turn_with(text, 5, CancellationToken::new()).await
    }

    pub async fn turn_with(
        &self,
        text: &str,
        max: usize,
        cancel: CancellationToken,
    ) -> (switchboard_engine::TurnSummary, Vec<ChatEvent>) {
        collecting_with(&self.engine(max), say(text, None), cancel).await
    }

    pub fn status(&self, name: &str) -> switchboard_engine::mcp::ServerView {
        self.host
            .servers()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
    }
}

/// Runs a turn on `engine`; its summary and every event it emitted, in order.
pub async fn collecting(
    engine: &ChatEngine,
    req: TurnRequest,
) -> (switchboard_engine::TurnSummary, Vec<ChatEvent>) {
    collecting_with(engine, req, CancellationToken::new()).await
}

/// [`collecting`], stopped by `cancel`.
pub async fn collecting_with(
    engine: &ChatEngine,
    req: TurnRequest,
    cancel: CancellationToken,
) -> (switchboard_engine::TurnSummary, Vec<ChatEvent>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let emit = move |e: ChatEvent| ev.lock().unwrap().push(e);
    let s = engine.run_turn(req, &emit, cancel).await.unwrap();
    let events = events.lock().unwrap().clone();
    (s, events)
}

pub fn builtin(name: &str) -> ServerConfig {
    ServerConfig::new("switchboard", &["mcp-server", name])
}

pub fn everything() -> ServerConfig {
    ServerConfig::new("node", &[everything_server().to_str().unwrap(), "stdio"])
}

pub fn python(name: &str) -> ServerConfig {
    ServerConfig::new("python3", &[fixture(name).to_str().unwrap()])
}

pub async fn rig(servers: Vec<(&str, ServerConfig)>) -> Rig {
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
    let mut opts = host_options();
    opts.call_timeout = Duration::from_secs(20);
    // crashes are restarted automatically; keep that out of these tests' way
    opts.restart_base_delay = Duration::from_secs(30);
    // the built-ins run sandboxed: their private folders go here, not in the user's cache
    opts.sandbox_dir = dir.path().join("private");
    let store = Store::open(&dir.path().join("db.sqlite3")).await.unwrap();
    // tool definitions pinned in the store, as in the app
    opts.pins = Some(switchboard_engine::mcp::PinBook(Arc::new(store.clone())));
    // the user's own skills (none unless a test writes some there)
    opts.skills_dir = Some(dir.path().join("skills"));
    let host = McpHost::new(opts);
    host.start_all(&config).await;
    Rig {
        fake: FakeOllama::start().await,
        host,
        store,
        dir,
    }
}

/// The fake model: calls the given tools once, then answers with what the tools returned.
pub fn call_then_answer(calls: Vec<(&str, &str, Value)>) -> impl Fn(&Value) -> fake_ollama::Reply {
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

pub fn tool_messages(req: &Value) -> Vec<Value> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

pub async fn wait_for_status(
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
        assert!(t.elapsed() < READY, "timed out; last: {s:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A model that always wants one more sum: calculator__add with a different `a` each round.
pub fn counting_calls(req: &Value) -> fake_ollama::Reply {
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

pub async fn run(
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

/// Answers the user's questions from a script and records them: approvals take the next
/// decision (panicking when the script has none left), sampling requests the next yes/no (no
/// when there is none), forms the next answer (declined when there is none).
#[derive(Default)]
pub struct Script {
    pub approvals: Mutex<Vec<switchboard_engine::chat::approval::Decision>>,
    pub samplings: Mutex<Vec<bool>>,
    /// Answers to forms, in order (declined when there is none left).
    pub elicitations: Mutex<Vec<switchboard_engine::mcp::ElicitationAnswer>>,
    pub asked: Mutex<Vec<switchboard_engine::chat::Question>>,
}

impl Script {
    pub fn approving(decisions: Vec<switchboard_engine::chat::approval::Decision>) -> Arc<Script> {
        Arc::new(Script {
            approvals: Mutex::new(decisions),
            ..Default::default()
        })
    }

    /// Allows every tool call; answers sampling requests with `answers`, in order.
    pub fn sampling(answers: Vec<bool>) -> Arc<Script> {
        let decisions = (0..100)
            .map(|_| {
                switchboard_engine::chat::approval::Decision::of(
                    switchboard_engine::chat::approval::Action::AllowOnce,
                )
            })
            .collect();
        Arc::new(Script {
            approvals: Mutex::new(decisions),
            samplings: Mutex::new(answers),
            ..Default::default()
        })
    }

    /// A broker that answers from this script.
    pub fn broker(self: &Arc<Self>) -> Arc<Broker> {
        use switchboard_engine::chat::{Answer, Question};
        use switchboard_engine::mcp::{ElicitationAction, ElicitationAnswer};
        let script = self.clone();
        Broker::answering(move |q| {
            script.asked.lock().unwrap().push(q.clone());
            match q {
                Question::Approval(_) => {
                    Answer::Approval(script.approvals.lock().unwrap().remove(0))
                }
                Question::Sampling { .. } => {
                    let mut s = script.samplings.lock().unwrap();
                    Answer::Sampling {
                        approve: !s.is_empty() && s.remove(0),
                    }
                }
                Question::Elicitation { .. } => {
                    let mut e = script.elicitations.lock().unwrap();
                    Answer::Elicitation(if e.is_empty() {
                        ElicitationAnswer::of(ElicitationAction::Decline)
                    } else {
                        e.remove(0)
                    })
                }
            }
        })
    }

    /// The approval requests asked so far.
    pub fn approval_requests(&self) -> Vec<switchboard_engine::chat::approval::ApprovalRequest> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter_map(|q| match q {
                switchboard_engine::chat::Question::Approval(a) => Some(a.clone()),
                _ => None,
            })
            .collect()
    }

    /// The sampling requests asked so far.
    pub fn sampling_requests(&self) -> Vec<switchboard_engine::mcp::SamplingRequest> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter_map(|q| match q {
                switchboard_engine::chat::Question::Sampling { request, .. } => {
                    Some(request.clone())
                }
                _ => None,
            })
            .collect()
    }
}

/// Sets a standing policy for the tool the model is offered as `tool`, by its key (its server's
/// identity and its own name), on the engine's (in-memory) settings.
pub fn set_policy(
    engine: &ChatEngine,
    tool: &str,
    policy: switchboard_engine::chat::approval::Policy,
) {
    let routed = engine
        .tools
        .route(tool)
        .unwrap_or_else(|| panic!("no tool is offered as {tool}"));
    engine
        .settings
        .apply(&switchboard_engine::settings::SettingsPatch::policy(
            &routed.key(),
            Some(policy),
        ))
        .unwrap();
}

/// A turn that says `text` to the fake model, in conversation `id` (a new one for `None`).
pub fn say(text: &str, id: Option<i64>) -> TurnRequest {
    TurnRequest {
        conversation_id: id,
        model: fake_ollama::MODEL.into(),
        text: text.into(),
        ..Default::default()
    }
}

/// A host running `servers` (name, config), started.
pub async fn host_of(servers: Vec<(&str, ServerConfig)>) -> Arc<McpHost> {
    let mut config = McpConfig::default();
    for (name, server) in servers {
        config.servers.insert(name.into(), server);
    }
    let host = McpHost::new(host_options());
    host.start_all(&config).await;
    host
}

/// How long a test waits for something to become ready (a server to start, a state to come):
/// only a bound against a hang, never a measure of speed — on a busy machine (a build beside
/// it, two cores) starting node or Python servers takes many seconds.
pub const READY: Duration = Duration::from_secs(120);

/// The host's options for tests: a server is waited for until it has started, however busy
/// the machine ([`READY`]); a test about a server that never answers sets its own, shorter,
/// start timeout for that server's host alone.
pub fn host_options() -> HostOptions {
    let mut opts = HostOptions::new(builtin_bin());
    opts.start_timeout = READY;
    // sandboxed servers' private folders (the built-ins are sandboxed) never in the user's own
    // cache: a host deletes a removed server's folder
    opts.sandbox_dir =
        std::env::temp_dir().join(format!("switchboard-it-sandbox-{}", std::process::id()));
    opts
}

/// A host running only the built-in calculator.
pub async fn calculator_host() -> Arc<McpHost> {
    host_of(vec![("calculator", builtin("calculator"))]).await
}

/// Waits (at most `limit`) until `f` holds, looking every 50 ms; whether it did.
pub async fn wait_until(limit: Duration, f: impl Fn() -> bool) -> bool {
    let t = std::time::Instant::now();
    while !f() {
        if t.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}
