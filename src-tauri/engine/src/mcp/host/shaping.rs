//! Result shaping: what the model, the store and the window get from a server's answer. Pure
//! functions, no I/O: the text the model reads, bounded, and the raw result kept beside it.
//!
//! Text blocks kept, other blocks described, cut at 256 KB (`MAX_RESULT_TEXT`) with a note; raw
//! results over 2 MB (`MAX_RAW_RESULT`) not kept. Images (`image` blocks, embedded `image/…`
//! resources; at most `MAX_RESULT_IMAGES`, 8) are taken out first, as they came
//! (`ToolOutcome::images`), for the chat loop to decode; a sampling message's images too.

// Sampling is deprecated by 2026-07-28 (SEP-2577), but 2025-11-25 servers use it.
#![allow(deprecated)]

use rmcp::model::{Role as McpRole, SamplingMessage, SamplingMessageContentBlock};
use serde_json::Value;

use serde::Serialize;

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

/// The most images taken from one result (or one sampling message).
pub const MAX_RESULT_IMAGES: usize = 8;

/// An image a server sent (a tool result's image block or embedded image resource, or a
/// sampling message's image), as it came: for the chat loop to decode, fit and keep.
#[derive(Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultImage {
    pub mime_type: String,
    /// Base64, as the server sent it.
    pub data: String,
}

impl std::fmt::Debug for ResultImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ResultImage({}, {} base64 chars)",
            self.mime_type,
            self.data.len()
        )
    }
}

/// The images of a result (read before it is bounded, so a big screenshot is not lost with the
/// raw result): `image` blocks and embedded resources of an `image/` type with a `blob`; at
/// most [`MAX_RESULT_IMAGES`].
pub fn result_images(raw: &Value) -> Vec<ResultImage> {
    let image = |v: &Value, data: &str| -> Option<ResultImage> {
        let mime = v.get("mimeType").and_then(Value::as_str)?;
        let data = v.get(data).and_then(Value::as_str)?;
        mime.starts_with("image/").then(|| ResultImage {
            mime_type: mime.to_string(),
            data: data.to_string(),
        })
    };
    raw.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| match block.get("type").and_then(Value::as_str) {
            Some("image") => image(block, "data"),
            Some("resource") => image(&block["resource"], "blob"),
            _ => None,
        })
        .take(MAX_RESULT_IMAGES)
        .collect()
}

/// One sampling message as text: text blocks as they are, other content named in brackets
/// (an image also kept whole, for a model that sees images).
pub fn sampling_text(m: &SamplingMessage) -> SamplingText {
    let role = match m.role {
        McpRole::Assistant => "assistant",
        _ => "user",
    };
    let blocks = m.content.clone().into_vec();
    let images = blocks
        .iter()
        .filter_map(|c| match c {
            SamplingMessageContentBlock::Image(i) => Some(ResultImage {
                mime_type: i.mime_type.clone(),
                data: i.data.clone(),
            }),
            _ => None,
        })
        .take(MAX_RESULT_IMAGES)
        .collect();
    let text = blocks
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
        images,
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
    fn images_are_read_from_image_blocks_and_image_resources() {
        let raw = json!({"content": [
            {"type": "text", "text": "a chart"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "x://p", "mimeType": "image/jpeg", "blob": "BBBB"}},
            {"type": "resource", "resource": {"uri": "x://t", "mimeType": "text/plain", "blob": "CCCC"}},
            {"type": "audio", "mimeType": "audio/wav", "data": "DDDD"}
        ]});
        let got = result_images(&raw);
        assert_eq!(
            got,
            vec![
                ResultImage {
                    mime_type: "image/png".into(),
                    data: "AAAA".into()
                },
                ResultImage {
                    mime_type: "image/jpeg".into(),
                    data: "BBBB".into()
                },
            ]
        );
        let many = json!({"content": vec![json!({"type": "image", "mimeType": "image/png", "data": "A"}); 20]});
        assert_eq!(result_images(&many).len(), MAX_RESULT_IMAGES);
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

/// One message of a server's sampling request, as text (and its images).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingText {
    /// `user` or `assistant`
    pub role: String,
    pub text: String,
    /// Its images (also named in `text`), for a model that sees images, and for the card.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ResultImage>,
}
