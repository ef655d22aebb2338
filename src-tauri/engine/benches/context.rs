//! Planning a request of a long conversation (`cargo bench -p switchboard-engine --bench context`):
//! 1,000 messages (250 turns of a question, a call, its 2 KB result and a 300-byte answer) for a
//! model with an 8k context, every message estimated and the request put together. Three cases:
//! older results as stubs are enough; the stored summary stands for the older turns; a summary
//! reaching further is needed (the plan says so). The target (issue 37): under 5 ms.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use switchboard_engine::chat::budget::estimate_messages;
use switchboard_engine::chat::context::{budget, plan, Meta, Outcome, SummaryIn};
use switchboard_engine::llm::{Message, Role, ToolCall};
use switchboard_engine::store::ContextPolicy;

fn conversation(turns: usize) -> (Vec<Message>, Vec<Meta>) {
    let mut m = vec![
        Message::new(Role::System, "You are a helpful assistant in Switchboard."),
        Message::new(Role::User, "Read my notes one by one and keep a tally."),
    ];
    for t in 0..turns {
        let mut asked = Message::new(Role::Assistant, "");
        asked.tool_calls = vec![ToolCall {
            id: Some(format!("c{t}")),
            name: "files__read_file".into(),
            arguments: json!({"path": format!("notes/{t}.txt")}),
            written: None,
        }];
        let mut result = Message::new(
            Role::Tool,
            format!("note {t}: ") + &"some text, ".repeat(186),
        );
        result.tool_name = Some("files__read_file".into());
        result.tool_call_id = Some(format!("c{t}"));
        m.extend([
            Message::new(Role::User, format!("Now note {t}, please.")),
            asked,
            result,
            Message::new(
                Role::Assistant,
                format!("Note {t} adds one. ") + &"So far so good. ".repeat(18),
            ),
        ]);
    }
    m.truncate(1000);
    let meta = (0..m.len())
        .map(|i| Meta {
            id: Some(i as i64),
            pinned: i % 97 == 0,
        })
        .collect();
    (m, meta)
}

fn bench(c: &mut Criterion) {
    let (m, meta) = conversation(250);
    assert_eq!(m.len(), 1000);
    let total = estimate_messages(&m);
    let mut g = c.benchmark_group("plan_1000_messages");
    // stubs are enough: a context just big enough for every turn with its result as a stub
    let roomy = budget((total / 3) * 4 / 3, 1.0, 300);
    let p = plan(&m, &meta, &roomy, ContextPolicy::Summarise, None);
    assert!(p.outcome == Outcome::Fits && !p.stubbed.is_empty() && p.summarised == 0);
    g.bench_function("stubs", |b| {
        b.iter(|| plan(black_box(&m), &meta, &roomy, ContextPolicy::Summarise, None))
    });
    // an 8k context: the stored summary stands for all but the newest turns
    let small = budget(8192, 1.0, 300);
    let through = m.len() - 40;
    let summary = "The user is reading notes one by one; each adds one. ".repeat(20);
    let s = SummaryIn {
        text: &summary,
        through,
    };
    let p = plan(&m, &meta, &small, ContextPolicy::Summarise, Some(s));
    assert!(
        p.outcome == Outcome::Fits && p.summarised > 900,
        "{:?}",
        p.outcome
    );
    g.bench_function("summary", |b| {
        b.iter(|| {
            plan(
                black_box(&m),
                &meta,
                &small,
                ContextPolicy::Summarise,
                Some(s),
            )
        })
    });
    // no summary yet: the plan says which one is needed
    let p = plan(&m, &meta, &small, ContextPolicy::Summarise, None);
    assert_eq!(p.outcome, Outcome::NeedsSummary);
    g.bench_function("needs_summary", |b| {
        b.iter(|| plan(black_box(&m), &meta, &small, ContextPolicy::Summarise, None))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
