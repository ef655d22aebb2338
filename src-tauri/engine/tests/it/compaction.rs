//! A long conversation in a small context (issue 37): 30 long tool-using turns in a 2,048-token
//! context, and a chat set to ask before it outgrows it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::{ChatEvent, TurnRequest};

use crate::support::fake_ollama::{last_message, Stream};
use crate::support::*;

use super::context::slow;

/// The user's first message in [`a_long_tool_using_conversation_keeps_fitting_a_2k_context`]:
/// an instruction for the whole conversation.
const FIRST: &str =
    "Question 0: always answer in French, and tell me about the quetzal. I will ask \
    about one topic at a time; read the long text for each with the tool before you answer.";

/// What the fake model writes when it is asked for a summary: which questions the transcript
/// reached (read from it), so a test can tell what each summary covered.
const SUMMARY_SAYS: &str = "Résumé: the user asked";

/// Whether `request` asks for a summary (its instructions are `context::summary::instructions`).
fn asks_summary(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You keep the notes of a conversation"))
}

/// The largest `Question N` in `text`.
fn last_question(text: &str) -> Option<usize> {
    text.match_indices("Question ")
        .filter_map(|(at, _)| {
            let digits: String = text[at + 9..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .max()
}

/// The fake model of a long conversation: a question gets a call of `slow__big` (1 KB), its
/// result an answer of about 600 characters; a summary request a line naming the last question
/// its transcript reached.
fn long_conversation_model(req: &Value) -> crate::support::fake_ollama::Reply {
    let all = req["messages"].as_array().unwrap();
    if asks_summary(req) {
        let text = all[1]["content"].as_str().unwrap_or_default();
        let n = last_question(text).unwrap_or(0);
        return Stream::new()
            .text(&format!(
                "{SUMMARY_SAYS} questions up to Question {n}; answers in French."
            ))
            .done()
            .reply()
            // slow, as a summary is: the next turn's request comes while it is written
            .paused(Duration::from_millis(150));
    }
    let last = last_message(req);
    let asked = all
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| last_question(m["content"].as_str()?))
        .unwrap_or(0);
    if last["role"] == "user" {
        return Stream::new()
            .tool_call(&format!("t{asked}"), "slow__big", json!({"kilobytes": 1}))
            .done()
            .reply();
    }
    Stream::new()
        .text(&format!("Réponse {asked}: "))
        .text(&"voici les détails, en français. ".repeat(18))
        .done()
        .reply()
}

/// A request's body read back as messages and tools, to estimate what was really sent.
fn sent_as_messages(
    body: &Value,
) -> (
    Vec<switchboard_engine::llm::Message>,
    Vec<switchboard_engine::llm::ToolSpec>,
) {
    use switchboard_engine::llm::{Message, Role, ToolCall, ToolSpec};
    let messages = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut msg = Message::new(
                Role::parse(m["role"].as_str().unwrap()).unwrap(),
                m["content"].as_str().unwrap_or_default(),
            );
            msg.tool_calls = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| ToolCall {
                    id: None,
                    name: c["function"]["name"].as_str().unwrap().into(),
                    arguments: c["function"]["arguments"].clone(),
                    written: None,
                })
                .collect();
            msg
        })
        .collect();
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| ToolSpec {
            name: t["function"]["name"].as_str().unwrap().into(),
            description: t["function"]["description"]
                .as_str()
                .unwrap_or_default()
                .into(),
            parameters: t["function"]["parameters"].clone(),
        })
        .collect();
    (messages, tools)
}

