//! The tool calls of one reply (a round): each gets its card, and they run together. A call that
//! leads nowhere (an unknown name, a tool turned off) or whose arguments do not fit the tool's
//! schema even repaired is not asked about and not sent: the model reads why. Calls that need
//! approval are asked about together, on their cards; those allowed run in parallel (a few at a
//! time), and their results go back to the model in the order of the calls.
//!
//! Independent calls run together; calls that may depend on each other keep their order: on a
//! server where any of the round's calls may change something (not annotated read-only), that
//! server's calls run one after another, as the model listed them (write, then read).
//!
//! A call to a server that waits for its sign-in gets `SignInNeeded`: the model is told so and the
//! window reminded. At most `PARALLEL_CALLS` (4) run at a time; results are cut to the model's
//! share of its context. The checks before a call is asked about are in `tool_call/check.rs`, its
//! approval in `approve.rs`, what happens during it (progress, a task's states stored with the call
//! as they come, the server's questions) in `tool_call/server_requests.rs`.

use std::time::Instant;

use serde_json::Value;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

mod check;
mod server_requests;

use check::{Checked, Ready};

use super::approval::Approval;
use super::approve::{Approved, Asker, Call};
use super::budget;
use super::events::{ChatEvent, Emit};
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

/// A server's name and the name of one of its tools, as a card shows them.
type ServerTool = (String, String);

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

