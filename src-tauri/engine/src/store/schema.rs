//! The database's shape: versioned migrations (rusqlite_migration). A database of any earlier
//! version is brought up to date when it is opened; nothing is ever migrated down.
//!
//! v6 turned worded notices and approval labels into codes; v7 marks imported conversations; v8
//! pins tool definitions; v9 indexes tool calls by conversation; v10 keeps the tasks of calls, v11
//! their form, v12 the identity of their server, v13 the last model check of each model, v14 the id
//! of their kept session, why they ended and whether a later run followed them; v15 images on
//! messages; v16 pinned messages and the summaries of older turns.

use rusqlite::{params, Transaction};
use rusqlite_migration::{HookResult, Migrations, M};

use super::search;
use super::types::{Approval, Notice};

/// Every migration, oldest first. Their order is the database's version history: a migration
/// once released is never changed or moved, and a new one goes at the end (of the last group).
pub(super) fn migrations() -> Migrations<'static> {
    let mut all = conversation_migrations();
    all.extend(record_migrations());
    all.extend(tool_migrations());
    all.extend(attachment_migrations());
    all.extend(context_migrations());
    Migrations::new(all)
}

/// The first era: conversations, their messages (a tree: edits and regenerations) and tool
/// calls, how each call came to run, the tools turned off in one, and full-text search.
fn conversation_migrations() -> Vec<M<'static>> {
    vec![
        M::up(
            r#"
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            title TEXT NOT NULL,
            model TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX conversations_updated ON conversations(updated_at DESC);
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('system','user','assistant','tool')),
            content TEXT NOT NULL DEFAULT '',
            thinking TEXT,
            tool_calls TEXT,
            tool_name TEXT,
            tool_call_id TEXT,
            status TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (conversation_id, seq)
        );
        CREATE TABLE tool_calls (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            result_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
            call_id TEXT,
            name TEXT NOT NULL,
            server TEXT NOT NULL,
            tool TEXT NOT NULL,
            arguments TEXT NOT NULL,
            result TEXT,
            result_raw TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            duration_ms INTEGER
        );
        CREATE INDEX tool_calls_message ON tool_calls(message_id);
        "#,
        ),
        // how the call came to run or not: "read-only", "approved", "denied", …
        M::up("ALTER TABLE tool_calls ADD COLUMN approval TEXT;"),
        // the servers and tools turned off for one conversation (JSON; NULL = everything on)
        M::up("ALTER TABLE conversations ADD COLUMN tool_choice TEXT;"),
        // messages form a tree (edits and regenerations are siblings); the conversation shows the
        // path to its leaf. Pins, deletion that can be undone, per-conversation settings, and
        // full-text search over messages and tool calls.
        M::up(search::MIGRATION_TREE_AND_SEARCH),
    ]
}

/// What the debug view and the window keep: each LLM call as sent and received, typed
/// notices and approvals, and conversations read from a file.
fn record_migrations() -> Vec<M<'static>> {
    vec![
        // the debug view: the exact request and response of recent LLM calls
        M::up(
            "CREATE TABLE llm_calls (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
                model TEXT NOT NULL,
                request TEXT NOT NULL,
                response TEXT NOT NULL,
                error TEXT,
                started_at INTEGER NOT NULL,
                duration_ms INTEGER NOT NULL
            );
            CREATE INDEX llm_calls_conversation ON llm_calls(conversation_id, id);",
        ),
        // typed states: a notice is a JSON object (the window words it), an approval a code with
        // a flag for edited arguments; what older versions stored as sentences is converted. And
        // the tool name as the model wrote it, when it was resolved to another
        M::up_with_hook(
            "ALTER TABLE messages ADD COLUMN notice TEXT;
             ALTER TABLE tool_calls ADD COLUMN arguments_edited INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE tool_calls ADD COLUMN written_name TEXT;",
            typed_states,
        ),
        // a conversation read from a file, until the user continues it
        M::up("ALTER TABLE conversations ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;"),
    ]
}

