//! IBM Granite 3.0: `<|tool_call|>[{"name": …, "arguments": …}, …]` (Granite 3.1 and later
//! write `<tool_call>[…]`, read as Hermes'). The list may come with its arguments before its
//! name.

use super::shapes::Wrapped;
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Strip};

pub struct Granite;

const TAGS: Wrapped = Wrapped {
    opens: &["<|tool_call|>"],
    closes: &["<|/tool_call|>"],
    after: &["<|end_of_text|>"],
};

impl Family for Granite {
    fn id(&self) -> FamilyId {
        "granite"
    }
    fn name(&self) -> &'static str {
        "Granite (<|tool_call|>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<|tool_call|>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Token("<|end_of_text|>")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        TAGS.parse(self.id(), text, cx, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<|tool_call|>", "<|start_of_role|>"],
            names: &["granite"],
            families: &["granite", "granitemoe"],
        }
    }
}
