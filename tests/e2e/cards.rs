//! What a tool call's card shows and asks: rich content, progress and Stop, a server's form, sampling.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn images_resource_links_and_structured_content_show_on_the_card() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        if last_message(req)["role"] == "tool" {
            Stream::new().text("Here they are.").done().reply()
        } else {
            Stream::new()
                .tool_calls(&[
                    ("i", "everything__get-tiny-image", json!({})),
                    (
                        "s",
                        "everything__get-structured-content",
                        json!({"location": "Chicago"}),
                    ),
                    ("l", "everything__get-resource-links", json!({"count": 2})),
                ])
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__get-tiny-image": "allow", "everything__get-structured-content": "allow",
        "everything__get-resource-links": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "show me things").await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.ok').length === 3",
    )
    .await;
    wait_until(
        &c,
        "document.querySelector('.result-image')?.naturalWidth > 0",
    )
    .await;
    let src = c
        .execute(
            "return document.querySelector('.result-image').getAttribute('src').slice(0, 22);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(src, json!("data:image/png;base64,"));
    let structured = text_content(&c, ".structured").await;
    let structured: Value = serde_json::from_str(&structured).unwrap();
    assert!(structured.is_object(), "{structured}");
    let links = c
        .execute(
            "return document.querySelectorAll('.result-link').length;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(links, json!(2));
    c.execute(
        "document.querySelectorAll('.tool-card').forEach((d) => d.open = true);",
        vec![],
    )
    .await
    .unwrap();
    screenshot(&c, "rich-content.png").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_long_tool_call_shows_progress_and_its_stop_button_cancels_it() {
    let fake = FakeOllama::start().await;
    fake.set_responder(crate::support::fake_ollama::call_then_say(
        "long",
        "everything__trigger-long-running-operation",
        json!({"duration": 60, "steps": 60}),
        "Noted: ",
    ));
    let allow = json!({"everything__trigger-long-running-operation": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "run the long thing").await;
    wait_until(
        &c,
        "document.querySelector('.tool-card.running .card-progress progress')?.value >= 2",
    )
    .await;
    let shown = text_content(&c, ".card-progress-text").await;
    assert!(shown.ends_with('%'), "{shown}");
    screenshot(&c, "progress.png").await;
    let t = Instant::now();
    click(&c, ".tool-card.running .card-stop").await;
    wait_css(&c, ".tool-card.error").await;
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(text_content(&c, ".tool-card .result")
        .await
        .contains("cancelled by the user"));
    // the turn went on: the model answered after the cancel
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Noted')",
    )
    .await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_server_asks_for_input_with_a_form_built_from_its_schema() {
    let fake = FakeOllama::start().await;
    fake.set_responder(crate::support::fake_ollama::call_then_say(
        "e",
        "everything__trigger-elicitation-request",
        json!({}),
        "The server said: ",
    ));
    let allow = json!({"everything__trigger-elicitation-request": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "ask me things").await;
    wait_css(&c, ".tool-card .elicitation").await;
    // the form follows the schema: types, defaults, choices
    let kinds = c
        .execute(
            "const f = document.querySelector('.elicitation');
             const q = (n, s) => f.querySelector(`[data-name=${n}] ${s}`);
             return { email: q('email', 'input')?.type, date: q('birthdate', 'input')?.type, int: q('integer', 'input')?.value,
                      check: q('check', 'input')?.type, hero: q('titledSingleSelectEnum', 'select')?.selectedOptions[0]?.textContent,
                      multi: f.querySelectorAll('[data-name=untitledMultipleSelectEnum] input[type=checkbox]').length };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        kinds,
        json!({"email": "email", "date": "date", "int": "42", "check": "checkbox", "hero": "Superman", "multi": 5})
    );
    // the form ignores keys for its first moments (keys typed for the composer must not fill it)
    wait_css(&c, ".elicitation:not(.fresh)").await;
    type_in_form(&c, "name", "Grace Hopper").await;
    screenshot(&c, "elicitation.png").await;
    send_form_until_answered(&c, "Grace Hopper").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_server_uses_the_model_only_after_the_user_says_yes() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if req["messages"][0]["content"] == "You are a helpful test server." {
            Stream::new().text("Cobalt blue.").done().reply()
        } else if last["role"] == "tool" {
            Stream::new()
                .text("The server got: ")
                .text(last["content"].as_str().unwrap())
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call(
                    "s",
                    "everything__trigger-sampling-request",
                    json!({"prompt": "name a colour"}),
                )
                .done()
                .reply()
        }
    });
    let allow = json!({"everything__trigger-sampling-request": "allow"});
    let (_home, _driver, c) =
        launch_with_everything(json!({"llmUrl": fake.url, "toolPolicies": allow})).await;
    send(&c, "let the server ask").await;
    wait_css(&c, ".tool-card .sampling").await;
    // the request is shown before anything goes to the model
    let shown = text_content(&c, ".tool-card .sampling").await;
    assert!(shown.contains("everything"), "{shown}");
    assert!(shown.contains("name a colour"), "{shown}");
    assert!(shown.contains("You are a helpful test server."), "{shown}");
    assert!(!fake
        .chat_requests()
        .iter()
        .any(|q| q["messages"][0]["content"] == "You are a helpful test server."));
    click(&c, ".sampling [data-action=allow-sampling]").await;
    wait_css(&c, ".sampling-reply").await;
    assert_eq!(text_content(&c, ".sampling-reply").await, "Cobalt blue.");
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Cobalt blue.')",
    )
    .await;
    c.execute("document.querySelector('.tool-card').open = true", vec![])
        .await
        .unwrap();
    screenshot(&c, "sampling.png").await;
    c.close().await.unwrap();
}

/// A call the server runs as a task (the 2026-07-28 tasks extension; FastMCP with fastmcp-tasks
/// over HTTP): its card says so while it runs; the user quits the app mid-task and starts it
/// again; the card shows the task still running, then its result, which the model has not seen:
/// one click sends it, and the model answers from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_task_outlives_the_app_and_its_late_result_goes_to_the_model_with_one_click() {
    let (_server, port) = crate::support::tasks_server();
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let said = last["content"].as_str().unwrap_or_default();
        // the late result comes as the tool's result (the call again, then its result)
        if last["role"] == "tool" && said == "42" && last["tool_call_id"] != "t" {
            Stream::new().text("The sum is 42, at last.").done().reply()
        } else if last["role"] == "user" {
            Stream::new()
                .tool_calls(&[(
                    "t",
                    "tasks__slow_sum",
                    json!({"a": 40, "b": 2, "seconds": 12}),
                )])
                .done()
                .reply()
        } else {
            Stream::new().text("Done.").done().reply()
        }
    });
    let home = tasks_home(&fake, port, "tasks__slow_sum");

    let App { c, driver } = App::launch_with_servers(home.path(), 1).await;
    send(&c, "add 40 and 2, slowly").await;
    wait_css(&c, ".tool-card.running[data-task='working']").await;
    assert_eq!(
        text_content(&c, ".tool-card .card-state").await,
        "task · running…"
    );
    assert!(text_content(&c, ".tool-card .card-task")
        .await
        .starts_with("Running as a task on the server"));
    screenshot(&c, "task-running.png").await;
    // quit as a person does, mid-task
    let _ = c.close_window().await;
    let _ = c.close().await;
    drop(driver);

    // the next start: the card still runs, then gets its result, which waits for the user
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    click(&c, "#conversation-list .conv").await;
    wait_css(&c, ".tool-card").await;
    wait_css(&c, ".tool-card.ok").await;
    assert_eq!(text_content(&c, ".tool-card .result").await, "42");
    wait_css(&c, ".late-result").await;
    screenshot(&c, "task-late-result.png").await;
    click(&c, "[data-action='send-late-result']").await;
    wait_answer(&c, "at last").await;
    // nothing was said in the user's name: the only user message is the one they typed
    let users = user_messages(&c).await;
    assert_eq!(users, json!(["add 40 and 2, slowly"]), "{users}");
    assert!(
        c.find(Locator::Css(".late-result")).await.is_err(),
        "offered once"
    );
    // and the store knows it was sent: the conversation opened again does not offer it
    click(&c, "#conversation-list .conv").await;
    wait_css(&c, ".tool-card.ok").await;
    wait_answer(&c, "at last").await;
    assert!(
        c.find(Locator::Css(".late-result")).await.is_err(),
        "not offered again from the store"
    );
    c.close().await.unwrap();
}

