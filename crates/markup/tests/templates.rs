//! Every chat template llama.cpp ships (`models/templates/`, from the llama-cpp-python 0.3.36
//! sdist that `scripts/install-deps.sh --test` unpacks into `.tools/templates/`; not in the
//! repository): each is analysed, and for each whose calls were learned, a reply with one call
//! and one with two calls, rendered through the template itself with tools and arguments the
//! probe never used, is fed back as the model's reply — whole, and streamed through the gate in
//! pieces of 1 to 7 characters. The calls must come back exactly and nothing of the markup may
//! be left. A reply with reasoning must come back as thinking, whichever way the template opens
//! it. And no false call: the learned markup inside a code block, in a quote, or inside thinking
//! stays text.
//!
//! The test prints the table of templates (learned / not, and why) that README's figures come
//! from, and fails if a template whose calls were learned does not pass, or if fewer are learned
//! than README says.

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use switchboard_markup::families::Cx;
use switchboard_markup::gate::StreamGate;
use switchboard_markup::recover::{recover_with, Recovered};
use switchboard_markup::template::{learn, reply_as_written};

/// How many templates' calls are learned and pass every check (README says so).
const LEARNED_AT_LEAST: usize = 48;

/// The templates that fail a check, and why (README lists them): the test fails when another
/// fails, and when one of these passes (then it leaves this list and README's).
const KNOWN_FAILURES: &[(&str, &str)] = &[
    ("Cohere2MoE", "its text after reasoning is wrapped in <|START_TEXT|>…<|END_TEXT|>, which is not learned"),
    ("GigaChat3-10B-A1.8B", "a call is a turn of its own (a 'function call' role), not part of the reply"),
    ("tencent-Hy3", "its prompt closes thinking (<think:opensource></think:opensource>) unless a reasoning effort is set, so the rendered reasoning follows no opening"),
];

fn dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/templates/models/templates");
    assert!(
        d.is_dir(),
        "{} is missing: run scripts/install-deps.sh --test (it unpacks llama.cpp's chat templates \
         from the llama-cpp-python sdist on PyPI)",
        d.display()
    );
    d
}

fn tools() -> Value {
    let tool = |name: &str, props: Value| {
        json!({"type": "function", "function": {"name": name, "description": "A tool.",
            "parameters": {"type": "object", "properties": props}}})
    };
    json!([
        tool(
            "get_weather",
            json!({"city": {"type": "string"}, "days": {"type": "integer"}})
        ),
        tool("search_files", json!({"query": {"type": "string"}})),
    ])
}

fn schema(name: &str) -> Option<Value> {
    tools()
        .as_array()?
        .iter()
        .find(|t| t["function"]["name"] == name)
        .map(|t| t["function"]["parameters"].clone())
}

fn call(name: &str, args: Value, id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

fn one_call() -> Vec<(String, Value)> {
    vec![("get_weather".into(), json!({"city": "Paris", "days": 3}))]
}

fn two_calls() -> Vec<(String, Value)> {
    vec![
        ("get_weather".into(), json!({"city": "Paris", "days": 3})),
        ("search_files".into(), json!({"query": "notes 2026"})),
    ]
}

fn assistant(calls: &[(String, Value)]) -> Value {
    let tc: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (n, a))| call(n, a.clone(), &format!("abc12345{i}")))
        .collect();
    json!({"role": "assistant", "content": "", "tool_calls": tc})
}

fn read(reply: &str, family: &'static str) -> Option<Recovered> {
    let offered = |n: &str| n == "get_weather" || n == "search_files";
    let cx = Cx {
        offered: &offered,
        schema: &schema,
        quoted: None,
        family: Some(family),
    };
    recover_with(reply, &cx)
}

/// The reply streamed through the gate in pieces of `n` characters: what showed as text, what
/// streamed as thinking, and whether everything came out in order.
fn stream(reply: &str, family: &'static str, n: usize) -> (String, String, bool) {
    let gate = StreamGate::with_names(|n| n == "get_weather" || n == "search_files")
        .for_family(Some(family));
    let (text, thinking, all) = common::through_gate(gate, reply, n);
    (text, thinking, all == reply)
}

/// What is wrong with the calls read from `reply`, if anything.
fn calls_problem(reply: &str, family: &'static str, want: &[(String, Value)]) -> Option<String> {
    let Some(r) = read(reply, family) else {
        return Some(format!("no call read in {reply:?}"));
    };
    let got: Vec<(String, Value)> = r
        .calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect();
    if got != want {
        return Some(format!("read {got:?} in {reply:?}"));
    }
    if !r.text.trim().is_empty() {
        return Some(format!("left {:?} of {reply:?}", r.text));
    }
    for n in [1, 2, 3, 7] {
        let (shown, _, whole) = stream(reply, family, n);
        if !whole {
            return Some(format!(
                "streamed in pieces of {n}, text was lost or reordered"
            ));
        }
        if !shown.trim().is_empty() {
            return Some(format!("streamed in pieces of {n}, {shown:?} showed"));
        }
    }
    None
}

