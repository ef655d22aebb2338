//! A model's tool-call markup learned from its own chat template, as llama.cpp's autoparser does
//! it (`docs/autoparser.md`: render the template, compare the outputs): the template is rendered
//! with probe conversations — a reply with no call, one call with a known name and arguments,
//! two calls, a reply with reasoning, the prompt with thinking on and off — and the renders are
//! compared to find the markers: where the reply starts (the end of the prompt), thinking's
//! markers and whether the prompt opens it, the section around the calls, each call's opening
//! and closing, how the name and the arguments are written (one JSON object with the name in
//! it, or the name in markup and the arguments as JSON or as tagged parameters whose markers
//! may say a value's type), and the token that ends a turn. Nothing is a list of known tags:
//! every marker is text the template itself wrote around the probe's values.
//!
//! What was learned is checked by reading the template's own renders back (one call, two
//! calls): a format that does not read them exactly is not used. It becomes a family like the
//! named ones ([`crate::families::learned`]), tried first, with the named family the template's
//! text points to tried right after. A template that cannot be rendered, or whose calls could not
//! be learned, says why ([`Learning::not_learned`]); the named families then read the replies.
//!
//! The analysis is done once per template ([`learn`] keeps it by the template's digest).

mod analyse;
pub mod render;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

pub use crate::families::learned::Learning;

/// What `template` teaches, analysed once per template (kept in memory by its digest).
pub fn learn(template: &str) -> Arc<Learning> {
    static CACHE: Mutex<Option<HashMap<u64, Arc<Learning>>>> = Mutex::new(None);
    let key = digest(template);
    if let Some(l) = CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .get(&key)
    {
        return l.clone();
    }
    let l = Arc::new(analyse::learn(template, &format!("{key:016x}")));
    CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, l.clone());
    l
}

/// A reply as the template writes it: `assistant` (a message in the OpenAI shape: content,
/// `tool_calls`, `reasoning_content`) rendered after a user's message, with `tools` on offer,
/// and cut where the model's own text would be (after the prompt for a reply, before the token
/// that ends its turn). What a model that writes this template's markup sends back.
pub fn reply_as_written(
    template: &str,
    assistant: &serde_json::Value,
    tools: &serde_json::Value,
) -> Result<String, String> {
    analyse::reply_as_written(template, assistant, tools)
}

/// The analysis of `template` done again, not kept (to measure it: each call keeps its markers,
/// about a kilobyte, for the rest of the program).
pub fn learn_again(template: &str) -> Learning {
    analyse::learn(template, &format!("{:016x}", digest(template)))
}

/// The template's digest: a 64-bit SipHash of its text (a cache key, not a signature).
pub fn digest(template: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    template.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests;
