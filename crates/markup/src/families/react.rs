//! The ReAct shape agent frameworks teach models: `Thought: …` (thinking), `Action: tool` and
//! `Action Input: {…}` (a call; a plain-text input goes to the tool's one parameter when it has
//! exactly one), `Final Answer: …` (the answer). An `Observation:` the model wrote itself after
//! its call is made up: it is dropped, and everything after it. Only a reply with a call or a
//! final answer in this shape is read so.

use serde_json::Value;

use super::shapes::{add_calls, from_string, is_name, Finder};
use super::spans::{Kind, Span, Spans};
use super::{Cx, Detect, Family, FamilyId, Found, StreamCx, Verdict};
use crate::lenient;

pub struct ReAct;

const ACTION: &str = "Action:";
const INPUT: &str = "Action Input:";
const THOUGHT: &str = "Thought:";
const FINAL: &str = "Final Answer:";
const OBSERVATION: &str = "Observation:";

impl Family for ReAct {
    fn id(&self) -> FamilyId {
        "react"
    }
    fn name(&self) -> &'static str {
        "ReAct (Thought / Action / Action Input)"
    }
    fn line_markers(&self) -> &'static [&'static str] {
        &[ACTION, THOUGHT]
    }
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        if !sx.line_start {
            return Verdict::NotMine;
        }
        if held.starts_with(THOUGHT) {
            return Verdict::Lock;
        }
        let Some(rest) = held.strip_prefix(ACTION) else {
            return if THOUGHT.starts_with(held) || ACTION.starts_with(held) {
                Verdict::Wait
            } else {
                Verdict::NotMine
            };
        };
        // the action's name, on its line: a call when it names a tool on offer
        let (name, whole) = match rest.find('\n') {
            Some(n) => (rest[..n].trim(), true),
            None => (rest.trim_start(), false),
        };
        let name = name.trim_matches(['`', '"', '\'']);
        match (whole, name.is_empty() || is_name(name)) {
            (_, false) => Verdict::NotMine,
            (false, true) if held.len() < 200 => Verdict::Wait,
            (true, true) if sx.offers(name) => Verdict::Lock,
            _ => Verdict::NotMine,
        }
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        let calls = actions(self.id(), text, cx, spans);
        let answer = line_starts(text, FINAL, spans).next();
        if !calls && answer.is_none() {
            return;
        }
        if let Some(at) = answer {
            let lead = text[at + FINAL.len()..].len() - text[at + FINAL.len()..].trim_start().len();
            spans.add(Span {
                start: at,
                end: at + FINAL.len() + lead,
                kind: Kind::Markup,
            });
        }
        thoughts(text, spans);
    }
    fn detect(&self) -> Detect {
        Detect::default()
    }
}

/// The places `marker` starts a line, outside spans.
fn line_starts<'t>(
    text: &'t str,
    marker: &'static str,
    spans: &'t Spans,
) -> impl Iterator<Item = usize> + 't {
    text.match_indices(marker)
        .map(|(at, _)| at)
        .filter(move |&at| (at == 0 || text[..at].ends_with('\n')) && spans.at(at).is_none())
}

/// Each `Action:` line with its `Action Input:`; a made-up `Observation:` after a call is
/// dropped with all that follows. Whether any call was found.
fn actions(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) -> bool {
    let mut finder = Finder::new(text, &[ACTION]);
    let mut from = 0;
    let mut any = false;
    while let Some((at, _)) = finder.next(from) {
        from = at + ACTION.len();
        if spans.at(at).is_some() || !(at == 0 || text[..at].ends_with('\n')) {
            continue;
        }
        let line_end = text[from..].find('\n').map_or(text.len(), |n| from + n);
        let name = text[from..line_end].trim().trim_matches(['`', '"', '\'']);
        if !is_name(name) {
            continue;
        }
        let next = (line_end + 1).min(text.len());
        let rest = &text[next..];
        let skipped = rest.len() - rest.trim_start().len();
        let input_at = next + skipped;
        let Some(after) = text[input_at..].strip_prefix(INPUT) else {
            continue;
        };
        let value_at = input_at + INPUT.len() + (after.len() - after.trim_start().len());
        let (arguments, end) = input(text, value_at, name, cx);
        if !add_calls(
            spans,
            at,
            end,
            vec![Found::new(name, arguments)],
            family,
            cx,
        ) {
            continue;
        }
        any = true;
        from = end;
        let tail = &text[end..];
        if tail.trim_start().starts_with(OBSERVATION) {
            spans.add(Span {
                start: end,
                end: text.len(),
                kind: Kind::Markup,
            });
            break;
        }
    }
    any
}

/// The input after `Action Input:`: a JSON value, else the rest of the line.
fn input(text: &str, at: usize, tool: &str, cx: &Cx) -> (Value, usize) {
    if text[at..].starts_with(['{', '[']) {
        if let Some((v, end)) = lenient::parse_at(text, at) {
            return (v, end);
        }
    }
    let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n);
    let raw = text[at..line_end].trim().trim_matches('"');
    let v = match from_string(raw) {
        Value::String(s) => {
            let schema = (cx.schema)(tool);
            let props = schema
                .as_ref()
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .filter(|p| p.len() == 1);
            match props {
                Some(p) => serde_json::json!({ p.keys().next().expect("one").clone(): s }),
                None => Value::String(s),
            }
        }
        v => v,
    };
    (v, line_end)
}

/// `Thought:` lines (and the lines that follow them, up to the next marker) are thinking.
fn thoughts(text: &str, spans: &mut Spans) {
    let starts: Vec<usize> = line_starts(text, THOUGHT, spans).collect();
    for at in starts {
        let body = at + THOUGHT.len();
        let mut end = text.len();
        let mut line = text[body..].find('\n').map(|n| body + n + 1);
        while let Some(l) = line {
            let rest = &text[l..];
            if [ACTION, FINAL, THOUGHT, OBSERVATION]
                .iter()
                .any(|m| rest.starts_with(m))
                || !spans.free(l, l + 1)
            {
                end = l;
                break;
            }
            line = rest.find('\n').map(|n| l + n + 1);
        }
        spans.add(Span {
            start: at,
            end,
            kind: Kind::Thinking(text[body..end].trim().to_string()),
        });
    }
}
