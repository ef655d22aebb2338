//! MiniMax: M2 writes `<minimax:tool_call><invoke name="x"><parameter name="k">v</parameter>
//! </invoke>…</minimax:tool_call>` (values typed from the schema); M1 writes
//! `<tool_calls>{…}\n{…}</tool_calls>`, one JSON object a line (Jamba's tag: when MiniMax is not
//! known to be the model's family, Jamba's parser reads it). Both think in `<think>…</think>`.

use super::jamba;
use super::shapes::{add_calls, blocks};
use super::spans::Spans;
use super::xml::{attr, params, typed, ParamForm};
use super::{Cx, Detect, Family, FamilyId, Found, Strip};

pub struct MiniMax;

impl Family for MiniMax {
    fn id(&self) -> FamilyId {
        "minimax"
    }
    fn name(&self) -> &'static str {
        "MiniMax (<minimax:tool_call>, <tool_calls>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<minimax:tool_call>", "<tool_calls>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Thinking("<think>", "</think>")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        for b in blocks(
            text,
            &["<minimax:tool_call>"],
            &["</minimax:tool_call>"],
            spans,
        ) {
            if let Some(calls) = invokes(&text[b.body..b.body_end], cx) {
                add_calls(spans, b.open, b.end, calls, self.id(), cx);
            }
        }
        jamba::TAGS.parse(self.id(), text, cx, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<minimax:tool_call>"],
            names: &["minimax"],
            families: &["minimax", "minimax-m2"],
        }
    }
}

/// The `<invoke name="x">…</invoke>` calls in a block.
fn invokes(body: &str, cx: &Cx) -> Option<Vec<Found>> {
    let mut out = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let after = rest.strip_prefix("<invoke")?;
        let gt = after.find('>')?;
        let name = attr(&after[..gt], "name")?.trim();
        if name.is_empty() {
            return None;
        }
        let inner = &after[gt + 1..];
        let (content, next) = match inner.find("</invoke>") {
            Some(c) => (&inner[..c], &inner[c + "</invoke>".len()..]),
            None => (inner, ""),
        };
        let params = params(content, ParamForm::NameAttr)?;
        out.push(Found::new(name, typed(params, (cx.schema)(name).as_ref())));
        rest = next.trim();
    }
    (!out.is_empty()).then_some(out)
}
