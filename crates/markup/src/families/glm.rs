//! GLM 4.5 / 4.6 / 4.7: `<tool_call>name\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>…
//! </tool_call>` (no line break after the name in 4.7), values typed from the schema, thinking
//! in `<think>…</think>`. A call whose closing tag never came is not read (as vLLM does).

use super::shapes::{add_calls, blocks, is_name};
use super::spans::Spans;
use super::xml::{params, typed, ParamForm};
use super::{Cx, Detect, Family, FamilyId, Found, Strip};

pub struct Glm;

impl Family for Glm {
    fn id(&self) -> FamilyId {
        "glm"
    }
    fn name(&self) -> &'static str {
        "GLM 4.5+ (<arg_key>/<arg_value>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<tool_call>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[
            Strip::Thinking("<think>", "</think>"),
            Strip::Token("<|user|>"),
            Strip::Token("<|observation|>"),
        ]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        for b in blocks(text, &["<tool_call>"], &["</tool_call>"], spans) {
            if !b.closed {
                continue;
            }
            if let Some(call) = call(&text[b.body..b.body_end], cx) {
                add_calls(spans, b.open, b.end, vec![call], self.id(), cx);
            }
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<tool_call>", "<arg_key>"],
            names: &["glm-4", "glm4", "glm-z1"],
            families: &["glm4", "glm4moe"],
        }
    }
}

/// `name` then its `<arg_key>`/`<arg_value>` pairs.
fn call(body: &str, cx: &Cx) -> Option<Found> {
    let body = body.trim();
    let name_end = body.find(['<', '\n']).unwrap_or(body.len());
    let name = body[..name_end].trim();
    if !is_name(name) {
        return None;
    }
    let rest = &body[name_end..];
    if !rest.contains("<arg_key>") && !rest.trim().is_empty() {
        return None;
    }
    let params = params(rest, ParamForm::ArgPairs)?;
    Some(Found::new(name, typed(params, (cx.schema)(name).as_ref())))
}
