//! The spans of a reply that are markup (calls, thinking, tokens to drop) or that are never
//! markup (code, quotes), as the passes of the recovery find them; and the text and thinking
//! left when they are taken out.

use std::collections::BTreeMap;

use super::{FamilyId, Form};

/// A call found in a reply, whose name names a tool on offer.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveredCall {
    /// The name as the model wrote it (resolve it with [`crate::resolve::resolve`]).
    pub name: String,
    /// Normally an object; a JSON string holding an object has been read. Anything else is
    /// kept as sent, for [`crate::repair::repair`] to report.
    pub arguments: serde_json::Value,
    /// The family whose markup it was in.
    pub family: FamilyId,
    pub form: Form,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Call markup: the calls in it whose names are offered, and the names that are not
    /// (the model is told those did not run).
    Calls {
        calls: Vec<RecoveredCall>,
        skipped: Vec<String>,
    },
    /// A thinking block: its text shows as thinking.
    Thinking(String),
    /// Markup that is dropped (an end token, a channel header).
    Markup,
    /// Markup that stands for this text (an agent's "final answer" object).
    Replace(String),
    /// Text that stays as it is and holds no markup (a code sample, a quote).
    Keep,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

/// Spans that do not overlap, by where they start.
#[derive(Debug, Default)]
pub struct Spans {
    map: BTreeMap<usize, Span>,
}

impl Spans {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `start..end` overlaps no span.
    pub fn free(&self, start: usize, end: usize) -> bool {
        if start >= end {
            return self.at(start).is_none();
        }
        self.map
            .range(..end)
            .next_back()
            .is_none_or(|(_, s)| s.end <= start)
    }

    /// Adds a span where it overlaps none; whether it was added.
    pub fn add(&mut self, span: Span) -> bool {
        if span.start >= span.end || !self.free(span.start, span.end) {
            return false;
        }
        self.map.insert(span.start, span);
        true
    }

    /// Moves the span that starts at `start` to `new_start..new_end` (which must overlap no
    /// other span: the caller checked); whether there was one.
    pub fn widen(&mut self, start: usize, new_start: usize, new_end: usize) -> bool {
        let Some(mut s) = self.map.remove(&start) else {
            return false;
        };
        s.start = new_start;
        s.end = new_end;
        self.map.insert(new_start, s);
        true
    }

    /// The span `at` is in.
    pub fn at(&self, at: usize) -> Option<&Span> {
        self.map
            .range(..=at)
            .next_back()
            .map(|(_, s)| s)
            .filter(|s| at < s.end)
    }

    /// Where the first span starting after `at` starts.
    pub fn next_start(&self, at: usize) -> Option<usize> {
        self.map.range(at + 1..).next().map(|(&s, _)| s)
    }

