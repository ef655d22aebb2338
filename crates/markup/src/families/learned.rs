//! A family no file here names: its markup learned from the model's own chat template
//! ([`crate::template`]). The markers are what the template wrote around the probe calls; this
//! reads a reply with them: the calls between them (each call's name, its arguments as a JSON
//! object, or as one tagged parameter after another), thinking between its markers (or from the
//! reply's start, when the prompt opened it), and the tokens that end a turn.
//!
//! Learned families live as long as the program (one per distinct template, made once), so their
//! markers are `&'static str` like every named family's.

use std::sync::Mutex;

use serde::Serialize;

use serde_json::{Map, Value};

use super::shapes::{add_calls, calls_in, is_name, markup};
use super::spans::{self, Kind, Span, Spans};
use super::{Cx, Family, FamilyId, Found, Strip};
use crate::lenient;

/// What a chat template taught ([`crate::template::learn`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Learning {
    /// The learned family (calls, thinking, end tokens), when anything was learned.
    pub family: Option<FamilyId>,
    /// The calls' markup, `NAME` and `…` for what varies, when the calls were learned.
    pub calls: Option<String>,
    /// Thinking's markers (`<think>…</think>`), when learned.
    pub thinking: Option<String>,
    /// The prompt opens thinking: a reply starts inside it.
    pub opens_thinking: bool,
    /// Why the calls were not learned (the named families read them then).
    pub not_learned: Option<String>,
    /// The named family the template's text points to (tried right after the learned one).
    pub then: Option<FamilyId>,
    /// The template's digest (what the analysis is kept by).
    pub digest: String,
}

/// A hole in a learned literal for a call's id (`call00001` in the probe): any run of id
/// characters.
pub const ID_HOLE: char = '\u{E011}';
/// A hole for the parameter's own name (a closing tag that repeats it).
pub const KEY_HOLE: char = '\u{E010}';

/// How a call's arguments are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Args {
    /// One JSON object.
    Json,
    /// One parameter after another, each its name and its value between markers.
    Tagged(Tagged),
}

/// The markers of one tagged parameter: `khead NAME kpost [tag] vpre [quote] VALUE [quote] vtail`,
/// parameters separated by `sep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    pub khead: &'static str,
    pub kpost: &'static str,
    pub vpre: &'static str,
    pub vtail: &'static str,
    pub sep: &'static str,
    /// What wraps a string value (`<|"|>`); values not wrapped are JSON.
    pub quote: Option<&'static str>,
    /// The text between `kpost` and `vpre` that says a value is a string (`true` in
    /// `string="true"`), and what it says otherwise; values of the other kind are JSON.
    pub string_tag: Option<(&'static str, &'static str)>,
}

/// How a call is written, around its name and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// The whole call is a JSON object: the key of its name (`None`: the name is the key of
    /// the arguments, `{"NAME": {…}}`) and of its arguments.
    Json {
        name_key: Option<&'static str>,
        args_key: Option<&'static str>,
    },
    /// The name in markup (`<function=NAME>`, `[TOOL_CALLS]NAME[ARGS]`), then the arguments.
    Named {
        name_close: &'static str,
        args: Args,
    },
}

/// The calls' markup: a section around them (`section_open`, `section_close`), each call
/// (`call_open`, the call, `call_close`), calls separated by blanks or `sep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calls {
    pub section_open: &'static str,
    pub section_close: &'static str,
    pub call_open: &'static str,
    pub call_close: &'static str,
    pub sep: &'static str,
    pub call: Call,
}

/// A family learned from a chat template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learned {
    pub id: FamilyId,
    /// As the window shows it: the markup with `…` for the name and arguments.
    pub sketch: &'static str,
    pub calls: Option<Calls>,
    /// Thinking's opening and closing markers (the opening may be empty: the prompt opens it).
    pub thinking: Option<(&'static str, &'static str)>,
    /// The prompt opens thinking: a reply starts inside it, up to the closing marker.
    pub opens_thinking: bool,
    /// Tokens that end a turn (dropped where they are left).
    pub end_tokens: &'static [&'static str],
    /// The named family the template's text points to, tried second.
    pub then: Option<FamilyId>,
    /// What starts its markup (for the gate).
    pub markers: &'static [&'static str],
    /// Its thinking and end tokens, as every family says them.
    pub strips: &'static [Strip],
}

