//! Export and import: a conversation as JSON (everything: every branch, tool calls, thinking,
//! settings; imported back losslessly) and as Markdown (the shown branch, for reading); an
//! export's file is the user's alone (`write_export`, 0600).
//!
//! In the JSON, messages are numbered 1, 2, … in the order they were written, and every
//! reference (a parent, the leaf, a tool call's message) uses those numbers, so an export does not
//! depend on the database's ids: exporting an imported conversation gives the same document.
//!
//! Also: duplicate. `exchange/files.rs` the images, `exchange/markdown.rs` the Markdown export of
//! the shown branch. An imported conversation tells the model only what the window shows
//! (`as_shown`: tool results rebuilt from the tool-call records, other tool messages left out, a
//! reply's calls are its records; system messages and the system prompt shown), and is marked
//! imported until the user continues it. An export of an import of our own export is the same
//! document (its images too).

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod files;
mod markdown;

pub use files::{ExportedAttachment, ExportedFile};
pub use markdown::markdown;

use super::{
    now_ms, Approval, ConversationSettings, MessageStatus, Notice, Store, StoreError,
    ToolCallStatus, ToolChoice,
};
use crate::llm::{Role, ToolCall};

/// Writes an export (JSON or Markdown) where the user chose: readable by the user alone
/// (0600, also when it replaces a file that others could read), whole or not at all (written
/// beside it, then renamed over it). A conversation holds what was said and what tools read.
pub fn write_export(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    crate::paths::write_private(path, text.as_bytes())
}

pub const FORMAT: &str = "switchboard.conversation";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedConversation {
    pub format: String,
    pub version: u32,
    pub title: String,
    pub model: String,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub tool_choice: ToolChoice,
    #[serde(default)]
    pub settings: ConversationSettings,
    /// The message shown last (the end of the shown branch).
    pub leaf: Option<i64>,
    pub messages: Vec<ExportedMessage>,
    #[serde(default)]
    pub tool_calls: Vec<ExportedToolCall>,
    /// The images the messages carry, each once, in the order of their SHA-256.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ExportedFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedMessage {
    pub id: i64,
    pub parent: Option<i64>,
    pub role: Role,
    pub content: String,
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    pub status: MessageStatus,
    /// On a notice: what it says (older documents have it in words, as the content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<Notice>,
    pub created_at: i64,
    /// The images it carries, in order (their bytes are in the document's `files`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<ExportedAttachment>,
}

impl ExportedConversation {
    /// A document in the current format whose shown branch ends at its last message: not pinned,
    /// default tools and settings, times 0. For documents built in code (tests, benchmarks); the
    /// other fields can be set after.
    pub fn new(
        title: impl Into<String>,
        model: impl Into<String>,
        messages: Vec<ExportedMessage>,
        tool_calls: Vec<ExportedToolCall>,
    ) -> Self {
        ExportedConversation {
            format: FORMAT.into(),
            version: VERSION,
            title: title.into(),
            model: model.into(),
            created_at: 0,
            updated_at: 0,
            pinned: false,
            tool_choice: ToolChoice::default(),
            settings: ConversationSettings::default(),
            leaf: messages.last().map(|m| m.id),
            messages,
            tool_calls,
            files: vec![],
        }
    }
}

