//! Conversation store benchmarks (`cargo bench --bench store`), on a database of 1,000,000
//! generated messages in 10,000 conversations plus one conversation of 10,000 messages:
//! - full-text search: the p95 of 200 queries (common words, rare words, two-word queries,
//!   words only in tool results), target < 50 ms;
//! - opening the 10,000-message conversation to its first page (the outline of its branch, the
//!   rows of the last page and the view model the window renders from), target < 50 ms; and all
//!   of it;
//! - insert throughput (messages appended one by one, each its own transaction, FTS included).
//!
//! The database is generated once into target/bench-store/ (about a minute) and reused.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use switchboard_engine::chat::view::{conversation_page, open_page, PAGE};
use switchboard_engine::llm::{Message, Role};
use switchboard_engine::store::exchange::{
    ExportedConversation, ExportedMessage, ExportedToolCall,
};
use switchboard_engine::store::{Approval, MessageStatus, Store, ToolCallStatus};

const CONVERSATIONS: usize = 10_000;
const PER_CONVERSATION: usize = 100;
const LONG: usize = 10_000;

/// A small deterministic generator (xorshift), so every run builds the same database.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// 4,000 made-up words; word i is drawn with probability ~ 1/(i+1) (Zipf-like, as in text).
fn vocabulary() -> Vec<String> {
    let syll = [
        "ka", "lo", "mi", "ten", "ra", "su", "vel", "do", "pi", "ar", "en", "tor", "qu", "ix",
        "ban", "el",
    ];
    let mut r = Rng(7);
    (0..4000)
        .map(|_| {
            (0..2 + r.below(3))
                .map(|_| syll[r.below(syll.len())])
                .collect()
        })
        .collect()
}

fn sentence(r: &mut Rng, words: &[String], n: usize) -> String {
    (0..n)
        .map(|_| {
            // Zipf-like: pick a rank from a skewed distribution
            let x = r.below(1_000_000) as f64 / 1_000_000.0;
            let rank = ((words.len() as f64).powf(x) - 1.0) as usize;
            words[rank.min(words.len() - 1)].as_str()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One generated conversation: user/assistant turns, every fifth reply with a tool call whose
/// result carries a word ("toolonly…") that appears nowhere else.
fn conversation(r: &mut Rng, words: &[String], n: usize, title: String) -> ExportedConversation {
    let mut messages = Vec::with_capacity(n);
    let mut tool_calls = Vec::new();
    let mut i = 0;
    while messages.len() < n {
        let id = messages.len() as i64 + 1;
        let parent = (id > 1).then(|| id - 1);
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        let mut content = sentence(r, words, if role == Role::User { 12 } else { 40 });
        if role == Role::Assistant && i % 10 == 1 && messages.len() + 2 < n {
            tool_calls.push(ExportedToolCall {
                message: id,
                result_message: Some(id + 1),
                call_id: None,
                name: "calculator__add".into(),
                server: "calculator".into(),
                tool: "add".into(),
                arguments: json!({"a": r.below(100), "b": r.below(100)}),
                result: Some(format!(
                    "toolonly{} {}",
                    r.below(5000),
                    sentence(r, words, 8)
                )),
                result_raw: None,
                is_error: false,
                status: ToolCallStatus::Done,
                started_at: 0,
                duration_ms: Some(3),
                approval: Some(Approval::ReadOnly),
                arguments_edited: false,
                written: None,
            });
            content.clear();
            messages.push(msg(id, parent, Role::Assistant, content));
            messages.push(msg(id + 1, Some(id), Role::Tool, "result".into()));
            i += 1;
            continue;
        }
        messages.push(msg(id, parent, role, content));
        i += 1;
    }
    ExportedConversation {
        updated_at: r.below(1_000_000_000) as i64,
        ..ExportedConversation::new(title, "llama3.2", messages, tool_calls)
    }
}

fn msg(id: i64, parent: Option<i64>, role: Role, content: String) -> ExportedMessage {
    ExportedMessage::text(id, parent, role, content)
}

/// The database (built on first use) and the id of the long conversation.
async fn database() -> (Store, i64) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-store");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "store-v2-{CONVERSATIONS}x{PER_CONVERSATION}+{LONG}.sqlite3"
    ));
    let fresh = !path.exists();
    let store = Store::open(&path).await.unwrap();
    let list = store.list_conversations().await.unwrap();
    if !fresh && list.len() == CONVERSATIONS + 1 {
        let long = list.iter().find(|c| c.title == "the long one").unwrap().id;
        return (store, long);
    }
    drop(store);
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).await.unwrap();
    let words = vocabulary();
    let mut r = Rng(42);
    let t = Instant::now();
    for i in 0..CONVERSATIONS {
        let c = conversation(&mut r, &words, PER_CONVERSATION, format!("chat {i}"));
        store.import_json(&c, None).await.unwrap();
    }
    let long = conversation(&mut r, &words, LONG, "the long one".into());
    let id = store.import_json(&long, None).await.unwrap();
    eprintln!(
        "built {} messages in {} conversations in {:.0} s",
        CONVERSATIONS * PER_CONVERSATION + LONG,
        CONVERSATIONS + 1,
        t.elapsed().as_secs_f64()
    );
    (store, id)
}