/// The cards of a round, each marked when it repeats a call of the previous round; the keys of
/// its calls and the name of a repeated one (see [`RoundResult`]).
struct Opened {
    cards: Vec<(Card, bool)>,
    keys: Vec<(String, Value)>,
    repeated: Option<String>,
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
        let Opened {
            cards,
            keys,
            repeated,
        } = self
            .open_cards(turn, message_id, calls, previous, emit)
            .await?;
        let share = turn.result_share(calls.len());
        let ended = self.run_together(turn, &cards, emit, cancel).await;
        let messages = self.store_results(turn, &cards, ended, share).await?;
        Ok(RoundResult {
            messages,
            keys,
            repeated,
        })
    }

    /// Every call gets its card first, in order: all stored (running) in one transaction, then
    /// shown; a call repeated from the previous round is marked (the loop guard).
    async fn open_cards(
        &self,
        turn: &Turn,
        message_id: i64,
        calls: &[ToolCall],
        previous: &[(String, Value)],
        emit: Emit<'_>,
    ) -> Result<Opened, ChatError> {
        let routes: Vec<Option<RoutedTool>> =
            calls.iter().map(|c| self.tools.route(&c.name)).collect();
        let (waiting, shown) = self.what_cards_call(calls, &routes);
        let started = calls
            .iter()
            .zip(&shown)
            .map(|(call, (server, tool))| (call.clone(), server.clone(), tool.clone()))
            .collect();
        let ids = self
            .store
            .start_tool_calls(turn.conversation_id, message_id, started)
            .await?;
        let mut opened = Opened {
            cards: Vec::with_capacity(calls.len()),
            keys: Vec::with_capacity(calls.len()),
            repeated: None,
        };
        for ((((call, routed), id), (server, tool)), waiting) in
            calls.iter().zip(routes).zip(ids).zip(shown).zip(waiting)
        {
            let key = (call.name.clone(), normalized_arguments(&call.arguments));
            let is_repeat = previous.contains(&key);
            opened.keys.push(key);
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
                opened.repeated = Some(call.name.clone());
            }
            opened.cards.push((
                Card {
                    id,
                    call: call.clone(),
                    routed,
                    waiting_for: waiting.map(|(server, _)| server),
                },
                is_repeat,
            ));
        }
        Ok(opened)
    }

    /// What each card says it calls: the tool it leads to, else (a server waiting for its
    /// sign-in) the server and tool its name says, else nothing known. The waiting server and
    /// tool of each call, and the (server, tool) each card shows.
    fn what_cards_call(
        &self,
        calls: &[ToolCall],
        routes: &[Option<RoutedTool>],
    ) -> (Vec<Option<ServerTool>>, Vec<ServerTool>) {
        let waiting: Vec<Option<ServerTool>> = calls
            .iter()
            .zip(routes)
            .map(|(call, routed)| match routed {
                Some(_) => None,
                None => self.waiting_server(&call.name),
            })
            .collect();
        let shown = routes
            .iter()
            .zip(&waiting)
            .map(|(routed, waiting)| match (routed, waiting) {
                (Some(r), _) => (r.server.clone(), r.tool.clone()),
                (None, Some(w)) => w.clone(),
                (None, None) => Default::default(),
            })
            .collect();
        (waiting, shown)
    }

    /// The round's calls run together: questions asked at once, at most a few calls at a time,
    /// and a call that may depend on an earlier one waits for it; a repeated call is refused.
    /// How each ended, in the order of the calls.
    async fn run_together(
        &self,
        turn: &Turn,
        cards: &[(Card, bool)],
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Vec<Result<Ended, ChatError>> {
        let slots = Semaphore::new(PARALLEL_CALLS);
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
                    // its turn: after the call it may depend on, in one of the few slots
                    let its_turn = async {
                        if let Some(before) = after {
                            let mut rx = done.subscribe();
                            let _ = rx.wait_for(|_| finished.lock().unwrap()[before]).await;
                        }
                        slots
                            .acquire()
                            .await
                            .expect("the semaphore is never closed")
                    };
                    self.run_call(turn, card, its_turn, emit, cancel).await
                };
                finished.lock().unwrap()[i] = true;
                done.send_modify(|n| *n += 1);
                ended
            }
        });
        futures::future::join_all(runs).await
    }

    /// The results go to the model, and into the store (one transaction), in the order of the
    /// calls: the model gets its `share` of the context, the card keeps the whole result.
    async fn store_results(
        &self,
        turn: &Turn,
        cards: &[(Card, bool)],
        ended: Vec<Result<Ended, ChatError>>,
        share: Option<usize>,
    ) -> Result<Vec<Message>, ChatError> {
        let mut messages = Vec::with_capacity(cards.len());
        let mut finished = Vec::with_capacity(cards.len());
        for ((card, _), ended) in cards.iter().zip(ended) {
            let Ended {
                outcome,
                duration_ms,
            } = ended?;
            let mut msg = message_for_model(card, &outcome, share);
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
        Ok(messages)
    }

    /// One call: the checks (where it leads, whether it is on, its arguments), the approval,
    /// then the run with its progress and the server's questions. Its card hears the end at once.
    /// `its_turn` is over when the calls this one may depend on have ended and a slot is free.
    async fn run_call<'s>(
        &self,
        turn: &Turn,
        card: &Card,
        its_turn: impl std::future::Future<Output = SemaphorePermit<'s>>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Ended, ChatError> {
        let ready = match self.check_call(turn, card, emit).await? {
            Checked::Ready(ready) => ready,
            Checked::Refused(ended) => return Ok(ended),
        };
        let id = card.id;
        // this call alone can be cancelled (the card's Stop); stopping the turn cancels it too
        let call_cancel = cancel.child_token();
        self.shared
            .running_calls
            .lock()
            .unwrap()
            .insert(id, call_cancel.clone());
        let ended = self
            .approve_and_run(turn, card, ready, its_turn, emit, &call_cancel)
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

    /// A checked call asked about (the approval rules, perhaps the user), then, in its turn, run
    /// with its progress and the server's questions.
    async fn approve_and_run<'s>(
        &self,
        turn: &Turn,
        card: &Card,
        ready: Ready<'_>,
        its_turn: impl std::future::Future<Output = SemaphorePermit<'s>>,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Ended, ChatError> {
        let Ready {
            routed,
            args,
            schema,
        } = ready;
        let (id, call) = (card.id, &card.call);
        let asked = Call {
            conversation_id: turn.conversation_id,
            routed,
            args,
            schema: Some(schema),
        };
        let args = match self
            .decide(&Asker::Model { id }, asked, emit, cancel)
            .await?
        {
            Approved::Run(args) => args,
            Approved::Refused(why) => return Ok(self.error_outcome(card, why, 0)),
        };
        let _slot = its_turn.await;
        if cancel.is_cancelled() {
            return Ok(self.error_outcome(card, "The call was cancelled by the user.".into(), 0));
        }
        let started = Instant::now();
        let outcome = self
            .run_with_events(turn, id, &call.name, args, emit, cancel)
            .await;
        Ok(Ended {
            outcome,
            duration_ms: started.elapsed().as_millis() as i64,
        })
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

/// A call's result as the model reads it: an error said to be one, cut to its `share` of the
/// context.
fn message_for_model(card: &Card, outcome: &ToolOutcome, share: Option<usize>) -> Message {
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
    msg
}

#[cfg(test)]
mod tests;
