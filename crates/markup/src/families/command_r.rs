//! Cohere Command R7B and A: `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": …,
//! "parameters": …}]<|END_ACTION|>`, thinking in `<|START_THINKING|>…<|END_THINKING|>`, the
//! answer in `<|START_RESPONSE|>…<|END_RESPONSE|>` (the tokens never show). Command R and R+
//! (2024): `Action: ```json [{"tool_name": …, "parameters": …}] ````.

use super::shapes::{add_calls, calls_in, cut, markup, Finder, Wrapped};
use super::spans::{fence_at, Kind, Span, Spans};
use super::{by_markers, Cx, Detect, Family, FamilyId, Found, StreamCx, Strip, Verdict};
use crate::lenient;

pub struct CommandR;

const ACTION: Wrapped = Wrapped {
    opens: &["<|START_ACTION|>"],
    closes: &["<|END_ACTION|>"],
    after: &["<|END_OF_TURN_TOKEN|>"],
};

impl Family for CommandR {
    fn id(&self) -> FamilyId {
        "command_r"
    }
    fn name(&self) -> &'static str {
        "Command R (<|START_ACTION|>, Action:)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &["<|START_ACTION|>"]
    }
    fn line_markers(&self) -> &'static [&'static str] {
        &["Action: ```", "Action:\n```"]
    }
    fn strips(&self) -> &'static [Strip] {
        &[
            Strip::Thinking("<|START_THINKING|>", "<|END_THINKING|>"),
            Strip::Token("<|START_RESPONSE|>"),
            Strip::Token("<|END_RESPONSE|>"),
            Strip::Token("<|END_OF_TURN_TOKEN|>"),
        ]
    }
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        match by_markers(self.markers(), self.line_markers(), held, sx) {
            Verdict::NotMine => {}
            v => return v,
        }
        const OPENS: [&str; 4] = ["<co>", "<co: ", "</co>", "</co: "];
        if OPENS.iter().any(|o| o.starts_with(held)) {
            return Verdict::Wait;
        }
        if !OPENS.iter().any(|o| held.starts_with(o)) {
            return Verdict::NotMine;
        }
        match cut(held, 64).find('>') {
            Some(gt) if citation(&held[1..gt]) => Verdict::Strip(gt + 1),
            None if held.len() < 64 => Verdict::Wait,
            _ => Verdict::NotMine,
        }
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        ACTION.parse(self.id(), text, cx, spans);
        action_lines(self.id(), text, cx, spans);
        citations(text, spans);
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<|START_ACTION|>"],
            names: &["command-r", "command-a", "c4ai", "aya"],
            families: &["command-r", "cohere", "cohere2"],
        }
    }
}

/// Citation tags around cited text (`<co>…</co: 0:[1,2]>`, `<co: 0>…</co: 0>`): the tags go,
/// the text stays.
fn citations(text: &str, spans: &mut Spans) {
    let mut finder = Finder::new(text, &["<co>", "<co: ", "</co>", "</co: "]);
    let mut from = 0;
    while let Some((at, _)) = finder.next(from) {
        from = at + 1;
        let Some(gt) = cut(&text[at..], 64).find('>') else {
            continue;
        };
        if citation(&text[at + 1..at + gt]) && spans.free(at, at + gt + 1) {
            spans.add(Span {
                start: at,
                end: at + gt + 1,
                kind: Kind::Markup,
            });
            from = at + gt + 1;
        }
    }
}

/// Whether the inside of a tag (`co`, `/co: 0:[1,2]`) is a citation tag's.
fn citation(inside: &str) -> bool {
    inside
        .trim_start_matches('/')
        .strip_prefix("co")
        .is_some_and(|rest| {
            rest.chars()
                .all(|c| c.is_ascii_digit() || " :,[]".contains(c))
        })
}

/// `Action:` at the start of a line, then a fence (or the JSON itself) holding the calls.
fn action_lines(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
    let mut finder = Finder::new(text, &["Action:"]);
    let mut from = 0;
    while let Some((at, _)) = finder.next(from) {
        from = at + 1;
        if spans.at(at).is_some() || !(at == 0 || text[..at].ends_with('\n')) {
            continue;
        }
        let after = at + "Action:".len();
        let lead = text[after..].len() - text[after..].trim_start().len();
        let body = after + lead;
        let (values, end) = if text[body..].starts_with("```") {
            let (_, start, stop, end) = fence_at(text, body);
            let (values, used) = lenient::leading_values(&text[start..stop]);
            if !text[start + used..stop].trim().is_empty() {
                continue;
            }
            (values, end)
        } else if text[body..].starts_with('[') {
            let (values, used) = lenient::leading_values(&text[body..]);
            (values, body + used)
        } else {
            continue;
        };
        let found: Option<Vec<Found>> = values
            .iter()
            .map(calls_in)
            .collect::<Option<Vec<_>>>()
            .map(|v| v.into_iter().flatten().map(markup).collect());
        if let Some(found) = found.filter(|f| !f.is_empty()) {
            if add_calls(spans, at, end, found, family, cx) {
                from = end;
            }
        }
    }
}