/// Negatives: the one-call reply in a code block, quoted, inside thinking.
fn negatives_problem(reply: &str, family: &'static str, thinking: Option<&str>) -> Option<String> {
    // the calls' markup alone (an empty thinking block the template writes before it is not)
    let reply = match thinking.and_then(|t| t.split_once('…')) {
        Some((_, close)) if reply.contains(close) => reply.split_once(close).unwrap().1.trim(),
        _ => reply,
    };
    let fenced = format!("Here is how it looks:\n```python\n{reply}\n```");
    let quoted: String = format!(
        "You wrote:\n{}",
        reply
            .lines()
            .map(|l| format!("> {l}\n"))
            .collect::<String>()
    );
    let mut cases = vec![("in a code block", fenced), ("in a quote", quoted)];
    if let Some(t) = thinking {
        let (open, close) = t.split_once('…').expect("open…close");
        if !open.is_empty() {
            cases.push((
                "inside thinking",
                format!("{open}Maybe I call it: {reply}{close}The answer is 4."),
            ));
        }
    }
    for (what, text) in cases {
        if let Some(r) = read(&text, family) {
            if !r.calls.is_empty() {
                return Some(format!("{what}: a false call {:?}", r.calls));
            }
        }
    }
    None
}

#[test]
fn every_llama_cpp_template_is_learned_or_says_why() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("the templates folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    files.sort();
    assert!(files.len() >= 60, "only {} templates", files.len());
    let (mut learned, mut failed, mut not_learned, mut reasoning) = (0, Vec::new(), Vec::new(), 0);
    let mut table = Vec::new();
    for f in &files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let src = std::fs::read_to_string(f).unwrap();
        let started = std::time::Instant::now();
        let l = learn(&src);
        let took = started.elapsed();
        let mut problems = Vec::new();
        if let (Some(id), Some(sketch)) = (l.family, &l.calls) {
            for want in [one_call(), two_calls()] {
                match reply_as_written(&src, &assistant(&want), &tools()) {
                    // a template that writes only a reply's first call, or refuses two
                    Ok(reply) if want.len() == 2 && !reply.contains("search_files") => {}
                    Err(_) if want.len() == 2 => {}
                    Ok(reply) => {
                        if let Some(p) = calls_problem(&reply, id, &want) {
                            problems.push(format!("{} call(s): {p}", want.len()));
                        }
                        if want.len() == 1 {
                            if let Some(p) = negatives_problem(&reply, id, l.thinking.as_deref()) {
                                problems.push(p);
                            }
                        }
                    }
                    Err(e) => problems.push(format!("does not render {} call(s): {e}", want.len())),
                }
            }
            if problems.is_empty() {
                learned += 1;
                table.push(format!("{name}: learned {sketch} ({took:?})"));
            } else {
                failed.push(format!("{name}: {}", problems.join("; ")));
                table.push(format!("{name}: FAILED {}", problems.join("; ")));
            }
        } else {
            let why = l.not_learned.clone().unwrap_or_default();
            not_learned.push(format!("{name}: {why}"));
            table.push(format!("{name}: calls not learned: {why}"));
        }
        // reasoning, whichever way the template opens it
        if let Some(id) = l.family {
            let a = json!({"role": "assistant", "content": "The answer is 4.",
                "reasoning_content": "Two and two make four."});
            if let Ok(reply) = reply_as_written(&src, &a, &tools()) {
                if reply.contains("Two and two make four.") && l.thinking.is_some() {
                    match read(&reply, id) {
                        Some(r)
                            if r.thinking.trim() == "Two and two make four."
                                && r.text == "The answer is 4." =>
                        {
                            reasoning += 1
                        }
                        other => failed.push(format!(
                            "{name}: reasoning {reply:?} read as {:?}",
                            other.map(|r| (r.thinking, r.text))
                        )),
                    }
                    let (shown, thought, whole) = stream(&reply, id, 3);
                    if !whole || shown.contains("Two and two") || !thought.contains("Two and two") {
                        failed.push(format!("{name}: reasoning streamed as text {shown:?}"));
                    }
                }
            }
        }
    }
    eprintln!("{}", table.join("\n"));
    eprintln!(
        "\n{} templates: {learned} learned and passing, {} failing, {} not learned; reasoning read as thinking in {reasoning}",
        files.len(),
        failed.len(),
        not_learned.len()
    );
    let known = |f: &String| {
        KNOWN_FAILURES
            .iter()
            .any(|(n, _)| f.starts_with(&format!("{n}:")))
    };
    let unknown: Vec<&String> = failed.iter().filter(|f| !known(f)).collect();
    assert!(
        unknown.is_empty(),
        "{}",
        unknown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    for (n, why) in KNOWN_FAILURES {
        assert!(
            failed.iter().any(|f| f.starts_with(&format!("{n}:"))),
            "{n} now passes (it was known to fail: {why}): take it off KNOWN_FAILURES and README's list"
        );
    }
    assert!(
        learned >= LEARNED_AT_LEAST,
        "{learned} templates learned, README says {LEARNED_AT_LEAST}"
    );
}
