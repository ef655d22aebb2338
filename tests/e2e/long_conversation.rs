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

/// Issue 37: a chat that outgrows a small context (1,024 tokens, set in Settings). The model's
/// summary of the older turns appears as a folded block after the last message it covers; it
/// opens, says how many messages it stands for, can be edited, and the next request carries the
/// edit instead of the turns it covers; the header's counter says the request was compacted; the
/// conversation stays whole (search finds a word of a summarised turn); a pinned message is sent
/// whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_chat_that_outgrows_its_context_shows_an_editable_summary_and_sends_the_edit() {
    use crate::support::fake_ollama::{last_message, FakeOllama, Stream};
    use serde_json::{json, Value};
    let fake = FakeOllama::start().await;
    let asks_summary = |req: &Value| {
        req["messages"][0]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with("You keep the notes of a conversation"))
    };
    fake.set_responder(move |req: &Value| {
        if asks_summary(req) {
            return Stream::new()
                .text("Résumé: the user asks about birds, one per turn, in English.")
                .done()
                .reply();
        }
        let q = last_message(req)["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Stream::new()
            .text(&format!(
                "About {}: ",
                q.split(':').next().unwrap_or_default()
            ))
            .text(&"it lives in the forest and sings at dawn, often in pairs. ".repeat(20))
            .done()
            .reply()
    });
    let home = home_with_servers(json!({"llmUrl": fake.url, "numCtx": 1024}), vec![]);
    let App { c, driver: _driver } = App::launch(home.path()).await;
    let question = |n: usize| {
        let bird = if n == 1 { "the quetzal" } else { "a bird" };
        format!("Bird {n}: tell me about {bird}, with some detail please.")
    };
    send(&c, "Always answer in English, please.").await;
    wait_answer(&c, "About Always answer in English, please.").await;
    let mut n = 1;
    while count(&c, "#messages .earlier-summary").await == 0 {
        assert!(n <= 12, "no summary after {n} turns");
        send(&c, &question(n)).await;
        wait_answer(&c, &format!("About Bird {n}")).await;
        n += 1;
    }
    // folded, after the last message it covers, saying how many it stands for
    let block = "#messages .earlier-summary";
    assert_eq!(
        c.execute(
            &format!("return document.querySelector('{block}').open;"),
            vec![]
        )
        .await
        .unwrap(),
        json!(false)
    );
    let label = text_content(&c, &format!("{block} > summary")).await;
    assert!(
        label.starts_with("Earlier conversation, summarised ("),
        "{label}"
    );
    let follows = c
        .execute(
            &format!("const b = document.querySelector('{block}'); const next = b.nextElementSibling; return !!next && next.matches('.msg');"),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(follows, json!(true), "a message is shown after the summary");
    // the model's first answer (covered by the summary) pinned: it is sent whole from now on
    click(&c, "#conversation-list .conv[data-id]").await;
    wait_css(&c, "#messages .msg.assistant [data-action=pin]").await;
    click(&c, "#messages .msg.assistant [data-action=pin]").await;
    wait_until(&c, "document.querySelector('#messages .msg.assistant [data-action=pin]').getAttribute('aria-pressed') === 'true'").await;
    wait_css(&c, block).await;
    // it opens and shows the model's text; it is edited with the keyboard
    click(&c, &format!("{block} > summary")).await;
    assert!(text_content(&c, &format!("{block} .earlier-text"))
        .await
        .starts_with("Résumé: the user asks about birds"));
    screenshot(&c, "chat-earlier-summary.png").await;
    click(&c, &format!("{block} [data-action=edit-summary]")).await;
    let editor = wait_css(&c, &format!("{block} textarea.earlier-editor")).await;
    editor.clear().await.unwrap();
    editor
        .send_keys("EDITED: the user wants short answers about birds.")
        .await
        .unwrap();
    click(&c, &format!("{block} [data-action=save-summary]")).await;
    wait_until(
        &c,
        &format!(
            "document.querySelector('{block} .earlier-text')?.textContent.startsWith('EDITED')"
        ),
    )
    .await;
    assert!(text_content(&c, &format!("{block} .earlier-note"))
        .await
        .contains("edited by you"));
    // an empty summary is refused, with why, and nothing changes
    click(&c, &format!("{block} [data-action=edit-summary]")).await;
    let editor = wait_css(&c, &format!("{block} textarea.earlier-editor")).await;
    editor.clear().await.unwrap();
    click(&c, &format!("{block} [data-action=save-summary]")).await;
    wait_until(&c, &format!("document.querySelector('{block} .field-error')?.textContent.includes('cannot be empty')")).await;
    editor.send_keys("\u{E00C}").await.unwrap(); // Escape: back to the text
    wait_until(
        &c,
        &format!(
            "document.querySelector('{block} .earlier-text')?.textContent.startsWith('EDITED')"
        ),
    )
    .await;
    // what the model is next told of the earlier conversation is the edit: the first request
    // after it that carries a summary (a chat request, or the request for a summary reaching
    // further, which is given the summary so far) carries the edited text
    let before = fake.chat_requests().len();
    let with_summary = |r: &Value| r.to_string().contains("[Earlier conversation, summarised.");
    loop {
        assert!(n <= 20, "no chat request carried a summary after the edit");
        send(&c, &question(n)).await;
        wait_answer(&c, &format!("About Bird {n}")).await;
        n += 1;
        if fake.chat_requests()[before..]
            .iter()
            .any(|r| !asks_summary(r) && with_summary(r))
        {
            break;
        }
    }
    let sent = fake.chat_requests()[before..].to_vec();
    let carried = sent
        .iter()
        .find(|r| with_summary(r) || r.to_string().contains("The summary so far:"))
        .unwrap()
        .to_string();
    assert!(
        carried.contains("EDITED: the user wants short answers about birds."),
        "{carried}"
    );
    assert!(
        !carried.contains("Résumé: the user asks"),
        "the model's text is replaced"
    );
    // a chat request with the summary in place of the turns it covers (the first of them, the
    // quetzal's, among them): the user's first message is sent whole
    let chat = sent
        .iter()
        .find(|r| !asks_summary(r) && with_summary(r))
        .unwrap()
        .to_string();
    assert!(
        chat.contains("Always answer in English, please."),
        "the first message is sent"
    );
    assert!(!chat.contains("quetzal"), "a summarised turn is not sent");
    // the header's counter says that request was compacted, and how
    wait_until(
        &c,
        "document.querySelector('#context-meter').dataset.compacted === 'true'",
    )
    .await;
    assert!(text_content(&c, "#context-meter")
        .await
        .contains("compacted"));
    let title = c
        .execute(
            "return document.querySelector('#context-meter').title;",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        title
            .as_str()
            .unwrap()
            .contains("as the summary shown in the chat"),
        "{title}"
    );
    // nothing is lost: the summarised turn is still shown, and search finds it
    assert!(text_content(&c, "#messages").await.contains("the quetzal"));
    c.find(Locator::Css("#search"))
        .await
        .unwrap()
        .send_keys("quetzal")
        .await
        .unwrap();
    wait_css(&c, "#conversation-list .hit").await;
    c.close().await.unwrap();
}