/// A task's question outlives the app too: the server asks mid-task (fastmcp-tasks'
/// `input_required`), the user quits without answering. On the next start the chat that was open
/// opens again with the question on its card; the user goes to a new chat and quits again. On the
/// start after that the question comes for a chat that is not open: a note says so and opens that
/// chat, the form is on the card, and the answer reaches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_task_question_left_unanswered_at_quit_is_asked_again_after_the_restart() {
    let (_server, port) = crate::support::tasks_server();
    let fake = FakeOllama::start().await;
    fake.set_responder(crate::support::fake_ollama::call_then_say(
        "n",
        "tasks__ask_name",
        json!({}),
        "Greeted: ",
    ));
    let home = tasks_home(&fake, port, "tasks__ask_name");

    let App { c, driver } = App::launch_with_servers(home.path(), 1).await;
    send(&c, "greet me").await;
    wait_css(&c, ".tool-card .elicitation").await;
    assert!(text_content(&c, ".tool-card .card-task")
        .await
        .starts_with("The task waits for your answer"));
    wait_stored(home.path(), "the chat open", |v| {
        v["open"]["conversationId"].is_i64()
    })
    .await;
    let _ = c.close_window().await;
    let _ = c.close().await;
    drop(driver);

    // the chat open at quit opens again, the question on its card
    let App { c, driver } = App::launch_with_servers(home.path(), 1).await;
    wait_css(&c, ".tool-card .elicitation").await;
    assert!(c.find(Locator::Css(".task-ask")).await.is_err());
    // the task is followed outside a turn: the user can go to a new chat
    click(&c, "#new-chat").await;
    wait_stored(home.path(), "no chat open", |v| {
        v.is_object() && v["open"].is_null()
    })
    .await;
    assert!(c.find(Locator::Css(".tool-card")).await.is_err());
    let _ = c.close_window().await;
    let _ = c.close().await;
    drop(driver);

    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    // no chat is open: a note says a task asks something, and opens its chat
    wait_css(&c, ".task-ask").await;
    assert!(text_content(&c, ".task-ask")
        .await
        .contains("tasks asks you something"));
    screenshot(&c, "task-question-waiting.png").await;
    click(&c, ".task-ask [data-action='open-task-chat']").await;
    wait_css(&c, ".tool-card .elicitation:not(.fresh)").await;
    assert!(c.find(Locator::Css(".task-ask")).await.is_err());
    type_in_form(&c, "name", "Ada").await;
    click(&c, ".elicitation [data-action=accept]").await;
    wait_css(&c, ".tool-card.ok").await;
    assert_eq!(text_content(&c, ".tool-card .result").await, "Hello, Ada!");
    wait_css(&c, ".late-result").await;
    c.close().await.unwrap();
}

