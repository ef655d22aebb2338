//! A long conversation in a small context: what each request carries, so that it fits the model's
//! context with room for the reply, and nothing the user said is lost without a word.
//!
//! - `plan.rs`: **the plan of one request**, a pure function of the messages (with their stored
//!   ids and pins), the budget, the conversation's policy and the summary stored for its branch.
//!   In order: everything as it is; older tool results as short stubs (their cards keep
//!   everything); then, by the policy, older turns as the summary (`Summarise`, the default),
//!   left out (`DropOldest`), or nothing sent and the user asked (`Ask`). The system prompt,
//!   the user's first message, pinned messages and the latest turns are always sent whole.
//! - `summary.rs`: the request that writes a summary (the instructions, the part it covers as a
//!   transcript fitted to the model's context) and how a summary is framed in a request.
//!
//! The turn (`turn.rs`) plans every request; `turn/compact.rs` makes the summaries the plan asks
//! for: in the background when a request passes [`COMPACT_AT`] of the room, or at once when the
//! next request would not fit without one.
//!
//! The shares are here: the reply's room (`REPLY_SHARE`, 1/4), the recent turns (`RECENT_SHARE`), a
//! summary's length (`SUMMARY_SHARE`), when to prepare a summary (`COMPACT_AT` of the room, with
//! the request at its least: every older result a stub; and only when the summary would take off at
//! least `SUMMARY_STEP`), and the context assumed when the server does not say (`DEFAULT_CONTEXT`,
//! 4,096). Invariant: the store is never changed by a plan; only what is sent is.

pub mod plan;
pub mod summary;

pub use plan::{plan, Budget, Meta, Outcome, Plan, SummaryIn};

/// The context assumed for a model whose server does not say how much it has (an
/// OpenAI-compatible server without `/props`): Ollama's own default, which most local setups run
/// with. The header's counter says it is assumed.
pub const DEFAULT_CONTEXT: usize = 4096;

/// The part of the context kept free for the reply: a request may take the rest (the room).
pub const REPLY_SHARE: f64 = 0.25;

/// When a request takes more than this part of the room, the next compaction is prepared: a
/// summary of the older turns is written in the background, so the request that needs it rarely
/// waits for it.
pub const COMPACT_AT: f64 = 0.75;

/// The newest turns kept whole when older ones are summarised: as many as fit in this part of
/// the room (at least the current turn).
pub const RECENT_SHARE: f64 = 0.35;

/// A summary is prepared in the background only when it would cover at least this part of the
/// room beyond the summary so far (`Budget::step`).
pub const SUMMARY_STEP: f64 = 0.2;

/// The longest summary, as a part of the room (what the summary request may generate).
pub const SUMMARY_SHARE: f64 = 0.15;

/// The budgets of one request, in estimated tokens (before calibration), for a model with a
/// context of `window` tokens whose server counts `ratio` times the estimate, offering tools
/// that take `tools` tokens.
pub fn budget(window: usize, ratio: f64, tools: usize) -> Budget {
    let room = room(window) as f64 / ratio.max(1.0);
    let fixed = tools + super::budget::REPLY_PRIMING;
    Budget {
        messages: (room as usize).saturating_sub(fixed),
        compact_at: ((room * COMPACT_AT) as usize).saturating_sub(fixed),
        recent: (room * RECENT_SHARE) as usize,
        step: (room * SUMMARY_STEP) as usize,
    }
}

/// What a request may take of a context of `window` tokens: all but the reply's share.
pub fn room(window: usize) -> usize {
    window - (window as f64 * REPLY_SHARE) as usize
}

/// The longest summary for a context of `window` tokens, in tokens.
pub fn summary_tokens(window: usize) -> usize {
    ((room(window) as f64 * SUMMARY_SHARE) as usize).max(64)
}
