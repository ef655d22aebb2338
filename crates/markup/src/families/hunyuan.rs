//! Tencent Hunyuan (A13B): `<tool_calls>[{"name": …, "arguments": …}]</tool_calls>`, the
//! reasoning in `<think>…</think>`, the answer in `<answer>…</answer>` (the tags never show).

use super::shapes::Wrapped;
use super::spans::{Kind, Span, Spans};
use super::{by_markers, Cx, Detect, Family, FamilyId, StreamCx, Strip, Verdict};

pub struct Hunyuan;

const TAGS: Wrapped = Wrapped {
    opens: &["<tool_calls>"],
    closes: &["</tool_calls>"],
    after: &[],
};

impl Family for Hunyuan {
    fn id(&self) -> FamilyId {
        "hunyuan"
    }
    fn name(&self) -> &'static str {
        "Hunyuan (<tool_calls>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<tool_calls>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Thinking("<think>", "</think>")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        TAGS.parse(self.id(), text, cx, spans);
        answer_tags(text, spans);
    }
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        for (tag, ok) in [("<answer>", sx.reply_start), ("</answer>", true)] {
            if ok && held.starts_with(tag) {
                return Verdict::Strip(tag.len());
            }
            if ok && tag.starts_with(held) {
                return Verdict::Wait;
            }
        }
        by_markers(self.markers(), self.line_markers(), held, sx)
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<tool_calls>", "<answer>"],
            names: &["hunyuan"],
            families: &["hunyuan", "hunyuan-moe"],
        }
    }
}

/// `<answer>` where the answer starts (only blanks or spans before it) and `</answer>` where it
/// ends: the wrapper Hunyuan puts around its answer.
fn answer_tags(text: &str, spans: &mut Spans) {
    let mut at = 0;
    while let Some(s) = spans.at(at) {
        at = s.end;
    }
    let lead = text[at..].len() - text[at..].trim_start().len();
    let open = at + lead;
    if !text[open..].starts_with("<answer>") {
        return;
    }
    let t = text.trim_end();
    let close = t
        .strip_suffix("</answer>")
        .map(|s| s.len())
        .filter(|&c| c > open && spans.free(c, c + "</answer>".len()));
    if let Some(c) = close {
        spans.add(Span {
            start: c,
            end: c + "</answer>".len(),
            kind: Kind::Markup,
        });
    }
    spans.add(Span {
        start: open,
        end: open + "<answer>".len(),
        kind: Kind::Markup,
    });
}
