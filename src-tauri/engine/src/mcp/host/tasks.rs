//! Calls that run as tasks on their server (the 2026-07-28 tasks extension,
//! `io.modelcontextprotocol/tasks`, SEP-2663). The server answers `tools/call` with a task; the
//! host polls `tasks/get` at the interval the server asks for, passes the server's questions
//! (`input_required`) to whoever runs the call and answers them with `tasks/update`, cancels
//! with `tasks/cancel`, and turns the final result into a [`ToolOutcome`] like any other.
//!
//! Each poll takes the server's current session, so a task outlives a reconnect (and, through
//! [`McpHost::resume_task`] and the store, a restart of the app) for as long as the server
//! keeps it; an HTTP session a task starts in is kept too, and rejoined after a restart
//! (`rejoin.rs`). A task the host cannot follow any more (the server no longer knows it:
//! `-32602`; its session ended; the server is gone) ends with a [`TaskEnd`] that says why, and
//! nothing runs it again by itself.
//!
//! Polling follows the server's interval clamped to 0.2–30 s; each `input_required` key is asked
//! once; every state change is a `CallEvent::Task(TaskState)`. `resume_task` follows a task by its
//! handle from the store (`TaskHandle`: its id, its form, its kept session). `begin_shutdown`: when
//! the app quits, a followed task is neither cancelled nor failed, it just ends with the app.
//!
//! Task ids stay in the host and the store, never in what the window, the model or an export get; a
//! session id only in the secrets store. A stdio server's task ends with the app (ended at once on
//! the next start, nothing asked). A task whose server is now another program (its identity
//! changed) is reported lost, not followed.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{
    CallToolResult, CancelTaskParams, DetailedTask, ErrorCode, GetTaskParams, InputRequest,
    InputResponses, Task, TaskPayload, UpdateTaskParams,
};
use rmcp::service::ServiceError;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::handler::{
    elicit_result, elicitation_of, roots_result, sampling_request_of, sampling_result, CallEvent,
    Reply, SamplingAnswer,
};
use super::outcome::{cancelled, error_outcome};
use super::rejoin::KeptSession;
use super::state::Session;
pub use super::task_state::{is_open, TaskEnd, TaskHandle, TaskState};
use super::task_state::{Counted, Home};
use super::{McpHost, ToolOutcome};

/// The poll interval when the server names none, and the bounds put on the one it names.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
const MIN_POLL: Duration = Duration::from_millis(200);
const MAX_POLL: Duration = Duration::from_secs(30);
/// Polls in a row that may fail (no answer, no connection) before the host gives up.
const MAX_FAILED_POLLS: u32 = 5;

/// How long to wait before asking about a task again: the server's interval, within bounds.
pub(super) fn poll_interval(state: &TaskState) -> Duration {
    state
        .poll_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_POLL)
        .clamp(MIN_POLL, MAX_POLL)
}

type Events = mpsc::UnboundedSender<CallEvent>;

/// A task whose server asks something, and who answers.
struct Asked<'a> {
    server: &'a str,
    id: &'a str,
    session: &'a Session,
    events: Option<&'a Events>,
    cancel: &'a CancellationToken,
}

/// A task being followed: what is known of it, who hears of it, and how its polls go.
struct Followed<'a> {
    server: &'a str,
    tool: &'a str,
    id: String,
    state: TaskState,
    events: Option<&'a Events>,
    cancel: &'a CancellationToken,
    /// The keys of the server's questions already answered.
    answered: HashSet<String>,
    /// Polls in a row that failed.
    failed_polls: u32,
}

impl Followed<'_> {
    /// Tells whoever listens the task's state.
    fn tell(&self) {
        if let Some(tx) = self.events {
            let _ = tx.send(CallEvent::Task(self.state.clone()));
        }
    }

    /// Takes the task's state as the server now has it; said when it changed.
    fn update(&mut self, now: TaskState) {
        let now = self.state.updated(now);
        if now != self.state {
            self.state = now;
            self.tell();
        }
    }

    /// The task can no longer be followed: its end, said.
    fn lost(&mut self, reason: TaskEnd, detail: Option<&str>) -> ToolOutcome {
        let out = self.state.lost(reason, self.server, self.tool, detail);
        self.tell();
        out
    }
}

/// What one poll came to.
enum Polled {
    /// The task as the server has it now.
    Task(DetailedTask),
    /// Nothing to read this time: poll again.
    Again,
    /// The task is lost: the call's outcome.
    Ended(ToolOutcome),
}

/// Counts the task in the session it is polled in (once), so the session is not ended under it.
fn count_in_session(counted: &mut Counted, session: &Session) {
    if counted.0.is_none() {
        if let Some(http) = &session.http {
            http.task_started();
            counted.0 = Some(http.clone());
        }
    }
}

