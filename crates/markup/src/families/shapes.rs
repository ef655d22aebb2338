//! What several families share: a call read from a JSON object (its name, its arguments in
//! whatever form they come), the span made of the calls a family found, blocks of text between
//! a family's tags, and JSON written inside such tags.

use serde_json::{Map, Value};

use super::spans::{Kind, RecoveredCall, Span, Spans};
use super::{Cx, FamilyId, Form, Found};
use crate::lenient;

/// The keys that may name the tool, hold the arguments, or come along in a call object.
pub const NAME_KEYS: [&str; 3] = ["name", "tool", "tool_name"];
pub const ARG_KEYS: [&str; 4] = ["arguments", "parameters", "args", "input"];
pub const OTHER_KEYS: [&str; 5] = ["id", "type", "call_id", "index", "tool_call_id"];

/// The calls a JSON value describes: one call object, an array of them, or a
/// `{"tool_calls": […]}` wrapper. `None` when it is anything else.
pub fn calls_in(v: &Value) -> Option<Vec<Found>> {
    match v {
        Value::Array(items) if !items.is_empty() => {
            let mut calls: Vec<Found> = items.iter().map(one_call).collect::<Option<_>>()?;
            for c in &mut calls {
                if c.form == Form::Bare {
                    c.form = Form::Array;
                }
            }
            Some(calls)
        }
        Value::Object(o) => match o.get("tool_calls") {
            Some(Value::Array(items))
                if !items.is_empty()
                    && o.keys()
                        .all(|k| ["tool_calls", "role", "content"].contains(&k.as_str())) =>
            {
                items.iter().map(one_call).collect()
            }
            _ => one_call(v).map(|c| vec![c]),
        },
        _ => None,
    }
}

/// One call object: `{"name": …, "arguments": …}` and its synonyms, or OpenAI's
/// `{"type": "function", "function": {…}}`.
pub fn one_call(v: &Value) -> Option<Found> {
    let o = v.as_object()?;
    if let Some(Value::Object(f)) = o.get("function") {
        let extra_ok = o
            .iter()
            .all(|(k, v)| k == "function" || (OTHER_KEYS.contains(&k.as_str()) && type_ok(k, v)));
        let mut c = plain(f)?;
        c.form = Form::OpenAi;
        return extra_ok.then_some(c);
    }
    plain(o)
}

fn type_ok(key: &str, v: &Value) -> bool {
    key != "type" || matches!(v.as_str(), Some("function" | "tool_use" | "tool_call"))
}

/// `{"name"|"tool"|"tool_name"|"function": "<name>", "arguments"|"parameters"|"args"|"input": …}`
/// with at most `id`/`type`/`call_id`/`index`/`tool_call_id` besides: an object with other keys
/// is data (a tool description, a record with a `name` field…), not a call.
fn plain(o: &Map<String, Value>) -> Option<Found> {
    let mut name = None;
    let mut arguments = None;
    for (k, v) in o {
        let k = k.as_str();
        if NAME_KEYS.contains(&k) || k == "function" {
            let n = v.as_str()?.trim();
            if n.is_empty() || name.is_some() {
                return None;
            }
            name = Some(n.to_string());
        } else if ARG_KEYS.contains(&k) {
            if arguments.is_some() {
                return None;
            }
            arguments = Some(v);
        } else if !OTHER_KEYS.contains(&k) || !type_ok(k, v) {
            return None;
        }
    }
    Some(Found {
        name: name?,
        arguments: arguments_from(arguments),
        form: Form::Bare,
    })
}

/// Arguments as they come: none or `null` is `{}`; a JSON string holding an object (even
/// twice encoded) is read. Anything else is kept as sent, for the repair to report.
pub fn arguments_from(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) => from_string(s),
        Some(a) => a.clone(),
    }
}

/// A string that should be arguments: `{}` when blank, the object it holds (JSON, once or twice
/// encoded, written leniently), else the string as sent.
pub fn from_string(s: &str) -> Value {
    if s.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match lenient::parse(s) {
        Some(v @ Value::Object(_)) => v,
        Some(Value::String(inner)) if inner.trim_start().starts_with('{') => {
            match lenient::parse(&inner) {
                Some(v @ Value::Object(_)) => v,
                _ => Value::String(s.to_string()),
            }
        }
        _ => Value::String(s.to_string()),
    }
}

