//! One task per configured server owns its life: the state machine
//! `Starting → Running(session) | Failed(report)`, `Running → Failed` when the process dies,
//! automatic restarts with backoff, `Stopped` on request. Every transition happens here, in one
//! place, and is published as a new [`Snapshot`]; nobody else changes a server's state.
//!
//! Restarts back off 1, 2, 4, … s, at most 5 in a row; a server that ran a minute (`STABLE_AFTER`)
//! starts a fresh series. The catalog (prompts, resources) is refreshed on `list_changed`, and the
//! server's skills listed when it starts. While the login shell's PATH is looked up
//! (`McpHost::path_pending` … `set_path`), a stdio server waits in `Starting` (at most
//! `PATH_WAIT`), so the window lists every server at once.

// logging/setLevel is deprecated by 2026-07-28 (SEP-2577), but 2025-11-25 servers speak it.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::connect::{connect, Attempt, Connected, Target};
use super::handler::{CallRoutes, Handler, Listing};
use super::state::{CachedTool, Phase, Report, Session, Snapshot, Step};
use super::Shared;
use crate::mcp::catalog;
use crate::mcp::config::ServerConfig;
use crate::mcp::pins::Pin;
use crate::mcp::process::{self, StderrTail};

/// What the host asks of a supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Stop the session (if any) and start afresh, with a new series of restart attempts.
    Restart,
    /// Stop for good; the task ends.
    Stop,
}

/// A server that ran for this long before dying gets a fresh series of restart attempts.
const STABLE_AFTER: Duration = Duration::from_secs(60);

pub struct Supervisor {
    pub shared: Arc<Shared>,
    pub name: String,
    pub config: ServerConfig,
    pub log: StderrTail,
    pub routes: CallRoutes,
    pub state: watch::Sender<Arc<Snapshot>>,
    /// What its sandbox refused of the network, across its starts.
    pub attempts: crate::mcp::sandbox::Attempts,
}

/// How a running session ended.
enum End {
    Exited { how: String, pid: Option<u32> },
    Asked(Command),
}

/// How a start ended.
enum Started {
    Connected(Box<Connected>),
    Failed(Report),
    Asked(Command),
}

impl Supervisor {
    fn publish(&self, change: impl FnOnce(&mut Snapshot)) {
        let mut next = (**self.state.borrow()).clone();
        change(&mut next);
        self.state.send_replace(Arc::new(next));
        self.shared.changed();
    }

    fn set_phase(&self, phase: Phase) {
        self.publish(|s| s.phase = phase);
    }

    /// The next command; the host going away counts as `Stop`.
    async fn next(commands: &mut mpsc::UnboundedReceiver<Command>) -> Command {
        commands.recv().await.unwrap_or(Command::Stop)
    }

