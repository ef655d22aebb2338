//! The tool calls of one reply (a round): each gets its card, and they run together. A call that
//! leads nowhere (an unknown name, a tool turned off) or whose arguments do not fit the tool's
//! schema even repaired is not asked about and not sent: the model reads why. Calls that need
//! approval are asked about together, on their cards; those allowed run in parallel (a few at a
//! time), and their results go back to the model in the order of the calls.
//!
//! Independent calls run together; calls that may depend on each other keep their order: on a
//! server where any of the round's calls may change something (not annotated read-only), that
//! server's calls run one after another, as the model listed them (write, then read).

use std::time::Instant;

use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

mod approve;
mod server_requests;

use super::approval::Approval;
use super::budget;
use super::events::{ChatEvent, Emit};
use super::repair;
use super::resolve;
use super::turn::Turn;
use super::{normalized_arguments, ChatEngine, ChatError};
use crate::llm::{Message, Role, ToolCall};
use crate::mcp::{RoutedTool, ToolOutcome};
use crate::store::FinishedCall;

/// At most this many calls of one round run at the same time.
pub const PARALLEL_CALLS: usize = 4;

/// What the model reads when the loop guard keeps a call from running.
const REPEATED: &str = "Not run: the same tool with the same arguments was called in the \
    previous round; its result is above. Switchboard stopped the turn here.";

/// One call of the round, from its card on.
struct Card {
    id: i64,
    call: ToolCall,
    routed: Option<RoutedTool>,
    /// Not routed, but a tool of this server, which waits for a sign-in.
    waiting_for: Option<String>,
}

/// How a call ended: what the card shows (`outcome.text`, whole) and how long it ran.
struct Ended {
    outcome: ToolOutcome,
    duration_ms: i64,
}

/// Whether a call may run, after the rules and perhaps the user.
pub(super) enum Approved {
    /// Run it with these arguments.
    Run(Map<String, Value>),
    /// Do not; the model reads why.
    Refused(String),
}

/// What one round did: the `tool` messages for the model (in the order of the calls) and the
/// loop guard's verdict.
pub(super) struct RoundResult {
    pub messages: Vec<Message>,
    /// The keys (name, arguments) of this round's calls, for the next round's loop guard.
    pub keys: Vec<(String, Value)>,
    /// A call repeated from the previous round (not run; the turn stops).
    pub repeated: Option<String>,
}

/// The arguments as the model sent them, without repair (only to measure what repair buys): an
/// object, or a JSON string holding one; anything else is refused as it is.
fn as_sent(arguments: &Value) -> Result<Map<String, Value>, Vec<repair::FieldProblem>> {
    let problem = |got: String| {
        vec![repair::FieldProblem {
            field: String::new(),
            wants: "a JSON object".into(),
            got,
        }]
    };
    match arguments {
        Value::Object(m) => Ok(m.clone()),
        Value::Null => Ok(Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(problem(s.clone())),
        },
        other => Err(problem(other.to_string())),
    }
}

/// For each call, the earlier call it must wait for, if any: on a server where some of the
/// round's calls are not annotated read-only (by a server whose word is believed), each of its
/// calls waits for its previous one.
fn in_order<'a>(routes: impl Iterator<Item = Option<&'a RoutedTool>>) -> Vec<Option<usize>> {
    let routes: Vec<Option<&RoutedTool>> = routes.collect();
    let may_change: std::collections::HashSet<&str> = routes
        .iter()
        .flatten()
        .filter(|r| !(r.read_only && r.trusted))
        .map(|r| r.server.as_str())
        .collect();
    let mut last: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    routes
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let server = r
                .filter(|r| may_change.contains(r.server.as_str()))?
                .server
                .as_str();
            last.insert(server, i)
        })
        .collect()
}

