//! Llama 3.1/3.2/3.3: `<|python_tag|>{"name": …, "parameters": …}` (several separated by `;`),
//! ended by `<|eom_id|>` or `<|eot_id|>`. Llama 3's plain JSON (`{"name": …, "parameters":
//! …}` with no tag, as its JSON-mode prompt asks) is the JSON family's.

use super::shapes::Wrapped;
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Strip};

pub struct Llama3;

const TAGS: Wrapped = Wrapped {
    opens: &["<|python_tag|>"],
    closes: &[],
    after: &["<|eom_id|>", "<|eot_id|>"],
};

impl Family for Llama3 {
    fn id(&self) -> FamilyId {
        "llama3"
    }
    fn name(&self) -> &'static str {
        "Llama 3.x (<|python_tag|>, JSON)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<|python_tag|>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[
            Strip::Token("<|eot_id|>"),
            Strip::Token("<|eom_id|>"),
            Strip::Token("<|end_of_text|>"),
        ]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        TAGS.parse(self.id(), text, cx, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<|python_tag|>"],
            names: &["llama3.1", "llama3.3", "llama-3.1", "llama-3.3", "llama3"],
            families: &["llama"],
        }
    }
}
