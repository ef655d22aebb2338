//! DeepSeek V3 and R1: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name
//! ```json {…} ```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`; V3.1:
//! `<｜tool▁call▁begin｜>name<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`. R1 and its distills think in
//! `<think>…</think>` and write the opening token in several spellings (as llama.cpp accepts
//! them). A section without a call marker in it is not read.

use super::shapes::{add_calls, arguments_from, blocks, unfence};
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Found, Strip};
use crate::lenient;

pub struct DeepSeek;

const OPENS: &[&str] = &[
    "<｜tool▁calls▁begin｜>",
    "<｜tool_calls_begin｜>",
    "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>",
    "<｜tool▁calls｜>",
];
const CLOSES: &[&str] = &[
    "<｜tool▁calls▁end｜>",
    "<｜tool_calls_end｜>",
    "<｜tool calls end｜>",
    "<｜tool\\_calls\\_end｜>",
];
const CALL_OPENS: &[&str] = &["<｜tool▁call▁begin｜>", "<｜tool_call_begin｜>"];
const CALL_CLOSES: &[&str] = &["<｜tool▁call▁end｜>", "<｜tool_call_end｜>"];
const SEPS: &[&str] = &["<｜tool▁sep｜>", "<｜tool_sep｜>"];

impl Family for DeepSeek {
    fn id(&self) -> FamilyId {
        "deepseek"
    }
    fn name(&self) -> &'static str {
        "DeepSeek V3 / V3.1 / R1"
    }
    fn markers(&self) -> &'static [&'static str] {
        &[
            "<｜tool▁calls▁begin｜>",
            "<｜tool_calls_begin｜>",
            "<｜tool calls begin｜>",
            "<｜tool\\_calls\\_begin｜>",
            "<｜tool▁calls｜>",
            "<｜tool▁call▁begin｜>",
        ]
    }
    fn strips(&self) -> &'static [Strip] {
        &[
            Strip::Thinking("<think>", "</think>"),
            Strip::Token("<｜end▁of▁sentence｜>"),
        ]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        for b in blocks(text, OPENS, CLOSES, spans) {
            let calls = calls(&text[b.body..b.body_end]);
            if !calls.is_empty() {
                add_calls(spans, b.open, b.end, calls, self.id(), cx);
            }
        }
        // calls without the section around them
        for b in blocks(text, CALL_OPENS, CALL_CLOSES, spans) {
            if let Some(c) = call(&text[b.body..b.body_end]) {
                add_calls(spans, b.open, b.end, vec![c], self.id(), cx);
            }
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<｜tool▁calls▁begin｜>"],
            names: &["deepseek"],
            families: &["deepseek2", "deepseek3"],
        }
    }
}

/// The calls in a section's body.
fn calls(body: &str) -> Vec<Found> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some((at, open)) = CALL_OPENS
        .iter()
        .filter_map(|o| super::spans::find(rest, o).map(|p| (p, *o)))
        .min_by_key(|&(p, _)| p)
    {
        let inner = &rest[at + open.len()..];
        let (content, after) = match CALL_CLOSES
            .iter()
            .filter_map(|c| super::spans::find(inner, c).map(|p| (p, c.len())))
            .min_by_key(|&(p, _)| p)
        {
            Some((c, len)) => (&inner[..c], &inner[c + len..]),
            None => (inner, ""),
        };
        if let Some(c) = call(content) {
            out.push(c);
        }
        rest = after;
    }
    out
}

/// One call's content: `function<｜tool▁sep｜>name\n```json\n{…}\n```` (V3, R1) or
/// `name<｜tool▁sep｜>{…}` (V3.1).
fn call(content: &str) -> Option<Found> {
    let (head, tail) = SEPS.iter().find_map(|s| content.split_once(s))?;
    let head = head.trim();
    let (name, json) = if head == "function" || head.is_empty() {
        let (name, json) = tail.split_once('\n').unwrap_or((tail, ""));
        let name = name.trim();
        // the arguments may follow the name on its line
        match name.find(['{', '`']) {
            Some(p) if json.trim().is_empty() => (name[..p].trim(), &tail[p..]),
            _ => (name, json),
        }
    } else {
        (head, tail)
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let (inner, _) = unfence(json);
    let inner = inner.trim();
    let arguments = if inner.is_empty() {
        arguments_from(None)
    } else {
        match lenient::parse(inner) {
            Some(v) => arguments_from(Some(&v)),
            None => serde_json::Value::String(inner.to_string()),
        }
    };
    Some(Found::new(name, arguments))
}
