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

pub mod families;
pub mod gate;
pub mod leftovers;
pub mod lenient;
pub mod pylit;
pub mod recover;
pub mod repair;
pub mod resolve;
pub mod template;
