//! The composer: `/` prompts, attached resources, the tools picker.

use fantoccini::Locator;
use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn slash_inserts_a_prompt_and_an_attached_resource_goes_with_the_message() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|_req: &Value| Stream::new().text("Read it.").done().reply());
    let (_home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    let input = wait_css(&c, "#input").await;
    // `/` lists the running servers' prompts; typing filters; Enter picks; a form asks for arguments
    input.send_keys("/args").await.unwrap();
    wait_css(&c, "#composer-menu .menu-item").await;
    let listed = text_content(&c, "#composer-menu").await;
    assert!(listed.contains("/args-prompt"), "{listed}");
    assert!(!listed.contains("/simple-prompt"), "filtered: {listed}");
    input.send_keys("\u{E007}").await.unwrap(); // Enter
    let city = wait_css(&c, ".prompt-form [data-name=city] input").await;
    screenshot(&c, "prompt-form.png").await;
    // the required argument is checked before anything is sent
    click(&c, ".prompt-form [data-action=insert-prompt]").await;
    assert!(text_content(&c, ".prompt-form .field-error")
        .await
        .contains("city"));
    city.send_keys("Lisbon").await.unwrap();
    city.send_keys("\u{E007}").await.unwrap();
    wait_until(
        &c,
        "document.querySelector('#input').value === \"What's weather in Lisbon?\"",
    )
    .await;
    assert!(fake.chat_requests().is_empty(), "inserted, not sent");

    // 📎 lists the resources; picking one attaches it as a chip
    click(&c, "#attach").await;
    wait_css(&c, "#composer-menu .menu-item").await;
    c.execute(
        "[...document.querySelectorAll('#composer-menu .menu-item')].find((n) => n.textContent.includes('features.md'))
           .dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));",
        vec![],
    )
    .await
    .unwrap();
    wait_css(&c, "#attachments .chip").await;
    assert!(text_content(&c, "#attachments")
        .await
        .contains("features.md"));
    screenshot(&c, "attachment.png").await;
    click(&c, "#send").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Read it.')",
    )
    .await;
    let sent = last_message(&fake.chat_requests()[0]);
    let content = sent["content"].as_str().unwrap();
    assert!(
        content.starts_with("What's weather in Lisbon?\n\n<attachment name=\"features.md\" uri=\"demo://resource/static/document/features.md\">\n"),
        "{content}"
    );
    assert!(content.len() > 300, "the resource's text went along");
    // the chip is gone; the message shows the attachment folded
    assert!(c.find(Locator::Css("#attachments .chip")).await.is_err());
    assert!(text_content(&c, ".msg.user .attachment summary")
        .await
        .contains("features.md"));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn tools_turned_off_for_a_chat_are_not_offered_and_the_choice_is_kept() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|_req: &Value| Stream::new().text("Fine.").done().reply());
    let (_home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    wait_until(
        &c,
        "/Tools 1\\d\\/1\\d/.test(document.querySelector('#tools-button').textContent)",
    )
    .await;
    let total = text_content(&c, "#tools-button").await;
    click(&c, "#tools-button").await;
    // the panel re-renders as the servers' list arrives: `click` finds the box again if it went stale
    wait_css(&c, "#tools-panel [data-tool='everything/get-sum']").await;
    click(&c, "#tools-panel [data-tool='everything/get-sum']").await;
    screenshot(&c, "tools-picker.png").await;
    assert!(!text_content(&c, "#tools-panel").await.contains("null"));
    let after = text_content(&c, "#tools-button").await;
    assert_ne!(after, total, "the count follows: {after}");
    send(&c, "hello").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Fine.')",
    )
    .await;
    let offered = |req: &Value| -> Vec<String> {
        req["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = offered(&fake.chat_requests()[0]);
    assert!(first.contains(&"everything__echo".to_string()), "{first:?}");
    assert!(
        !first.contains(&"everything__get-sum".to_string()),
        "{first:?}"
    );

    // the choice belongs to the conversation: a new chat has everything on, reopening restores it
    click(&c, "#new-chat").await;
    assert_eq!(text_content(&c, "#tools-button").await, total);
    click(&c, "#conversation-list .conv").await;
    wait_until(
        &c,
        &format!(
            "document.querySelector('#tools-button').textContent === {}",
            serde_json::to_string(&after).unwrap()
        ),
    )
    .await;
    // turning the whole server off for this chat: nothing is offered in its next turn
    click(&c, "#tools-button").await;
    wait_css(&c, "#tools-panel [data-server='everything'] legend input")
        .await
        .click()
        .await
        .unwrap();
    wait_until(
        &c,
        "document.querySelector('#tools-button').textContent.includes('Tools 0/')",
    )
    .await;
    send(&c, "again").await;
    wait_until(
        &c,
        "document.querySelectorAll('.msg.assistant.complete').length === 2",
    )
    .await;
    let last = offered(fake.chat_requests().last().unwrap());
    assert!(last.is_empty(), "{last:?}");
    c.close().await.unwrap();
}
