//! One turn: its setup (`open.rs`: the conversation, a branch for an edit or a regeneration, the
//! conversation's settings, the history the model gets), then rounds of reply → tool calls until
//! a reply has no calls, the limit is reached, the loop guard stops it, or the user does.

use std::collections::HashSet;

use tokio_util::sync::CancellationToken;

use super::events::{ChatEvent, Emit};
use super::families::FamilyId;
use super::resolve::OfferedName;
use super::stream::{Streamed, ToolsIn};
use super::{budget, rank, text_tools, ChatEngine, ChatError, TurnRequest, TurnSummary};
use crate::llm::{ChatRequest, GenOptions, LlmError, Message, Role, ToolSpec};
use crate::store::{Notice, ToolChoice};

mod open;

/// The part of the context a round's tool results may take, together (the rest is for the
/// history, the tools and the answer).
const RESULTS_SHARE: f64 = 0.3;
/// No result is cut below this many tokens, however small the context.
const MIN_RESULT_TOKENS: usize = 200;
/// How much of the conversation's recent text decides which tools are offered.
const RECENT_MESSAGES: usize = 4;
/// The part of the context kept free for the reply when the tools offered are fitted to it.
const REPLY_SHARE: f64 = 0.25;
/// A server's prompt count is believed up to this many times the estimate.
const MAX_TOKEN_RATIO: f64 = 4.0;
/// Requests estimated smaller than this do not calibrate: a chat template's fixed tokens (its
/// preamble, a date line) would make a short prompt's ratio say little about a long one's.
const MIN_CALIBRATING_ESTIMATE: usize = 256;

/// What every round of one turn shares.
pub(super) struct Turn {
    pub conversation_id: i64,
    pub model: String,
    pub tool_choice: ToolChoice,
    /// System prompt, history, the user's message, then this turn's replies and results.
    pub messages: Vec<Message>,
    pub gen: GenOptions,
    /// How the model gets its tools.
    pub tools_in: ToolsIn,
    /// One reply without tools (after the limit).
    pub wrap_up: bool,
    /// The tools on for this conversation (what a call's name is resolved against), this round.
    pub names: Vec<OfferedName>,
    /// Tools this conversation has used: always offered.
    pub used_tools: HashSet<String>,
    /// The model's context, in tokens, when known.
    pub window: Option<usize>,
    /// The family of tool-call markup the model writes, when known (its parser goes first).
    pub family: Option<FamilyId>,
    /// The estimate (before calibration) of the last request, to calibrate by what the server
    /// says it was.
    pub last_estimate: usize,
}

impl Turn {
    /// How many tokens each of `calls` results may take for the model, when the window is known.
    pub fn result_share(&self, calls: usize) -> Option<usize> {
        let window = self.window?;
        let share = (window as f64 * RESULTS_SHARE) as usize / calls.max(1);
        Some(share.max(MIN_RESULT_TOKENS))
    }

