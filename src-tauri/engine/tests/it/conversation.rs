//! A conversation across turns: edits and regenerations as branches, its own settings and what
//! they change in the request, text-mode tools, the debug record, its choice of tools.

use crate::support::fake_ollama::{self, last_message, Stream};
use crate::support::*;
use serde_json::{json, Value};
use switchboard_engine::{ChatEvent, TurnRequest};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn edits_and_regenerations_make_branches_and_the_model_sees_only_the_shown_one() {
    let r = rig(vec![]).await;
    // the fake answers with what it was sent, so the test sees the history the model got
    r.fake.set_responder(|req: &Value| {
        let said: Vec<String> = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] != "system")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect();
        Stream::new().text(&said.join(" / ")).done().reply()
    });
    let engine = r.engine(5);
    let turn = |req: TurnRequest| engine.run_turn(req, &|_| {}, CancellationToken::new());
    let first = turn(TurnRequest {
        model: fake_ollama::MODEL.into(),
        text: "two plus two".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let id = first.conversation_id;
    let ask = |text: &str| say(text, Some(id));
    turn(ask("three plus three")).await.unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    let (u1, u2) = (conv.messages[0].id, conv.messages[2].id);
    // edit the second question: the model sees the edit, not the original
    turn(TurnRequest {
        edit_of: Some(u2),
        ..ask("five plus five")
    })
    .await
    .unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(
        conv.messages.last().unwrap().content,
        "two plus two / two plus two / five plus five"
    );
    assert_eq!(
        (
            conv.messages[2].sibling_index,
            conv.messages[2].sibling_count
        ),
        (1, 2)
    );
    // regenerate the first reply: the model sees the question alone
    turn(TurnRequest {
        regenerate: Some(u1),
        ..ask("")
    })
    .await
    .unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(conv.messages.len(), 2);
    assert_eq!(conv.messages[1].content, "two plus two");
    assert_eq!(
        (
            conv.messages[1].sibling_index,
            conv.messages[1].sibling_count
        ),
        (1, 2)
    );
    // the old branch is still there
    r.store.show_branch(id, u2).await.unwrap();
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(conv.messages[2].content, "three plus three");
    // only user messages are edited; regenerating needs the user message
    let reply = conv.messages[1].id;
    assert!(turn(TurnRequest {
        edit_of: Some(reply),
        ..ask("x")
    })
    .await
    .is_err());
    assert!(turn(TurnRequest {
        regenerate: Some(reply),
        ..ask("")
    })
    .await
    .is_err());
}

#[tokio::test]
async fn conversation_settings_and_thinking_shape_what_the_model_is_sent() {
    let r = rig(vec![]).await;
    r.fake.set_models(&[fake_ollama::MODEL, "thinker:latest"]);
    r.fake
        .set_capabilities("thinker:latest", &["completion", "tools", "thinking"]);
    r.fake.set_responder(|req: &Value| {
        if req["model"] == "thinker:latest" {
            Stream::new()
                .thinking("Let me see…")
                .text("Done.")
                .done()
                .reply()
        } else {
            Stream::new().text("ok").done().reply()
        }
    });
    let mut engine = r.engine(5);
    engine.options.system_prompt = "App prompt.".into();
    engine.options.temperature = Some(0.7);
    let first = run(&engine, None, fake_ollama::MODEL).await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(sent["messages"][0]["content"], "App prompt.");
    assert_eq!(sent["options"], json!({"temperature": 0.7}));
    assert!(sent.get("think").is_none(), "not a thinking model: {sent}");
    // the conversation's own settings win
    let id = first.conversation_id;
    r.store
        .set_settings(
            id,
            &switchboard_engine::store::ConversationSettings {
                system_prompt: Some("Conversation prompt.".into()),
                temperature: Some(0.1),
                num_ctx: Some(4096),
                provider: None,
                context_policy: None,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    run(&engine, Some(id), fake_ollama::MODEL).await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(sent["messages"][0]["content"], "Conversation prompt.");
    assert_eq!(
        sent["options"],
        json!({"temperature": 0.1, "num_ctx": 4096})
    );
    // a model that can think is asked to, and its thinking is kept
    let t = run(&engine, None, "thinker:latest").await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(sent["think"], true);
    let conv = r.store.conversation(t.conversation_id).await.unwrap();
    assert_eq!(conv.messages[1].thinking.as_deref(), Some("Let me see…"));
    // unless thinking is off in the settings
    engine.options.thinking = false;
    run(&engine, None, "thinker:latest").await;
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert!(sent.get("think").is_none());
}

#[tokio::test]
async fn a_model_without_native_tools_gets_them_in_text_and_its_json_calls_run() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake.set_models(&[fake_ollama::MODEL, "plain:latest"]);
    r.fake.set_capabilities("plain:latest", &["completion"]);
    r.fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let text = last["content"].as_str().unwrap();
        if text.starts_with("Result of calculator__add:") {
            Stream::new().text("It is 42.").done().reply()
        } else {
            // the call arrives as JSON in a fence, split across chunks
            Stream::new()
                .text("Let me add.\n```json\n{\"tool\": \"calculator__add\", ")
                .text("\"arguments\": {\"a\": 2, \"b\": 40}}\n```")
                .done()
                .reply()
        }
    });
    let engine = r.engine(5);
    let (summary, events) = collecting(
        &engine,
        TurnRequest {
            model: "plain:latest".into(),
            text: "what is 2+40?".into(),
            ..Default::default()
        },
    )
    .await;
    let sent = r.fake.chat_requests();
    // no native tools (Ollama would refuse them with 400); they are in the system prompt
    assert!(sent[0].get("tools").is_none(), "{}", sent[0]);
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("- calculator__add: "), "{system}");
    assert!(system.contains("{\"tool\": \"<tool name>\""), "{system}");
    // the second request: the call as JSON text, the result as a user message
    let msgs = sent[1]["messages"].as_array().unwrap();
    let n = msgs.len();
    assert_eq!(msgs[n - 2]["role"], "assistant");
    assert!(msgs[n - 2].get("tool_calls").is_none());
    assert!(msgs[n - 2]["content"]
        .as_str()
        .unwrap()
        .ends_with(r#"{"tool":"calculator__add","arguments":{"a":2,"b":40}}"#));
    assert_eq!(
        msgs[n - 1],
        json!({"role": "user", "content": "Result of calculator__add:\n42"})
    );
    // stored as a real call; the JSON is not in the text
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls[0].result.as_deref(), Some("42"));
    assert_eq!(conv.messages[1].content, "Let me add.");
    assert_eq!(conv.messages.last().unwrap().content, "It is 42.");
    let done = events.iter().find_map(|e| match e {
        ChatEvent::AssistantDone { content, .. } => Some(content.clone()),
        _ => None,
    });
    assert_eq!(done.as_deref(), Some("Let me add."));

    // JSON that is data, not a call, is just text; and the per-model setting can force text mode
    r.fake.set_responder(|_req: &Value| {
        Stream::new()
            .text("{\"tool\": \"a hammer\", \"weight\": 2}")
            .done()
            .reply()
    });
    let mut engine = r.engine(5);
    engine.options.tool_modes.insert(
        fake_ollama::MODEL.into(),
        switchboard_engine::settings::ToolMode::Text,
    );
    let s = run(&engine, None, fake_ollama::MODEL).await;
    assert!(r
        .fake
        .chat_requests()
        .last()
        .unwrap()
        .get("tools")
        .is_none());
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    assert!(conv.tool_calls.is_empty());
    assert!(conv.messages[1].content.starts_with("{\"tool\""));
    r.host.shutdown().await;
}

