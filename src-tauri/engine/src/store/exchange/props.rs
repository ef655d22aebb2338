use super::*;
use crate::testing::{json, word};
use proptest::prelude::*;
use serde_json::json;

const WORDS: &[&str] = &[
    "user",
    "assistant",
    "tool",
    "system",
    "complete",
    "streaming",
    "stopped",
    "interrupted",
    "error",
    "notice",
    "running",
    "done",
    "approved",
    "denied",
    "readOnly",
    "Approved",
    "roundLimit",
    "repeatedCall",
    "text",
    "kind",
    "rounds",
    "a",
    "b",
];

/// Text as a stored message may hold it: anything, control characters and NUL included.
fn text() -> BoxedStrategy<String> {
    prop_oneof![3 => "\\PC{0,30}", 1 => any::<String>(), 1 => Just("<b>\0</b>".into())].boxed()
}

fn one_of(words: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(words).prop_map(String::from).boxed()
}

/// A message as JSON: `id`/`parent` from `ids` (sound when they come from earlier messages).
fn message() -> impl Strategy<Value = (u8, u8, Value)> {
    (
            any::<u8>(),
            any::<u8>(),
            one_of(&["user", "assistant", "tool", "system"]),
            text(),
            prop::option::of(text()),
            prop::collection::vec((prop::option::of(word(WORDS)), word(WORDS), json(WORDS)), 0..2),
            prop::option::of(word(WORDS)),
            prop_oneof![
                40 => one_of(&["complete", "streaming", "stopped", "interrupted", "error", "notice"]),
                1 => word(WORDS),
            ],
            prop::option::of(prop_oneof![
                (0usize..50).prop_map(|r| json!({"kind": "roundLimit", "rounds": r})),
                text().prop_map(|t| json!({"kind": "repeatedCall", "tool": t})),
                text().prop_map(|t| json!({"kind": "text", "text": t})),
            ]),
            any::<i64>(),
        )
            .prop_map(|(id, parent, role, content, thinking, calls, tool_name, status, notice, at)| {
                let calls: Vec<Value> = calls
                    .into_iter()
                    .map(|(id, name, arguments)| json!({"id": id, "name": name, "arguments": arguments}))
                    .collect();
                let mut m = json!({"role": role, "content": content, "thinking": thinking,
                    "toolCalls": calls, "toolName": tool_name, "status": status, "createdAt": at});
                if let Some(n) = notice {
                    m["notice"] = n;
                }
                (id, parent, m)
            })
}

fn tool_call() -> impl Strategy<Value = (u8, Option<u8>, Value)> {
    (
            any::<u8>(),
            prop::option::of(any::<u8>()),
            (prop::option::of(word(WORDS)), word(WORDS), word(WORDS), word(WORDS)),
            (json(WORDS), prop::option::of(text()), prop::option::of(json(WORDS))),
            (any::<bool>(), one_of(&["running", "done", "interrupted"]), any::<i64>(), prop::option::of(any::<i64>())),
            prop::option::of(prop_oneof![
                20 => one_of(&["approved", "denied", "readOnly", "alwaysAllowed", "repeated", "unknownTool"]),
                1 => word(WORDS),
            ]),
            (any::<bool>(), prop::option::of(word(WORDS))),
        )
            .prop_map(|(m, r, (call_id, name, server, tool), (arguments, result, raw), (is_error, status, at, took), approval, (edited, written))| {
                (m, r, json!({"callId": call_id, "name": name, "server": server, "tool": tool,
                    "arguments": arguments, "result": result, "resultRaw": raw, "isError": is_error,
                    "status": status, "startedAt": at, "durationMs": took, "approval": approval,
                    "argumentsEdited": edited, "written": written}))
            })
}

