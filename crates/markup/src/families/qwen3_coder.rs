//! Qwen3-Coder (and NVIDIA Nemotron Nano, which shares it): `<tool_call><function=name>
//! <parameter=key>value</parameter>…</function></tool_call>`, values as plain text typed from
//! the tool's schema; the `<tool_call>` wrapper is sometimes left out.

use super::shapes::blocks;
use super::spans::{Kind, Span, Spans};
use super::xml::equals_functions;
use super::{Cx, Detect, Family, FamilyId};

pub struct Qwen3Coder;

impl Family for Qwen3Coder {
    fn id(&self) -> FamilyId {
        "qwen3_coder"
    }
    fn name(&self) -> &'static str {
        "Qwen3-Coder (<function=…><parameter=…>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<tool_call>", "<function="]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        for b in blocks(text, &["<tool_call>"], &["</tool_call>"], spans) {
            let body = &text[b.body..b.body_end];
            if !body.trim_start().starts_with("<function=") {
                continue;
            }
            if let Some(calls) = equals_functions(body, cx) {
                add(spans, b.open, b.end, calls, self.id(), cx);
            }
        }
        // without the wrapper
        for b in blocks(text, &["<function="], &["</function>"], spans) {
            let whole = &text[b.open..b.end];
            if let Some(calls) = equals_functions(whole, cx) {
                add(spans, b.open, b.end, calls, self.id(), cx);
            }
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<tool_call>", "<function=", "<parameter="],
            names: &[
                "qwen3-coder",
                "qwen3coder",
                "qwen3.5",
                "nemotron-nano",
                "nemotron_nano",
            ],
            families: &[],
        }
    }
}

fn add(
    spans: &mut Spans,
    start: usize,
    end: usize,
    calls: Vec<super::Found>,
    family: FamilyId,
    cx: &Cx,
) {
    if !super::shapes::add_calls(spans, start, end, calls, family, cx) {
        // markup of a call to a tool not on offer: not a call, and nothing else reads it
        spans.add(Span {
            start,
            end,
            kind: Kind::Keep,
        });
    }
}