/// A fresh app home whose only MCP server is the tasks fixture on `port`, with `allowed` allowed.
pub fn tasks_home(fake: &FakeOllama, port: u16, allowed: &str) -> tempfile::TempDir {
    home_with_servers(
        json!({"llmUrl": fake.url, "toolPolicies": {allowed: "allow"}}),
        vec![(
            "tasks",
            switchboard_engine::mcp::ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
        )],
    )
}

/// A 2026-07-28 server that asks through a multi round-trip request (its call answers
/// `input_required`): the question is the same form on the card, and the answer reaches the
/// server in the call made again (Python SDK 2.x, `fixtures/mrtr_server.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_2026_server_asks_through_input_required_and_the_card_answers() {
    let (_server, port) = crate::support::mrtr_server();
    let fake = FakeOllama::start().await;
    fake.set_responder(crate::support::fake_ollama::call_then_say(
        "g",
        "mrtr__greet",
        json!({}),
        "The server said: ",
    ));
    let home = home_with_servers(
        json!({"llmUrl": fake.url, "model": crate::support::fake_ollama::MODEL,
               "toolPolicies": {"mrtr__greet": "allow"}}),
        vec![(
            "mrtr",
            switchboard_engine::mcp::ServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
        )],
    );
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    send(&c, "greet someone").await;
    wait_css(&c, ".tool-card .elicitation:not(.fresh)").await;
    assert!(text_content(&c, ".tool-card .elicitation")
        .await
        .contains("Who should I greet?"));
    type_in_form(&c, "name", "Ada").await;
    send_form_until_answered(&c, "The server said: Hello, Ada!").await;
    c.close().await.unwrap();
}