    pub async fn run(self, mut commands: mpsc::UnboundedReceiver<Command>) {
        if self.config.disabled {
            self.set_phase(Phase::Disabled);
            while Self::next(&mut commands).await != Command::Stop {}
            return;
        }
        let mut restarts = 0u32;
        loop {
            self.publish(|s| {
                s.phase = Phase::Starting;
                s.restarts = restarts;
                s.starts += 1;
            });
            let connected = match self.start(&mut commands).await {
                Started::Connected(c) => c,
                Started::Failed(report) => {
                    self.set_phase(Phase::Failed(report));
                    match Self::next(&mut commands).await {
                        Command::Restart => {
                            restarts = 0;
                            continue;
                        }
                        Command::Stop => break,
                    }
                }
                Started::Asked(Command::Restart) => {
                    restarts = 0;
                    continue;
                }
                Started::Asked(Command::Stop) => break,
            };
            let since = Instant::now();
            let (how, pid) = match self.serve(connected, &mut commands).await {
                End::Asked(Command::Stop) => break,
                End::Asked(Command::Restart) => {
                    self.log.push("[switchboard] restarted".into());
                    restarts = 0;
                    continue;
                }
                End::Exited { how, pid } => (how, pid),
            };
            tracing::warn!(server = %self.name, "MCP server died: {how}");
            if since.elapsed() > STABLE_AFTER {
                restarts = 0;
            }
            let max = self.shared.opts.max_restarts;
            let report = |error: String| Report {
                error,
                step: Step::Running,
                exit: Some(how.clone()),
                pid,
            };
            if restarts >= max {
                self.set_phase(Phase::Failed(report(format!(
                    "the server stopped unexpectedly ({how}); gave up after {restarts} automatic restarts"
                ))));
                match Self::next(&mut commands).await {
                    Command::Restart => {
                        restarts = 0;
                        continue;
                    }
                    Command::Stop => break,
                }
            }
            let delay = backoff(self.shared.opts.restart_base_delay, restarts);
            restarts += 1;
            self.publish(|s| {
                s.phase = Phase::Failed(report(format!(
                    "the server stopped unexpectedly ({how}); restarting in {:.1} s (attempt {restarts} of {max})",
                    delay.as_secs_f64()
                )));
                s.restarts = restarts;
            });
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                cmd = Self::next(&mut commands) => match cmd {
                    Command::Restart => restarts = 0,
                    Command::Stop => break,
                },
            }
        }
        self.set_phase(Phase::Stopped);
    }

    /// Starts (or reaches) the server: with discovery first, then once more with the 2025
    /// handshake when the probe broke. A command that arrives meanwhile cancels the attempt.
    async fn start(&self, commands: &mut mpsc::UnboundedReceiver<Command>) -> Started {
        let mut discover = self.shared.opts.discover;
        // a session the last run's tasks ran in: this start rejoins it (only this start)
        let rejoin = self.shared.take_rejoin(&self.name);
        if self.config.transport() == crate::mcp::Transport::Stdio {
            self.shared.path_known().await;
        }
        loop {
            let path = self.shared.path();
            let target = Target {
                name: &self.name,
                config: &self.config,
                self_exe: &self.shared.opts.self_exe,
                path: path.clone(),
                log: &self.log,
                roots: &self.shared.roots,
                routes: &self.routes,
                start_timeout: self.shared.opts.start_timeout,
                landlock_abi: self.shared.landlock_abi,
                sandbox_dir: &self.shared.opts.sandbox_dir,
                sandbox_home: self.shared.opts.sandbox_home.as_deref(),
                app_dirs: &self.shared.opts.app_dirs,
                max_http_event: self.shared.opts.max_http_event,
                secrets: &self.shared.opts.secrets,
                keep: self.shared.keep_for(&self.config),
                rejoin: rejoin.clone(),
                attempts: &self.attempts,
                busy: &|note| {
                    if self.state.borrow().busy != note {
                        self.publish(|s| s.busy = note);
                    }
                },
            };
            let cancel = CancellationToken::new();
            let mut resolved = None;
            let mut asked = None;
            let attempt = {
                let attempt = connect(&target, discover, &cancel, &mut resolved);
                tokio::pin!(attempt);
                loop {
                    tokio::select! {
                        a = &mut attempt => break a,
                        cmd = Self::next(commands), if asked.is_none() => {
                            asked = Some(cmd);
                            cancel.cancel();
                        }
                    }
                }
            };
            self.publish(|s| {
                s.resolved = resolved.or(s.resolved.take());
                s.path = path;
            });
            if let Some(cmd) = asked {
                if let Attempt::Connected(c) = attempt {
                    close(c.running, &c.session).await;
                }
                return Started::Asked(cmd);
            }
            match attempt {
                Attempt::Connected(c) => {
                    self.shared.sign_ins.succeeded(&self.name);
                    return Started::Connected(c);
                }
                Attempt::Failed(report) => return Started::Failed(report),
                Attempt::NeedsSignIn(challenge) => {
                    let report = |error: String| Report {
                        error,
                        step: Step::SigningIn,
                        exit: None,
                        pid: None,
                    };
                    self.shared.sign_ins.refused(&self.name, challenge.clone());
                    let Some(browser) = self.shared.opts.sign_in_by_itself.clone() else {
                        return Started::Failed(report(
                            "This server wants you to sign in before it can be used.".into(),
                        ));
                    };
                    // the command line: the browser step now, then connect again with the tokens
                    let round = self.shared.sign_in_round(
                        &self.name,
                        &self.config,
                        challenge.as_deref(),
                        browser.0.as_ref(),
                    );
                    tokio::pin!(round);
                    let signed = tokio::select! {
                        r = &mut round => r,
                        cmd = Self::next(commands) => return Started::Asked(cmd),
                    };
                    if let Err(e) = signed {
                        self.log
                            .push(format!("[switchboard] signing in failed: {e}"));
                        return Started::Failed(report(e.to_string()));
                    }
                }
                Attempt::RetryLegacy if discover => discover = false,
                Attempt::RetryLegacy | Attempt::Cancelled => {
                    unreachable!("only a discovering, uncancelled attempt ends so")
                }
            }
        }
    }

    /// A running session: publishes it, keeps its lists fresh, and waits for its process to end
    /// or for a command.
    async fn serve(
        &self,
        connected: Box<Connected>,
        commands: &mut mpsc::UnboundedReceiver<Command>,
    ) -> End {
        let Connected {
            running,
            session,
            mut catalog,
            mut listings,
        } = *connected;
        self.pin(&mut catalog.tools).await;
        self.publish(|s| {
            s.catalog = Arc::new(catalog);
            s.phase = Phase::Running(session.clone());
        });
        tracing::info!(server = %self.name, "MCP server running");
        // its skills listed (nothing of them read) for the model's offer and the server's row
        if super::skills::declares_skills(&session) {
            let (shared, name, config, session) = (
                self.shared.clone(),
                self.name.clone(),
                self.config.clone(),
                session.clone(),
            );
            tokio::spawn(async move {
                let timeout = Duration::from_secs(config.timeout.unwrap_or(30));
                if let Err(e) =
                    super::skills::list(&shared, &name, &config, &session, timeout).await
                {
                    tracing::warn!(server = %name, "its skills could not be listed: {e}");
                }
            });
        }
        if let Some(level) = self.config.log_level.clone() {
            tokio::spawn(set_log_level(session.peer.clone(), level, self.log.clone()));
        }
        let mut exit = session.exit.clone();
        let mut listening = true;
        loop {
            tokio::select! {
                how = exited(&mut exit) => {
                    drop(running);
                    // whatever it started ends with it, before it is started again
                    if let Some(mut exit) = session.exit.clone() {
                        process::terminate(session.pid, &mut exit, Duration::from_secs(1)).await;
                    }
                    return End::Exited { how, pid: session.pid };
                }
                kind = listings.recv(), if listening => match kind {
                    Some(first) => {
                        let mut kinds = vec![first];
                        while let Ok(k) = listings.try_recv() {
                            if !kinds.contains(&k) {
                                kinds.push(k);
                            }
                        }
                        for kind in kinds {
                            self.refresh(&session.peer, kind).await;
                            // the Skills extension has no list_changed of its own: a server's
                            // skills are files served as resources, so a change of its
                            // resources lists its skills again (checked against their pins)
                            if kind == Listing::Resources
                                && super::skills::declares_skills(&session)
                            {
                                let timeout =
                                    Duration::from_secs(self.config.timeout.unwrap_or(30));
                                if let Err(e) = super::skills::list(
                                    &self.shared,
                                    &self.name,
                                    &self.config,
                                    &session,
                                    timeout,
                                )
                                .await
                                {
                                    tracing::warn!(server = %self.name, "its skills could not be listed again: {e}");
                                }
                            }
                        }
                    }
                    // the service ended; a stdio server's exit comes next
                    None => listening = false,
                },
                cmd = Self::next(commands) => {
                    close(running, &session).await;
                    return End::Asked(cmd);
                }
            }
        }
    }

    /// Marks each tool whose definition is not one the user accepted (pinning all of a server's
    /// tools the first time it is seen).
    async fn pin(&self, tools: &mut [CachedTool]) {
        // the built-in servers come with the app: their definitions change only with it
        let Some(pins) = self
            .shared
            .opts
            .pins
            .as_ref()
            .filter(|_| self.config.builtin().is_none())
        else {
            return;
        };
        let defs: Vec<_> = tools.iter().map(CachedTool::definition).collect();
        // pinned for what the server is, not its name: another program under it starts afresh
        let unaccepted = pins.0.check(&self.config.identity(), &defs).await;
        for t in tools.iter_mut() {
            t.pinned = unaccepted
                .iter()
                .find(|(name, _)| *name == t.name)
                .map(|(_, pin)| Arc::new(pin.clone()));
            let name = &t.name;
            let why = match t.pinned.as_deref() {
                None => continue,
                Some(Pin::Changed(_)) => {
                    format!("the definition of tool \"{name}\" changed since it was accepted")
                }
                Some(Pin::New) => format!(
                    "tool \"{name}\" is new (this server did not have it when its tools were accepted)"
                ),
                Some(Pin::Unchecked) => format!(
                    "tool \"{name}\" could not be checked against its accepted definition (the store could not be read)"
                ),
            };
            self.log.push(format!(
                "[switchboard] {why}; it asks before it runs until it is accepted"
            ));
        }
    }

    /// Lists one of a running server's lists again (after its `list_changed`).
    async fn refresh(&self, peer: &Peer<RoleClient>, kind: Listing) {
        let wait = self.shared.opts.start_timeout;
        let failed = |what: &str, e: String| {
            tracing::warn!(server = %self.name, "refreshing {what} failed: {e}");
            self.log
                .push(format!("[switchboard] refreshing {what} failed: {e}"));
        };
        let timed_out = || format!("no answer within {} s", wait.as_secs());
        let update = |change: &dyn Fn(&mut super::state::Catalog)| {
            self.publish(|s| {
                let mut c = (*s.catalog).clone();
                change(&mut c);
                s.catalog = Arc::new(c);
            })
        };
        match kind {
            Listing::Tools => match tokio::time::timeout(wait, peer.list_all_tools()).await {
                Ok(Ok(tools)) => {
                    let mut tools: Vec<CachedTool> = tools.iter().map(CachedTool::of).collect();
                    self.pin(&mut tools).await;
                    update(&|c| c.tools = tools.clone())
                }
                Ok(Err(e)) => failed("tools", e.to_string()),
                Err(_) => failed("tools", timed_out()),
            },
            Listing::Prompts => {
                match tokio::time::timeout(wait, catalog::list_prompts(&self.name, peer)).await {
                    Ok(Ok(p)) => update(&|c| c.prompts = p.clone()),
                    Ok(Err(e)) => failed("prompts", e.to_string()),
                    Err(_) => failed("prompts", timed_out()),
                }
            }
            Listing::Resources => {
                match tokio::time::timeout(wait, catalog::list_resources(&self.name, peer)).await {
                    Ok(Ok(r)) => update(&|c| c.resources = r.clone()),
                    Ok(Err(e)) => failed("resources", e.to_string()),
                    Err(_) => failed("resources", timed_out()),
                }
            }
        }
    }
}