/// Tools and their servers: the definitions the user accepted, calls run as tasks (followed
/// across restarts, in their session), and the last check of each model's tool use.
fn tool_migrations() -> Vec<M<'static>> {
    vec![
        // each server's tool definitions as the user accepted them (mcp::pins)
        M::up(
            "CREATE TABLE tool_pins (
                server TEXT NOT NULL,
                tool TEXT NOT NULL,
                hash TEXT NOT NULL,
                definition TEXT NOT NULL,
                accepted_at INTEGER NOT NULL,
                PRIMARY KEY (server, tool)
            );",
        ),
        // a conversation's tool calls without reading every other conversation's (opening one)
        M::up("CREATE INDEX tool_calls_conversation ON tool_calls(conversation_id, message_id);"),
        // a call its server runs as a task (mcp/host/tasks.rs): the server's handle for it and
        // where it is, so it is followed again after a restart; `delivered` = 0 while a result
        // that came after its turn ended waits for the user to send it to the model
        M::up(
            "CREATE TABLE tool_tasks (
                tool_call_id INTEGER PRIMARY KEY REFERENCES tool_calls(id) ON DELETE CASCADE,
                server TEXT NOT NULL,
                task_id TEXT NOT NULL,
                status TEXT NOT NULL,
                message TEXT,
                poll_ms INTEGER,
                ttl_ms INTEGER,
                updated_at INTEGER NOT NULL,
                delivered INTEGER NOT NULL DEFAULT 1
            );",
        ),
        // a task in the 2025-11-25 form (mcp/host/legacy_tasks.rs), followed its own way
        M::up("ALTER TABLE tool_tasks ADD COLUMN legacy INTEGER NOT NULL DEFAULT 0;"),
        // the identity of the server that runs it (`ServerConfig::identity`): a task is followed
        // again only on the same program or URL
        M::up("ALTER TABLE tool_tasks ADD COLUMN server_identity TEXT;"),
        // the last model check of each model (chat/check): the report as JSON, by the
        // provider's URL and the model's name
        M::up(
            "CREATE TABLE model_checks (
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                report TEXT NOT NULL,
                checked_at INTEGER NOT NULL,
                PRIMARY KEY (provider, model)
            );",
        ),
        // the HTTP session a task runs in: the id of the secret that keeps it (mcp/host/rejoin.rs;
        // the session id itself is only in the secrets store); why a task ended when that was
        // not its tool's doing (a `TaskEnd` code); whether a run after the one that started it
        // followed it again
        M::up(
            "ALTER TABLE tool_tasks ADD COLUMN session TEXT;
             ALTER TABLE tool_tasks ADD COLUMN reason TEXT;
             ALTER TABLE tool_tasks ADD COLUMN resumed INTEGER NOT NULL DEFAULT 0;",
        ),
    ]
}

/// The files attached to messages.
fn attachment_migrations() -> Vec<M<'static>> {
    vec![
        // images on messages (store/attachments.rs): one row per file kept, the messages that
        // carry them; a message's search text is its text and its images' names
        M::up(search::MIGRATION_ATTACHMENTS),
    ]
}

/// A long conversation in a small context (`chat::context`).
fn context_migrations() -> Vec<M<'static>> {
    vec![
        // messages the user pinned (always sent whole), and the summaries that stand for older
        // turns in requests: each tied to the last message it covers, so it holds for every
        // branch through that message (and none that left before it), gone with that message
        M::up(
            "ALTER TABLE messages ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
             CREATE TABLE summaries (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                through_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
                covers INTEGER NOT NULL,
                text TEXT NOT NULL,
                model TEXT NOT NULL,
                edited INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
             );
             CREATE INDEX summaries_conversation ON summaries(conversation_id, through_id);",
        ),
    ]
}

/// Converts the notices and approval labels older versions stored as words.
fn typed_states(tx: &Transaction) -> HookResult {
    let notices: Vec<(i64, String)> = tx
        .prepare("SELECT id, content FROM messages WHERE status = 'notice'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (id, text) in notices {
        let notice = serde_json::to_string(&Notice::from_legacy(&text)).unwrap_or_default();
        tx.execute(
            "UPDATE messages SET notice = ?1, content = '' WHERE id = ?2",
            params![notice, id],
        )?;
    }
    let labels: Vec<(i64, String)> = tx
        .prepare("SELECT id, approval FROM tool_calls WHERE approval IS NOT NULL")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (id, label) in labels {
        let (code, edited) =
            Approval::from_legacy(&label).map_or((None, false), |(a, e)| (Some(a), e));
        tx.execute(
            "UPDATE tool_calls SET approval = ?1, arguments_edited = ?2 WHERE id = ?3",
            params![code, edited, id],
        )?;
    }
    Ok(())
}

/// The shown branch of conversation `:conversation`: the ids from its leaf up, at most `:limit`
/// of them (all: -1).
pub(super) const SHOWN_PATH: &str = "WITH RECURSIVE path(id) AS (
    SELECT leaf_id FROM conversations WHERE id = :conversation AND leaf_id IS NOT NULL
    UNION ALL
    SELECT m.parent_id FROM messages m JOIN path ON m.id = path.id WHERE m.parent_id IS NOT NULL
    LIMIT :limit)";
