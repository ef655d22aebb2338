//! One turn: its setup (`open.rs`: the conversation, a branch for an edit or a regeneration, the
//! conversation's settings, the history the model gets), then rounds of reply → tool calls until
//! a reply has no calls, the limit is reached, the loop guard stops it, or the user does. Each
//! request is planned to fit the model's context (`chat::context`): older results as stubs, then
//! older turns summarised (`compact.rs` writes the summaries), left out, or the user asked.

use std::collections::HashSet;

use tokio_util::sync::CancellationToken;

use super::context::{self, Meta, Outcome, SummaryIn};
use super::events::{ChatEvent, Compacted, Emit};
use super::families::FamilyId;
use super::resolve::OfferedName;
use super::stream::{Streamed, ToolsIn};
use super::{budget, rank, text_tools, ChatEngine, ChatError, TurnRequest, TurnSummary};
use crate::llm::{ChatRequest, GenOptions, LlmError, Message, Role, ToolSpec};
use crate::store::{ContextPolicy, EarlierSummary, Notice, ToolChoice};

mod compact;
mod open;

pub(super) use compact::Compactions;

/// The part of the context a round's tool results may take, together (the rest is for the
/// history, the tools and the answer).
const RESULTS_SHARE: f64 = 0.3;
/// No result is cut below this many tokens, however small the context.
const MIN_RESULT_TOKENS: usize = 200;
/// How much of the conversation's recent text decides which tools are offered.
const RECENT_MESSAGES: usize = 4;
/// While the history has to be compacted to fit, the tools offered take at most this part of the
/// room: beyond it, the least relevant are let go before anything the user said is compacted.
const TOOLS_SHARE: f64 = 0.35;
/// A server's prompt count is believed up to this many times the estimate.
const MAX_TOKEN_RATIO: f64 = 4.0;
/// Requests estimated smaller than this do not calibrate: a chat template's fixed tokens (its
/// preamble, a date line) would make a short prompt's ratio say little about a long one's.
const MIN_CALIBRATING_ESTIMATE: usize = 256;
/// Summaries one request may wait for before it leaves the oldest turns out instead.
const MAX_SUMMARIES_PER_REQUEST: usize = 2;

/// What every round of one turn shares.
pub(super) struct Turn {
    pub conversation_id: i64,
    pub model: String,
    pub tool_choice: ToolChoice,
    /// Skills the conversation turns on or off for itself (`origin/name`; the others as the
    /// app's settings say).
    pub skills: std::collections::BTreeMap<String, bool>,
    /// System prompt, history, the user's message, then this turn's replies and results.
    pub messages: Vec<Message>,
    /// What the store says of each of `messages` (its id, whether the user pinned it).
    pub meta: Vec<Meta>,
    pub gen: GenOptions,
    /// How the model gets its tools.
    pub tools_in: ToolsIn,
    /// One reply without tools (after the limit).
    pub wrap_up: bool,
    /// The tools on for this conversation (what a call's name is resolved against), this round.
    pub names: Vec<OfferedName>,
    /// Tools this conversation has used: always offered.
    pub used_tools: HashSet<String>,
    /// The model's context, in tokens.
    pub window: usize,
    /// The server does not say how much context the model has: `window` is
    /// `context::DEFAULT_CONTEXT`.
    pub window_assumed: bool,
    /// What a request does when the conversation outgrows the context.
    pub policy: ContextPolicy,
    /// The summary stored for this branch (it stands for older turns when they do not fit).
    pub summary: Option<EarlierSummary>,
    /// The branch has told the user that older results go as stubs (a notice).
    pub stubs_told: bool,
    /// The tokens of the tools of the last request (what a summary in the background plans with).
    pub tools_tokens: usize,
    /// The family of tool-call markup the model writes, when known (its parser goes first).
    pub family: Option<FamilyId>,
    /// The estimate (before calibration) of the last request, to calibrate by what the server
    /// says it was.
    pub last_estimate: usize,
    /// Whether the model sees images (`None`: its server does not say).
    pub vision: Option<bool>,
}

impl Turn {
    /// How many tokens each of `calls` results may take for the model.
    pub fn result_share(&self, calls: usize) -> Option<usize> {
        let share = (self.window as f64 * RESULTS_SHARE) as usize / calls.max(1);
        Some(share.max(MIN_RESULT_TOKENS))
    }

