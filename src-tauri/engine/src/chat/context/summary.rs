//! The summary of older turns: how a request carries it (after the system prompt, framed), and
//! the request that writes it: instructions, then the user's first message, the summary so far
//! and the messages it now covers as a transcript, fitted to the model's context (the longest
//! messages cut first), so that one request always does.

use crate::chat::budget::{estimate_tokens, PER_MESSAGE, REPLY_PRIMING};
use crate::llm::{Message, Role};

/// How a summary standing for `covers` messages is put in a request (added to the system prompt).
pub fn frame(text: &str, covers: usize) -> String {
    format!(
        "[Earlier conversation, summarised. The user's first message is below in full; the {covers} \
         messages between it and the latest ones are not shown, this is their summary:]\n{}\n\
         [End of the summary.]",
        text.trim()
    )
}

/// What a request says when the oldest `count` messages are left out (`DropOldest`).
pub fn dropped_note(count: usize) -> String {
    format!(
        "[The {count} oldest messages of this conversation after the user's first one are left out \
         to fit the model's context.]"
    )
}

/// The instructions of the request that writes a summary of at most about `words` words.
pub fn instructions(words: usize) -> String {
    format!(
        "You keep the notes of a conversation between a user and an assistant, so that the assistant \
         can go on with it when the older messages are no longer shown to it. Write a summary of at \
         most {words} words of the summary so far and the conversation given: what the user wants \
         and asked for (their instructions and preferences), facts and numbers they gave, what the \
         assistant answered and decided, which tools were called and what they found (names, \
         values, paths, errors), and what is still open. Plain text, no preamble, nothing that is \
         not in the conversation."
    )
}

/// The messages of the request that writes a summary: the instructions, then one user message
/// with the user's first message (for context), the summary so far, and `covered` as a
/// transcript. Fitted to `room` tokens: when the transcript does not fit, its longest entries are
/// cut (each to the same length) until it does.
pub fn request_messages(
    first: Option<&Message>,
    previous: Option<&str>,
    covered: &[Message],
    room: usize,
    words: usize,
) -> Vec<Message> {
    let system = instructions(words);
    let mut head = String::new();
    if let Some(first) = first {
        head.push_str(&format!(
            "The user's first message (the assistant keeps seeing it in full):\n<first>\n{}\n</first>\n\n",
            cut(&first.content, room / 8)
        ));
    }
    if let Some(previous) = previous {
        head.push_str(&format!(
            "The summary so far:\n<summary>\n{}\n</summary>\n\nThe conversation that came after it:\n",
            previous.trim()
        ));
    } else {
        head.push_str("The conversation:\n");
    }
    let tail = "\n\nWrite the summary now.";
    let entries: Vec<String> = covered.iter().filter_map(entry).collect();
    let fixed = 2 * PER_MESSAGE
        + REPLY_PRIMING
        + estimate_tokens(&system)
        + estimate_tokens(&head)
        + estimate_tokens(tail)
        + 2 * estimate_tokens("<conversation>\n\n</conversation>");
    let cap = fair_share(
        &entries
            .iter()
            .map(|e| estimate_tokens(e) + 1)
            .collect::<Vec<_>>(),
        room.saturating_sub(fixed),
    );
    let transcript: Vec<String> = entries
        .iter()
        .map(|e| cut(e, cap.saturating_sub(1)))
        .collect();
    let user = format!(
        "{head}<conversation>\n{}\n</conversation>{tail}",
        transcript.join("\n\n")
    );
    vec![
        Message::new(Role::System, system),
        Message::new(Role::User, user),
    ]
}

/// One message as a transcript entry (`None` for one with nothing to say).
fn entry(m: &Message) -> Option<String> {
    let text = m.content.trim();
    let e = match m.role {
        Role::User => format!("User: {text}"),
        Role::System => format!("System: {text}"),
        Role::Tool => format!(
            "Result of {}: {text}",
            m.tool_name.as_deref().unwrap_or("the tool")
        ),
        Role::Assistant => {
            let mut parts: Vec<String> = vec![];
            if !text.is_empty() {
                parts.push(format!("Assistant: {text}"));
            }
            parts.extend(
                m.tool_calls
                    .iter()
                    .map(|c| format!("Assistant called {} with {}", c.name, c.arguments)),
            );
            parts.join("\n")
        }
    };
    (!e.is_empty()).then_some(e)
}

