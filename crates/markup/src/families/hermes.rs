//! Hermes 2/3 Pro and Qwen 2.5/3: `<tool_call>{"name": …, "arguments": …}</tool_call>`, one
//! block per call (Granite 3.1 writes a JSON list inside); the closing tag may be missing at
//! the end or before the next call; the JSON may sit in a fence. Qwen 3 thinks in
//! `<think>…</think>`. (Qwen3-Coder's and GLM's bodies inside the same tag are theirs.) The
//! name may be the tag's attribute: `<tool_call name="get_weather">{"city": "Paris"}</tool_call>`.

use serde_json::{Map, Value};

use super::shapes::{add_calls, is_name, skip_token, Wrapped};
use super::spans::{find_free, Spans};
use super::{Cx, Detect, Family, FamilyId, Found, Strip};
use crate::lenient;

/// The opening of a call whose name is the tag's attribute.
const NAMED: &str = "<tool_call name=";

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
        &["<tool_call>", NAMED]
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
        let mut from = 0;
        while let Some(at) = find_free(text, NAMED, from, spans) {
            from = at + NAMED.len();
            if let Some((end, call)) = named(text, at) {
                if add_calls(spans, at, end, vec![call], self.id(), cx) {
                    from = end;
                }
            }
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<tool_call>"],
            names: &["hermes", "qwen2.5", "qwen2", "qwen3", "qwq", "nous"],
            families: &["qwen2", "qwen3", "qwen2moe", "qwen3moe"],
        }
    }
}

/// `<tool_call name="NAME">{…}</tool_call>` at `at` (the arguments may be missing, the closing
/// tag too at the end): where it ends, and the call.
fn named(text: &str, at: usize) -> Option<(usize, Found)> {
    let p = at + NAMED.len();
    let quote = text[p..]
        .chars()
        .next()
        .filter(|c| *c == '"' || *c == '\'')?;
    let name_at = p + 1;
    let name_end = name_at + text[name_at..].find(quote)?;
    let name = &text[name_at..name_end];
    if !is_name(name) {
        return None;
    }
    let rest = &text[name_end + 1..];
    let gt = name_end + 1 + (rest.len() - rest.trim_start().len());
    if !text[gt..].starts_with('>') {
        return None;
    }
    let body = gt + 1;
    let args_at = body + (text[body..].len() - text[body..].trim_start().len());
    let (arguments, end) = if text[args_at..].starts_with('{') {
        lenient::parse_at(text, args_at)?
    } else if text[args_at..].starts_with("</tool_call>") || args_at == text.len() {
        (Value::Object(Map::new()), args_at)
    } else {
        return None;
    };
    let end = skip_token(text, end, &["</tool_call>"]);
    Some((end, Found::new(name, arguments)))
}
