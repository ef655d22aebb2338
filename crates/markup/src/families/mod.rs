//! The tool-call formats of local model families, one file per family behind one small trait
//! ([`Family`]), and the registry ([`ALL`]) that the recovery ([`super::recover`]) and the
//! streaming hold-back ([`super::gate`]) both read: neither keeps a list of tags of its own.
//!
//! A family says which text starts its call markup for certain ([`Family::markers`]), which
//! markup is not a call and never shows (end tokens, thinking blocks: [`Family::strips`]), how
//! to find its calls in a whole reply ([`Family::parse`]: the spans of the text that are its
//! markup, and the calls in them), what a piece of a streaming reply may be
//! ([`Family::stream`]), and what in a model's chat template, family or name says a model
//! writes it ([`Family::detect`]).
//!
//! To add a family: one file here implementing [`Family`], one line in [`ALL`], and its samples
//! in `samples/<id>.txt` (replies from its documentation, chat template or parser tests, their
//! source cited; the tests check every registered family has at least three, and negatives).
//!
//! The samples are the one set the recovery, the gate (`families/tests.rs`) and the engine's loop
//! (`src-tauri/engine/tests/it/families.rs`, both wires) are tested with; `samples/tools.json`
//! holds the tools they call. [`ALL`]'s order is the order families are tried when the model's own
//! is not known: specific special tokens early, plain-text shapes late.
//!
//! Adding a family in detail: first check whether its chat template already teaches it (`cargo run
//! -p switchboard-markup --example learn -- its.jinja`). Its file is a unit struct implementing
//! `Family` (`id`, `name`, `markers` and/or `line_markers`, `strips` for its end tokens and
//! thinking blocks, `parse`, and `detect`: the text its chat template holds, parts of its model
//! names, the family its server reports); build on `shapes::Wrapped` for JSON between tags,
//! `xml.rs` for XML parameters, `pythonic`/`pylit` for Python calls; override `stream` only when
//! its markers do not settle its markup (as `harmony.rs`, `functionary.rs` do). One `mod <id>;` and
//! its place in `ALL` (how early it is tried). Its samples: at least three replies with calls,
//! parallel ones if it has them, and a negative, each with its `source:`. Then `cargo test -p
//! switchboard-markup families` and `-p switchboard-engine --test it families::`, and test it
//! whole, streamed and through the loop on both wires; add it to README's list.

mod command_r;
mod deepseek;
pub mod detect;
mod functionary;
mod gemma;
mod glm;
mod granite;
mod harmony;
mod hermes;
mod hunyuan;
mod internlm;
mod jamba;
pub mod json;
mod kimi;
mod langchain;
pub mod learned;
mod llama3;
mod minimax;
mod mistral;
mod phi4;
mod pythonic;
mod qwen3_coder;
mod react;
mod seed_oss;
pub mod shapes;
pub mod spans;
mod xlam;
mod xml;

pub use detect::{detect, tool_format, ModelFacts, Sign, ToolFormat};
pub use json::{call_names, is_call_shaped};
pub use spans::{Span, Spans};

use std::sync::OnceLock;

use serde_json::Value;

use super::lenient::Balance;

/// A family's stable name (`"hermes"`, `"qwen3_coder"`, …): what the cache, the window and the
/// command line show.
pub type FamilyId = &'static str;

/// How a call was written, within its family (the JSON family's forms; every other family's
/// calls are [`Form::Markup`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `{"name": …, "arguments": …}` in the text.
    Bare,
    /// The same in a ```` ```json ```` (or plain ```` ``` ````) fence.
    Fenced,
    /// A JSON array of calls.
    Array,
    /// OpenAI's `{"type": "function", "function": {"name": …, "arguments": "<json>"}}`.
    OpenAi,
    /// A family's own markup (tags, special tokens, a Python call…).
    Markup,
}

/// What the recovery knows of the tools on offer.
pub struct Cx<'a> {
    /// Whether a name (as the model wrote it) names a tool on offer.
    pub offered: &'a dyn Fn(&str) -> bool,
    /// The `inputSchema` of the tool a name (as the model wrote it) names, when known: XML
    /// parameters are typed from it (`"5"` becomes 5 where it says integer).
    pub schema: &'a dyn Fn(&str) -> Option<Value>,
    /// The user's last message: call markup copied from it is a quote, not a call.
    pub quoted: Option<&'a str>,
    /// The family the model writes, when known: its parser goes first, and its forms that
    /// would be ambiguous in another model's reply are read.
    pub family: Option<FamilyId>,
}