impl McpHost {
    /// Follows the task a server created for a call of `tool` in `session` until it ends.
    /// `events` hears every change of its state (first the task as created) and the server's
    /// questions.
    pub(super) async fn follow_task(
        &self,
        server: &str,
        tool: &str,
        created: &Task,
        session: &Session,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let mut state = TaskState::of(created);
        // the session it lives in is kept before anything is said about it
        state.session = self.keep_session(session).await;
        let first_wait = poll_interval(&state);
        let home = Home::In(session.http.as_ref().and_then(|h| h.current()));
        // counted in its session from now on: the session is not ended under it
        let mut counted = Counted(session.http.clone());
        if let Some(http) = &counted.0 {
            http.task_started();
        }
        let out = self
            .poll_task(
                server,
                tool,
                state,
                Some(home),
                first_wait,
                cancel,
                events,
                &mut counted,
            )
            .await;
        self.task_done(counted).await;
        out
    }

    /// Follows a task an earlier run of the app started (its handle from the store): polls it
    /// at once when its server is running, waiting for the server to start (or restart) first.
    /// An HTTP server whose session was kept for the task was started in that session.
    pub async fn resume_task(
        &self,
        server: &str,
        tool: &str,
        handle: &TaskHandle,
        cancel: &CancellationToken,
        events: Option<&Events>,
    ) -> ToolOutcome {
        let state = TaskState {
            task_id: handle.task_id.clone(),
            status: "working".into(),
            message: None,
            poll_ms: None,
            ttl_ms: None,
            legacy: handle.legacy,
            session: handle.session.clone(),
            reason: None,
        };
        if handle.legacy {
            return self
                .follow_legacy_task(server, tool, state, None, cancel, events)
                .await;
        }
        let mut counted = Counted(None);
        let out = self
            .poll_task(
                server,
                tool,
                state,
                None,
                Duration::ZERO,
                cancel,
                events,
                &mut counted,
            )
            .await;
        self.task_done(counted).await;
        out
    }

    /// Keeps the HTTP session `session` in the secrets store for a task that starts in it (once
    /// per session), so the next run can rejoin it; its id there. `None`: a server without
    /// sessions, or it could not be kept.
    pub(super) async fn keep_session(&self, session: &Session) -> Option<String> {
        let http = session.http.as_ref()?;
        if let Some(id) = http.kept() {
            return Some(id);
        }
        if self.shared.opts.oauth_in_memory {
            return None;
        }
        let initialize = serde_json::to_value(&*session.peer.peer_info()?).ok()?;
        let kept = http.to_keep(initialize)?;
        match kept.keep(&self.shared.opts.secrets).await {
            Ok(id) => {
                http.set_kept(&kept, id.clone());
                Some(id)
            }
            Err(e) => {
                tracing::warn!("could not keep the session a task runs in: {e}");
                None
            }
        }
    }

    /// Where a task followed again after a restart lives: the session in use if it was rejoined
    /// for it (or the server has none), else why it cannot be there.
    pub(super) fn home_of(&self, session: &Session, kept: Option<&str>) -> Home {
        let current = session.http.as_ref().and_then(|h| h.current());
        match kept {
            None => Home::In(current),
            Some(id) if session.http.as_ref().is_some_and(|h| h.is_rejoined(id)) => {
                Home::In(current)
            }
            Some(id) if self.shared.unreadable_session(id) => Home::Away(TaskEnd::SessionNotKept),
            Some(_) => Home::Away(TaskEnd::SessionEnded),
        }
    }

    /// A followed task's end (not the app's): the last task of its HTTP session lets the session
    /// go (it is forgotten in the secrets store, and may be ended on the server).
    pub(super) async fn task_done(&self, counted: Counted) {
        let Some(http) = counted.0 else { return };
        if http.task_ended() {
            if let Some(id) = http.take_kept() {
                if let Err(e) = KeptSession::forget(&self.shared.opts.secrets, &id).await {
                    tracing::warn!("could not forget a task's session: {e}");
                }
            }
        }
    }

