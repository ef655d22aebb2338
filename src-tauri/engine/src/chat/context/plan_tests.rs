use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::chat::budget::estimate_messages;
use crate::llm::ToolCall;

const SYSTEM: &str = "You are a helpful assistant.";
const FIRST: &str = "Always answer in French, please.";

/// A conversation: the system prompt, the user's first message, then `turns` turns of a
/// question, a call, its result of `result` characters and an answer; ids from 1 (the system
/// prompt has none).
fn conversation(turns: usize, result: usize) -> (Vec<Message>, Vec<Meta>) {
    let mut m = vec![
        Message::new(Role::System, SYSTEM),
        Message::new(Role::User, FIRST),
    ];
    m.push(Message::new(Role::Assistant, "D'accord."));
    for t in 0..turns {
        m.extend(turn(t, result));
    }
    let meta = m
        .iter()
        .enumerate()
        .map(|(i, _)| Meta {
            id: (i > 0).then_some(i as i64),
            pinned: false,
        })
        .collect();
    (m, meta)
}

fn turn(t: usize, result: usize) -> Vec<Message> {
    let mut asked = Message::new(Role::Assistant, "");
    asked.tool_calls = vec![ToolCall {
        id: Some(format!("c{t}")),
        name: "files__read".into(),
        arguments: json!({"path": format!("{t}.txt")}),
        written: None,
    }];
    let mut r = Message::new(Role::Tool, format!("[{t}] ") + &"word ".repeat(result / 5));
    r.tool_name = Some("files__read".into());
    r.tool_call_id = Some(format!("c{t}"));
    vec![
        Message::new(Role::User, format!("question {t}")),
        asked,
        r,
        Message::new(Role::Assistant, format!("answer {t}")),
    ]
}

fn budget(messages: usize) -> Budget {
    Budget {
        messages,
        compact_at: messages * 3 / 4,
        recent: messages * 35 / 100,
        step: 0,
    }
}

fn texts(p: &Plan) -> Vec<&str> {
    p.messages.iter().map(|m| m.content.as_str()).collect()
}

#[test]
fn what_fits_is_sent_as_it_is() {
    let (m, meta) = conversation(3, 100);
    let total = estimate_messages(&m);
    let p = plan(&m, &meta, &budget(total), ContextPolicy::Summarise, None);
    assert_eq!(p.outcome, Outcome::Fits);
    assert_eq!(p.messages, m);
    assert_eq!(p.tokens, total);
    assert!(p.stubbed.is_empty() && p.summarised == 0 && p.dropped == 0);
    // over three quarters: a summary is to be prepared, keeping the newest turns
    let p = plan(
        &m,
        &meta,
        &budget(total + 1),
        ContextPolicy::Summarise,
        None,
    );
    assert_eq!(p.outcome, Outcome::Fits);
    let through = p.summarise_through.expect("a summary to prepare");
    assert_eq!(m[through + 1].role, Role::User, "it ends before a turn");
    assert!(through > 1, "after the first message");
    // other policies prepare nothing
    let p = plan(
        &m,
        &meta,
        &budget(total + 1),
        ContextPolicy::DropOldest,
        None,
    );
    assert_eq!(p.summarise_through, None);
}

#[test]
fn a_summary_is_prepared_only_when_it_would_take_off_enough() {
    let (m, meta) = conversation(6, 400);
    let total = estimate_messages(&m);
    let b = budget(total + 1);
    let p = plan(&m, &meta, &b, ContextPolicy::Summarise, None);
    let through = p.summarise_through.expect("a summary to prepare");
    // with a stored summary reaching one turn short of that, covering one more turn is too
    // little to be worth a request
    let turn_before = (0..through)
        .rev()
        .find(|&i| m[i + 1].role == Role::User && i + 1 < through)
        .unwrap();
    let stored = Some(SummaryIn {
        text: "Earlier: turns 0 to 2.",
        through: turn_before,
    });
    let one_turn = estimate_messages(&m[turn_before + 1..=through]);
    let small = Budget {
        step: one_turn * 2,
        ..b
    };
    let p = plan(&m, &meta, &small, ContextPolicy::Summarise, stored);
    assert_eq!(p.summarise_through, None, "one turn is less than the step");
    let big = Budget { step: 1, ..b };
    assert_eq!(
        plan(&m, &meta, &big, ContextPolicy::Summarise, stored).summarise_through,
        Some(through)
    );
}