impl<'a> Cx<'a> {
    /// Names only, no schemas, no family known.
    pub fn names(offered: &'a dyn Fn(&str) -> bool) -> Self {
        Cx {
            offered,
            schema: &|_| None,
            quoted: None,
            family: None,
        }
    }
}

/// A call as a family read it, before its name is checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub name: String,
    /// Normally an object; anything else is kept as sent, for the repair to report.
    pub arguments: Value,
    pub form: Form,
}

impl Found {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Found {
            name: name.into(),
            arguments,
            form: Form::Markup,
        }
    }
}

/// Markup that is not a call and never shows: a token dropped wherever it stands, or a
/// thinking block whose text shows as thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strip {
    Token(&'static str),
    /// Opens with the first, closes with the second (or at the end of the reply).
    Thinking(&'static str, &'static str),
}

/// What in a model's chat template, family or name says it writes a family's markup.
#[derive(Debug, Clone, Copy, Default)]
pub struct Detect {
    /// Text the chat template holds (all of it): the strongest sign.
    pub template: &'static [&'static str],
    /// Parts of the model's name, lower case (`"qwen3-coder"`).
    pub names: &'static [&'static str],
    /// The family the server reports (Ollama's `details.family`), lower case.
    pub families: &'static [&'static str],
}

/// What a piece of held streaming text is, to one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing of this family can start here.
    NotMine,
    /// May still become this family's markup: hold it.
    Wait,
    /// Certainly a call's markup: hold the rest of the reply.
    Lock,
    /// The first n bytes are this family's text that is no markup (a JSON object that is data):
    /// show them.
    Text(usize),
    /// The first n bytes are markup that is not a call: never shown.
    Strip(usize),
    /// The first n bytes open a thinking block that ends with one of `close` (dropped too).
    Think {
        open: usize,
        close: &'static [&'static str],
    },
}

/// Where a piece of streaming text stands, and what the gate keeps between pieces.
pub struct StreamCx<'a> {
    /// At the start of a line (or of the reply).
    pub line_start: bool,
    /// After a character that is not part of a word.
    pub word_start: bool,
    /// At the start of the reply (only blanks before).
    pub reply_start: bool,
    /// Which names name a tool on offer, when known.
    pub offered: Option<&'a (dyn Fn(&str) -> bool + Send + Sync)>,
    /// The family the model is known to write, when known.
    pub family: Option<FamilyId>,
    /// The bracket scan of a value being held (its start in the held text, and the scanner),
    /// kept between pieces so a long value is read once.
    pub balance: &'a mut Option<(usize, Balance)>,
    /// The same for a Python value (parentheses counted, either quote).
    pub depth: &'a mut Option<(usize, super::pylit::Depth)>,
}

impl StreamCx<'_> {
    /// Whether `name` names a tool on offer (when the names are not known: yes).
    pub fn offers(&self, name: &str) -> bool {
        self.offered.is_none_or(|f| f(name))
    }
}

/// One model family's tool-call format (see the module doc).
pub trait Family: Sync {
    fn id(&self) -> FamilyId;
    /// As the window shows it (`"Hermes / Qwen 2.5"`).
    fn name(&self) -> &'static str;
    /// Text that starts this family's call markup for certain, wherever it stands.
    fn markers(&self) -> &'static [&'static str] {
        &[]
    }
    /// The same, only at the start of a line (`Action:`).
    fn line_markers(&self) -> &'static [&'static str] {
        &[]
    }
    /// Bytes (besides its markers' first bytes) where [`Family::stream`] may claim text: `{`
    /// for JSON.
    fn triggers(&self) -> &'static [u8] {
        &[]
    }
    /// Markup of this family that is not a call.
    fn strips(&self) -> &'static [Strip] {
        &[]
    }
    /// Finds this family's markup in a whole reply, where `spans` (what other families and the
    /// code and thinking passes found) leaves room: calls that name a tool on offer, and markup
    /// to drop.
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans);
    /// What `held` (streaming text that starts where this family's markup may start) is.
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        by_markers(self.markers(), self.line_markers(), held, sx)
    }
    fn detect(&self) -> Detect {
        Detect::default()
    }
    /// When the model's prompt opens this family's thinking, so a reply starts inside it: the
    /// marker that closes it (a family learned from a template that ends its prompt with
    /// `<think>`).
    fn opens_thinking(&self) -> Option<&'static str> {
        None
    }
    /// The family to try right after this one (a learned family's: the named family its
    /// template's text points to).
    fn then(&self) -> Option<FamilyId> {
        None
    }
}