impl ChatEngine {
    /// Runs the calls of one reply (message `message_id`); `previous` are the previous round's
    /// calls, for the loop guard.
    pub(super) async fn run_round(
        &self,
        turn: &Turn,
        message_id: i64,
        calls: &[ToolCall],
        previous: &[(String, Value)],
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<RoundResult, ChatError> {
        // every call gets its card first, in order
        let mut cards = Vec::with_capacity(calls.len());
        let mut keys = Vec::with_capacity(calls.len());
        let mut repeated = None;
        // every call is stored (running) in one transaction, then shown
        let routes: Vec<Option<RoutedTool>> =
            calls.iter().map(|c| self.tools.route(&c.name)).collect();
        // what each card says it calls: the tool it leads to, else (a server waiting for its
        // sign-in) the server and tool its name says, else nothing known
        let waiting: Vec<Option<(String, String)>> = calls
            .iter()
            .zip(&routes)
            .map(|(call, routed)| match routed {
                Some(_) => None,
                None => self.waiting_server(&call.name),
            })
            .collect();
        let shown: Vec<(String, String)> = routes
            .iter()
            .zip(&waiting)
            .map(|(routed, waiting)| match (routed, waiting) {
                (Some(r), _) => (r.server.clone(), r.tool.clone()),
                (None, Some(w)) => w.clone(),
                (None, None) => Default::default(),
            })
            .collect();
        let started = calls
            .iter()
            .zip(&shown)
            .map(|(call, (server, tool))| (call.clone(), server.clone(), tool.clone()))
            .collect();
        let ids = self
            .store
            .start_tool_calls(turn.conversation_id, message_id, started)
            .await?;
        for ((((call, routed), id), (server, tool)), waiting) in
            calls.iter().zip(routes).zip(ids).zip(shown).zip(waiting)
        {
            let key = (call.name.clone(), normalized_arguments(&call.arguments));
            let is_repeat = previous.contains(&key);
            keys.push(key);
            emit(ChatEvent::ToolCallStarted {
                id,
                message_id,
                name: call.name.clone(),
                written: call.written.clone(),
                server,
                tool,
                arguments: call.arguments.clone(),
            });
            if is_repeat {
                repeated = Some(call.name.clone());
            }
            cards.push((
                Card {
                    id,
                    call: call.clone(),
                    routed,
                    waiting_for: waiting.map(|(server, _)| server),
                },
                is_repeat,
            ));
        }
        // then they run together: questions asked at once, at most a few calls at a time, and a
        // call that may depend on an earlier one waits for it
        let slots = Semaphore::new(PARALLEL_CALLS);
        let share = turn.result_share(calls.len());
        let after = in_order(cards.iter().map(|(c, _)| c.routed.as_ref()));
        let (done, _) = tokio::sync::watch::channel(0usize);
        let finished = std::sync::Mutex::new(vec![false; cards.len()]);
        let runs = cards.iter().enumerate().map(|(i, (card, is_repeat))| {
            let (done, finished, after, slots) = (&done, &finished, after[i], &slots);
            async move {
                let ended = if *is_repeat {
                    match self.refuse(card, Approval::Repeated, REPEATED, emit).await {
                        Ok(()) => Ok(self.error_outcome(card, REPEATED.into(), 0)),
                        Err(e) => Err(e),
                    }
                } else {
                    let wait = async {
                        if let Some(before) = after {
                            let mut rx = done.subscribe();
                            let _ = rx.wait_for(|_| finished.lock().unwrap()[before]).await;
                        }
                    };
                    self.run_call(turn, card, slots, wait, emit, cancel).await
                };
                finished.lock().unwrap()[i] = true;
                done.send_modify(|n| *n += 1);
                ended
            }
        });
        let ended: Vec<Result<Ended, ChatError>> = futures::future::join_all(runs).await;
        // results go to the model, and into the store (one transaction), in the order of the calls
        let mut messages = Vec::with_capacity(cards.len());
        let mut finished = Vec::with_capacity(cards.len());
        for ((card, _), ended) in cards.iter().zip(ended) {
            let Ended {
                outcome,
                duration_ms,
            } = ended?;
            let text = if outcome.is_error && !outcome.text.starts_with("Error") {
                format!("Error: {}", outcome.text)
            } else {
                outcome.text.clone()
            };
            // the model gets its share of the context; the card keeps the whole result
            let content = match share {
                Some(tokens) => budget::cut_for_model(&text, tokens).0,
                None => text,
            };
            let mut msg = Message::new(Role::Tool, content);
            msg.tool_name = Some(card.call.name.clone());
            msg.tool_call_id = card.call.id.clone();
            // its images are kept with the result; the model gets them if it sees images
            let (images, notes) = self
                .server_images(&card.call.name, &outcome.images, true)
                .await;
            for note in notes {
                msg.content.push_str(&format!("\n{note}"));
            }
            msg.images = images;
            finished.push(FinishedCall {
                id: card.id,
                tool_message: msg.clone(),
                result: outcome.text,
                result_raw: outcome.raw,
                is_error: outcome.is_error,
                duration_ms,
            });
            super::vision::fit(std::slice::from_mut(&mut msg), turn.vision);
            messages.push(msg);
        }
        self.store
            .finish_tool_calls(turn.conversation_id, finished)
            .await?;
        Ok(RoundResult {
            messages,
            keys,
            repeated,
        })
    }

    /// One call: the checks (where it leads, whether it is on, its arguments), the approval,
    /// then the run with its progress and the server's questions. Its card hears the end at once.
    /// `wait` is over when the calls this one may depend on have ended.
    async fn run_call(
        &self,
        turn: &Turn,
        card: &Card,
        slots: &Semaphore,
        wait: impl std::future::Future<Output = ()>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Ended, ChatError> {
        let Card {
            id,
            call,
            routed,
            waiting_for,
        } = card;
        let id = *id;
        // a name that fits no tool (or several): the model hears the closest names; a tool of a
        // server that waits for a sign-in: the model hears that, and the window offers it
        let Some(routed) = routed else {
            if let Some(server) = waiting_for {
                let why = format!(
                    "The tools of the server \"{server}\" are unavailable until the user signs in to it; Switchboard offers them a Sign in button. Tell the user, and do not call its tools until they have."
                );
                emit(ChatEvent::SignInNeeded {
                    server: server.clone(),
                });
                self.refuse(card, Approval::SignInNeeded, &why, emit)
                    .await?;
                return Ok(self.error_outcome(card, why, 0));
            }
            let why =
                resolve::message_for_model(&call.name, &resolve::resolve(&call.name, &turn.names))
                    .unwrap_or_else(|| format!("There is no tool named \"{}\".", call.name));
            self.refuse(card, Approval::UnknownTool, &why, emit).await?;
            return Ok(self.error_outcome(card, why, 0));
        };
        if !turn.tool_choice.allows(&routed.server, &routed.tool) {
            let why = format!(
                "The tool \"{}\" is turned off for this conversation; use only the tools you were given.",
                call.name
            );
            self.refuse(card, Approval::TurnedOff, &why, emit).await?;
            return Ok(self.error_outcome(card, why, 0));
        }
        // arguments as the schema wants them, repaired where that is exact; else the model hears
        // what is wrong with each, and nobody is asked about a call that could not run
        let schema = self.tools.tool_schema(&call.name).unwrap_or(Value::Null);
        let repaired = if self.options.aids.repair {
            repair::repair(&call.arguments, &schema)
        } else {
            as_sent(&call.arguments).map(|arguments| repair::Repaired {
                arguments,
                repairs: vec![],
            })
        };
        let args = match repaired {
            Ok(r) => {
                if !r.repairs.is_empty() {
                    self.store
                        .set_tool_call_arguments(id, &Value::Object(r.arguments.clone()))
                        .await?;
                    emit(ChatEvent::ToolCallArguments {
                        id,
                        arguments: Value::Object(r.arguments.clone()),
                        repairs: r.repairs,
                    });
                }
                r.arguments
            }
            Err(problems) => {
                let why = repair::problems_for_model(&call.name, &problems);
                self.refuse(card, Approval::InvalidArguments, &why, emit)
                    .await?;
                return Ok(self.error_outcome(card, why, 0));
            }
        };
        // this call alone can be cancelled (the card's Stop); stopping the turn cancels it too
        let call_cancel = cancel.child_token();
        self.shared
            .running_calls
            .lock()
            .unwrap()
            .insert(id, call_cancel.clone());
        let cancel = &call_cancel;
        let ended = async {
            let args = match self
                .approve(
                    turn.conversation_id,
                    id,
                    call,
                    routed,
                    args,
                    &schema,
                    emit,
                    cancel,
                )
                .await?
            {
                Approved::Run(args) => args,
                Approved::Refused(why) => return Ok(self.error_outcome(card, why, 0)),
            };
            wait.await;
            let _slot = slots
                .acquire()
                .await
                .expect("the semaphore is never closed");
            if cancel.is_cancelled() {
                return Ok(self.error_outcome(
                    card,
                    "The call was cancelled by the user.".into(),
                    0,
                ));
            }
            let started = Instant::now();
            let outcome = self
                .run_with_events(turn, id, &call.name, args, emit, cancel)
                .await;
            Ok::<_, ChatError>(Ended {
                outcome,
                duration_ms: started.elapsed().as_millis() as i64,
            })
        }
        .await;
        self.shared.running_calls.lock().unwrap().remove(&id);
        let ended = ended?;
        emit(ChatEvent::ToolCallFinished {
            id,
            result: ended.outcome.text.clone(),
            is_error: ended.outcome.is_error,
            duration_ms: ended.duration_ms,
            raw: ended.outcome.raw.clone(),
        });
        Ok(ended)
    }

    /// The server waiting for a sign-in whose tool `name` seems to be, and that tool: the name
    /// starts with the server's (any letter case), then a separator models use (`__`, `.`, `/`,
    /// `:`, `_`), then the tool. The longest such server wins, and none when a running server's
    /// name fits at least as long (`notes_pro__x` is not `notes`'s).
    fn waiting_server(&self, name: &str) -> Option<(String, String)> {
        let name = resolve::without_prefix(name.trim());
        let prefix_of = |server: &str| -> Option<String> {
            let (head, rest) = (name.get(..server.len())?, name.get(server.len()..)?);
            if !head.eq_ignore_ascii_case(server) {
                return None;
            }
            let tool = ["__", ".", "/", ":", "_"]
                .iter()
                .find_map(|sep| rest.strip_prefix(sep))?;
            (!tool.is_empty()).then(|| tool.to_string())
        };
        let (server, tool) = self
            .tools
            .waiting_for_sign_in()
            .into_iter()
            .filter_map(|s| prefix_of(&s).map(|t| (s, t)))
            .max_by_key(|(s, _)| s.len())?;
        let running_fits = self
            .tools
            .tool_specs()
            .iter()
            .filter_map(|t| self.tools.route(&t.name))
            .any(|r| r.server.len() >= server.len() && prefix_of(&r.server).is_some());
        (!running_fits).then_some((server, tool))
    }

    /// A call that does not run: its card says why (`approval`), and so does its result.
    async fn refuse(
        &self,
        card: &Card,
        approval: Approval,
        why: &str,
        emit: Emit<'_>,
    ) -> Result<(), ChatError> {
        self.store
            .set_tool_call_approval(card.id, approval, false)
            .await?;
        emit(ChatEvent::ApprovalResolved {
            id: card.id,
            approval,
            edited: false,
            arguments: card.call.arguments.clone(),
        });
        emit(ChatEvent::ToolCallFinished {
            id: card.id,
            result: why.into(),
            is_error: true,
            duration_ms: 0,
            raw: None,
        });
        Ok(())
    }

    fn error_outcome(&self, card: &Card, text: String, duration_ms: i64) -> Ended {
        let (server, tool) = card
            .routed
            .as_ref()
            .map(|r| (r.server.clone(), r.tool.clone()))
            .unwrap_or_default();
        Ended {
            outcome: ToolOutcome {
                server,
                tool,
                text,
                is_error: true,
                raw: None,
                images: vec![],
            },
            duration_ms,
        }
    }
}

#[cfg(test)]
mod tests;