/// The span of calls a family found between `start` and `end`, when at least one of them
/// names a tool on offer (the others are reported as skipped).
pub fn calls_span(
    start: usize,
    end: usize,
    found: Vec<Found>,
    family: FamilyId,
    cx: &Cx,
) -> Option<Span> {
    let (mut calls, mut skipped) = (Vec::new(), Vec::new());
    for f in found {
        if (cx.offered)(&f.name) {
            calls.push(RecoveredCall {
                name: f.name,
                arguments: f.arguments,
                family,
                form: f.form,
            });
        } else {
            skipped.push(f.name);
        }
    }
    (!calls.is_empty()).then_some(Span {
        start,
        end,
        kind: Kind::Calls { calls, skipped },
    })
}

/// Adds the span of calls found between `start` and `end` (see [`calls_span`]); whether it was.
pub fn add_calls(
    spans: &mut Spans,
    start: usize,
    end: usize,
    found: Vec<Found>,
    family: FamilyId,
    cx: &Cx,
) -> bool {
    calls_span(start, end, found, family, cx).is_some_and(|s| spans.add(s))
}

/// Finds the next of several texts, each looked for once over the whole text however often it
/// is asked (so a scan over many occurrences stays linear).
pub struct Finder<'a> {
    text: &'a str,
    needles: &'a [&'a str],
    /// Where each needle next occurs at or after `from` (`usize::MAX`: nowhere), or not known.
    next: Vec<Option<usize>>,
}

impl<'a> Finder<'a> {
    pub fn new(text: &'a str, needles: &'a [&'a str]) -> Self {
        Finder {
            text,
            needles,
            next: vec![None; needles.len()],
        }
    }

    /// The first occurrence at or after `from`: where, and which needle (the longest when two
    /// start at the same place).
    pub fn next(&mut self, from: usize) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for (k, needle) in self.needles.iter().enumerate() {
            let at = match self.next[k] {
                Some(at) if at >= from => at,
                _ => {
                    let at = self
                        .text
                        .get(from..)
                        .and_then(|t| super::spans::find(t, needle))
                        .map_or(usize::MAX, |p| from + p);
                    self.next[k] = Some(at);
                    at
                }
            };
            if at == usize::MAX {
                continue;
            }
            let better = best
                .is_none_or(|(b, bk)| at < b || (at == b && needle.len() > self.needles[bk].len()));
            if better {
                best = Some((at, k));
            }
        }
        best
    }
}

/// A block of text a family's tag opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Where the opening tag starts.
    pub open: usize,
    /// Where its content starts and ends.
    pub body: usize,
    pub body_end: usize,
    /// Past the closing tag; without one, where the content ends.
    pub end: usize,
    /// Whether a closing tag ended it.
    pub closed: bool,
}

/// The blocks `opens` open outside `spans`: each ends at one of `closes`, else at the next
/// opening tag or the end of the text (a reply cut off, a model that forgot the closing tag).
pub fn blocks(text: &str, opens: &[&str], closes: &[&str], spans: &Spans) -> Vec<Block> {
    let mut out = Vec::new();
    let mut finder = Finder::new(text, opens);
    let mut from = 0;
    while let Some((open, k)) = finder.next(from) {
        if let Some(s) = spans.at(open) {
            from = s.end.max(open + 1);
            continue;
        }
        let body = open + opens[k].len();
        let limit = finder.next(body).map_or(text.len(), |(n, _)| n);
        let close = closes
            .iter()
            .filter_map(|c| text[body..limit].find(c).map(|p| (body + p, c.len())))
            .min_by_key(|&(p, _)| p);
        let block = match close {
            Some((c, len)) => Block {
                open,
                body,
                body_end: c,
                end: c + len,
                closed: true,
            },
            None => Block {
                open,
                body,
                body_end: limit,
                end: limit,
                closed: false,
            },
        };
        out.push(block);
        from = block.end.max(body);
    }
    out
}

