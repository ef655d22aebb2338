//! The streaming hold-back: as a reply's text streams in, text that may be the start of a tool
//! call written as text is held back until it is clearly not one, so the person never sees raw
//! call JSON flash by. Prose flows through at once; only from a point where a call could start
//! (`{`, `[{`, a fence, `<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`) is text held, and it is
//! let go as soon as what follows cannot be a call. Once a call's markup is certain, everything
//! is held to the end; the caller then runs [`super::recover::recover`] on the whole reply and
//! shows its cleaned text instead, or, when no offered call was there, what [`StreamGate::finish`]
//! gives back.
//!
//! Nothing is ever lost or reordered: all that [`StreamGate::push`] returned followed by what
//! [`StreamGate::finish`] returns is exactly the text pushed.

use super::lenient::{self, Balance};
use super::recover::call_names;

/// Tags that start call markup for certain.
const TAGS: [&str; 3] = ["<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"];
/// Fence languages whose content may be a call.
const JSON_FENCES: [&str; 6] = ["", "json", "json5", "jsonc", "tool_call", "tool_code"];
/// Keys a call object may start with; an object starting with another key is not a call.
const CALL_KEYS: [&str; 13] = [
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
];

/// Which names name a tool on offer.
type Names = Box<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Default)]
pub struct StreamGate {
    /// Text not let go yet. It starts where a call could start (or is empty).
    held: String,
    /// A call's markup is certain: hold everything to the end.
    locked: bool,
    /// The scan of the object being held, kept between pushes so a long object is read once:
    /// where it starts in `held`, and the scanner.
    scan: Option<(usize, Balance)>,
    /// When given: an object with a call's shape is a call only if it names a tool on offer;
    /// one that names none (a code sample) is let go as soon as it closes.
    names: Option<Names>,
}

impl std::fmt::Debug for StreamGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamGate")
            .field("held", &self.held)
            .field("locked", &self.locked)
            .finish()
    }
}

enum Verdict {
    /// The first n bytes of `held` cannot be (the start of) a call.
    Release(usize),
    /// Could still be a call: wait for more text.
    Wait,
    /// A call for certain.
    Lock,
}

impl StreamGate {
    pub fn new() -> Self {
        Self::default()
    }

    /// A gate that lets go of call-shaped objects naming no tool `is_offered` accepts.
    pub fn with_names(is_offered: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        StreamGate {
            names: Some(Box::new(is_offered)),
            ..Self::default()
        }
    }