/// Every learned family, for [`super::by_id`].
static LEARNED: Mutex<Vec<&'static Learned>> = Mutex::new(Vec::new());

/// Keeps a learned family for the rest of the program: its id then names it like a named one.
pub fn register(l: Learned) -> &'static Learned {
    let mut all = LEARNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = all.iter().find(|x| x.id == l.id) {
        return found;
    }
    let l: &'static Learned = Box::leak(Box::new(l));
    all.push(l);
    l
}

/// The learned family registered under `id`.
pub fn by_id(id: &str) -> Option<&'static Learned> {
    let all = LEARNED.lock().unwrap_or_else(|e| e.into_inner());
    all.iter().copied().find(|l| l.id == id)
}

/// A string kept for the rest of the program.
pub fn leak(s: impl Into<String>) -> &'static str {
    Box::leak(s.into().into_boxed_str())
}

impl Family for Learned {
    fn id(&self) -> FamilyId {
        self.id
    }

    fn name(&self) -> &'static str {
        self.sketch
    }

    fn markers(&self) -> &'static [&'static str] {
        self.markers
    }

    fn strips(&self) -> &'static [Strip] {
        self.strips
    }

    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        if let Some(c) = &self.calls {
            parse_calls(self.id, c, text, cx, spans);
        }
    }

    fn opens_thinking(&self) -> Option<&'static str> {
        self.thinking
            .filter(|_| self.opens_thinking)
            .map(|(_, c)| c)
    }

    fn then(&self) -> Option<FamilyId> {
        self.then
    }
}

/// Finds every section of calls in `text`.
fn parse_calls(id: FamilyId, c: &Calls, text: &str, cx: &Cx, spans: &mut Spans) {
    let opener = if c.section_open.trim().is_empty() {
        c.call_open
    } else {
        c.section_open
    };
    let lead = literal_lead(opener);
    if lead.is_empty() {
        return;
    }
    let mut from = 0;
    while let Some(at) = spans::find_free(text, lead, from, spans) {
        from = at + lead.len();
        let Some((end, found)) = section(c, text, at, cx) else {
            continue;
        };
        if found.is_empty() {
            continue;
        }
        if add_calls(spans, at, end, found, id, cx) {
            from = end;
        }
    }
}

/// The part of a literal up to its first hole or digit, trimmed: what is searched for.
pub fn literal_lead(s: &str) -> &str {
    let s = s.trim();
    let cut = s
        .char_indices()
        .find(|(_, c)| *c == ID_HOLE || *c == KEY_HOLE || c.is_ascii_digit())
        .map_or(s.len(), |(i, _)| i);
    s[..cut].trim_end()
}

/// The section that starts at `at`: where it ends, and its calls.
fn section(c: &Calls, text: &str, at: usize, cx: &Cx) -> Option<(usize, Vec<Found>)> {
    let mut pos = at;
    let sectioned = !c.section_open.trim().is_empty();
    if sectioned {
        pos = expect(text, pos, c.section_open)?;
    }
    let mut found = Vec::new();
    loop {
        let start = pos;
        if !found.is_empty() {
            pos = expect(text, pos, c.sep).unwrap_or(pos);
        }
        let opened = expect(text, pos, c.call_open);
        let p = match opened {
            Some(p) => p,
            None if found.is_empty() => return None,
            None => {
                pos = start;
                break;
            }
        };
        if c.call_open.trim().is_empty() && !found.is_empty() && !sectioned {
            pos = start;
            break;
        }
        match one_call(c, text, p, cx) {
            Some((end, mut calls)) => {
                if calls.is_empty() && c.call_open.trim().is_empty() {
                    pos = start;
                    break;
                }
                found.append(&mut calls);
                pos = expect(text, end, c.call_close).unwrap_or(end);
            }
            None if found.is_empty() => return None,
            None => {
                pos = start;
                break;
            }
        }
        if text[pos..].trim().is_empty() {
            break;
        }
    }
    if sectioned {
        pos = expect(text, pos, c.section_close).unwrap_or(pos);
    }
    Some((pos, found))
}