/// A fence around the whole of `s`, if there is one: its content and where that starts.
pub fn unfence(s: &str) -> (&str, usize) {
    let t = s.trim_start();
    let lead = s.len() - t.len();
    if let Some(after) = t.strip_prefix("```") {
        let nl = after.find('\n').map_or(after.len(), |n| n + 1);
        let body = &after[nl..];
        let body = body.trim_end().strip_suffix("```").unwrap_or(body);
        return (body, lead + 3 + nl);
    }
    (s, 0)
}

/// Past one of `tokens` that follows byte `at` (after blanks), or `at`.
pub fn skip_token(text: &str, at: usize, tokens: &[&str]) -> usize {
    let rest = &text[at..];
    let t = rest.trim_start();
    tokens
        .iter()
        .find(|tok| t.starts_with(*tok))
        .map_or(at, |tok| at + (rest.len() - t.len()) + tok.len())
}

/// JSON calls written between tags (`<tool_call>{…}</tool_call>`, `<tool_calls>[…]</tool_calls>`,
/// `<|python_tag|>{…}; {…}`): one or more objects or arrays, possibly in a fence.
pub struct Wrapped {
    pub opens: &'static [&'static str],
    pub closes: &'static [&'static str],
    /// Tokens that may follow the markup and belong to it (`<|eom_id|>`).
    pub after: &'static [&'static str],
}

impl Wrapped {
    /// Finds the calls in every block these tags open (see [`Wrapped`]).
    pub fn parse(&self, family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
        for b in blocks(text, self.opens, self.closes, spans) {
            let content = &text[b.body..b.body_end];
            let (inner, offset) = unfence(content);
            let (values, used) = lenient::leading_values(inner);
            if values.is_empty() {
                continue;
            }
            let end = if b.closed {
                b.end
            } else {
                b.body + offset + used
            };
            let end = skip_token(text, end, self.after);
            let found: Option<Vec<Found>> = values
                .iter()
                .map(calls_in)
                .collect::<Option<Vec<_>>>()
                .map(|v| v.into_iter().flatten().map(markup).collect());
            if let Some(found) = found {
                add_calls(spans, b.open, end, found, family, cx);
            }
        }
    }
}

/// The call as its family's markup (not one of the JSON family's forms).
pub fn markup(mut f: Found) -> Found {
    f.form = Form::Markup;
    f
}

/// At most the first `n` bytes of `s`, cut at a character's boundary.
pub fn cut(s: &str, n: usize) -> &str {
    let mut n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

/// A tool name as families write it: letters, digits and `_-.:/`, not empty.
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_alphanumeric() || "_-.:/".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_in_every_form_become_an_object() {
        let want = json!({"a": 2});
        for v in [
            json!({"a": 2}),
            json!("{\"a\": 2}"),
            json!("\"{\\\"a\\\": 2}\""),
            json!("{'a': 2,}"),
        ] {
            assert_eq!(arguments_from(Some(&v)), want, "{v}");
        }
        assert_eq!(arguments_from(None), json!({}));
        assert_eq!(arguments_from(Some(&json!(""))), json!({}));
        assert_eq!(arguments_from(Some(&json!("now"))), json!("now"));
    }

    #[test]
    fn the_finder_finds_each_needle_once() {
        let text = "a<x>b<yy>c<x>";
        let mut f = Finder::new(text, &["<x>", "<yy>"]);
        assert_eq!(f.next(0), Some((1, 0)));
        assert_eq!(f.next(2), Some((5, 1)));
        assert_eq!(f.next(6), Some((10, 0)));
        assert_eq!(f.next(11), None);
    }

    #[test]
    fn blocks_end_at_their_close_the_next_open_or_the_end() {
        let text = "x<a>1</a> <a>2<a>3";
        let b = blocks(text, &["<a>"], &["</a>"], &Spans::new());
        let bodies: Vec<&str> = b.iter().map(|b| &text[b.body..b.body_end]).collect();
        assert_eq!(bodies, vec!["1", "2", "3"]);
        assert!(b[0].closed && !b[1].closed && !b[2].closed);
    }
}
