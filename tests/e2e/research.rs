//! The built-in research server in the window: on a fresh install, the model searches arXiv (a
//! local stand-in serving recorded answers), the card shows the papers, and a second turn's
//! `extract_info` answers from the papers saved earlier with the stand-in gone.

use serde_json::{json, Value};

use crate::app::*;
use crate::support::arxiv::ArxivFixture;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn papers_found_on_arxiv_show_on_the_card_and_their_details_come_from_the_cache_offline() {
    let arxiv = ArxivFixture::start().await;
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            return Stream::new()
                .text("From arXiv: ")
                .text(last["content"].as_str().unwrap_or_default())
                .done()
                .reply();
        }
        let text = last["content"].as_str().unwrap_or_default();
        if text.contains("details") {
            Stream::new()
                .tool_call(
                    "r2",
                    "research__extract_info",
                    json!({"paper_id": "1706.03762"}),
                )
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call(
                    "r1",
                    "research__search_papers",
                    json!({"topic": "attention", "max_results": 2}),
                )
                .done()
                .reply()
        }
    });
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url}).to_string(),
    )
    .unwrap();
    // a fresh install: no mcp.json, the three built-ins
    let App { c, driver: _driver } =
        App::launch_with_env(home.path(), &[("SWITCHBOARD_ARXIV_URL", &arxiv.url)]).await;
    wait_servers(&c, 3).await;

    // it reaches the internet: asked before it runs
    send(&c, "find papers on attention").await;
    wait_css(&c, ".tool-card.awaiting .approval").await;
    let question = text_content(&c, ".approval").await;
    assert!(question.contains("research › search_papers"), "{question}");
    click(&c, ".approval [data-action='allowOnce']").await;
    wait_css(&c, ".tool-card.ok").await;
    let result = text_content(&c, ".tool-card.ok .result").await;
    for want in [
        "[1706.03762v7] Attention Is All You Need",
        "Authors: Ashish Vaswani, Noam Shazeer, Niki Parmar",
        "Published: 2017-06-12",
        "PDF: http://arxiv.org/pdf/1706.03762v7",
        "[hep-ex/0307015v1] Multi-Electron Production",
    ] {
        assert!(result.contains(want), "{want:?} in {result}");
    }
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('From arXiv')",
    )
    .await;
    assert_eq!(arxiv.requests().len(), 1);
    screenshot(&c, "research.png").await;

    // arXiv is gone; the details come from the papers saved in the first turn
    arxiv.stop().await;
    send(&c, "details of the first one").await;
    wait_css(&c, ".tool-card.awaiting .approval").await;
    click(&c, ".approval [data-action='allowOnce']").await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.ok').length === 2",
    )
    .await;
    let details = c
        .execute(
            "const r = document.querySelectorAll('.tool-card.ok .result'); return r[r.length - 1].textContent;",
            vec![],
        )
        .await
        .unwrap();
    let details = details.as_str().unwrap_or_default();
    for want in [
        "[1706.03762v7] Attention Is All You Need",
        "Category: cs.CL",
        "Comment: 15 pages, 5 figures",
        "(from the papers saved earlier)",
    ] {
        assert!(details.contains(want), "{want:?} in {details}");
    }
    c.close().await.unwrap();
}