/// One call at `pos` (after its opening): where it ends (before its closing), and the calls
/// in it (a JSON value may hold several).
fn one_call(c: &Calls, text: &str, pos: usize, cx: &Cx) -> Option<(usize, Vec<Found>)> {
    match &c.call {
        Call::Json { name_key, args_key } => {
            let at = skip_blank(text, pos);
            if !text[at..].starts_with(['{', '[']) {
                return None;
            }
            let (v, end) = lenient::parse_at(text, at)?;
            let mut calls = Vec::new();
            json_calls(&v, *name_key, *args_key, &mut calls);
            if calls.is_empty() {
                calls = calls_in(&v)?.into_iter().map(markup).collect();
            }
            Some((end, calls))
        }
        Call::Named { name_close, args } => {
            let at = skip_blank(text, pos);
            let name_end = word_end(text, at, literal_lead(name_close))?;
            let name = text[at..name_end].trim();
            if !is_name(name) {
                return None;
            }
            let p = expect(text, name_end, name_close)?;
            let (end, arguments) = match args {
                Args::Json => {
                    let a = skip_blank(text, p);
                    if !text[a..].starts_with('{') {
                        return None;
                    }
                    let (v, end) = lenient::parse_at(text, a)?;
                    (end, v)
                }
                Args::Tagged(t) => tagged(t, text, p, (cx.schema)(name).as_ref())?,
            };
            Some((end, vec![Found::new(name, arguments)]))
        }
    }
}

/// Where a name that starts at `at` ends: before `lead` (the marker after it; within 128
/// bytes), or where name characters stop when nothing marks its end.
fn word_end(text: &str, at: usize, lead: &str) -> Option<usize> {
    if lead.is_empty() {
        return Some(
            at + text[at..]
                .find(|ch: char| !is_name_char(ch))
                .unwrap_or(text.len() - at),
        );
    }
    let window = super::shapes::cut(&text[at..], 160);
    spans::find(window, lead).map(|n| at + n)
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || "_-.:/".contains(c)
}

/// The calls in a JSON value, by the keys learned: objects that have them, wherever they are
/// (a list of calls, a wrapper around them).
fn json_calls(v: &Value, name_key: Option<&str>, args_key: Option<&str>, out: &mut Vec<Found>) {
    match v {
        Value::Array(items) => items
            .iter()
            .for_each(|x| json_calls(x, name_key, args_key, out)),
        Value::Object(o) => {
            match name_key {
                Some(k) => {
                    if let Some(Value::String(name)) = o.get(k) {
                        let args = args_key.and_then(|a| o.get(a));
                        out.push(Found::new(name.trim(), super::shapes::arguments_from(args)));
                        return;
                    }
                }
                None => {
                    if o.len() == 1 {
                        let (name, args) = o.iter().next().expect("one entry");
                        if is_name(name) && args.is_object() {
                            out.push(Found::new(name, args.clone()));
                            return;
                        }
                    }
                }
            }
            o.values()
                .filter(|x| x.is_object() || x.is_array())
                .for_each(|x| json_calls(x, name_key, args_key, out));
        }
        _ => {}
    }
}

