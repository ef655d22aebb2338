//! The OpenAI-compatible client against the fake server speaking llama-server's SSE byte for byte,
//! and the chat loop through it with the real built-in calculator.

use std::sync::Arc;

use crate::support::fake_ollama::{self, last_message, raw_chunks, FakeOllama, Sse};
use serde_json::{json, Value};
use switchboard_engine::llm::{
    ChatRequest, Delta, LlmClient, LlmError, Message, OpenAiClient, Role, ToolSpec,
};
use switchboard_engine::store::Store;
use switchboard_engine::TurnRequest;
use tokio_util::sync::CancellationToken;

fn request() -> ChatRequest {
    ChatRequest {
        model: fake_ollama::MODEL.into(),
        messages: vec![Message::new(Role::User, "hi")],
        tools: vec![ToolSpec {
            name: "calculator__add".into(),
            description: "Add".into(),
            parameters: json!({"type": "object"}),
        }],
        options: Default::default(),
    }
}

#[tokio::test]
async fn streams_text_and_puts_fragmented_tool_calls_together() {
    let fake = FakeOllama::start().await;
    fake.set_openai_responder(|_req: &Value| {
        Sse::new()
            .reasoning("Adding.")
            .text("Let me add. ")
            .tool_call(0, "call_x", "calculator__add", "{\"a\":")
            .arguments(0, " 2, \"b\"")
            .arguments(0, ": 40}")
            .finish("tool_calls")
            .done()
            .reply()
    });
    let client = OpenAiClient::new(&format!("{}/v1", fake.url), Some("sk-local".into()));
    let mut deltas = Vec::new();
    let mut on = |d: Delta| deltas.push(d);
    let reply = client
        .chat(&request(), &mut on, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.content, "Let me add. ");
    assert_eq!(reply.thinking, "Adding.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id.as_deref(), Some("call_x"));
    assert_eq!(reply.tool_calls[0].arguments, json!({"a": 2, "b": 40}));
    assert_eq!(reply.done_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        deltas.iter().filter(|d| matches!(d, Delta::Raw(_))).count(),
        6,
        "every event is also passed on as sent"
    );
    // the request: OpenAI's shape, streaming, tools as functions, the API key as a bearer token
    let sent = fake.openai_requests()[0].clone();
    assert_eq!(sent, client.request_body(&request()));
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["tools"][0]["function"]["name"], "calculator__add");
    assert_eq!(
        fake.authorizations().last().unwrap().as_deref(),
        Some("Bearer sk-local")
    );
}

#[tokio::test]
async fn a_character_split_across_writes_and_http_errors() {
    let fake = FakeOllama::start().await;
    let bytes = Sse::new()
        .text("naïve café ☕")
        .finish("stop")
        .done()
        .bytes();
    // cut inside the multi-byte characters
    let cut = bytes.iter().position(|&b| b == 0xC3).unwrap() + 1;
    let cut2 = bytes.len() - 30;
    let pieces = vec![
        bytes[..cut].to_vec(),
        bytes[cut..cut2].to_vec(),
        bytes[cut2..].to_vec(),
    ];
    let p = pieces.clone();
    fake.set_openai_responder(move |_req: &Value| {
        let mut r = raw_chunks(p.clone());
        r.content_type = "text/event-stream";
        r
    });
    let client = OpenAiClient::new(&fake.url, None);
    let reply = client
        .chat(&request(), &mut |_| {}, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.content, "naïve café ☕");
    assert_eq!(
        fake.authorizations().last().unwrap(),
        &None,
        "no key, no header"
    );
    // an unknown model: the server's own message
    let mut unknown = request();
    unknown.model = "nope".into();
    match client
        .chat(&unknown, &mut |_| {}, &CancellationToken::new())
        .await
    {
        Err(LlmError::Http {
            status: 404,
            message,
        }) => assert_eq!(message, "model 'nope' not found"),
        other => panic!("{other:?}"),
    }
    // the model list; an unreachable server
    let models = client.list_models().await.unwrap();
    assert_eq!(models[0].name, fake_ollama::MODEL);
    let nothing = crate::support::DeadPort::new();
    let gone = OpenAiClient::new(&nothing.url(), None);
    assert!(matches!(
        gone.list_models().await,
        Err(LlmError::Unreachable { .. })
    ));
}

#[tokio::test]
async fn the_chat_loop_works_through_an_openai_compatible_server() {
    let fake = FakeOllama::start().await;
    fake.set_openai_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Sse::new()
                .text("The sum is ")
                .text(last["content"].as_str().unwrap())
                .finish("stop")
                .done()
                .reply()
        } else {
            Sse::new()
                .tool_call(0, "call_1", "calculator__add", "{\"a\": 2,")
                .arguments(0, " \"b\": 40}")
                .finish("tool_calls")
                .done()
                .reply()
        }
    });
    let host = crate::support::calculator_host().await;
    let store = Store::open_in_memory().await.unwrap();
    let engine = crate::support::chat_engine(
        Arc::new(OpenAiClient::new(&fake.url, None)),
        host.clone(),
        store.clone(),
    );
    let summary = engine
        .run_turn(
            TurnRequest {
                model: fake_ollama::MODEL.into(),
                text: "what is 2+40?".into(),
                ..Default::default()
            },
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(summary.llm_error.is_none(), "{summary:?}");
    let conv = store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(conv.tool_calls[0].result.as_deref(), Some("42"));
    assert_eq!(conv.messages.last().unwrap().content, "The sum is 42");
    // the second request carried the call and its result, paired by id, in OpenAI's shape
    let second = fake.openai_requests()[1].clone();
    let msgs = second["messages"].as_array().unwrap();
    let call = &msgs[msgs.len() - 2];
    assert_eq!(call["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"],
        "{\"a\":2,\"b\":40}"
    );
    assert_eq!(
        msgs[msgs.len() - 1],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "42"})
    );
    host.shutdown().await;
}

/// A server that does not take `stream_options` (asked for so that the context meter learns the
/// prompt's real size) is asked again without it, once, and never again with it.
#[tokio::test]
async fn a_server_that_refuses_stream_options_is_asked_without_them() {
    let fake = FakeOllama::start().await;
    fake.set_openai_responder(|req: &Value| {
        if req.get("stream_options").is_some() {
            return fake_ollama::openai_error(
                400,
                "Unrecognized request argument supplied: stream_options",
            );
        }
        Sse::new().text("hello").finish("stop").done().reply()
    });
    let client = OpenAiClient::new(&fake.url, None);
    for _ in 0..2 {
        let reply = client
            .chat(&request(), &mut |_: Delta| {}, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(reply.content, "hello");
    }
    let sent: Vec<bool> = fake
        .openai_requests()
        .iter()
        .map(|r| r.get("stream_options").is_some())
        .collect();
    assert_eq!(sent, [true, false, false]);
    // another error is not retried
    fake.set_openai_responder(|_: &Value| fake_ollama::openai_error(400, "bad model"));
    let before = fake.openai_requests().len();
    assert!(client
        .chat(&request(), &mut |_: Delta| {}, &CancellationToken::new())
        .await
        .is_err());
    assert_eq!(fake.openai_requests().len(), before + 1);
}
