//! The model check's probes: a request each, with tools that do nothing (nothing is ever run:
//! the check only reads the calls the model asks for), and what a good reply calls.

use serde_json::{json, Value};

use crate::llm::ToolSpec;

/// What a probe expects of the reply.
#[derive(Debug, Clone)]
pub enum Expect {
    /// These calls (in any order), their arguments as the check compares them.
    Calls(Vec<(&'static str, Value)>),
    /// No call: the question needs no tool.
    NoCall,
}

#[derive(Debug, Clone)]
pub struct Probe {
    pub id: &'static str,
    /// What it checks, as the table says it.
    pub title: &'static str,
    pub prompt: &'static str,
    pub expect: Expect,
}

/// The system prompt of every probe.
pub const SYSTEM: &str = "You are a helpful assistant. You can call tools when they help; \
use them for arithmetic and calendar work instead of guessing.";

/// The tools offered in every probe (named as the app names MCP tools: `server__tool`).
pub fn tools() -> Vec<ToolSpec> {
    let number = json!({"type": "integer"});
    vec![
        ToolSpec {
            name: "calculator__add".into(),
            description: "Adds two whole numbers.".into(),
            parameters: json!({"type": "object", "properties": {"a": number, "b": number},
                "required": ["a", "b"]}),
        },
        ToolSpec {
            name: "calculator__multiply".into(),
            description: "Multiplies two whole numbers.".into(),
            parameters: json!({"type": "object", "properties": {"a": number, "b": number},
                "required": ["a", "b"]}),
        },
        ToolSpec {
            name: "calendar__create_event".into(),
            description: "Creates a calendar event.".into(),
            parameters: json!({"type": "object", "properties": {
                "title": {"type": "string"},
                "when": {"type": "object", "properties": {
                    "date": {"type": "string", "description": "YYYY-MM-DD"},
                    "time": {"type": "string", "description": "HH:MM, 24-hour"}},
                    "required": ["date", "time"]},
                "attendees": {"type": "array", "items": {"type": "string"}}},
                "required": ["title", "when"]}),
        },
    ]
}

/// The probes, in the order they run.
pub fn all() -> Vec<Probe> {
    vec![
        Probe {
            id: "one_call",
            title: "One call",
            prompt: "What is 17 + 25? Use the calculator.",
            expect: Expect::Calls(vec![("calculator__add", json!({"a": 17, "b": 25}))]),
        },
        Probe {
            id: "two_calls",
            title: "Two calls at once",
            prompt: "Use the calculator for both of these, calling both tools in one go: \
                     6 times 7, and 100 plus 23.",
            expect: Expect::Calls(vec![
                ("calculator__multiply", json!({"a": 6, "b": 7})),
                ("calculator__add", json!({"a": 100, "b": 23})),
            ]),
        },
        Probe {
            id: "nested",
            title: "Nested arguments",
            prompt: "Create a calendar event titled \"Team lunch\" on 2025-03-14 at 12:30 \
                     with Ada and Grace.",
            expect: Expect::Calls(vec![(
                "calendar__create_event",
                json!({"title": "Team lunch", "when": {"date": "2025-03-14", "time": "12:30"},
                       "attendees": ["Ada", "Grace"]}),
            )]),
        },
        Probe {
            id: "number_as_text",
            title: "A number written in words",
            prompt: "Add twelve and thirty with the calculator.",
            expect: Expect::Calls(vec![("calculator__add", json!({"a": 12, "b": 30}))]),
        },
        Probe {
            id: "no_tool",
            title: "No tool needed",
            prompt: "What is the capital of France? Answer in one word.",
            expect: Expect::NoCall,
        },
    ]
}

/// Whether `got` (arguments as repaired for the schema) says what `want` says: numbers by value,
/// strings without regard to case or blanks around them, lists as sets, objects key by key (keys
/// `got` has besides are fine).
pub fn fits(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => g.as_f64() == w.as_f64(),
        (Value::String(g), Value::String(w)) => g.trim().eq_ignore_ascii_case(w.trim()),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && w.iter().all(|x| g.iter().any(|y| fits(y, x)))
        }
        (Value::Object(g), Value::Object(w)) => {
            w.iter().all(|(k, v)| g.get(k).is_some_and(|x| fits(x, v)))
        }
        (g, w) => g == w,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_fit_by_meaning() {
        assert!(fits(
            &json!({"a": 17.0, "b": 25}),
            &json!({"a": 17, "b": 25})
        ));
        assert!(fits(
            &json!({"title": "team lunch ", "when": {"date": "2025-03-14", "time": "12:30"},
                    "attendees": ["Grace", "Ada"], "notes": "x"}),
            &json!({"title": "Team lunch", "when": {"date": "2025-03-14", "time": "12:30"},
                    "attendees": ["Ada", "Grace"]})
        ));
        assert!(!fits(&json!({"a": 17}), &json!({"a": 17, "b": 25})));
        assert!(!fits(
            &json!({"a": "17", "b": 25}),
            &json!({"a": 17, "b": 25})
        ));
        assert!(!fits(
            &json!({"attendees": ["Ada"]}),
            &json!({"attendees": ["Ada", "Grace"]})
        ));
    }

    #[test]
    fn every_expected_call_names_an_offered_tool() {
        let names: Vec<String> = tools().into_iter().map(|t| t.name).collect();
        for p in all() {
            if let Expect::Calls(calls) = p.expect {
                for (n, _) in calls {
                    assert!(names.iter().any(|x| x == n), "{}: {n}", p.id);
                }
            }
        }
    }
}
