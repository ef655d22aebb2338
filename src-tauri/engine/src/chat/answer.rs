//! A constrained reply's answer, streamed. In text mode constrained to JSON (`ToolMode::Json`)
//! every reply is one JSON object: a call (`{"tool": …, "arguments": …}`) or an answer
//! (`{"answer": "…"}`). The person should see neither: a call becomes a card, and an answer's text
//! should stream in as any reply's does. [`AnswerStream`] reads the object as it arrives and lets
//! go of the answer string's decoded characters as soon as they are certain (an escape is waited
//! for until it is whole); anything else (a call, or text that is not such an object) is held
//! back, for the end of the reply to sort out.
//!
//! What [`AnswerStream::push`] returned is always the start of the answer's text, so the whole
//! reply's final text (the answer, once the object is parsed) begins with what was shown.

/// Where the reader is in `{ "answer" : "…" }`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    /// Before the string: reading `{ "answer" :` and the opening quote.
    Prefix,
    /// Inside the answer string.
    Answer,
    /// After the closing quote, or the reply is not an answer object: nothing more is shown.
    Done,
}

#[derive(Debug)]
pub struct AnswerStream {
    at: At,
    /// Raw text not consumed yet (the prefix read so far, or an escape not whole yet).
    pending: String,
    /// Everything pushed, for when nothing of it was shown.
    all: String,
    /// Whether any of the answer was shown.
    shown: bool,
}

impl Default for AnswerStream {
    fn default() -> Self {
        AnswerStream {
            at: At::Prefix,
            pending: String::new(),
            all: String::new(),
            shown: false,
        }
    }
}

/// What the prefix looks like so far.
enum Prefix {
    /// It can still become `{ "answer" : "` (nothing certain yet).
    Maybe,
    /// It is one: the answer string starts after this many bytes.
    Is(usize),
    /// It is not an answer object.
    Not,
}

fn prefix(s: &str) -> Prefix {
    const PARTS: [&str; 4] = ["{", "\"answer\"", ":", "\""];
    let mut rest = s;
    for part in PARTS {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Prefix::Maybe;
        }
        if let Some(after) = rest.strip_prefix(part) {
            rest = after;
        } else if part.starts_with(rest) {
            return Prefix::Maybe;
        } else {
            return Prefix::Not;
        }
    }
    Prefix::Is(s.len() - rest.len())
}

impl AnswerStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next piece of the reply; returns the answer text that is certain now.
    pub fn push(&mut self, delta: &str) -> String {
        self.all.push_str(delta);
        self.pending.push_str(delta);
        let mut out = String::new();
        loop {
            match self.at {
                At::Prefix => match prefix(&self.pending) {
                    Prefix::Maybe => break,
                    Prefix::Not => {
                        self.at = At::Done;
                        self.pending.clear();
                    }
                    Prefix::Is(n) => {
                        self.pending.drain(..n);
                        self.at = At::Answer;
                    }
                },
                At::Answer => {
                    let (text, used, closed) = decode(&self.pending);
                    out.push_str(&text);
                    self.pending.drain(..used);
                    if closed {
                        self.at = At::Done;
                        self.pending.clear();
                    }
                    break;
                }
                At::Done => {
                    self.pending.clear();
                    break;
                }
            }
        }
        self.shown |= !out.is_empty();
        out
    }

    /// The end of the stream: the text that was held back and is not part of the answer shown
    /// (everything, when nothing was shown; nothing is lost when a reply breaks off).
    pub fn finish(self) -> String {
        if self.shown {
            String::new()
        } else {
            self.all
        }
    }
}

/// Decodes the JSON string body at the start of `s`: the text, how many bytes were used, and
/// whether the closing quote was reached. Stops before an escape that is not whole yet.
fn decode(s: &str) -> (String, usize, bool) {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (out, i + 1, true),
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    return (out, i, false);
                };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'u' => {
                        let Some((c, len)) = unicode_escape(&s[i..]) else {
                            return (out, i, false);
                        };
                        out.push(c);
                        // skip the rest of the escape (`\u` was read)
                        for _ in 0..len - 2 {
                            chars.next();
                        }
                    }
                    other => out.push(other),
                }
            }
            c => out.push(c),
        }
    }
    (out, s.len(), false)
}

/// `\uXXXX` (or a surrogate pair of two) at the start of `s`: the character and the escape's
/// length in bytes. `None` when it is not whole yet; a broken escape becomes U+FFFD.
fn unicode_escape(s: &str) -> Option<(char, usize)> {
    let hex = |from: usize| -> Option<Option<u32>> {
        let digits = s.get(from..from + 4)?;
        Some(u32::from_str_radix(digits, 16).ok())
    };
    let Some(first) = hex(2)? else {
        return Some(('\u{fffd}', 6));
    };
    if (0xD800..0xDC00).contains(&first) {
        // a high surrogate: its low half follows as another escape
        let rest = s.get(6..)?;
        if rest.len() < 2 {
            return None;
        }
        if !rest.starts_with("\\u") {
            return Some(('\u{fffd}', 6));
        }
        let low = hex(8)?;
        return Some(match low {
            Some(low) if (0xDC00..0xE000).contains(&low) => (
                char::from_u32(0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00))
                    .unwrap_or('\u{fffd}'),
                12,
            ),
            _ => ('\u{fffd}', 6),
        });
    }
    Some((char::from_u32(first).unwrap_or('\u{fffd}'), 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(text: &str, piece: usize) -> (String, String) {
        let mut a = AnswerStream::new();
        let chars: Vec<char> = text.chars().collect();
        let mut shown = String::new();
        for p in chars.chunks(piece) {
            shown.push_str(&a.push(&p.iter().collect::<String>()));
        }
        (shown, a.finish())
    }

    #[test]
    fn an_answer_streams_as_its_decoded_text_in_pieces_of_any_size() {
        let text = r#" { "answer" : "Line \"one\"\nand é \u00e9 \ud83d\ude00 \\ end" } "#;
        let whole = "Line \"one\"\nand é é 😀 \\ end";
        for n in 1..=text.len() {
            let (shown, rest) = streamed(text, n);
            assert_eq!(shown, whole, "pieces of {n}");
            assert_eq!(rest, "");
        }
    }

    #[test]
    fn a_call_or_other_text_is_never_shown_and_given_back_whole() {
        for text in [
            r#"{"tool": "calculator__add", "arguments": {"a": 1}}"#,
            r#"{"arguments": {}, "answer": "x"}"#,
            "plain words",
            r#"{"answers": "x"}"#,
        ] {
            for n in [1, 3, 100] {
                let (shown, rest) = streamed(text, n);
                assert_eq!(shown, "", "{text}");
                assert_eq!(rest, text);
            }
        }
    }

    #[test]
    fn a_cut_answer_shows_what_arrived_and_a_half_escape_waits() {
        let mut a = AnswerStream::new();
        assert_eq!(a.push(r#"{"answer": "ab\"#), "ab");
        assert_eq!(a.push("u00"), "");
        assert_eq!(a.push("e9c"), "éc");
        assert_eq!(a.finish(), "");
        let mut b = AnswerStream::new();
        assert_eq!(b.push(r#"{"answer": "x\ud83d"#), "x");
        assert_eq!(b.push(r#"\ude00"}"#), "😀");
        assert_eq!(b.push(" trailing"), "");
    }
}
