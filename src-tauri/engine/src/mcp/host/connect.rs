//! One attempt to start (stdio) or reach (Streamable HTTP, legacy SSE, REST) a server, through
//! the handshake and the first listing of its tools. It ends connected, failed with a report
//! (the step that failed, its exit, its stderr in the log), cancelled (nothing left running), or
//! asking to be tried again with the 2025 handshake only.
//!
//! stdio and Streamable HTTP use rmcp's `Auto` lifecycle (2026-07-28 `server/discover` first,
//! `initialize` 2025-11-25 on an error or silence); a probe answered with anything else is retried
//! once with `initialize` only. Secrets are resolved here, at step `readingSecrets`, for the moment
//! of the start. A new transport gets its arm here (`stdio` for a program) or in
//! `connect/remote.rs` (for a URL).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::handler::{CallRoutes, Handler, Listing};
use super::rejoin::KeptSession;
use super::shaping::MAX_STDIO_MESSAGE;
use super::state::{CachedTool, Catalog, Report, Session, Step};
use crate::mcp::catalog;
use crate::mcp::config::{SecretField, ServerConfig, Transport};
use crate::mcp::process::{self, StderrTail};
use crate::mcp::sandbox::{self, Detector, SandboxState, Sandboxed};

mod patience;
mod remote;
use remote::remote;

/// Everything one attempt needs to know about its server.
pub struct Target<'a> {
    pub name: &'a str,
    pub config: &'a ServerConfig,
    pub self_exe: &'a Path,
    pub path: Option<String>,
    pub log: &'a StderrTail,
    pub roots: &'a Arc<RwLock<Vec<PathBuf>>>,
    pub routes: &'a CallRoutes,
    pub start_timeout: Duration,
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: i32,
    /// Where sandboxed servers get their private folders.
    pub sandbox_dir: &'a Path,
    /// The home folder, and the app's own folders, as the sandbox keeps them out.
    pub sandbox_home: Option<&'a Path>,
    pub app_dirs: &'a [PathBuf],
    /// The most a Streamable HTTP server may send in one SSE event.
    pub max_http_event: usize,
    /// Where its secret environment values and headers are read from.
    pub secrets: &'a crate::secrets::Secrets,
    /// Where its sign-in is kept (HTTP servers).
    pub keep: Option<crate::mcp::oauth::Keep>,
    /// The session to start in, without a handshake (a Streamable HTTP server whose tasks ran in
    /// it when the app last ended).
    pub rejoin: Option<KeptSession>,
    /// What its sandbox refused of the network (kept across starts).
    pub attempts: &'a sandbox::Attempts,
    /// Told what a slow start is busy with (`None`: no longer), for its row.
    pub busy: &'a (dyn Fn(Option<String>) + Send + Sync),
}

/// A server that answered the handshake and listed its tools.
pub struct Connected {
    pub running: RunningService<RoleClient, Handler>,
    pub session: Session,
    pub catalog: Catalog,
    /// Its `list_changed` notifications.
    pub listings: mpsc::UnboundedReceiver<Listing>,
}

pub enum Attempt {
    Connected(Box<Connected>),
    Failed(Report),
    /// The `server/discover` probe broke on something other than an error or silence: the
    /// server may still speak the 2025 handshake.
    RetryLegacy,
    /// The server refused without a sign-in (401), or with one it does not take (401, 403):
    /// its `WWW-Authenticate` challenge, when it sent one.
    NeedsSignIn(Option<String>),
    Cancelled,
}

/// One attempt; `resolved` gets the program or URL as soon as it is known.
pub async fn connect(
    t: &Target<'_>,
    discover: bool,
    cancel: &CancellationToken,
    resolved: &mut Option<String>,
) -> Attempt {
    // its secrets, read now (the keyring may ask the user to unlock it: a command cancels)
    let values = tokio::select! {
        v = values(t) => v,
        _ = cancel.cancelled() => return Attempt::Cancelled,
    };
    let values = match values {
        Ok(v) => v,
        Err(attempt) => return attempt,
    };
    match t.config.transport() {
        Transport::Stdio => stdio(t, &values, discover, cancel, resolved).await,
        _ => remote(t, &values, discover, cancel, resolved).await,
    }
}

/// The values of a server's environment and headers for this start, secrets read from their
/// store. They live as long as the attempt (and in the process's environment or the
/// transport's headers), nowhere else.
struct Values {
    env: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
}

async fn values(t: &Target<'_>) -> Result<Values, Attempt> {
    let read_failed = |(name, e): (String, crate::secrets::SecretError),
                       field: fn(String) -> SecretField| {
        failed(
            Step::ReadingSecrets,
            format!("cannot read the {}: {e}", field(name).describe()),
        )
    };
    let env = t
        .secrets
        .resolve_map(&t.config.env)
        .await
        .map_err(|e| read_failed(e, SecretField::Env))?;
    let headers = t
        .secrets
        .resolve_map(&t.config.headers)
        .await
        .map_err(|e| read_failed(e, SecretField::Header))?;
    Ok(Values { env, headers })
}

