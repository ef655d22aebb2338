//! Conversations the real-model tests start from (`real_llm`, `eval_tools`).

use serde_json::json;
use switchboard_engine::llm::Role;
use switchboard_engine::store::exchange::{
    ExportedConversation, ExportedMessage, ExportedToolCall,
};
use switchboard_engine::store::{Approval, ToolCallStatus};

/// Two worked examples of a call to `calculator__add` and its answer, as an imported conversation:
/// a small base model needs to see the pattern before it follows it. `ask` ends each question
/// (e.g. " Use the calculator.").
pub fn worked(model: &str, ask: &str) -> ExportedConversation {
    let m = |id: i64, role: Role, content: &str| {
        ExportedMessage::text(id, (id > 1).then(|| id - 1), role, content)
    };
    let mut messages = Vec::new();
    let mut tool_calls = Vec::new();
    for (n, (a, b)) in [(3, 4), (10, 5)].into_iter().enumerate() {
        let base = messages.len() as i64;
        let id = format!("call_{n}");
        let mut call = m(base + 2, Role::Assistant, "");
        call.tool_calls = vec![switchboard_engine::llm::ToolCall {
            id: Some(id.clone()),
            name: "calculator__add".into(),
            arguments: json!({"a": a, "b": b}),
            written: None,
        }];
        let mut result = m(base + 3, Role::Tool, &(a + b).to_string());
        result.tool_name = Some("calculator__add".into());
        result.tool_call_id = Some(id.clone());
        messages.push(m(base + 1, Role::User, &format!("What is {a} + {b}?{ask}")));
        messages.push(call);
        messages.push(result);
        messages.push(m(
            base + 4,
            Role::Assistant,
            &format!("{a} + {b} = {}.", a + b),
        ));
        tool_calls.push(ExportedToolCall {
            message: base + 2,
            result_message: Some(base + 3),
            call_id: Some(id),
            name: "calculator__add".into(),
            server: "calculator".into(),
            tool: "add".into(),
            arguments: json!({"a": a, "b": b}),
            result: Some((a + b).to_string()),
            result_raw: None,
            is_error: false,
            status: ToolCallStatus::Done,
            started_at: 0,
            duration_ms: Some(1),
            approval: Some(Approval::ReadOnly),
            arguments_edited: false,
            written: None,
        });
    }
    ExportedConversation::new("examples", model, messages, tool_calls)
}
