//! The plan of one request: which messages it carries, and how, so that it fits its budget. A
//! pure function ([`plan`]); see `context/mod.rs` for the order things are given up in.
//!
//! The messages are the turn's: the system prompt (first, when there is one), the history of the
//! conversation's branch, then this turn's. What is always sent whole: everything up to and
//! including the user's first message, pinned messages (a pinned reply with its tool results),
//! and the current turn (from the latest user message), whose last round of results is never a
//! stub. Older turns are covered whole, at turn starts, so a tool result never loses its call.

use super::summary;
use crate::chat::budget::{estimate_message, estimate_tokens, PER_MESSAGE};
use crate::llm::{Message, Role};
use crate::store::ContextPolicy;

/// What one request may spend, in estimated tokens of messages (the tools, the reply's share and
/// the calibration already taken off: `context::budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The most the messages may take.
    pub messages: usize,
    /// Messages over this at their least (every older result a stub): the next compaction is
    /// prepared (a summary, in the background).
    pub compact_at: usize,
    /// The newest turns kept whole by a summary: as many as fit in this (at least one).
    pub recent: usize,
    /// A summary is prepared in the background only when it would take at least this much off
    /// the request (what it covers beyond the summary so far): in a small context, where one turn
    /// is a third of it, a summary every turn would be a second request every turn.
    pub step: usize,
}

/// What the store says of a message of the turn (`None`/`false` for what is not stored: the
/// system prompt, this turn's replies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Meta {
    pub id: Option<i64>,
    /// The user pinned it: always sent whole.
    pub pinned: bool,
}

/// The summary stored for this branch: its text (as the user may have edited it), and the index
/// (in the messages) of the last message it covers.
#[derive(Debug, Clone, Copy)]
pub struct SummaryIn<'a> {
    pub text: &'a str,
    pub through: usize,
}

/// How the plan ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `messages` fit: send them.
    Fits,
    /// Only a summary reaching `summarise_through` would make them fit: write it, plan again.
    NeedsSummary,
    /// The policy is to ask: it would fit only with older turns summarised or left out.
    Ask,
    /// Even with every older turn covered and every older result a stub, the messages that are
    /// always sent whole do not fit.
    Overflow,
}

/// What a request carries.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The messages to send (when the outcome is `Fits`; else the messages as they are).
    pub messages: Vec<Message>,
    /// Their estimated tokens (at least what `budget::estimate_messages` says of them).
    pub tokens: usize,
    /// The tool results sent as stubs (indices into the turn's messages).
    pub stubbed: Vec<usize>,
    /// How many messages the summary stands for (0: no summary sent).
    pub summarised: usize,
    /// How many messages were left out (`DropOldest`).
    pub dropped: usize,
    pub outcome: Outcome,
    /// A summary through this message (an index) would compact the next requests (in the
    /// background, when `Fits`), or is needed now (`NeedsSummary`).
    pub summarise_through: Option<usize>,
}

