//! Full-text search (SQLite FTS5) over user and assistant text and over tool calls (name,
//! arguments and result). Triggers keep the index in step with the tables, so every write path is
//! covered. Index rows: a message is `2 × id`, a tool call `2 × id + 1`.
//!
//! FTS5 over user and assistant text and the names of their images, and tool calls, kept up to date
//! by triggers.

use rusqlite::params;
use serde::Serialize;

use super::{Store, StoreError};

pub(super) const MIGRATION_TREE_AND_SEARCH: &str = r#"
-- no foreign key on parent_id: a cascade along a chain of 1,000+ messages would exceed SQLite's
-- trigger depth; the store deletes subtrees itself (and whole conversations by conversation_id)
ALTER TABLE messages ADD COLUMN parent_id INTEGER;
ALTER TABLE conversations ADD COLUMN leaf_id INTEGER;
ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN deleted_at INTEGER;
ALTER TABLE conversations ADD COLUMN settings TEXT;
UPDATE messages SET parent_id = (
    SELECT p.id FROM messages p
    WHERE p.conversation_id = messages.conversation_id AND p.seq < messages.seq
    ORDER BY p.seq DESC LIMIT 1);
UPDATE conversations SET leaf_id = (
    SELECT m.id FROM messages m WHERE m.conversation_id = conversations.id ORDER BY m.seq DESC LIMIT 1);
CREATE INDEX messages_parent ON messages(conversation_id, parent_id);
CREATE INDEX conversations_pinned ON conversations(pinned DESC, updated_at DESC);

CREATE VIRTUAL TABLE search USING fts5(
    body, conversation_id UNINDEXED, message_id UNINDEXED, kind UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER search_message_insert AFTER INSERT ON messages WHEN new.role IN ('user', 'assistant')
BEGIN
    INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    VALUES (new.id * 2, new.content, new.conversation_id, new.id, 'message');
END;
CREATE TRIGGER search_message_update AFTER UPDATE OF content ON messages WHEN new.role IN ('user', 'assistant')
BEGIN
    DELETE FROM search WHERE rowid = old.id * 2;
    INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    VALUES (new.id * 2, new.content, new.conversation_id, new.id, 'message');
END;
CREATE TRIGGER search_message_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM search WHERE rowid = old.id * 2;
END;
CREATE TRIGGER search_tool_insert AFTER INSERT ON tool_calls
BEGIN
    INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    VALUES (new.id * 2 + 1, new.name || ' ' || new.arguments || ' ' || COALESCE(new.result, ''),
            new.conversation_id, new.message_id, 'tool');
END;
CREATE TRIGGER search_tool_update AFTER UPDATE OF name, arguments, result ON tool_calls
BEGIN
    DELETE FROM search WHERE rowid = old.id * 2 + 1;
    INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    VALUES (new.id * 2 + 1, new.name || ' ' || new.arguments || ' ' || COALESCE(new.result, ''),
            new.conversation_id, new.message_id, 'tool');
END;
CREATE TRIGGER search_tool_delete AFTER DELETE ON tool_calls
BEGIN
    DELETE FROM search WHERE rowid = old.id * 2 + 1;
END;

INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    SELECT id * 2, content, conversation_id, id, 'message' FROM messages WHERE role IN ('user', 'assistant');
INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    SELECT id * 2 + 1, name || ' ' || arguments || ' ' || COALESCE(result, ''), conversation_id, message_id, 'tool'
    FROM tool_calls;
"#;

/// Images on messages (store/attachments.rs), and their names in the search: a message's
/// body is its text, then the names of the images it carries (indexed again when one is added).
pub(super) const MIGRATION_ATTACHMENTS: &str = r#"
CREATE TABLE attachments (
    sha256 TEXT PRIMARY KEY,
    mime TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    thumbnail BLOB NOT NULL,
    thumbnail_mime TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE message_attachments (
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    sha256 TEXT NOT NULL REFERENCES attachments(sha256),
    name TEXT NOT NULL,
    PRIMARY KEY (message_id, position)
);
CREATE INDEX message_attachments_file ON message_attachments(sha256);

DROP TRIGGER search_message_update;
CREATE TRIGGER search_message_update AFTER UPDATE OF content ON messages WHEN new.role IN ('user', 'assistant')
BEGIN
    DELETE FROM search WHERE rowid = old.id * 2;
    INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    VALUES (new.id * 2, new.content || COALESCE((SELECT ' ' || group_concat(a.name, ' ')
                FROM message_attachments a WHERE a.message_id = new.id), ''),
            new.conversation_id, new.id, 'message');
END;
CREATE TRIGGER search_attachment_insert AFTER INSERT ON message_attachments
BEGIN
    DELETE FROM search WHERE rowid = new.message_id * 2;
    INSERT INTO search(rowid, body, conversation_id, message_id, kind)
    SELECT m.id * 2, m.content || COALESCE((SELECT ' ' || group_concat(a.name, ' ')
                FROM message_attachments a WHERE a.message_id = m.id), ''),
           m.conversation_id, m.id, 'message'
    FROM messages m WHERE m.id = new.message_id AND m.role IN ('user', 'assistant');
END;
"#;

/// Marks around the matched words in a snippet: private-use characters, never in real text, so
/// the window can split on them and build highlighted text nodes (no HTML involved).
pub const MARK_START: char = '\u{E000}';
pub const MARK_END: char = '\u{E001}';

/// One hit: where it is, and a snippet with the matched words between [`MARK_START`] and
/// [`MARK_END`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub conversation_id: i64,
    pub title: String,
    pub message_id: i64,
    /// `message` (user or assistant text) or `tool` (a tool call's name, arguments or result).
    pub kind: String,
    pub snippet: String,
    pub updated_at: i64,
}

/// What the user typed, as an FTS5 query: every word must occur (as a prefix), quotes and
/// operators are taken literally. `None` when nothing searchable is left.
pub fn fts_query(input: &str) -> Option<String> {
    let terms: Vec<String> = input
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"*", w.replace('"', "\"\"")))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" AND "))
}

impl Store {
    /// Full-text search, newest matches first (at most `limit`), skipping deleted conversations.
    /// Newest first (index order) rather than by rank: ranking a word that occurs in half a million
    /// messages costs a quarter of a second; walking the index backwards stops after `limit`.
    pub async fn search(&self, input: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = fts_query(input) else {
            return Ok(vec![]);
        };
        self.call(move |c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT s.conversation_id, c.title, s.message_id, s.kind,
                        snippet(search, 0, '{MARK_START}', '{MARK_END}', '…', 12), c.updated_at
                 FROM search s JOIN conversations c ON c.id = s.conversation_id
                 WHERE search MATCH ?1 AND c.deleted_at IS NULL
                 ORDER BY s.rowid DESC LIMIT ?2"
            ))?;
            let hits = st
                .query_map(params![query, limit as i64], |r| {
                    Ok(SearchHit {
                        conversation_id: r.get(0)?,
                        title: r.get(1)?,
                        message_id: r.get(2)?,
                        kind: r.get(3)?,
                        snippet: r.get(4)?,
                        updated_at: r.get(5)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(hits)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_input_becomes_a_safe_fts_query() {
        assert_eq!(fts_query("  "), None);
        assert_eq!(fts_query("otter"), Some("\"otter\"*".into()));
        assert_eq!(
            fts_query("sea OR \"otters\" NEAR(x)"),
            Some("\"sea\"* AND \"OR\"* AND \"otters\"* AND \"NEAR\"* AND \"x\"*".into())
        );
        assert_eq!(
            fts_query("über-café"),
            Some("\"über\"* AND \"café\"*".into())
        );
    }
}