    /// The recent text of the conversation (what decides which tools are offered).
    fn recent_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .filter(|m| matches!(m.role, Role::User | Role::Assistant))
            .take(RECENT_MESSAGES)
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl ChatEngine {
    /// Runs one user turn to its end. LLM and tool failures are reported as events (and in the
    /// summary), not as errors; only the store failing is an error.
    pub async fn run_turn(
        &self,
        req: TurnRequest,
        emit: Emit<'_>,
        cancel: CancellationToken,
    ) -> Result<TurnSummary, ChatError> {
        // a task's late result goes in as the tool's result, not as the user's words
        let late = match req.late_result {
            Some(id) => Some(self.late_result_messages(req.conversation_id, id).await?),
            None => None,
        };
        let mut turn = self.open_turn(&req, late, emit).await?;
        let summary = self.rounds(&mut turn, emit, &cancel).await?;
        emit(ChatEvent::Done {
            conversation_id: turn.conversation_id,
            stopped: summary.stopped,
            limit_reached: summary.limit_reached,
        });
        Ok(summary)
    }

    /// Rounds of reply → tool calls.
    async fn rounds(
        &self,
        turn: &mut Turn,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, ChatError> {
        let mut summary = TurnSummary {
            conversation_id: turn.conversation_id,
            stopped: false,
            limit_reached: false,
            llm_error: None,
            repeated_call: None,
        };
        let max = if turn.wrap_up {
            1
        } else {
            self.options.max_iterations.max(1)
        };
        // the calls of the previous round, to catch a model that repeats itself
        let mut previous_round = Vec::new();
        for iteration in 1..=max {
            let request = self.request(turn, emit);
            let reading = super::stream::Reading {
                names: &turn.names,
                tools_in: turn.tools_in,
                family: turn.family,
            };
            let (reply, message_id) = match self
                .stream_reply(turn.conversation_id, &request, reading, emit, cancel)
                .await?
            {
                Streamed::Reply { reply, message_id } => {
                    if let Some(real) = reply.prompt_tokens {
                        self.calibrate(&turn.model, real, turn.last_estimate);
                    }
                    (reply, message_id)
                }
                Streamed::Failed(e) => {
                    summary.llm_error = Some(e.to_string());
                    let url = matches!(e, LlmError::Unreachable { .. })
                        .then(|| self.llm.base_url().to_string());
                    emit(ChatEvent::Error {
                        message: e.to_string(),
                        kind: e.kind(),
                        url,
                    });
                    break;
                }
            };
            if reply.stopped {
                summary.stopped = true;
                break;
            }
            let mut assistant = Message::new(Role::Assistant, reply.content.clone());
            assistant.thinking = (!reply.thinking.is_empty()).then(|| reply.thinking.clone());
            assistant.tool_calls = reply.tool_calls.clone();
            turn.messages.push(assistant);
            if reply.tool_calls.is_empty() {
                break;
            }
            let round = self
                .run_round(
                    turn,
                    message_id,
                    &reply.tool_calls,
                    &previous_round,
                    emit,
                    cancel,
                )
                .await?;
            turn.used_tools
                .extend(reply.tool_calls.iter().map(|c| c.name.clone()));
            turn.messages.extend(round.messages);
            summary.repeated_call = round.repeated;
            previous_round = round.keys;
            if cancel.is_cancelled() {
                summary.stopped = true;
                break;
            }
            if let Some(tool) = summary.repeated_call.clone() {
                self.notice(turn.conversation_id, Notice::RepeatedCall { tool }, emit)
                    .await?;
                break;
            }
            if iteration == max && !turn.wrap_up {
                summary.limit_reached = true;
                self.notice(
                    turn.conversation_id,
                    Notice::RoundLimit { rounds: max },
                    emit,
                )
                .await?;
            }
        }
        Ok(summary)
    }

    /// The request for the next reply: the turn's messages and the tools on offer (with many
    /// tools on, the most relevant ones and those used already; when the model's context is
    /// known, no more of them than fit in it with room for the reply), or (text mode) the tools
    /// described in the system prompt and calls and results as text. Says how big it is.
    fn request(&self, turn: &mut Turn, emit: Emit<'_>) -> ChatRequest {
        let on = self.tools_on(&turn.tool_choice);
        turn.names = on
            .iter()
            .map(|t| match self.tools.route(&t.name) {
                Some(r) => OfferedName::new(&t.name, &r.server, &r.tool),
                None => OfferedName::from_exposed(&t.name),
            })
            .collect();
        let tools_on = on.len();
        let rank = self.options.aids.rank;
        // the tools offered, and which of them may be let go, most relevant first (never one
        // the conversation used)
        let (mut tools, mut droppable): (Vec<ToolSpec>, Vec<String>) = if turn.wrap_up {
            (vec![], vec![])
        } else if rank && (on.len() > self.options.max_offered_tools || turn.window.is_some()) {
            // ranked only when some may not be offered: more than the cap, or a context to fit
            let limit = self.options.max_offered_tools.min(on.len());
            let best = rank::rank_tools(&turn.recent_text(), &on, &turn.used_tools, limit);
            // best first: the last is let go first
            let droppable = best
                .iter()
                .map(|&i| on[i].name.clone())
                .filter(|n| !turn.used_tools.contains(n))
                .collect();
            let mut keep = best;
            // in the order the servers list them, as when all are offered
            keep.sort_unstable();
            (keep.into_iter().map(|i| on[i].clone()).collect(), droppable)
        } else {
            (on, vec![])
        };
        let ratio = self.token_ratio(&turn.model);
        let room = turn.window.map(|w| w - (w as f64 * REPLY_SHARE) as usize);
        // natively, only the tools change from one pass to the next: the messages are counted
        // once (in text mode the tools are part of the system message, so it is shaped each pass)
        let messages_alone =
            (turn.tools_in == ToolsIn::Native).then(|| budget::estimate_messages(&turn.messages));
        loop {
            let (shaped, estimate) = match messages_alone {
                Some(m) => (None, budget::estimate_with(m, &tools)),
                None => {
                    let s = self.shaped(turn, &tools);
                    let estimate = budget::estimate_request(&s.0, &s.1);
                    (Some(s), estimate)
                }
            };
            let used = (estimate as f64 * ratio).ceil() as usize;
            let too_big = room.is_some_and(|r| used > r);
            if too_big && tools.len() > 1 {
                if let Some(name) = droppable.pop() {
                    tools.retain(|t| t.name != name);
                    continue;
                }
            }
            let (messages, offered, options) = shaped.unwrap_or_else(|| self.shaped(turn, &tools));
            turn.last_estimate = estimate;
            emit(ChatEvent::Context {
                used,
                limit: turn.window,
                tools_offered: tools.len(),
                tools_on,
            });
            return ChatRequest {
                model: turn.model.clone(),
                messages,
                tools: offered,
                options,
            };
        }
    }

    /// The messages, tools and options of a request offering `tools`: as they are, or (text
    /// mode) the tools described in the system prompt, calls and results as text.
    fn shaped(&self, turn: &Turn, tools: &[ToolSpec]) -> (Vec<Message>, Vec<ToolSpec>, GenOptions) {
        let mut options = turn.gen.clone();
        if turn.tools_in == ToolsIn::Native {
            return (turn.messages.clone(), tools.to_vec(), options);
        }
        let mut m = text_tools::history_as_text(&turn.messages);
        if turn.tools_in == ToolsIn::Json && !tools.is_empty() {
            options.format = Some(text_tools::reply_schema(tools));
        }
        if !tools.is_empty() {
            let section = text_tools::describe_tools(tools, turn.tools_in == ToolsIn::Json);
            match m.first_mut() {
                Some(first) if first.role == Role::System => {
                    first.content = format!("{}\n\n{section}", first.content)
                }
                _ => m.insert(0, Message::new(Role::System, section)),
            }
        }
        (m, vec![], options)
    }

    /// Where a model's calibration is kept: its server and its name.
    fn ratio_key(&self, model: &str) -> String {
        format!("{} {model}", self.llm.base_url())
    }

    /// How many times bigger than estimated this model's requests turned out (1 until its server
    /// said otherwise).
    fn token_ratio(&self, model: &str) -> f64 {
        self.shared
            .token_ratio
            .lock()
            .unwrap()
            .get(&self.ratio_key(model))
            .copied()
            .unwrap_or(1.0)
    }

    /// The server said the last request's prompt was `real` tokens, where it was estimated at
    /// `estimated`: later estimates for this model are scaled by the latest such ratio. A count
    /// below the estimate is not taken (a server that had part of the prompt cached counts less
    /// than the prompt), nor one for a short prompt (see [`MIN_CALIBRATING_ESTIMATE`]).
    pub(super) fn calibrate(&self, model: &str, real: usize, estimated: usize) {
        if estimated < MIN_CALIBRATING_ESTIMATE || real <= estimated {
            return;
        }
        let ratio = (real as f64 / estimated as f64).min(MAX_TOKEN_RATIO);
        self.shared
            .token_ratio
            .lock()
            .unwrap()
            .insert(self.ratio_key(model), ratio);
    }

    /// A note from Switchboard in the conversation: stored (never sent to the model) and shown.
    async fn notice(
        &self,
        conversation_id: i64,
        notice: Notice,
        emit: Emit<'_>,
    ) -> Result<(), ChatError> {
        let message_id = self.store.append_notice(conversation_id, &notice).await?;
        emit(ChatEvent::Notice { message_id, notice });
        Ok(())
    }

    /// The tools on for a conversation with `choice` (of the running servers).
    fn tools_on(&self, choice: &ToolChoice) -> Vec<ToolSpec> {
        self.tools
            .tool_specs()
            .into_iter()
            .filter(|t| {
                self.tools
                    .route(&t.name)
                    .is_none_or(|r| choice.allows(&r.server, &r.tool))
            })
            .collect()
    }
}
