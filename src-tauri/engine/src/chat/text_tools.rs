//! Tool calls for models without native tool calling (as the original MCP chatbot did): the tools
//! are described in the system prompt, and a JSON object `{"tool": …, "arguments": …}` (or
//! `{"name": …, "arguments": …}`, bare or in a ```json fence) is read out of the reply. The JSON is
//! not shown as text; the call runs like a native one. In the history sent back, calls are JSON
//! text again and results are user messages, which any chat template understands.

use serde_json::{json, Value};

use crate::llm::{Message, Role, ToolCall, ToolSpec};

/// The system prompt's tool section.
pub fn describe_tools(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "You can use tools. To call one, reply with only a JSON object and nothing else:\n\
         {\"tool\": \"<tool name>\", \"arguments\": {<arguments>}}\n\
         You will then get the tool's result, and can answer the user or call another tool.\n\
         Call a tool only when it helps. The tools:\n",
    );
    for t in tools {
        out.push_str(&format!(
            "\n- {}: {}\n  arguments (JSON Schema): {}",
            t.name,
            t.description.trim(),
            t.parameters
        ));
    }
    out
}

/// The history in text form: calls become their JSON, results become user messages.
pub fn history_as_text(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<String> = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"tool": c.name, "arguments": c.arguments}).to_string())
                    .collect();
                let text = [m.content.trim(), &calls.join("\n")]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n");
                let mut out = Message::new(Role::Assistant, text);
                out.thinking = m.thinking.clone();
                out
            }
            Role::Tool => Message::new(
                Role::User,
                format!(
                    "Result of {}:\n{}",
                    m.tool_name.as_deref().unwrap_or("the tool"),
                    m.content
                ),
            ),
            _ => m.clone(),
        })
        .collect()
}

/// Reads a tool call out of a reply: the call and the reply's text without the JSON. `None`
/// when the reply holds no such object (malformed JSON is plain text).
pub fn extract_tool_call(reply: &str) -> Option<(ToolCall, String)> {
    for (start, end) in candidates(reply) {
        let Ok(v) = serde_json::from_str::<Value>(&reply[start..end]) else {
            continue;
        };
        let Some(call) = as_call(&v) else { continue };
        // drop the JSON (and its fence, when it had one) from the text
        let (mut a, mut b) = (start, end);
        let before = reply[..a].trim_end();
        let after = reply[b..].trim_start();
        if let (Some(open), true) = (fence_start(before), after.starts_with("```")) {
            a = open;
            b = reply.len() - after.len() + 3;
        }
        let rest = format!("{}\n{}", reply[..a].trim_end(), reply[b..].trim_start());
        return Some((call, rest.trim().to_string()));
    }
    None
}

fn as_call(v: &Value) -> Option<ToolCall> {
    let o = v.as_object()?;
    let name = o
        .get("tool")
        .or_else(|| o.get("name"))
        .and_then(Value::as_str)?
        .trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match o.get("arguments").or_else(|| o.get("parameters")) {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(a) => a.clone(),
        None => json!({}),
    };
    Some(ToolCall {
        id: None,
        name: name.to_string(),
        arguments,
    })
}

/// Where a ```json (or ```) fence opens right before byte `len` of `before`, if it does.
fn fence_start(before: &str) -> Option<usize> {
    let t = before.trim_end();
    for tag in ["```json", "```JSON", "```"] {
        if let Some(rest) = t.strip_suffix(tag) {
            return Some(rest.len());
        }
    }
    None
}

/// Balanced `{…}` spans, outermost first, in order (strings and escapes respected).
fn candidates(s: &str) -> Vec<(usize, usize)> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'{' {
            i += 1;
            continue;
        }
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        let mut end = None;
        for (j, &c) in bytes.iter().enumerate().skip(i) {
            if in_str {
                match (esc, c) {
                    (true, _) => esc = false,
                    (false, b'\\') => esc = true,
                    (false, b'"') => in_str = false,
                    _ => {}
                }
                continue;
            }
            match c {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(j + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            Some(e) => {
                out.push((i, e));
                i = e;
            }
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_found_bare_fenced_or_with_name_and_the_json_is_removed() {
        let (c, rest) =
            extract_tool_call(r#"{"tool": "calculator__add", "arguments": {"a": 2, "b": 40}}"#)
                .unwrap();
        assert_eq!(
            (c.name.as_str(), c.arguments.clone(), rest.as_str()),
            ("calculator__add", json!({"a": 2, "b": 40}), "")
        );
        let (c, rest) = extract_tool_call(
            "I will add them.\n```json\n{\"name\": \"calculator__add\", \"arguments\": \"{\\\"a\\\": 1}\"}\n```\nOne moment.",
        )
        .unwrap();
        assert_eq!(c.name, "calculator__add");
        assert_eq!(
            c.arguments,
            json!({"a": 1}),
            "arguments given as a JSON string"
        );
        assert_eq!(rest, "I will add them.\nOne moment.");
        // braces inside strings do not confuse it; an object without a tool name is skipped
        let (c, _) =
            extract_tool_call(r#"Note {"x": 1} then {"tool": "t", "arguments": {"q": "a } b"}}"#)
                .unwrap();
        assert_eq!(c.arguments, json!({"q": "a } b"}));
        assert_eq!(
            extract_tool_call(r#"{"tool": "t"}"#).unwrap().0.arguments,
            json!({})
        );
    }

    #[test]
    fn malformed_or_absent_json_is_plain_text() {
        assert!(extract_tool_call("The answer is 42.").is_none());
        assert!(
            extract_tool_call(r#"{"tool": "calculator__add", "arguments": {"a": 2,}"#).is_none()
        );
        assert!(extract_tool_call(
            r#"```json
{"tool": "x", "arguments": {"a": }
```"#
        )
        .is_none());
        assert!(extract_tool_call(r#"{"answer": 42}"#).is_none());
        assert!(extract_tool_call(r#"{"tool": "", "arguments": {}}"#).is_none());
    }

    #[test]
    fn history_turns_calls_into_json_and_results_into_user_messages() {
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![ToolCall {
            id: Some("1".into()),
            name: "x__y".into(),
            arguments: json!({"a": 1}),
        }];
        let mut t = Message::new(Role::Tool, "42");
        t.tool_name = Some("x__y".into());
        let h = history_as_text(&[Message::new(Role::User, "q"), a, t]);
        assert_eq!(h[1].content, r#"{"tool":"x__y","arguments":{"a":1}}"#);
        assert!(h[1].tool_calls.is_empty());
        assert_eq!(
            (h[2].role, h[2].content.as_str()),
            (Role::User, "Result of x__y:\n42")
        );
    }

    #[test]
    fn the_tool_section_lists_names_descriptions_and_schemas() {
        let d = describe_tools(&[ToolSpec {
            name: "calculator__add".into(),
            description: "Add.".into(),
            parameters: json!({"type": "object"}),
        }]);
        assert!(d.contains("{\"tool\": \"<tool name>\""));
        assert!(
            d.contains("- calculator__add: Add.\n  arguments (JSON Schema): {\"type\":\"object\"}")
        );
    }
}
