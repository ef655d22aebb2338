//! Tool calls recovered from a reply's text, whatever the model's mode: small models often write
//! a call as text instead of using the API's tool-call field, in their family's own markup or as
//! bare JSON. Every format is a family of the registry ([`super::families`]); this runs them
//! over a whole reply: the model's own family first when it is known, then the others in a safe
//! order.
//!
//! A candidate counts as a call only when it has a call's shape and its name names an offered
//! tool (the caller's predicate, normally built on [`super::resolve`]): a JSON object that is
//! data, a code sample, a quote, a call described as past or as an example, or a call to a tool
//! that is not offered stays text. The markup of the calls found is removed from the returned
//! text, and so is markup that never shows (end tokens, channel headers, and once a call is
//! found, the tokens and empty sections a family no file names leaves around it:
//! [`super::leftovers`]); thinking blocks come back as thinking, and so does the reply's start
//! up to a closing thinking marker with no opening (the prompt opened it). Thinking's markers in
//! code or a quote are text.

use super::families::spans::{self, Kind, Spans};
use super::families::{self, Cx};
use super::leftovers;

pub use super::families::spans::RecoveredCall;
pub use super::families::Form;

#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// In the order they appear in the reply.
    pub calls: Vec<RecoveredCall>,
    /// The reply without the markup (prose before and after kept, trimmed).
    pub text: String,
    /// Thinking the reply wrote in its text (`<think>…</think>`, an analysis channel).
    pub thinking: String,
    /// Names in call markup that was removed alongside offered calls, but that name no offered
    /// tool: the model should be told these did not run.
    pub skipped: Vec<String>,
}

/// Finds the tool calls written in `text` (see the module doc), with no schema and no family
/// known; `None` when there is none whose name `is_offered` accepts.
pub fn recover(text: &str, is_offered: &dyn Fn(&str) -> bool) -> Option<Recovered> {
    recover_with(text, &Cx::names(is_offered)).filter(|r| !r.calls.is_empty())
}

/// Finds the tool calls and markup in `text`; the model's family (`cx.family`, when known) is
/// tried first. `None` when nothing in it is markup: the text stays as it is.
pub fn recover_with(text: &str, cx: &Cx) -> Option<Recovered> {
    let mut spans = Spans::new();
    let own = cx.family.and_then(families::by_id);
    // the prompt opened thinking: the reply starts inside it
    if let Some(close) = own.and_then(|f| f.opens_thinking()) {
        let open = families::thinking_pairs_with(own)
            .iter()
            .find(|(_, c)| *c == close)
            .map_or("", |(o, _)| *o);
        if let Some(span) = families::learned::opened_thinking(text, open, close) {
            spans.add(span);
        }
    }
    // thinking's markers in code or a quote are text: the code is found first, to look past it
    let pairs = families::thinking_pairs_with(own);
    let marked = pairs
        .iter()
        .any(|(o, c)| spans::find(text, o).is_some() || spans::find(text, c).is_some());
    if marked {
        let mut code = Spans::new();
        spans::code_and_quotes(text, &mut code);
        thinking(text, &pairs, &code, &mut spans);
        opened_in_prompt(text, &pairs, &code, &mut spans);
    }
    spans::code_and_quotes(text, &mut spans);
    for f in families::ordered_from(own) {
        f.parse(text, cx, &mut spans);
    }
    spans::not_now(text, cx.quoted, &mut spans);
    leftovers::absorb(text, &mut spans);
    tokens(text, own, &mut spans);
    if !spans.changes_text() {
        return None;
    }
    let (clean, thinking) = spans::assemble(text, &spans);
    let mut out = Recovered {
        calls: Vec::new(),
        text: clean,
        thinking,
        skipped: Vec::new(),
    };
    for s in spans.iter() {
        if let Kind::Calls { calls, skipped } = &s.kind {
            out.calls.extend(calls.iter().cloned());
            out.skipped.extend(skipped.iter().cloned());
        }
    }
    Some(out)
}

/// Whether a JSON value has the shape of one or more calls (names not checked).
pub use super::families::is_call_shaped;

/// Every family's thinking blocks (`pairs`), first: a call written inside one is thought, not
/// made. An opening marker in `code` is text.
fn thinking(text: &str, pairs: &[(&str, &str)], code: &Spans, spans: &mut Spans) {
    for &(open, close) in pairs {
        let mut from = 0;
        while let Some(at) = spans::find_free(text, open, from, spans) {
            if let Some(c) = code.at(at) {
                from = c.end.max(at + 1);
                continue;
            }
            let body = at + open.len();
            let (content_end, end) = match text[body..].find(close) {
                Some(c) => (body + c, body + c + close.len()),
                None => (text.len(), text.len()),
            };
            spans.add(spans::Span {
                start: at,
                end,
                kind: Kind::Thinking(text[body..content_end].to_string()),
            });
            from = end.max(body);
        }
    }
}

/// A closing thinking marker with no opening before it, outside code and quotes: the prompt
/// opened thinking (a template that ends its prompt with `<think>`, as GLM-4.7, Nemotron 3,
/// Qwen 3.5, ERNIE 4.5 and DeepSeek V3.1 do), so the reply up to it is thinking, whether or not
/// the model's template is at hand to say so.
fn opened_in_prompt(text: &str, pairs: &[(&str, &str)], code: &Spans, spans: &mut Spans) {
    let first = pairs
        .iter()
        .filter_map(|(_, close)| {
            let mut from = 0;
            loop {
                let at = spans::find_free(text, close, from, spans)?;
                match code.at(at) {
                    Some(c) => from = c.end.max(at + 1),
                    None => return Some((at, close.len())),
                }
            }
        })
        .min();
    if let Some((at, len)) = first {
        spans.add(spans::Span {
            start: 0,
            end: at + len,
            kind: Kind::Thinking(text[..at].to_string()),
        });
    }
}

/// Every family's tokens that never show, wherever they are left.
fn tokens(text: &str, own: Option<&dyn families::Family>, spans: &mut Spans) {
    for t in families::strip_tokens_with(own) {
        let mut from = 0;
        while let Some(at) = spans::find_free(text, t, from, spans) {
            spans.add(spans::Span {
                start: at,
                end: at + t.len(),
                kind: Kind::Markup,
            });
            from = at + t.len();
        }
    }
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
