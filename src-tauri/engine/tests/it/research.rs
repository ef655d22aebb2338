//! The built-in `research` server (arXiv), run by the host as in the app (sandboxed by default
//! where the kernel can), against a local stand-in for the arXiv API serving recorded answers:
//! results, retries on 503/429 and on a slow answer, giving up with a readable error, arXiv's
//! error feed, the 3 s between requests, and `extract_info` from the saved papers with the stand-in
//! stopped. Nothing here reaches the internet.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_engine::chat::approval::{need, Need};
use switchboard_engine::mcp::{McpConfig, McpHost, ServerConfig, ToolOutcome};
use tokio_util::sync::CancellationToken;

use crate::support::*;

/// The research server on `url`, its papers in `dir/papers-store`; `timing` as
/// `interval_ms,timeout_ms,backoff_ms` (None: the real defaults, 3 s between requests).
fn research(url: &str, dir: &Path, timing: Option<&str>) -> ServerConfig {
    let mut cfg = builtin("research");
    cfg.args.extend([
        "--arxiv-url".into(),
        url.into(),
        "--cache".into(),
        dir.join("papers-store").display().to_string(),
    ]);
    if let Some(t) = timing {
        cfg.env
            .insert("SWITCHBOARD_RESEARCH_TIMING".into(), t.into());
    }
    cfg
}

async fn host(dir: &Path, cfg: ServerConfig) -> Arc<McpHost> {
    let mut opts = host_options();
    opts.restart_base_delay = Duration::from_secs(30);
    opts.sandbox_dir = dir.join("private");
    let host = McpHost::new(opts);
    let mut config = McpConfig::default();
    config.servers.insert("research".into(), cfg);
    host.start_all(&config).await;
    host
}

async fn call(host: &McpHost, exposed: &str, args: Value) -> ToolOutcome {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    host.call_tool(exposed, args, &CancellationToken::new(), None)
        .await
}

/// Quick waits: 20 ms between requests, 700 ms per request, 20 ms first backoff.
const QUICK: &str = "20,700,20";

#[tokio::test]
async fn search_papers_returns_the_papers_and_keeps_them() {
    let arxiv = ArxivFixture::start().await;
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), research(&arxiv.url, dir.path(), Some(QUICK))).await;

    // sandboxed by default where the kernel can: the network, and its own folder to write in
    let view = host
        .servers()
        .into_iter()
        .find(|s| s.name == "research")
        .unwrap();
    if switchboard_engine::mcp::sandbox::kernel_abi() > 0 {
        let sb = view.sandbox.expect("sandboxed");
        assert!(sb.default && sb.network, "{sb:?}");
        assert_eq!(
            sb.own,
            vec![dir.path().join("papers-store").display().to_string()]
        );
    }

    // read-only but open-world: asked before it runs (unless the user allowed it)
    for tool in ["research__search_papers", "research__extract_info"] {
        let routed = host.route(tool).expect(tool);
        assert!(
            routed.read_only && routed.open_world && routed.trusted,
            "{routed:?}"
        );
        assert_eq!(need(None, &routed, false), Need::Ask);
    }

    let r = call(
        &host,
        "research__search_papers",
        json!({"topic": "attention transformers", "max_results": 2}),
    )
    .await;
    assert!(!r.is_error, "{r:?}");
    for want in [
        "2 of 2 arXiv papers on \"attention transformers\"",
        "[1706.03762v7] Attention Is All You Need",
        "Authors: Ashish Vaswani, Noam Shazeer, Niki Parmar",
        "Published: 2017-06-12",
        "PDF: http://arxiv.org/pdf/1706.03762v7",
        "Summary: The dominant sequence transduction models",
        "[hep-ex/0307015v1] Multi-Electron Production at High Transverse Momenta in ep Collisions at HERA",
    ] {
        assert!(r.text.contains(want), "{want:?} in {}", r.text);
    }
    let asked = arxiv.requests();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].starts_with(
            "/api/query?search_query=all%3Aattention+AND+all%3Atransformers&start=0&max_results=2"
        ),
        "{asked:?}"
    );
    let store = dir.path().join("papers-store");
    assert!(store.join("papers/1706.03762.json").is_file());
    assert!(store.join("papers/hep-ex_0307015.json").is_file());

    // the same topic again today: from the folder, arXiv is not asked
    let again = call(
        &host,
        "research__search_papers",
        json!({"topic": "Attention  transformers", "max_results": "1"}),
    )
    .await;
    assert!(
        !again.is_error && again.text.contains("(saved earlier today)"),
        "{again:?}"
    );
    assert_eq!(arxiv.requests().len(), 1);

    // no match is an answer, not an error
    arxiv.script(vec![ArxivReply::recorded("empty.xml")]);
    let none = call(
        &host,
        "research__search_papers",
        json!({"topic": "zzqxjvkwpt"}),
    )
    .await;
    assert_eq!(
        (none.is_error, none.text.as_str()),
        (false, "No arXiv papers match \"zzqxjvkwpt\".")
    );
    host.shutdown().await;
    arxiv.stop().await;
}

