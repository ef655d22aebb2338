//! LLM faults through the real loop, on both wire formats: nothing listening, an HTTP 500 with a
//! body, a connection that breaks mid-reply, a malformed NDJSON line or SSE event, and a stream
//! that stalls. Each ends the turn with a clear error event, keeps whatever text had arrived on
//! the stored message (status `error`), and the next turn in the same conversation works.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_engine::llm::{
    LlmClient, LlmErrorKind, OllamaClient, OpenAiClient, StreamTimeouts,
};
use switchboard_engine::mcp::McpHost;
use switchboard_engine::store::{MessageStatus, Store};
use switchboard_engine::{ChatEvent, TurnSummary};

use crate::support::fake_ollama::{
    json_error, openai_error, raw_chunks, raw_sse, End, FakeOllama, Reply, Sse, Stream,
};
use crate::support::{chat_engine, collecting, host_options, say, READY};

#[derive(Clone, Copy, Debug)]
enum Wire {
    Ollama,
    OpenAi,
}

const WIRES: [Wire; 2] = [Wire::Ollama, Wire::OpenAi];

/// Short limits, so a stall fails in a second rather than in two minutes.
const TIMEOUTS: StreamTimeouts = StreamTimeouts {
    first_byte: Duration::from_secs(3),
    idle: Duration::from_secs(1),
};

fn client(wire: Wire, url: &str) -> Arc<dyn LlmClient> {
    match wire {
        Wire::Ollama => Arc::new(OllamaClient::new(url).with_timeouts(TIMEOUTS)),
        Wire::OpenAi => Arc::new(OpenAiClient::new(url, None).with_timeouts(TIMEOUTS)),
    }
}

/// The fake answers the next chat requests with `replies`, in order, on `wire`.
fn script(fake: &FakeOllama, wire: Wire, replies: Vec<Reply>) {
    match wire {
        Wire::Ollama => replies.into_iter().for_each(|r| fake.push(r)),
        Wire::OpenAi => {
            let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
            fake.set_openai_responder(move |_| {
                queue
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or_else(|| openai_error(500, "no scripted reply left"))
            });
        }
    }
}

/// A complete, ordinary answer.
fn good(wire: Wire) -> Reply {
    match wire {
        Wire::Ollama => Stream::new().text("All ").text("good.").done().reply(),
        Wire::OpenAi => Sse::new()
            .text("All ")
            .text("good.")
            .finish("stop")
            .done()
            .reply(),
    }
}

/// "Partial " and "answer" arrive, then the reply ends as `end` says.
fn partial(wire: Wire, end: End) -> Reply {
    match wire {
        Wire::Ollama => Stream::new().text("Partial ").text("answer").reply(),
        Wire::OpenAi => Sse::new().text("Partial ").text("answer").reply(),
    }
    .ending(end)
}

/// "Partial answer", then a line that is not JSON, then what would have been the rest.
fn malformed(wire: Wire) -> Reply {
    match wire {
        Wire::Ollama => raw_chunks(vec![
            Stream::new().text("Partial ").text("answer").bytes(),
            b"{\"model\": \"fake\", \"message\": {\"content\": \"lost\"\n".to_vec(),
            Stream::new().text(" never seen").done().bytes(),
        ]),
        Wire::OpenAi => raw_sse(vec![
            Sse::new().text("Partial ").text("answer").bytes(),
            b"data: {\"choices\": [{\"delta\": {\"content\": \"lost\"\n\n".to_vec(),
            Sse::new().text(" never seen").finish("stop").done().bytes(),
        ]),
    }
}

fn http_500(wire: Wire) -> Reply {
    match wire {
        Wire::Ollama => json_error(500, "llama runner process has terminated: signal: killed"),
        Wire::OpenAi => openai_error(500, "llama runner process has terminated: signal: killed"),
    }
}

struct Setup {
    fake: FakeOllama,
    host: Arc<McpHost>,
    store: Store,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db.sqlite3")).await.unwrap();
    Setup {
        fake: FakeOllama::start().await,
        // no MCP servers: these turns are about the LLM
        host: McpHost::new(host_options()),
        store,
        _dir: dir,
    }
}

/// One turn on `llm`; its summary and events.
async fn turn(
    s: &Setup,
    llm: Arc<dyn LlmClient>,
    text: &str,
    conversation: Option<i64>,
) -> (TurnSummary, Vec<ChatEvent>) {
    let engine = chat_engine(llm, s.host.clone(), s.store.clone());
    collecting(&engine, say(text, conversation)).await
}

