//! Token estimates, to keep a request inside a small model's context, and tool results cut to fit.
//!
//! The estimate is a cheap heuristic, not a tokenizer (the model's is not at hand): about four
//! bytes of ASCII per token, as BPE tokenizers give for English and code, and one token per
//! non-ASCII character (CJK is about one per character; accented Latin and Cyrillic are fewer,
//! so this errs on the high side, which is the safe side for a budget).
//!
//! `turn.rs` scales the estimates by what the model's server said its prompts were, and fits the
//! tools offered to the context, the least relevant (`rank.rs`) let go first. The small-model aids
//! (recovery, repair, resolution, ranking) are pure functions with unit and property tests; `Aids`
//! switches them off, only to measure them (`make eval-tools`).

use crate::llm::{Message, ToolSpec};

/// ASCII bytes per token.
const ASCII_PER_TOKEN: usize = 4;
/// What each message costs beyond its text: role markers and separators in the chat template.
pub const PER_MESSAGE: usize = 4;
/// What each offered tool costs beyond its name, description and schema.
const PER_TOOL: usize = 10;
/// The template's start of the reply.
pub const REPLY_PRIMING: usize = 3;

/// Estimated tokens of `text`: ASCII bytes / 4 (rounded up) + one per non-ASCII character.
/// Counted on bytes (a non-ASCII character is one leading byte, 0xC0 and up, and continuation
/// bytes, 0x80 to 0xBF), in runs of 255 counted in bytes: a loop the compiler vectorises 16 or 32
/// bytes at a time (planning a long conversation estimates every message).
pub fn estimate_tokens(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut high, mut leading) = (0usize, 0usize);
    for run in bytes.chunks(255) {
        let (mut h, mut l) = (0u8, 0u8);
        for &b in run {
            h += u8::from(b >= 0x80);
            l += u8::from(b >= 0xC0);
        }
        high += usize::from(h);
        leading += usize::from(l);
    }
    (bytes.len() - high).div_ceil(ASCII_PER_TOKEN) + leading
}

/// Estimated tokens of a whole request: every message (text and tool calls; the thinking of
/// earlier replies is not sent back by the templates, so not counted) and every tool offered.
pub fn estimate_request(messages: &[Message], tools: &[ToolSpec]) -> usize {
    estimate_with(estimate_messages(messages), tools)
}

/// [`estimate_request`] from the messages' share already counted ([`estimate_messages`]).
pub fn estimate_with(messages: usize, tools: &[ToolSpec]) -> usize {
    messages + estimate_tools(tools) + REPLY_PRIMING
}

/// The messages' share of [`estimate_request`].
pub fn estimate_messages(messages: &[Message]) -> usize {
    messages.iter().map(estimate_message).sum()
}

/// One message's share of [`estimate_request`]: its text, its calls, its images.
pub fn estimate_message(m: &Message) -> usize {
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments.to_string()) + PER_MESSAGE)
        .sum();
    let images: usize = m.images.iter().map(|i| i.estimated_tokens()).sum();
    PER_MESSAGE + estimate_tokens(&m.content) + calls + images
}

/// The tools' share of [`estimate_request`].
pub fn estimate_tools(tools: &[ToolSpec]) -> usize {
    tools
        .iter()
        .map(|t| {
            PER_TOOL
                + estimate_tokens(&t.name)
                + estimate_tokens(&t.description)
                + estimate_tokens(&t.parameters.to_string())
        })
        .sum()
}

/// A tool result cut to about `max_tokens` for the model, and whether it was cut. The cut falls
/// at a line end when one is near, and a note says that it was cut, how long the result was, that
/// the person sees all of it on the tool's card, and that the model can ask for less.
pub fn cut_for_model(result: &str, max_tokens: usize) -> (String, bool) {
    let total = estimate_tokens(result);
    if total <= max_tokens {
        return (result.to_string(), false);
    }
    let chars = result.chars().count();
    // the note's own length depends on the kept length only through a number: size it for the
    // longest number, the whole result's
    // (one more token for the blank line before the note and the rounding of joined text)
    let room = max_tokens.saturating_sub(estimate_tokens(&note(chars, total, chars)) + 1);
    let mut end = 0;
    let (mut ascii, mut other) = (0usize, 0usize);
    for (i, c) in result.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(ASCII_PER_TOKEN) + other > room {
            break;
        }
        end = i + c.len_utf8();
    }
    // back to a line end in the last fifth of what is kept, when there is one
    if let Some(nl) = result[..end].rfind('\n') {
        if nl >= end - end / 5 && nl > 0 {
            end = nl;
        }
    }
    let kept = result[..end].trim_end();
    let kept_chars = kept.chars().count();
    (
        format!("{kept}\n\n{}", note(chars, total, kept_chars)),
        true,
    )
}

