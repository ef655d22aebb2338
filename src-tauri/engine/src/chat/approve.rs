//! One decision for every tool call, whoever makes it: the model (on the call's card) or an MCP
//! App shown on a card (on the app's card, in its name). Tasks have no path of their own: a task
//! is a call that was decided here when it started, and following it later asks nothing.
//!
//! The same steps for both: the rules (`approval::need`: the tool's standing policy, whether it
//! is destructive, changed or new, allowed here, trusted read-only hints), then, when they say to
//! ask, the question, its answer recorded and applied. Everything the user decides about a tool
//! is kept under one key, `RoutedTool::key` (the server's identity and the tool's own name), never
//! the name the model is offered. What differs by who asks ([`Asker`]):
//! - where the question goes and how the answer is recorded: the model's on its card, stored with
//!   the call; an app's on the app's card (`AppApprovalRequested`), not stored (the app gets the
//!   result), noted in its server's log;
//! - what "allowed here" means: the model's "Allow in this chat" holds for that chat; an app's
//!   "Allow for this app" for that app (its page) in that chat, and not for the model's calls (an
//!   app's call is also allowed by the chat's "Allow in this chat");
//! - an app asks once per app and tool at a time: its calls that come meanwhile (the pdf viewer
//!   reads four pieces at once, a polling app asks again before the user answered) join that
//!   question, which says how many wait, and its answer decides them all ("Allow once" runs
//!   each call that waited; "Deny" refuses them); a call that comes after the answer is decided
//!   anew.
//!
//! The standing policy is read by `RoutedTool::key`; an entry an older version kept by the offered
//! name is read and moved to its key first (`settings::policy`). While an app's question waits,
//! `AppApprovalWaiting` tells its card how many calls wait; the answer goes to the server's log.
//!
//! To add a caller of tools (besides the model and an MCP App): a variant of `Asker` and its arms
//! here — where its question is shown, how the answer is recorded, what "allowed here" means for
//! it; it calls `ChatEngine::decide` after its own checks (as `app_calls.rs` does), never rules or
//! keys of its own. Tests: `tests/it/approval.rs` and `apps.rs`'s.

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::approval::{self, Action, Approval, ApprovalRequest, Decision, Need, Policy};
use super::broker::{Answer, Question};
use super::events::{ChatEvent, Emit};
use super::{ChatEngine, ChatError};
use crate::mcp::{RoutedTool, ToolKey};
use crate::settings::{migration, Candidate, Migration, SettingsPatch};

/// Whether a call may run, after the rules and perhaps the user.
pub(super) enum Approved {
    /// Run it with these arguments.
    Run(Map<String, Value>),
    /// Do not; the caller (the model, the app) reads why.
    Refused(String),
}

/// Who makes a call, and so where it is asked about.
pub(super) enum Asker {
    /// The model, on the card of tool call `id` (stored).
    Model { id: i64 },
    /// An MCP App shown on the card of call `origin`: `label`, how the user knows it
    /// (`AppCaller::label`); `page`, its page (`ui://…`).
    App {
        origin: i64,
        label: String,
        page: String,
    },
}

/// "Allowed in this chat": (conversation, tool).
pub(crate) type ChatToolKey = (i64, ToolKey);

/// "Allowed for this app": (conversation, tool, the app's page).
pub(crate) type AppToolKey = (i64, ToolKey, String);

/// The question out about one app's calls of one tool.
pub(crate) struct AppQuestion {
    /// The calls its answer decides, the one that asked included.
    waiting: usize,
    /// Its id, once the user can answer it (0 before).
    question_id: super::QuestionId,
    /// How it ended, for the calls that joined it.
    outcome: tokio::sync::watch::Sender<Joined>,
}

/// What a call that joined an app's question learns of its end.
#[derive(Clone, Debug)]
enum Joined {
    /// Not answered yet.
    Open,
    /// Allowed: run (with the call's own arguments).
    Run,
    /// Refused, and why.
    Refused(String),
    /// It ended without deciding this call (the asking call was cancelled, or the user edited
    /// its arguments): decide it anew.
    Again,
}

