//! Fitting a small model's context and time: independent calls of one round run together, long
//! results are cut for the model (the card keeps them whole), and with many tools on the model is
//! offered the most relevant ones.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use switchboard_engine::ChatEvent;

use crate::support::fake_ollama::{last_message, Stream};
use crate::support::*;

pub(crate) fn slow(extra: &[&str]) -> switchboard_engine::mcp::ServerConfig {
    let mut cfg = python("slow_server.py");
    cfg.args.extend(extra.iter().map(|s| s.to_string()));
    cfg
}

#[tokio::test]
async fn independent_calls_of_one_round_run_together_and_their_results_come_back_in_order() {
    let r = rig(vec![("slow", slow(&[]))]).await;
    r.fake.set_responder(call_then_answer(vec![
        ("1", "slow__wait", json!({"seconds": 1})),
        ("2", "slow__wait", json!({"seconds": 1.2})),
        ("3", "slow__wait", json!({"seconds": 0.8})),
    ]));
    let (summary, _) = r.turn("wait three times").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let spans: Vec<(f64, f64)> = conv
        .tool_calls
        .iter()
        .map(|t| {
            let v: Value = serde_json::from_str(t.result.as_deref().unwrap()).unwrap();
            (v["start"].as_f64().unwrap(), v["end"].as_f64().unwrap())
        })
        .collect();
    // each started before any ended: they ran at the same time (read from the server's own
    // clock, not timed here)
    let last_start = spans.iter().map(|s| s.0).fold(f64::MIN, f64::max);
    let first_end = spans.iter().map(|s| s.1).fold(f64::MAX, f64::min);
    assert!(last_start < first_end, "ran one after another: {spans:?}");
    // the results reach the model in the order of the calls, whatever order they ended in
    let sent = tool_messages(&r.fake.chat_requests()[1]);
    let ids: Vec<&str> = sent
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(sent.len(), 3);
    let results: Vec<&str> = conv
        .tool_calls
        .iter()
        .map(|t| t.result.as_deref().unwrap())
        .collect();
    for (i, m) in sent.iter().enumerate() {
        assert_eq!(m["content"], results[i], "{ids:?}");
    }
    r.host.shutdown().await;
}

#[tokio::test]
async fn a_long_result_is_cut_for_the_model_but_whole_on_the_card_and_the_size_is_told() {
    let r = rig(vec![("slow", slow(&[]))]).await;
    r.fake.set_responder(call_then_answer(vec![(
        "1",
        "slow__big",
        json!({"kilobytes": 64}),
    )]));
    let mut engine = r.engine(5);
    engine.options.num_ctx = Some(2048);
    let (summary, events) = collecting(&engine, say("make it long", None)).await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let whole = conv.tool_calls[0].result.clone().unwrap();
    assert!(whole.len() > 60_000, "the card keeps all of it");
    let sent = tool_messages(&r.fake.chat_requests()[1]);
    let for_model = sent[0]["content"].as_str().unwrap();
    assert!(
        for_model.len() < 4_000,
        "{} bytes went to a 2k model",
        for_model.len()
    );
    assert!(for_model.starts_with("line 1: "), "{for_model}");
    assert!(for_model.contains("cut"), "the model is told: {for_model}");
    // the next turn's history has the cut result too (what the model saw)
    assert_eq!(conv.messages[2].content, for_model);
    // the size of each request was said, against the window
    let sizes: Vec<(usize, Option<usize>)> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Context { used, limit, .. } => Some((*used, *limit)),
            _ => None,
        })
        .collect();
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    assert!(sizes
        .iter()
        .all(|(used, limit)| *used > 0 && *limit == Some(2048)));
    assert!(
        sizes[1].0 > sizes[0].0,
        "the result made the second request bigger"
    );
    r.host.shutdown().await;
}

#[tokio::test]
async fn with_many_tools_the_model_is_offered_the_relevant_ones_and_any_it_names_still_runs() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("slow", slow(&["--many", "40"])),
    ])
    .await;
    // the model first calls a tool it was not offered (it exists: it runs), then adds
    r.fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let results = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        match (last["role"].as_str(), results) {
            (Some("user"), _) => Stream::new()
                .tool_call("1", "slow__pet_frog_8", json!({}))
                .done()
                .reply(),
            (_, 1) => Stream::new()
                .tool_call("2", "calculator__add", json!({"a": 2, "b": 40}))
                .done()
                .reply(),
            _ => Stream::new().text("42, and a frog").done().reply(),
        }
    });
    let mut engine = r.engine(5);
    engine.options.max_offered_tools = 10;
    let (summary, events) = collecting(&engine, say("what is 2+40?", None)).await;
    let first = &r.fake.chat_requests()[0];
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered.len(), 10, "{offered:?}");
    assert!(offered.contains(&"calculator__add"), "{offered:?}");
    assert!(!offered.contains(&"slow__pet_frog_8"));
    // the tool it used stays on offer afterwards
    let second = &r.fake.chat_requests()[1];
    assert!(second["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["function"]["name"] == "slow__pet_frog_8"));
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert_eq!(
        conv.tool_calls[0].result.as_deref(),
        Some("pet_frog_8 says hello")
    );
    assert_eq!(conv.tool_calls[1].result.as_deref(), Some("42"));
    let counts: Vec<(usize, usize)> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Context {
                tools_offered,
                tools_on,
                ..
            } => Some((*tools_offered, *tools_on)),
            _ => None,
        })
        .collect();
    assert_eq!(counts[0], (10, 48));
    r.host.shutdown().await;
}