impl ExportedMessage {
    /// A complete message of plain text: no thinking, calls or notice, `created_at` 0. For
    /// documents built in code (tests, benchmarks); the other fields can be set after.
    pub fn text(id: i64, parent: Option<i64>, role: Role, content: impl Into<String>) -> Self {
        ExportedMessage {
            id,
            parent,
            role,
            content: content.into(),
            thinking: None,
            tool_calls: vec![],
            tool_name: None,
            tool_call_id: None,
            status: MessageStatus::Complete,
            notice: None,
            created_at: 0,
            attachments: vec![],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedToolCall {
    pub message: i64,
    pub result_message: Option<i64>,
    pub call_id: Option<String>,
    pub name: String,
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub result: Option<String>,
    pub result_raw: Option<Value>,
    pub is_error: bool,
    pub status: ToolCallStatus,
    pub started_at: i64,
    pub duration_ms: Option<i64>,
    /// A code, or (in older documents) its words.
    #[serde(default, deserialize_with = "approval_code")]
    pub approval: Option<Approval>,
    #[serde(default)]
    pub arguments_edited: bool,
    /// The tool's name as the model wrote it, when it was resolved to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

/// Reads an approval as a code, or in the words older documents used.
fn approval_code<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Approval>, D::Error> {
    let label = Option::<String>::deserialize(d)?;
    match label {
        None => Ok(None),
        Some(l) => Approval::from_legacy(&l)
            .map(|(a, _)| Some(a))
            .ok_or_else(|| serde::de::Error::custom(format!("unknown approval \"{l}\""))),
    }
}

type Row = (
    i64,
    Option<i64>,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    MessageStatus,
    i64,
    Option<String>,
);

impl Store {
    /// The whole conversation (every branch) as a JSON document, its images included.
    pub async fn export_json(&self, id: i64) -> Result<ExportedConversation, StoreError> {
        let mut doc = self.export_doc(id).await?;
        doc.files = self.files_of(&mut doc).await?;
        Ok(doc)
    }

    /// [`Store::export_json`] without the images' bytes (their names only).
    async fn export_doc(&self, id: i64) -> Result<ExportedConversation, StoreError> {
        self.call(move |c| {
            #[allow(clippy::type_complexity)]
            let head: (String, String, i64, i64, bool, Option<String>, Option<String>, Option<i64>) = c
                .query_row(
                    "SELECT title, model, created_at, updated_at, pinned, tool_choice, settings, leaf_id
                     FROM conversations WHERE id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
                )
                .optional()?
                .ok_or(StoreError::NoConversation(id))?;
            let mut st = c.prepare(
                "SELECT id, parent_id, role, content, thinking, tool_calls, tool_name, tool_call_id, status, created_at, notice
                 FROM messages WHERE conversation_id = ?1 ORDER BY seq",
            )?;
            let rows: Vec<Row> = st
                .query_map([id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?))
                })?
                .collect::<Result<_, _>>()?;
            let local: HashMap<i64, i64> = rows.iter().enumerate().map(|(i, r)| (r.0, i as i64 + 1)).collect();
            let mut attachments = files::attachments_of(c, id)?;
            let messages = rows
                .iter()
                .map(|r| ExportedMessage {
                    id: local[&r.0],
                    parent: r.1.and_then(|p| local.get(&p).copied()),
                    role: Role::parse(&r.2).unwrap_or(Role::Assistant),
                    content: r.3.clone(),
                    thinking: r.4.clone(),
                    tool_calls: r.5.as_deref().and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default(),
                    tool_name: r.6.clone(),
                    tool_call_id: r.7.clone(),
                    status: r.8,
                    notice: r.10.as_deref().and_then(|n| serde_json::from_str(n).ok()),
                    created_at: r.9,
                    attachments: attachments.remove(&r.0).unwrap_or_default(),
                })
                .collect();
            let tool_calls = super::tool_calls::tool_calls_of(c, id, 0)?
                .into_iter()
                .map(|t| ExportedToolCall {
                    message: local.get(&t.message_id).copied().unwrap_or(0),
                    result_message: t.result_message_id.and_then(|m| local.get(&m).copied()),
                    call_id: t.call_id,
                    name: t.name,
                    server: t.server,
                    tool: t.tool,
                    arguments: t.arguments,
                    result: t.result,
                    result_raw: t.result_raw,
                    is_error: t.is_error,
                    status: t.status,
                    started_at: t.started_at,
                    duration_ms: t.duration_ms,
                    approval: t.approval,
                    arguments_edited: t.arguments_edited,
                    written: t.written,
                })
                .collect();
            Ok(ExportedConversation {
                format: FORMAT.into(),
                version: VERSION,
                title: head.0,
                model: head.1,
                created_at: head.2,
                updated_at: head.3,
                pinned: head.4,
                tool_choice: head.5.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default(),
                settings: head.6.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default(),
                leaf: head.7.and_then(|l| local.get(&l).copied()),
                messages,
                tool_calls,
                files: vec![],
            })
        })
        .await
    }

    /// Adds a conversation read from a file as a new one (its title replaced by `title`, if
    /// given); returns its id. The document is checked first; nothing is written when it is not
    /// sound. What the model will be told is made to match what the window shows
    /// ([`as_shown`]), and the conversation is marked imported until the user continues it.
    pub async fn import_json(
        &self,
        doc: &ExportedConversation,
        title: Option<String>,
    ) -> Result<i64, StoreError> {
        check(doc)?;
        let mut doc = as_shown(doc);
        self.keep_files(&mut doc).await?;
        self.insert_doc(doc, title, true).await
    }

    /// Clears the "imported" mark: the user has continued the conversation here.
    pub async fn mark_continued(&self, id: i64) -> Result<(), StoreError> {
        self.call(move |c| {
            c.execute(
                "UPDATE conversations SET imported = 0 WHERE id = ?1 AND imported <> 0",
                [id],
            )?;
            Ok(())
        })
        .await
    }

    async fn insert_doc(
        &self,
        doc: ExportedConversation,
        title: Option<String>,
        imported: bool,
    ) -> Result<i64, StoreError> {
        self.call(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO conversations (title, model, created_at, updated_at, pinned, tool_choice, settings, imported)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    title.unwrap_or_else(|| doc.title.clone()),
                    doc.model,
                    doc.created_at,
                    doc.updated_at,
                    doc.pinned,
                    serde_json::to_string(&doc.tool_choice).unwrap(),
                    serde_json::to_string(&doc.settings).unwrap(),
                    imported
                ],
            )?;
            let conv = tx.last_insert_rowid();
            let mut ids: HashMap<i64, i64> = HashMap::new();
            for (seq, m) in doc.messages.iter().enumerate() {
                let calls = (!m.tool_calls.is_empty()).then(|| serde_json::to_string(&m.tool_calls).unwrap());
                // a stream that was cut off stays marked as such, never "streaming"
                let st = if m.status == MessageStatus::Streaming { MessageStatus::Interrupted } else { m.status };
                // a notice in words (older documents) becomes a typed one
                let (content, notice) = match (&m.notice, m.status) {
                    (Some(n), _) => (m.content.clone(), Some(n.clone())),
                    (None, MessageStatus::Notice) => (String::new(), Some(Notice::from_legacy(&m.content))),
                    (None, _) => (m.content.clone(), None),
                };
                let notice = notice.map(|n| serde_json::to_string(&n).unwrap());
                tx.execute(
                    "INSERT INTO messages (conversation_id, seq, role, content, thinking, tool_calls, tool_name,
                        tool_call_id, status, created_at, parent_id, notice)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    params![
                        conv, seq as i64 + 1, m.role.as_str(), content, m.thinking, calls, m.tool_name,
                        m.tool_call_id, st, m.created_at, m.parent.map(|p| ids[&p]), notice
                    ],
                )?;
                let id = tx.last_insert_rowid();
                super::attachments::link(
                    &tx,
                    id,
                    // a name from a file is cleaned as an attached one is
                    m.attachments
                        .iter()
                        .map(|a| (a.sha256.clone(), crate::media::clean_name(&a.name))),
                )?;
                ids.insert(m.id, id);
            }
            for t in &doc.tool_calls {
                tx.execute(
                    "INSERT INTO tool_calls (conversation_id, message_id, result_message_id, call_id, name, server, tool,
                        arguments, result, result_raw, is_error, status, started_at, duration_ms, approval,
                        arguments_edited, written_name)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                    params![
                        conv, ids[&t.message], t.result_message.map(|m| ids[&m]), t.call_id, t.name, t.server, t.tool,
                        serde_json::to_string(&t.arguments).unwrap(), t.result,
                        t.result_raw.as_ref().map(|r| serde_json::to_string(r).unwrap()),
                        t.is_error,
                        if t.status == ToolCallStatus::Running { ToolCallStatus::Interrupted } else { t.status },
                        t.started_at, t.duration_ms, t.approval, t.arguments_edited, t.written
                    ],
                )?;
            }
            tx.execute(
                "UPDATE conversations SET leaf_id = ?1 WHERE id = ?2",
                params![doc.leaf.map(|l| ids[&l]), conv],
            )?;
            tx.commit()?;
            Ok(conv)
        })
        .await
    }

    /// A copy of a conversation, every branch included, titled "… (copy)", updated now (still
    /// marked imported if the original is).
    pub async fn duplicate_conversation(&self, id: i64) -> Result<i64, StoreError> {
        let imported = self.conversation(id).await?.summary.imported;
        // its images are kept already: the copy names them
        let mut doc = self.export_doc(id).await?;
        doc.updated_at = now_ms();
        doc.pinned = false;
        let title = format!("{} (copy)", doc.title);
        self.insert_doc(doc, Some(title), imported).await
    }
}

