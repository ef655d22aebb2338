//! AI21 Jamba: `<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>`.

use super::shapes::Wrapped;
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId};

pub struct Jamba;

pub const TAGS: Wrapped = Wrapped {
    opens: &["<tool_calls>"],
    closes: &["</tool_calls>"],
    after: &[],
};

impl Family for Jamba {
    fn id(&self) -> FamilyId {
        "jamba"
    }
    fn name(&self) -> &'static str {
        "Jamba (<tool_calls>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<tool_calls>"]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        TAGS.parse(self.id(), text, cx, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<tool_calls>"],
            names: &["jamba"],
            families: &["jamba"],
        }
    }
}
