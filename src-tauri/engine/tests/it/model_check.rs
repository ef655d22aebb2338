//! The model check against the scripted fake, over Ollama's API and an OpenAI-compatible one: a
//! model that calls natively, one without native tools that writes its calls in text (Hermes
//! tags), one that cannot call tools at all; progress, cancellation, the proposal.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use switchboard_engine::chat::check::{self, CheckEvent, Mode, Outcome, Proposal};
use switchboard_engine::llm::{LlmClient, OllamaClient, OpenAiClient};
use tokio_util::sync::CancellationToken;

use crate::support::fake_ollama::{last_message, FakeOllama, Sse, Stream};

/// The right calls for each probe's question (none for the one that needs none).
fn right_calls(prompt: &str) -> Vec<(&'static str, Value)> {
    if prompt.contains("17 + 25") {
        vec![("calculator__add", json!({"a": 17, "b": 25}))]
    } else if prompt.contains("6 times 7") {
        vec![
            ("calculator__multiply", json!({"a": 6, "b": 7})),
            ("calculator__add", json!({"a": 100, "b": 23})),
        ]
    } else if prompt.contains("Team lunch") {
        vec![(
            "calendar__create_event",
            json!({"title": "Team lunch", "when": {"date": "2025-03-14", "time": "12:30"},
                   "attendees": ["Ada", "Grace"]}),
        )]
    } else if prompt.contains("twelve and thirty") {
        vec![("calculator__add", json!({"a": "12", "b": "30"}))]
    } else {
        vec![]
    }
}

/// How each fake model answers.
fn answer(model: &str, prompt: &str, openai: bool) -> crate::support::fake_ollama::Reply {
    let calls = right_calls(prompt);
    match (model, openai) {
        ("native-model", false) if !calls.is_empty() => {
            let c: Vec<(&str, &str, Value)> =
                calls.iter().map(|(n, a)| ("c", *n, a.clone())).collect();
            Stream::new().tool_calls(&c).done().reply()
        }
        ("native-model", true) if !calls.is_empty() => calls
            .iter()
            .enumerate()
            .fold(Sse::new(), |s, (i, (n, a))| {
                s.tool_call(i as u64, &format!("c{i}"), n, &a.to_string())
            })
            .finish("tool_calls")
            .done()
            .reply(),
        ("text-model", _) if !calls.is_empty() => {
            let text: String = calls
                .iter()
                .map(|(n, a)| {
                    format!(
                        "<tool_call>\n{}\n</tool_call>\n",
                        json!({"name": n, "arguments": a})
                    )
                })
                .collect();
            text_reply(&text, openai)
        }
        _ if calls.is_empty() => text_reply("Paris", openai),
        _ => text_reply("I can't use tools, but the answer is easy.", openai),
    }
}

fn text_reply(text: &str, openai: bool) -> crate::support::fake_ollama::Reply {
    if openai {
        Sse::new().text(text).finish("stop").done().reply()
    } else {
        Stream::new().text(text).done().reply()
    }
}

async fn fake() -> FakeOllama {
    let fake = FakeOllama::start().await;
    fake.set_models(&["native-model", "text-model", "mute-model"]);
    // the text model's server says it has no native tools
    fake.set_capabilities("text-model", &["completion"]);
    let respond = |openai: bool| {
        move |req: &Value| {
            let model = req["model"].as_str().unwrap_or_default().to_string();
            let prompt = last_message(req)["content"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            answer(&model, &prompt, openai)
        }
    };
    fake.set_responder(respond(false));
    fake.set_openai_responder(respond(true));
    fake
}

async fn run(llm: &dyn LlmClient, model: &str) -> (check::CheckReport, Vec<CheckEvent>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let mut on = move |e: CheckEvent| ev.lock().unwrap().push(e);
    let report = check::check_model(llm, model, &mut on, &CancellationToken::new()).await;
    let events = events.lock().unwrap().clone();
    (report, events)
}

#[tokio::test]
async fn a_native_model_passes_natively_on_both_apis() {
    let fake = fake().await;
    let clients: [Arc<dyn LlmClient>; 2] = [
        Arc::new(OllamaClient::new(&fake.url)),
        Arc::new(OpenAiClient::new(&fake.url, None)),
    ];
    for llm in clients {
        let (r, events) = run(&*llm, "native-model").await;
        assert_eq!(r.proposal, Proposal::Native, "{r:#?}");
        assert!(r.works());
        assert_eq!(r.results.len(), 5, "{r:#?}");
        assert!(
            r.results.iter().all(|p| p.passed && p.mode == Mode::Native),
            "{r:#?}"
        );
        let outcomes: Vec<&Outcome> = r.results.iter().map(|p| &p.outcome).collect();
        assert_eq!(outcomes[..4], [&Outcome::Native; 4]);
        assert_eq!(outcomes[4], &Outcome::NoCall);
        // a start and a result per probe, in order
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                CheckEvent::Probe { .. } => "probe",
                CheckEvent::Result { .. } => "result",
            })
            .collect();
        assert_eq!(kinds, ["probe", "result"].repeat(5));
    }
}

#[tokio::test]
async fn a_model_without_native_tools_is_checked_in_text_and_its_family_named() {
    let fake = fake().await;
    let llm = OllamaClient::new(&fake.url);
    let (r, _) = run(&llm, "text-model").await;
    assert_eq!(r.proposal, Proposal::Text, "{r:#?}");
    assert!(r.results.iter().all(|p| p.mode == Mode::Text), "{r:#?}");
    assert!(r.results.iter().all(|p| p.passed), "{r:#?}");
    assert_eq!(
        r.results[0].outcome,
        Outcome::Recovered {
            family: "hermes".into()
        }
    );
    // nothing was asked natively: its server said it has no tools
    assert!(fake.chat_requests().iter().all(|q| q["tools"].is_null()));
}

#[tokio::test]
async fn a_model_that_cannot_call_tools_is_proposed_off() {
    let fake = fake().await;
    let llm = OllamaClient::new(&fake.url);
    let (r, _) = run(&llm, "mute-model").await;
    assert_eq!(r.proposal, Proposal::Off, "{r:#?}");
    assert!(!r.works());
    // both ways were tried: five probes natively, five in text
    assert_eq!(r.results.len(), 10, "{r:#?}");
    assert!(matches!(r.results[0].outcome, Outcome::NoCall));
    assert!(
        r.results[4].passed,
        "the question without a tool was answered"
    );
}

#[tokio::test]
async fn the_check_stops_when_cancelled_and_says_so() {
    let fake = fake().await;
    let llm = OllamaClient::new(&fake.url);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let mut on = move |e: CheckEvent| {
        if matches!(e, CheckEvent::Result { .. }) {
            c.cancel();
        }
    };
    let r = check::check_model(&llm, "native-model", &mut on, &cancel).await;
    assert!(r.cancelled);
    assert!(!r.works());
    assert_eq!(r.results.len(), 1, "{r:#?}");
}