/// Plans one request (see the module's documentation). `meta` goes with `messages`, one for each.
pub fn plan(
    messages: &[Message],
    meta: &[Meta],
    budget: &Budget,
    policy: ContextPolicy,
    summary: Option<SummaryIn<'_>>,
) -> Plan {
    let shape = Shape::of(messages, meta);
    let limit = budget.messages;
    let lo = shape.lo;
    // a summary reaches only as far as the current turn (its through is in this branch)
    let stored = summary.filter(|s| s.through >= lo && s.through < shape.cur);
    let done = stored.map_or(lo, |s| shape.after_results(s.through + 1));
    // the pressure is what the request must take at the least (every older result a stub):
    // results are sent whole while they fit, which says nothing of how full the context is
    let background = |k: usize, extra: usize| {
        (policy == ContextPolicy::Summarise && shape.fit(k, extra, 0).0 > budget.compact_at)
            .then(|| shape.recent_cut(budget.recent))
            .flatten()
            .filter(|&k| k > done && shape.covered_cost(done, k) >= budget.step)
            .map(|k| k - 1)
    };
    // everything as it is, older results as stubs as far as needed
    let (total, stubs) = shape.fit(lo, 0, limit);
    if total <= limit {
        let next = background(lo, 0);
        return shape.finish(messages, lo, None, stubs, total, Outcome::Fits, next);
    }
    let floor_fits = || shape.fit(shape.cur, 0, limit).0 <= limit;
    match policy {
        ContextPolicy::Summarise => {
            if let Some(s) = stored {
                let k = done;
                let note = summary::frame(s.text, shape.covered(k));
                let extra = shape.note_cost(&note, messages);
                let (total, stubs) = shape.fit(k, extra, limit);
                if total <= limit {
                    let next = background(k, extra);
                    let mut p =
                        shape.finish(messages, k, Some(note), stubs, total, Outcome::Fits, next);
                    p.summarised = shape.covered(k);
                    return p;
                }
            }
            // a summary that reaches further: the recent turns kept, else all but the current one
            let want = shape
                .recent_cut(budget.recent)
                .filter(|&k| k > done)
                .or_else(|| {
                    (shape.cur > done && shape.covered(shape.cur) > shape.covered(done))
                        .then_some(shape.cur)
                });
            let outcome = match want {
                Some(_) if floor_fits() => Outcome::NeedsSummary,
                _ => Outcome::Overflow,
            };
            let through = want
                .filter(|_| outcome == Outcome::NeedsSummary)
                .map(|k| k - 1);
            shape.unchanged(messages, outcome, through)
        }
        ContextPolicy::DropOldest => {
            for &k in shape.starts.iter().filter(|&&t| t > lo) {
                let note = summary::dropped_note(shape.covered(k));
                let (total, stubs) = shape.fit(k, shape.note_cost(&note, messages), limit);
                if total <= limit {
                    let mut p =
                        shape.finish(messages, k, Some(note), stubs, total, Outcome::Fits, None);
                    p.dropped = shape.covered(k);
                    return p;
                }
            }
            shape.unchanged(messages, Outcome::Overflow, None)
        }
        ContextPolicy::Ask => {
            let outcome = if floor_fits() {
                Outcome::Ask
            } else {
                Outcome::Overflow
            };
            shape.unchanged(messages, outcome, None)
        }
    }
}

/// The messages a summary reaching message `through` stands for: those after the user's first
/// message up to it (and the results of a call it covers), but pinned ones (always sent whole).
pub fn covered(messages: &[Message], meta: &[Meta], through: usize) -> Vec<usize> {
    let shape = Shape::of(messages, meta);
    let k = shape.after_results((through + 1).min(shape.cur).max(shape.lo));
    (shape.lo..k).filter(|&i| !shape.protected[i]).collect()
}

/// What the plan knows of the messages: their costs, what is kept whole, where turns start.
struct Shape {
    n: usize,
    /// Estimated tokens of each message.
    cost: Vec<usize>,
    /// Prefix sums: `pre[i]` is the cost of the messages before `i`.
    pre: Vec<usize>,
    /// Prefix sums of the protected messages' cost, and of their number.
    pre_protected: Vec<usize>,
    count_protected: Vec<usize>,
    /// Never covered by a summary or left out: pinned messages (with their calls' results).
    protected: Vec<bool>,
    /// Prefix sums of the cost with every result that may be a stub as its stub.
    pre_compact: Vec<usize>,
    /// The tool results that may be stubs, oldest first, with what their stub costs.
    stubbable: Vec<(usize, usize)>,
    /// Messages before this are always sent whole: the system prompt and the user's first
    /// message (and whatever came before it).
    lo: usize,
    /// Where the current turn starts (the latest user message after the first one; else `lo`).
    cur: usize,
    /// Where the turns after the first message start (user messages), in order.
    starts: Vec<usize>,
    /// Which messages are tool results.
    tool: Vec<bool>,
}