/// A document as the window will show it, so that the model is told nothing the user cannot see:
/// each tool result message is rebuilt from its tool-call record (the card), a result message no
/// record names is left out (its children hang from its parent), and a reply's calls are the
/// records of that reply. System messages stay; the window shows them as such.
fn as_shown(doc: &ExportedConversation) -> ExportedConversation {
    // only a reply's records are shown (as cards under it)
    let replies: std::collections::HashSet<i64> = doc
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant && m.status != MessageStatus::Notice)
        .map(|m| m.id)
        .collect();
    let by_result: HashMap<i64, &ExportedToolCall> = doc
        .tool_calls
        .iter()
        .filter(|t| replies.contains(&t.message))
        .filter_map(|t| t.result_message.map(|r| (r, t)))
        .collect();
    let mut out = doc.clone();
    // a left-out message's id → the message that takes its place as a parent
    let mut instead: HashMap<i64, Option<i64>> = HashMap::new();
    let resolve = |p: Option<i64>, instead: &HashMap<i64, Option<i64>>| match p {
        Some(p) => instead.get(&p).copied().unwrap_or(Some(p)),
        None => None,
    };
    out.messages = Vec::with_capacity(doc.messages.len());
    for m in &doc.messages {
        let mut m = m.clone();
        m.parent = resolve(m.parent, &instead);
        // a notice is shown as a notice whatever its role
        let role = if m.status == MessageStatus::Notice {
            Role::System
        } else {
            m.role
        };
        match role {
            Role::Tool => match by_result.get(&m.id) {
                Some(t) => {
                    m.content = t.result.clone().unwrap_or_default();
                    m.tool_name = Some(t.name.clone());
                    m.tool_call_id = t.call_id.clone();
                    m.tool_calls = vec![];
                }
                None => {
                    instead.insert(m.id, m.parent);
                    continue;
                }
            },
            Role::Assistant => {
                m.tool_calls = doc
                    .tool_calls
                    .iter()
                    .filter(|t| t.message == m.id)
                    .map(|t| ToolCall {
                        id: t.call_id.clone(),
                        name: t.name.clone(),
                        arguments: t.arguments.clone(),
                        written: t.written.clone(),
                    })
                    .collect();
                m.tool_name = None;
                m.tool_call_id = None;
            }
            Role::User | Role::System => {
                m.tool_calls = vec![];
                m.tool_name = None;
                m.tool_call_id = None;
            }
        }
        out.messages.push(m);
    }
    out.leaf = resolve(doc.leaf, &instead);
    let kept: std::collections::HashSet<i64> = out.messages.iter().map(|m| m.id).collect();
    // a record that hangs from no reply has no card: left out like its message
    out.tool_calls.retain(|t| replies.contains(&t.message));
    for t in &mut out.tool_calls {
        if t.result_message.is_some_and(|r| !kept.contains(&r)) {
            t.result_message = None;
        }
    }
    out
}

