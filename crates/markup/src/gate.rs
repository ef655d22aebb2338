//! The streaming hold-back: as a reply's text streams in, text that may be the start of a tool
//! call's markup is held back until it is clearly not one, so the person never sees raw call
//! markup flash by. What may start markup is the family registry's to say
//! ([`super::families`]): the gate keeps no list of its own. Prose flows through at once; only
//! from a point where some family's markup could start is text held, and it is let go as soon
//! as no family claims it. Markers may arrive split into pieces of any size.
//!
//! Once a call's markup is certain, everything is held to the end; the caller then runs
//! [`super::recover::recover_with`] on the whole reply and shows its cleaned text instead.
//! Markup that is no call (end tokens, a channel header) is dropped as it comes, and a thinking
//! block streams as thinking. When the model's prompt opens thinking (learned from its template),
//! the reply streams as thinking from its start, unless the server sends the thinking apart
//! ([`StreamGate::thinking_apart`]); a closing thinking marker with no opening (the template was
//! not at hand) is dropped, and the recovery makes the text before it thinking once the reply is
//! whole. A call section's tag of a family no file names (`<TOOLCALL>`,
//! `<|tool_call_start|>`: [`super::leftovers`]) is held as a family's marker is. Code in a fence
//! of another language, and the rest of a quoted line, flow through unread.
//!
//! Nothing is ever lost or reordered: the pieces [`StreamGate::push`] returned (text, thinking
//! and dropped markup alike) followed by what [`StreamGate::finish`] returns are exactly the
//! text pushed.

use std::sync::OnceLock;

use super::families::spans::{self, CALL_FENCES};
use super::families::{self, Family, FamilyId, StreamCx, Verdict};
use super::leftovers;
use super::lenient::Balance;
use super::pylit::Depth;

/// How much of the text let go is kept to judge what leads to a call.
const LEAD: usize = 256;

/// Which names name a tool on offer.
type Names = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// A piece of the reply as the gate lets it go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text to show.
    Text(String),
    /// Thinking written in the text: shown as thinking.
    Thinking(String),
    /// Markup that is not a call, never shown.
    Markup(String),
}

/// The text of some pieces (thinking and markup left out).
pub fn text_of(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The thinking of some pieces.
pub fn thinking_of(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// Inside a thinking block that one of these ends.
    Thinking(&'static [&'static str]),
    /// Inside a fence of a language calls are not written in.
    Code,
}

pub struct StreamGate {
    /// Text not let go yet. It starts where markup could start (or is empty).
    held: String,
    /// A call's markup is certain: hold everything to the end.
    locked: bool,
    mode: Mode,
    /// The bracket scan of the value being held, kept between pushes so a long value is read
    /// once.
    balance: Option<(usize, Balance)>,
    /// The same for a Python value.
    depth: Option<(usize, Depth)>,
    /// When given: call-shaped text is a call only if it names a tool on offer; text that
    /// names none (a code sample) is let go as soon as it is whole.
    names: Option<Names>,
    /// The model's family, when known (its reply-start forms are held).
    family: Option<FamilyId>,
    /// That family itself, and what it adds to every family's lists (a learned family's markers,
    /// thinking and end tokens are in no static table).
    own: Option<&'static dyn Family>,
    pairs: Vec<(&'static str, &'static str)>,
    tokens: Vec<&'static str>,
    own_triggers: Option<Box<Triggers>>,
    /// The text let go last (its last few hundred bytes): a call introduced as past or as an
    /// example is not held.
    lead: String,
    /// What came before `held`: the start of a line, of a word, of the reply.
    line_start: bool,
    word_start: bool,
    reply_start: bool,
    /// Some text was pushed.
    pushed: bool,
    /// In a quoted line (`> …`) let go in part: the rest of the line is let go as it comes.
    quoting: bool,
}

impl Default for StreamGate {
    fn default() -> Self {
        StreamGate {
            held: String::new(),
            locked: false,
            mode: Mode::Text,
            balance: None,
            depth: None,
            names: None,
            family: None,
            own: None,
            pairs: families::thinking_pairs().to_vec(),
            tokens: families::strip_tokens().to_vec(),
            own_triggers: None,
            lead: String::new(),
            line_start: true,
            word_start: true,
            reply_start: true,
            pushed: false,
            quoting: false,
        }
    }
}

impl std::fmt::Debug for StreamGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamGate")
            .field("held", &self.held)
            .field("locked", &self.locked)
            .field("mode", &self.mode)
            .finish()
    }
}

/// What a piece let go is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum As {
    Text,
    Thinking,
    Markup,
}