#[tokio::test]
async fn a_503_and_a_plain_text_429_are_retried_with_backoff_then_it_answers() {
    let arxiv = ArxivFixture::start().await;
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), research(&arxiv.url, dir.path(), Some(QUICK))).await;
    arxiv.script(vec![
        ArxivReply::new(503, "Service Unavailable"),
        ArxivReply::new(429, "Rate exceeded.").header("Retry-After", "1"),
    ]);
    let r = call(
        &host,
        "research__search_papers",
        json!({"topic": "attention"}),
    )
    .await;
    assert!(
        !r.is_error && r.text.contains("Attention Is All You Need"),
        "{r:?}"
    );
    let t = arxiv.times();
    assert_eq!(t.len(), 3);
    // backoff (20 ms, then Retry-After's 1 s honoured)
    assert!(
        t[1] - t[0] >= Duration::from_millis(20),
        "{:?}",
        t[1] - t[0]
    );
    assert!(t[2] - t[1] >= Duration::from_secs(1), "{:?}", t[2] - t[1]);
    host.shutdown().await;
    arxiv.stop().await;
}

#[tokio::test]
async fn a_slow_answer_times_out_and_is_retried() {
    let arxiv = ArxivFixture::start().await;
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), research(&arxiv.url, dir.path(), Some(QUICK))).await;
    arxiv.script(vec![
        ArxivReply::recorded("two_results.xml").delayed(Duration::from_secs(60))
    ]);
    let began = std::time::Instant::now();
    let r = call(
        &host,
        "research__search_papers",
        json!({"topic": "attention"}),
    )
    .await;
    assert!(
        !r.is_error && r.text.contains("Attention Is All You Need"),
        "{r:?}"
    );
    assert_eq!(arxiv.requests().len(), 2);
    // it did not wait for the slow one (60 s: far past anything a busy machine adds)
    assert!(
        began.elapsed() < Duration::from_secs(60),
        "{:?}",
        began.elapsed()
    );
    host.shutdown().await;
    arxiv.stop().await;
}

#[tokio::test]
async fn it_gives_up_with_an_error_the_model_can_read() {
    let arxiv = ArxivFixture::start().await;
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), research(&arxiv.url, dir.path(), Some(QUICK))).await;

    // overloaded every time: the first try and 3 retries, then a clear error
    arxiv.script((0..4).map(|_| ArxivReply::new(503, "busy")).collect());
    let r = call(&host, "research__search_papers", json!({"topic": "a"})).await;
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text
            .contains("arXiv is unavailable (HTTP 503; 4 attempts"),
        "{}",
        r.text
    );
    assert_eq!(arxiv.requests().len(), 4);

    arxiv.script(
        (0..4)
            .map(|_| ArxivReply::new(429, "Rate exceeded."))
            .collect(),
    );
    let r = call(&host, "research__search_papers", json!({"topic": "b"})).await;
    assert!(
        r.is_error && r.text.contains("arXiv is rate-limiting requests"),
        "{r:?}"
    );
    assert!(r.text.contains("Try again in a minute"), "{}", r.text);

    // slow every time
    arxiv.script(
        (0..4)
            .map(|_| ArxivReply::recorded("empty.xml").delayed(Duration::from_secs(60)))
            .collect(),
    );
    let r = call(&host, "research__search_papers", json!({"topic": "c"})).await;
    assert!(
        r.is_error && r.text.contains("did not answer in time"),
        "{r:?}"
    );

    // arXiv's error feed: the query is wrong, retrying cannot help
    let before = arxiv.requests().len();
    arxiv.script(vec![ArxivReply::new(400, arxiv_fixture("error.xml"))]);
    let r = call(
        &host,
        "research__extract_info",
        json!({"paper_id": "1234.12345"}),
    )
    .await;
    assert!(r.is_error, "{r:?}");
    assert_eq!(
        r.text,
        "arXiv refused the query: incorrect id format for 1234.12345."
    );
    assert_eq!(arxiv.requests().len(), before + 1);
    assert!(
        arxiv.requests()[before].contains("id_list=1234.12345"),
        "{:?}",
        arxiv.requests()
    );

    // a malformed feed
    arxiv.script(vec![ArxivReply::new(200, arxiv_fixture("malformed.xml"))]);
    let r = call(&host, "research__search_papers", json!({"topic": "d"})).await;
    assert!(
        r.is_error && r.text.contains("not a readable Atom feed"),
        "{r:?}"
    );
    host.shutdown().await;
    arxiv.stop().await;
}