    /// Where the text before `at` stops being covered by the spans before it: the end of the
    /// last span starting before `at` (at most `at`), 0 when none.
    pub fn last_end_before(&self, at: usize) -> usize {
        self.map
            .range(..at)
            .next_back()
            .map(|(_, s)| s.end.min(at))
            .unwrap_or(0)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Span> {
        self.map.values()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Span> {
        self.map.values_mut()
    }

    pub fn has_calls(&self) -> bool {
        self.iter().any(|s| matches!(s.kind, Kind::Calls { .. }))
    }

    /// Whether any span changes the text (anything but [`Kind::Keep`]).
    pub fn changes_text(&self) -> bool {
        self.iter().any(|s| s.kind != Kind::Keep)
    }
}

/// The next place `needle` occurs in `text` at or after `from` and outside every span: where
/// it starts.
pub fn find_free(text: &str, needle: &str, mut from: usize, spans: &Spans) -> Option<usize> {
    while from <= text.len() {
        let at = from + find(text.get(from..)?, needle)?;
        match spans.at(at) {
            Some(s) => from = s.end.max(at + 1),
            None => return Some(at),
        }
    }
    None
}

/// Where `needle` first occurs in `text` (as `str::find`, with memchr's SIMD search: a reply is
/// searched for every family's markers).
pub fn find(text: &str, needle: &str) -> Option<usize> {
    memchr::memmem::find(text.as_bytes(), needle.as_bytes())
}

/// What is left: the text without the markup (prose around it kept, a paragraph break where
/// there was one), and the thinking blocks' text.
pub fn assemble(text: &str, spans: &Spans) -> (String, String) {
    let mut pieces: Vec<&str> = Vec::new();
    let mut thinking = Vec::new();
    let mut last = 0;
    for s in spans.iter() {
        if s.kind == Kind::Keep {
            continue;
        }
        pieces.push(&text[last..s.start]);
        match &s.kind {
            Kind::Thinking(t) if !t.trim().is_empty() => thinking.push(t.trim()),
            Kind::Replace(t) => pieces.push(t),
            _ => {}
        }
        last = s.end;
    }
    pieces.push(&text[last..]);
    (join_kept(&pieces), thinking.join("\n\n"))
}

/// Joins what is left of the text around removed markup: a paragraph break where there was
/// one, a line break where there was one, else a space.
pub fn join_kept(pieces: &[&str]) -> String {
    // the blanks between two kept pieces, one run at a time: around a call on its own line, the
    // line break before it and the one after it make one line break, not a paragraph break
    fn sep(blanks: &[&str]) -> &'static str {
        if blanks.iter().any(|b| b.contains("\n\n")) {
            "\n\n"
        } else if blanks.iter().any(|b| b.contains('\n')) {
            "\n"
        } else if blanks.iter().any(|b| !b.is_empty()) {
            " "
        } else {
            // markup inside a word: the word is whole again
            ""
        }
    }
    let mut out = String::new();
    let mut blanks: Vec<&str> = Vec::new();
    for piece in pieces {
        let t = piece.trim();
        if t.is_empty() {
            blanks.push(piece);
            continue;
        }
        blanks.push(&piece[..piece.len() - piece.trim_start().len()]);
        if !out.is_empty() {
            out.push_str(sep(&blanks));
        }
        out.push_str(t);
        blanks.clear();
        blanks.push(&piece[piece.trim_end().len()..]);
    }
    out
}

/// Fence languages whose content may be calls (every other fence is code).
pub const CALL_FENCES: [&str; 6] = ["", "json", "json5", "jsonc", "tool_call", "tool_code"];

/// The fence (```` ``` ````) that opens at byte `at`: its language (lower case), where its
/// content starts and ends, and where it ends (past the closing fence, or the end of the text).
pub fn fence_at(text: &str, at: usize) -> (String, usize, usize, usize) {
    let info_at = at + 3;
    let line_end = text[info_at..]
        .find('\n')
        .map_or(text.len(), |n| info_at + n);
    let info = text[info_at..line_end].trim().to_ascii_lowercase();
    let body = (line_end + 1).min(text.len());
    match text[body..].find("```") {
        Some(c) => (info, body, body + c, body + c + 3),
        None => (info, body, text.len(), text.len()),
    }
}

/// Text that is never markup, found before any family looks: fences in a language that is not
/// one calls are written in (code samples), inline code, and quoted lines (`> `).
pub fn code_and_quotes(text: &str, spans: &mut Spans) {
    let mut from = 0;
    while let Some(at) = find_free(text, "```", from, spans) {
        let (info, _, _, end) = fence_at(text, at);
        if !CALL_FENCES.contains(&info.as_str()) {
            spans.add(Span {
                start: at,
                end,
                kind: Kind::Keep,
            });
        }
        from = end.max(at + 3);
    }
    inline_code(text, spans);
    quotes(text, spans);
}

/// `` `code` `` within a line, outside fences.
fn inline_code(text: &str, spans: &mut Spans) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let Some(p) = memchr::memchr(b'`', &b[i..]) else {
            break;
        };
        i += p;
        if let Some(s) = spans.at(i) {
            i = s.end.max(i + 1);
            continue;
        }
        let run = b[i..].iter().take_while(|&&c| c == b'`').count();
        if run >= 3 {
            // a fence in a call language: the families read it
            i += run;
            continue;
        }
        let close = closing_ticks(b, i + run, run);
        match close {
            Some(c) if spans.free(i, c + run) => {
                spans.add(Span {
                    start: i,
                    end: c + run,
                    kind: Kind::Keep,
                });
                i = c + run;
            }
            _ => i += run,
        }
    }
}

