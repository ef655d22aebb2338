//! Tasks across a kill of the app, in the real window, with the reference server as people run
//! it: server-everything over Streamable HTTP, started on its own (a separate process, bound to
//! 127.0.0.1), whose `simulate-research-query` runs as a task (2025-11-25 form) bound to the
//! server's HTTP session.

use fantoccini::Locator;
use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

/// The fake model: asked something, it calls the research tool; given a late result (the call
/// again, under a new id, and its result in the tool's role), it says whether it got the report;
/// after the first call's own result, "Done."
fn research_model(req: &Value) -> crate::support::fake_ollama::Reply {
    let last = last_message(req);
    let said = last["content"].as_str().unwrap_or_default();
    if last["role"] == "tool" && last["tool_call_id"] != "r" {
        let got = if said.contains("Research Report: rust") {
            "I have the report on rust now."
        } else {
            "Something came, but not the report."
        };
        Stream::new().text(got).done().reply()
    } else if last["role"] == "user" {
        Stream::new()
            .tool_calls(&[(
                "r",
                "everything__simulate-research-query",
                json!({"topic": "rust"}),
            )])
            .done()
            .reply()
    } else {
        Stream::new().text("Done.").done().reply()
    }
}

/// A fresh home whose only server is server-everything at `port` (Streamable HTTP); its calls
/// ask for approval (the default).
fn home(fake: &FakeOllama, port: u16) -> tempfile::TempDir {
    home_with_servers(
        json!({"llmUrl": fake.url}),
        vec![(
            "everything",
            switchboard_engine::mcp::ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
        )],
    )
}

/// Asks for the research, approves the call on its card, and kills the app (SIGKILL) as soon as
/// the card says the task runs on the server.
async fn approve_then_kill(home: &std::path::Path) {
    let App { c, driver } = App::launch_with_servers(home, 1).await;
    send(&c, "research rust").await;
    let allow = ".tool-card.awaiting .approval [data-action='allowOnce']";
    wait_css(&c, allow).await;
    click(&c, allow).await;
    wait_css(&c, ".tool-card.running[data-task='working']").await;
    assert!(text_content(&c, ".tool-card .card-task")
        .await
        .starts_with("Running as a task on the server"));
    App { c, driver }.kill().await;
}

/// The call is approved, the app is killed while the task runs, the app starts again on the same
/// profile and the chat is opened: the card says the task was resumed after a restart (with when
/// it started), finishes with the task's real result, and one click gives it to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_task_of_the_reference_server_survives_the_app_being_killed() {
    let (_server, port) = crate::support::everything_over_http("streamableHttp");
    let fake = FakeOllama::start().await;
    fake.set_responder(research_model);
    let home = home(&fake, port);
    approve_then_kill(home.path()).await;

    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    click(&c, "#conversation-list .conv").await;
    wait_css(&c, ".tool-card").await;
    wait_css(&c, ".tool-card.ok").await;
    assert!(
        text_content(&c, ".tool-card .result")
            .await
            .contains("Research Report: rust"),
        "the task's real result"
    );
    assert!(
        text_content(&c, ".tool-card .card-resumed")
            .await
            .starts_with("Resumed after a restart — started "),
        "{}",
        text_content(&c, ".tool-card .card-resumed").await
    );
    assert!(text_content(&c, ".tool-card .card-task")
        .await
        .starts_with("The task finished"));
    wait_css(&c, ".late-result").await;
    assert_eq!(
        text_content(&c, ".late-result [data-action='send-late-result']").await,
        "Send the result to the model"
    );
    screenshot(&c, "task-resumed-after-kill.png").await;
    click(&c, "[data-action='send-late-result']").await;
    wait_answer(&c, "the report on rust").await;
    // it went as the tool's result, never in the user's name
    let told = fake
        .chat_requests()
        .iter()
        .map(last_message)
        .find(|m| m["role"] == "tool" && m["tool_call_id"] != "r")
        .expect("the model was sent the late result");
    assert!(
        told["content"]
            .as_str()
            .is_some_and(|t| t.contains("Research Report: rust")),
        "{told}"
    );
    let users = user_messages(&c).await;
    assert_eq!(users, json!(["research rust"]), "{users}");
    assert!(
        c.find(Locator::Css(".late-result")).await.is_err(),
        "offered once"
    );
    c.close().await.unwrap();
}

/// The same with the server restarted too, so the session the task ran in is gone: the card says
/// the server ended the session and the task cannot be recovered, offers nothing (no result to
/// send), and the conversation is all there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_task_whose_server_restarted_too_says_it_cannot_be_recovered() {
    let (server, port) = crate::support::everything_over_http("streamableHttp");
    let fake = FakeOllama::start().await;
    fake.set_responder(research_model);
    let home = home(&fake, port);
    approve_then_kill(home.path()).await;
    drop(server);
    let _server = crate::support::everything_over_http_at("streamableHttp", port);

    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    click(&c, "#conversation-list .conv").await;
    wait_css(&c, ".tool-card.error").await;
    let line = text_content(&c, ".tool-card .card-task").await;
    assert!(
        line.starts_with(
            "The server ended the session this task ran in, so the task cannot be recovered"
        ),
        "{line}"
    );
    assert!(text_content(&c, ".tool-card .result")
        .await
        .contains("ended the session"),);
    assert!(text_content(&c, ".tool-card .card-resumed")
        .await
        .starts_with("Resumed after a restart"));
    screenshot(&c, "task-session-ended.png").await;
    // nothing to send, nothing that says otherwise
    assert!(c.find(Locator::Css(".late-result")).await.is_err());
    assert!(c.find(Locator::Css(".tool-card .card-stop")).await.is_err());
    let card = text_content(&c, ".tool-card").await;
    assert!(
        !card.contains("Send the result") && !card.contains("finished"),
        "{card}"
    );
    // the conversation is all there: the question and the card
    assert!(text_content(&c, ".msg.user .body")
        .await
        .contains("research rust"));
    assert_eq!(
        c.find_all(Locator::Css(".tool-card")).await.unwrap().len(),
        1
    );
    c.close().await.unwrap();
}
