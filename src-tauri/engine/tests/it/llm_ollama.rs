//! The Ollama client against the scripted fake server: the NDJSON wire format, byte-level
//! splitting, tool calls, errors.

use crate::support::fake_ollama::{self, FakeOllama, Stream};
use serde_json::json;
use switchboard_engine::llm::{
    ChatRequest, Delta, LlmClient, LlmError, LlmErrorKind, Message, OllamaClient, Role, ToolSpec,
};
use tokio_util::sync::CancellationToken;

fn request(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages: vec![Message::new(Role::User, "hi")],
        tools: vec![ToolSpec {
            name: "calculator__add".into(),
            description: "Add".into(),
            parameters: json!({"type": "object"}),
        }],
        options: Default::default(),
    }
}

async fn chat(
    client: &OllamaClient,
    req: &ChatRequest,
) -> (
    Result<switchboard_engine::llm::ChatReply, LlmError>,
    Vec<Delta>,
) {
    let mut deltas = Vec::new();
    // the raw copies of each line are checked on their own
    let mut on = |d: Delta| {
        if !matches!(d, Delta::Raw(_)) {
            deltas.push(d)
        }
    };
    let r = client.chat(req, &mut on, &CancellationToken::new()).await;
    (r, deltas)
}

#[tokio::test]
async fn every_response_line_is_also_passed_on_as_sent() {
    let fake = FakeOllama::start().await;
    fake.push(
        Stream::new()
            .text("a")
            .tool_call("t1", "calculator__add", json!({"a": 1}))
            .done()
            .reply(),
    );
    let client = OllamaClient::new(&fake.url);
    let mut raw = Vec::new();
    let mut on = |d: Delta| {
        if let Delta::Raw(v) = d {
            raw.push(v)
        }
    };
    client
        .chat(
            &request(fake_ollama::MODEL),
            &mut on,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(raw.len(), 3);
    assert_eq!(raw[0]["message"]["content"], "a");
    assert_eq!(raw[1]["message"]["tool_calls"][0]["id"], "t1");
    assert_eq!(raw[2]["done"], true);
    // and the body it sent is the one request_body describes
    let sent = fake.chat_requests();
    assert_eq!(client.request_body(&request(fake_ollama::MODEL)), sent[0]);
}

#[tokio::test]
async fn multi_chunk_text_is_streamed_and_accumulated() {
    let fake = FakeOllama::start().await;
    fake.push(
        Stream::new()
            .thinking("Let me ")
            .thinking("think.")
            .text("The")
            .text(" answer")
            .text(" is 42.")
            .done()
            .reply(),
    );
    let client = OllamaClient::new(&fake.url);
    let (r, deltas) = chat(&client, &request(fake_ollama::MODEL)).await;
    let r = r.unwrap();
    assert_eq!(r.content, "The answer is 42.");
    assert_eq!(r.thinking, "Let me think.");
    assert_eq!(r.done_reason.as_deref(), Some("stop"));
    assert!(r.tool_calls.is_empty());
    let texts: Vec<_> = deltas
        .iter()
        .filter_map(|d| {
            if let Delta::Text(t) = d {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(texts, vec!["The", " answer", " is 42."]);
    // what went over the wire
    let sent = &fake.chat_requests()[0];
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["tools"][0]["function"]["name"], "calculator__add");
    assert_eq!(sent["tools"][0]["type"], "function");
}

#[tokio::test]
async fn a_tool_call_chunk_keeps_its_id_and_object_arguments() {
    let fake = FakeOllama::start().await;
    fake.push(
        Stream::new()
            .tool_calls(&[
                ("call_abc12345", "calculator__add", json!({"a": 2, "b": 40})),
                ("call_x", "files__list_files", json!({})),
            ])
            .done()
            .reply(),
    );
    let client = OllamaClient::new(&fake.url);
    let (r, deltas) = chat(&client, &request(fake_ollama::MODEL)).await;
    let r = r.unwrap();
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].id.as_deref(), Some("call_abc12345"));
    assert_eq!(r.tool_calls[0].name, "calculator__add");
    assert_eq!(r.tool_calls[0].arguments, json!({"a": 2, "b": 40}));
    assert_eq!(r.tool_calls[1].name, "files__list_files");
    assert_eq!(
        deltas
            .iter()
            .filter(|d| matches!(d, Delta::ToolCall(_)))
            .count(),
        2
    );
}

#[tokio::test]
async fn a_utf8_character_split_across_two_writes_survives() {
    let fake = FakeOllama::start().await;
    let bytes = Stream::new()
        .text("caf\u{e9} \u{1F600} \u{4E2D}\u{6587}")
        .done()
        .bytes();
    // split inside é, inside the emoji, and inside 中
    let cut1 = bytes.iter().position(|&b| b == 0xC3).unwrap() + 1;
    let cut2 = bytes.iter().position(|&b| b == 0xF0).unwrap() + 3;
    let cut3 = bytes.iter().position(|&b| b == 0xE4).unwrap() + 2;
    fake.push(fake_ollama::raw_chunks(vec![
        bytes[..cut1].to_vec(),
        bytes[cut1..cut2].to_vec(),
        bytes[cut2..cut3].to_vec(),
        bytes[cut3..].to_vec(),
    ]));
    let client = OllamaClient::new(&fake.url);
    let (r, _) = chat(&client, &request(fake_ollama::MODEL)).await;
    assert_eq!(r.unwrap().content, "caf\u{e9} \u{1F600} \u{4E2D}\u{6587}");
}

#[tokio::test]
async fn a_mid_stream_error_line_is_an_error_after_the_partial_text() {
    let fake = FakeOllama::start().await;
    fake.push(
        Stream::new()
            .text("Partial ")
            .text("answer")
            .error("an error was encountered while running the model")
            .reply(),
    );
    let client = OllamaClient::new(&fake.url);
    let (r, deltas) = chat(&client, &request(fake_ollama::MODEL)).await;
    match r {
        Err(LlmError::Stream(m)) => {
            assert_eq!(m, "an error was encountered while running the model")
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
    assert_eq!(
        deltas.len(),
        2,
        "the partial text was delivered before the error"
    );
}

#[tokio::test]
async fn http_404_for_an_unknown_model_carries_the_servers_message() {
    let fake = FakeOllama::start().await;
    let client = OllamaClient::new(&fake.url);
    let (r, _) = chat(&client, &request("nope:latest")).await;
    match r {
        Err(e @ LlmError::Http { status: 404, .. }) => {
            assert_eq!(e.kind(), LlmErrorKind::NotFound);
            assert!(
                e.to_string()
                    .contains("model \"nope:latest\" not found, try pulling it first"),
                "{e}"
            );
        }
        other => panic!("expected 404, got {other:?}"),
    }
    assert!(client.capabilities("nope:latest").await.is_err());
}

#[tokio::test]
async fn an_unreachable_server_says_which_url_failed() {
    // a port nothing listens on
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let client = OllamaClient::new(&url);
    let (r, _) = chat(&client, &request("m")).await;
    match r {
        Err(e @ LlmError::Unreachable { .. }) => {
            assert_eq!(e.kind(), LlmErrorKind::Unreachable);
            assert!(e.to_string().contains(&url), "{e}");
        }
        other => panic!("expected unreachable, got {other:?}"),
    }
    assert!(matches!(
        client.list_models().await,
        Err(LlmError::Unreachable { .. })
    ));
}

#[tokio::test]
async fn tags_show_and_version() {
    let fake = FakeOllama::start().await;
    fake.set_models(&["llama3.2:latest", "qwen3:4b"]);
    let client = OllamaClient::new(&fake.url);
    let models = client.list_models().await.unwrap();
    assert_eq!(
        models.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        vec!["llama3.2:latest", "qwen3:4b"]
    );
    assert_eq!(models[0].parameter_size.as_deref(), Some("3.2B"));
    assert_eq!(
        client.capabilities("qwen3:4b").await.unwrap(),
        vec!["completion", "tools"]
    );
    assert_eq!(client.version().await.unwrap(), "0.33.0");
}

#[tokio::test]
async fn stopping_mid_stream_returns_the_partial_text_marked_stopped() {
    let fake = FakeOllama::start().await;
    let mut reply = Stream::new()
        .text("one ")
        .text("two ")
        .text("three ")
        .text("four")
        .done()
        .reply();
    reply.pause = std::time::Duration::from_millis(150);
    fake.push(reply);
    let client = OllamaClient::new(&fake.url);
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let mut seen = 0;
    let mut on = |d: Delta| {
        if matches!(d, Delta::Text(_)) {
            seen += 1;
            if seen == 2 {
                c2.cancel();
            }
        }
    };
    let r = client
        .chat(&request(fake_ollama::MODEL), &mut on, &cancel)
        .await
        .unwrap();
    assert!(r.stopped);
    assert_eq!(r.content, "one two ");
}

#[tokio::test]
async fn a_pull_reports_progress_to_success_and_can_be_cancelled_and_delete_works() {
    let fake = FakeOllama::start().await;
    let client = OllamaClient::new(&fake.url);
    let mut seen = Vec::new();
    let ok = client
        .pull(
            "qwen3:0.6b",
            &mut |p| seen.push(p),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(ok);
    assert_eq!(seen[0].status, "pulling manifest");
    let layer: Vec<_> = seen.iter().filter(|p| p.total.is_some()).collect();
    assert_eq!(layer.len(), 11);
    assert_eq!(layer[0].completed, None, "completed may be absent at first");
    assert_eq!(layer.last().unwrap().completed, Some(1_000_000));
    assert_eq!(seen.last().unwrap().status, "success");
    // an error from the server, with its message
    match client
        .pull("missing-model", &mut |_| {}, &CancellationToken::new())
        .await
    {
        Err(LlmError::Http {
            status: 500,
            message,
        }) => assert!(message.contains("does not exist")),
        other => panic!("{other:?}"),
    }
    // cancelled midway: stops at once, reports no success
    // (10 000 steps of 40 ms: far past READY, so the end is the cancel's doing)
    fake.set_pull(10_000, std::time::Duration::from_millis(40));
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let mut count = 0;
    let t = std::time::Instant::now();
    let done = client
        .pull(
            "big:latest",
            &mut |_| {
                count += 1;
                if count == 3 {
                    c.cancel();
                }
            },
            &cancel,
        )
        .await
        .unwrap();
    assert!(!done);
    assert!(t.elapsed() < crate::support::READY, "{:?}", t.elapsed());
    // delete: gone from the list; deleting again is the server's 404
    client.delete_model("qwen3:0.6b").await.unwrap();
    let names: Vec<String> = client
        .list_models()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert!(!names.contains(&"qwen3:0.6b".to_string()));
    assert!(matches!(
        client.delete_model("qwen3:0.6b").await,
        Err(LlmError::Http { status: 404, .. })
    ));
}