impl Shape {
    fn of(messages: &[Message], meta: &[Meta]) -> Shape {
        let n = messages.len();
        let cost: Vec<usize> = messages.iter().map(estimate_message).collect();
        let lo = messages
            .iter()
            .position(|m| m.role == Role::User)
            .map_or_else(
                || {
                    messages
                        .iter()
                        .take_while(|m| m.role == Role::System)
                        .count()
                },
                |i| i + 1,
            );
        let starts: Vec<usize> = (lo..n)
            .filter(|&i| messages[i].role == Role::User)
            .collect();
        let cur = starts.last().copied().unwrap_or(lo);
        // a pinned reply keeps its results, a pinned result its call and the other results
        let mut protected = vec![false; n];
        for i in (0..n).filter(|&i| meta.get(i).is_some_and(|m| m.pinned)) {
            let mut first = i;
            while first > 0 && messages[first].role == Role::Tool {
                first -= 1;
            }
            let mut end = first + 1;
            while end < n && messages[end].role == Role::Tool {
                end += 1;
            }
            protected[first..end].iter_mut().for_each(|p| *p = true);
        }
        // the last round's results are what the model answers now: never stubs
        let mut last_round = n;
        while last_round > 0 && messages[last_round - 1].role == Role::System {
            last_round -= 1;
        }
        while last_round > 0 && messages[last_round - 1].role == Role::Tool {
            last_round -= 1;
        }
        let mut stubbable = Vec::new();
        let mut compact = cost.clone();
        for i in (lo..last_round).filter(|&i| messages[i].role == Role::Tool && !protected[i]) {
            let stub = stub_cost(&messages[i]);
            if stub < cost[i] {
                stubbable.push((i, stub));
                compact[i] = stub;
            }
        }
        let sums = |f: &dyn Fn(usize) -> usize| {
            let mut pre = Vec::with_capacity(n + 1);
            pre.push(0);
            for i in 0..n {
                pre.push(pre[i] + f(i));
            }
            pre
        };
        let pre = sums(&|i| cost[i]);
        let pre_protected = sums(&|i| if protected[i] { cost[i] } else { 0 });
        let count_protected = sums(&|i| usize::from(protected[i]));
        let pre_compact = sums(&|i| compact[i]);
        Shape {
            n,
            cost,
            pre,
            pre_protected,
            count_protected,
            protected,
            pre_compact,
            stubbable,
            lo,
            cur,
            starts,
            tool: messages.iter().map(|m| m.role == Role::Tool).collect(),
        }
    }

    /// Whether message `i` is sent when the messages from `lo` up to `k` are covered.
    fn kept(&self, i: usize, k: usize) -> bool {
        i < self.lo || i >= k || self.protected[i]
    }

    /// How many messages covering from `lo` up to `k` leaves out (pinned ones are kept).
    fn covered(&self, k: usize) -> usize {
        (k - self.lo) - (self.count_protected[k] - self.count_protected[self.lo])
    }

    /// What covering the messages from `from` up to `k` takes off a request (older results
    /// counted as stubs, pinned messages kept).
    fn covered_cost(&self, from: usize, k: usize) -> usize {
        let from = from.min(k);
        (self.pre_compact[k] - self.pre_compact[from])
            .saturating_sub(self.pre_protected[k] - self.pre_protected[from])
    }

    /// `k`, past tool results whose call it covers (a result never goes without its call).
    fn after_results(&self, k: usize) -> usize {
        let mut k = k;
        while k < self.cur && self.tool[k] {
            k += 1;
        }
        k
    }

    /// The cost of the messages kept when those from `lo` up to `k` are covered and `extra` is
    /// added, with the oldest results as stubs until it is within `limit` (or none is left);
    /// which results are stubs.
    fn fit(&self, k: usize, extra: usize, limit: usize) -> (usize, Vec<usize>) {
        let mut total = extra
            + self.pre[self.lo]
            + (self.pre_protected[k] - self.pre_protected[self.lo])
            + (self.pre[self.n] - self.pre[k]);
        let mut stubs = Vec::new();
        if total > limit {
            for &(i, stub) in self.stubbable.iter().filter(|&&(i, _)| i >= k) {
                total -= self.cost[i] - stub;
                stubs.push(i);
                if total <= limit {
                    break;
                }
            }
        }
        (total, stubs)
    }

