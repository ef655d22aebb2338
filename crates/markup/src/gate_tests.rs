use super::*;
use proptest::prelude::*;

/// Replies as models write them (prose, calls in every shape, code, data).
const REPLIES: [&str; 14] = [
    "The answer is 42. Let me know if you need anything else!",
    "I'll add them.\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}",
    "<tool_call>\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}\n</tool_call>",
    "Sure.\n```json\n{\"tool\": \"files__read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```\nOne moment.",
    "[TOOL_CALLS][{\"name\": \"time__now\", \"arguments\": {}}]",
    "<|python_tag|>{\"name\": \"calculator__add\", \"parameters\": {\"a\": 2, \"b\": 40}}<|eom_id|>",
    "Here is some code:\n```python\ndef f(x):\n    return {\"a\": x}\n```\nand a [link](http://x) and `inline`.",
    "The data: {\"answer\": 42, \"name\": \"x\"} — and a set {1, 2}.",
    "```\n{\"name\": \"Ada\", \"age\": 36}\n```\nThat is a person, not a call.",
    "Use < and > and [brackets] and {braces}; 2 < 3.",
    "{'name': 'calculator__add', 'arguments': {'a': 2, 'b': 40,},}",
    "Ünïcödé prose — 日本語 {\"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"x\", \"arguments\": \"{}\"}}]}",
    "[{\"name\": \"time__now\"}, {\"name\": \"time__now\"}] done",
    "function f() { return [1, 2]; }\n{\n  \"name\": \"calculator__add\",\n  \"arguments\": {}\n}",
];

/// Everything a push let go, in order (text, thinking and dropped markup alike).
fn all(pieces: Vec<Piece>) -> String {
    pieces
        .into_iter()
        .map(|p| match p {
            Piece::Text(t) | Piece::Thinking(t) | Piece::Markup(t) => t,
        })
        .collect()
}

/// Pushes the pieces; returns what was let go piece by piece, and what `finish` gave.
fn run(pieces: &[&str]) -> (Vec<String>, String) {
    let mut g = StreamGate::new();
    let shown = pieces.iter().map(|p| all(g.push(p))).collect();
    (shown, g.finish())
}

fn chars(s: &str) -> Vec<String> {
    s.chars().map(String::from).collect()
}

#[test]
fn prose_flows_word_by_word() {
    let words = [
        "The ",
        "answer ",
        "is ",
        "42, ",
        "as ",
        "you ",
        "asked. ",
        "Anything ",
        "else?",
    ];
    let (shown, rest) = run(&words);
    assert_eq!(shown, words);
    assert_eq!(rest, "");
}

#[test]
fn a_bare_call_never_shows() {
    let reply = REPLIES[1];
    let (shown, rest) = run(&chars(reply).iter().map(String::as_str).collect::<Vec<_>>());
    let shown = shown.concat();
    assert_eq!(shown, "I'll add them.\n");
    assert!(rest.starts_with("{\"name\""));
}