/// Issue 37: a model with a 2,048-token context, 30 long turns that each read a long text with a
/// tool. Every request — the chat's and the summaries' — fits the context with the reply's share,
/// by the same estimate applied to what was really sent; the user's first message and the
/// current turn are in every request, whole; older results go as stubs, then older turns as a
/// summary, one summary request per compaction (each stored, each reaching further, far fewer
/// than the turns), written in the background after a turn (announced) or at once when a request
/// needs it. The stored conversation keeps everything (search finds a word of the first turn);
/// the user's edit of the summary is what the next request carries; a branch from before the
/// summary sends its own history, without it.
#[tokio::test]
async fn a_long_tool_using_conversation_keeps_fitting_a_2k_context() {
    use switchboard_engine::chat::budget::estimate_request;
    use switchboard_engine::chat::context;
    const TURNS: usize = 30;
    let r = rig(vec![("slow", slow(&[]))]).await;
    r.fake.set_responder(long_conversation_model);
    let mut engine = r.engine(5);
    engine.options.num_ctx = Some(2048);
    let room = context::room(2048);
    let announced = Arc::new(Mutex::new(Vec::new()));
    let a = announced.clone();
    engine
        .shared
        .set_background_events(Arc::new(move |e| a.lock().unwrap().push(e)));
    let question = |n: usize| {
        format!(
            "Question {n}: tell me about topic number {n}, read its long text first. {}",
            "I would like the details, please. ".repeat(6)
        )
    };
    let (first, mut events) = collecting(&engine, say(FIRST, None)).await;
    let id = first.conversation_id;
    // (chat requests so far, the question they answer)
    let mut asked: Vec<(usize, usize)> = vec![(0, 0)];
    for n in 1..TURNS {
        asked.push((r.fake.chat_requests().len(), n));
        let (summary, e) = collecting(&engine, say(&question(n), Some(id))).await;
        assert!(
            summary.llm_error.is_none() && !summary.context_full,
            "turn {n}: {summary:?}"
        );
        events.extend(e);
    }
    engine.compaction_done(id).await;
    let requests = r.fake.chat_requests();
    // a summary written in the background and the turn's own request never reach the server at
    // once (a local server shares its context between them: both would fail)
    assert_eq!(r.fake.most_chats_at_once(), 1);
    let conv = r.store.conversation(id).await.unwrap();

    // every request fits with the reply's share, by what was sent (tools included)
    for (i, body) in requests.iter().enumerate() {
        let (m, t) = sent_as_messages(body);
        let estimate = estimate_request(&m, &t);
        assert!(
            estimate <= room,
            "request {i} is {estimate} tokens, the room {room}"
        );
    }
    let chats: Vec<(usize, &Value)> = requests
        .iter()
        .enumerate()
        .filter(|(_, b)| !asks_summary(b))
        .collect();
    assert!(chats.len() >= 2 * TURNS, "{}", chats.len());
    // the first message, whole, and the current turn's question, whole, in every chat request
    for (i, body) in &chats {
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m[1]["content"], FIRST, "request {i}");
        let n = asked.iter().rev().find(|(at, _)| at <= i).unwrap().1;
        if n > 0 {
            assert!(
                m.iter().any(|x| x["content"] == question(n)),
                "request {i} lacks question {n}"
            );
        }
        // the round's own result is sent as stored (the model answers from it)
        if m.last().unwrap()["role"] == "tool" {
            let stored = conv
                .messages
                .iter()
                .filter(|x| x.role == switchboard_engine::llm::Role::Tool)
                .any(|x| m.last().unwrap()["content"] == x.content.as_str());
            assert!(stored, "request {i}'s last result is whole");
        }
    }
    // every request said its size, inside the room, and what it compacted
    let contexts: Vec<(usize, switchboard_engine::chat::Compacted)> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Context {
                used,
                compacted,
                room: r,
                limit,
                ..
            } => {
                assert_eq!((*r, *limit), (room, Some(2048)));
                Some((*used, *compacted))
            }
            _ => None,
        })
        .collect();
    assert_eq!(contexts.len(), chats.len());
    assert!(contexts.iter().all(|(used, _)| *used <= room));
    assert!(
        contexts.iter().any(|(_, c)| c.stubbed > 0),
        "older results went as stubs"
    );
    assert!(
        contexts.iter().any(|(_, c)| c.summarised > 0),
        "older turns as a summary"
    );
    assert!(
        contexts.iter().all(|(_, c)| c.dropped == 0),
        "nothing left out"
    );
    // that older results go as stubs was said once, in the conversation
    let stubs_told = conv
        .messages
        .iter()
        .filter(|m| {
            matches!(
                m.notice,
                Some(switchboard_engine::store::Notice::ResultsStubbed { .. })
            )
        })
        .count();
    assert_eq!(stubs_told, 1);

    // one summary request per compaction: each stored, each reaching further, fewer than turns
    let summary_requests = requests.iter().filter(|b| asks_summary(b)).count();
    let summaries = r.store.summaries(id).await.unwrap();
    assert_eq!(summary_requests, summaries.len(), "one request per summary");
    assert!(
        summaries.len() >= 2 && summaries.len() <= TURNS * 2 / 3,
        "{} summaries in {TURNS} turns",
        summaries.len()
    );
    for w in summaries.windows(2) {
        assert!(w[1].through_id > w[0].through_id, "each reaches further");
        assert!(w[1].covers > w[0].covers);
    }
    // what each covered is what its request's transcript (and the summary so far) held
    for s in &summaries {
        let through = conv
            .messages
            .iter()
            .position(|m| m.id == s.through_id)
            .unwrap();
        let last = conv.messages[..=through]
            .iter()
            .filter_map(|m| last_question(&m.content))
            .max()
            .unwrap();
        assert!(
            s.text
                .ends_with(&format!("Question {last}; answers in French.")),
            "{s:?}"
        );
    }
    // requests carried the summary in place of older turns
    let with_summary = chats
        .iter()
        .filter(|(_, b)| {
            let system = b["messages"][0]["content"].as_str().unwrap();
            system.contains("[Earlier conversation, summarised.") && system.contains(SUMMARY_SAYS)
        })
        .count();
    assert!(with_summary > TURNS, "{with_summary}");
    // most were written in the background, and announced there
    let background = announced
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, ChatEvent::Summarised { conversation_id, .. } if *conversation_id == id))
        .count();
    assert!(background >= 1, "no summary was written in the background");
    // the debug view shows summary requests as sent
    let calls = r.store.llm_calls(id).await.unwrap();
    assert!(calls.iter().any(|c| asks_summary(&c.request)));

    // the stored conversation is whole: every turn, every result; search finds the first turn
    let questions = conv
        .messages
        .iter()
        .filter(|m| m.role == switchboard_engine::llm::Role::User)
        .count();
    assert_eq!(questions, TURNS);
    assert_eq!(conv.tool_calls.len(), TURNS);
    let hits = r.store.search("quetzal", 10).await.unwrap();
    assert!(hits.iter().any(|h| h.conversation_id == id), "{hits:?}");

    // the user's edit of the summary is what the next request carries
    let latest = r.store.branch_summary(id).await.unwrap().unwrap();
    let edited = "EDITED: the user wants French answers about topics 0 to 27.";
    r.store.edit_summary(latest.id, edited).await.unwrap();
    let before = r.fake.chat_requests().len();
    collecting(&engine, say(&question(TURNS), Some(id))).await;
    let next = &r.fake.chat_requests()[before];
    let system = next["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(edited) && !system.contains(&latest.text),
        "{system}"
    );

    // a branch from before the first summary sends its own history, no summary
    let q2 = conv
        .messages
        .iter()
        .find(|m| m.content == question(2))
        .unwrap()
        .id;
    let before = r.fake.chat_requests().len();
    let edit = TurnRequest {
        edit_of: Some(q2),
        ..say(
            "Question 2 again: tell me about topic two, in short.",
            Some(id),
        )
    };
    collecting(&engine, edit).await;
    for body in &r.fake.chat_requests()[before..] {
        if asks_summary(body) {
            continue;
        }
        let m = body["messages"].as_array().unwrap();
        let system = m[0]["content"].as_str().unwrap();
        assert!(!system.contains("Earlier conversation"), "{system}");
        assert_eq!(m[1]["content"], FIRST);
        assert!(
            m.iter().any(|x| x["content"] == question(1)),
            "the branch's own turn 1"
        );
        assert!(
            !m.iter().any(|x| x["content"] == question(3)),
            "not the other branch's"
        );
    }
    r.host.shutdown().await;
}