/// Refuses a document that is not a Switchboard conversation or whose references do not hold.
fn check(doc: &ExportedConversation) -> Result<(), StoreError> {
    files::check(doc)?;
    let bad = |why: String| Err(StoreError::Import(why));
    if doc.format != FORMAT {
        return bad(format!(
            "this is not a Switchboard conversation (format \"{}\")",
            doc.format
        ));
    }
    if doc.version != VERSION {
        return bad(format!(
            "conversation format version {} is not supported (this app reads {VERSION})",
            doc.version
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for m in &doc.messages {
        if let Some(p) = m.parent {
            if !seen.contains(&p) {
                return bad(format!(
                    "message {} names parent {p}, which does not come before it",
                    m.id
                ));
            }
        }
        if !seen.insert(m.id) {
            return bad(format!("message {} appears twice", m.id));
        }
    }
    if let Some(l) = doc.leaf {
        if !seen.contains(&l) {
            return bad(format!("the shown message {l} is not in the conversation"));
        }
    }
    for t in &doc.tool_calls {
        if !seen.contains(&t.message) || t.result_message.is_some_and(|r| !seen.contains(&r)) {
            return bad(format!(
                "tool call {} refers to a message that is not there",
                t.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

/// Properties of the import: any document (made up, or a sound one changed here and there) is
/// refused with an error and nothing written, or imported as something that exports to a
/// document which imports and exports to itself; the window's view and the Markdown export of
/// it are made without a panic.
#[cfg(test)]
mod props;
