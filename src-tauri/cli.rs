//! The headless command line: `switchboard mcp-server NAME`, `switchboard chat "prompt"`,
//! `switchboard conversations`. Same config, servers and store as the window; output is NDJSON
//! for scripts and benchmarks.
//!
//! Also `check-model` (the model check as a table; exit 1 when tool use does not work), `mcp-call`
//! (`cli/mcp_call.rs`) and `catalog` (`cli/catalog.rs`).

use std::io::Write;

use anyhow::{anyhow, bail, Context};
use switchboard_engine::chat::Broker;

use switchboard_engine::{servers, ChatEvent, Runtime, TurnRequest};
use tokio_util::sync::CancellationToken;

mod catalog;
mod mcp_call;

const USAGE: &str = "\
Switchboard: chat with a local LLM that uses tools from MCP servers.

Usage:
  switchboard                              open the window
  switchboard chat PROMPT [--conversation ID] [--model M] [--approve-all]
                                           run one turn headless; events are printed as NDJSON.
                                           Tool calls that need approval are declined unless
                                           --approve-all is given (read-only tools just run)
  switchboard conversations                list saved conversations (NDJSON, newest first)
  switchboard check-model MODEL [--provider ID|URL]
                                           check whether MODEL uses tools (one call, two calls,
                                           nested arguments, a number in words, a question that
                                           needs no tool; native, then in text) and print the
                                           table; the provider is one from the settings (its id),
                                           or a URL (ending in /v1: OpenAI-compatible, else
                                           Ollama); default: the default Ollama. The result is
                                           remembered for the window. Exits 1 when tool use does
                                           not work
  switchboard mcp-server calculator|files|research [--root DIR] [--arxiv-url URL] [--cache DIR]
                                           serve a built-in MCP server on stdio
  switchboard mcp-call [--call TOOL [--args JSON] [--args-schema KEY=TOOL]]... [--calls JSON] [--all]
                       [--load-skill NAME]... [--load-skills]
                       [--elicitation accept-defaults|decline] SERVER
                                           connect to one MCP server (an http(s) URL, or the name of a
                                           configured server), list its tools and call the given ones
                                           (--all: every tool, with arguments from its schema's defaults);
                                           NDJSON out. --args-schema: argument KEY of the call is TOOL's
                                           inputSchema as the model is offered it; --calls: a JSON list
                                           of {name, arguments} (or an object with one as toolCalls).
                                           Elicitations are declined unless accept-defaults.
                                           A server's skills (SEP-2640) are listed (never read);
                                           --load-skill NAME loads one as the model would (its
                                           SKILL.md, verified), then reads each of its files
                                           (each verified); --load-skills: every skill.
                                           A server that wants a sign-in (OAuth) prints the address to
                                           open; --oauth-browser follow follows its redirects instead
                                           (an authorization server that approves by itself, as in
                                           tests). --oauth-client-id ID [--oauth-client-secret S]:
                                           a client registered by hand; --oauth-client-metadata-url
                                           URL: a Client ID Metadata Document. Sign-ins to a URL are
                                           kept in memory only; to a configured server, in the keyring
  switchboard catalog search [TERM] [--registry URL] [--json]
                                           search the MCP Registry (the settings' one, or URL): one
                                           entry a line (name, version, kind, title; --json: one JSON
                                           object a line); no TERM lists every entry, every page
  switchboard catalog install NAME|FILE.mcpb [--registry URL] [--set KEY=VALUE]...
                             [--allow-network] [--allow-host HOST]... [--read PATH]...
                             [--write PATH]... [--leave-out PATH]... [--confirm-write PATH]...
                             [--dry-run]
                                           add a server from the registry (its first package or
                                           remote this computer can run, pinned to its version) or
                                           from a bundle: prints the exact command, arguments,
                                           environment (secrets named, never shown), sandbox and
                                           each folder it grants, and why;
                                           --set gives a setting (KEY as the preview names it);
                                           --allow-network lets it use the network, --allow-host
                                           only HOST (example.com, *.example.com, host:port);
                                           --read / --write let it read / change PATH too;
                                           --leave-out PATH leaves out a proposed read grant;
                                           --confirm-write lets it write PATH although PATH decides
                                           what runs when you log in (home, ~/.config, ~/.local/bin…);
                                           --dry-run adds nothing. A server whose secrets are not
                                           set is added turned off; installing it again with them
                                           completes it
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
        "check-model" => runtime().and_then(|rt| rt.block_on(check_model(rest))),
        "mcp-call" => runtime().and_then(|rt| rt.block_on(mcp_call::mcp_call(rest))),
        "catalog" => runtime().and_then(|rt| rt.block_on(catalog::catalog(rest))),
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
    for (flag, what) in [
        ("--root", "a folder"),
        ("--cache", "a folder"),
        ("--arxiv-url", "a URL"),
    ] {
        if let Some(i) = rest.iter().position(|a| a == flag) {
            rest.get(i + 1)
                .ok_or_else(|| anyhow!("{flag} needs {what}"))?;
        }
    }
    let server = servers::by_name(name, &rest[1..]).ok_or_else(|| {
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

/// `switchboard check-model MODEL [--provider ID|URL]`: the model check, as a table.
async fn check_model(rest: &[String]) -> anyhow::Result<i32> {
    use switchboard_engine::chat::check::{CheckEvent, Outcome};
    init_cli_logging();
    let mut model = None;
    let mut provider = None;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--provider" => {
                provider = Some(
                    it.next()
                        .ok_or_else(|| anyhow!("--provider needs an id or a URL"))?
                        .clone(),
                )
            }
            s if s.starts_with("--") => bail!("unknown option {s}\n\n{USAGE}"),
            s => {
                if model.replace(s.to_string()).is_some() {
                    bail!("give one model");
                }
            }
        }
    }
    let model = model.ok_or_else(|| anyhow!("which model? switchboard check-model MODEL"))?;
    let rt = open_runtime(Broker::refusing_all()).await?;
    let p = provider_of(&rt.settings.get(), provider.as_deref());
    let format = match rt.tool_format(&p, &model).await {
        Ok(f) => f,
        Err(e) => bail!("{e}"),
    };
    println!(
        "Checking {model} on {} (tool-call format: {})",
        p.url,
        format.as_ref().map_or("not known".into(), |f| format!(
            "{}, from its {}",
            f.name,
            serde_json::to_value(f.from)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        ))
    );
    println!(
        "{:<26} {:<7} {:<40} {:>8}",
        "Probe", "Mode", "Result", "Time"
    );
    let cancel = CancellationToken::new();
    {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
    }
    let mut on_event = |e: CheckEvent| {
        if let CheckEvent::Result { result: r } = e {
            let what = match &r.outcome {
                Outcome::Native => "native call".to_string(),
                Outcome::Recovered { family } => format!("recovered from text ({family})"),
                Outcome::WrongArguments { detail } => format!("wrong arguments: {detail}"),
                Outcome::NoCall => "no call".to_string(),
                Outcome::FalseCall { name } => format!("false call ({name})"),
                Outcome::Failed { message } => format!("failed: {message}"),
            };
            let mode = serde_json::to_value(r.mode)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let mark = if r.passed { "ok" } else { "--" };
            println!(
                "{:<26} {:<7} {mark} {:<37} {:>5} ms",
                r.title, mode, what, r.ms
            );
            let _ = std::io::stdout().flush();
        }
    };
    let report = rt.check_model(&p, &model, &mut on_event, &cancel).await?;
    let proposal = serde_json::to_value(report.proposal)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    if report.cancelled {
        println!("Stopped.");
        return Ok(1);
    }
    println!(
        "Proposed tool mode: {proposal} ({})",
        if report.works() {
            "tool use works"
        } else {
            "tool use does not work"
        }
    );
    Ok(if report.works() { 0 } else { 1 })
}

/// The provider `arg` names: the id of one in the settings, else a URL (ending in `/v1`: an
/// OpenAI-compatible server, else Ollama); without one, the default Ollama.
fn provider_of(
    settings: &switchboard_engine::Settings,
    arg: Option<&str>,
) -> switchboard_engine::settings::ProviderConfig {
    use switchboard_engine::settings::{ProviderConfig, ProviderKind};
    let Some(arg) = arg else {
        return settings.provider(None);
    };
    if let Some(p) = settings.all_providers().into_iter().find(|p| p.id == arg) {
        return p;
    }
    let url = arg.trim_end_matches('/').to_string();
    let kind = if url.ends_with("/v1") {
        ProviderKind::Openai
    } else {
        ProviderKind::Ollama
    };
    ProviderConfig {
        id: url.clone(),
        name: url.clone(),
        kind,
        url,
        api_key: None,
    }
}

/// The runtime, with `broker` answering what the user would be asked.
async fn open_runtime(broker: std::sync::Arc<Broker>) -> anyhow::Result<Runtime> {
    let exe = std::env::current_exe().context("finding this program")?;
    let rt = Runtime::open(exe, broker)
        .await
        .context("opening the conversation store")?;
    if let Some(e) = rt.mcp_config_error() {
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
    // nobody is there to ask: tool calls that need approval (and sampling) are allowed with
    // --approve-all, else refused; forms a server asks for are declined
    let broker = if approve_all {
        Broker::allowing_all()
    } else {
        Broker::refusing_all()
    };
    let rt = open_runtime(broker).await?;
    let engine = rt.chat_engine(None);
    let model = match model.or_else(|| rt.settings.get().model) {
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
                ..Default::default()
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
    let rt = open_runtime(Broker::refusing_all()).await?;
    let mut out = std::io::stdout().lock();
    for c in rt.store.list_conversations().await? {
        serde_json::to_writer(&mut out, &c)?;
        out.write_all(b"\n")?;
    }
    Ok(0)
}

/// The value after option `flag`.
fn value_of<'a>(it: &mut impl Iterator<Item = &'a String>, flag: &str) -> anyhow::Result<String> {
    it.next()
        .cloned()
        .ok_or_else(|| anyhow!("{flag} needs a value"))
}
