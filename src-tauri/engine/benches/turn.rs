//! What a tool call costs inside a turn (`cargo bench -p switchboard-engine --bench turn`): the
//! real chat loop on the scripted fake LLM (Ollama's NDJSON, over HTTP), the built-in calculator
//! (`switchboard-mcp`, a real process) and a store on disk, as the app runs them.
//! - a turn whose reply asks for 200 calls (then answers), against the same turn with one call
//!   (the same two requests to the model): the difference over 199 is what one call adds;
//! - the bare pipe: 200 `tools/call`s to the same server with a plain rmcp client, one after
//!   the other, and 200 four at a time (as a round runs its calls).
//!
//! The target (issue 14): a call inside a turn costs at most 1 ms more than the bare pipe.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use switchboard_engine::{ChatEngine, TurnRequest};
use tokio_util::sync::CancellationToken;

// the engine's integration-test rig: the fake LLM, the calculator process, a store on disk
#[path = "../tests/it/support/mod.rs"]
#[allow(unused_imports)]
mod support;
use support::fake_ollama::{last_message, Stream};
use support::{builtin, builtin_bin, rig};

const CALLS: usize = 200;

/// The fake model: when the user speaks, `calls` calls to the calculator (each its own
/// arguments, so the loop guard does not stop them); once it has the results, an answer.
fn model(calls: usize) -> impl Fn(&Value) -> support::fake_ollama::Reply + Send + Sync + 'static {
    move |req: &Value| {
        if last_message(req)["role"] == "user" {
            let calls: Vec<(String, Value)> = (0..calls)
                .map(|i| (format!("c{i}"), json!({"a": i, "b": 1})))
                .collect();
            Stream::new()
                .tool_calls(
                    &calls
                        .iter()
                        .map(|(id, a)| (id.as_str(), "calculator__add", a.clone()))
                        .collect::<Vec<_>>(),
                )
                .done()
                .reply()
        } else {
            Stream::new().text("All done.").done().reply()
        }
    }
}

/// One turn in a new conversation; checks that it ran `calls` calls and answered.
async fn turn(engine: &ChatEngine, calls: usize) {
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let emit = |e: switchboard_engine::ChatEvent| {
        if let switchboard_engine::ChatEvent::ToolCallFinished { is_error, .. } = e {
            assert!(!is_error, "a call failed");
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let req = TurnRequest {
        model: support::fake_ollama::MODEL.into(),
        text: "add them".into(),
        ..Default::default()
    };
    let s = engine
        .run_turn(req, &emit, CancellationToken::new())
        .await
        .unwrap();
    assert!(!s.limit_reached);
    assert_eq!(ran.into_inner(), calls);
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let r = rt.block_on(rig(vec![("calculator", builtin("calculator"))]));
    // one engine, as the app keeps one (its LLM client holds the connection pool)
    let engine = r.engine(5);
    let mut g = c.benchmark_group("turn");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    // every sample's time per turn; the report uses their medians
    let mut per_turn: [Vec<Duration>; 2] = Default::default();
    for (k, calls) in [1, CALLS].into_iter().enumerate() {
        r.fake.set_responder(model(calls));
        rt.block_on(turn(&engine, calls));
        g.bench_function(format!("a turn with {calls} calculator calls"), |b| {
            b.iter_custom(|n| {
                let t = Instant::now();
                for _ in 0..n {
                    rt.block_on(turn(&engine, calls));
                }
                let d = t.elapsed();
                per_turn[k].push(d / n as u32);
                d
            })
        });
    }

    // the bare pipe: the same server process kind, a plain rmcp client
    let client = rt.block_on(async {
        let mut cmd = tokio::process::Command::new(builtin_bin());
        cmd.args(["mcp-server", "calculator"]);
        ().serve(TokioChildProcess::new(cmd).unwrap())
            .await
            .unwrap()
    });
    let call = |i: usize| {
        let args = json!({"a": i, "b": 1}).as_object().unwrap().clone();
        client.call_tool(CallToolRequestParams::new("add").with_arguments(args))
    };
    let mut bare: [Vec<Duration>; 2] = Default::default();
    g.bench_function(format!("bare pipe, {CALLS} calls one by one"), |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                rt.block_on(async {
                    for i in 0..CALLS {
                        call(i).await.unwrap();
                    }
                });
            }
            let d = t.elapsed();
            bare[0].push(d / n as u32);
            d
        })
    });
    g.bench_function(format!("bare pipe, {CALLS} calls four at a time"), |b| {
        use futures::StreamExt;
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                rt.block_on(async {
                    futures::stream::iter(0..CALLS)
                        .map(call)
                        .buffer_unordered(4)
                        .for_each(|r| async move {
                            r.unwrap();
                        })
                        .await
                });
            }
            let d = t.elapsed();
            bare[1].push(d / n as u32);
            d
        })
    });
    g.finish();
    let ms = |d: &mut Vec<Duration>| {
        d.sort();
        d[d.len() / 2].as_secs_f64() * 1000.0
    };
    let [one, many] = &mut per_turn;
    let [by_one, by_four] = &mut bare;
    let in_turn = (ms(many) - ms(one)) / (CALLS - 1) as f64;
    eprintln!(
        "one call inside a turn: {in_turn:.3} ms; the bare pipe: {:.3} ms one by one, {:.3} ms four \
         at a time; over the bare pipe (four at a time, as a round runs them): {:.3} ms (target <= 1 ms)",
        ms(by_one) / CALLS as f64,
        ms(by_four) / CALLS as f64,
        in_turn - ms(by_four) / CALLS as f64,
    );
    rt.block_on(client.cancel()).ok();
}

criterion_group!(benches, bench);
criterion_main!(benches);