/// The window the header's meter is measured against comes from the server when the chat does
/// not set one: Ollama's `/api/show` (the model's trained context, at most what Ollama loads by
/// default), llama-server's `/props` (the `n_ctx` it was started with); the chat's `num_ctx`
/// wins over Ollama's (Ollama is sent it), not over the `n_ctx` llama-server runs with; a server
/// that says nothing gets the stated default, said to be assumed.
#[tokio::test]
async fn the_context_is_read_from_the_server_ollama_show_and_llama_server_props() {
    use switchboard_engine::llm::{LlmClient, OllamaClient, OpenAiClient};
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    r.fake
        .set_responder(|_: &Value| Stream::new().text("hi").done().reply());
    r.fake.set_openai_responder(|_: &Value| {
        crate::support::fake_ollama::Sse::new()
            .text("hi")
            .finish("stop")
            .done()
            .reply()
    });
    let limit_of = |llm: Arc<dyn LlmClient>, num_ctx: Option<u32>| {
        let mut engine = chat_engine(llm, r.host.clone(), r.store.clone());
        engine.options.num_ctx = num_ctx;
        async move {
            let (_, events) = collecting(&engine, say("hello", None)).await;
            let limits: Vec<(Option<usize>, bool)> = events
                .iter()
                .filter_map(|e| match e {
                    ChatEvent::Context {
                        used,
                        limit,
                        limit_assumed,
                        ..
                    } => {
                        assert!(*used > 0);
                        Some((*limit, *limit_assumed))
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(limits.len(), 1, "{limits:?}");
            limits[0]
        }
    };
    let known = |n: usize| (Some(n), false);
    let ollama = || Arc::new(OllamaClient::new(&r.fake.url)) as Arc<dyn LlmClient>;
    let llama_server = || Arc::new(OpenAiClient::new(&r.fake.url, None)) as Arc<dyn LlmClient>;
    // nothing said (no /props on this server, no context in /api/show): the stated default,
    // said to be assumed
    assert_eq!(
        limit_of(llama_server(), None).await,
        (
            Some(switchboard_engine::chat::context::DEFAULT_CONTEXT),
            true
        )
    );
    // the app's context for a model not known to the server: planned for, not assumed
    assert_eq!(limit_of(llama_server(), Some(2048)).await, known(2048));
    r.fake.set_context(2048);
    assert_eq!(limit_of(ollama(), None).await, known(2048));
    assert_eq!(limit_of(llama_server(), None).await, known(2048));
    // llama-server runs with its own n_ctx, whatever the chat asks
    assert_eq!(limit_of(llama_server(), Some(8192)).await, known(2048));
    // a trained context beyond what Ollama loads by default: Ollama's default
    r.fake.set_context(131_072);
    assert_eq!(limit_of(ollama(), None).await, known(4096));
    assert_eq!(limit_of(llama_server(), None).await, known(131_072));
    // the chat's own num_ctx wins, and Ollama is sent it
    assert_eq!(limit_of(ollama(), Some(8192)).await, known(8192));
    let sent = r.fake.chat_requests().last().unwrap().clone();
    assert_eq!(sent["options"]["num_ctx"], 8192);
    r.host.shutdown().await;
}

/// The sizes of each request a turn said (the Context events): (estimated tokens, tools offered).
fn sizes(events: &[ChatEvent]) -> Vec<(usize, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Context {
                used,
                tools_offered,
                ..
            } => Some((*used, *tools_offered)),
            _ => None,
        })
        .collect()
}

/// What the server says a prompt really was (its tokenizer and chat template, which the
/// estimate cannot see) scales the estimates of that model's later requests up, on both wire
/// formats: Ollama's `prompt_eval_count`, an OpenAI-compatible server's `usage` (asked for with
/// `stream_options.include_usage`). A count below the estimate (a server that had part of the
/// prompt cached) changes nothing.
#[tokio::test]
async fn what_the_server_says_a_prompt_was_calibrates_the_next_estimates() {
    use switchboard_engine::llm::{LlmClient, OllamaClient, OpenAiClient};
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    let said = Arc::new(Mutex::new(0u64));
    let s = said.clone();
    r.fake.set_responder(move |_: &Value| {
        Stream::new()
            .text("hi")
            .done_counting(*s.lock().unwrap())
            .reply()
    });
    let s = said.clone();
    r.fake.set_openai_responder(move |_: &Value| {
        crate::support::fake_ollama::Sse::new()
            .text("hi")
            .finish("stop")
            .usage(*s.lock().unwrap())
            .done()
            .reply()
    });
    for llm in [
        Arc::new(OllamaClient::new(&r.fake.url)) as Arc<dyn LlmClient>,
        Arc::new(OpenAiClient::new(&r.fake.url, None)),
    ] {
        // one engine, as the app keeps one: what it learns holds for its later turns
        let engine = chat_engine(llm, r.host.clone(), r.store.clone());
        let turn = |text: &'static str| {
            let engine = &engine;
            async move {
                let (_, events) = collecting(engine, say(text, None)).await;
                sizes(&events)[0].0
            }
        };
        // less than estimated: believed to be a cached count, nothing changes
        *said.lock().unwrap() = 10;
        let first = turn("hello").await;
        assert_eq!(turn("hello").await, first);
        // three times the estimate: the next estimate of the same request is three times bigger
        *said.lock().unwrap() = 3 * first as u64;
        turn("hello").await;
        let next = turn("hello").await;
        assert!(
            (next as f64 / first as f64 - 3.0).abs() < 0.05,
            "{first} -> {next}"
        );
    }
    // the OpenAI-compatible request asked for the usage
    let asked = r.fake.openai_requests();
    assert_eq!(asked[0]["stream_options"]["include_usage"], true);
    r.host.shutdown().await;
}