impl Target<'_> {
    fn handler(&self, listings: mpsc::UnboundedSender<Listing>) -> Handler {
        Handler {
            server: self.name.to_string(),
            log: self.log.clone(),
            roots: self.roots.clone(),
            listings,
            routes: self.routes.clone(),
        }
    }
}

/// The dual-era start: 2026-07-28 `server/discover` first; an error or no answer (10 s) means a
/// 2025-era server, which gets the `initialize` handshake. Without discovery: `initialize` only.
fn lifecycle(discover: bool) -> ClientLifecycleMode {
    if discover {
        ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        }
    } else {
        ClientLifecycleMode::Initialize
    }
}

fn session_of(
    running: &RunningService<RoleClient, Handler>,
    pid: Option<u32>,
    exit: Option<watch::Receiver<Option<String>>>,
    sandbox: Option<Arc<Detector>>,
) -> Session {
    let peer = running.peer().clone();
    let info = peer.peer_info();
    Session {
        protocol_version: info.as_ref().map(|i| i.protocol_version.to_string()),
        server_info: info.as_ref().and_then(|i| {
            i.server_info
                .as_ref()
                .map(|s| format!("{} {}", s.name, s.version))
        }),
        peer,
        pid,
        exit,
        sandbox,
        auth: None,
        http: None,
    }
}

/// The sandbox for this start, if its config asks for one: `Ok(None)` without one (not asked,
/// or the kernel has none and the user agreed), `Err` when it cannot start.
fn sandbox_for(t: &Target<'_>, program: &Path) -> Result<Option<Sandboxed>, Attempt> {
    let Some(wanted) = sandbox::wanted(t.config) else {
        return Ok(None);
    };
    match sandbox::decide(&wanted, t.landlock_abi) {
        SandboxState::Unsupported => Err(failed(Step::Sandbox, sandbox::unsupported_reason())),
        SandboxState::Waived => {
            t.log.push(
                "[switchboard] running without its sandbox: this system's kernel has no Landlock, \
                 and its settings allow running it unsandboxed"
                    .into(),
            );
            Ok(None)
        }
        SandboxState::Container => Ok(None),
        SandboxState::On => {
            let places = sandbox::Places {
                program: program.to_path_buf(),
                command: t.config.command.clone(),
                args: t.config.args.clone(),
                cwd: t.config.cwd.as_ref().map(PathBuf::from),
                path_var: t.path.clone(),
                home: t.sandbox_home.map(Path::to_path_buf),
                private: sandbox::private_dir(t.sandbox_dir, t.name),
                protected: sandbox::protected(t.sandbox_home, t.app_dirs),
                certs: cert_paths(t.config),
            };
            let sb = sandbox::set_up(&wanted, &places, t.landlock_abi, t.attempts.clone())
                .map_err(|e| failed(Step::Sandbox, format!("cannot set up its sandbox: {e}")))?;
            for m in &sb.policy.missing {
                t.log.push(format!(
                    "[switchboard] sandbox: {m} does not exist, so it is not in the sandbox"
                ));
            }
            // one line, however many: a folder split around many secrets must not push the
            // server's own output out of the log's tail
            if !sb.policy.left_out.is_empty() {
                const SHOWN: usize = 8;
                let n = sb.policy.left_out.len();
                let mut names: Vec<String> = sb
                    .policy
                    .left_out
                    .iter()
                    .take(SHOWN)
                    .map(|p| p.display().to_string())
                    .collect();
                if n > SHOWN {
                    names.push(format!("and {} more", n - SHOWN));
                }
                t.log.push(format!(
                    "[switchboard] sandbox: left out (credentials, the system's secrets or the \
                     app's own data: name one in the sandbox's folders to grant it): {}",
                    names.join(", ")
                ));
            }
            let missing: Vec<String> = sandbox::protections(t.landlock_abi, sb.policy.network)
                .into_iter()
                .filter(|p| !p.enforced)
                .map(|p| format!("{} ({})", p.what, p.how))
                .collect();
            if !missing.is_empty() {
                t.log.push(format!(
                    "[switchboard] sandbox: this kernel cannot enforce: {}",
                    missing.join("; ")
                ));
            }
            Ok(Some(sb))
        }
    }
}