    /// The start of the oldest of the newest turns that fit in `recent` (results as stubs), when
    /// covering up to it leaves something out: where a summary that keeps them would end.
    fn recent_cut(&self, recent: usize) -> Option<usize> {
        let tail = |k: usize| self.pre_compact[self.n] - self.pre_compact[k];
        let mut keep = self.cur;
        for &t in self.starts.iter().rev().filter(|&&t| t < self.cur) {
            if tail(t) > recent {
                break;
            }
            keep = t;
        }
        (keep > self.lo && self.covered(keep) > 0).then_some(keep)
    }

    /// What a note added to the system prompt costs.
    fn note_cost(&self, note: &str, messages: &[Message]) -> usize {
        // "\n\n" and the rounding of the joined text, or a message of its own
        let joined = if messages.first().is_some_and(|m| m.role == Role::System) {
            2
        } else {
            PER_MESSAGE
        };
        estimate_tokens(note) + joined
    }

    /// The plan that sends the messages from `lo` up to `k` covered (`note` in the system
    /// prompt says how), `stubs` as stubs.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        messages: &[Message],
        k: usize,
        note: Option<String>,
        stubs: Vec<usize>,
        tokens: usize,
        outcome: Outcome,
        next: Option<usize>,
    ) -> Plan {
        let mut out = Vec::with_capacity(self.n);
        let mut stub_at = stubs.iter().peekable();
        for (i, m) in messages.iter().enumerate() {
            if !self.kept(i, k) {
                continue;
            }
            if stub_at.peek() == Some(&&i) {
                stub_at.next();
                out.push(stub_of(m));
            } else {
                out.push(m.clone());
            }
        }
        if let Some(note) = note {
            match out.first_mut() {
                Some(first) if first.role == Role::System => {
                    first.content.push_str("\n\n");
                    first.content.push_str(&note);
                }
                _ => out.insert(0, Message::new(Role::System, note)),
            }
        }
        Plan {
            messages: out,
            tokens,
            stubbed: stubs,
            summarised: 0,
            dropped: 0,
            outcome,
            summarise_through: next,
        }
    }

    /// A plan that sends nothing (the outcome says why).
    fn unchanged(&self, messages: &[Message], outcome: Outcome, through: Option<usize>) -> Plan {
        Plan {
            messages: messages.to_vec(),
            tokens: self.pre[self.n],
            stubbed: vec![],
            summarised: 0,
            dropped: 0,
            outcome,
            summarise_through: through,
        }
    }
}

/// A tool result as a stub: what it was (the tool, its size, how it began), and that the person
/// has all of it on the card.
pub fn stub_of(m: &Message) -> Message {
    Message {
        role: m.role,
        content: stub_text(m),
        thinking: None,
        tool_calls: m.tool_calls.clone(),
        tool_name: m.tool_name.clone(),
        tool_call_id: m.tool_call_id.clone(),
        images: vec![],
    }
}

fn stub_cost(m: &Message) -> usize {
    PER_MESSAGE + estimate_tokens(&stub_text(m))
}

/// How much of a result a stub quotes, in characters.
const STUB_QUOTE: usize = 80;

fn stub_text(m: &Message) -> String {
    let chars = m.content.chars().count();
    let mut quote: String = m
        .content
        .chars()
        .take(STUB_QUOTE)
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    if chars > STUB_QUOTE {
        quote.push('…');
    }
    let images = match m.images.len() {
        0 => String::new(),
        1 => " and an image".into(),
        n => format!(" and {n} images"),
    };
    format!(
        "[Result of {} left out to fit the model's context: {chars} characters (about {} tokens){images}, \
         beginning \"{quote}\". The person sees all of it on the tool's card; call the tool again if \
         you need it.]",
        m.tool_name.as_deref().unwrap_or("the tool"),
        estimate_tokens(&m.content)
    )
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
