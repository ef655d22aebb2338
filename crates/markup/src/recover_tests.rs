use super::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// How a call was written, as these tests name the shapes (the family and its form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    BareJson,
    Fenced,
    JsonArray,
    Hermes,
    Mistral,
    PythonTag,
    OpenAiFunction,
    Other,
}

fn shape(c: &RecoveredCall) -> Shape {
    match (c.family, c.form) {
        ("json", Form::Bare) => Shape::BareJson,
        ("json", Form::Fenced) => Shape::Fenced,
        ("json", Form::Array) => Shape::JsonArray,
        ("json", Form::OpenAi) => Shape::OpenAiFunction,
        ("hermes", _) => Shape::Hermes,
        ("mistral", _) => Shape::Mistral,
        ("llama3", _) => Shape::PythonTag,
        _ => Shape::Other,
    }
}

const OFFERED: [&str; 4] = [
    "calculator__add",
    "calculator__multiply",
    "files__read_file",
    "time__now",
];

fn offered(name: &str) -> bool {
    OFFERED.contains(&name)
}

fn rec(text: &str) -> Option<Recovered> {
    recover(text, &offered)
}

/// The calls as (name, arguments, shape), and the text.
fn calls(text: &str) -> (Vec<(String, Value, Shape)>, String) {
    let r = rec(text).unwrap_or_else(|| panic!("no call in {text:?}"));
    let calls = r
        .calls
        .into_iter()
        .map(|c| {
            let s = shape(&c);
            (c.name, c.arguments, s)
        })
        .collect();
    (calls, r.text)
}

fn add(a: i64, b: i64, shape: Shape) -> (String, Value, Shape) {
    ("calculator__add".into(), json!({"a": a, "b": b}), shape)
}