/// The largest cap such that every cost cut to it sums to at most `budget` (every cost, when
/// they fit as they are).
fn fair_share(costs: &[usize], budget: usize) -> usize {
    let total: usize = costs.iter().sum();
    if total <= budget {
        return usize::MAX;
    }
    let mut sorted = costs.to_vec();
    sorted.sort_unstable();
    // the smaller ones whole, the rest share what is left equally
    let mut left = budget;
    for (i, &c) in sorted.iter().enumerate() {
        let share = left / (sorted.len() - i);
        if c > share {
            return share;
        }
        left -= c;
    }
    usize::MAX
}

/// `text` cut to about `tokens` tokens, with "…" where it was cut.
pub fn cut(text: &str, tokens: usize) -> String {
    if estimate_tokens(text) <= tokens {
        return text.to_string();
    }
    let room = tokens.saturating_sub(1);
    let (mut ascii, mut other, mut end) = (0usize, 0usize, 0usize);
    for (i, c) in text.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(4) + other > room {
            break;
        }
        end = i + c.len_utf8();
    }
    format!("{}…", text[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::budget::estimate_messages;
    use crate::llm::ToolCall;
    use serde_json::json;

    fn turn(n: usize, result_chars: usize) -> Vec<Message> {
        let mut asked = Message::new(Role::Assistant, "");
        asked.tool_calls = vec![ToolCall {
            id: Some(format!("c{n}")),
            name: "files__read".into(),
            arguments: json!({"path": format!("notes/{n}.txt")}),
            written: None,
        }];
        let mut result = Message::new(
            Role::Tool,
            format!("file {n}: ") + &"x".repeat(result_chars),
        );
        result.tool_name = Some("files__read".into());
        vec![
            Message::new(Role::User, format!("read note {n}")),
            asked,
            result,
            Message::new(Role::Assistant, format!("note {n} says x")),
        ]
    }

    #[test]
    fn the_transcript_says_who_said_what_and_what_tools_found() {
        let first = Message::new(Role::User, "always answer in French");
        let m = request_messages(
            Some(&first),
            Some("earlier: the user likes cats"),
            &turn(7, 10),
            4000,
            150,
        );
        assert_eq!(m.len(), 2);
        assert!(m[0].content.contains("at most 150 words"));
        let u = &m[1].content;
        for needle in [
            "always answer in French",
            "<summary>\nearlier: the user likes cats\n</summary>",
            "User: read note 7",
            "Assistant called files__read with {\"path\":\"notes/7.txt\"}",
            "Result of files__read: file 7: xxxxxxxxxx",
            "Assistant: note 7 says x",
        ] {
            assert!(u.contains(needle), "{needle} in {u}");
        }
    }

    #[test]
    fn a_transcript_too_long_is_cut_to_fit_the_longest_entries_first() {
        let covered: Vec<Message> = (0..20).flat_map(|n| turn(n, 4000)).collect();
        let room = 1500;
        let m = request_messages(None, None, &covered, room, 150);
        assert!(
            estimate_messages(&m) + REPLY_PRIMING <= room,
            "{}",
            estimate_messages(&m)
        );
        let u = &m[1].content;
        // every entry is there, the short ones whole, the long results cut
        for n in 0..20 {
            assert!(u.contains(&format!("User: read note {n}\n")), "{n}");
            assert!(u.contains(&format!("Assistant: note {n} says x")), "{n}");
            assert!(
                u.contains(&format!("Result of files__read: file {n}: xx")),
                "{n}"
            );
        }
        assert!(u.contains("x…"));
        assert!(
            estimate_messages(&m) + REPLY_PRIMING > room - 100,
            "most of the room is used"
        );
    }

    #[test]
    fn fair_shares_and_cuts() {
        assert_eq!(fair_share(&[10, 20], 100), usize::MAX);
        assert_eq!(fair_share(&[10, 100, 100], 110), 50);
        assert_eq!(cut("abcdefghijkl", 2), "abcd…");
        assert_eq!(cut("abc", 5), "abc");
        assert!(estimate_tokens(&cut(&"日本".repeat(100), 10)) <= 10);
    }
}