/// Where a call of an app stands after the rules: decided, or joined to the question out about
/// its tool, or the one to ask.
enum AppTurn {
    Decided(Need),
    Joined(tokio::sync::watch::Receiver<Joined>),
    Ask,
}

/// One call to decide: in conversation `conversation_id`, of `routed`, with `args`; `schema`,
/// the tool's `inputSchema` (arguments the user edits must fit it).
pub(super) struct Call<'a> {
    pub conversation_id: i64,
    pub routed: &'a RoutedTool,
    pub args: Map<String, Value>,
    pub schema: Option<Value>,
}

impl ChatEngine {
    /// Decides one call: the rules, then, when they say so, the question to the user where
    /// `asker` is shown, waiting for the answer (a stopped turn, call or app cancels it).
    pub(super) async fn decide(
        &self,
        asker: &Asker,
        call: Call<'_>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Approved, ChatError> {
        let key = call.routed.key();
        let need = match asker {
            Asker::Model { .. } => {
                let policy = self.standing_policy(call.routed);
                let allowed_here = self.allowed_here(asker, call.conversation_id, &key);
                approval::need(policy, call.routed, allowed_here)
            }
            Asker::App { origin, page, .. } => {
                let question = (call.conversation_id, key.clone(), page.clone());
                loop {
                    match self.app_turn(asker, &call, &question, *origin, emit) {
                        AppTurn::Decided(need) => break need,
                        AppTurn::Ask => {
                            return self.ask_for_app(asker, call, &question, emit, cancel).await
                        }
                        AppTurn::Joined(mut ended) => {
                            let joined = tokio::select! {
                                r = ended.wait_for(|j| !matches!(j, Joined::Open)) => {
                                    r.map(|j| j.clone()).unwrap_or(Joined::Again)
                                }
                                _ = cancel.cancelled() => {
                                    self.leave_app_question(&question, *origin, emit);
                                    return Ok(Approved::Refused("The call was cancelled.".into()));
                                }
                            };
                            match joined {
                                Joined::Run => return Ok(Approved::Run(call.args)),
                                Joined::Refused(why) => return Ok(Approved::Refused(why)),
                                Joined::Open | Joined::Again => continue,
                            }
                        }
                    }
                }
            }
        };
        match need {
            Need::Allow(why) => {
                if let Asker::Model { id } = asker {
                    self.store.set_tool_call_approval(*id, why, false).await?;
                }
                Ok(Approved::Run(call.args))
            }
            Need::Deny => {
                if let Asker::Model { id } = asker {
                    self.store
                        .set_tool_call_approval(*id, Approval::DeniedByPolicy, false)
                        .await?;
                }
                Ok(Approved::Refused(
                    "The user's settings do not allow this tool to run.".into(),
                ))
            }
            Need::Ask => self.ask_user(asker, call, emit, cancel).await,
        }
    }

    /// An app's call after the rules: joined to the question out about its tool (which then
    /// counts it, and the app's card hears so), decided by the rules, or the one to ask (the
    /// question is then out, counting it). One lock, so two calls never both ask.
    fn app_turn(
        &self,
        asker: &Asker,
        call: &Call<'_>,
        question: &AppToolKey,
        origin: i64,
        emit: Emit<'_>,
    ) -> AppTurn {
        let mut out = self.shared.app_questions.lock().unwrap();
        if let Some(q) = out.get_mut(question) {
            q.waiting += 1;
            if q.question_id != 0 {
                emit(ChatEvent::AppApprovalWaiting {
                    app_of: origin,
                    question_id: q.question_id,
                    waiting: q.waiting,
                    arguments: Value::Object(call.args.clone()),
                });
            }
            return AppTurn::Joined(q.outcome.subscribe());
        }
        let policy = self.standing_policy(call.routed);
        let allowed_here = self.allowed_here(asker, call.conversation_id, &question.1);
        match approval::need(policy, call.routed, allowed_here) {
            Need::Ask => {
                out.insert(
                    question.clone(),
                    AppQuestion {
                        waiting: 1,
                        question_id: 0,
                        outcome: tokio::sync::watch::channel(Joined::Open).0,
                    },
                );
                AppTurn::Ask
            }
            need => AppTurn::Decided(need),
        }
    }