/// The files and folders the certificate settings a sandboxed server gets name: the app's own
/// ([`sandbox::is_cert_setting`]), and its config's (the user's, unless the config says only what it
/// names: a publisher's values grant nothing).
fn cert_paths(cfg: &crate::mcp::ServerConfig) -> Vec<PathBuf> {
    let app: Vec<(String, String)> = std::env::vars().collect();
    let own: Vec<(&str, &str)> = match sandbox::wanted(cfg) {
        Some(w) if !w.config.only_named => cfg
            .env
            .iter()
            .filter_map(|(k, v)| match v {
                crate::secrets::SecretValue::Plain(p) => Some((k.as_str(), p.as_str())),
                _ => None,
            })
            .collect(),
        _ => vec![],
    };
    sandbox::cert_paths(app.iter().map(|(k, v)| (k.as_str(), v.as_str())).chain(own))
}

/// The package an npx or uvx server runs, fetched into its private cache first when its sandbox
/// has no network (`sandbox::fetch`); once per package, said in its log. Fetched with the app's
/// own npm or uv, found on the app's PATH (never the server's, never a folder it may write).
async fn fetch_for_sandbox(t: &Target<'_>, sb: &Sandboxed) -> Result<(), String> {
    let Some(what) = sandbox::to_fetch(&t.config.command, &t.config.args)? else {
        return Ok(());
    };
    // what the server may write: no program is taken from there
    let mut writable = sb.policy.write.clone();
    writable.push(t.sandbox_dir.to_path_buf());
    writable.extend(t.config.cwd.as_ref().map(PathBuf::from));
    let places = sandbox::FetchPlaces {
        app_path: t.path.clone(),
        writable,
        private: sb.private.clone(),
        own: sandbox::fetch_dir(t.sandbox_dir, t.name),
    };
    if sandbox::fetched(&places, &what) {
        return Ok(());
    }
    let by = what.fetcher;
    t.log.push(format!(
        "[switchboard] fetching {} for its sandbox, which has no network ({}, {})",
        what.packages.join(" "),
        by.name(),
        by.how()
    ));
    sandbox::fetch(&places, &what).await?;
    t.log.push(format!(
        "[switchboard] fetched; {} runs it offline in the sandbox",
        t.config.command
    ));
    Ok(())
}

async fn stdio(
    t: &Target<'_>,
    values: &Values,
    discover: bool,
    cancel: &CancellationToken,
    resolved: &mut Option<String>,
) -> Attempt {
    let path = t.path.as_deref();
    let program = match process::resolve_command(t.config, t.self_exe, path) {
        Ok(p) => p,
        Err(e) => return failed(Step::FindingCommand, format!("cannot start: {e}")),
    };
    *resolved = Some(program.display().to_string());
    // a container is its own sandbox: checked here, and its docker command runs without ours
    let container = sandbox::wanted(t.config).filter(|w| w.container);
    if let Some(w) = &container {
        if let Some(why) = sandbox::container_refusal(t.config, w, t.sandbox_home) {
            return failed(Step::Sandbox, format!("its container is refused: {why}"));
        }
        t.log.push(format!(
            "[switchboard] runs a container, which is its sandbox: {} runs outside Switchboard's \
             sandbox (it must reach its daemon), with only the options checked here{}",
            t.config.command,
            if w.config.network {
                "; the container has Docker's network"
            } else {
                ", and no network (--network=none)"
            }
        ));
    }
    let sandboxed = match container {
        Some(_) => None,
        None => match sandbox_for(t, &program) {
            Ok(s) => s,
            Err(attempt) => return attempt,
        },
    };
    let base_env = container
        .as_ref()
        .map(|w| sandbox::container_environment(std::env::vars_os(), &w.config.env));
    if let Some(sb) = sandboxed.as_ref().filter(|sb| !sb.policy.network) {
        if let Err(e) = fetch_for_sandbox(t, sb).await {
            return failed(Step::FetchingPackage, e);
        }
    }
    let spawned = match process::spawn(
        t.config,
        &values.env,
        program.clone(),
        path,
        t.log.clone(),
        sandboxed.as_ref(),
        base_env,
    ) {
        Ok(s) => s,
        // a sandboxed start fails in the sandbox's system calls, or at exec when the sandbox
        // refuses the program; only a missing program is not the sandbox's doing
        Err(e) if sandboxed.is_some() && e.kind() != std::io::ErrorKind::NotFound => {
            return failed(
                Step::Sandbox,
                format!("cannot start {} in its sandbox: {e}", program.display()),
            )
        }
        Err(e) => {
            return failed(
                Step::StartingProcess,
                format!("cannot start {}: {e}", program.display()),
            )
        }
    };
    let detector = sandboxed.map(|s| s.detector);
    let (pid, mut exit) = (spawned.pid, spawned.exit.clone());
    let (tx, listings) = mpsc::unbounded_channel();
    let handler = t.handler(tx);
    let step = Mutex::new(Step::Handshake);
    let note =
        |d: Option<Duration>| (t.busy)(d.map(|d| patience::busy_words(&t.config.command, d)));
    let init = patience::while_busy(
        async {
            // rmcp drops lines over 16 MB (the call would then just time out); take up to 64 MB and
            // cut what the model sees instead
            let transport =
                AsyncRwTransport::<RoleClient, _, _>::new(spawned.stdout, spawned.stdin)
                    .with_max_line_length(MAX_STDIO_MESSAGE);
            let running = handler
                .serve_with_lifecycle(transport, lifecycle(discover))
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            with_catalog(running, &step, t.name, &Mutex::new(None)).await
        },
        pid,
        t.start_timeout,
        &note,
    );
    let init = tokio::select! {
        r = init => r,
        _ = cancel.cancelled() => {
            process::terminate(pid, &mut exit, Duration::from_secs(1)).await;
            return Attempt::Cancelled;
        }
    };
    let step = *step.lock().unwrap();
    match init {
        Ok(Ok((running, catalog))) => Attempt::Connected(Box::new(Connected {
            session: session_of(&running, pid, Some(spawned.exit), detector),
            running,
            catalog,
            listings,
        })),
        Ok(Err(e)) if discover && step == Step::Handshake && exit.borrow().is_none() => {
            t.log.push(format!(
                "[switchboard] {e}; starting it again with the 2025 initialize handshake"
            ));
            process::terminate(pid, &mut exit, Duration::from_secs(1)).await;
            Attempt::RetryLegacy
        }
        Ok(Err(e)) => Attempt::Failed(reap(pid, exit, step, e, true).await),
        Err(busy) => {
            let secs = t.start_timeout.as_secs();
            let waiting = if step == Step::Handshake {
                "no answer to the MCP handshake"
            } else {
                "no answer to tools/list"
            };
            let e = if busy {
                format!(
                    "{waiting} in {} s, though it was busy all along",
                    patience::MOST.as_secs()
                )
            } else if step == Step::Handshake {
                format!(
                    "{waiting}, and it did nothing for {secs} s (is it an MCP server on stdio?)"
                )
            } else {
                format!("{waiting}, and it did nothing for {secs} s")
            };
            // it did not answer in time: that is the news, not how it ended after we gave up
            Attempt::Failed(reap(pid, exit, step, e, false).await)
        }
    }
}