#[test]
fn every_call_shape_is_held_and_nothing_of_it_shows() {
    for (reply, shows) in [
        (REPLIES[2], ""),
        (REPLIES[3], "Sure.\n"),
        (REPLIES[4], ""),
        (REPLIES[5], ""),
        (REPLIES[10], ""),
        (REPLIES[11], "Ünïcödé prose — 日本語 "),
        (REPLIES[12], ""),
        (REPLIES[13], "function f() { return [1, 2]; }\n"),
    ] {
        for step in [1, 3, 7, 1000] {
            let pieces: Vec<String> = reply
                .chars()
                .collect::<Vec<_>>()
                .chunks(step)
                .map(|c| c.iter().collect())
                .collect();
            let (shown, rest) = run(&pieces.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(shown.concat(), shows, "{reply:?} in pieces of {step}");
            assert_eq!(format!("{shows}{rest}"), reply);
        }
    }
}

#[test]
fn what_is_clearly_not_a_call_is_released_before_the_end() {
    for reply in [REPLIES[0], REPLIES[6], REPLIES[7], REPLIES[9]] {
        let mut g = StreamGate::new();
        let shown: String = chars(reply).iter().map(|c| all(g.push(c))).collect();
        let rest = g.finish();
        assert!(rest.len() <= 1, "{reply:?}: held {rest:?}");
        assert_eq!(format!("{shown}{rest}"), reply);
    }
    // a JSON object that is data is let go as soon as it closes
    let mut g = StreamGate::new();
    assert_eq!(all(g.push("```\n{\"name\": \"Ada\", \"age\"")), "");
    assert_eq!(
        all(g.push(": 36}")),
        "```\n{\"name\": \"Ada\", \"age\": 36}"
    );
    // a fence in another language is let go at its first line
    let mut g = StreamGate::new();
    assert_eq!(all(g.push("```py")), "```py");
    let mut g = StreamGate::new();
    assert_eq!(all(g.push("``")), "");
    assert_eq!(all(g.push("`rust\nfn")), "```rust\nfn");
}

#[test]
fn partial_tags_wait_then_go() {
    let mut g = StreamGate::new();
    assert_eq!(all(g.push("a <tool")), "a ");
    assert!(g.is_holding());
    assert_eq!(all(g.push("bar>")), "<toolbar>");
    assert_eq!(all(g.push("[TOOL")), "");
    assert_eq!(all(g.push("_CALLS]")), "");
    assert!(g.saw_call());
    assert_eq!(all(g.push(" more")), "");
    assert_eq!(g.finish(), "[TOOL_CALLS] more");
}

#[test]
fn a_long_held_object_is_scanned_once() {
    let mut g = StreamGate::new();
    assert_eq!(
        all(g.push("{\"name\": \"files__write_file\", \"arguments\": {\"content\": \"")),
        ""
    );
    for _ in 0..20_000 {
        assert_eq!(all(g.push("lorem ipsum ")), "");
    }
    assert_eq!(all(g.push("\"}}")), "");
    assert!(g.saw_call());
}

fn split(s: &str, cuts: &[usize]) -> Vec<String> {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    let mut at: Vec<usize> = cuts.iter().map(|c| bounds[c % bounds.len()]).collect();
    at.push(0);
    at.push(s.len());
    at.sort();
    at.dedup();
    at.windows(2).map(|w| s[w[0]..w[1]].to_string()).collect()
}

proptest! {
    #[test]
    fn nothing_is_lost_or_reordered(
        which in 0..REPLIES.len(),
        cuts in prop::collection::vec(0usize..400, 0..30),
    ) {
        let reply = REPLIES[which];
        let pieces = split(reply, &cuts);
        let (shown, rest) = run(&pieces.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(format!("{}{rest}", shown.concat()), reply);
    }

    #[test]
    fn the_split_does_not_change_what_shows(
        which in 0..REPLIES.len(),
        cuts in prop::collection::vec(0usize..400, 0..30),
    ) {
        let reply = REPLIES[which];
        let (whole, _) = run(&[reply]);
        let (pieces, _) = run(&split(reply, &cuts).iter().map(String::as_str).collect::<Vec<_>>());
        // in pieces, at least as much shows as when all came at once
        prop_assert!(pieces.concat().len() >= whole.concat().len());
        prop_assert!(pieces.concat().starts_with(&whole.concat()));
    }

    #[test]
    fn arbitrary_text_is_never_lost(s in ".{0,200}", cuts in prop::collection::vec(0usize..200, 0..20)) {
        if !s.is_empty() {
            let pieces = split(&s, &cuts);
            let (shown, rest) = run(&pieces.iter().map(String::as_str).collect::<Vec<_>>());
            prop_assert_eq!(format!("{}{rest}", shown.concat()), s);
        }
    }
}

#[test]
fn with_names_a_code_sample_naming_no_offered_tool_flows_once_it_closes() {
    let offered = |n: &str| n == "calculator__add";
    let sample = "```json\n{\"name\": \"get_weather\", \"arguments\": {}}\n```\nThat is how.";
    let mut gate = StreamGate::with_names(offered);
    let mut shown = String::new();
    for c in sample.chars() {
        shown.push_str(&all(gate.push(&c.to_string())));
    }
    assert_eq!(
        shown, sample,
        "all shown while streaming, nothing left for the end"
    );
    assert!(!gate.saw_call());
    let mut gate = StreamGate::with_names(offered);
    let call = "{\"name\": \"calculator__add\", \"arguments\": {\"a\": 1}} done";
    let shown: String = call
        .chars()
        .map(|c| all(gate.push(&c.to_string())))
        .collect();
    assert_eq!(shown, "", "an offered call is held");
    assert!(gate.saw_call());
}

#[test]
fn thinking_the_server_sends_apart_leaves_the_text_as_text() {
    // a family whose prompt opens thinking (learned from a template ending its prompt in
    // `<think>`)
    let src = "{%- for m in messages -%}<|turn|>{{ m.role }}\n{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|end|>\n{% endfor -%}{% if add_generation_prompt %}<|turn|>assistant\n<think>{% endif %}";
    let l = crate::template::learn(src);
    assert!(l.opens_thinking, "{l:?}");
    let family = l.family;
    // the reply's text starts inside the thinking the prompt opened
    let mut g = StreamGate::new().for_family(family);
    let out = g.push("Two and two.</think>Four.");
    assert_eq!(thinking_of(&out), "Two and two.");
    assert_eq!(text_of(&out) + &g.finish(), "Four.");
    // the server sent the thinking apart (before any text): the text is the answer
    let mut g = StreamGate::new().for_family(family);
    g.thinking_apart();
    let out = g.push("Four.");
    assert_eq!(thinking_of(&out), "");
    assert_eq!(text_of(&out) + &g.finish(), "Four.");
    // said once text was let go as thinking: too late, nothing changes
    let mut g = StreamGate::new().for_family(family);
    let out = g.push("Two and");
    g.thinking_apart();
    let more = g.push(" two.</think>Four.");
    assert_eq!(thinking_of(&out) + &thinking_of(&more), "Two and two.");
    assert_eq!(text_of(&more) + &g.finish(), "Four.");
}

#[test]
fn a_closing_thinking_marker_with_no_opening_never_shows() {
    for n in [1, 2, 3, 7] {
        let reply = "I'm\nthinking</think>Hello.";
        let mut g = StreamGate::new();
        let mut out = Vec::new();
        for p in reply.chars().collect::<Vec<_>>().chunks(n) {
            out.extend(g.push(&p.iter().collect::<String>()));
        }
        let rest = g.finish();
        assert_eq!(
            text_of(&out) + &rest,
            "I'm\nthinkingHello.",
            "pieces of {n}"
        );
        assert!(
            out.contains(&Piece::Markup("</think>".into())),
            "pieces of {n}: {out:?}"
        );
    }
}