fn note(chars: usize, tokens: usize, kept: usize) -> String {
    format!(
        "[Cut for the model: the full result is {chars} characters (about {tokens} tokens); only the \
         first {kept} characters are above. The person sees the full result on the tool's card. If \
         you need what was cut, call the tool again with a narrower query.]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Role, ToolCall};
    use serde_json::json;

    #[test]
    fn tokens_are_about_four_ascii_bytes_or_one_other_character() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens(&"word ".repeat(100)), 125);
        assert_eq!(estimate_tokens("日本語"), 3);
        assert_eq!(estimate_tokens("café"), 2);
    }

    proptest::proptest! {
        /// Counting bytes gives what counting characters does (one leading byte per non-ASCII
        /// character, of two, three or four bytes).
        #[test]
        fn bytes_count_as_characters(text in "\\PC{0,200}") {
            let ascii = text.chars().filter(char::is_ascii).count();
            let other = text.chars().count() - ascii;
            proptest::prop_assert_eq!(estimate_tokens(&text), ascii.div_ceil(4) + other);
        }
    }

    #[test]
    fn a_request_counts_messages_calls_and_tools() {
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![ToolCall {
            id: None,
            name: "calculator__add".into(),
            arguments: json!({"a": 2, "b": 40}),
            written: None,
        }];
        a.thinking = Some("x".repeat(4000));
        let messages = vec![Message::new(Role::User, "what is 2+40"), a];
        let tool = ToolSpec {
            name: "calculator__add".into(),
            description: "Add two numbers.".into(),
            parameters: json!({"type": "object"}),
        };
        let none = estimate_request(&[], &[]);
        assert_eq!(none, REPLY_PRIMING);
        let n = estimate_request(&messages, &[]);
        // 4 + 3 for the user; 4 + 0 + (4 + 4 + 4) for the assistant's call; thinking not counted
        assert_eq!(n, REPLY_PRIMING + 7 + 16);
        let with_tool = estimate_request(&messages, std::slice::from_ref(&tool));
        assert_eq!(with_tool, n + PER_TOOL + 4 + 4 + 5);
    }

    #[test]
    fn short_results_are_kept_whole() {
        assert_eq!(cut_for_model("42", 10), ("42".to_string(), false));
        let exact = "abcd".repeat(10);
        assert_eq!(cut_for_model(&exact, 10), (exact.clone(), false));
    }

    #[test]
    fn long_results_are_cut_at_a_line_with_a_note() {
        let result: String = (0..2000)
            .map(|i| format!("line {i}: some text here\n"))
            .collect();
        let (cut, was_cut) = cut_for_model(&result, 500);
        assert!(was_cut);
        assert!(estimate_tokens(&cut) <= 500, "{}", estimate_tokens(&cut));
        assert!(estimate_tokens(&cut) >= 400, "most of the budget is used");
        let (kept, note) = cut.split_once("\n\n[Cut for the model").unwrap();
        assert!(result.starts_with(kept));
        assert!(
            kept.ends_with("some text here"),
            "cut at a line end: {:?}",
            &kept[kept.len() - 30..]
        );
        assert!(note.contains(&format!("the full result is {} characters", result.len())));
        assert!(note.contains(&format!("first {} characters", kept.len())));
        assert!(note.contains("tool's card") && note.contains("narrower query"));
    }

    #[test]
    fn cutting_respects_characters_and_tiny_budgets() {
        let result = "日本語のテキスト".repeat(200);
        let (cut, was_cut) = cut_for_model(&result, 100);
        assert!(was_cut && estimate_tokens(&cut) <= 100);
        assert!(result.starts_with(cut.split("\n\n[").next().unwrap()));
        let (cut, was_cut) = cut_for_model(&"x".repeat(10_000), 3);
        assert!(was_cut);
        assert!(cut.starts_with("\n\n[Cut for the model"), "{cut}");
    }
}