#[test]
fn bare_json_alone_or_with_prose() {
    let c = r#"{"name": "calculator__add", "arguments": {"a": 2, "b": 40}}"#;
    assert_eq!(calls(c), (vec![add(2, 40, Shape::BareJson)], String::new()));
    let (cs, text) = calls(&format!("I will add them.\n{c}\nOne moment."));
    assert_eq!(cs, vec![add(2, 40, Shape::BareJson)]);
    assert_eq!(text, "I will add them.\nOne moment.");
    let (_, text) = calls(&format!("Sure: {c} done"));
    assert_eq!(text, "Sure: done");
    let (_, text) = calls(&format!("First.\n\n{c}\n\nThen."));
    assert_eq!(text, "First.\n\nThen.");
    // "tool" and "parameters", arguments as a JSON string, no arguments at all
    let (cs, _) = calls(r#"{"tool": "calculator__add", "parameters": "{\"a\": 2, \"b\": 40}"}"#);
    assert_eq!(cs, vec![add(2, 40, Shape::BareJson)]);
    let (cs, _) = calls(r#"{"name": "time__now"}"#);
    assert_eq!(cs[0].1, json!({}));
    let (cs, _) = calls(r#"{"name": "time__now", "arguments": null}"#);
    assert_eq!(cs[0].1, json!({}));
}

#[test]
fn several_bare_calls_and_arrays() {
    let text = "{\"name\": \"calculator__add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n\
                {\"name\": \"calculator__add\", \"arguments\": {\"a\": 3, \"b\": 4}}";
    let (cs, rest) = calls(text);
    assert_eq!(
        cs,
        vec![add(1, 2, Shape::BareJson), add(3, 4, Shape::BareJson)]
    );
    assert_eq!(rest, "");
    let text = r#"Both: [{"name": "calculator__add", "arguments": {"a": 1, "b": 2}}, {"name": "time__now", "arguments": {}}]"#;
    let (cs, rest) = calls(text);
    assert_eq!(cs[0], add(1, 2, Shape::JsonArray));
    assert_eq!((cs[1].0.as_str(), cs[1].2), ("time__now", Shape::JsonArray));
    assert_eq!(rest, "Both:");
}

#[test]
fn fenced() {
    let (cs, rest) = calls(
        "Let me compute.\n```json\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}\n```\nWait.",
    );
    assert_eq!(cs, vec![add(2, 40, Shape::Fenced)]);
    assert_eq!(rest, "Let me compute.\nWait.");
    let (cs, rest) =
        calls("```\n{'name': 'calculator__add', 'arguments': {'a': 2, 'b': 40,},}\n```");
    assert_eq!((cs, rest), (vec![add(2, 40, Shape::Fenced)], String::new()));
    // a fence that never closes (the reply ended)
    let (cs, _) =
        calls("```json\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}");
    assert_eq!(cs, vec![add(2, 40, Shape::Fenced)]);
}

#[test]
fn hermes_qwen() {
    let one = "<tool_call>\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}\n</tool_call>";
    assert_eq!(calls(one), (vec![add(2, 40, Shape::Hermes)], String::new()));
    let text = format!("Adding twice.\n{one}\n{}", one.replace("40", "1"));
    let (cs, rest) = calls(&text);
    assert_eq!(
        cs,
        vec![add(2, 40, Shape::Hermes), add(2, 1, Shape::Hermes)]
    );
    assert_eq!(rest, "Adding twice.");
    // the closing tag is missing at the end, or before the next call
    let (cs, _) =
        calls("<tool_call>\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}");
    assert_eq!(cs, vec![add(2, 40, Shape::Hermes)]);
    let (cs, rest) = calls(
        "<tool_call>{\"name\": \"time__now\", \"arguments\": {}}\n<tool_call>{\"name\": \"time__now\", \"arguments\": {}}</tool_call> ok",
    );
    assert_eq!(cs.len(), 2);
    assert_eq!(rest, "ok");
    // a fence inside the tags
    let (cs, _) = calls(
        "<tool_call>\n```json\n{\"name\": \"time__now\", \"arguments\": {}}\n```\n</tool_call>",
    );
    assert_eq!(cs[0].2, Shape::Hermes);
}

#[test]
fn mistral() {
    let (cs, rest) = calls(
        r#"[TOOL_CALLS][{"name": "calculator__add", "arguments": {"a": 2, "b": 40}}, {"name": "time__now", "arguments": {}}]</s>"#,
    );
    assert_eq!(cs[0], add(2, 40, Shape::Mistral));
    assert_eq!(cs[1].0, "time__now");
    assert_eq!(rest, "");
    let (cs, rest) = calls(
        r#"Sure. [TOOL_CALLS]calculator__add[ARGS]{"a": 2, "b": 40}[TOOL_CALLS]time__now[CALL_ID]abc123XYZ[ARGS]{}"#,
    );
    assert_eq!(cs[0], add(2, 40, Shape::Mistral));
    assert_eq!((cs[1].0.as_str(), &cs[1].1), ("time__now", &json!({})));
    assert_eq!(rest, "Sure.");
}

#[test]
fn llama_python_tag() {
    let (cs, rest) = calls(
        r#"<|python_tag|>{"name": "calculator__add", "parameters": {"a": 2, "b": 40}}<|eom_id|>"#,
    );
    assert_eq!(
        (cs, rest),
        (vec![add(2, 40, Shape::PythonTag)], String::new())
    );
    let (cs, _) = calls(
        r#"<|python_tag|>{"name": "calculator__add", "parameters": {"a": 2, "b": 40}}; {"name": "time__now", "parameters": {}}<|eot_id|>"#,
    );
    assert_eq!(cs.len(), 2);
}

#[test]
fn openai_shapes_and_wrappers() {
    let f = r#"{"type": "function", "function": {"name": "calculator__add", "arguments": "{\"a\": 2, \"b\": 40}"}}"#;
    assert_eq!(calls(f).0, vec![add(2, 40, Shape::OpenAiFunction)]);
    let f = r#"{"function": {"name": "calculator__add", "arguments": {"a": 2, "b": 40}}}"#;
    assert_eq!(calls(f).0, vec![add(2, 40, Shape::OpenAiFunction)]);
    let w = r#"{"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "calculator__add", "arguments": "{\"a\": 2, \"b\": 40}"}}]}"#;
    assert_eq!(calls(w).0, vec![add(2, 40, Shape::OpenAiFunction)]);
    let w = r#"{"tool_calls": [{"name": "calculator__add", "arguments": {"a": 2, "b": 40}}]}"#;
    assert_eq!(calls(w).0, vec![add(2, 40, Shape::BareJson)]);
}

#[test]
fn lenient_json_as_models_write_it() {
    for text in [
        "{'name': 'calculator__add', 'arguments': {'a': 2, 'b': 40}}",
        "{name: \"calculator__add\", arguments: {a: 2, b: 40,},}",
        "{\"name\": \"calculator__add\", // adding\n \"arguments\": {\"a\": 2, \"b\": 40}}",
        "{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}",
    ] {
        assert_eq!(calls(text).0, vec![add(2, 40, Shape::BareJson)], "{text}");
    }
    let (cs, _) = calls(
        "{'name': 'files__read_file', 'arguments': {'path': 'a.txt', 'all': True, 'limit': None}}",
    );
    assert_eq!(
        cs[0].1,
        json!({"path": "a.txt", "all": true, "limit": null})
    );
}

#[test]
fn what_is_not_a_call_stays_text() {
    for text in [
        "The answer is 42.",
        "",
        r#"{"answer": 42}"#,
        r#"Use {"name": "weather__get", "arguments": {"city": "Paris"}} to ask the weather."#,
        r#"<tool_call>{"name": "weather__get", "arguments": {}}</tool_call>"#,
        r#"{"name": "calculator__add", "description": "Add two numbers", "inputSchema": {}}"#,
        r#"{"name": "calculator__add", "type": "string"}"#,
        "In Python:\n```python\nclient.call({\"name\": \"calculator__add\", \"arguments\": {\"a\": 1}})\n```",
        "```js\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 1}}\n```",
        "```json\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 1}}\nthen call it again\n```",
        "[1, 2, 3] and {x} and [{\"a\": 1}]",
        "function f() { return [1]; }",
        r#"{"name": "", "arguments": {}}"#,
        "[TOOL_CALLS] nothing here",
        "<|python_tag|>print('hi')",
    ] {
        assert_eq!(rec(text), None, "{text}");
    }
}

#[test]
fn unoffered_calls_next_to_offered_ones_are_reported() {
    let r =
        rec(r#"<tool_call>[{"name": "time__now"}, {"name": "weather__get"}]</tool_call>"#).unwrap();
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.skipped, vec!["weather__get".to_string()]);
    // a name that only resolves is passed through as written (the caller resolves it)
    let r = recover(r#"{"name": "add", "arguments": {}}"#, &|n| n == "add").unwrap();
    assert_eq!(r.calls[0].name, "add");
}

#[test]
fn arguments_that_are_not_an_object_are_kept_for_the_repair_to_report() {
    let (cs, _) = calls(r#"{"name": "time__now", "arguments": "now please"}"#);
    assert_eq!(cs[0].1, json!("now please"));
    assert!(is_call_shaped(&json!({"name": "x", "arguments": {}})));
    assert!(!is_call_shaped(&json!({"name": "x", "age": 3})));
    assert!(!is_call_shaped(&json!([])));
}

#[test]
fn stray_and_deeply_nested_brackets_cost_little() {
    let call = r#"{"name": "time__now", "arguments": {}}"#;
    for junk in [
        "{".repeat(100_000),
        "{".repeat(50_000) + &"}".repeat(50_000),
        "[TOOL_CALLS]".repeat(10_000),
        "<tool_call>".repeat(10_000),
    ] {
        let start = std::time::Instant::now();
        let _ = rec(&junk);
        let _ = rec(&format!("{call}\n{junk}"));
        assert!(
            start.elapsed().as_secs() < 5,
            "{:?} for {}…",
            start.elapsed(),
            &junk[..12]
        );
    }
    // a call after a few stray brackets is still found
    let (cs, _) = calls(&format!("{{ oops {{ {call}"));
    assert_eq!(cs[0].0, "time__now");
}

proptest! {
    #[test]
    fn never_panics(s in ".{0,300}") {
        let _ = recover(&s, &|_| true);
    }

    #[test]
    fn never_panics_on_markup_soup(
        parts in prop::collection::vec(prop_oneof![
            Just("<tool_call>"), Just("</tool_call>"), Just("[TOOL_CALLS]"), Just("[ARGS]"),
            Just("[CALL_ID]"), Just("<|python_tag|>"), Just("<|eom_id|>"), Just("```"),
            Just("```json\n"), Just("{"), Just("}"), Just("["), Just("]"), Just("\""), Just("'"),
            Just(":"), Just(","), Just("\"name\""), Just("\"calculator__add\""), Just("\"arguments\""),
            Just("name"), Just(" "), Just("\n"), Just("é"), Just("2"), Just("True"),
        ], 0..40)
    ) {
        let s: String = parts.concat();
        if let Some(r) = recover(&s, &|_| true) {
            prop_assert!(!r.calls.is_empty());
            prop_assert!(r.text.len() <= s.len());
        }
    }

    #[test]
    fn a_call_in_prose_is_found_and_the_prose_kept(
        before in "[a-zA-Z ,.!?]{0,40}", after in "[a-zA-Z ,.!?]{0,40}", a in 0i64..1000, b in 0i64..1000,
    ) {
        let text = format!("{before}\n{{\"name\": \"calculator__add\", \"arguments\": {{\"a\": {a}, \"b\": {b}}}}}\n{after}");
        let r = rec(&text).unwrap();
        prop_assert_eq!(r.calls.len(), 1);
        prop_assert_eq!(&r.calls[0].arguments, &json!({"a": a, "b": b}));
        let want = [before.trim(), after.trim()].iter().filter(|s| !s.is_empty()).cloned().collect::<Vec<_>>().join("\n");
        prop_assert_eq!(r.text, want);
    }
}
