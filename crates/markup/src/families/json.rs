//! Calls written as plain JSON, the shape most models fall back to and the one text mode asks
//! for: `{"name": …, "arguments": …}` (or `tool`/`tool_name`, `parameters`/`args`/`input`), a
//! list of them, OpenAI's `{"type": "function", "function": {…}}`, a `{"tool_calls": […]}`
//! wrapper; bare in the text or in a ```` ```json ```` fence. Written leniently (Python
//! literals, single quotes, trailing commas, comments, a bracket missing at the end).
//!
//! A JSON object that is data, or a fence whose content is not all calls, stays text.

use serde_json::Value;

use super::shapes::{add_calls, calls_in};
use super::spans::{fence_at, find_free, Kind, Span, Spans, CALL_FENCES};
use super::{Cx, Detect, Family, FamilyId, Form, StreamCx, Verdict};
use crate::lenient::{self, Balance};

pub struct Json;

/// How many never-closing brackets are repaired as cut-off values per reply (bounds the work on
/// text full of stray brackets).
const CUT_OFF_TRIES: usize = 4;
/// The bare-JSON search reads at most this many times the text's length (plus a little) while
/// matching brackets: text full of stray or deeply nested brackets (a model stuck repeating
/// `{`) would otherwise cost the square of its length. Past it, the rest is not searched.
const SCAN_BUDGET: usize = 32;
/// Keys a call object may start with; an object starting with another key is not a call.
const CALL_KEYS: [&str; 14] = [
    "name",
    "tool",
    "tool_name",
    "function",
    "arguments",
    "parameters",
    "args",
    "input",
    "id",
    "type",
    "call_id",
    "index",
    "tool_calls",
    "tool_call_id",
];

impl Family for Json {
    fn id(&self) -> FamilyId {
        "json"
    }
    fn name(&self) -> &'static str {
        "JSON"
    }
    fn triggers(&self) -> &'static [u8] {
        b"{[`"
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        find(self.id(), text, cx, spans);
    }
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        stream(held, sx)
    }
    fn detect(&self) -> Detect {
        Detect::default()
    }
}

/// Whether a JSON value has the shape of one or more calls (names not checked).
pub fn is_call_shaped(v: &Value) -> bool {
    calls_in(v).is_some()
}

/// The names of the calls a call-shaped value holds; `None` when it is not call-shaped.
pub fn call_names(v: &Value) -> Option<Vec<String>> {
    calls_in(v).map(|cs| cs.into_iter().map(|c| c.name).collect())
}

/// The JSON calls in `text` where `spans` leaves room, as `family`'s: fenced ones, then bare
/// ones. A fence in a call language whose content is not all calls is code from then on.
pub fn find(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
    fences(family, text, cx, spans);
    bare(family, text, cx, spans);
}

/// Fences whose whole content is calls; every other fence is code.
fn fences(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
    let mut from = 0;
    while let Some(open) = find_free(text, "```", from, spans) {
        let (info, body, body_end, end) = fence_at(text, open);
        if !spans.free(open, end) {
            from = open + 3;
            continue;
        }
        let content = &text[body..body_end];
        let (values, used) = lenient::leading_values(content);
        let whole = !values.is_empty() && content[used..].trim().is_empty();
        let found = (whole && CALL_FENCES.contains(&info.as_str()))
            .then(|| {
                values
                    .iter()
                    .map(calls_in)
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.into_iter().flatten().collect::<Vec<_>>())
            })
            .flatten();
        let added = found.is_some_and(|mut f| {
            f.iter_mut().for_each(|c| c.form = Form::Fenced);
            add_calls(spans, open, end, f, family, cx)
        });
        if !added {
            spans.add(Span {
                start: open,
                end,
                kind: Kind::Keep,
            });
        }
        from = end.max(open + 3);
    }
}

/// Bare JSON anywhere else in the text: each object (or array of objects) is a candidate.
fn bare(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
    let bytes = text.as_bytes();
    let mut cut_off_tries = CUT_OFF_TRIES;
    let mut budget = SCAN_BUDGET * text.len() + 64 * 1024;
    let mut i = 0;
    while i < bytes.len() {
        let Some(p) = bytes[i..].iter().position(|&c| c == b'{' || c == b'[') else {
            break;
        };
        i += p;
        if let Some(s) = spans.at(i) {
            i = s.end.max(i + 1);
            continue;
        }
        if bytes[i] == b'[' && text[i + 1..].trim_start().as_bytes().first() != Some(&b'{') {
            i += 1;
            continue;
        }
        // stop at the next span: a value does not run into it
        let limit = spans.next_start(i).unwrap_or(text.len());
        let span = &text[..limit];
        let mut balance = Balance::new(i);
        let found = balance.advance(span.as_bytes());
        let read = found.unwrap_or(limit) - i;
        if read > budget {
            break;
        }
        budget -= read;
        let (parsed, closed) = match found {
            Some(end) => (lenient::parse(&span[i..end]).map(|v| (v, end)), true),
            None if cut_off_tries > 0 => {
                cut_off_tries -= 1;
                (lenient::parse(&span[i..]).map(|v| (v, limit)), false)
            }
            None => (None, false),
        };
        match parsed {
            Some((v, end)) => {
                let added = calls_in(&v).is_some_and(|f| add_calls(spans, i, end, f, family, cx));
                if added || closed {
                    // a closed value that is data is skipped whole: what is inside is data too
                    i = end;
                } else {
                    i += 1;
                }
            }
            None => i += 1,
        }
    }
}