/// The wait before restart number `previous + 1`: the base, doubled with each restart before it,
/// at most 32 times the base.
fn backoff(base: Duration, previous: u32) -> Duration {
    base * 2u32.saturating_pow(previous).min(32)
}

/// How the process ended, once it has; never, for a server without a process.
async fn exited(exit: &mut Option<watch::Receiver<Option<String>>>) -> String {
    match exit.as_mut() {
        Some(exit) => match exit.wait_for(|e| e.is_some()).await {
            Ok(e) => e.clone().unwrap_or_default(),
            Err(_) => String::new(),
        },
        None => std::future::pending().await,
    }
}

/// Ends a session and, for stdio, its whole process group: closing stdin is the polite way; after
/// a moment, signals.
async fn close(running: RunningService<RoleClient, Handler>, session: &Session) {
    let _ = tokio::time::timeout(Duration::from_secs(1), running.cancel()).await;
    if let Some(mut exit) = session.exit.clone() {
        let _ =
            tokio::time::timeout(Duration::from_millis(500), exit.wait_for(|e| e.is_some())).await;
        process::terminate(session.pid, &mut exit, Duration::from_secs(2)).await;
    }
}

async fn set_log_level(peer: Peer<RoleClient>, level: String, log: StderrTail) {
    #[allow(deprecated)]
    match serde_json::from_value::<LoggingLevel>(Value::String(level.clone())) {
        Ok(l) => {
            if let Err(e) = peer.set_level(SetLevelRequestParams::new(l)).await {
                log.push(format!(
                    "[switchboard] logging/setLevel {level} failed: {e}"
                ));
            }
        }
        Err(_) => log.push(format!("[switchboard] \"{level}\" is not an MCP log level")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_wait_longer_each_time_up_to_a_cap() {
        let base = Duration::from_millis(100);
        let waits: Vec<u128> = (0..8).map(|n| backoff(base, n).as_millis()).collect();
        assert_eq!(waits, vec![100, 200, 400, 800, 1600, 3200, 3200, 3200]);
        assert_eq!(backoff(base, u32::MAX), Duration::from_millis(3200));
    }
}
