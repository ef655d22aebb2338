//! Salesforce xLAM: a JSON list of `{"name": …, "arguments": …}` (in a fence, after
//! `<think>…</think>`, or in Mistral's or Hermes' tags, as its parser in vLLM accepts). Every
//! one of those shapes is another family's (the JSON family reads the list), so this family
//! only names the format for models known to write it.

use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Strip};

pub struct Xlam;

impl Family for Xlam {
    fn id(&self) -> FamilyId {
        "xlam"
    }
    fn name(&self) -> &'static str {
        "xLAM (JSON list)"
    }
    fn strips(&self) -> &'static [Strip] {
        &[Strip::Thinking("<think>", "</think>")]
    }
    fn parse(&self, _text: &str, _cx: &Cx, _spans: &mut Spans) {}
    fn detect(&self) -> Detect {
        Detect {
            template: &[],
            names: &["xlam"],
            families: &[],
        }
    }
}
