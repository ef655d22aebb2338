//! Tool calls as small models really write them, through the real loop (the fake LLM, the real
//! built-in calculator, the store): every shape, in native and text mode, over Ollama's NDJSON and
//! llama-server's SSE. Each call must run as `calculator__add` and the turn end with a clean
//! answer; the markup never shows and is not kept in the stored text. Negatives stay text.

use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_engine::llm::{LlmClient, OllamaClient, OpenAiClient};
use switchboard_engine::settings::ToolMode;
use switchboard_engine::store::{Approval, MessageStatus, ToolChoice};
use switchboard_engine::{ChatEvent, TurnRequest};

use crate::support::fake_ollama::{self, last_message, Sse, Stream};
use crate::support::*;

/// How the first reply carries the call.
enum Form {
    /// In the text (split into pieces as a model streams it).
    Text(&'static str),
    /// In the API's tool-call field, with this name and these arguments.
    Native(&'static str, Value),
}

const ANSWER: &str = "The answer is 42.";

/// (what it is, the first reply): every one must end with calculator__add(2, 40) = 42.
fn corpus() -> Vec<(&'static str, Form)> {
    use Form::*;
    vec![
        ("bare JSON", Text(r#"{"name": "calculator__add", "arguments": {"a": 2, "b": 40}}"#)),
        ("bare JSON, tool and parameters", Text(r#"{"tool": "calculator__add", "parameters": {"a": 2, "b": 40}}"#)),
        ("a json fence with prose around", Text("Let me compute that.\n```json\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}\n```\nOne moment.")),
        ("a JSON array of calls", Text(r#"[{"name": "add", "arguments": {"a": 2, "b": 40}}]"#)),
        ("Hermes / Qwen tags", Text("<tool_call>\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 2, \"b\": 40}}\n</tool_call>")),
        ("Hermes without the closing tag", Text("<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 40}}")),
        ("Mistral", Text(r#"[TOOL_CALLS][{"name": "calculator__add", "arguments": {"a": 2, "b": 40}}]"#)),
        ("Llama 3 python tag", Text(r#"<|python_tag|>{"name": "calculator.add", "parameters": {"a": 2, "b": 40}}<|eom_id|>"#)),
        ("the OpenAI shape in text", Text(r#"{"type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 40}"}}"#)),
        ("single-quoted Python dict, trailing commas", Text("{'name': 'calculator__add', 'arguments': {'a': 2, 'b': 40,},}")),
        ("unquoted keys", Text("{name: \"calculator_add\", arguments: {a: 2, b: 40}}")),
        ("numbers as strings", Text(r#"{"name": "calculator__add", "arguments": {"a": "2", "b": "40"}}"#)),
        ("arguments as a JSON string", Text(r#"{"name": "calculator__add", "arguments": "{\"a\": 2, \"b\": 40}"}"#)),
        ("native, exact", Native("calculator__add", json!({"a": 2, "b": 40}))),
        ("native, without the server", Native("add", json!({"a": 2, "b": 40}))),
        ("native, functions. prefix", Native("functions.calculator__add", json!({"a": 2, "b": 40}))),
        ("native, another separator", Native("calculator/add", json!({"a": 2, "b": 40}))),
        ("native, other case", Native("Calculator__Add", json!({"a": 2, "b": 40}))),
        ("native, string numbers", Native("calculator__add", json!({"a": "2", "b": "40"}))),
    ]
}

/// Replies that are not calls, and must stay text.
fn negatives() -> Vec<(&'static str, &'static str)> {
    vec![
        ("prose", "Two plus forty is forty-two."),
        ("JSON that is data", "Here you go: {\"answer\": 42, \"unit\": \"none\"}"),
        ("a code sample naming a tool nobody offers", "Call it like this:\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n```"),
        ("a sentence about a tool", "I could use calculator__add, but 2 + 40 = 42 anyway."),
    ]
}

/// Splits text into pieces of at most `n` characters (a model streams tokens).
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Ollama,
    OpenAi,
}

/// The fake model: `first` when the user speaks; once a tool result is there, the answer.
fn scripted(
    wire: Wire,
    first: &'static str,
    native: Option<(&'static str, Value)>,
) -> impl Fn(&Value) -> fake_ollama::Reply + Send + Sync + 'static {
    move |req: &Value| {
        let last = last_message(req);
        let has_result = last["role"] == "tool"
            || last["content"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Result of ");
        match (wire, has_result, &native) {
            (Wire::Ollama, true, _) => Stream::new().text(ANSWER).done().reply(),
            (Wire::OpenAi, true, _) => Sse::new().text(ANSWER).finish("stop").done().reply(),
            (Wire::Ollama, false, Some((name, args))) => Stream::new()
                .tool_call("n1", name, args.clone())
                .done()
                .reply(),
            (Wire::OpenAi, false, Some((name, args))) => Sse::new()
                .tool_call(0, "n1", name, &args.to_string())
                .finish("tool_calls")
                .done()
                .reply(),
            (Wire::Ollama, false, None) => pieces(first, 7)
                .iter()
                .fold(Stream::new(), |s, p| s.text(p))
                .done()
                .reply(),
            (Wire::OpenAi, false, None) => pieces(first, 7)
                .iter()
                .fold(Sse::new(), |s, p| s.text(p))
                .finish("stop")
                .done()
                .reply(),
        }
    }
}

/// One turn through the real loop; the events it emitted.
async fn turn_through(
    r: &Rig,
    wire: Wire,
    text_mode: bool,
    choice: Option<ToolChoice>,
) -> (switchboard_engine::TurnSummary, Vec<ChatEvent>) {
    let llm: Arc<dyn LlmClient> = match wire {
        Wire::Ollama => Arc::new(OllamaClient::new(&r.fake.url)),
        Wire::OpenAi => Arc::new(OpenAiClient::new(&r.fake.url, None)),
    };
    let mut engine = chat_engine(llm, r.host.clone(), r.store.clone());
    if text_mode {
        engine
            .options
            .tool_modes
            .insert(fake_ollama::MODEL.into(), ToolMode::Text);
    }
    let (summary, events) = collecting(
        &engine,
        TurnRequest {
            tool_choice: choice,
            ..say("what is 2+40?", None)
        },
    )
    .await;
    (summary, events)
}

/// What is wrong with the history the model was sent back after the call, if anything: a call
/// (recovered from text or not) goes back in the form the provider expects. Native mode: the
/// assistant message carries it in `tool_calls` under the name that ran (arguments an object for
/// Ollama, a JSON string for OpenAI-compatible servers, no markup left in its text), and its result
/// follows as a `tool` message (tied to the call's id on OpenAI-compatible servers). Text mode: the
/// call is JSON in the assistant's text, and the result a user message.
fn history_problem(wire: Wire, text_mode: bool, request: &Value) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let at = messages.iter().rposition(|m| m["role"] == "assistant")?;
    let (call, result) = (&messages[at], messages.get(at + 1)?);
    if text_mode {
        let text = call["content"].as_str().unwrap_or_default();
        return (!(call["tool_calls"].is_null()
            && text.contains("calculator__add")
            && result["role"] == "user"
            && result["content"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Result of calculator__add")))
        .then(|| format!("text-mode history {call} then {result}"));
    }
    let f = &call["tool_calls"][0]["function"];
    let args: Value = match wire {
        Wire::Ollama => f["arguments"].clone(),
        Wire::OpenAi => serde_json::from_str(f["arguments"].as_str()?).ok()?,
    };
    // the model's own arguments: `"2"` was repaired to 2 for the server, but the history keeps
    // what the model wrote (its card shows both)
    let args_fit = args == json!({"a": 2, "b": 40}) || args == json!({"a": "2", "b": "40"});
    let text = call["content"].as_str().unwrap_or_default();
    let tied = match wire {
        Wire::Ollama => true,
        Wire::OpenAi => {
            result["tool_call_id"].is_string()
                && result["tool_call_id"] == call["tool_calls"][0]["id"]
        }
    };
    (!(f["name"] == "calculator__add"
        && args_fit
        && !text.contains('{')
        && !text.contains("tool_call")
        && result["role"] == "tool"
        && result["content"] == "42"
        && tied))
        .then(|| format!("native history {call} then {result}"))
}

/// What streamed into the window as text (never a call's markup).
fn streamed_text(events: &[ChatEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_shape_small_models_write_runs_as_a_call_in_every_mode_and_wire_format() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    let mut failures = Vec::new();
    for wire in [Wire::Ollama, Wire::OpenAi] {
        for text_mode in [false, true] {
            for (what, form) in corpus() {
                let (first, native) = match form {
                    Form::Text(t) => (t, None),
                    // a text-mode model has no tool-call field
                    Form::Native(..) if text_mode => continue,
                    Form::Native(n, a) => ("", Some((n, a))),
                };
                match wire {
                    Wire::Ollama => r.fake.set_responder(scripted(wire, first, native)),
                    Wire::OpenAi => r.fake.set_openai_responder(scripted(wire, first, native)),
                }
                let (summary, events) = turn_through(&r, wire, text_mode, None).await;
                let label = format!(
                    "{what} ({}, {})",
                    if wire == Wire::Ollama {
                        "Ollama"
                    } else {
                        "OpenAI-compatible"
                    },
                    if text_mode {
                        "text mode"
                    } else {
                        "native mode"
                    }
                );
                let conv = r.store.conversation(summary.conversation_id).await.unwrap();
                let ran: Vec<_> = conv
                    .tool_calls
                    .iter()
                    .map(|t| (t.name.as_str(), t.result.as_deref(), t.is_error))
                    .collect();
                let first_reply = conv.messages[1].content.clone();
                let shown = streamed_text(&events);
                let requests = match wire {
                    Wire::Ollama => r.fake.chat_requests(),
                    Wire::OpenAi => r.fake.openai_requests(),
                };
                let problems = [
                    history_problem(wire, text_mode, requests.last().unwrap()),
                    (ran != vec![("calculator__add", Some("42"), false)])
                        .then(|| format!("ran {ran:?}")),
                    (conv.messages.last().unwrap().content != ANSWER)
                        .then(|| format!("answer {:?}", conv.messages.last().unwrap().content)),
                    ["{", "<tool_call>", "[TOOL_CALLS]", "python_tag"]
                        .iter()
                        .any(|m| first_reply.contains(m))
                        .then(|| format!("stored text {first_reply:?}")),
                    [
                        "\"a\"",
                        "'a'",
                        "a: 2",
                        "<tool_call>",
                        "[TOOL_CALLS]",
                        "python_tag",
                    ]
                    .iter()
                    .any(|m| shown.contains(m))
                    .then(|| format!("streamed {shown:?}")),
                ];
                for p in problems.into_iter().flatten() {
                    failures.push(format!("{label}: {p}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    r.host.shutdown().await;
}

#[tokio::test]
async fn prose_data_code_samples_and_tools_turned_off_stay_text_and_nothing_runs() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    for wire in [Wire::Ollama, Wire::OpenAi] {
        for (what, reply) in negatives() {
            match wire {
                Wire::Ollama => r.fake.set_responder(scripted(wire, reply, None)),
                Wire::OpenAi => r.fake.set_openai_responder(scripted(wire, reply, None)),
            }
            let (summary, events) = turn_through(&r, wire, false, None).await;
            let conv = r.store.conversation(summary.conversation_id).await.unwrap();
            assert!(conv.tool_calls.is_empty(), "{what}: {:?}", conv.tool_calls);
            assert_eq!(conv.messages[1].content, reply, "{what}");
            // shown as it streamed (at most the last few characters waited for the end), and all
            // of it when the reply was done
            let streamed = streamed_text(&events);
            assert!(
                reply.starts_with(&streamed) && reply.len() - streamed.len() <= 3,
                "{what}: streamed {streamed:?}"
            );
            let done = events.iter().find_map(|e| match e {
                ChatEvent::AssistantDone { content, .. } => Some(content.clone()),
                _ => None,
            });
            assert_eq!(done.as_deref(), Some(reply), "{what}");
        }
    }
    // a call, in text, to a tool turned off for this chat: not offered, so not a call
    r.fake.set_responder(scripted(
        Wire::Ollama,
        r#"{"name": "calculator__add", "arguments": {"a": 2, "b": 40}}"#,
        None,
    ));
    let off = ToolChoice {
        disabled_tools: ["calculator/add".to_string()].into(),
        ..Default::default()
    };
    let (summary, _) = turn_through(&r, Wire::Ollama, false, Some(off.clone())).await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    assert!(conv.tool_calls.is_empty(), "{:?}", conv.tool_calls);
    // the same as a native call: recorded, not run, and the model told
    r.fake.set_responder(scripted(
        Wire::Ollama,
        "",
        Some(("calculator__add", json!({"a": 2, "b": 40}))),
    ));
    let (summary, _) = turn_through(&r, Wire::Ollama, false, Some(off)).await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let t = &conv.tool_calls[0];
    assert_eq!(t.approval, Some(Approval::TurnedOff));
    assert!(t.is_error && t.result.as_deref().unwrap().contains("turned off"));
    r.host.shutdown().await;
}

#[tokio::test]
async fn an_unknown_or_invalid_call_is_not_run_and_the_model_hears_how_to_fix_it() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    // three calls in one reply: a wrong name, arguments that cannot be repaired, and a good one
    r.fake.set_responder(call_then_answer(vec![
        ("1", "adder", json!({"a": 1, "b": 2})),
        ("2", "calculator__add", json!({"a": "one", "b": 2})),
        ("3", "add", json!({"a": "2", "b": 40})),
    ]));
    let (summary, events) = r.turn("add things").await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let tc = &conv.tool_calls;
    assert_eq!(tc[0].approval, Some(Approval::UnknownTool));
    assert!(
        tc[0].result.as_deref().unwrap().contains("calculator__add"),
        "{:?}",
        tc[0]
    );
    assert_eq!(tc[1].approval, Some(Approval::InvalidArguments));
    let why = tc[1].result.as_deref().unwrap();
    assert!(why.contains("\"a\"") && why.contains("one"), "{why}");
    // the third ran as calculator__add, its card knowing what the model wrote, its arguments
    // repaired (and the repair said)
    assert_eq!(
        (tc[2].name.as_str(), tc[2].written.as_deref()),
        ("calculator__add", Some("add"))
    );
    assert_eq!(tc[2].arguments, json!({"a": 2, "b": 40}));
    assert_eq!(tc[2].result.as_deref(), Some("42"));
    assert!(events.iter().any(|e| matches!(e,
        ChatEvent::ToolCallArguments { id, repairs, .. } if *id == tc[2].id && !repairs.is_empty())));
    // nobody was asked about calls that could not run, and the model read all three, in order
    assert!(!events
        .iter()
        .any(|e| matches!(e, ChatEvent::ApprovalRequested { .. })));
    let sent = tool_messages(&r.fake.chat_requests()[1]);
    assert_eq!(sent.len(), 3);
    assert!(sent[0]["content"]
        .as_str()
        .unwrap()
        .starts_with("Error: Unknown tool \"adder\""));
    assert_eq!(sent[2]["content"], "42");
    assert!(conv
        .messages
        .iter()
        .all(|m| m.status == MessageStatus::Complete));
    r.host.shutdown().await;
}

/// Text mode constrained to JSON (`ToolMode::Json`), through the loop on both wire formats: the
/// request asks the server to hold every reply to the schema of a call to an offered tool or an
/// answer (Ollama's `format`, llama-server's `response_format`), the call runs, and the answer
/// object becomes the reply's text: the JSON is never shown or stored.
#[tokio::test]
async fn constrained_text_mode_sends_the_schema_runs_the_call_and_shows_only_the_answer() {
    let r = rig(vec![("calculator", builtin("calculator"))]).await;
    let call = r#"{"tool": "calculator__add", "arguments": {"a": 2, "b": 40}}"#;
    let answer = r#"{"answer": "The answer is 42."}"#;
    for wire in [Wire::Ollama, Wire::OpenAi] {
        let respond = move |req: &Value| {
            let text = if last_message(req)["content"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Result of ")
            {
                answer
            } else {
                call
            };
            match wire {
                Wire::Ollama => pieces(text, 5)
                    .iter()
                    .fold(Stream::new(), |s, p| s.text(p))
                    .done()
                    .reply(),
                Wire::OpenAi => pieces(text, 5)
                    .iter()
                    .fold(Sse::new(), |s, p| s.text(p))
                    .finish("stop")
                    .done()
                    .reply(),
            }
        };
        let llm: Arc<dyn LlmClient> = match wire {
            Wire::Ollama => {
                r.fake.set_responder(respond);
                Arc::new(OllamaClient::new(&r.fake.url))
            }
            Wire::OpenAi => {
                r.fake.set_openai_responder(respond);
                Arc::new(OpenAiClient::new(&r.fake.url, None))
            }
        };
        let mut engine = chat_engine(llm, r.host.clone(), r.store.clone());
        engine
            .options
            .tool_modes
            .insert(fake_ollama::MODEL.into(), ToolMode::Json);
        let (summary, events) = collecting(&engine, say("what is 2+40?", None)).await;
        let requests = match wire {
            Wire::Ollama => r.fake.chat_requests(),
            Wire::OpenAi => r.fake.openai_requests(),
        };
        let first = &requests[requests.len() - 2];
        let schema = match wire {
            Wire::Ollama => first["format"].clone(),
            Wire::OpenAi => {
                assert_eq!(first["response_format"]["type"], "json_schema");
                first["response_format"]["json_schema"]["schema"].clone()
            }
        };
        let names = &schema["anyOf"][0]["properties"]["tool"]["enum"];
        assert!(
            names
                .as_array()
                .unwrap()
                .contains(&json!("calculator__add")),
            "{schema}"
        );
        assert!(first["tools"].is_null(), "no native tools in text mode");
        let conv = r.store.conversation(summary.conversation_id).await.unwrap();
        let ran: Vec<_> = conv
            .tool_calls
            .iter()
            .map(|t| (t.name.as_str(), t.result.as_deref()))
            .collect();
        assert_eq!(ran, vec![("calculator__add", Some("42"))]);
        assert_eq!(conv.messages.last().unwrap().content, ANSWER);
        let shown = streamed_text(&events);
        assert!(!shown.contains('{'), "streamed {shown:?}");
        let done: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                ChatEvent::AssistantDone { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(done.last().map(String::as_str), Some(ANSWER));
    }
    r.host.shutdown().await;
}