/// With the model's context known, a request offers no more tools than fit in it with room for
/// the reply: the least relevant go first.
#[tokio::test]
async fn the_tools_offered_fit_the_models_context() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("slow", slow(&["--many", "40"])),
    ])
    .await;
    r.fake.set_responder(call_then_answer(vec![(
        "1",
        "calculator__add",
        json!({"a": 2, "b": 40}),
    )]));
    let run = |num_ctx: Option<u32>| {
        let mut engine = r.engine(5);
        engine.options.num_ctx = num_ctx;
        async move {
            let (_, events) = collecting(&engine, say("what is 2+40?", None)).await;
            sizes(&events)
        }
    };
    // a big context: the 20 most relevant, as always
    let roomy = run(Some(32_768)).await;
    assert_eq!(roomy[0].1, 20, "{roomy:?}");
    // 1k (the 20 take about 1k tokens): fewer, and the request fits in 3/4 of it
    let small = run(Some(1024)).await;
    assert!(small[0].1 < 20 && small[0].1 >= 1, "{small:?}");
    for (used, _) in &small {
        assert!(*used <= 768, "{small:?}");
    }
    let offered = offered_in(&r.fake.chat_requests()[2]);
    assert_eq!(offered.len(), small[0].1);
    assert!(
        offered.contains(&"calculator__add".to_string()),
        "{offered:?}"
    );
    r.host.shutdown().await;
}

/// The tools a request offered, by name.
fn offered_in(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Fitting a small context lets the least relevant tools go, but never one the conversation
/// used: a conversation about pets whose model called `calculator__add` (not offered: it runs
/// anyway) keeps it on offer in the next request, though the pet tools rank above it.
#[tokio::test]
async fn a_tool_the_conversation_used_stays_offered_when_the_context_is_small() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("slow", slow(&["--many", "40"])),
    ])
    .await;
    r.fake.set_responder(call_then_answer(vec![(
        "1",
        "calculator__add",
        json!({"a": 2, "b": 40}),
    )]));
    let mut engine = r.engine(5);
    // room for fewer tools than the twelve about cats, dogs and birds
    engine.options.num_ctx = Some(512);
    let (_, events) = collecting(&engine, say("my cat, my dog and my bird", None)).await;
    let sizes = sizes(&events);
    let requests = r.fake.chat_requests();
    let (before, after) = (offered_in(&requests[0]), offered_in(&requests[1]));
    let add = "calculator__add".to_string();
    assert!(
        !before.contains(&add),
        "the pet tools come first: {before:?}"
    );
    assert!(sizes[1].1 < 20, "the context was fitted: {sizes:?}");
    assert!(after.contains(&add), "{after:?}");
    r.host.shutdown().await;
}
