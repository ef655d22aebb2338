//! Result shaping: what the model, the store and the window get from a server's answer. Pure
//! functions, no I/O: the text the model reads, bounded, and the raw result kept beside it.

// Sampling is deprecated by 2026-07-28 (SEP-2577), but 2025-11-25 servers use it.
#![allow(deprecated)]

use rmcp::model::{Role as McpRole, SamplingMessage, SamplingMessageContentBlock};
use serde_json::Value;

use super::handler::SamplingText;

/// The largest message read from a stdio server.
pub const MAX_STDIO_MESSAGE: usize = 64 * 1024 * 1024;
/// Most of a result's text the model (and the store) gets; the rest is cut with a note.
pub const MAX_RESULT_TEXT: usize = 256 * 1024;
/// Larger raw results (images, structured content) are not kept beside the text.
pub const MAX_RAW_RESULT: usize = 2 * 1024 * 1024;

/// Keeps a huge result from flooding the model's context, the window and the database: the text
/// is cut at [`MAX_RESULT_TEXT`] (on a character boundary, with a note saying so); a raw result
/// over [`MAX_RAW_RESULT`] is dropped.
pub fn bounded(text: String, raw: Value) -> (String, Option<Value>) {
    let raw = (approx_size(&raw) <= MAX_RAW_RESULT).then_some(raw);
    if text.len() <= MAX_RESULT_TEXT {
        return (text, raw);
    }
    let mut end = MAX_RESULT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let note = format!(
        "\n\n[Switchboard cut this result: it was {} bytes; only the first {} are shown.]",
        text.len(),
        end
    );
    (format!("{}{note}", &text[..end]), raw)
}

/// About how many bytes `v` takes as JSON (strings and keys counted, punctuation not): enough to
/// tell a 2 MB result from a small one without serializing it.
pub fn approx_size(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(approx_size).sum(),
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + approx_size(v)).sum(),
        _ => 8,
    }
}

/// The text the model reads from a result: its text blocks; other blocks described; the
/// structured content when there is no text.
pub fn result_text(raw: &Value) -> String {
    let s = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut parts = Vec::new();
    for block in raw
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(s(block, "text")),
            Some(kind @ ("image" | "audio")) => {
                parts.push(format!("[{kind} {}]", s(block, "mimeType")))
            }
            Some("resource_link") => parts.push(format!("[resource {}]", s(block, "uri"))),
            Some("resource") => {
                let r = &block["resource"];
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => parts.push(t.to_string()),
                    None => parts.push(format!("[resource {}]", s(r, "uri"))),
                }
            }
            _ => parts.push(block.to_string()),
        }
    }
    if parts.is_empty() {
        if let Some(structured) = raw.get("structuredContent") {
            return structured.to_string();
        }
    }
    parts.join("\n")
}

/// One sampling message as text: text blocks as they are, other content named in brackets.
pub fn sampling_text(m: &SamplingMessage) -> SamplingText {
    let role = match m.role {
        McpRole::Assistant => "assistant",
        _ => "user",
    };
    let text = m
        .content
        .clone()
        .into_vec()
        .iter()
        .map(|c| match c {
            SamplingMessageContentBlock::Text(t) => t.text.clone(),
            SamplingMessageContentBlock::Image(_) => "[image]".into(),
            SamplingMessageContentBlock::Audio(_) => "[audio]".into(),
            SamplingMessageContentBlock::ToolUse(u) => format!("[tool use: {}]", u.name),
            SamplingMessageContentBlock::ToolResult(_) => "[tool result]".into(),
            _ => "[other content]".into(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    SamplingText {
        role: role.into(),
        text,
    }
}

/// `file://` URI of an absolute path (percent-encoding what a URI cannot hold as is).
pub fn file_uri(p: &std::path::Path) -> String {
    let mut out = String::from("file://");
    for b in p.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_are_read_and_other_blocks_described() {
        let raw = json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
            {"type": "resource", "resource": {"uri": "x://t", "text": "embedded"}},
            {"type": "resource", "resource": {"uri": "x://b", "blob": "AAAA"}},
            {"type": "mystery", "n": 1}
        ]});
        assert_eq!(
            result_text(&raw),
            "first\n[image image/png]\n[resource file:///a.txt]\nembedded\n[resource x://b]\n{\"type\":\"mystery\",\"n\":1}"
        );
    }

    #[test]
    fn structured_content_is_the_text_when_there_are_no_blocks() {
        let raw = json!({"content": [], "structuredContent": {"temperature": 21}});
        assert_eq!(result_text(&raw), r#"{"temperature":21}"#);
        assert_eq!(result_text(&json!({})), "");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_with_a_note() {
        let text = "é".repeat(MAX_RESULT_TEXT); // 2 bytes each: twice the limit
        let (cut, raw) = bounded(text.clone(), json!({"small": true}));
        assert!(raw.is_some());
        let (kept, note) = cut.split_once("\n\n[Switchboard cut").unwrap();
        assert_eq!(kept.len(), MAX_RESULT_TEXT);
        assert!(kept.chars().all(|c| c == 'é'));
        assert!(
            note.contains(&format!("it was {} bytes", text.len())),
            "{note}"
        );
        // short text is untouched
        assert_eq!(bounded("42".into(), Value::Null).0, "42");
    }

    #[test]
    fn a_huge_raw_result_is_not_kept() {
        let big = json!({"content": [{"type": "image", "data": "A".repeat(MAX_RAW_RESULT + 1)}]});
        assert!(approx_size(&big) > MAX_RAW_RESULT);
        assert_eq!(bounded("ok".into(), big).1, None);
        assert_eq!(
            approx_size(&json!({"ab": "cde", "n": [1, 2]})),
            2 + 3 + 1 + 16
        );
    }

    #[test]
    fn file_uris_escape_what_a_uri_cannot_hold() {
        assert_eq!(
            file_uri(std::path::Path::new("/home/ada/my notes/ü")),
            "file:///home/ada/my%20notes/%C3%BC"
        );
    }
}