/// Tagged parameters from `pos`: where they end, and the arguments (typed by the schema where
/// the markup does not say).
fn tagged(
    t: &Tagged,
    text: &str,
    mut pos: usize,
    schema: Option<&Value>,
) -> Option<(usize, Value)> {
    let mut raw: Vec<(String, String)> = Vec::new();
    let mut typed: Vec<(String, Value)> = Vec::new();
    loop {
        let start = pos;
        if !raw.is_empty() || !typed.is_empty() {
            match expect(text, pos, t.sep) {
                Some(p) => pos = p,
                None => break,
            }
        }
        let Some(p) = expect(text, pos, t.khead) else {
            pos = start;
            break;
        };
        // the parameter's name
        let k_at = skip_blank(text, p);
        let Some(k_end) = word_end(text, k_at, literal_lead(t.kpost)) else {
            pos = start;
            break;
        };
        let key = text[k_at..k_end].trim();
        if key.is_empty() || key.len() > 128 || key.contains('\n') {
            pos = start;
            break;
        }
        let Some(mut p) = expect(text, k_end, t.kpost) else {
            pos = start;
            break;
        };
        // the tag between the name and the value
        let mut is_string = None;
        if let Some((s, other)) = t.string_tag {
            let lead = literal_lead(t.vpre);
            let end = if lead.is_empty() {
                p
            } else {
                p + spans::find(&text[p..], lead)?
            };
            let tag = text[p..end].trim();
            is_string = Some(tag == s || (tag != other && !tag.is_empty() && s.contains(tag)));
            p = end;
        }
        let Some(p) = expect(text, p, t.vpre) else {
            pos = start;
            break;
        };
        // the value
        let (value, after) = match t.quote {
            Some(q) if text[p..].starts_with(q) => {
                let body = p + q.len();
                let close = body + spans::find(&text[body..], q)?;
                (
                    Value::String(text[body..close].to_string()),
                    close + q.len(),
                )
            }
            _ => {
                let end = value_end(t, text, p, key)?;
                let rawv = &text[p..end];
                let v = match (t.quote, is_string) {
                    (_, Some(true)) => Some(Value::String(strip_layout(rawv).to_string())),
                    (Some(_), _) | (_, Some(false)) => {
                        lenient::parse(rawv).or_else(|| Some(Value::String(rawv.trim().into())))
                    }
                    _ => None,
                };
                match v {
                    Some(v) => (v, end),
                    None => {
                        raw.push((key.to_string(), rawv.to_string()));
                        let after =
                            expect(text, end, &t.vtail.replace(KEY_HOLE, key)).unwrap_or(end);
                        pos = after;
                        continue;
                    }
                }
            }
        };
        typed.push((key.to_string(), value));
        pos = expect(text, after, &t.vtail.replace(KEY_HOLE, key)).unwrap_or(after);
    }
    if raw.is_empty() && typed.is_empty() {
        // a call without arguments is a call
        return Some((pos, Value::Object(Map::new())));
    }
    let mut args = match super::xml::typed(raw, schema) {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    for (k, v) in typed {
        args.insert(k, v);
    }
    Some((pos, Value::Object(args)))
}

/// Where an unquoted value starting at `p` ends: at its closing marker, else at the next
/// parameter or the end of the call.
fn value_end(t: &Tagged, text: &str, p: usize, key: &str) -> Option<usize> {
    let tail = t.vtail.replace(KEY_HOLE, key);
    let lead = literal_lead(&tail);
    if !lead.is_empty() {
        return Some(p + spans::find(&text[p..], lead)?);
    }
    let sep = literal_lead(t.sep);
    let head = literal_lead(t.khead);
    let next = [sep, head]
        .iter()
        .filter(|m| !m.is_empty())
        .filter_map(|m| spans::find(&text[p..], m))
        .min();
    next.map(|n| p + n)
}

/// A value's own line breaks around it are layout.
fn strip_layout(v: &str) -> &str {
    let v = v.strip_prefix('\n').unwrap_or(v);
    v.strip_suffix('\n').unwrap_or(v)
}

fn skip_blank(text: &str, pos: usize) -> usize {
    pos + (text[pos..].len() - text[pos..].trim_start().len())
}

/// Past `lit` at `pos` (blanks before it skipped; blanks in it match any blanks, holes any id,
/// a run of digits any run of digits); `None` when the text does not go on with it. An empty
/// literal matches at once.
pub fn expect(text: &str, pos: usize, lit: &str) -> Option<usize> {
    let lit = lit.trim();
    if lit.is_empty() {
        return Some(pos);
    }
    let t = text.as_bytes();
    let mut i = skip_blank(text, pos);
    let mut chars = lit.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            i = skip_blank(text, i);
            continue;
        }
        if c == ID_HOLE {
            let n = text[i..]
                .find(|ch: char| !(ch.is_alphanumeric() || "_-.:".contains(ch)))
                .unwrap_or(text.len() - i);
            if n == 0 {
                return None;
            }
            i += n;
            continue;
        }
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                chars.next();
            }
            let n = t[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            i += n;
            continue;
        }
        let mut buf = [0u8; 4];
        let s = c.encode_utf8(&mut buf);
        if !text[i..].starts_with(&*s) {
            return None;
        }
        i += s.len();
    }
    Some(i)
}

/// The span of a reply that the prompt's opened thinking covers: from the start to its closing
/// marker, when the reply has one and no opening marker before it.
pub fn opened_thinking(text: &str, open: &str, close: &str) -> Option<Span> {
    let c = spans::find(text, close)?;
    if !open.is_empty() && spans::find(&text[..c], open).is_some() {
        return None;
    }
    Some(Span {
        start: 0,
        end: c + close.len(),
        kind: Kind::Thinking(text[..c].to_string()),
    })
}
