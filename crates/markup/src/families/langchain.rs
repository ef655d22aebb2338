//! The JSON agent shape LangChain's agents teach models: `{"action": "tool", "action_input":
//! {…}}` (bare or in a fence). `"action": "Final Answer"` is the answer: its input becomes the
//! reply's text. A string input goes to the tool's one parameter when it has exactly one.

use serde_json::{Map, Value};

use super::json::{close_of, first_key, skip_blanks, Key};
use super::shapes::{add_calls, from_string};
use super::spans::{Kind, Span, Spans, CALL_FENCES};
use super::{Cx, Detect, Family, FamilyId, Found, StreamCx, Verdict};
use crate::lenient::{self, Balance};

pub struct LangChain;

const FINAL: [&str; 3] = ["final answer", "final_answer", "finalanswer"];

impl Family for LangChain {
    fn id(&self) -> FamilyId {
        "langchain"
    }
    fn name(&self) -> &'static str {
        "LangChain agent JSON ({\"action\", \"action_input\"})"
    }
    fn triggers(&self) -> &'static [u8] {
        b"{`"
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        let b = text.as_bytes();
        let mut i = 0;
        while let Some(p) = b[i..].iter().position(|&c| c == b'{') {
            i += p;
            if let Some(s) = spans.at(i) {
                i = s.end.max(i + 1);
                continue;
            }
            if !matches!(first_key(text, i), Key::Whole("action")) {
                i += 1;
                continue;
            }
            let limit = spans.next_start(i).unwrap_or(text.len());
            let Some(end) = Balance::new(i).advance(&b[..limit]) else {
                i += 1;
                continue;
            };
            let (start, stop) = fenced(text, i, end);
            if let Some(kind) = lenient::parse(&text[i..end]).and_then(|v| read(&v, cx)) {
                match kind {
                    Read::Answer(t) => {
                        spans.add(Span {
                            start,
                            end: stop,
                            kind: Kind::Replace(t),
                        });
                    }
                    Read::Call(f) => {
                        add_calls(spans, start, stop, vec![f], self.id(), cx);
                    }
                }
            }
            i = end;
        }
    }
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        let h = held.as_bytes();
        let at = if h[0] == b'`' {
            let ticks = h.iter().take_while(|&&c| c == b'`').count();
            if ticks == h.len() && ticks < 3 {
                return Verdict::Wait;
            }
            if ticks != 3 {
                return Verdict::NotMine;
            }
            let Some(nl) = held[3..].find('\n').map(|n| n + 3) else {
                let info = held[3..].trim().to_ascii_lowercase();
                return if CALL_FENCES.iter().any(|f| f.starts_with(&info)) {
                    Verdict::Wait
                } else {
                    Verdict::NotMine
                };
            };
            let i = skip_blanks(h, nl + 1);
            match h.get(i) {
                None => return Verdict::Wait,
                Some(b'{') => i,
                Some(_) => return Verdict::NotMine,
            }
        } else if h[0] == b'{' {
            0
        } else {
            return Verdict::NotMine;
        };
        match first_key(held, at) {
            Key::More => Verdict::Wait,
            Key::Partial(k) if "action".starts_with(k) => Verdict::Wait,
            Key::Whole("action") => match close_of(held, at, sx) {
                None => Verdict::Wait,
                Some(end) => match lenient::parse(&held[at..end]) {
                    Some(v) if is_answer(&v) || name(&v).is_some_and(|n| sx.offers(n)) => {
                        Verdict::Lock
                    }
                    _ if at == 0 => Verdict::Text(end),
                    _ => Verdict::NotMine,
                },
            },
            _ => Verdict::NotMine,
        }
    }
    fn detect(&self) -> Detect {
        Detect::default()
    }
}

enum Read {
    Answer(String),
    Call(Found),
}

fn name(v: &Value) -> Option<&str> {
    v.get("action")?.as_str().map(str::trim)
}

fn is_answer(v: &Value) -> bool {
    name(v).is_some_and(|n| FINAL.contains(&n.to_ascii_lowercase().as_str()))
}

/// An action object: its answer, or its call.
fn read(v: &Value, cx: &Cx) -> Option<Read> {
    let o = v.as_object()?;
    if !o
        .keys()
        .all(|k| ["action", "action_input", "thought"].contains(&k.as_str()))
    {
        return None;
    }
    let action = name(v)?;
    let input = o.get("action_input").cloned().unwrap_or(Value::Null);
    if is_answer(v) {
        return Some(Read::Answer(match input {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        }));
    }
    if action.is_empty() {
        return None;
    }
    let arguments = match input {
        Value::String(s) => match from_string(&s) {
            Value::String(s) => one_parameter(action, s, cx),
            v => v,
        },
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    Some(Read::Call(Found::new(action, arguments)))
}

/// A string input for a tool with exactly one parameter is that parameter.
fn one_parameter(tool: &str, s: String, cx: &Cx) -> Value {
    let schema = (cx.schema)(tool);
    let props = schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    match props {
        Some(p) if p.len() == 1 => {
            let key = p.keys().next().expect("one").clone();
            Value::Object(Map::from_iter([(key, Value::String(s))]))
        }
        _ => Value::String(s),
    }
}

/// The object at `start..end`, with the fence around it when a fence holds it alone.
fn fenced(text: &str, start: usize, end: usize) -> (usize, usize) {
    let before = text[..start].trim_end();
    let after = text[end..].trim_start();
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let info = &before[line_start..];
    match info.strip_prefix("```") {
        Some(lang)
            if CALL_FENCES.contains(&lang.trim().to_ascii_lowercase().as_str())
                && after.starts_with("```") =>
        {
            let close = text.len() - after.len() + 3;
            (line_start, close)
        }
        _ => (start, end),
    }
}