/// Where the first run of `run` backticks at or after `from` and before the line's end starts
/// (a longer run counts too, as `str::find` of the run would find it).
fn closing_ticks(b: &[u8], mut from: usize, run: usize) -> Option<usize> {
    while let Some(p) = memchr::memchr2(b'`', b'\n', &b[from..]) {
        let at = from + p;
        if b[at] == b'\n' {
            return None;
        }
        if b[at..].starts_with(&b"``"[..run]) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Lines quoted in Markdown (`> …`).
fn quotes(text: &str, spans: &mut Spans) {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start_matches([' ', '\t']);
        if (t.starts_with("> ") || t == ">" || t == ">\n") && spans.free(at, at + line.len()) {
            spans.add(Span {
                start: at,
                end: at + line.len(),
                kind: Kind::Keep,
            });
        }
        at += line.len();
    }
}

/// Words that, just before a call's markup in the same sentence, say it is not a call being
/// made now: one made before, quoted, or shown as an example.
const NOT_NOW: [&str; 47] = [
    "i called",
    "i've called",
    "i have called",
    "i had called",
    "i already called",
    "i used",
    "i've used",
    "i have used",
    "i ran",
    "i've run",
    "i have run",
    "i invoked",
    "was called",
    "were called",
    "previously",
    "earlier i",
    "last time",
    "you wrote",
    "you said",
    "you sent",
    "you typed",
    "you asked",
    "your message",
    "as you wrote",
    "you quoted",
    "for example",
    "for instance",
    "e.g.",
    "example:",
    "an example",
    "you can call",
    "you could call",
    "you would call",
    "would look like",
    // prose about a tool, not a call of it (words a call made now also follows, such as
    // "it looks like" or "this takes", are not here: a tool or function must be their subject)
    "you can use",
    "you could use",
    "can be called with",
    "is called with",
    "tool takes",
    "tool accepts",
    "tool expects",
    "function takes",
    "function accepts",
    "function expects",
    "the format",
    "the syntax",
    "call looks like",
];

/// Whether the sentence leading to some markup says it is not a call being made now (see
/// [`NOT_NOW`]).
pub fn says_not_now(lead: &str) -> bool {
    let lead = last_sentence(lead).to_lowercase();
    NOT_NOW.iter().any(|w| lead.contains(w))
}

/// Calls whose markup is quoted (copied from the user's message) or introduced as past or an
/// example stay text: a miss is better than a call the model did not mean.
pub fn not_now(text: &str, quoted: Option<&str>, spans: &mut Spans) {
    let starts: Vec<(usize, usize)> = spans
        .iter()
        .filter(|s| matches!(s.kind, Kind::Calls { .. }))
        .map(|s| (s.start, s.end))
        .collect();
    for (start, end) in starts {
        let lead = lead_in(text, start, spans);
        let copied = quoted.is_some_and(|q| {
            let markup = text[start..end].trim();
            markup.len() >= 16 && q.contains(markup)
        });
        if copied || says_not_now(lead) {
            if let Some(s) = spans.iter_mut().find(|s| s.start == start) {
                s.kind = Kind::Keep;
            }
        }
    }
}

/// The sentence that leads to byte `at`: from the end of the last sentence (or paragraph, or
/// span) before it, at most 200 bytes back.
fn lead_in<'t>(text: &'t str, at: usize, spans: &Spans) -> &'t str {
    let mut from = at.saturating_sub(200).max(spans.last_end_before(at));
    while !text.is_char_boundary(from) {
        from += 1;
    }
    last_sentence(&text[from..at])
}

/// The last sentence of `before` (after its last paragraph break and sentence end).
pub fn last_sentence(before: &str) -> &str {
    let para = before.rfind("\n\n").map_or(0, |p| p + 2);
    let before = &before[para..];
    let sentence = [". ", "! ", "? ", ".\n", "!\n", "?\n"]
        .iter()
        .filter_map(|s| before.rfind(s).map(|p| p + s.len()))
        .max()
        .unwrap_or(0);
    &before[sentence..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(start: usize, end: usize) -> Span {
        Span {
            start,
            end,
            kind: Kind::Keep,
        }
    }

    #[test]
    fn spans_do_not_overlap_and_are_found_by_position() {
        let mut s = Spans::new();
        assert!(s.add(keep(5, 10)));
        assert!(!s.add(keep(9, 12)));
        assert!(!s.add(keep(0, 6)));
        assert!(!s.add(keep(6, 7)));
        assert!(s.add(keep(10, 12)));
        assert!(s.add(keep(0, 5)));
        assert_eq!(s.at(9).map(|x| x.start), Some(5));
        assert_eq!(s.at(12), None);
        assert_eq!(s.next_start(5), Some(10));
        assert_eq!(s.last_end_before(10), 10);
        assert_eq!(s.last_end_before(11), 11);
        assert!(!s.add(keep(3, 3)), "empty spans are not kept");
    }

    #[test]
    fn code_and_quotes_are_kept_as_they_are() {
        let text =
            "Run `call()` now.\n```python\nx = {1: 2}\n```\n> quoted {\"a\": 1}\n```json\n{}\n```";
        let mut s = Spans::new();
        code_and_quotes(text, &mut s);
        let kept: Vec<&str> = s.iter().map(|x| &text[x.start..x.end]).collect();
        assert_eq!(
            kept,
            vec![
                "`call()`",
                "```python\nx = {1: 2}\n```",
                "> quoted {\"a\": 1}\n"
            ]
        );
    }

    #[test]
    fn the_lead_in_is_the_last_sentence() {
        let text = "I used it before. Now let me add: X";
        let s = Spans::new();
        assert_eq!(lead_in(text, text.len() - 1, &s), "Now let me add: ");
        let text = "First.\n\nYou wrote X";
        assert_eq!(lead_in(text, text.len() - 1, &s), "You wrote ");
    }
}
