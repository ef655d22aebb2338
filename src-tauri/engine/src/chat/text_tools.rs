//! Tool calls for models without native tool calling (as the original MCP chatbot did): the tools
//! are described in the system prompt, and the call the model writes as JSON is read out of its
//! reply by [`super::recover`] (as calls in any shape are, in every mode). In the history sent
//! back, calls are JSON text again and results are user messages, which any chat template
//! understands.

use serde_json::json;

use crate::llm::{Message, Role, ToolSpec};

/// The system prompt's tool section; `constrained`: every reply is JSON (a call, or an answer).
pub fn describe_tools(tools: &[ToolSpec], constrained: bool) -> String {
    let mut out = String::from(if constrained {
        "You can use tools. Reply with only a JSON object: to call a tool,\n\
         {\"tool\": \"<tool name>\", \"arguments\": {<arguments>}}\n\
         and to answer the user, {\"answer\": \"<your answer>\"}\n\
         After a call you get the tool's result, and can answer or call another tool.\n\
         Call a tool only when it helps. The tools:\n"
    } else {
        "You can use tools. To call one, reply with only a JSON object and nothing else:\n\
         {\"tool\": \"<tool name>\", \"arguments\": {<arguments>}}\n\
         You will then get the tool's result, and can answer the user or call another tool.\n\
         Call a tool only when it helps. The tools:\n"
    });
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

/// The JSON schema a constrained reply must fit: a call to one of `tools` (its arguments an
/// object; each tool's own schema is checked when the call runs), or an answer.
pub fn reply_schema(tools: &[ToolSpec]) -> serde_json::Value {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    json!({"anyOf": [
        {"type": "object", "properties": {
            "tool": {"type": "string", "enum": names},
            "arguments": {"type": "object"}},
         "required": ["tool", "arguments"], "additionalProperties": false},
        {"type": "object", "properties": {"answer": {"type": "string"}},
         "required": ["answer"], "additionalProperties": false}
    ]})
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
            // a tool's images go with its result
            Role::Tool => Message {
                images: m.images.clone(),
                ..Message::new(
                    Role::User,
                    format!(
                        "Result of {}:\n{}",
                        m.tool_name.as_deref().unwrap_or("the tool"),
                        m.content
                    ),
                )
            },
            _ => m.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    #[test]
    fn history_turns_calls_into_json_and_results_into_user_messages() {
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![ToolCall {
            id: Some("1".into()),
            name: "x__y".into(),
            arguments: json!({"a": 1}),
            written: None,
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
        let tools = [ToolSpec {
            name: "calculator__add".into(),
            description: "Add.".into(),
            parameters: json!({"type": "object"}),
        }];
        let d = describe_tools(&tools, false);
        assert!(d.contains("{\"tool\": \"<tool name>\""));
        assert!(!d.contains("answer\""));
        assert!(describe_tools(&tools, true).contains("{\"answer\": \"<your answer>\"}"));
        // a constrained reply is a call to an offered tool, or an answer
        let schema = reply_schema(&tools);
        let fits = |v: serde_json::Value| jsonschema::validator_for(&schema).unwrap().is_valid(&v);
        assert!(fits(
            json!({"tool": "calculator__add", "arguments": {"a": 1}})
        ));
        assert!(fits(json!({"answer": "42"})));
        assert!(!fits(json!({"tool": "nope", "arguments": {}})));
        assert!(!fits(json!({"answer": "42", "tool": "calculator__add"})));
        assert!(
            d.contains("- calculator__add: Add.\n  arguments (JSON Schema): {\"type\":\"object\"}")
        );
    }
}
