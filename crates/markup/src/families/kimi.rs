//! Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.name:0
//! <|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>` (a call may
//! also come without the section). The id names the function (`functions.` and `:index`
//! around it); an id that is only a counter names none, and is not read.

use super::shapes::{add_calls, blocks, from_string};
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Found};

pub struct Kimi;

const SECTION: (&[&str], &[&str]) = (
    &[
        "<|tool_calls_section_begin|>",
        "<|tool_call_section_begin|>",
    ],
    &["<|tool_calls_section_end|>", "<|tool_call_section_end|>"],
);
const CALL: (&[&str], &[&str]) = (&["<|tool_call_begin|>"], &["<|tool_call_end|>"]);
const ARGS: &str = "<|tool_call_argument_begin|>";

impl Family for Kimi {
    fn id(&self) -> FamilyId {
        "kimi"
    }
    fn name(&self) -> &'static str {
        "Kimi K2 (<|tool_calls_section_begin|>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &[
            "<|tool_calls_section_begin|>",
            "<|tool_call_section_begin|>",
            "<|tool_call_begin|>",
        ]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        for b in blocks(text, SECTION.0, SECTION.1, spans) {
            let body = &text[b.body..b.body_end];
            let calls: Vec<Found> = blocks(body, CALL.0, CALL.1, &Spans::new())
                .iter()
                .filter_map(|c| call(&body[c.body..c.body_end]))
                .collect();
            if !calls.is_empty() {
                add_calls(spans, b.open, b.end, calls, self.id(), cx);
            }
        }
        for b in blocks(text, CALL.0, CALL.1, spans) {
            if let Some(c) = call(&text[b.body..b.body_end]) {
                add_calls(spans, b.open, b.end, vec![c], self.id(), cx);
            }
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<|tool_calls_section_begin|>"],
            names: &["kimi"],
            families: &["kimi-k2"],
        }
    }
}

/// `functions.name:0 <|tool_call_argument_begin|>{…}`.
fn call(content: &str) -> Option<Found> {
    let (id, args) = content.split_once(ARGS)?;
    let id = id.trim();
    let id = id.strip_prefix("functions.").unwrap_or(id);
    let name = match id.rsplit_once(':') {
        Some((n, i)) if i.chars().all(|c| c.is_ascii_digit()) => n,
        _ => id,
    };
    if name.is_empty() || name.chars().all(|c| c.is_ascii_digit()) || name.contains(' ') {
        return None;
    }
    Some(Found::new(name, from_string(args.trim())))
}