    /// Polls a task until it ends (or the app does): waits `wait`, then asks its server, whose
    /// current session it takes each time, and tells `events` each change; `home` is where the
    /// task lives (learnt at the first poll when `None`).
    #[allow(clippy::too_many_arguments)]
    async fn poll_task(
        &self,
        server: &str,
        tool: &str,
        state: TaskState,
        mut home: Option<Home>,
        mut wait: Duration,
        cancel: &CancellationToken,
        events: Option<&Events>,
        counted: &mut Counted,
    ) -> ToolOutcome {
        let mut task = Followed {
            server,
            tool,
            id: state.task_id.clone(),
            state,
            events,
            cancel,
            answered: HashSet::new(),
            failed_polls: 0,
        };
        task.tell();
        loop {
            if let Some(out) = self.wait_or_cancel(&mut task, wait).await {
                return out;
            }
            wait = poll_interval(&task.state);
            let Some(session) = self.session_for_task(server, cancel).await else {
                if self.is_closing() {
                    std::future::pending::<()>().await;
                }
                if cancel.is_cancelled() {
                    continue; // said at the top of the loop
                }
                return task.lost(TaskEnd::ServerNotRunning, None);
            };
            count_in_session(counted, &session);
            let home =
                home.get_or_insert_with(|| self.home_of(&session, task.state.session.as_deref()));
            let now = match self.poll_once(&mut task, &session, home).await {
                Polled::Task(now) => now,
                Polled::Again => continue,
                Polled::Ended(out) => return out,
            };
            task.failed_polls = 0;
            task.update(TaskState::of(&now.task));
            wait = poll_interval(&task.state);
            if let TaskPayload::InputRequired { input_requests } = now.payload {
                let asked = Asked {
                    server,
                    id: &task.id,
                    session: &session,
                    events,
                    cancel,
                };
                if self
                    .answer_input(asked, input_requests, &mut task.answered)
                    .await
                {
                    wait = Duration::ZERO;
                }
            } else if let Some(out) = self.task_end(server, tool, &session, now.payload) {
                return out;
            }
        }
    }

    /// Waits `wait` before the next poll. When the user cancels first, the task is cancelled on
    /// its server and its end said; when the app ends instead, the task goes on on its server
    /// and this never returns.
    async fn wait_or_cancel(&self, task: &mut Followed<'_>, wait: Duration) -> Option<ToolOutcome> {
        tokio::select! {
            _ = tokio::time::sleep(wait) => None,
            _ = task.cancel.cancelled() => {
                if self.is_closing() {
                    // the app ends (and this with it): the task goes on on its server
                    std::future::pending::<()>().await;
                }
                self.cancel_task(task.server, &task.id).await;
                task.state.status = "cancelled".into();
                task.state.message = Some("Cancelled by the user.".into());
                task.tell();
                Some(cancelled(task.server, task.tool))
            }
        }
    }

    /// One `tasks/get` in `session`, within the server's timeout: the task as it is now; or
    /// poll again (cancelled meanwhile, or a failed poll short of the limit); or the task lost,
    /// when the server no longer knows it (why, from where it lives: `home`), answers with an
    /// error, or failed too many polls in a row. Never returns once the app is closing.
    async fn poll_once(&self, task: &mut Followed<'_>, session: &Session, home: &Home) -> Polled {
        let server = task.server;
        let timeout = self.timeout_for(server);
        let get = session.peer.get_task(GetTaskParams::new(task.id.clone()));
        let got = tokio::select! {
            r = tokio::time::timeout(timeout, get) => r,
            _ = task.cancel.cancelled() => return Polled::Again,
        };
        match got {
            Ok(Ok(got)) => Polled::Task(got.task),
            Ok(Err(ServiceError::McpError(e))) if e.code == ErrorCode::INVALID_PARAMS => {
                let why = home.why_unknown(session.http.as_deref());
                Polled::Ended(task.lost(why, Some(&e.message)))
            }
            Ok(Err(ServiceError::McpError(e))) => {
                Polled::Ended(task.lost(TaskEnd::NoAnswer, Some(&e.message)))
            }
            _ if self.is_closing() => std::future::pending().await,
            other => {
                task.failed_polls += 1;
                let why = match other {
                    Err(_) => format!("no answer within {} s", timeout.as_secs()),
                    Ok(Err(e)) => e.to_string(),
                    Ok(Ok(_)) => unreachable!(),
                };
                tracing::warn!("polling a task of {server}: {why}");
                if task.failed_polls >= MAX_FAILED_POLLS {
                    return Polled::Ended(task.lost(TaskEnd::NoAnswer, Some(&why)));
                }
                Polled::Again
            }
        }
    }

