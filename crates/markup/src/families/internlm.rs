//! InternLM 2/2.5: `<|action_start|><|plugin|>{"name": …, "parameters": …}<|action_end|>`
//! (one call per reply; `<|interpreter|>` actions are code, not tool calls).

use super::shapes::Wrapped;
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Strip};

pub struct InternLm;

const TAGS: Wrapped = Wrapped {
    opens: &["<|action_start|><|plugin|>"],
    closes: &["<|action_end|>"],
    after: &["<|im_end|>"],
};

impl Family for InternLm {
    fn id(&self) -> FamilyId {
        "internlm"
    }
    fn name(&self) -> &'static str {
        "InternLM (<|action_start|><|plugin|>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<|action_start|><|plugin|>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Token("<|im_end|>")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        TAGS.parse(self.id(), text, cx, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<|plugin|>"],
            names: &["internlm"],
            families: &["internlm2"],
        }
    }
}
