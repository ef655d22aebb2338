//! A long conversation opens at its end: the engine sends its last page only; the earlier
//! messages come when asked for, and a search hit far back opens with the page reaching it.

use fantoccini::Locator;
use switchboard_engine::llm::Role;
use switchboard_engine::store::exchange::{ExportedConversation, ExportedMessage};

use crate::app::*;

/// `n` messages, questions and answers in turn; the third holds a word found nowhere else.
pub fn long_conversation(n: i64) -> ExportedConversation {
    let messages = (1..=n)
        .map(|id| {
            let (role, content) = match id {
                3 => (Role::User, "question with quetzalcoatl in it".to_string()),
                _ if id % 2 == 1 => (Role::User, format!("question {id}")),
                _ => (Role::Assistant, format!("answer **{id}**")),
            };
            ExportedMessage {
                created_at: id,
                ..ExportedMessage::text(id, (id > 1).then(|| id - 1), role, content)
            }
        })
        .collect();
    ExportedConversation {
        created_at: 1,
        updated_at: 1_700_000_000_000,
        ..ExportedConversation::new("the long one", "fake-llama:latest", messages, vec![])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_long_conversation_opens_at_its_last_page_and_shows_the_rest_on_request() {
    let (home, _config) = app_home();
    {
        let store = app_store(home.path()).await;
        let id = store
            .import_json(&long_conversation(1000), None)
            .await
            .unwrap();
        store.mark_continued(id).await.unwrap();
    }
    let App { c, driver: _driver } = App::launch(home.path()).await;
    let messages = "return document.querySelectorAll('#messages .msg').length;";
    click(&c, "#conversation-list .conv[data-id]").await;
    wait_css(&c, "#messages .btn.earlier").await;
    // the last 300 items, the newest at the end, rendered from Markdown
    assert_eq!(c.execute(messages, vec![]).await.unwrap(), 300);
    assert_eq!(
        text_content(&c, "#messages .btn.earlier").await,
        "Show 700 earlier messages"
    );
    let last = "return [...document.querySelectorAll('#messages .msg.assistant')].pop().querySelector('strong')?.textContent;";
    assert_eq!(c.execute(last, vec![]).await.unwrap(), "1000");
    // a search hit far back: the page reaches back to it, and it is shown
    c.find(Locator::Css("#search"))
        .await
        .unwrap()
        .send_keys("quetzalcoatl")
        .await
        .unwrap();
    wait_css(&c, "#conversation-list .hit").await;
    click(&c, "#conversation-list .hit").await;
    wait_css(&c, "#messages .msg.flash[data-id]").await;
    assert!(text_content(&c, "#messages .msg.flash")
        .await
        .contains("quetzalcoatl"));
    assert_eq!(
        text_content(&c, "#messages .btn.earlier").await,
        "Show 2 earlier messages"
    );
    // every message, from the first
    click(&c, "#messages .btn.earlier").await;
    wait_until(
        &c,
        "document.querySelectorAll('#messages .msg').length === 1000 && !document.querySelector('#messages .btn.earlier')",
    )
    .await;
    let first = text_content(&c, "#messages .msg").await;
    assert!(
        first.contains("question 1") && !first.contains("question 11"),
        "{first}"
    );
    c.close().await.unwrap();
}