#[test]
fn older_results_become_stubs_first_oldest_first_but_never_the_last_rounds() {
    let (m, meta) = conversation(4, 2000);
    let total = estimate_messages(&m);
    // room for all but about one and a half results
    let p = plan(
        &m,
        &meta,
        &budget(total - 600),
        ContextPolicy::Summarise,
        None,
    );
    assert_eq!(p.outcome, Outcome::Fits);
    let results: Vec<usize> = (0..m.len()).filter(|&i| m[i].role == Role::Tool).collect();
    assert_eq!(p.stubbed, results[..2], "the two oldest");
    assert!(p.tokens <= total - 600);
    assert!(estimate_messages(&p.messages) <= p.tokens);
    assert_eq!(p.messages.len(), m.len(), "nothing else changed");
    let stub = &p.messages[results[0]].content;
    assert!(
        stub.starts_with(
            "[Result of files__read left out to fit the model's context: 2004 characters"
        ),
        "{stub}"
    );
    assert!(
        stub.contains("beginning \"[0] word word") && stub.contains("tool's card"),
        "{stub}"
    );
    assert_eq!(p.messages[results[0]].tool_call_id.as_deref(), Some("c0"));
    // with almost no room, every result but the last round's is a stub, and it is not enough
    let p = plan(&m, &meta, &budget(300), ContextPolicy::Ask, None);
    assert_eq!(p.outcome, Outcome::Ask);
    let p = plan(
        &m[..m.len() - 1],
        &meta[..m.len() - 1],
        &budget(200),
        ContextPolicy::Ask,
        None,
    );
    assert_eq!(
        p.outcome,
        Outcome::Overflow,
        "the last round's result alone is over"
    );
}

#[test]
fn a_pinned_reply_keeps_its_results_whole() {
    let (m, mut meta) = conversation(4, 2000);
    let total = estimate_messages(&m);
    // the call of turn 0 pinned: its result stays; the next oldest go instead
    let asked = m.iter().position(|x| !x.tool_calls.is_empty()).unwrap();
    meta[asked].pinned = true;
    let p = plan(
        &m,
        &meta,
        &budget(total - 600),
        ContextPolicy::Summarise,
        None,
    );
    let results: Vec<usize> = (0..m.len()).filter(|&i| m[i].role == Role::Tool).collect();
    assert_eq!(p.stubbed, results[1..3]);
    assert_eq!(p.messages[asked + 1], m[asked + 1]);
}

#[test]
fn a_summary_stands_for_older_turns_and_keeps_what_is_always_whole() {
    let (m, mut meta) = conversation(12, 1200);
    // a question of turn 2 pinned
    let pinned = m.iter().position(|x| x.content == "question 2").unwrap();
    meta[pinned].pinned = true;
    let b = budget(900);
    // no summary yet: one is needed, up to a turn's start, keeping the newest turns
    let p = plan(&m, &meta, &b, ContextPolicy::Summarise, None);
    assert_eq!(p.outcome, Outcome::NeedsSummary);
    let through = p.summarise_through.unwrap();
    assert_eq!(m[through + 1].role, Role::User);
    assert!(
        through + 1 < m.len() - 4,
        "the newest turns are kept: {through}"
    );
    // with it, the request fits
    let text = "The user asked about notes 0 to 8; the assistant read them.";
    let s = SummaryIn { text, through };
    let p = plan(&m, &meta, &b, ContextPolicy::Summarise, Some(s));
    assert_eq!(p.outcome, Outcome::Fits);
    assert!(p.tokens <= 900 && estimate_messages(&p.messages) <= p.tokens);
    let t = texts(&p);
    assert!(t[0].starts_with(SYSTEM) && t[0].contains(text), "{}", t[0]);
    assert!(t[0].contains(&format!("the {} messages between it", p.summarised)));
    assert_eq!(t[1], FIRST);
    assert_eq!(t[2], "question 2", "pinned, in its place");
    assert_eq!(p.messages.last(), m.last(), "the latest turn");
    assert!(!t.contains(&"question 0") && !t.contains(&"answer 3"));
    // every message is either sent or summarised
    assert_eq!(p.messages.len() + p.summarised, m.len());
    // a tool result never goes without its call
    well_formed(&p.messages);
}

