//! The headless command line: `switchboard mcp-server NAME`, `switchboard chat "prompt"`,
//! `switchboard conversations`. Same config, servers and store as the window; output is NDJSON
//! for scripts and benchmarks.

use std::io::Write;

use anyhow::{anyhow, bail, Context};
use switchboard_engine::chat::approval::{AllowAll, Approver, DenyAll};
use switchboard_engine::{servers, ChatEvent, Runtime, TurnRequest};
use tokio_util::sync::CancellationToken;

const USAGE: &str = "\
Switchboard: chat with a local LLM that uses tools from MCP servers.

Usage:
  switchboard                              open the window
  switchboard chat PROMPT [--conversation ID] [--model M] [--approve-all]
                                           run one turn headless; events are printed as NDJSON.
                                           Tool calls that need approval are declined unless
                                           --approve-all is given (read-only tools just run)
  switchboard conversations                list saved conversations (NDJSON, newest first)
  switchboard mcp-server calculator|files [--root DIR]
                                           serve a built-in MCP server on stdio
  switchboard --help | --version
";

/// Runs a CLI subcommand if `args` name one; returns its exit code, or `None` to open the window.
pub fn run(args: &[String]) -> Option<i32> {
    let sub = args.get(1)?.as_str();
    let rest = &args[2..];
    let result = match sub {
        "mcp-server" => mcp_server(rest),
        "chat" => runtime().and_then(|rt| rt.block_on(chat(rest))),
        "conversations" => runtime().and_then(|rt| rt.block_on(conversations())),
        "--help" | "-h" | "help" => {
            print!("{USAGE}");
            Ok(0)
        }
        "--version" | "-V" => {
            println!("switchboard {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        // anything else (e.g. flags a desktop launcher adds) opens the window
        _ => return None,
    };
    Some(match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("switchboard: {e:#}");
            2
        }
    })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn init_cli_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SWITCHBOARD_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
}

fn mcp_server(rest: &[String]) -> anyhow::Result<i32> {
    let name = rest
        .first()
        .ok_or_else(|| anyhow!("which server? one of: {}", servers::names().join(", ")))?;
    let root = match rest.iter().position(|a| a == "--root") {
        Some(i) => Some(
            rest.get(i + 1)
                .ok_or_else(|| anyhow!("--root needs a folder"))?
                .into(),
        ),
        None => None,
    };
    let server = servers::by_name(name, root).ok_or_else(|| {
        anyhow!(
            "unknown built-in server \"{name}\"; choose one of: {}",
            servers::names().join(", ")
        )
    })?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(servers::serve_stdio(server.as_ref()))?;
    Ok(0)
}

async fn open_runtime() -> anyhow::Result<Runtime> {
    let exe = std::env::current_exe().context("finding this program")?;
    let rt = Runtime::open(exe)
        .await
        .context("opening the conversation store")?;
    if let Some(e) = &rt.mcp_config_error {
        eprintln!("switchboard: {e}");
    }
    Ok(rt)
}

async fn chat(rest: &[String]) -> anyhow::Result<i32> {
    init_cli_logging();
    let mut prompt = None;
    let mut conversation_id = None;
    let mut model = None;
    let mut approve_all = false;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--conversation" => {
                let v = it
                    .next()
                    .ok_or_else(|| anyhow!("--conversation needs an id"))?;
                conversation_id = Some(
                    v.parse::<i64>()
                        .with_context(|| format!("\"{v}\" is not a conversation id"))?,
                );
            }
            "--approve-all" => approve_all = true,
            "--model" => {
                model = Some(
                    it.next()
                        .ok_or_else(|| anyhow!("--model needs a name"))?
                        .clone(),
                )
            }
            s if s.starts_with("--") => bail!("unknown option {s}\n\n{USAGE}"),
            s => {
                if prompt.replace(s.to_string()).is_some() {
                    bail!("give the prompt as one argument (quote it)");
                }
            }
        }
    }
    let prompt = prompt.ok_or_else(|| anyhow!("no prompt given\n\n{USAGE}"))?;
    let rt = open_runtime().await?;
    let approver: std::sync::Arc<dyn Approver> = if approve_all {
        std::sync::Arc::new(AllowAll)
    } else {
        std::sync::Arc::new(DenyAll)
    };
    let engine = rt.chat_engine(&rt.settings, approver);
    let model = match model.or_else(|| rt.settings.model.clone()) {
        Some(m) => m,
        None => {
            let models = engine.llm.list_models().await.map_err(|e| anyhow!("{e}"))?;
            models.first().map(|m| m.name.clone()).ok_or_else(|| {
                anyhow!(
                    "the LLM server at {} has no models; pull one (ollama pull llama3.2)",
                    engine.llm.base_url()
                )
            })?
        }
    };
    rt.start_servers().await;
    for s in rt.host.servers() {
        if let Some(e) = &s.error {
            eprintln!("switchboard: MCP server \"{}\" failed: {e}", s.name);
        }
    }
    let cancel = CancellationToken::new();
    {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
    }
    let emit = |ev: ChatEvent| {
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer(&mut out, &ev);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    };
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id,
                model,
                text: prompt,
            },
            &emit,
            cancel,
        )
        .await;
    rt.host.shutdown().await;
    let summary = summary?;
    Ok(if summary.llm_error.is_some() { 1 } else { 0 })
}

async fn conversations() -> anyhow::Result<i32> {
    init_cli_logging();
    let rt = open_runtime().await?;
    let mut out = std::io::stdout().lock();
    for c in rt.store.list_conversations().await? {
        serde_json::to_writer(&mut out, &c)?;
        out.write_all(b"\n")?;
    }
    Ok(0)
}