/// Killed, not quit: the app is killed (SIGKILL) while a task runs; the next start follows the
/// task again and keeps its result on the card. Then Stop on a running task's card cancels it,
/// and the turn goes on to the model's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_task_survives_the_app_being_killed_and_stop_on_its_card_cancels_one() {
    let (_server, port) = crate::support::tasks_server();
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let said = last["content"].as_str().unwrap_or_default();
        let seconds = if said.contains("very slowly") { 120 } else { 8 };
        if last["role"] == "user" {
            Stream::new()
                .tool_calls(&[(
                    "t",
                    "tasks__slow_sum",
                    json!({"a": 40, "b": 2, "seconds": seconds}),
                )])
                .done()
                .reply()
        } else {
            Stream::new().text("Done.").done().reply()
        }
    });
    let home = tasks_home(&fake, port, "tasks__slow_sum");

    let App { c, driver } = App::launch_with_servers(home.path(), 1).await;
    send(&c, "add 40 and 2, slowly").await;
    wait_css(&c, ".tool-card.running[data-task='working']").await;
    App { c, driver }.kill().await;

    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    click(&c, "#conversation-list .conv").await;
    wait_css(&c, ".tool-card.ok").await;
    assert_eq!(text_content(&c, ".tool-card .result").await, "42");
    wait_css(&c, ".late-result").await;

    // Stop on a task's card, mid-task
    send(&c, "add them again, very slowly").await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.running[data-task=\"working\"]').length === 1",
    )
    .await;
    click(&c, ".tool-card.running[data-task='working'] .card-stop").await;
    wait_answer(&c, "Done.").await;
    let last = c
        .execute(
            "const cards = document.querySelectorAll('.tool-card'); const c = cards[cards.length - 1];
             return { running: c.classList.contains('running'), ok: c.classList.contains('ok'), text: c.textContent };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(last["running"], false, "{last}");
    assert_eq!(last["ok"], false, "{last}");
    c.close().await.unwrap();
}

/// Types `value` into field `name` of the form on a card.
async fn type_in_form(c: &fantoccini::Client, name: &str, value: &str) {
    c.find(Locator::Css(&format!(
        ".elicitation [data-name={name}] input"
    )))
    .await
    .unwrap()
    .send_keys(value)
    .await
    .unwrap();
}

/// Sends the form on a card and waits until the model's answer says `said`.
async fn send_form_until_answered(c: &fantoccini::Client, said: &str) {
    click(c, ".elicitation [data-action=accept]").await;
    wait_until(
        c,
        &format!(
            "document.querySelector('.msg.assistant.complete')?.textContent.includes({})",
            serde_json::to_string(said).unwrap()
        ),
    )
    .await;
}
