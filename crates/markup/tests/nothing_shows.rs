//! Nothing of a model's markup shows (issue 36 §2), for models whose family no file names and
//! whose template is not at hand: replies cited from the families' own parser tests and model
//! cards, read whole and streamed through the gate in pieces of 1, 2, 3 and 7 characters. The
//! calls come back exactly, the clean text is exact with no marker left, thinking whose opening
//! was in the prompt is thinking; and a marker in a code block or a quote stays text.

mod common;

use serde_json::{json, Value};
use switchboard_markup::families::Cx;
use switchboard_markup::gate::StreamGate;
use switchboard_markup::recover::recover_with;

const OFFERED: [&str; 2] = ["special_function", "get_candidate_status"];

/// Markers none of which may show.
const MARKERS: [&str; 10] = [
    "<TOOLCALL>",
    "</TOOLCALL>",
    "<SPECIAL_",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<|im_end|>",
    "</think>",
    "[THINK]",
    "[/THINK]",
    "[TOOL_CALLS]",
];

/// What the recovery makes of a whole reply: calls, text, thinking (the reply itself as text
/// when nothing in it is markup).
fn whole(reply: &str, family: Option<&'static str>) -> (Vec<(String, Value)>, String, String) {
    let offered = |n: &str| OFFERED.contains(&n);
    // llama.cpp's test tool: `special_function(arg1: integer)`
    let schema = |n: &str| {
        (n == "special_function")
            .then(|| json!({"type": "object", "properties": {"arg1": {"type": "integer"}}}))
    };
    let cx = Cx {
        family,
        schema: &schema,
        ..Cx::names(&offered)
    };
    match recover_with(reply, &cx) {
        Some(r) => (
            r.calls.into_iter().map(|c| (c.name, c.arguments)).collect(),
            r.text,
            r.thinking,
        ),
        None => (vec![], reply.to_string(), String::new()),
    }
}