/// Issue 37: a chat set to ask stops before a request that would not fit (nothing sent, a notice
/// saying so, stored), and goes on as the user then chooses for that turn (`context_policy`):
/// leaving the oldest out (a note in the request says how many), or summarising; the chat's own
/// policy stays "ask".
#[tokio::test]
async fn a_chat_set_to_ask_stops_and_goes_on_as_the_user_chooses() {
    use switchboard_engine::chat::Resume;
    use switchboard_engine::store::{ContextPolicy, ConversationSettings, Notice};
    let r = rig(vec![("slow", slow(&[]))]).await;
    r.fake.set_responder(long_conversation_model);
    let mut engine = r.engine(5);
    engine.options.num_ctx = Some(2048);
    let ask = ConversationSettings {
        context_policy: Some(ContextPolicy::Ask),
        ..Default::default()
    };
    let (first, _) = collecting(
        &engine,
        TurnRequest {
            settings: Some(ask),
            ..say(FIRST, None)
        },
    )
    .await;
    let id = first.conversation_id;
    let mut stopped = None;
    for n in 1..20 {
        let sent = r.fake.chat_requests().len();
        let (summary, _) = collecting(
            &engine,
            say(&format!("Question {n}: read topic {n}."), Some(id)),
        )
        .await;
        assert!(summary.llm_error.is_none(), "{summary:?}");
        if summary.context_full {
            stopped = Some((n, sent));
            break;
        }
    }
    let (n, sent) = stopped.expect("the chat outgrew its context and stopped to ask");
    // nothing was sent for the request that would not fit (the turn's first request, or a later
    // round's), and no summary was asked for
    assert!(r.fake.chat_requests()[sent..]
        .iter()
        .all(|b| !asks_summary(b)));
    let conv = r.store.conversation(id).await.unwrap();
    assert!(
        matches!(
            conv.messages.last().unwrap().notice,
            Some(Notice::ContextFull { ask: true, .. })
        ),
        "{:?}",
        conv.messages.last()
    );
    assert!(conv
        .messages
        .iter()
        .any(|m| m.content == format!("Question {n}: read topic {n}.")));
    // the user chooses to leave the oldest out, for this turn: it goes on, and says so
    let before = r.fake.chat_requests().len();
    let (summary, _) = collecting(
        &engine,
        TurnRequest {
            resume: Some(Resume::Continue),
            context_policy: Some(ContextPolicy::DropOldest),
            ..say("", Some(id))
        },
    )
    .await;
    assert!(
        summary.llm_error.is_none() && !summary.context_full,
        "{summary:?}"
    );
    let went_on = &r.fake.chat_requests()[before..];
    assert!(!went_on.is_empty());
    let system = went_on[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("oldest messages of this conversation"),
        "{system}"
    );
    assert_eq!(
        went_on[0]["messages"][1]["content"], FIRST,
        "the first message stays"
    );
    // the chat's own policy is still to ask
    let conv = r.store.conversation(id).await.unwrap();
    assert_eq!(conv.settings.context_policy, Some(ContextPolicy::Ask));
    r.host.shutdown().await;
}
