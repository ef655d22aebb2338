//! What the host says about a task (both forms, `tasks.rs` and `legacy_tasks.rs`): where it is
//! ([`TaskState`]), why it ended when it was not the tool's doing ([`TaskEnd`]), what follows it
//! again after a restart ([`TaskHandle`]), and which session it lives in ([`Home`]).
//!
//! `TaskEnd` codes: `forgotten` (the server answered `-32602` in the session the task lives in),
//! `sessionEnded` (that session is gone), `sessionNotKept`, `endedWithApp` (a stdio server),
//! `serverNotRunning`, `noAnswer`.

use std::sync::Arc;

use rmcp::model::Task;
use serde::{Deserialize, Serialize};

use super::rejoin::HttpSession;
use super::ToolOutcome;

/// Where a task is, as the card and the store keep it. The id is the server's handle for the
/// task (it may work as a bearer token): it stays in the host and the store, never in what the
/// window or the model get.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskState {
    #[serde(skip_serializing)]
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed`, `cancelled`, or `lost` (the host
    /// cannot follow it any more: `reason` says why).
    pub status: String,
    /// The server's words on where it is.
    pub message: Option<String>,
    pub poll_ms: Option<u64>,
    pub ttl_ms: Option<u64>,
    /// The 2025-11-25 form (`mcp/host/legacy_tasks.rs`), not the extension.
    #[serde(default, skip_serializing)]
    pub legacy: bool,
    /// The id in the secrets store of the HTTP session it runs in, when that session is kept
    /// (`rejoin.rs`): the next run rejoins it to follow the task.
    #[serde(default, skip_serializing)]
    pub session: Option<String>,
    /// Why it ended, when that was not the tool's doing (status `lost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<TaskEnd>,
}

/// Why a task ended without its tool's result, as a code (the window words it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskEnd {
    /// The server no longer knows the task (it restarted, or the task expired).
    Forgotten,
    /// The server ended the session the task ran in (it restarted, or let the session go; a
    /// legacy SSE session ends with its stream, so with the app).
    SessionEnded,
    /// The session the task ran in could not be read back from the secrets store.
    SessionNotKept,
    /// The server ran inside the app (stdio): the restart ended it, and its task with it.
    EndedWithApp,
    /// The server is not running (turned off, removed, or failed), so the task cannot be followed.
    ServerNotRunning,
    /// The server stopped answering about the task.
    NoAnswer,
}

impl TaskEnd {
    /// Its code, as the store and the window have it.
    pub fn code(self) -> &'static str {
        match self {
            TaskEnd::Forgotten => "forgotten",
            TaskEnd::SessionEnded => "sessionEnded",
            TaskEnd::SessionNotKept => "sessionNotKept",
            TaskEnd::EndedWithApp => "endedWithApp",
            TaskEnd::ServerNotRunning => "serverNotRunning",
            TaskEnd::NoAnswer => "noAnswer",
        }
    }

    pub fn from_code(code: &str) -> Option<TaskEnd> {
        [
            TaskEnd::Forgotten,
            TaskEnd::SessionEnded,
            TaskEnd::SessionNotKept,
            TaskEnd::EndedWithApp,
            TaskEnd::ServerNotRunning,
            TaskEnd::NoAnswer,
        ]
        .into_iter()
        .find(|r| r.code() == code)
    }

    /// What the call's result says (the card shows it; the model reads it only if the turn is
    /// still running). `detail`: the server's or the connection's words, when there are some.
    pub fn outcome_text(self, server: &str, detail: Option<&str>) -> String {
        let detail = detail.map(|d| format!(": {d}")).unwrap_or_default();
        let not_again = "It was not run again.";
        match self {
            TaskEnd::Forgotten => format!(
                "The server \"{server}\" no longer knows this task (it restarted, or the task \
                 expired){detail}. {not_again}"
            ),
            TaskEnd::SessionEnded => format!(
                "The server \"{server}\" ended the session this task ran in, so the task cannot \
                 be recovered. {not_again}"
            ),
            TaskEnd::SessionNotKept => format!(
                "The session with \"{server}\" this task ran in could not be read back from the \
                 keyring, so the task cannot be recovered. {not_again}"
            ),
            TaskEnd::EndedWithApp => format!(
                "The server \"{server}\" ran inside the app, so the restart ended it and this \
                 task. {not_again}"
            ),
            TaskEnd::ServerNotRunning => {
                format!("The server \"{server}\" is not running, so its task cannot be followed.")
            }
            TaskEnd::NoAnswer => {
                format!("The server \"{server}\" stopped answering about its task{detail}.")
            }
        }
    }
}