/// The reply streamed through the gate in pieces of `n` characters: the text shown and the
/// thinking streamed; fails if anything was lost or reordered.
fn streamed(reply: &str, family: Option<&'static str>, n: usize) -> (String, String) {
    let gate = StreamGate::with_names(|n| OFFERED.contains(&n)).for_family(family);
    let (text, thinking, all) = common::through_gate(gate, reply, n);
    assert_eq!(all, reply, "streamed in pieces of {n}: lost or reordered");
    (text, thinking)
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The reply read whole gives these calls, text and thinking; streamed, no marker shows and
/// what shows is the start of the clean text (`shows_thinking`: and of the thinking before it,
/// for thinking the prompt opened, which only the whole reply tells).
fn check(
    reply: &str,
    family: Option<&'static str>,
    calls: &[(&str, Value)],
    text: &str,
    thinking: &str,
    shows_thinking: bool,
) {
    let (got_calls, got_text, got_thinking) = whole(reply, family);
    let want: Vec<(String, Value)> = calls
        .iter()
        .map(|(n, a)| (n.to_string(), a.clone()))
        .collect();
    assert_eq!(got_calls, want, "calls of {reply:?}");
    assert_eq!(got_text, text, "text of {reply:?}");
    assert_eq!(got_thinking, thinking, "thinking of {reply:?}");
    for n in [1, 2, 3, 7] {
        let (shown, thought) = streamed(reply, family, n);
        for m in MARKERS.iter().filter(|m| !text.contains(*m)) {
            assert!(
                !shown.contains(m),
                "{m} showed, streamed in pieces of {n}: {shown:?} of {reply:?}"
            );
        }
        // thinking the prompt opened shows as text, the marker after it dropped (blanks
        // around it may differ)
        let (clean, shown_) = if shows_thinking {
            let bare = |s: &str| s.split_whitespace().collect::<String>();
            (bare(&format!("{thinking}{text}")), bare(&shown))
        } else {
            (squash(text), squash(&shown))
        };
        assert!(
            clean.starts_with(&shown_),
            "streamed in pieces of {n}, {shown:?} showed; the clean text is {text:?}"
        );
        assert!(
            squash(thinking).starts_with(&squash(&thought)),
            "streamed in pieces of {n}, thinking {thought:?}; the thinking is {thinking:?}"
        );
    }
}

fn arg1() -> Vec<(&'static str, Value)> {
    vec![("special_function", json!({"arg1": 1}))]
}

// Nemotron Nano v2's replies, from llama.cpp's tests of its parser (tests/test-chat.cpp,
// "Nemotron V2"); its end-of-turn token is `<SPECIAL_12>` (the template's, and the tests'
// end_tokens). The JSON family reads the calls; the section around them and the token after
// them must not be left.

#[test]
fn nemotron_v2_sections_and_end_token_are_gone() {
    let call = r#"<TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>"#;
    check(call, None, &arg1(), "", "", false);
    check(&format!("{call}<SPECIAL_12>"), None, &arg1(), "", "", false);
    check(
        &format!("{call}Hello, world!\nWhat's up?"),
        None,
        &arg1(),
        "Hello, world!\nWhat's up?",
        "",
        false,
    );
    check(
        &format!("<think>I'm\nthinking</think>{call}Hello, world!\nWhat's up?<SPECIAL_12>"),
        None,
        &arg1(),
        "Hello, world!\nWhat's up?",
        "I'm\nthinking",
        false,
    );
    // prose before the section, an empty section the model wrote first
    check(
        &format!("Let me call it.\n<TOOLCALL></TOOLCALL>\n{call}\n<SPECIAL_12>"),
        None,
        &arg1(),
        "Let me call it.",
        "",
        false,
    );
}

// LFM2's reply, from its model card (LiquidAI/LFM2-1.2B-Tool, "Function Call"): the Python-call
// family reads the list; the special tokens around it must not be left.

#[test]
fn lfm2_special_tokens_around_the_call_are_gone() {
    let want = vec![("get_candidate_status", json!({"candidate_id": "12345"}))];
    let call =
        r#"<|tool_call_start|>[get_candidate_status(candidate_id="12345")]<|tool_call_end|>"#;
    check(
        &format!("{call}Checking the current status of candidate ID 12345."),
        None,
        &want,
        "Checking the current status of candidate ID 12345.",
        "",
        false,
    );
    check(&format!("{call}<|im_end|>"), None, &want, "", "", false);
}

// Thinking whose opening tag was in the prompt (the template ends its prompt with `<think>`:
// GLM-4.7-Flash, Nemotron 3, Qwen 3.5, ERNIE 4.5, DeepSeek V3.1): the reply starts inside it.
// From llama.cpp's tests (tests/test-chat.cpp, a reply parsed with `thinking_forced_open`).
// With the template at hand the gate streams it as thinking from the start (the template test);
// without it, only the closing marker tells, so it shows as text while streaming (never the
// marker) and is thinking once the reply is whole.

#[test]
fn thinking_opened_in_the_prompt_is_thinking_without_the_template() {
    for family in [None, Some("glm"), Some("deepseek"), Some("qwen3_coder")] {
        check(
            "I'm\nthinking</think>Hello, world!\nWhat's up?",
            family,
            &[],
            "Hello, world!\nWhat's up?",
            "I'm\nthinking",
            true,
        );
    }
    // Qwen 3.5's call after its thinking (its template's markup)
    check(
        "I'm\nthinking\n</think>\n\n<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
        None,
        &arg1(),
        "",
        "I'm\nthinking",
        true,
    );
}

// Magistral's thinking, from llama.cpp's tests (tests/test-chat.cpp, "Magistral":
// `[THINK]raisonnement[/THINK]Réponse`).

#[test]
fn magistral_thinking_is_thinking() {
    for family in [None, Some("mistral")] {
        check(
            "[THINK]raisonnement[/THINK]Réponse",
            family,
            &[],
            "Réponse",
            "raisonnement",
            false,
        );
        check(
            r#"[THINK]raisonnement[/THINK][TOOL_CALLS]special_function[ARGS]{"arg1": 1}"#,
            family,
            &arg1(),
            "",
            "raisonnement",
            false,
        );
    }
}

#[test]
fn markers_in_code_or_quotes_or_prose_stay_text() {
    let call = r#"<TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>"#;
    // a closing marker in code is no thinking
    for reply in [
        "Close the block with `</think>` and go on.",
        "The tags:\n```xml\n<think>\n</think>\n```\nThat is all.",
        "> I'm thinking</think> is what you wrote.",
    ] {
        check(reply, None, &[], reply, "", false);
    }
    // around a call: code, a quote, an HTML tag and a link stay as they are
    check(
        &format!(
            "See [the docs](https://x.org) and <b>this</b>; `<|im_end|>` ends a turn.\n```\n<TOOLCALL></TOOLCALL><SPECIAL_12>\n```\n> <|tool_call_end|>\n{call}"
        ),
        None,
        &arg1(),
        "See [the docs](https://x.org) and <b>this</b>; `<|im_end|>` ends a turn.\n```\n<TOOLCALL></TOOLCALL><SPECIAL_12>\n```\n> <|tool_call_end|>",
        "",
        false,
    );
    // no call: the markup is left as written
    let empty = "<TOOLCALL></TOOLCALL>";
    assert_eq!(
        whole(empty, None),
        (vec![], empty.to_string(), String::new())
    );
}
