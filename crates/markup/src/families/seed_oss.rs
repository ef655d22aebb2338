//! ByteDance Seed-OSS: `<seed:tool_call><function=name><parameter=key>value</parameter>
//! </function></seed:tool_call>`, thinking in `<seed:think>…</seed:think>`.

use super::shapes::{add_calls, blocks};
use super::spans::Spans;
use super::xml::equals_functions;
use super::{Cx, Detect, Family, FamilyId, Strip};

pub struct SeedOss;

impl Family for SeedOss {
    fn id(&self) -> FamilyId {
        "seed_oss"
    }
    fn name(&self) -> &'static str {
        "Seed-OSS (<seed:tool_call>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<seed:tool_call>"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Thinking("<seed:think>", "</seed:think>")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        for b in blocks(text, &["<seed:tool_call>"], &["</seed:tool_call>"], spans) {
            if let Some(calls) = equals_functions(&text[b.body..b.body_end], cx) {
                add_calls(spans, b.open, b.end, calls, self.id(), cx);
            }
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<seed:tool_call>"],
            names: &["seed-oss", "seed_oss"],
            families: &["seed_oss"],
        }
    }
}
