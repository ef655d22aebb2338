//! MCP host benchmarks (`cargo bench --bench mcp`):
//! - `tools_call`: one `tools/call` round trip through the host (routing, timeout, progress
//!   routes, result shaping) versus a bare rmcp client on the same server process kind.
//! - `start`: time for 1 and for 20 servers to be ready (they start in parallel): the built-in
//!   calculator (its small `switchboard-mcp` binary: `cargo build --release` builds it), and a
//!   "slow" one that needs 200 ms before it answers, as npx/uvx servers do (`slow-server.sh`);
//!   and the same without the host (bare rmcp clients each spawning the server).
//!
//! The server is the built-in calculator (`switchboard mcp-server calculator`).

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::json;
use switchboard_engine::mcp::{HostOptions, McpConfig, McpHost, ServerConfig};
use tokio_util::sync::CancellationToken;

fn bin() -> std::path::PathBuf {
    env!("CARGO_BIN_EXE_switchboard").into()
}

fn config(n: usize) -> McpConfig {
    let mut c = McpConfig::default();
    for i in 0..n {
        c.servers.insert(
            format!("calc{i}"),
            ServerConfig::new("switchboard", &["mcp-server", "calculator"]),
        );
    }
    c
}

/// The server that waits 200 ms before it can answer: its program and arguments.
fn slow_server() -> (&'static str, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/slow-server.sh");
    (script, bin().parent().unwrap().display().to_string())
}

/// `n` servers that each wait 200 ms before they can answer.
fn slow_config(n: usize) -> McpConfig {
    let (script, dir) = slow_server();
    let mut c = McpConfig::default();
    for i in 0..n {
        c.servers.insert(
            format!("slow{i}"),
            ServerConfig::new(script, &[dir.as_str()]),
        );
    }
    c
}

fn args() -> serde_json::Map<String, serde_json::Value> {
    json!({"a": 2, "b": 40}).as_object().unwrap().clone()
}

fn tools_call(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let host: Arc<McpHost> = rt.block_on(async {
        let h = McpHost::new(HostOptions::new(bin()));
        h.start_all(&config(1)).await;
        h
    });
    let bare = rt.block_on(async {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["mcp-server", "calculator"]);
        ().serve(TokioChildProcess::new(cmd).unwrap())
            .await
            .unwrap()
    });
    let none = CancellationToken::new();
    let mut g = c.benchmark_group("tools_call");
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("through the host", |b| {
        b.to_async(&rt).iter(|| async {
            let out = host.call_tool("calc0__add", args(), &none, None).await;
            assert_eq!(out.text, "42");
        })
    });
    g.bench_function("bare rmcp client", |b| {
        b.to_async(&rt).iter(|| async {
            let out = bare
                .call_tool(CallToolRequestParams::new("add").with_arguments(args()))
                .await
                .unwrap();
            assert!(out.is_error != Some(true));
        })
    });
    g.finish();
    rt.block_on(host.shutdown());
}

fn start(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut g = c.benchmark_group("start");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    assert!(
        bin().with_file_name("switchboard-mcp").is_file(),
        "build the small built-in server binary first: cargo build --release"
    );
    for (kind, make) in [
        ("built-in", config as fn(usize) -> McpConfig),
        ("slow (200 ms)", slow_config),
    ] {
        for n in [1usize, 20] {
            g.bench_function(format!("{n} {kind} servers ready"), |b| {
                // only the start is timed; shutting down is not
                b.to_async(&rt).iter_custom(|iters| async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let h = McpHost::new(HostOptions::new(bin()));
                        let cfg = make(n);
                        let t = std::time::Instant::now();
                        h.start_all(&cfg).await;
                        total += t.elapsed();
                        assert_eq!(h.tool_specs().len(), 6 * n);
                        h.shutdown().await;
                    }
                    total
                })
            });
        }
    }
    // the same starts without the host: `n` bare rmcp clients, each spawning the server (the
    // built-in binary, or the slow script) and listing its tools, all at once (what the machine
    // itself takes to start them)
    let small = bin().with_file_name("switchboard-mcp");
    let (script, dir) = slow_server();
    let kinds: [(&str, std::path::PathBuf, Vec<String>); 2] = [
        (
            "built-in",
            small,
            vec!["mcp-server".into(), "calculator".into()],
        ),
        ("slow (200 ms)", script.into(), vec![dir]),
    ];
    for (kind, program, argv) in kinds {
        for n in [1usize, 20] {
            g.bench_function(format!("{n} {kind} servers, bare rmcp clients"), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let (program, argv) = (program.clone(), argv.clone());
                    async move {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            let t = std::time::Instant::now();
                            let clients = futures::future::join_all((0..n).map(|_| {
                                let mut cmd = tokio::process::Command::new(&program);
                                cmd.args(&argv);
                                async move {
                                    let c =
                                        ().serve(TokioChildProcess::new(cmd).unwrap())
                                            .await
                                            .unwrap();
                                    assert_eq!(c.list_all_tools().await.unwrap().len(), 6);
                                    c
                                }
                            }))
                            .await;
                            total += t.elapsed();
                            for c in clients {
                                let _ = c.cancel().await;
                            }
                        }
                        total
                    }
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, tools_call, start);
criterion_main!(benches);
