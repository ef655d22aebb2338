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

/// A `tool_code` block: every line that is not blank is a call (or a list of them).
fn lines(code: &str) -> Option<Vec<Found>> {
    let mut out = Vec::new();
    for line in code.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let inner = line
            .strip_prefix("print(")
            .and_then(|l| l.strip_suffix(')'))
            .unwrap_or(line);
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
