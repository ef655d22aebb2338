//! The store's own tests (against an in-memory or temporary database).

use super::*;
use crate::llm::{Message, Role, ToolCall};
use serde_json::json;

#[tokio::test]
async fn messages_and_tool_calls_round_trip_and_streaming_becomes_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite3");
    let s = Store::open(&path).await.unwrap();
    let c = s.create_conversation("t", "m").await.unwrap();
    let u = s
        .append_message(c, &Message::new(Role::User, "hi"), MessageStatus::Complete)
        .await
        .unwrap();
    let mut a = Message::new(Role::Assistant, "");
    let aid = s
        .append_message(c, &a, MessageStatus::Streaming)
        .await
        .unwrap();
    a.content = "part".into();
    a.tool_calls = vec![ToolCall {
        id: Some("c1".into()),
        name: "x__y".into(),
        arguments: json!({"a": 1}),
        written: None,
    }];
    s.update_message(aid, &a, MessageStatus::Streaming)
        .await
        .unwrap();
    let tc = s
        .start_tool_call(
            c,
            aid,
            &ToolCall {
                id: Some("c1".into()),
                name: "x__y".into(),
                arguments: json!({"a": 1}),
                written: None,
            },
            "x",
            "y",
        )
        .await
        .unwrap();
    drop(s);
    // reopen: as after a crash
    let s = Store::open(&path).await.unwrap();
    let conv = s.conversation(c).await.unwrap();
    assert_eq!(conv.messages.len(), 2);
    assert_eq!(conv.messages[0].id, u);
    assert_eq!(conv.messages[1].content, "part");
    assert_eq!(conv.messages[1].status, MessageStatus::Interrupted);
    assert_eq!(conv.messages[1].tool_calls[0].arguments, json!({"a": 1}));
    assert_eq!(conv.tool_calls[0].id, tc);
    assert_eq!(conv.tool_calls[0].status, ToolCallStatus::Interrupted);
    assert!(conv.tool_calls[0].is_error);
    assert_eq!(s.list_conversations().await.unwrap()[0].message_count, 2);
    assert!(matches!(
        s.conversation(999).await,
        Err(StoreError::NoConversation(999))
    ));
}

async fn path(s: &Store, c: i64) -> Vec<(i64, i64, i64)> {
    s.conversation(c)
        .await
        .unwrap()
        .messages
        .iter()
        .map(|m| (m.id, m.sibling_index, m.sibling_count))
        .collect()
}

#[tokio::test]
async fn edits_and_regenerations_are_branches_and_the_leaf_picks_the_shown_one() {
    let s = Store::open_in_memory().await.unwrap();
    let c = s.create_conversation("t", "m").await.unwrap();
    let msg = |r, t: &str| Message::new(r, t);
    let u1 = s
        .append_message(c, &msg(Role::User, "hello"), MessageStatus::Complete)
        .await
        .unwrap();
    let a1 = s
        .append_message(c, &msg(Role::Assistant, "hi"), MessageStatus::Complete)
        .await
        .unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 1), (a1, 0, 1)]);
    // edit the first message: a sibling at the root
    s.branch_after(c, None).await.unwrap();
    let u2 = s
        .append_message(c, &msg(Role::User, "hello again"), MessageStatus::Complete)
        .await
        .unwrap();
    let a2 = s
        .append_message(c, &msg(Role::Assistant, "hey"), MessageStatus::Complete)
        .await
        .unwrap();
    assert_eq!(path(&s, c).await, vec![(u2, 1, 2), (a2, 0, 1)]);
    assert_eq!(s.message(a2).await.unwrap().parent_id, Some(u2));
    assert_eq!(s.sibling(u2, -1).await.unwrap(), u1);
    assert_eq!(s.sibling(u2, -5).await.unwrap(), u1, "clamped");
    assert_eq!(s.sibling(u1, 1).await.unwrap(), u2);
    assert_eq!(s.sibling(a2, 1).await.unwrap(), a2, "an only child");
    // back to the first branch, to its newest end
    s.show_branch(c, u1).await.unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a1, 0, 1)]);
    // regenerate the reply to u1: a sibling of a1
    s.branch_after(c, Some(u1)).await.unwrap();
    let a3 = s
        .append_message(c, &msg(Role::Assistant, "hi, v2"), MessageStatus::Complete)
        .await
        .unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a3, 1, 2)]);
    s.show_branch(c, a1).await.unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a1, 0, 2)]);
    // revealing a message already shown changes nothing (a search hit on the shown branch)...
    s.reveal(c, u1).await.unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a1, 0, 2)]);
    // ...one on another branch shows that branch
    s.reveal(c, a3).await.unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a3, 1, 2)]);
    s.show_branch(c, a1).await.unwrap();
    // showing u1's branch again follows its newest child
    s.show_branch(c, u1).await.unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 2), (a3, 1, 2)]);
    // deleting the leaf shows its parent
    s.delete_message(a3).await.unwrap();
    assert_eq!(path(&s, c).await, vec![(u1, 0, 2)]);
    assert_eq!(s.list_conversations().await.unwrap()[0].message_count, 4);
    // a message of another conversation is refused
    let other = s.create_conversation("o", "m").await.unwrap();
    assert!(matches!(
        s.branch_after(other, Some(u1)).await,
        Err(StoreError::NoMessage(_))
    ));
    assert!(matches!(
        s.show_branch(other, u1).await,
        Err(StoreError::NoMessage(_))
    ));
}

