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
/// whether the closing quote was reached. Stops before an escape that is not whole yet; a broken
/// escape becomes U+FFFD.
fn decode(s: &str) -> (String, usize, bool) {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => return (out, i + 1, true),
            b'\\' => {
                let Some(&e) = b.get(i + 1) else {
                    return (out, i, false);
                };
                let simple = match e {
                    b'n' => Some('\n'),
                    b't' => Some('\t'),
                    b'r' => Some('\r'),
                    b'b' => Some('\u{8}'),
                    b'f' => Some('\u{c}'),
                    b'"' => Some('"'),
                    b'\\' => Some('\\'),
                    b'/' => Some('/'),
                    _ => None,
                };
                if let Some(c) = simple {
                    out.push(c);
                    i += 2;
                } else if e == b'u' {
                    match unicode_escape(&b[i..]) {
                        Escape::Partial => return (out, i, false),
                        Escape::Char(c, len) => {
                            out.push(c);
                            i += len;
                        }
                    }
                } else {
                    // an escape JSON does not have: the character itself (it is whole: a
                    // backslash is one byte, so what follows starts a character)
                    out.push('\u{fffd}');
                    i += 1;
                }
            }
            _ => {
                // one character, whole (a string that arrived is whole UTF-8)
                let c = s[i..].chars().next().expect("within the text");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    (out, s.len(), false)
}

enum Escape {
    /// Not whole yet: wait for more text.
    Partial,
    /// The character and the escape's length in bytes.
    Char(char, usize),
}

/// `\uXXXX` (or a surrogate pair of two) at the start of `b`. A broken escape (not four hex
/// digits, a lone surrogate) becomes U+FFFD and uses only its `\u`, so nothing after it is lost.
fn unicode_escape(b: &[u8]) -> Escape {
    let hex = |from: usize| -> Option<Option<u32>> {
        let digits = b.get(from..from + 4)?;
        Some(
            digits
                .iter()
                .all(u8::is_ascii_hexdigit)
                .then(|| u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok())
                .flatten(),
        )
    };
    let broken = Escape::Char('\u{fffd}', 2);
    let first = match hex(2) {
        None => return Escape::Partial,
        Some(None) => return broken,
        Some(Some(n)) => n,
    };
    if !(0xD800..0xDC00).contains(&first) {
        return match char::from_u32(first) {
            Some(c) => Escape::Char(c, 6),
            None => Escape::Char('\u{fffd}', 6),
        };
    }
    // a high surrogate: its low half follows as another escape
    match (b.get(6), b.get(7)) {
        (None, _) | (Some(b'\\'), None) => return Escape::Partial,
        (Some(b'\\'), Some(b'u')) => {}
        _ => return Escape::Char('\u{fffd}', 6),
    }
    match hex(8) {
        None => Escape::Partial,
        Some(Some(low)) if (0xDC00..0xE000).contains(&low) => Escape::Char(
            char::from_u32(0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00))
                .unwrap_or('\u{fffd}'),
            12,
        ),
        _ => Escape::Char('\u{fffd}', 6),
    }
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

    #[test]
    fn a_broken_escape_is_a_replacement_character_and_loses_nothing_after_it() {
        // not hex, a multi-byte character inside the escape, a lone surrogate, an unknown escape
        for (text, shown) in [
            (r#"{"answer": "a\uzzzzb"}"#, "a\u{fffd}zzzzb"),
            (r#"{"answer": "a\u00€0b"}"#, "a\u{fffd}00€0b"),
            (r#"{"answer": "a\ud83db"}"#, "a\u{fffd}b"),
            (r#"{"answer": "a\qb"}"#, "a\u{fffd}qb"),
        ] {
            for n in [1, 2, 3, 50] {
                let (got, rest) = streamed(text, n);
                assert_eq!(got, shown, "{text} in pieces of {n}");
                assert_eq!(rest, "");
            }
        }
    }
}
