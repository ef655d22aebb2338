//! Mistral: `[TOOL_CALLS][{"name": …, "arguments": …, "id": …}, …]` (v0.3 and earlier, a
//! space may follow the token, `[/TOOL_CALLS]` or `</s>` may end it), and from tokenizer v11
//! on `[TOOL_CALLS]name[ARGS]{…}`, with `[CALL_ID]id` before `[ARGS]` in some versions, or
//! `[TOOL_CALLS]name{…}` when the server drops the special tokens it decodes. Magistral's
//! thinking is `[THINK]…[/THINK]`.

use serde_json::{json, Value};

use super::shapes::{add_calls, calls_in, markup, skip_token, Finder};
use super::spans::Spans;
use super::{Cx, Detect, Family, FamilyId, Found, Strip};
use crate::lenient;

pub struct Mistral;

const TOKEN: &str = "[TOOL_CALLS]";
/// How far after `[TOOL_CALLS]` a v11 call's arguments may start (the name and a call id).
const HEAD: usize = 256;

impl Family for Mistral {
    fn id(&self) -> FamilyId {
        "mistral"
    }
    fn name(&self) -> &'static str {
        "Mistral ([TOOL_CALLS])"
    }
    fn markers(&self) -> &'static [&'static str] {
        &[TOKEN]
    }
    fn strips(&self) -> &'static [Strip] {
        // Magistral (from 2507) thinks between tokens of its own
        &[Strip::Thinking("[THINK]", "[/THINK]")]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        let mut finder = Finder::new(text, &[TOKEN]);
        let mut from = 0;
        while let Some((open, _)) = finder.next(from) {
            if let Some(s) = spans.at(open) {
                from = s.end.max(open + 1);
                continue;
            }
            let after = open + TOKEN.len();
            let rest = &text[after..];
            let found = if rest.trim_start().starts_with(['[', '{']) {
                let (values, used) = lenient::leading_values(rest);
                (!values.is_empty()).then(|| (values, after + used))
            } else {
                v11(text, after)
            };
            let end = match found {
                Some((values, end)) if spans.free(open, end) => {
                    let end = skip_token(text, end, &["[/TOOL_CALLS]"]);
                    let end = skip_token(text, end, &["</s>"]);
                    let calls: Option<Vec<Found>> = values
                        .iter()
                        .map(calls_in)
                        .collect::<Option<Vec<_>>>()
                        .map(|v| v.into_iter().flatten().map(markup).collect());
                    if let Some(calls) = calls {
                        add_calls(spans, open, end, calls, self.id(), cx);
                    }
                    end
                }
                _ => after,
            };
            from = end.max(after);
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["[TOOL_CALLS]"],
            names: &[
                "mistral",
                "mixtral",
                "ministral",
                "magistral",
                "devstral",
                "codestral",
                "pixtral",
                "mistral-nemo",
            ],
            families: &["mistral", "mistral3"],
        }
    }
}

/// `name[ARGS]{…}`, `name[CALL_ID]id[ARGS]{…}` or `name{…}` at byte `at`: the call as a value,
/// and its end.
fn v11(text: &str, at: usize) -> Option<(Vec<Value>, usize)> {
    let rest = &text[at..];
    let mut window = rest.len().min(HEAD);
    while !rest.is_char_boundary(window) {
        window -= 1;
    }
    let (name, json_at) = match rest[..window].find("[ARGS]") {
        Some(args_at) => (
            rest[..args_at].split("[CALL_ID]").next()?.trim(),
            at + args_at + "[ARGS]".len(),
        ),
        None => {
            let brace = rest[..window].find('{')?;
            (rest[..brace].trim(), at + brace)
        }
    };
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.:/".contains(c));
    if !name_ok {
        return None;
    }
    let lead = text[json_at..].len() - text[json_at..].trim_start().len();
    if !text[json_at + lead..].starts_with('{') {
        return None;
    }
    let (args, end) = lenient::parse_at(text, json_at + lead)?;
    Some((vec![json!({"name": name, "arguments": args})], end))
}