#[tokio::test]
async fn requests_are_at_least_three_seconds_apart() {
    let arxiv = ArxivFixture::start().await;
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), research(&arxiv.url, dir.path(), None)).await;
    for topic in ["one", "two"] {
        let r = call(&host, "research__search_papers", json!({"topic": topic})).await;
        assert!(!r.is_error, "{r:?}");
    }
    let t = arxiv.times();
    assert_eq!(t.len(), 2);
    assert!(t[1] - t[0] >= Duration::from_secs(3), "{:?}", t[1] - t[0]);
    host.shutdown().await;
    arxiv.stop().await;
}

#[tokio::test]
async fn extract_info_answers_from_the_saved_papers_with_arxiv_gone() {
    let arxiv = ArxivFixture::start().await;
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), research(&arxiv.url, dir.path(), Some(QUICK))).await;
    let r = call(
        &host,
        "research__search_papers",
        json!({"topic": "attention"}),
    )
    .await;
    assert!(!r.is_error, "{r:?}");
    // one it has not seen is fetched by id (and saved)
    arxiv.script(vec![ArxivReply::new(
        200,
        arxiv_fixture("two_results.xml").replace("1706.03762", "2101.00001"),
    )]);
    let r = call(
        &host,
        "research__extract_info",
        json!({"paper_id": "arXiv:2101.00001"}),
    )
    .await;
    assert!(
        !r.is_error && r.text.starts_with("[2101.00001v7] "),
        "{r:?}"
    );
    assert!(!r.text.contains("saved earlier"), "{}", r.text);
    assert!(
        arxiv.requests()[1].contains("id_list=2101.00001"),
        "{:?}",
        arxiv.requests()
    );
    arxiv.stop().await;

    for id in ["1706.03762", "https://arxiv.org/abs/1706.03762v7"] {
        let r = call(&host, "research__extract_info", json!({"paper_id": id})).await;
        assert!(!r.is_error, "{r:?}");
        for want in [
            "[1706.03762v7] Attention Is All You Need",
            "Authors: Ashish Vaswani, Noam Shazeer, Niki Parmar",
            "Published: 2017-06-12 (this version: 2023-08-02)",
            "Category: cs.CL",
            "PDF: http://arxiv.org/pdf/1706.03762v7",
            "Comment: 15 pages, 5 figures",
            "(from the papers saved earlier)",
        ] {
            assert!(r.text.contains(want), "{want:?} in {}", r.text);
        }
    }
    let r = call(
        &host,
        "research__extract_info",
        json!({"paper_id": "hep-ex/0307015"}),
    )
    .await;
    assert!(
        !r.is_error && r.text.contains("DOI: 10.1140/epjc/s2003-01326-x"),
        "{r:?}"
    );
    let r = call(
        &host,
        "research__extract_info",
        json!({"paper_id": "2101.00001v7"}),
    )
    .await;
    assert!(
        !r.is_error && r.text.contains("(from the papers saved earlier)"),
        "{r:?}"
    );

    // one never found: arXiv is gone, and the error says both
    let r = call(
        &host,
        "research__extract_info",
        json!({"paper_id": "2202.00002"}),
    )
    .await;
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text
            .contains("Paper 2202.00002 is not among the papers saved earlier")
            && r.text.contains("arXiv could not be reached"),
        "{}",
        r.text
    );
    host.shutdown().await;
}