impl TaskState {
    pub(super) fn of(task: &Task) -> TaskState {
        TaskState {
            task_id: task.task_id.clone(),
            status: serde_json::to_value(task.status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_else(|| "working".into()),
            message: task.status_message.clone(),
            poll_ms: task.poll_interval_ms,
            ttl_ms: task.ttl_ms,
            legacy: false,
            session: None,
            reason: None,
        }
    }

    /// Still running on the server (working, or waiting for an answer).
    pub fn is_open(&self) -> bool {
        is_open(&self.status)
    }

    /// The same task, now as `now` says (what the host knows beyond the server's words kept).
    pub(super) fn updated(&self, now: TaskState) -> TaskState {
        TaskState {
            poll_ms: now.poll_ms.or(self.poll_ms),
            ttl_ms: now.ttl_ms.or(self.ttl_ms),
            legacy: self.legacy,
            session: self.session.clone(),
            ..now
        }
    }

    /// It ended for `reason` (not the tool's doing): the state that says so, and the call's
    /// outcome.
    pub fn lost(
        &mut self,
        reason: TaskEnd,
        server: &str,
        tool: &str,
        detail: Option<&str>,
    ) -> ToolOutcome {
        self.status = "lost".into();
        self.reason = Some(reason);
        // the server's own words, where it said why
        self.message = detail
            .filter(|_| reason == TaskEnd::Forgotten)
            .map(String::from);
        ToolOutcome {
            server: server.to_string(),
            tool: tool.to_string(),
            text: reason.outcome_text(server, detail),
            is_error: true,
            raw: None,
            images: vec![],
        }
    }
}

/// A task status that is not over yet.
pub fn is_open(status: &str) -> bool {
    matches!(status, "working" | "input_required")
}

/// A task an earlier run of the app started, as the store keeps it, to follow again.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskHandle {
    pub task_id: String,
    /// In the 2025-11-25 form.
    pub legacy: bool,
    /// The id in the secrets store of the HTTP session it ran in, when it was kept.
    pub session: Option<String>,
}

/// Which session a followed task lives in, as far as the host knows.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Home {
    /// The session in use when it was created, or rejoined for it (`None`: a server without
    /// sessions: stdio, or stateless HTTP).
    In(Option<String>),
    /// Not the session in use, and why: it cannot be found there.
    Away(TaskEnd),
}

impl Home {
    /// Why the server does not know the task (it answered `-32602`), `now`: its session now.
    pub(super) fn why_unknown(&self, now: Option<&HttpSession>) -> TaskEnd {
        match self {
            Home::Away(reason) => *reason,
            Home::In(Some(was)) if now.and_then(|h| h.current()).as_deref() != Some(was) => {
                TaskEnd::SessionEnded
            }
            Home::In(_) => TaskEnd::Forgotten,
        }
    }
}

/// The HTTP session a task is followed in, counted while it runs there (so the session is not
/// ended under it, `rejoin.rs`).
pub(super) struct Counted(pub Option<Arc<HttpSession>>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip_as_the_codes_the_window_words() {
        for r in [
            TaskEnd::Forgotten,
            TaskEnd::SessionEnded,
            TaskEnd::SessionNotKept,
            TaskEnd::EndedWithApp,
            TaskEnd::ServerNotRunning,
            TaskEnd::NoAnswer,
        ] {
            assert_eq!(TaskEnd::from_code(r.code()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.code());
        }
        assert_eq!(TaskEnd::from_code("nonsense"), None);
    }

    #[test]
    fn a_lost_task_keeps_the_servers_words_only_when_they_say_why() {
        let mut s = TaskState {
            task_id: "t".into(),
            status: "working".into(),
            message: Some("Gathering sources...".into()),
            poll_ms: None,
            ttl_ms: None,
            legacy: true,
            session: Some("mcp-session-1".into()),
            reason: None,
        };
        let out = s.lost(TaskEnd::SessionEnded, "everything", "research", None);
        assert!(out.is_error && out.text.contains("ended the session"));
        assert_eq!(
            (s.status.as_str(), s.reason, s.message.as_deref()),
            ("lost", Some(TaskEnd::SessionEnded), None)
        );
        let out = s.lost(
            TaskEnd::Forgotten,
            "everything",
            "research",
            Some("Task not found"),
        );
        assert!(out.text.contains("Task not found"), "{}", out.text);
        assert_eq!(s.message.as_deref(), Some("Task not found"));
        // the window gets the reason, never the task's or the session's handle
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["reason"], "forgotten");
        assert!(
            v.get("taskId").is_none() && v.get("session").is_none(),
            "{v}"
        );
    }

    #[test]
    fn an_unknown_task_is_lost_with_its_session_only_when_that_session_is_gone() {
        let now = HttpSession::new("http://x/mcp", None);
        assert_eq!(Home::In(None).why_unknown(Some(&now)), TaskEnd::Forgotten);
        assert_eq!(Home::In(None).why_unknown(None), TaskEnd::Forgotten);
        assert_eq!(
            Home::In(Some("s1".into())).why_unknown(Some(&now)),
            TaskEnd::SessionEnded,
            "the session changed since"
        );
        now.began("s1".into());
        assert_eq!(
            Home::In(Some("s1".into())).why_unknown(Some(&now)),
            TaskEnd::Forgotten,
            "the same session: the server forgot the task itself"
        );
        assert_eq!(
            Home::Away(TaskEnd::SessionNotKept).why_unknown(Some(&now)),
            TaskEnd::SessionNotKept
        );
    }
}
