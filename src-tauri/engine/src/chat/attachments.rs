//! Resources the user attached to a message: their text goes to the model with the message, in
//! marked blocks the window shows folded.

/// A resource the user attached to a message: its text goes to the model with the message.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub name: String,
    pub uri: String,
    pub text: String,
}

/// The most text one attachment adds to a message.
pub const MAX_ATTACHMENT_CHARS: usize = 256 * 1024;

/// The message as stored and sent: the user's text, then each attachment in an
/// `<attachment name="…" uri="…">` block (the window shows those blocks folded).
pub fn with_attachments(text: &str, attachments: &[Attachment]) -> String {
    let mut out = text.to_string();
    for a in attachments {
        let attr = |v: &str| v.replace('&', "&amp;").replace('"', "&quot;");
        let mut body: String = a.text.chars().take(MAX_ATTACHMENT_CHARS).collect();
        if body.len() < a.text.len() {
            body.push_str("\n[… cut: the resource is longer than 256 KB]");
        }
        out.push_str(&format!(
            "\n\n<attachment name=\"{}\" uri=\"{}\">\n{}\n</attachment>",
            attr(&a.name),
            attr(&a.uri),
            body.trim_end()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_follow_the_text_in_marked_blocks() {
        let a = Attachment {
            name: "notes \"v2\".md".into(),
            uri: "file:///n.md".into(),
            text: "line 1\nline 2\n".into(),
        };
        assert_eq!(with_attachments("hi", &[]), "hi");
        assert_eq!(
            with_attachments("summarise", &[a]),
            "summarise\n\n<attachment name=\"notes &quot;v2&quot;.md\" uri=\"file:///n.md\">\nline 1\nline 2\n</attachment>"
        );
        let big = Attachment {
            name: "big".into(),
            uri: "x://big".into(),
            text: "é".repeat(MAX_ATTACHMENT_CHARS + 10),
        };
        let out = with_attachments("", &[big]);
        assert!(out.contains("[… cut"));
        assert_eq!(out.matches('é').count(), MAX_ATTACHMENT_CHARS);
    }
}