/// While streaming: an object whose first key is a call's, an array whose first element is an
/// object, a fence in a call language whose content starts with either. A call-shaped value is
/// held (and, once closed, a call if it names a tool on offer); a value that is data is shown
/// once it closes.
fn stream(held: &str, sx: &mut StreamCx) -> Verdict {
    match held.as_bytes()[0] {
        b'{' => object(held, 0, sx),
        b'[' => array(held, 0, sx),
        b'`' => fence(held, sx),
        _ => Verdict::NotMine,
    }
}

/// `held` has `[` at `at`: an array whose first element may be a call object.
fn array(held: &str, at: usize, sx: &mut StreamCx) -> Verdict {
    let i = skip_blanks(held.as_bytes(), at + 1);
    match held.as_bytes().get(i).copied() {
        None => Verdict::Wait,
        Some(b'{') => object(held, i, sx),
        Some(_) => Verdict::NotMine,
    }
}

/// `held` starts with backticks: a fence whose language is JSON (or none) and whose content
/// starts with `{` or `[` may hold a call.
fn fence(held: &str, sx: &mut StreamCx) -> Verdict {
    let h = held.as_bytes();
    let ticks = h.iter().take_while(|&&c| c == b'`').count();
    if ticks < 3 {
        return if ticks == h.len() {
            Verdict::Wait
        } else {
            Verdict::NotMine
        };
    }
    let Some(nl) = h[ticks..]
        .iter()
        .position(|&c| c == b'\n')
        .map(|n| ticks + n)
    else {
        let info = held[ticks..].trim().to_ascii_lowercase();
        return if CALL_FENCES.iter().any(|f| f.starts_with(&info)) {
            Verdict::Wait
        } else {
            Verdict::NotMine
        };
    };
    let info = held[ticks..nl].trim().to_ascii_lowercase();
    if !CALL_FENCES.contains(&info.as_str()) {
        return Verdict::NotMine;
    }
    let i = skip_blanks(h, nl + 1);
    match h.get(i).copied() {
        None => Verdict::Wait,
        Some(b'{') => object(held, i, sx),
        Some(b'[') => array(held, i, sx),
        Some(_) => Verdict::NotMine,
    }
}

/// An object starts at byte `at` of `held`: a call only if its first key is a call's key, and
/// then only if, once closed, it has a call's shape.
fn object(held: &str, at: usize, sx: &mut StreamCx) -> Verdict {
    match first_key(held, at) {
        Key::More => Verdict::Wait,
        Key::None => Verdict::NotMine,
        Key::Partial(k) if CALL_KEYS.iter().any(|c| c.starts_with(k)) => Verdict::Wait,
        Key::Partial(_) => Verdict::NotMine,
        Key::Whole(k) if CALL_KEYS.contains(&k) => closed(held, at, sx),
        Key::Whole(_) => Verdict::NotMine,
    }
}

/// The first key of the object whose `{` is at `at`.
pub enum Key<'a> {
    /// Nothing after the brace yet.
    More,
    /// Not a key (a number, a brace in prose).
    None,
    /// The key so far (it may go on).
    Partial(&'a str),
    Whole(&'a str),
}

pub fn first_key(held: &str, at: usize) -> Key<'_> {
    let h = held.as_bytes();
    let i = skip_blanks(h, at + 1);
    let Some(c) = h.get(i).copied() else {
        return Key::More;
    };
    // a key in typographic quotes (text that went through a word processor)
    for (open, close) in [("“", '”'), ("‘", '’'), ("”", '”')] {
        if let Some(rest) = held[i..].strip_prefix(open) {
            let start = i + open.len();
            return match rest.find(close) {
                Some(n) => Key::Whole(&held[start..start + n]),
                None => Key::Partial(&held[start..]),
            };
        }
    }
    if c >= 0x80 && held.len() < i + 3 {
        // the first bytes of a character that may be a quote
        return Key::More;
    }
    if c == b'"' || c == b'\'' {
        match h[i + 1..].iter().position(|&x| x == c) {
            Some(n) => Key::Whole(&held[i + 1..i + 1 + n]),
            None => Key::Partial(&held[i + 1..]),
        }
    } else if c.is_ascii_alphabetic() || c == b'_' {
        let n = h[i..]
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric() || **x == b'_')
            .count();
        if i + n < h.len() {
            Key::Whole(&held[i..i + n])
        } else {
            Key::Partial(&held[i..])
        }
    } else {
        Key::None
    }
}

/// The object at `at` starts like a call: wait for it to close, then judge its shape.
fn closed(held: &str, at: usize, sx: &mut StreamCx) -> Verdict {
    match close_of(held, at, sx) {
        None => Verdict::Wait,
        Some(end) => match lenient::parse(&held[at..end]).as_ref().and_then(call_names) {
            Some(names) if names.iter().any(|n| sx.offers(n)) => Verdict::Lock,
            _ => Verdict::Text(end),
        },
    }
}

/// Where the value whose bracket is at `at` closes, scanning only what arrived since the last
/// look.
pub fn close_of(held: &str, at: usize, sx: &mut StreamCx) -> Option<usize> {
    if sx.balance.as_ref().is_none_or(|(start, _)| *start != at) {
        *sx.balance = Some((at, Balance::new(at)));
    }
    let (_, balance) = sx.balance.as_mut().expect("set above");
    balance.advance(held.as_bytes())
}

pub fn skip_blanks(h: &[u8], mut i: usize) -> usize {
    while i < h.len() && h[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}