fn p95(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d[(d.len() as f64 * 0.95).ceil() as usize - 1]
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (store, long) = rt.block_on(database());
    let words = vocabulary();

    // 200 queries of four kinds; their p95 against the target
    let mut r = Rng(99);
    let queries: Vec<String> = (0..200)
        .map(|i| match i % 4 {
            0 => words[r.below(20)].clone(),          // very common
            1 => words[1000 + r.below(3000)].clone(), // rare
            2 => format!("{} {}", words[r.below(200)], words[r.below(200)]),
            _ => format!("toolonly{}", r.below(5000)), // only in tool results
        })
        .collect();
    let times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            let hits = rt.block_on(store.search(q, 100)).unwrap();
            std::hint::black_box(hits);
            t.elapsed()
        })
        .collect();
    eprintln!(
        "search: p95 of {} queries = {:.1} ms (target < 50 ms)",
        times.len(),
        p95(times).as_secs_f64() * 1000.0
    );

    let mut g = c.benchmark_group("store");
    g.sample_size(20);
    g.bench_function("search, common word", |b| {
        b.to_async(&rt).iter(|| store.search(&words[3], 100))
    });
    g.bench_function("search, word only in tool results", |b| {
        b.to_async(&rt).iter(|| store.search("toolonly1234", 100))
    });
    // what the window asks for when it opens the conversation: its last page
    let open = || async { open_page(&store, long, None, PAGE).await.unwrap() };
    let first = rt.block_on(open());
    assert_eq!(first.items.len(), PAGE);
    assert!(first.earlier > 5000);
    // the same page as laying out the conversation read whole
    let read_whole = rt.block_on(store.conversation(long)).unwrap();
    assert_eq!(
        serde_json::to_value(&first).unwrap(),
        serde_json::to_value(conversation_page(&read_whole, None, PAGE)).unwrap()
    );
    g.bench_function("open the 10,000-message conversation (first page)", |b| {
        b.to_async(&rt).iter(open)
    });
    // "Show earlier messages": every item
    let whole = || async { open_page(&store, long, None, usize::MAX).await.unwrap() };
    g.bench_function("the whole 10,000-message conversation (every item)", |b| {
        b.to_async(&rt).iter(whole)
    });
    g.finish();

    // insert throughput: one by one, each its own transaction, FTS triggers included
    let id = rt
        .block_on(store.create_conversation("inserts", "m"))
        .unwrap();
    let n = 2000;
    let t = Instant::now();
    rt.block_on(async {
        for i in 0..n {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            store
                .append_message(
                    id,
                    &Message::new(role, sentence(&mut r, &words, 30)),
                    MessageStatus::Complete,
                )
                .await
                .unwrap();
        }
    });
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "insert: {n} messages in {:.2} s = {:.0} messages/s",
        secs,
        n as f64 / secs
    );
    rt.block_on(store.delete_conversation(id)).unwrap();
}

criterion_group!(store_benches, benches);
criterion_main!(store_benches);