fn failed(step: Step, error: String) -> Attempt {
    Attempt::Failed(Report {
        error,
        step,
        exit: None,
        pid: None,
    })
}

/// The report of a process that failed to start, after it has had a moment to exit (so the report
/// has its exit status) and was ended. `exit_explains`: when the process has exited, its exit is
/// the better explanation (the handshake broke because it died) than the error seen on our side.
async fn reap(
    pid: Option<u32>,
    mut exit: watch::Receiver<Option<String>>,
    step: Step,
    mut error: String,
    exit_explains: bool,
) -> Report {
    let _ = tokio::time::timeout(Duration::from_millis(500), exit.wait_for(|e| e.is_some())).await;
    let exited = exit.borrow().clone();
    if let Some(how) = exited.filter(|_| exit_explains) {
        error = format!("the process {how} during start-up, before the MCP handshake finished");
    }
    process::terminate(pid, &mut exit, Duration::from_secs(1)).await;
    let how = exit.borrow().clone();
    Report {
        error,
        step,
        exit: how,
        pid,
    }
}

/// A refusal that wants a sign-in, with its challenge if it had one.
type Refused = Mutex<Option<Option<String>>>;

/// After the handshake, on every transport: list all the server's tools, prompts and resources
/// (every page). Only tools are required: a server whose prompts or resources cannot be listed
/// still runs, and its log says why.
async fn with_catalog(
    running: RunningService<RoleClient, Handler>,
    step: &Mutex<Step>,
    server: &str,
    refused: &Refused,
) -> Result<(RunningService<RoleClient, Handler>, Catalog), String> {
    *step.lock().unwrap() = Step::ListingTools;
    let peer = running.peer().clone();
    let tools = peer.list_all_tools().await.map_err(|e| {
        if let Some(challenge) = super::sign_in::challenge_of(&e) {
            *refused.lock().unwrap() = Some(Some(challenge));
        }
        format!("tools/list failed: {e}")
    })?;
    let (prompts, resources) = tokio::join!(
        catalog::list_prompts(server, &peer),
        catalog::list_resources(server, &peer)
    );
    fn keep<T>(r: Result<Vec<T>, rmcp::ServiceError>, what: &str, log: &StderrTail) -> Vec<T> {
        r.unwrap_or_else(|e| {
            log.push(format!("[switchboard] {what} failed: {e}"));
            vec![]
        })
    }
    let log = &running.service().log;
    let catalog = Catalog {
        tools: tools.iter().map(CachedTool::of).collect(),
        prompts: keep(prompts, "prompts/list", log),
        resources: keep(resources, "resources/list", log),
    };
    Ok((running, catalog))
}
