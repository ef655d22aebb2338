//! Google Gemma, which has no tool token: its documentation prompts it to write
//! ```` ```tool_code ```` blocks of Python calls (`get_weather(city="Paris")`, or
//! `print(default_api.get_weather(city="Paris"))` as Gemini-style code), a pythonic list
//! `[f(a=1)]`, or JSON `{"name": …, "parameters": …}` (the JSON family's).

use super::pythonic::{self, found};
use super::shapes::add_calls;
use super::spans::{fence_at, find_free, Spans};
use super::{Cx, Detect, Family, FamilyId, Found, Strip};
use crate::pylit::call_at;

pub struct Gemma;

impl Family for Gemma {
    fn id(&self) -> FamilyId {
        "gemma"
    }
    fn name(&self) -> &'static str {
        "Gemma (```tool_code, [f(a=1)])"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["```tool_code"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Token("<end_of_turn>")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        let mut from = 0;
        while let Some(open) = find_free(text, "```", from, spans) {
            let (info, body, body_end, end) = fence_at(text, open);
            from = end.max(open + 3);
            if info != "tool_code" {
                continue;
            }
            if let Some(calls) = lines(&text[body..body_end]) {
                add_calls(spans, open, end, calls, self.id(), cx);
            }
        }
        // its lists are the pythonic family's shape: read as Gemma's only from a Gemma model
        if super::is_own(cx.family, self.id()) {
            pythonic::find(self.id(), text, cx, spans);
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["```tool_code"],
            names: &["gemma"],
            families: &["gemma", "gemma2", "gemma3", "gemma3n"],
        }
    }
}

/// A `tool_code` block: every line that is not blank is a call (or a list of them), possibly
/// with its result assigned (`x = f(a=1)`) and that name printed after it (`print(x)`).
fn lines(code: &str) -> Option<Vec<Found>> {
    let mut out = Vec::new();
    let mut assigned: Vec<&str> = Vec::new();
    for line in code.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (target, line) = match assignment(line) {
            Some((name, call)) => (Some(name), call),
            None => (None, line),
        };
        let inner = line
            .strip_prefix("print(")
            .and_then(|l| l.strip_suffix(')'))
            .unwrap_or(line);
        if target.is_none() && assigned.contains(&inner.trim()) {
            // the result of a call above, printed
            continue;
        }
        assigned.extend(target);
        let inner = inner.strip_prefix("default_api.").unwrap_or(inner);
        if inner.starts_with('[') {
            out.extend(pythonic::whole(inner)?);
            continue;
        }
        let c = call_at(inner, 0).filter(|c| c.end == inner.len())?;
        out.push(found(c));
    }
    (!out.is_empty()).then_some(out)
}

/// `name = rest` (a plain assignment, not `==`, `<=`, …): the name and the rest.
fn assignment(line: &str) -> Option<(&str, &str)> {
    let eq = line.find('=')?;
    let (name, rest) = (line[..eq].trim(), line[eq + 1..].trim());
    let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (is_name && !rest.is_empty() && !rest.starts_with('=')).then_some((name, rest))
}