#[tokio::test]
async fn search_finds_text_and_tool_calls_follows_edits_and_skips_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite3");
    let s = Store::open(&path).await.unwrap();
    let c = s.create_conversation("Otters", "m").await.unwrap();
    let other = s.create_conversation("Other", "m").await.unwrap();
    s.append_message(
        c,
        &Message::new(Role::User, "Tell me how the otter swims"),
        MessageStatus::Complete,
    )
    .await
    .unwrap();
    let a = s
        .append_message(
            c,
            &Message::new(Role::Assistant, ""),
            MessageStatus::Streaming,
        )
        .await
        .unwrap();
    let tc = s
        .start_tool_call(
            c,
            a,
            &ToolCall {
                id: None,
                name: "web__lookup".into(),
                arguments: json!({"city": "Lisbon"}),
                written: None,
            },
            "web",
            "lookup",
        )
        .await
        .unwrap();
    s.finish_tool_call(
        tc,
        c,
        &Message::new(Role::Tool, "The lighthouse keeper says hello"),
        "The lighthouse keeper says hello",
        None,
        false,
        5,
    )
    .await
    .unwrap();
    s.update_message(
        a,
        &Message::new(Role::Assistant, "Paddling with its tail."),
        MessageStatus::Complete,
    )
    .await
    .unwrap();
    let hits = s.search("otter", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        (hits[0].conversation_id, hits[0].kind.as_str()),
        (c, "message")
    );
    assert!(
        hits[0]
            .snippet
            .contains(&format!("{}otter{}", search::MARK_START, search::MARK_END)),
        "{:?}",
        hits[0]
    );
    // words inside a tool result and inside the arguments, by prefix; the hit names the message
    let hits = s.search("lighthouse", 10).await.unwrap();
    assert_eq!(
        (hits.len(), hits[0].kind.as_str(), hits[0].message_id),
        (1, "tool", a)
    );
    assert_eq!(s.search("lisb", 10).await.unwrap().len(), 1);
    // the streamed text was indexed as it changed: the final text, not the empty start
    assert_eq!(
        s.search("paddling tail", 10).await.unwrap()[0].message_id,
        a
    );
    s.update_message(
        a,
        &Message::new(Role::Assistant, "Rewritten."),
        MessageStatus::Complete,
    )
    .await
    .unwrap();
    assert!(s.search("paddling", 10).await.unwrap().is_empty());
    assert!(
        s.search("\"(*", 10).await.unwrap().is_empty(),
        "odd input is no error"
    );
    // pinned first, deleted hidden, restore brings it back
    s.set_pinned(other, true).await.unwrap();
    let ids: Vec<i64> = s
        .list_conversations()
        .await
        .unwrap()
        .iter()
        .map(|x| x.id)
        .collect();
    assert_eq!(ids, vec![other, c]);
    s.delete_conversation(c).await.unwrap();
    assert!(s.search("otter", 10).await.unwrap().is_empty());
    assert_eq!(s.list_conversations().await.unwrap().len(), 1);
    s.restore_conversation(c).await.unwrap();
    assert_eq!(s.search("otter", 10).await.unwrap().len(), 1);
    let listed = s.list_conversations().await.unwrap();
    assert_eq!(listed[1].snippet, "Rewritten.");
    // a leaf without text of its own (a tool result, an empty reply): the nearest text above
    s.append_message(
        c,
        &Message::new(Role::Tool, "tool output"),
        MessageStatus::Complete,
    )
    .await
    .unwrap();
    s.append_message(
        c,
        &Message::new(Role::Assistant, ""),
        MessageStatus::Complete,
    )
    .await
    .unwrap();
    let listed = s.list_conversations().await.unwrap();
    assert_eq!(listed[1].snippet, "Rewritten.");
    s.rename_conversation(c, "  Sea otters ").await.unwrap();
    assert_eq!(s.conversation(c).await.unwrap().summary.title, "Sea otters");
    // deleted and not restored: gone when the store opens next, index rows too
    s.delete_conversation(c).await.unwrap();
    drop(s);
    let s = Store::open(&path).await.unwrap();
    assert!(matches!(
        s.conversation(c).await,
        Err(StoreError::NoConversation(_))
    ));
    let left: i64 = s
        .call(|c| Ok(c.query_row("SELECT COUNT(*) FROM search", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test]
async fn a_database_from_before_branches_becomes_one_branch_and_is_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite3");
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        schema::migrations().to_version(&mut conn, 3).unwrap();
        conn.execute_batch(
            "INSERT INTO conversations (id, title, model, created_at, updated_at) VALUES (7, 'old', 'm', 1, 1);
             INSERT INTO messages (id, conversation_id, seq, role, content, status, created_at)
               VALUES (10, 7, 1, 'user', 'quokka question', 'complete', 1),
                      (11, 7, 2, 'assistant', '', 'complete', 1),
                      (12, 7, 3, 'tool', 'tool said wombat', 'complete', 1),
                      (13, 7, 4, 'assistant', 'answer', 'complete', 1);
             INSERT INTO tool_calls (conversation_id, message_id, name, server, tool, arguments, result, status, started_at)
               VALUES (7, 11, 'z__w', 'z', 'w', '{}', 'tool said wombat', 'done', 1);",
        )
        .unwrap();
    }
    let s = Store::open(&path).await.unwrap();
    let conv = s.conversation(7).await.unwrap();
    let ids: Vec<i64> = conv.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids, vec![10, 11, 12, 13]);
    assert_eq!(conv.messages[3].parent_id, Some(12));
    assert_eq!(conv.tool_calls.len(), 1);
    assert_eq!(s.search("quokka", 5).await.unwrap()[0].message_id, 10);
    assert_eq!(s.search("wombat", 5).await.unwrap()[0].kind, "tool");
    // appending continues the branch
    let next = s
        .append_message(
            7,
            &Message::new(Role::User, "more"),
            MessageStatus::Complete,
        )
        .await
        .unwrap();
    assert_eq!(s.message(next).await.unwrap().parent_id, Some(13));
}

