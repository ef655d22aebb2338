//! Hermes 2/3 Pro and Qwen 2.5/3: `<tool_call>{"name": …, "arguments": …}</tool_call>`, one
//! block per call (Granite 3.1 writes a JSON list inside); the closing tag may be missing at
//! the end or before the next call; the JSON may sit in a fence. Qwen 3 thinks in
//! `<think>…</think>`. (Qwen3-Coder's and GLM's bodies inside the same tag are theirs.)

use super::shapes::Wrapped;
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Strip};

pub struct Hermes;

const TAGS: Wrapped = Wrapped {
    opens: &["<tool_call>"],
    closes: &["</tool_call>"],
    after: &["<|im_end|>"],
};

impl Family for Hermes {
    fn id(&self) -> FamilyId {
        "hermes"
    }
    fn name(&self) -> &'static str {
        "Hermes / Qwen 2.5 (<tool_call>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<tool_call>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[
            Strip::Thinking("<think>", "</think>"),
            Strip::Token("<|im_end|>"),
            Strip::Token("<|endoftext|>"),
        ]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        TAGS.parse(self.id(), text, cx, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<tool_call>"],
            names: &["hermes", "qwen2.5", "qwen2", "qwen3", "qwq", "nous"],
            families: &["qwen2", "qwen3", "qwen2moe", "qwen3moe"],
        }
    }
}
