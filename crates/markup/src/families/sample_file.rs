//! The samples every family is tested with, read from `samples/<family>.txt` (shared by the
//! recovery's and the gate's unit tests and the loop tests in `tests/it`, which include this
//! file). A file holds samples like this:
//!
//! ```text
//! === a title (a title starting with "negative" is a reply that holds no call)
//! source: where the reply comes from (documentation, a chat template, a parser's tests)
//! family: the family expected to read it (default: the file's; "any": whichever)
//! streamed: known (streamed clean only when the model's family is known: a form that is prose
//! until its end in another model's reply)
//! --- reply
//! the model's reply, as many lines as it takes (no line break after the last)
//! --- calls
//! tool_name {"the": "arguments"}
//! --- text
//! the clean text expected (default for a negative: the reply unchanged)
//! --- thinking
//! the thinking expected (default: none)
//! ```
//!
//! `samples/tools.json` lists the tools every sample's calls name, with their input schemas.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Sample {
    /// The family whose file it is in.
    pub file: String,
    pub title: String,
    pub source: String,
    /// The family expected to read its calls (`None`: any).
    pub family: Option<String>,
    pub negative: bool,
    /// Streamed clean only when the model's family is known.
    pub stream_known_only: bool,
    pub reply: String,
    /// (name, arguments), in order.
    pub calls: Vec<(String, Value)>,
    /// The clean text expected.
    pub text: String,
    pub thinking: String,
}

/// Where the samples are.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/families/samples")
}

/// The tools the samples call: (name, description, input schema).
pub fn tools() -> Vec<(String, String, Value)> {
    let text = std::fs::read_to_string(dir().join("tools.json")).expect("samples/tools.json");
    let v: Value = serde_json::from_str(&text).expect("tools.json is JSON");
    v.as_array()
        .expect("a list of tools")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().expect("a name").to_string(),
                t["description"].as_str().unwrap_or("").to_string(),
                t["inputSchema"].clone(),
            )
        })
        .collect()
}

/// Every sample of every file, by file name order.
pub fn all() -> Vec<Sample> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("samples/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| {
            let family = p.file_stem().expect("a name").to_string_lossy().to_string();
            let text = std::fs::read_to_string(p).expect("a samples file");
            parse(&family, &text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect()
}

/// The samples in one file's text.
pub fn parse(file: &str, text: &str) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    let text = format!("\n{text}");
    for block in text.split("\n=== ").skip(1) {
        let (title, body) = block.split_once('\n').ok_or("a sample without a body")?;
        let mut s = Sample {
            file: file.to_string(),
            title: title.trim().to_string(),
            source: String::new(),
            family: Some(file.to_string()),
            negative: title.trim_start().starts_with("negative"),
            stream_known_only: false,
            reply: String::new(),
            calls: Vec::new(),
            text: String::new(),
            thinking: String::new(),
        };
        let mut text_given = false;
        let mut sections = body.split("\n--- ");
        for line in sections.next().unwrap_or("").lines() {
            if let Some(v) = line.strip_prefix("source:") {
                s.source = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("streamed:") {
                s.stream_known_only = v.trim() == "known";
            } else if let Some(v) = line.strip_prefix("family:") {
                let v = v.trim();
                s.family = (v != "any").then(|| v.to_string());
            } else if !line.trim().is_empty() && !line.starts_with('#') {
                return Err(format!("{}: unknown line {line:?}", s.title));
            }
        }
        for section in sections {
            let (name, content) = section.split_once('\n').unwrap_or((section, ""));
            let content = content.strip_suffix('\n').unwrap_or(content);
            match name.trim() {
                "reply" => s.reply = content.to_string(),
                "calls" => {
                    for line in content.lines().filter(|l| !l.trim().is_empty()) {
                        let (n, args) = line.split_once(' ').unwrap_or((line, "{}"));
                        let args: Value = serde_json::from_str(args)
                            .map_err(|e| format!("{}: arguments of {n}: {e}", s.title))?;
                        s.calls.push((n.to_string(), args));
                    }
                }
                "text" => {
                    s.text = content.to_string();
                    text_given = true;
                }
                "thinking" => s.thinking = content.to_string(),
                other => return Err(format!("{}: unknown section {other:?}", s.title)),
            }
        }
        if s.source.is_empty() {
            return Err(format!("{}: no source", s.title));
        }
        if s.negative && !s.calls.is_empty() {
            return Err(format!("{}: a negative with calls", s.title));
        }
        if !s.negative && s.calls.is_empty() && !text_given {
            return Err(format!("{}: no calls and no text expected", s.title));
        }
        if !text_given && s.negative {
            s.text = s.reply.clone();
        }
        out.push(s);
    }
    Ok(out)
}