/// Every family, in the order they are tried when the model's own is not known: families with
/// special tokens of their own first, then tags several share, then shapes that are plain text
/// (JSON, Python calls, ReAct), whose false positives are likeliest. The model's own family,
/// when known, is always tried first.
pub static ALL: &[&dyn Family] = &[
    &harmony::Harmony,
    &deepseek::DeepSeek,
    &kimi::Kimi,
    &command_r::CommandR,
    &mistral::Mistral,
    &llama3::Llama3,
    &internlm::InternLm,
    &seed_oss::SeedOss,
    &minimax::MiniMax,
    &qwen3_coder::Qwen3Coder,
    &glm::Glm,
    &hermes::Hermes,
    &phi4::Phi4,
    &granite::Granite,
    &jamba::Jamba,
    &hunyuan::Hunyuan,
    &gemma::Gemma,
    &pythonic::Pythonic,
    &functionary::Functionary,
    &langchain::LangChain,
    &xlam::Xlam,
    &json::Json,
    &react::ReAct,
];

/// The family registered under `id`: a named one, or one learned from a template
/// ([`learned::register`]).
pub fn by_id(id: &str) -> Option<&'static dyn Family> {
    ALL.iter()
        .copied()
        .find(|f| f.id() == id)
        .or_else(|| learned::by_id(id).map(|l| l as &'static dyn Family))
}

/// The families in the order to try them: `first` (the model's own), the family it says to try
/// next ([`Family::then`]), then the rest in [`ALL`]'s order.
pub fn ordered(first: Option<FamilyId>) -> impl Iterator<Item = &'static dyn Family> {
    ordered_from(first.and_then(by_id))
}

/// [`ordered`], the model's own family given.
pub fn ordered_from(
    lead: Option<&'static dyn Family>,
) -> impl Iterator<Item = &'static dyn Family> {
    let first = lead.map(|f| f.id());
    let second = lead.and_then(|f| f.then()).and_then(by_id);
    let next = second.map(|f| f.id());
    lead.into_iter().chain(second).chain(
        ALL.iter()
            .copied()
            .filter(move |f| Some(f.id()) != first && Some(f.id()) != next),
    )
}

/// Whether `id` is the model's own family `first`, or the named family it is learned after.
pub fn is_own(first: Option<FamilyId>, id: FamilyId) -> bool {
    first == Some(id) || first.and_then(by_id).and_then(|f| f.then()) == Some(id)
}

/// Every family's thinking blocks, each once, with `own`'s (a learned family's) first.
pub fn thinking_pairs_with(own: Option<&dyn Family>) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for s in own.map(|f| f.strips()).unwrap_or(&[]) {
        if let Strip::Thinking(o, c) = *s {
            if !o.is_empty() && !out.contains(&(o, c)) {
                out.push((o, c));
            }
        }
    }
    for p in thinking_pairs() {
        if !out.contains(p) {
            out.push(*p);
        }
    }
    out
}

/// Every family's tokens that never show, each once, with `own`'s first.
pub fn strip_tokens_with(own: Option<&dyn Family>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for s in own.map(|f| f.strips()).unwrap_or(&[]) {
        if let Strip::Token(t) = *s {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    for t in strip_tokens() {
        if !out.contains(t) {
            out.push(t);
        }
    }
    out
}

/// Every family's thinking blocks (open, close), each once.
pub fn thinking_pairs() -> &'static [(&'static str, &'static str)] {
    static PAIRS: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    PAIRS.get_or_init(|| {
        let mut out = Vec::new();
        for f in ALL {
            for s in f.strips() {
                if let Strip::Thinking(o, c) = *s {
                    if !out.contains(&(o, c)) {
                        out.push((o, c));
                    }
                }
            }
        }
        out
    })
}

/// Every family's tokens that never show, each once.
pub fn strip_tokens() -> &'static [&'static str] {
    static TOKENS: OnceLock<Vec<&'static str>> = OnceLock::new();
    TOKENS.get_or_init(|| {
        let mut out = Vec::new();
        for f in ALL {
            for s in f.strips() {
                if let Strip::Token(t) = *s {
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
        }
        out
    })
}

/// The verdict of plain markers: held text that starts with one is a call; a start of one may
/// become one.
pub fn by_markers(anywhere: &[&str], line: &[&str], held: &str, sx: &StreamCx) -> Verdict {
    let line = if sx.line_start { line } else { &[] };
    let all = || anywhere.iter().chain(line.iter());
    if all().any(|m| held.starts_with(m)) {
        Verdict::Lock
    } else if all().any(|m| m.starts_with(held)) {
        Verdict::Wait
    } else {
        Verdict::NotMine
    }
}

pub mod sample_file;
#[cfg(test)]
mod tests;