/// A long conversation (a chain of 3,000 messages) is deleted and purged in one go: no cascade
/// runs along the chain (SQLite allows 1,000 trigger levels).
#[tokio::test]
async fn a_very_long_conversation_can_be_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite3");
    let s = Store::open(&path).await.unwrap();
    let c = s.create_conversation("long", "m").await.unwrap();
    let mut ids = vec![];
    for i in 0..3000 {
        ids.push(
            s.append_message(
                c,
                &Message::new(Role::User, format!("m{i}")),
                MessageStatus::Complete,
            )
            .await
            .unwrap(),
        );
    }
    // a subtree: the last 10 go with their ancestor
    s.delete_message(ids[2990]).await.unwrap();
    assert_eq!(s.conversation(c).await.unwrap().messages.len(), 2990);
    s.delete_conversation(c).await.unwrap();
    drop(s);
    let s = Store::open(&path).await.unwrap();
    assert!(s.list_conversations().await.unwrap().is_empty());
    let left: i64 = s
        .call(|c| Ok(c.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test]
async fn conversations_are_listed_newest_first() {
    let s = Store::open_in_memory().await.unwrap();
    let a = s.create_conversation("a", "m").await.unwrap();
    let b = s.create_conversation("b", "m").await.unwrap();
    std::thread::sleep(std::time::Duration::from_millis(3));
    s.append_message(a, &Message::new(Role::User, "x"), MessageStatus::Complete)
        .await
        .unwrap();
    let ids: Vec<i64> = s
        .list_conversations()
        .await
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, vec![a, b]);
}
