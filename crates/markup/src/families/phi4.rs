//! Phi-4-mini (and FireFunction v2, whose format it shares): `functools[{"name": …,
//! "arguments": …}, …]`, or `<|tool_call|>[…]<|/tool_call|>`.

use super::shapes::Wrapped;
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Strip};

pub struct Phi4;

const TAGS: Wrapped = Wrapped {
    opens: &["functools", "<|tool_call|>"],
    closes: &["<|/tool_call|>"],
    after: &["<|end|>"],
};

impl Family for Phi4 {
    fn id(&self) -> FamilyId {
        "phi4"
    }
    fn name(&self) -> &'static str {
        "Phi-4-mini (functools[…])"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["functools[", "<|tool_call|>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Token("<|end|>")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        TAGS.parse(self.id(), text, cx, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["functools["],
            names: &["phi-4-mini", "phi4-mini", "firefunction"],
            families: &[],
        }
    }
}