#[tokio::test]
async fn every_llm_call_is_recorded_exactly_for_the_debug_view() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake.set_responder(call_then_answer(vec![(
        "a",
        "calculator__add",
        json!({"a": 2, "b": 40}),
    )]));
    let (summary, _) = r.turn("what is 2+40?").await;
    let calls = r.store.llm_calls(summary.conversation_id).await.unwrap();
    let sent = r.fake.chat_requests();
    assert_eq!(calls.len(), 2);
    // the request exactly as sent, the response object by object
    assert_eq!(calls[0].request, sent[0]);
    assert_eq!(calls[1].request, sent[1]);
    assert_eq!(calls[0].model, fake_ollama::MODEL);
    assert_eq!(
        calls[0].response[0]["message"]["tool_calls"][0]["function"]["name"],
        "calculator__add"
    );
    assert_eq!(calls[1].response.last().unwrap()["done"], true);
    assert!(calls
        .iter()
        .all(|c| c.error.is_none() && c.message_id.is_some()));
    // only the most recent calls of a conversation are kept
    let id = summary.conversation_id;
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    let engine = r.engine(5);
    for _ in 0..switchboard_engine::store::debug::KEEP_PER_CONVERSATION {
        run(&engine, Some(id), fake_ollama::MODEL).await;
    }
    let kept = r.store.llm_calls(id).await.unwrap();
    assert_eq!(
        kept.len() as i64,
        switchboard_engine::store::debug::KEEP_PER_CONVERSATION
    );
    assert!(kept[0].id > calls[1].id, "the oldest went first");
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_conversation_uses_only_the_servers_and_tools_chosen_for_it() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("files", builtin("files")),
    ])
    .await;
    // the model tries a tool that was turned off for this conversation
    r.fake.set_responder(call_then_answer(vec![(
        "m",
        "calculator__multiply",
        json!({"a": 6, "b": 7}),
    )]));
    let engine = r.engine(5);
    let choice = switchboard_engine::store::ToolChoice {
        disabled_servers: ["files".to_string()].into(),
        disabled_tools: ["calculator/multiply".to_string()].into(),
    };
    let summary = engine
        .run_turn(
            TurnRequest {
                conversation_id: None,
                model: fake_ollama::MODEL.into(),
                text: "six times seven".into(),
                tool_choice: Some(choice.clone()),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let offered = |req: &Value| -> Vec<String> {
        req["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = offered(&r.fake.chat_requests()[0]);
    assert!(first.contains(&"calculator__add".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("files__")), "{first:?}");
    assert!(
        !first.contains(&"calculator__multiply".to_string()),
        "{first:?}"
    );
    // the call to the turned-off tool did not run; the model was told why
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert!(conv.tool_calls[0].is_error);
    assert!(conv.tool_calls[0]
        .result
        .as_deref()
        .unwrap()
        .contains("turned off for this conversation"));
    assert_eq!(conv.tool_choice, choice, "stored with the conversation");

    // the next turn (no choice given) keeps the stored one
    r.fake
        .set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    engine
        .run_turn(
            say("again", Some(summary.conversation_id)),
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let later = offered(r.fake.chat_requests().last().unwrap());
    assert_eq!(later, first);
    // a new conversation offers everything
    engine
        .run_turn(say("fresh", None), &|_| {}, CancellationToken::new())
        .await
        .unwrap();
    let fresh = offered(r.fake.chat_requests().last().unwrap());
    assert!(fresh.contains(&"calculator__multiply".to_string()));
    assert!(fresh.iter().any(|n| n.starts_with("files__")));
    r.host.shutdown().await;
}
