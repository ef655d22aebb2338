//! The Markdown export: the shown branch, for reading (the one document the engine words
//! itself).

use super::super::{Approval, Conversation, MessageStatus, Notice};
use crate::llm::Role;

/// The shown branch as Markdown: who said what, tool calls as readable blocks, thinking quoted.
pub fn markdown(conv: &Conversation) -> String {
    let mut out = format!(
        "# {}\n\n*Model: {}*\n",
        conv.summary.title, conv.summary.model
    );
    let fence = |text: &str| {
        // a fence longer than any run of backticks inside
        let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        "`".repeat(longest.max(2) + 1)
    };
    for m in &conv.messages {
        match m.role {
            Role::User => {
                out.push_str(&format!("\n## You\n\n{}\n", m.content.trim_end()));
                for a in &m.attachments {
                    out.push_str(&format!(
                        "\n*Attached image: {} ({}×{})*\n",
                        a.name, a.width, a.height
                    ));
                }
            }
            Role::Assistant if m.status == MessageStatus::Notice => {
                let text = m.notice.as_ref().map(Notice::describe).unwrap_or_default();
                out.push_str(&format!("\n> *{}*\n", text.trim()))
            }
            Role::Assistant => {
                let calls: Vec<_> = conv
                    .tool_calls
                    .iter()
                    .filter(|t| t.message_id == m.id)
                    .collect();
                if m.content.trim().is_empty() && calls.is_empty() && m.thinking.is_none() {
                    continue;
                }
                out.push_str("\n## Assistant\n\n");
                if let Some(t) = m.thinking.as_deref().filter(|t| !t.trim().is_empty()) {
                    for line in t.trim().lines() {
                        out.push_str(&format!("> {line}\n"));
                    }
                    out.push('\n');
                }
                if !m.content.trim().is_empty() {
                    out.push_str(&format!("{}\n", m.content.trim_end()));
                }
                for t in calls {
                    let args = serde_json::to_string_pretty(&t.arguments).unwrap_or_default();
                    let result = t.result.clone().unwrap_or_default();
                    let (fa, fr) = (fence(&args), fence(&result));
                    let how = t
                        .approval
                        .map(|a| format!(", {}", approval_words(a, t.arguments_edited)))
                        .unwrap_or_default();
                    let took = t
                        .duration_ms
                        .map(|d| format!("{d} ms"))
                        .unwrap_or_else(|| "no answer".into());
                    let state = if t.is_error { "failed, " } else { "" };
                    let label = if t.is_error { "Error" } else { "Result" };
                    out.push_str(&format!(
                        "\n**Tool call: {} › {}** ({state}{took}{how})\n\n{fa}json\n{args}\n{fa}\n\n{label}:\n\n{fr}\n{}\n{fr}\n",
                        t.server,
                        t.tool,
                        result.trim_end()
                    ));
                }
            }
            Role::System => out.push_str(&format!("\n## System\n\n{}\n", m.content.trim_end())),
            Role::Tool => {}
        }
    }
    out
}

/// An approval in words, for the Markdown export (the window words it on its own).
fn approval_words(a: Approval, edited: bool) -> String {
    let base = match a {
        Approval::Waiting => "waiting",
        Approval::ReadOnly => "read-only",
        Approval::AlwaysAllowed => "always allowed",
        Approval::AllowedInChat => "allowed in this chat",
        Approval::DeniedByPolicy => "denied by policy",
        Approval::Approved => "approved",
        Approval::ApprovedForChat => "approved for this chat",
        Approval::ApprovedAlways => "approved always",
        Approval::Denied => "denied",
        Approval::Cancelled => "cancelled",
        Approval::Repeated => "not run (repeated)",
        Approval::TurnedOff => "not run (turned off for this chat)",
        Approval::UnknownTool => "not run (unknown tool)",
        Approval::InvalidArguments => "not run (invalid arguments)",
        Approval::SignInNeeded => "not run (sign-in needed)",
    };
    if edited && !a.refused() {
        format!("{base}, arguments edited")
    } else {
        base.to_string()
    }
}