/// What to do with the held text.
enum Step {
    Release(usize),
    Strip(usize),
    Think(usize, &'static [&'static str]),
    Code(usize),
    Wait,
    Lock,
}

impl StreamGate {
    pub fn new() -> Self {
        Self::default()
    }

    /// A gate that lets go of call markup naming no tool `is_offered` accepts.
    pub fn with_names(is_offered: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        StreamGate {
            names: Some(Box::new(is_offered)),
            ..Self::default()
        }
    }

    /// The model's family, when known: its own forms are held from the start of the reply.
    pub fn for_family(mut self, family: Option<FamilyId>) -> Self {
        self.family = family;
        self.own = family.and_then(families::by_id);
        if let Some(own) = self
            .own
            .filter(|f| !families::ALL.iter().any(|x| x.id() == f.id()))
        {
            self.pairs = families::thinking_pairs_with(Some(own));
            self.tokens = families::strip_tokens_with(Some(own));
            let mut t = Box::new(Triggers::new());
            t.add_family(own);
            for (open, close) in &self.pairs {
                t.add(open, false);
                t.add(close, false);
            }
            for tok in &self.tokens {
                t.add(tok, false);
            }
            self.own_triggers = Some(t);
        }
        // the prompt opened thinking: the reply starts inside it
        if let Some(close) = self.own.and_then(|f| f.opens_thinking()) {
            self.mode = Mode::Thinking(closing(close));
        }
        self
    }

    /// The server sends the reply's thinking apart from its text (llama-server's
    /// `reasoning_content`, Ollama's `thinking`): the text holds no thinking, so a prompt that
    /// opened thinking does not make the text's start thinking. Said before any text came, as
    /// the thinking comes first; once text was let go as thinking, it is too late and nothing
    /// changes.
    pub fn thinking_apart(&mut self) {
        if !self.pushed && matches!(self.mode, Mode::Thinking(_)) {
            self.mode = Mode::Text;
        }
    }

