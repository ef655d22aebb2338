//! Markup a family's parser leaves around the calls it recovered, when the family is not one the
//! registry names: a model that wraps JSON or Python calls in a section of its own
//! (`<TOOLCALL>[…]</TOOLCALL>` from Nemotron Nano v2, `<|tool_call_start|>[…]<|tool_call_end|>`
//! from LFM2) has its calls read by the JSON or Python-call family, which take only the calls:
//! the section's tags and the end-of-turn token after them (`<SPECIAL_12>`) would be left in the
//! answer. Nothing here is a list of tags: a token is recognised by its shape.
//!
//! - A special token: `<|word|>`, `<｜word｜>` (DeepSeek's full-width bars), `<SPECIAL_n>`, `</s>`.
//!   Tokenizers only write these when a server shows special tokens; they are never prose.
//! - A call-section tag: `<word>`, `</word>`, `[WORD]`, `[/WORD]`, whose word names a tool call
//!   or a function call (`<TOOLCALL>`, `<function_calls>`, `[TOOL_CALLS]`); an HTML tag (`<b>`,
//!   `<toolbar>`) or a Markdown link (`[text]`) is not one.
//!
//! Once a reply has calls ([`absorb`]): the tokens right before and after each call (only blanks
//! between) become part of its markup, an empty section (`<TOOLCALL></TOOLCALL>`) anywhere is
//! dropped, and so is every special token. Code, quotes and thinking are never read (their spans
//! are taken first). A reply with no call keeps its text as it is. While streaming
//! ([`stream`]), a call-section tag opens a call's markup, as a family's own marker does.

use crate::families::spans::{Kind, Span, Spans};
use crate::families::Verdict;

/// How long a token's word may be.
const MAX_WORD: usize = 64;

/// A token found in a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    /// A closing tag (`</x>`, `[/X]`) or a token whose word ends something (`<|tool_call_end|>`).
    pub close: bool,
    /// Its word names a tool, a call or a function.
    pub section: bool,
    /// A special token (never prose), not a tag.
    pub special: bool,
}

/// Whether a token's word names a call (`TOOLCALL`, `tool_calls`, `function_calls`,
/// `tool_call_start`, `tool_use`): not just any word with "tool" in it (`<toolbar>`).
fn names_a_call(word: &str) -> bool {
    let w: String = word
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    ["toolcall", "functioncall", "tooluse"]
        .iter()
        .any(|n| w.contains(n))
}

fn ends_something(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    w.ends_with("end") || w.contains("end_")
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-:.".contains(c)
}

/// The token that starts at byte `at` of `text`, when one does.
pub fn token_at(text: &str, at: usize) -> Option<Token> {
    let rest = text.get(at..)?;
    let tok = |len: usize, close: bool, section: bool, special: bool| {
        Some(Token {
            start: at,
            end: at + len,
            close,
            section,
            special,
        })
    };
    for (open, shut) in [("<|", "|>"), ("<｜", "｜>")] {
        if let Some(body) = rest.strip_prefix(open) {
            let n = body.find(shut)?;
            let word = &body[..n];
            if word.is_empty() || word.len() > MAX_WORD || word.contains(['\n', ' ', '<', '>', '|'])
            {
                return None;
            }
            return tok(
                open.len() + n + shut.len(),
                ends_something(word),
                names_a_call(word),
                true,
            );
        }
    }
    if rest.starts_with("</s>") {
        return tok(4, true, false, true);
    }
    if let Some(body) = rest.strip_prefix("<SPECIAL_") {
        let digits = body.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && body[digits..].starts_with('>') {
            return tok(9 + digits + 1, false, false, true);
        }
        return None;
    }
    // a call-section tag
    let (shut, upper) = match rest.as_bytes().first()? {
        b'<' => ('>', false),
        b'[' => (']', true),
        _ => return None,
    };
    let body = &rest[1..];
    let close = body.starts_with('/');
    let word_at = 1 + usize::from(close);
    let word_len = rest[word_at..]
        .find(|c: char| !word_char(c))
        .unwrap_or(rest.len() - word_at);
    let word = &rest[word_at..word_at + word_len];
    if word.is_empty()
        || word.len() > MAX_WORD
        || !rest[word_at + word_len..].starts_with(shut)
        || !word.starts_with(|c: char| c.is_ascii_alphabetic())
        || !names_a_call(word)
        || (upper && word.chars().any(|c| c.is_ascii_lowercase()))
    {
        return None;
    }
    tok(word_at + word_len + 1, close, true, false)
}