#[test]
fn a_summary_that_no_longer_covers_enough_asks_for_one_that_does() {
    let (m, meta) = conversation(14, 1200);
    let b = budget(900);
    let s = SummaryIn {
        text: "old",
        through: 6,
    };
    let p = plan(&m, &meta, &b, ContextPolicy::Summarise, Some(s));
    assert_eq!(p.outcome, Outcome::NeedsSummary);
    assert!(p.summarise_through.unwrap() > 6);
    // one beyond the current turn (another branch's) is not used
    let s = SummaryIn {
        text: "other branch",
        through: m.len() - 2,
    };
    let p = plan(&m, &meta, &b, ContextPolicy::Summarise, Some(s));
    assert_eq!(p.outcome, Outcome::NeedsSummary);
    assert!(!texts(&p)[0].contains("other branch"));
}

#[test]
fn dropping_the_oldest_keeps_the_first_message_and_says_so() {
    let (m, meta) = conversation(12, 1200);
    let p = plan(&m, &meta, &budget(900), ContextPolicy::DropOldest, None);
    assert_eq!(p.outcome, Outcome::Fits);
    assert!(p.dropped > 0 && p.summarised == 0);
    assert_eq!(p.messages.len() + p.dropped, m.len());
    let t = texts(&p);
    assert!(t[0].contains(&format!("The {} oldest messages", p.dropped)));
    assert_eq!(t[1], FIRST);
    assert_eq!(p.messages.last(), m.last());
    well_formed(&p.messages);
}

#[test]
fn asking_and_the_wrap_up_prompt() {
    // a turn that ends with a round of results, then the wrap-up prompt
    let (mut m, mut meta) = conversation(12, 1200);
    m.pop();
    meta.pop();
    m.push(Message::new(Role::System, "Answer now."));
    meta.push(Meta::default());
    assert_eq!(
        plan(&m, &meta, &budget(900), ContextPolicy::Ask, None).outcome,
        Outcome::Ask
    );
    let p = plan(&m, &meta, &budget(900), ContextPolicy::DropOldest, None);
    assert_eq!(texts(&p).last(), Some(&"Answer now."));
    // its last round's result is kept though a system message follows it
    let last_result = m.iter().rposition(|x| x.role == Role::Tool).unwrap();
    assert!(!p.stubbed.contains(&last_result));
}

/// Every tool message follows an assistant message with calls (or another tool message).
fn well_formed(messages: &[Message]) {
    for i in (0..messages.len()).filter(|&i| messages[i].role == Role::Tool) {
        let call = messages[..i].iter().rev().find(|x| x.role != Role::Tool);
        assert!(
            call.is_some_and(|c| c.role == Role::Assistant && !c.tool_calls.is_empty()),
            "result {i} without its call"
        );
    }
}

proptest! {
    /// Whatever the conversation, budget, policy, pins and summary: a plan that fits is within
    /// its budget; the system prompt, the first message, pinned messages and the current turn
    /// are sent whole; results keep their calls; every message is sent, a stub, summarised or
    /// left out, and said to be.
    #[test]
    fn a_plan_that_fits_keeps_what_must_be_kept(
        turns in 0usize..12,
        result in 0usize..3000,
        limit in 100usize..6000,
        policy in prop_oneof![Just(ContextPolicy::Summarise), Just(ContextPolicy::DropOldest), Just(ContextPolicy::Ask)],
        pins in proptest::collection::vec(any::<bool>(), 0..60),
        through in proptest::option::of(0usize..60),
    ) {
        let (m, mut meta) = conversation(turns, result);
        for (i, p) in pins.iter().enumerate().take(m.len()) {
            meta[i].pinned = *p && i % 3 == 0;
        }
        let summary = through.map(|through| SummaryIn { text: "summary", through });
        let p = plan(&m, &meta, &budget(limit), policy, summary);
        if p.outcome != Outcome::Fits {
            return Ok(());
        }
        prop_assert!(p.tokens <= limit);
        prop_assert!(estimate_messages(&p.messages) <= p.tokens);
        well_formed(&p.messages);
        prop_assert!(p.messages[0].content.starts_with(SYSTEM));
        prop_assert_eq!(&p.messages[1].content, FIRST);
        let sent: Vec<&str> = texts(&p);
        let cur = m.iter().rposition(|x| x.role == Role::User).unwrap();
        for (i, x) in m.iter().enumerate() {
            let whole = sent.contains(&x.content.as_str());
            if i >= 2 && (i >= cur && x.role != Role::Tool || meta[i].pinned) {
                prop_assert!(whole, "message {} is sent whole", i);
            }
        }
        prop_assert_eq!(p.messages.len() + p.summarised + p.dropped, m.len());
    }
}