    /// A call that joined an app's question was cancelled: it no longer waits.
    fn leave_app_question(&self, question: &AppToolKey, origin: i64, emit: Emit<'_>) {
        let mut out = self.shared.app_questions.lock().unwrap();
        if let Some(q) = out.get_mut(question) {
            q.waiting = q.waiting.saturating_sub(1).max(1);
            if q.question_id != 0 {
                emit(ChatEvent::AppApprovalWaiting {
                    app_of: origin,
                    question_id: q.question_id,
                    waiting: q.waiting,
                    arguments: Value::Null,
                });
            }
        }
    }

    /// Asks about an app's call (the question is out: [`Self::app_turn`]); its answer then
    /// decides the calls that joined it, and the question is no longer out.
    async fn ask_for_app(
        &self,
        asker: &Asker,
        call: Call<'_>,
        question: &AppToolKey,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Approved, ChatError> {
        let own = call.args.clone();
        let decided = self.ask_user(asker, call, emit, cancel).await;
        let joined = match &decided {
            _ if cancel.is_cancelled() => Joined::Again,
            Ok(Approved::Run(args)) if *args == own => Joined::Run,
            Ok(Approved::Refused(why)) => Joined::Refused(why.clone()),
            _ => Joined::Again,
        };
        if let Some(q) = self.shared.app_questions.lock().unwrap().remove(question) {
            q.outcome.send_replace(joined);
        }
        decided
    }

    /// The standing policy of `routed`, by its key. An entry an older version kept under a name
    /// this tool was offered or called by (`server__tool`) is read first, and moved to its key
    /// where that is safe (`settings::policy`): an old `deny` holds even when the move cannot be
    /// saved.
    fn standing_policy(&self, routed: &RoutedTool) -> Option<Policy> {
        let key = routed.key();
        let names: Vec<String> = routed
            .exposed
            .iter()
            .cloned()
            .chain([format!("{}__{}", routed.server, routed.tool)])
            .collect();
        let (kept, old) = self.settings.read(|s| {
            let old: Vec<_> = names
                .iter()
                .filter_map(|n| s.tool_policies.get(n).map(|e| (n.clone(), e.clone())))
                .collect();
            (s.policy(&key), old)
        });
        if kept.is_some() || old.is_empty() {
            return kept;
        }
        let candidates = |name: &str| -> Vec<Candidate> {
            self.tools
                .tools_once_named(name)
                .iter()
                .map(Candidate::from)
                .collect()
        };
        // what the old entries say of this tool, the strictest first
        let said = old
            .iter()
            .filter(|(name, entry)| {
                matches!(migration(entry, &candidates(name)), Migration::To(keys) if keys.contains(&key))
            })
            .map(|(_, entry)| entry.policy())
            .max_by_key(|p| match p {
                Policy::Allow => 0,
                Policy::Ask => 1,
                Policy::Deny => 2,
            });
        if let Err(e) = self.settings.migrate_old_policies(Some(&names), candidates) {
            tracing::warn!(
                "could not move the old policy of {} › {} to its key: {e}",
                routed.server,
                routed.tool
            );
        }
        self.settings.read(|s| s.policy(&key)).or(said)
    }

    /// Whether the user allowed this tool here: in this chat (any asker), or for this app in
    /// this chat (that app only).
    fn allowed_here(&self, asker: &Asker, conversation_id: i64, key: &ToolKey) -> bool {
        let in_chat = (conversation_id, key.clone());
        let for_app = |page: &String| (conversation_id, key.clone(), page.clone());
        self.shared
            .allowed_in_conversation
            .lock()
            .unwrap()
            .contains(&in_chat)
            || matches!(asker, Asker::App { page, .. }
                if self.shared.app_allowed.lock().unwrap().contains(&for_app(page)))
    }

    /// Asks the user where `asker` is shown, waiting for the answer; a stopped turn (or call,
    /// or app) cancels the question and the call.
    async fn ask_user(
        &self,
        asker: &Asker,
        call: Call<'_>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Approved, ChatError> {
        if let Asker::Model { id } = asker {
            self.store
                .set_tool_call_approval(*id, Approval::Waiting, false)
                .await?;
        }
        let request = self.approval_request(asker, &call);
        let mut asked = 0;
        let announce = |question_id| {
            asked = question_id;
            let r = request.clone();
            emit(match asker {
                Asker::Model { id } => ChatEvent::ApprovalRequested {
                    id: *id,
                    question_id,
                    name: r.name,
                    server: r.server,
                    tool: r.tool,
                    arguments: r.arguments,
                    destructive: r.destructive,
                    changed: r.changed,
                    unaccepted: r.unaccepted,
                },
                Asker::App {
                    origin,
                    label,
                    page,
                } => ChatEvent::AppApprovalRequested {
                    app_of: *origin,
                    question_id,
                    app: label.clone(),
                    server: r.server,
                    tool: r.tool,
                    arguments: r.arguments,
                    destructive: r.destructive,
                    changed: r.changed,
                    unaccepted: r.unaccepted,
                    waiting: self.app_question_out(
                        (call.conversation_id, call.routed.key(), page.clone()),
                        question_id,
                    ),
                },
            })
        };
        let answer = self
            .broker
            .ask(Question::Approval(request.clone()), announce, cancel)
            .await;
        let Some(Answer::Approval(decision)) = answer else {
            // the turn (or this call, or the app) was stopped while it waited
            return match asker {
                Asker::Model { id } => {
                    self.store
                        .set_tool_call_approval(*id, Approval::Cancelled, false)
                        .await?;
                    emit(ChatEvent::ApprovalResolved {
                        id: *id,
                        approval: Approval::Cancelled,
                        edited: false,
                        arguments: Value::Object(call.args),
                    });
                    Ok(Approved::Refused(
                        "The call was cancelled by the user.".into(),
                    ))
                }
                Asker::App { origin, .. } => {
                    emit(ChatEvent::AppApprovalResolved {
                        app_of: *origin,
                        question_id: asked,
                        approval: Approval::Cancelled,
                    });
                    Ok(Approved::Refused("The call was cancelled.".into()))
                }
            };
        };
        self.apply_decision(asker, asked, call, decision, emit)
            .await
    }

    /// The question out about an app's calls of one tool can be answered now, as `question_id`:
    /// how many calls its answer decides (1 when none is out).
    fn app_question_out(&self, question: AppToolKey, question_id: super::QuestionId) -> usize {
        let mut out = self.shared.app_questions.lock().unwrap();
        match out.get_mut(&question) {
            Some(q) => {
                q.question_id = question_id;
                q.waiting
            }
            None => 1,
        }
    }

    /// What the user is asked: the call, its arguments, whether it is destructive, why its
    /// definition is not accepted and what changed (when it is not), who asks, and the schema to
    /// edit the arguments with.
    fn approval_request(&self, asker: &Asker, call: &Call<'_>) -> ApprovalRequest {
        let routed = call.routed;
        let (id, app) = match asker {
            Asker::Model { id } => (*id, None),
            Asker::App { origin, label, .. } => (*origin, Some(label.clone())),
        };
        ApprovalRequest {
            id,
            conversation_id: call.conversation_id,
            // shown, never a key; an app-only tool has no name for the model
            name: routed
                .exposed
                .clone()
                .unwrap_or_else(|| routed.tool.clone()),
            server: routed.server.clone(),
            tool: routed.tool.clone(),
            arguments: Value::Object(call.args.clone()),
            destructive: routed.destructive,
            changed: routed
                .changed
                .then(|| self.tools.tool_change(&routed.server, &routed.tool))
                .flatten(),
            unaccepted: routed.unaccepted,
            schema: call.schema.clone().filter(Value::is_object),
            app,
        }
    }

    /// The user's answer, recorded where the question was (the model's: stored on the card, with
    /// arguments they edited; an app's: on its card and in its server's log), then applied:
    /// declined, or run (and allowed here, or always, when they said so).
    async fn apply_decision(
        &self,
        asker: &Asker,
        question_id: super::QuestionId,
        call: Call<'_>,
        decision: Decision,
        emit: Emit<'_>,
    ) -> Result<Approved, ChatError> {
        let Decision { action, arguments } = decision;
        let edited = action != Action::Deny && arguments.as_ref().is_some_and(|a| *a != call.args);
        let approval = approval::decided(action);
        let args = match arguments {
            Some(a) if edited => a,
            _ => call.args,
        };
        let routed = call.routed;
        match asker {
            Asker::Model { id } => {
                self.store
                    .set_tool_call_approval(*id, approval, edited)
                    .await?;
                if edited {
                    self.store
                        .set_tool_call_arguments(*id, &Value::Object(args.clone()))
                        .await?;
                }
                emit(ChatEvent::ApprovalResolved {
                    id: *id,
                    approval,
                    edited,
                    arguments: Value::Object(args.clone()),
                });
            }
            Asker::App {
                origin,
                label,
                page,
            } => {
                // how many calls the answer decides (those that joined the question)
                let waiting = self
                    .shared
                    .app_questions
                    .lock()
                    .unwrap()
                    .get(&(call.conversation_id, routed.key(), page.clone()))
                    .map_or(1, |q| q.waiting);
                emit(ChatEvent::AppApprovalResolved {
                    app_of: *origin,
                    question_id,
                    approval,
                });
                let said = match action {
                    Action::Deny => "declined",
                    Action::AllowOnce => "allowed once",
                    Action::AllowConversation => "allowed for this app in this chat",
                    Action::AlwaysAllow => "always allowed",
                };
                self.tools.note(
                    &routed.server,
                    format!(
                        "[switchboard] {label} › {}: the user {said} it{}",
                        routed.tool,
                        if waiting > 1 {
                            format!(" ({waiting} calls waited for the answer)")
                        } else {
                            String::new()
                        }
                    ),
                );
            }
        }
        let key = routed.key();
        // allowing a changed or new tool runs this call only: its definition is accepted by its
        // own button (`McpHost::accept_tool_definition`), never by an approval
        Ok(match action {
            Action::Deny => Approved::Refused(match asker {
                Asker::Model { .. } => "The user declined this tool call.".into(),
                Asker::App { .. } => "The user declined this call of the app.".into(),
            }),
            Action::AllowOnce => Approved::Run(args),
            Action::AllowConversation => {
                match asker {
                    Asker::Model { .. } => {
                        self.shared
                            .allowed_in_conversation
                            .lock()
                            .unwrap()
                            .insert((call.conversation_id, key));
                    }
                    Asker::App { page, .. } => {
                        self.shared.app_allowed.lock().unwrap().insert((
                            call.conversation_id,
                            key,
                            page.clone(),
                        ));
                    }
                }
                Approved::Run(args)
            }
            Action::AlwaysAllow => {
                self.remember_always_allow(routed);
                Approved::Run(args)
            }
        })
    }

    /// "Always allow": the standing policy `allow` for this tool, by its key; a failure to save
    /// it is only logged.
    fn remember_always_allow(&self, routed: &RoutedTool) {
        let patch = SettingsPatch::policy(&routed.key(), Some(Policy::Allow));
        if let Err(e) = self.settings.apply(&patch) {
            tracing::warn!(
                "could not remember \"always allow\" for {} › {}: {e}",
                routed.server,
                routed.tool
            );
        }
    }
}
