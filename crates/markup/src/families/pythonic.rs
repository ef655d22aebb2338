//! Python-style calls (Llama 3.2's and Llama 4's pythonic format, the prompt Gemma's
//! documentation suggests, ToolACE): a list `[get_weather(city='SF'), get_time()]` anywhere,
//! Llama 4's `<|python_start|>[…]<|python_end|>`, or a reply that is one call and nothing else.
//! Keyword arguments only, values Python literals ([`super::pylit`]).

use super::json::skip_blanks;
use super::shapes::{add_calls, blocks};
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Found, StreamCx, Verdict};
use crate::pylit::{call_at, list_at, Depth, PyCall};

pub struct Pythonic;

const START: &str = "<|python_start|>";
const END: &str = "<|python_end|>";
/// Lists are read within this many times the text's length (text full of `[name(` that never
/// closes would otherwise cost the square of its length).
const SCAN_BUDGET: usize = 16;
/// How long a list of calls may be held while streaming before it is judged not to be one.
const LIST_HOLD: usize = 4096;

impl Family for Pythonic {
    fn id(&self) -> FamilyId {
        "pythonic"
    }
    fn name(&self) -> &'static str {
        "Pythonic ([f(a=1), g(b='x')])"
    }
    fn markers(&self) -> &'static [&'static str] {
        &[START]
    }
    fn triggers(&self) -> &'static [u8] {
        b"["
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        find(self.id(), text, cx, spans);
    }
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        if held.starts_with(START) {
            return Verdict::Lock;
        }
        if START.starts_with(held) {
            return Verdict::Wait;
        }
        if held.starts_with('[') {
            let i = skip_blanks(held.as_bytes(), 1);
            // judged whole once it closes (a sibling of a name not on offer may be a call; a list
            // that does not read is text); held meanwhile, without end when it starts with a call
            return match named_call(held, i, sx) {
                Verdict::Lock => whole_list(held, sx, usize::MAX),
                Verdict::NotMine if held.as_bytes().get(i).is_some_and(u8::is_ascii_alphabetic) => {
                    whole_list(held, sx, LIST_HOLD)
                }
                v => v,
            };
        }
        if sx.reply_start {
            return named_call(held, 0, sx);
        }
        Verdict::NotMine
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<|python_start|>", "[func_name1("],
            names: &["llama4", "llama-4", "toolace"],
            families: &["llama4"],
        }
    }
}

/// While streaming, a list of calls: once it closes, a call when it reads and some name in it
/// is on offer; held while it may still be one (at most `hold` bytes).
fn whole_list(held: &str, sx: &mut StreamCx, hold: usize) -> Verdict {
    if sx.depth.as_ref().is_none_or(|(start, _)| *start != 0) {
        *sx.depth = Some((0, Depth::new(0)));
    }
    let (_, depth) = sx.depth.as_mut().expect("set above");
    match depth.advance(held.as_bytes()) {
        None if held.len() < hold => Verdict::Wait,
        None => Verdict::NotMine,
        Some(end) => match list_at(held, 0) {
            Some((calls, e)) if e == end && calls.iter().any(|c| sx.offers(&c.name)) => {
                Verdict::Lock
            }
            _ => Verdict::Text(end),
        },
    }
}

/// While streaming: a name at byte `i` followed by `(` is a call when the name is on offer.
fn named_call(held: &str, i: usize, sx: &StreamCx) -> Verdict {
    let b = held.as_bytes();
    if i >= b.len() {
        return Verdict::Wait;
    }
    if !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
        return Verdict::NotMine;
    }
    let n = b[i..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || b"_.-".contains(c))
        .count();
    match b.get(i + n) {
        None if n < 96 => Verdict::Wait,
        Some(b'(') if sx.offers(&held[i..i + n]) => Verdict::Lock,
        _ => Verdict::NotMine,
    }
}

/// The Python calls in `text` where `spans` leaves room, as `family`'s.
pub fn find(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
    for b in blocks(text, &[START], &[END], spans) {
        if let Some(calls) = whole(&text[b.body..b.body_end]) {
            add_calls(spans, b.open, b.end, calls, family, cx);
        }
    }
    lists(family, text, cx, spans);
    // a reply that is one call and nothing else
    let start = text.len() - text.trim_start().len();
    let end = text.trim_end().len();
    if start < end && spans.free(start, end) {
        if let Some(c) = call_at(text, start).filter(|c| c.end == end) {
            add_calls(spans, start, end, vec![found(c)], family, cx);
        }
    }
}

/// `[f(…), …]` lists anywhere.
fn lists(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
    let b = text.as_bytes();
    let mut budget = SCAN_BUDGET * text.len() + 64 * 1024;
    let mut i = 0;
    while i < b.len() {
        let Some(p) = b[i..].iter().position(|&c| c == b'[') else {
            break;
        };
        i += p;
        if let Some(s) = spans.at(i) {
            i = s.end.max(i + 1);
            continue;
        }
        let j = skip_blanks(b, i + 1);
        if !b
            .get(j)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            i += 1;
            continue;
        }
        match list_at(text, i) {
            Some((calls, end)) => {
                budget = budget.saturating_sub(end - i);
                let calls = calls.into_iter().map(found).collect();
                if spans.free(i, end) && add_calls(spans, i, end, calls, family, cx) {
                    i = end;
                    continue;
                }
                i += 1;
            }
            None => {
                budget = budget.saturating_sub(64);
                i += 1;
            }
        }
        if budget == 0 {
            break;
        }
    }
}

/// A list of calls or one call, and nothing else.
pub fn whole(content: &str) -> Option<Vec<Found>> {
    let t = content.trim();
    if t.starts_with('[') {
        let (calls, end) = list_at(t, 0)?;
        return (end == t.len()).then(|| calls.into_iter().map(found).collect());
    }
    let c = call_at(t, 0)?;
    (c.end == t.len()).then(|| vec![found(c)])
}

pub fn found(c: PyCall) -> Found {
    Found::new(c.name, serde_json::Value::Object(c.arguments))
}
