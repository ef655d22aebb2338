//! Properties of the SSE parser: it never panics on any input; where the bytes are cut changes
//! nothing; what the events carry comes out whole (text, reasoning, tool-call arguments put
//! together from fragments).

use super::*;
use crate::llm::ndjson::props::cut;
use proptest::prelude::*;

fn run(chunks: &[Vec<u8>]) -> (Result<ChatReply, String>, Vec<Delta>) {
    let (r, deltas) = parse_chunks(chunks.iter().map(Vec::as_slice));
    (r.map_err(|e| e.to_string()), deltas)
}

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Reasoning(String),
    /// The next fragment of call `n`'s arguments.
    Args(usize),
    Comment(String),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => "\\PC{1,12}".prop_map(Piece::Text),
        1 => "[a-z \n]{1,12}".prop_map(Piece::Reasoning),
        3 => (0usize..3).prop_map(Piece::Args),
        1 => "[ -~]{0,10}".prop_map(Piece::Comment),
    ]
}

fn event(delta: Value, finish: Option<&str>) -> String {
    let v = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "object": "chat.completion.chunk"});
    format!("data: {v}")
}

/// A stream as llama-server would send it, and what it should come to: the text, the
/// reasoning, the calls (name, arguments).
#[allow(clippy::type_complexity)]
fn stream(
    pieces: &[Piece],
    args: &[(String, i64)],
    crlf: bool,
) -> (Vec<u8>, String, String, Vec<(String, Value)>) {
    let mut lines = Vec::new();
    let (mut text, mut thinking) = (String::new(), String::new());
    let objects: Vec<Value> = args
        .iter()
        .map(|(s, n)| json!({"s": s, "n": n, "nested": {"list": [n, s]}}))
        .collect();
    // each call's arguments as text, in as many fragments as the pieces ask for
    let mut rest: Vec<Vec<char>> = objects
        .iter()
        .map(|o| o.to_string().chars().collect())
        .collect();
    for (i, _) in objects.iter().enumerate() {
        lines.push(event(
            json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                "function": {"name": format!("tool_{i}"), "arguments": ""}}]}),
            None,
        ));
    }
    for p in pieces {
        match p {
            Piece::Text(t) => {
                text.push_str(t);
                lines.push(event(json!({"content": t}), None));
            }
            Piece::Reasoning(t) => {
                thinking.push_str(t);
                lines.push(event(json!({"reasoning_content": t}), None));
            }
            Piece::Args(n) if *n < rest.len() && !rest[*n].is_empty() => {
                let take = rest[*n].len().div_ceil(3);
                let fragment: String = rest[*n].drain(..take).collect();
                lines.push(event(
                    json!({"tool_calls": [{"index": n, "function": {"arguments": fragment}}]}),
                    None,
                ));
            }
            Piece::Args(_) => {}
            Piece::Comment(c) => lines.push(format!(": {c}")),
        }
    }
    for (n, r) in rest.iter().enumerate() {
        if !r.is_empty() {
            let fragment: String = r.iter().collect();
            lines.push(event(
                json!({"tool_calls": [{"index": n, "function": {"arguments": fragment}}]}),
                None,
            ));
        }
    }
    lines.push(event(json!({}), Some("stop")));
    lines.push("data: [DONE]".into());
    let end = if crlf { "\r\n\r\n" } else { "\n\n" };
    let bytes = lines
        .iter()
        .map(|l| format!("{l}{end}"))
        .collect::<String>()
        .into_bytes();
    let calls = objects
        .into_iter()
        .enumerate()
        .map(|(i, o)| (format!("tool_{i}"), o))
        .collect();
    (bytes, text, thinking, calls)
}

proptest! {
    #[test]
    fn never_panics(
        lines in prop::collection::vec(
            prop_oneof![
                any::<Vec<u8>>(),
                "data: \\PC{0,40}".prop_map(String::into_bytes),
                "data: \\{\"choices\": \\[\\{\"delta\": [ -~]{0,40}".prop_map(String::into_bytes),
            ],
            0..10,
        ),
    ) {
        let mut reply = ChatReply::default();
        let mut state = SseState::default();
        let mut on = |_: Delta| {};
        for l in &lines {
            if !matches!(state.apply_line(l, &mut reply, &mut on), Ok(false)) {
                break;
            }
        }
        let _ = state.finish(&mut reply, &mut on);
    }

    #[test]
    fn any_split_gives_the_same_events_and_the_whole_reply(
        pieces in prop::collection::vec(piece(), 0..25),
        args in prop::collection::vec(("\\PC{0,10}", any::<i64>()), 0..3),
        crlf in any::<bool>(),
        at in prop::collection::vec(any::<usize>(), 0..25),
    ) {
        let (bytes, text, thinking, calls) = stream(&pieces, &args, crlf);
        let (whole, whole_deltas) = run(std::slice::from_ref(&bytes));
        let reply = whole.clone().unwrap();
        prop_assert_eq!(&reply.content, &text);
        prop_assert_eq!(&reply.thinking, &thinking);
        prop_assert_eq!(reply.done_reason.as_deref(), Some("stop"));
        let got: Vec<(String, Value)> = reply
            .tool_calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect();
        prop_assert_eq!(got, calls);
        // cut anywhere (inside a line, a UTF-8 character, the blank line between events)
        let (split, split_deltas) = run(&cut(&bytes, &at));
        prop_assert_eq!(split, whole);
        prop_assert_eq!(split_deltas, whole_deltas);
    }
}