/// A document: mostly sound (ids in order, parents and references to earlier messages),
/// sometimes not (a byte of `id`/`parent` picks which).
fn document() -> impl Strategy<Value = Value> {
    (
            (
                prop_oneof![9 => Just(FORMAT.to_string()), 1 => word(WORDS)],
                prop_oneof![9 => Just(VERSION), 1 => any::<u32>()],
                text(),
                word(WORDS),
                any::<i64>(),
                any::<i64>(),
                any::<bool>(),
            ),
            (
                prop::collection::btree_set(word(WORDS), 0..3),
                prop::collection::btree_set(word(WORDS), 0..3),
                prop::option::of(text()),
                prop::option::of((0u32..=20).prop_map(|t| f64::from(t) / 10.0)),
                prop::option::of(any::<u32>()),
            ),
            prop::collection::vec(message(), 0..8),
            prop::collection::vec(tool_call(), 0..4),
            prop::option::of(any::<u8>()),
        )
            .prop_map(|((format, version, title, model, created, updated, pinned), (servers, tools, prompt, temperature, num_ctx), messages, calls, leaf)| {
                // an id: usually this message's place; a parent or a reference: usually an
                // earlier message; now and then anything
                let pick = |n: usize, b: u8| -> Value {
                    match b % 50 {
                        0 => json!(b % 12),
                        1..=5 => Value::Null,
                        _ if n == 0 => Value::Null,
                        _ => json!(1 + (b as usize) % n),
                    }
                };
                let n = messages.len();
                let messages: Vec<Value> = messages
                    .into_iter()
                    .enumerate()
                    .map(|(i, (id, parent, mut m))| {
                        m["id"] = if id % 50 == 0 { json!(id % 9) } else { json!(i + 1) };
                        m["parent"] = pick(i, parent);
                        m
                    })
                    .collect();
                let calls: Vec<Value> = calls
                    .into_iter()
                    .map(|(m, r, mut c)| {
                        c["message"] = match pick(n, m) { Value::Null => json!(1), v => v };
                        c["resultMessage"] = r.map(|r| pick(n, r)).unwrap_or(Value::Null);
                        c
                    })
                    .collect();
                json!({"format": format, "version": version, "title": title, "model": model,
                    "createdAt": created, "updatedAt": updated, "pinned": pinned,
                    "toolChoice": {"disabledServers": servers, "disabledTools": tools},
                    "settings": {"systemPrompt": prompt, "temperature": temperature, "numCtx": num_ctx},
                    "leaf": leaf.map(|l| pick(n, l)).unwrap_or(Value::Null),
                    "messages": messages, "toolCalls": calls})
            })
}

/// Replaces the value at a path of keys and indexes (each taken modulo what is there).
fn mutate(doc: &mut Value, path: &[usize], with: Value) {
    let mut at = doc;
    for (depth, step) in path.iter().enumerate() {
        let next = match at {
            Value::Object(o) if !o.is_empty() => {
                let k = o.keys().nth(step % o.len()).unwrap().clone();
                o.get_mut(&k).unwrap()
            }
            Value::Array(a) if !a.is_empty() => {
                let n = a.len();
                &mut a[step % n]
            }
            _ => break,
        };
        if depth + 1 == path.len() {
            *next = with;
            return;
        }
        at = next;
    }
}

fn check_import(doc: ExportedConversation) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = Store::open_in_memory().await.unwrap();
        let id = match s.import_json(&doc, None).await {
            Err(e) => {
                prop_assert!(matches!(e, StoreError::Import(_)), "{e}");
                prop_assert_eq!(s.list_conversations().await.unwrap().len(), 0);
                return Ok(());
            }
            Ok(id) => id,
        };
        // what is stored is the document as the window shows it
        let doc = as_shown(&doc);
        let first = s.export_json(id).await.unwrap();
        prop_assert_eq!(first.messages.len(), doc.messages.len());
        prop_assert_eq!(first.tool_calls.len(), doc.tool_calls.len());
        prop_assert_eq!(
            (
                &first.title,
                &first.model,
                first.created_at,
                first.updated_at,
                first.pinned
            ),
            (
                &doc.title,
                &doc.model,
                doc.created_at,
                doc.updated_at,
                doc.pinned
            )
        );
        prop_assert_eq!(&first.tool_choice, &doc.tool_choice);
        prop_assert_eq!(&first.settings, &doc.settings);
        for (a, b) in first.messages.iter().zip(&doc.messages) {
            prop_assert_eq!(
                (a.role, &a.thinking, &a.tool_calls),
                (b.role, &b.thinking, &b.tool_calls)
            );
            // a notice in words (an older document) becomes a typed one
            if !(b.status == MessageStatus::Notice && b.notice.is_none()) {
                prop_assert_eq!(&a.content, &b.content);
            }
        }
        let again = s.import_json(&first, None).await.unwrap();
        prop_assert_eq!(s.export_json(again).await.unwrap(), first);
        let conv = s.conversation(id).await.unwrap();
        let _ = markdown(&conv);
        let _ = crate::chat::view::conversation_view(&conv);
        Ok(())
    })
}

proptest! {
    #[test]
    fn a_document_is_refused_or_round_trips(doc in document()) {
        // (not even the shape: the command refuses it before the store sees it)
        if let Ok(doc) = serde_json::from_value::<ExportedConversation>(doc) {
            check_import(doc)?;
        }
    }

    #[test]
    fn a_changed_document_is_refused_or_round_trips(
        doc in document(),
        path in prop::collection::vec(any::<usize>(), 1..6),
        with in json(WORDS),
    ) {
        let mut doc = doc;
        mutate(&mut doc, &path, with);
        if let Ok(doc) = serde_json::from_value::<ExportedConversation>(doc) {
            check_import(doc)?;
        }
    }
}