    /// Adds a message of this turn (not one the store had before it: no id, not pinned).
    fn push(&mut self, m: Message) {
        self.messages.push(m);
        self.meta.push(Meta::default());
    }

    /// The stored summary, as the plan takes it (when it covers a message of this branch).
    fn summary_in(&self) -> Option<SummaryIn<'_>> {
        let s = self.summary.as_ref()?;
        let through = self.meta.iter().position(|m| m.id == Some(s.through_id))?;
        Some(SummaryIn {
            text: &s.text,
            through,
        })
    }

    /// The budget of a request offering tools of `tools_tokens` for a model whose server counts
    /// `ratio` times the estimate.
    fn budget(&self, ratio: f64, tools_tokens: usize) -> context::Budget {
        context::budget(self.window, ratio, tools_tokens)
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
        if !summary.stopped && summary.llm_error.is_none() && !summary.context_full {
            // the next request's summary, written while the user reads and types
            self.compact_when_due(&turn);
        }
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
            context_full: false,
        };
        let max = if turn.wrap_up {
            1
        } else {
            self.options.max_iterations.max(1)
        };
        // the calls of the previous round, to catch a model that repeats itself
        let mut previous_round = Vec::new();
        for iteration in 1..=max {
            let Some(request) = self.request(turn, emit, cancel).await? else {
                summary.context_full = true;
                break;
            };
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
                        tracing::debug!(real, estimate = turn.last_estimate, "prompt size");
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
            turn.push(assistant);
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
            for m in round.messages {
                turn.push(m);
            }
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

    /// The request for the next reply, or `None` when the turn stops before it (a notice says
    /// why). The tools on offer (with many tools on, the most relevant ones and those used
    /// already; no more than fit), or (text mode) the tools described in the system prompt and
    /// calls and results as text; the messages planned to fit the model's context with room for
    /// the reply (`chat::context`), a summary written first when only one reaching further would
    /// make them fit. Says how big it is and what was compacted.
    async fn request(
        &self,
        turn: &mut Turn,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<ChatRequest>, ChatError> {
        let on = self.tools_on(turn);
        turn.names = on
            .iter()
            .map(|t| match self.tools.route(&t.name) {
                Some(r) => OfferedName::new(&t.name, &r.server, &r.tool),
                None => OfferedName::from_exposed(&t.name),
            })
            .collect();
        let tools_on = on.len();
        let (mut tools, mut droppable) = self.ranked_tools(turn, on);
        let ratio = self.token_ratio(&turn.model);
        let room = context::room(turn.window);
        let mut policy = turn.policy;
        let mut summaries = 0;
        let mut summary_failed = None;
        // what shaping (text mode) adds beyond the plan, taken off its budget
        let mut shaped_over = 0usize;
        loop {
            let tools_tokens = budget::estimate_tools(&tools);
            let mut b = turn.budget(ratio, tools_tokens);
            b.messages = b.messages.saturating_sub(shaped_over);
            let plan = context::plan(&turn.messages, &turn.meta, &b, policy, turn.summary_in());
            let compacts = plan.outcome != Outcome::Fits
                || !plan.stubbed.is_empty()
                || plan.summarised + plan.dropped > 0;
            let tools_over = tools_tokens as f64 * ratio > TOOLS_SHARE * room as f64
                || matches!(plan.outcome, Outcome::Ask | Outcome::Overflow);
            // the least relevant tools go before anything of the conversation
            if compacts && tools_over && tools.len() > 1 {
                if let Some(name) = droppable.pop() {
                    tools.retain(|t| t.name != name);
                    continue;
                }
            }
            match plan.outcome {
                Outcome::Fits => {}
                Outcome::NeedsSummary if summaries < MAX_SUMMARIES_PER_REQUEST => {
                    summaries += 1;
                    let through = plan.summarise_through.and_then(|i| turn.meta[i].id);
                    match self
                        .compact_now(turn, through, tools_tokens, emit, cancel)
                        .await?
                    {
                        Ok(s) => turn.summary = Some(s),
                        Err(e) => {
                            // the chat goes on: this request leaves the oldest out, and says so
                            summary_failed = Some(e);
                            policy = ContextPolicy::DropOldest;
                        }
                    }
                    continue;
                }
                Outcome::NeedsSummary => {
                    policy = ContextPolicy::DropOldest;
                    continue;
                }
                Outcome::Ask | Outcome::Overflow => {
                    let used = scaled(plan.tokens + tools_tokens + budget::REPLY_PRIMING, ratio);
                    let notice = Notice::ContextFull {
                        used,
                        limit: turn.window,
                        ask: plan.outcome == Outcome::Ask,
                    };
                    self.notice(turn.conversation_id, notice, emit).await?;
                    return Ok(None);
                }
            }
            let (messages, offered, options) = self.shaped(turn, &plan.messages, &tools);
            let estimate = budget::estimate_request(&messages, &offered);
            let used = scaled(estimate, ratio);
            if used > room && b.messages > 0 {
                // text mode writes the tools and calls as text: what that adds comes off the
                // plan's budget (a tool first, when one may go)
                if let Some(name) = droppable.pop().filter(|_| tools.len() > 1) {
                    tools.retain(|t| t.name != name);
                } else {
                    shaped_over += ((used - room) as f64 / ratio).ceil() as usize + 1;
                }
                continue;
            }
            if let Some(error) = summary_failed {
                self.notice(turn.conversation_id, Notice::SummaryFailed { error }, emit)
                    .await?;
            }
            self.tell_stubs(turn, plan.stubbed.len(), emit).await?;
            turn.last_estimate = estimate;
            turn.tools_tokens = tools_tokens;
            emit(ChatEvent::Context {
                used,
                limit: Some(turn.window),
                limit_assumed: turn.window_assumed,
                tools_offered: tools.len(),
                tools_on,
                compacted: Compacted {
                    stubbed: plan.stubbed.len(),
                    summarised: plan.summarised,
                    dropped: plan.dropped,
                },
                room,
                compact_at: (room as f64 * context::COMPACT_AT) as usize,
                policy,
            });
            return Ok(Some(ChatRequest {
                model: turn.model.clone(),
                messages,
                tools: offered,
                options,
            }));
        }
    }

    /// The tools a request offers, and which of them may be let go to fit, most relevant first
    /// (never one the conversation used): with more on than the cap, the most relevant.
    fn ranked_tools(&self, turn: &Turn, on: Vec<ToolSpec>) -> (Vec<ToolSpec>, Vec<String>) {
        if turn.wrap_up {
            return (vec![], vec![]);
        }
        if !self.options.aids.rank {
            return (on, vec![]);
        }
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
    }

    /// The first request of a branch that sends older results as stubs adds a note to the
    /// conversation (once: the header's counter says it for each request after).
    async fn tell_stubs(
        &self,
        turn: &mut Turn,
        stubbed: usize,
        emit: Emit<'_>,
    ) -> Result<(), ChatError> {
        if stubbed > 0 && !turn.stubs_told {
            turn.stubs_told = true;
            let notice = Notice::ResultsStubbed { count: stubbed };
            self.notice(turn.conversation_id, notice, emit).await?;
        }
        Ok(())
    }

    /// The messages, tools and options of a request of `messages` offering `tools`: as they
    /// are, or (text mode) the tools described in the system prompt, calls and results as text.
    fn shaped(
        &self,
        turn: &Turn,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> (Vec<Message>, Vec<ToolSpec>, GenOptions) {
        let mut options = turn.gen.clone();
        if turn.tools_in == ToolsIn::Native {
            return (messages.to_vec(), tools.to_vec(), options);
        }
        let mut m = text_tools::history_as_text(messages);
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

    /// Whether the skill `origin/name` is on in this turn's conversation: as the conversation
    /// says, else as the app's settings say (on unless switched off).
    pub(super) fn skill_on(&self, turn: &Turn, skill: &str) -> bool {
        turn.skills
            .get(skill)
            .copied()
            .unwrap_or_else(|| !self.options.skills_off.contains(skill))
    }

    /// The tools on for the turn's conversation (of the running servers; its choice of servers
    /// and tools, and of skills).
    fn tools_on(&self, turn: &Turn) -> Vec<ToolSpec> {
        let choice = &turn.tool_choice;
        self.tools
            .tool_specs_with_skills(&|s| self.skill_on(turn, s))
            .into_iter()
            .filter(|t| {
                self.tools
                    .route(&t.name)
                    .is_none_or(|r| choice.allows(&r.server, &r.tool))
            })
            .collect()
    }
}

/// An estimate as the model's server counts it (`ratio`: its calibration).
fn scaled(estimate: usize, ratio: f64) -> usize {
    (estimate as f64 * ratio).ceil() as usize
}