    /// Takes the next piece of the reply's text; returns the text that is safe to show now
    /// (possibly empty, possibly text held back from earlier pieces).
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        let mut out = String::new();
        while !self.locked && !self.held.is_empty() {
            match self.verdict() {
                Verdict::Release(n) => {
                    out.push_str(&self.held[..n]);
                    self.held.drain(..n);
                    self.scan = None;
                }
                Verdict::Wait => break,
                Verdict::Lock => self.locked = true,
            }
        }
        out
    }

    /// Whether text is being held back now.
    pub fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether a call's markup was seen for certain (everything after it is held to the end).
    pub fn saw_call(&self) -> bool {
        self.locked
    }

    /// The end of the stream: the text still held back.
    pub fn finish(self) -> String {
        self.held
    }

    fn verdict(&mut self) -> Verdict {
        let h = self.held.as_bytes();
        let Some(p) = h
            .iter()
            .position(|c| matches!(c, b'{' | b'[' | b'<' | b'`'))
        else {
            return Verdict::Release(h.len());
        };
        if p > 0 {
            return Verdict::Release(p);
        }
        match h[0] {
            b'{' => self.object(0),
            b'`' => self.fence(),
            b'[' => match tag(&self.held) {
                Verdict::Release(_) => self.array(0),
                v => v,
            },
            _ => tag(&self.held),
        }
    }

    /// `held` starts with `[`: an array whose first element may be a call object.
    fn array(&mut self, at: usize) -> Verdict {
        let i = skip_blanks(self.held.as_bytes(), at + 1);
        match self.held.as_bytes().get(i).copied() {
            None => Verdict::Wait,
            Some(b'{') => self.object(i),
            Some(_) => Verdict::Release(at + 1),
        }
    }

    /// `held` starts with backticks: a fence whose language is JSON (or none) and whose content
    /// starts with `{` or `[` may hold a call.
    fn fence(&mut self) -> Verdict {
        let h = self.held.as_bytes();
        let ticks = h.iter().take_while(|&&c| c == b'`').count();
        if ticks < 3 {
            return if ticks == h.len() {
                Verdict::Wait
            } else {
                Verdict::Release(ticks)
            };
        }
        let Some(nl) = h[ticks..]
            .iter()
            .position(|&c| c == b'\n')
            .map(|n| ticks + n)
        else {
            let info = self.held[ticks..].trim().to_ascii_lowercase();
            return if JSON_FENCES.iter().any(|f| f.starts_with(&info)) {
                Verdict::Wait
            } else {
                Verdict::Release(ticks)
            };
        };
        let info = self.held[ticks..nl].trim().to_ascii_lowercase();
        if !JSON_FENCES.contains(&info.as_str()) {
            return Verdict::Release(ticks);
        }
        let i = skip_blanks(h, nl + 1);
        match h.get(i).copied() {
            None => Verdict::Wait,
            Some(b'{') => self.object(i),
            Some(b'[') => self.array(i),
            Some(_) => Verdict::Release(ticks),
        }
    }

    /// An object starts at byte `at` of `held`: a call only if its first key is a call's key, and
    /// then only if, once closed, it has a call's shape.
    fn object(&mut self, at: usize) -> Verdict {
        let h = self.held.as_bytes();
        let i = skip_blanks(h, at + 1);
        let Some(c) = h.get(i).copied() else {
            return Verdict::Wait;
        };
        let (key, complete) = if c == b'"' || c == b'\'' {
            match h[i + 1..].iter().position(|&x| x == c) {
                Some(n) => (&self.held[i + 1..i + 1 + n], true),
                None => (&self.held[i + 1..], false),
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let n = h[i..]
                .iter()
                .take_while(|x| x.is_ascii_alphanumeric() || **x == b'_')
                .count();
            (&self.held[i..i + n], i + n < h.len())
        } else {
            return Verdict::Release(at + 1);
        };
        let fits = if complete {
            CALL_KEYS.contains(&key)
        } else {
            CALL_KEYS.iter().any(|k| k.starts_with(key))
        };
        match (fits, complete) {
            (false, _) => Verdict::Release(at + 1),
            (true, false) => Verdict::Wait,
            (true, true) => self.closed(at),
        }
    }

    /// The object at `at` starts like a call: wait for it to close, then judge its shape.
    fn closed(&mut self, at: usize) -> Verdict {
        if self.scan.as_ref().is_none_or(|(start, _)| *start != at) {
            self.scan = Some((at, Balance::new(at)));
        }
        let (_, balance) = self.scan.as_mut().expect("set above");
        match balance.advance(self.held.as_bytes()) {
            None => Verdict::Wait,
            Some(end) => match lenient::parse(&self.held[at..end])
                .as_ref()
                .and_then(call_names)
            {
                Some(names)
                    if self
                        .names
                        .as_ref()
                        .is_none_or(|offered| names.iter().any(|n| offered(n))) =>
                {
                    Verdict::Lock
                }
                _ => Verdict::Release(end),
            },
        }
    }
}

/// `held` starts with `<` or `[`: one of the call tags, the start of one, or neither.
fn tag(held: &str) -> Verdict {
    if TAGS.iter().any(|t| held.starts_with(t)) {
        Verdict::Lock
    } else if TAGS.iter().any(|t| t.starts_with(held)) {
        Verdict::Wait
    } else {
        Verdict::Release(1)
    }
}

fn skip_blanks(h: &[u8], mut i: usize) -> usize {
    while i < h.len() && h[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