    /// The call's outcome when the task has ended on its server (completed with a result,
    /// failed, or cancelled by the server); `None` while it goes on.
    fn task_end(
        &self,
        server: &str,
        tool: &str,
        session: &Session,
        payload: TaskPayload,
    ) -> Option<ToolOutcome> {
        match payload {
            TaskPayload::Completed { result } => Some(
                match serde_json::from_value::<CallToolResult>(Value::Object(result)) {
                    Ok(r) => self.tool_result(server, tool, session, r),
                    Err(e) => error_outcome(
                        server,
                        tool,
                        format!("The task ended with a result that is not a tool result: {e}"),
                    ),
                },
            ),
            TaskPayload::Failed { error } => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                Some(error_outcome(
                    server,
                    tool,
                    format!("The task failed: {message}"),
                ))
            }
            TaskPayload::Cancelled => Some(error_outcome(
                server,
                tool,
                "The server cancelled the task.".into(),
            )),
            _ => None,
        }
    }

    /// The server's questions of an `input_required` task (each key asked once, until the server
    /// has read the answer), answered with `tasks/update`; whether any answer was sent.
    async fn answer_input(
        &self,
        asked: Asked<'_>,
        input_requests: impl IntoIterator<Item = (String, InputRequest)>,
        answered: &mut HashSet<String>,
    ) -> bool {
        let Asked {
            server,
            id,
            session,
            events,
            cancel,
        } = asked;
        let mut responses = InputResponses::new();
        for (key, request) in input_requests {
            if answered.contains(&key) {
                continue; // asked again until the server has read the answer
            }
            let answer = self.answer(server, request, events, cancel).await;
            if self.is_closing() {
                // the app ends while the question waits: it is asked again next run
                std::future::pending::<()>().await;
            }
            if let Some(answer) = answer {
                responses.insert(key.clone(), answer);
                answered.insert(key);
            }
        }
        if responses.is_empty() {
            return false;
        }
        let sent = tokio::time::timeout(
            self.timeout_for(server),
            session
                .peer
                .update_task(UpdateTaskParams::new(id.to_string(), responses)),
        )
        .await;
        if !matches!(sent, Ok(Ok(()))) {
            tracing::warn!("could not answer a task of {server}: {sent:?}");
        }
        true
    }

    /// One of the server's questions during a task (or in a call's `input_required`), asked like
    /// the same question during a call; its answer as the result JSON `tasks/update` (or the
    /// call's next round) carries. `None`: nobody could answer it.
    pub(super) async fn answer(
        &self,
        server: &str,
        request: InputRequest,
        events: Option<&Events>,
        cancel: &CancellationToken,
    ) -> Option<Value> {
        match request {
            InputRequest::Elicitation(r) => {
                let ask = elicitation_of(server, &r.params);
                let answer = match events {
                    Some(tx) => {
                        ask_through(tx, cancel, |reply| CallEvent::Elicitation(ask, reply)).await
                    }
                    None => None,
                };
                serde_json::to_value(elicit_result(answer)).ok()
            }
            InputRequest::ListRoots(_) => {
                let roots = self.shared.roots.read().unwrap().clone();
                serde_json::to_value(roots_result(&roots)).ok()
            }
            InputRequest::CreateMessage(r) => {
                let request = sampling_request_of(server, &r.params);
                let tx = events?;
                match ask_through(tx, cancel, |reply| CallEvent::Sampling(request, reply)).await {
                    Some(SamplingAnswer::Reply { model, text }) => {
                        serde_json::to_value(sampling_result(model, text)).ok()
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Tells the server to stop a task (cooperative: it may still end otherwise).
    async fn cancel_task(&self, server: &str, task_id: &str) {
        let Some(session) = self
            .slot(server)
            .and_then(|s| s.snapshot().session().cloned())
        else {
            return;
        };
        let sent = tokio::time::timeout(
            self.timeout_for(server),
            session.peer.cancel_task(CancelTaskParams::new(task_id)),
        )
        .await;
        if !matches!(sent, Ok(Ok(()))) {
            tracing::warn!("could not cancel a task of {server}: {sent:?}");
        }
    }

    /// The server's session now; while it is starting (or restarting), waits for it, up to the
    /// time a start may take. `None`: it is not running (or `cancel` fired).
    pub(super) async fn session_for_task(
        &self,
        server: &str,
        cancel: &CancellationToken,
    ) -> Option<Session> {
        let deadline = tokio::time::Instant::now() + self.shared.opts.start_timeout * 2;
        loop {
            let slot = self.slot(server)?;
            let snapshot = slot.snapshot();
            if let Some(s) = snapshot.session() {
                return Some(s.clone());
            }
            if matches!(
                snapshot.phase,
                super::Phase::Disabled | super::Phase::Stopped
            ) {
                return None;
            }
            let mut rx = slot.state.clone();
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep_until(deadline) => return None,
                _ = cancel.cancelled() => return None,
            }
        }
    }
}

/// Sends a question to whoever runs the call and waits for the answer (none when they are gone
/// or the call is cancelled).
async fn ask_through<T>(
    tx: &Events,
    cancel: &CancellationToken,
    event: impl FnOnce(Reply<T>) -> CallEvent,
) -> Option<T> {
    let (reply, rx) = oneshot::channel();
    tx.send(event(Reply::new(reply))).ok()?;
    tokio::select! {
        r = rx => r.ok(),
        _ = cancel.cancelled() => None,
    }
}