/// The token that ends at byte `end` of `text`, when one does.
fn token_before(text: &str, end: usize) -> Option<Token> {
    let before = text.get(..end)?;
    if !before.ends_with(['>', ']']) {
        return None;
    }
    let window = end.saturating_sub(MAX_WORD + 8);
    let mut from = end - 1;
    // the nearest opening character that makes a token ending here
    while from > window {
        from -= 1;
        if !text.is_char_boundary(from) || !matches!(text.as_bytes()[from], b'<' | b'[') {
            continue;
        }
        if let Some(t) = token_at(text, from).filter(|t| t.end == end) {
            return Some(t);
        }
    }
    None
}

fn skip_blank(text: &str, at: usize) -> usize {
    at + (text[at..].len() - text[at..].trim_start().len())
}

fn skip_blank_back(text: &str, at: usize) -> usize {
    text[..at].trim_end().len()
}

/// Once a reply has calls: the tokens around each call become part of its markup, and empty
/// sections and special tokens elsewhere are dropped (see the module doc).
pub fn absorb(text: &str, spans: &mut Spans) {
    let calls: Vec<(usize, usize)> = spans
        .iter()
        .filter(|s| matches!(s.kind, Kind::Calls { .. }))
        .map(|s| (s.start, s.end))
        .collect();
    if calls.is_empty() {
        return;
    }
    for (start, end) in calls {
        let mut s = start;
        while let Some(t) = token_before(text, skip_blank_back(text, s)) {
            if t.close || !spans.free(t.start, t.end) {
                break;
            }
            s = t.start;
        }
        let mut e = end;
        loop {
            let at = skip_blank(text, e);
            match token_at(text, at) {
                Some(t) if spans.free(t.start, t.end) && (t.close || t.special) => e = t.end,
                _ => break,
            }
        }
        if (s, e) != (start, end) {
            spans.widen(start, s, e);
        }
    }
    // elsewhere: empty sections, special tokens
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr::memchr2(b'<', b'[', &b[i..]) {
        let at = i + p;
        i = at + 1;
        if let Some(s) = spans.at(at) {
            i = s.end.max(at + 1);
            continue;
        }
        let Some(t) = token_at(text, at) else {
            continue;
        };
        let end = if t.special {
            t.end
        } else if !t.close {
            match token_at(text, skip_blank(text, t.end)) {
                Some(c) if c.close && c.section => c.end,
                _ => continue,
            }
        } else {
            continue;
        };
        if spans.add(Span {
            start: at,
            end,
            kind: Kind::Markup,
        }) {
            i = end;
        }
    }
}

/// What held streaming text is, when it starts with a token's shape: a call-section opening tag
/// opens a call's markup; the start of one may become one.
pub fn stream(held: &str) -> Verdict {
    match token_at(held, 0) {
        Some(t) if t.section && !t.close => Verdict::Lock,
        Some(_) => Verdict::NotMine,
        None if may_become_token(held) => Verdict::Wait,
        None => Verdict::NotMine,
    }
}

/// Whether `held` may still grow into a token (no character yet that no token has there).
fn may_become_token(held: &str) -> bool {
    let (body, special) = if let Some(b) = held.strip_prefix("<|") {
        (b, true)
    } else if let Some(b) = held.strip_prefix("<｜") {
        (b, true)
    } else if "<｜".starts_with(held) {
        return true;
    } else if let Some(b) = held.strip_prefix(['<', '[']) {
        (b.strip_prefix('/').unwrap_or(b), false)
    } else {
        return false;
    };
    if body.len() > MAX_WORD {
        return false;
    }
    if special {
        return body.chars().all(|c| !matches!(c, '\n' | ' ' | '<' | '>'));
    }
    body.chars().all(word_char)
        && (body.is_empty() || body.starts_with(|c: char| c.is_ascii_alphabetic()))
}
