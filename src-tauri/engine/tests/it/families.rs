//! Every family's samples (crates/markup/src/families/samples: replies from each family's documentation,
//! chat template or parser tests, sources cited there) through the real loop: the scripted fake
//! streams the reply in pieces of 1 to 3 characters over Ollama's NDJSON and llama-server's SSE,
//! the calls run on a real MCP server that echoes their arguments, and the stored and streamed
//! text is clean. The fake's chat template names the family (as a real server's does), so the
//! model's family is detected and its parser goes first. Negatives run nothing and stay as they
//! were.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_engine::chat::families;
use switchboard_engine::llm::{LlmClient, OllamaClient, OpenAiClient};
use switchboard_engine::store::MessageStatus;
use switchboard_engine::ChatEvent;

use crate::support::fake_ollama::{self, last_message, Sse, Stream};
use crate::support::*;

use switchboard_markup::families::sample_file::{self, Sample};

const DONE: &str = "Done.";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Wire {
    Ollama,
    OpenAi,
}

/// The reply in pieces of 1, 2, 3, 1, 2, 3… characters.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut n) = (0, 1);
    while i < chars.len() {
        let end = (i + n).min(chars.len());
        out.push(chars[i..end].iter().collect());
        i = end;
        n = n % 3 + 1;
    }
    out
}

/// The fake model: the sample's reply first; once a tool result is there, a plain answer.
fn scripted(wire: Wire, reply: String) -> impl Fn(&Value) -> fake_ollama::Reply + Send + Sync {
    move |req: &Value| {
        let has_result = last_message(req)["role"] == "tool";
        let text = if has_result {
            DONE.to_string()
        } else {
            reply.clone()
        };
        let mut reply = match wire {
            Wire::Ollama => pieces(&text)
                .iter()
                .fold(Stream::new(), |s, p| s.text(p))
                .done()
                .reply(),
            Wire::OpenAi => pieces(&text)
                .iter()
                .fold(Sse::new(), |s, p| s.text(p))
                .finish("stop")
                .done()
                .reply(),
        };
        // each piece is its own line or event (a delta of its own), sent without a pause
        reply.pause = Duration::ZERO;
        reply
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What went wrong with one sample through the loop on one wire, if anything.
async fn problems(r: &Rig, s: &Sample, wire: Wire) -> Vec<String> {
    // the server's chat template says the family, as real ones do
    let template = families::by_id(&s.file)
        .map(|f| f.detect().template.join(" "))
        .unwrap_or_default();
    r.fake.set_template(&template);
    let llm: Arc<dyn LlmClient> = match wire {
        Wire::Ollama => {
            r.fake.set_responder(scripted(wire, s.reply.clone()));
            Arc::new(OllamaClient::new(&r.fake.url))
        }
        Wire::OpenAi => {
            r.fake.set_openai_responder(scripted(wire, s.reply.clone()));
            Arc::new(OpenAiClient::new(&r.fake.url, None))
        }
    };
    let engine = chat_engine(llm, r.host.clone(), r.store.clone());
    let (summary, events) = collecting(&engine, say("go", None)).await;
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let mut out = Vec::new();
    let ran: Vec<(String, Option<Value>)> = conv
        .tool_calls
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.result
                    .as_deref()
                    .and_then(|x| serde_json::from_str(x).ok()),
            )
        })
        .collect();
    let want: Vec<(String, Option<Value>)> = s
        .calls
        .iter()
        .map(|(n, a)| (format!("s__{n}"), Some(a.clone())))
        .collect();
    if ran != want {
        out.push(format!("ran {ran:?}, want {want:?}"));
    }
    let first = &conv.messages[1];
    if first.content != s.text {
        out.push(format!(
            "stored text {:?}, want {:?}",
            first.content, s.text
        ));
    }
    let thinking = first.thinking.clone().unwrap_or_default();
    if thinking != s.thinking {
        out.push(format!(
            "stored thinking {thinking:?}, want {:?}",
            s.thinking
        ));
    }
    if first.status != MessageStatus::Complete {
        out.push(format!("status {:?}", first.status));
    }
    // what streamed while the first reply came: never markup
    let first_id = first.id;
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::TextDelta {
                message_id, text, ..
            } if *message_id == first_id => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if !squash(&s.text).starts_with(&squash(&streamed)) {
        out.push(format!("streamed {streamed:?}"));
    }
    let done = events.iter().find_map(|e| match e {
        ChatEvent::AssistantDone {
            message_id,
            content,
            ..
        } if *message_id == first_id => Some(content.clone()),
        _ => None,
    });
    if done.as_deref() != Some(s.text.as_str()) {
        out.push(format!("shown when done {done:?}"));
    }
    if !s.calls.is_empty() && conv.messages.last().map(|m| m.content.as_str()) != Some(DONE) {
        out.push("the turn did not end with the answer".into());
    }
    out
}

/// Every sample through the loop on one wire.
async fn all_through(wire: Wire) {
    let mut echo = python("echo_tools_server.py");
    echo.args
        .push(sample_file::dir().join("tools.json").display().to_string());
    let r = rig(vec![("s", echo)]).await;
    let mut failures = Vec::new();
    let samples = sample_file::all();
    assert!(samples.len() > 100, "{} samples", samples.len());
    for s in &samples {
        for p in problems(&r, s, wire).await {
            failures.push(format!("{}/{} ({wire:?}): {p}", s.file, s.title));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    r.host.shutdown().await;
}

#[tokio::test]
async fn every_familys_samples_run_through_the_loop_clean_over_ollama() {
    all_through(Wire::Ollama).await;
}

#[tokio::test]
async fn every_familys_samples_run_through_the_loop_clean_over_openai_compatible_sse() {
    all_through(Wire::OpenAi).await;
}
