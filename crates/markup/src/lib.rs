//! Tool-call markup of local LLMs, as a library: a reply's text (and the tools on offer, with
//! their input schemas) in; the calls it makes, its thinking and its clean text out. No
//! dependency on Switchboard's engine, which is one host of it.
//!
//! - [`families`]: the registry of named model families' tool-call formats, one file per
//!   family behind one trait, and one table ([`families::ALL`]) both readers below use.
//! - [`recover`]: calls and markup read from a whole reply.
//! - [`gate`]: the streaming hold-back (text that may be call markup is held until it is clearly
//!   not; nothing lost or reordered).
//! - [`leftovers`]: the tokens and empty sections left around recovered calls of a family no
//!   file names, recognised by their shape.
//! - [`lenient`] and [`pylit`]: JSON and Python literals as models write them.
//! - [`resolve`]: a name as the model wrote it, to the tool it means; [`repair`]: arguments
//!   fitted to the tool's schema where that is exact, or each problem in words.
//!
//! - `template/`: a chat template rendered with minijinja and probe conversations (`render.rs`),
//!   the renders compared to learn the markers (`analyse.rs`); `template::learn` keeps the
//!   analysis per template digest. `families/learned.rs`: a family learned from a template, kept
//!   for the program once per template and found by `by_id` like a named one.
//!
//! Tests: the samples (`families/samples/`); `tests/templates.rs` (every template llama.cpp ships,
//! read from `.tools/templates`, which `scripts/install-deps.sh --test` unpacks from the
//! llama-cpp-python sdist); `tests/nothing_shows.rs` (no marker left: sections and tokens of
//! unnamed families, thinking opened in the prompt, Magistral's thinking; markers in code or quotes
//! stay). Bench `benches/recover.rs`; fuzz targets `tool_call_recovery`, `learned_markup`.
//!
//! The engine's `chat/` re-exports this crate under the names the loop uses; `chat/markup.rs` is
//! the one engine-side part (a model's family from `ModelDetails`: the learned one first).

pub mod families;
pub mod gate;
pub mod leftovers;
pub mod lenient;
pub mod pylit;
pub mod recover;
pub mod repair;
pub mod resolve;
pub mod template;