/// The error event of a turn (there must be exactly one).
fn the_error(events: &[ChatEvent]) -> (String, LlmErrorKind, Option<String>) {
    let errors: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Error { message, kind, url } => Some((message.clone(), *kind, url.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "one error event: {events:?}");
    errors.into_iter().next().unwrap()
}

/// The chat requests the fake received on `wire`.
fn requests(fake: &FakeOllama, wire: Wire) -> Vec<Value> {
    match wire {
        Wire::Ollama => fake.chat_requests(),
        Wire::OpenAi => fake.openai_requests(),
    }
}

/// The fault ends the first turn with an error of `kind` whose message says `says`; the text that
/// had arrived (`kept`, or nothing) is on the stored reply, marked `error`; then a second turn in
/// the same conversation gets a complete answer and sends that partial text as history.
async fn fails_clearly_then_recovers(
    wire: Wire,
    fault: Reply,
    kind: LlmErrorKind,
    says: &str,
    kept: Option<&str>,
) {
    let s = setup().await;
    script(&s.fake, wire, vec![fault, good(wire)]);
    let llm = client(wire, &s.fake.url);
    let (summary, events) = turn(&s, llm.clone(), "hello", None).await;
    let (message, k, _) = the_error(&events);
    assert_eq!(k, kind, "{wire:?}: {message}");
    assert!(message.contains(says), "{wire:?}: {message}");
    assert_eq!(summary.llm_error.as_deref(), Some(message.as_str()));
    assert!(matches!(events.last(), Some(ChatEvent::Done { .. })));
    let id = summary.conversation_id;
    let conv = s.store.conversation(id).await.unwrap();
    match kept {
        Some(text) => {
            assert_eq!(conv.messages.len(), 2, "{wire:?}");
            assert_eq!(conv.messages[1].content, text, "{wire:?}");
            assert_eq!(conv.messages[1].status, MessageStatus::Error, "{wire:?}");
            // the window heard it too
            assert!(events.iter().any(|e| matches!(e,
                ChatEvent::AssistantDone { status: MessageStatus::Error, content, .. } if content == text)));
        }
        None => assert_eq!(conv.messages.len(), 1, "{wire:?}: nothing to keep"),
    }
    // the debug view has the failed call with its error
    let calls = s.store.llm_calls(id).await.unwrap();
    assert_eq!(
        calls.last().unwrap().error.as_deref(),
        Some(message.as_str())
    );

    // the next turn in the same conversation works
    let (summary, events) = turn(&s, llm, "again", Some(id)).await;
    assert_eq!(summary.llm_error, None, "{wire:?}: {events:?}");
    let conv = s.store.conversation(id).await.unwrap();
    let last = conv.messages.last().unwrap();
    assert_eq!(
        (last.content.as_str(), last.status),
        ("All good.", MessageStatus::Complete),
        "{wire:?}"
    );
    let sent = requests(&s.fake, wire);
    let history = sent.last().unwrap()["messages"].to_string();
    assert!(history.contains("again"), "{history}");
    if let Some(text) = kept {
        assert!(
            history.contains(text),
            "the partial reply is history: {history}"
        );
    }
}

#[tokio::test]
async fn an_http_500_says_the_servers_text() {
    for wire in WIRES {
        fails_clearly_then_recovers(
            wire,
            http_500(wire),
            LlmErrorKind::Http,
            "the LLM server answered 500: llama runner process has terminated: signal: killed",
            None,
        )
        .await;
    }
}

#[tokio::test]
async fn a_connection_that_breaks_mid_reply_keeps_the_partial_text() {
    for wire in WIRES {
        fails_clearly_then_recovers(
            wire,
            partial(wire, End::Disconnect),
            LlmErrorKind::Stream,
            "the connection to the LLM server broke off during the reply",
            Some("Partial answer"),
        )
        .await;
    }
}

#[tokio::test]
async fn a_malformed_line_or_event_is_a_protocol_error_after_the_partial_text() {
    for (wire, says) in [
        (Wire::Ollama, "bad NDJSON line"),
        (Wire::OpenAi, "bad event data"),
    ] {
        fails_clearly_then_recovers(
            wire,
            malformed(wire),
            LlmErrorKind::Protocol,
            says,
            Some("Partial answer"),
        )
        .await;
    }
}

#[tokio::test]
async fn a_stream_that_stalls_times_out_and_keeps_the_partial_text() {
    for wire in WIRES {
        // the fake stalls until the client gives up: only the idle limit ends this
        tokio::time::timeout(
            READY,
            fails_clearly_then_recovers(
                wire,
                partial(wire, End::Stall),
                LlmErrorKind::Stream,
                "the LLM server sent nothing for 1 s",
                Some("Partial answer"),
            ),
        )
        .await
        .expect("the stalled stream was given up on");
    }
}

#[tokio::test]
async fn an_answer_that_never_starts_times_out_on_the_first_byte_limit() {
    for wire in WIRES {
        // the headers come, then nothing at all
        let silent = Reply {
            chunks: vec![],
            ..partial(wire, End::Stall)
        };
        fails_clearly_then_recovers(
            wire,
            silent,
            LlmErrorKind::Stream,
            "the LLM server sent nothing for 3 s",
            None,
        )
        .await;
    }
}

#[tokio::test]
async fn nothing_listening_names_the_url_and_the_next_turn_works_once_it_is_up() {
    for wire in WIRES {
        let s = setup().await;
        let nothing = crate::support::DeadPort::new();
        let dead = nothing.url();
        let (summary, events) = turn(&s, client(wire, &dead), "hello", None).await;
        let (message, kind, url) = the_error(&events);
        assert_eq!(kind, LlmErrorKind::Unreachable, "{message}");
        assert!(
            message.contains(&format!("cannot reach the LLM server at {dead}")),
            "{message}"
        );
        assert_eq!(url.as_deref(), Some(dead.as_str()));
        let id = summary.conversation_id;
        assert_eq!(s.store.conversation(id).await.unwrap().messages.len(), 1);
        // the server comes up (here: the URL is fixed): the same conversation goes on
        script(&s.fake, wire, vec![good(wire)]);
        let (summary, _) = turn(&s, client(wire, &s.fake.url), "again", Some(id)).await;
        assert_eq!(summary.llm_error, None);
        let conv = s.store.conversation(id).await.unwrap();
        assert_eq!(conv.messages.last().unwrap().content, "All good.");
        assert_eq!(
            conv.messages
                .iter()
                .filter(|m| m.role == switchboard_engine::llm::Role::User)
                .count(),
            2
        );
    }
}