    /// Takes the next piece of the reply's text; returns what is safe to let go now (possibly
    /// nothing, possibly text held back from earlier pieces).
    pub fn push(&mut self, delta: &str) -> Vec<Piece> {
        self.pushed |= !delta.is_empty();
        self.held.push_str(delta);
        let mut out = Vec::new();
        while !self.locked && !self.held.is_empty() {
            let more = match self.mode {
                Mode::Thinking(close) => self.thinking(close, &mut out),
                Mode::Code => self.code(&mut out),
                Mode::Text => self.text(&mut out),
            };
            if !more {
                break;
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

    /// Lets go of the first `n` held bytes as `kind`; notes what they leave the next byte
    /// standing after.
    fn take(&mut self, n: usize, kind: As, out: &mut Vec<Piece>) {
        let piece: String = self.held.drain(..n).collect();
        self.balance = None;
        self.depth = None;
        if kind == As::Text {
            self.lead.push_str(&piece);
            if self.lead.len() > LEAD {
                let mut cut = self.lead.len() - LEAD;
                while !self.lead.is_char_boundary(cut) {
                    cut += 1;
                }
                self.lead.drain(..cut);
            }
        }
        if let Some(last) = piece.chars().last() {
            if kind == As::Text {
                self.line_start = last == '\n';
                self.word_start = !last.is_alphanumeric() && last != '_';
                if !piece.trim().is_empty() {
                    self.reply_start = false;
                }
            } else if last == '\n' {
                self.line_start = true;
                self.word_start = true;
            }
        }
        if !piece.is_empty() {
            out.push(match kind {
                As::Text => Piece::Text(piece),
                As::Thinking => Piece::Thinking(piece),
                As::Markup => Piece::Markup(piece),
            });
        }
    }

    /// In a thinking block: its text goes as thinking up to its closing marker (dropped).
    fn thinking(&mut self, close: &'static [&'static str], out: &mut Vec<Piece>) -> bool {
        let found = close
            .iter()
            .filter_map(|c| self.held.find(c).map(|p| (p, c.len())))
            .min_by_key(|&(p, _)| p);
        if let Some((p, len)) = found {
            self.take(p, As::Thinking, out);
            self.take(len, As::Markup, out);
            self.mode = Mode::Text;
            return true;
        }
        let keep = partial_suffix(&self.held, close);
        self.take(self.held.len() - keep, As::Thinking, out);
        false
    }

    /// In a code fence: all flows through up to and with the closing fence.
    fn code(&mut self, out: &mut Vec<Piece>) -> bool {
        if let Some(p) = self.held.find("```") {
            self.take(p + 3, As::Text, out);
            self.mode = Mode::Text;
            return true;
        }
        let keep = self.held.len() - self.held.trim_end_matches('`').len();
        self.take(self.held.len() - keep, As::Text, out);
        false
    }

    /// In text: what the registry says of the held text.
    fn text(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.step() {
            Step::Release(n) => self.take(n, As::Text, out),
            Step::Strip(n) => self.take(n, As::Markup, out),
            Step::Think(n, close) => {
                self.take(n, As::Markup, out);
                self.mode = Mode::Thinking(close);
            }
            Step::Code(n) => {
                self.take(n, As::Text, out);
                self.mode = Mode::Code;
            }
            Step::Wait => return false,
            Step::Lock => self.locked = true,
        }
        true
    }

    fn step(&mut self) -> Step {
        if self.quoting {
            return match self.held.find('\n') {
                Some(n) => {
                    self.quoting = false;
                    Step::Release(n + 1)
                }
                None => Step::Release(self.held.len()),
            };
        }
        let Some(p) = self.first_candidate() else {
            return Step::Release(self.held.len());
        };
        if p > 0 {
            return Step::Release(p);
        }
        if let Some(step) = fence(&self.held) {
            return step;
        }
        if let Some(step) = self.quoted() {
            // a quoted line let go in part: the rest of it is quoted too
            if let Step::Release(n) = step {
                if self.line_start && self.held.starts_with('>') && !self.held[..n].ends_with('\n')
                {
                    self.quoting = true;
                }
            }
            return step;
        }
        let mut wait = false;
        for (open, close) in &self.pairs {
            if self.held.starts_with(open) {
                return Step::Think(open.len(), closing(close));
            }
            // a closing marker with no opening: the prompt opened thinking (the text before it
            // was let go as text; the recovery makes it thinking), the marker never shows
            if self.held.starts_with(close) {
                return Step::Strip(close.len());
            }
            wait |= open.starts_with(self.held.as_str()) || close.starts_with(self.held.as_str());
        }
        for t in &self.tokens {
            if self.held.starts_with(t) {
                return Step::Strip(t.len());
            }
            wait |= t.starts_with(self.held.as_str());
        }
        let mut sx = StreamCx {
            line_start: self.line_start,
            word_start: self.word_start,
            reply_start: self.reply_start,
            offered: self.names.as_deref(),
            family: self.family,
            balance: &mut self.balance,
            depth: &mut self.depth,
        };
        let (mut first, mut text) = (None, 0);
        for f in families::ordered_from(self.own) {
            match f.stream(&self.held, &mut sx) {
                // past or an example: shown as the text it will stay
                Verdict::Lock if spans::says_not_now(&self.lead) => {
                    return Step::Release(first_char_len(&self.held))
                }
                Verdict::Lock => return Step::Lock,
                Verdict::Wait => wait = true,
                Verdict::Strip(n) if first.is_none() => first = Some(Step::Strip(n)),
                Verdict::Think { open, close } if first.is_none() => {
                    first = Some(Step::Think(open, close))
                }
                Verdict::Text(n) => text = text.max(n),
                _ => {}
            }
        }
        // a call section's tag of a family no file names (`<TOOLCALL>`): as a family's marker
        if first.is_none() {
            match leftovers::stream(&self.held) {
                Verdict::Lock if spans::says_not_now(&self.lead) => {
                    return Step::Release(first_char_len(&self.held))
                }
                Verdict::Lock if !wait => return Step::Lock,
                Verdict::Wait => wait = true,
                _ => {}
            }
        }
        if wait {
            Step::Wait
        } else if let Some(s) = first {
            s
        } else {
            Step::Release(text.max(first_char_len(&self.held)))
        }
    }

    /// Text the recovery never reads as markup, let go whole: a quoted line (`> …`), inline code.
    fn quoted(&self) -> Option<Step> {
        let h = self.held.as_str();
        if self.line_start && h.starts_with('>') {
            return match h.as_bytes().get(1) {
                None => Some(Step::Wait),
                Some(b' ') => Some(Step::Release(h.find('\n').map_or(h.len(), |n| n + 1))),
                _ => None,
            };
        }
        let ticks = h.bytes().take_while(|&c| c == b'`').count();
        if ticks == 0 || ticks >= 3 {
            return None;
        }
        if ticks == h.len() {
            return Some(Step::Wait);
        }
        let line = &h[ticks..h[ticks..].find('\n').map_or(h.len(), |n| ticks + n)];
        match line.find(&"``"[..ticks]) {
            Some(c) => Some(Step::Release(ticks + c + ticks)),
            None if line.len() < h.len() - ticks || line.len() > 256 => Some(Step::Release(ticks)),
            None => Some(Step::Wait),
        }
    }

    /// The first byte of `held` where some family's markup may start.
    fn first_candidate(&self) -> Option<usize> {
        let t = self.own_triggers.as_deref().unwrap_or_else(|| triggers());
        let h = self.held.as_bytes();
        let blank = self.reply_start.then(|| {
            h.iter()
                .position(|c| !c.is_ascii_whitespace())
                .unwrap_or(h.len())
        });
        let (mut line, mut word) = (self.line_start, self.word_start);
        for (i, &c) in h.iter().enumerate() {
            if t.anywhere[c as usize]
                || (line && t.line[c as usize])
                || (word && t.word[c as usize])
                || blank == Some(i)
            {
                return Some(i);
            }
            line = c == b'\n';
            word = !c.is_ascii_alphanumeric() && c != b'_' && c < 0x80;
        }
        None
    }
}

/// A fence opening at the start of `held`: in a language calls are not written in, it is code
/// (let go through its info line); in one they are, the families judge it.
fn fence(held: &str) -> Option<Step> {
    let ticks = held.bytes().take_while(|&c| c == b'`').count();
    if ticks < 3 {
        return None;
    }
    match held[ticks..].find('\n') {
        None => {
            let info = held[ticks..].trim().to_ascii_lowercase();
            let maybe_call = CALL_FENCES.iter().any(|f| f.starts_with(info.as_str()));
            // not a call language: let it go now, the rest of its line with it later
            (!maybe_call).then_some(Step::Code(held.len()))
        }
        Some(n) => {
            let info = held[ticks..ticks + n].trim().to_ascii_lowercase();
            (!CALL_FENCES.contains(&info.as_str())).then_some(Step::Code(ticks + n + 1))
        }
    }
}

/// How long the first character of a non-empty text is.
fn first_char_len(s: &str) -> usize {
    s.chars().next().map_or(1, char::len_utf8)
}

/// How many bytes at the end of `held` may be the start of one of `markers`.
fn partial_suffix(held: &str, markers: &[&str]) -> usize {
    let mut best = 0;
    for m in markers {
        for n in (1..m.len().min(held.len() + 1)).rev() {
            if n > best
                && held.is_char_boundary(held.len() - n)
                && m.starts_with(&held[held.len() - n..])
            {
                best = n;
                break;
            }
        }
    }
    best
}

/// A thinking block's closing marker as the gate's mode holds it (the same list each time it is
/// asked for the same marker).
fn closing(close: &'static str) -> &'static [&'static str] {
    static LISTS: std::sync::Mutex<Vec<&'static [&'static str]>> =
        std::sync::Mutex::new(Vec::new());
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = lists.iter().find(|l| l[0] == close) {
        return l;
    }
    let l: &'static [&'static str] = Box::leak(Box::new([close]));
    lists.push(l);
    l
}

/// The bytes where markup may start: anywhere, at the start of a line, at the start of a word.
#[derive(Clone)]
struct Triggers {
    anywhere: [bool; 256],
    line: [bool; 256],
    word: [bool; 256],
}

impl Triggers {
    fn new() -> Self {
        let mut t = Triggers {
            anywhere: [false; 256],
            line: [false; 256],
            word: [false; 256],
        };
        for f in families::ALL {
            t.add_family(*f);
        }
        for (open, close) in families::thinking_pairs() {
            t.add(open, false);
            t.add(close, false);
        }
        for tok in families::strip_tokens() {
            t.add(tok, false);
        }
        // a fence may open code to let through
        t.add("```", false);
        t
    }

    fn add(&mut self, m: &str, line: bool) {
        let Some(&c) = m.as_bytes().first() else {
            return;
        };
        if line {
            self.line[c as usize] = true;
        } else if c.is_ascii_alphanumeric() {
            self.word[c as usize] = true;
        } else {
            self.anywhere[c as usize] = true;
        }
    }

    fn add_family(&mut self, f: &dyn Family) {
        f.markers().iter().for_each(|m| self.add(m, false));
        f.line_markers().iter().for_each(|m| self.add(m, true));
        for &c in f.triggers() {
            self.add(std::str::from_utf8(&[c]).unwrap_or(""), false);
        }
    }
}

fn triggers() -> &'static Triggers {
    static T: OnceLock<Triggers> = OnceLock::new();
    T.get_or_init(Triggers::new)
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
