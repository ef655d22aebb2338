//! Chatting: a tool call's card across a relaunch, inert HTML, an unreachable LLM, Stop, the round limit.

use std::time::Duration;

use fantoccini::Locator;
use serde_json::{json, Value};

use crate::app::*;
use crate::support;
use crate::support::fake_ollama::{self, last_message, FakeOllama, Stream};

/// The fake model: arithmetic goes through calculator__add; "xss" gets hostile HTML back.
fn script(fake: &FakeOllama) {
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        let text = last["content"].as_str().unwrap_or_default().to_string();
        if last["role"] == "tool" {
            return Stream::new()
                .text("2 + 40 = ")
                .text(&format!("**{text}**"))
                .text("\n\nThe calculator agrees.")
                .done()
                .reply();
        }
        if text.contains("xss") {
            return Stream::new()
                .text("Here: <img src=x onerror=\"window.__xss=1\"> and ")
                .text("<script>window.__xss=2</script> and [link](javascript:window.__xss=3)")
                .done()
                .reply();
        }
        if text.contains("2+40") {
            return Stream::new()
                .tool_call("call_e2e1", "calculator__add", json!({"a": 2, "b": 40}))
                .done()
                .reply();
        }
        Stream::new().text("I only do arithmetic.").done().reply()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn chat_with_a_tool_call_card_survives_a_relaunch_and_html_stays_inert() {
    let fake = FakeOllama::start().await;
    script(&fake);
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        serde_json::to_string(&json!({"llmUrl": fake.url, "model": fake_ollama::MODEL})).unwrap(),
    )
    .unwrap();

    // ---- first launch ----
    let App { c, driver } = App::launch(home.path()).await;
    // the built-in servers come up and the model list is filled from /api/tags
    wait_servers(&c, 3).await;
    assert_eq!(text_content(&c, "#model-select").await, fake_ollama::MODEL);
    assert!(
        c.find(Locator::Css("#banner[hidden]")).await.is_ok(),
        "no error banner when the LLM is reachable"
    );

    send(&c, "what is 2+40?").await;
    let card = wait_css(&c, ".tool-card.ok").await;
    let card_text = card.prop("textContent").await.unwrap().unwrap_or_default();
    assert!(card_text.contains("calculator"), "{card_text}");
    assert!(card_text.contains("add"), "{card_text}");
    assert!(
        card_text.contains("\"a\": 2") && card_text.contains("\"b\": 40"),
        "pretty arguments: {card_text}"
    );
    assert_eq!(text_content(&c, ".tool-card .result").await, "42");
    wait_css(&c, ".msg.assistant.complete .body strong").await;
    assert_eq!(
        text_content(&c, ".msg.assistant.complete .body strong").await,
        "42"
    );
    assert!(text_content(&c, ".msg.assistant.complete .body")
        .await
        .contains("The calculator agrees."));
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    // the conversation is in the sidebar
    wait_until(&c, "document.querySelector('#conversation-list .conv.active')?.textContent.includes('what is 2+40?')").await;

    // the screenshot for the README: open the card so its arguments and result show
    c.execute("document.querySelector('.tool-card').open = true;", vec![])
        .await
        .unwrap();
    screenshot(&c, "chat.png").await;

    // ---- hostile HTML in a reply renders as inert text ----
    click(&c, "#new-chat").await;
    send(&c, "show me xss").await;
    wait_css(&c, ".msg.assistant.complete").await;
    let body = text_content(&c, ".msg.assistant.complete .body").await;
    assert!(
        body.contains("<img src=x onerror=\"window.__xss=1\">"),
        "shown as text: {body}"
    );
    assert!(
        body.contains("<script>window.__xss=2</script>"),
        "shown as text: {body}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let active = c
        .execute(
            "return { xss: window.__xss ?? null, imgs: document.querySelectorAll('#messages img').length,
                      scripts: document.querySelectorAll('#messages script').length,
                      jsLinks: [...document.querySelectorAll('#messages a')].filter(a => (a.getAttribute('href') || '').startsWith('javascript')).length };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        active,
        json!({"xss": null, "imgs": 0, "scripts": 0, "jsLinks": 0})
    );
    click(&c, ".msg.assistant.complete .body a").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        c.execute("return window.__xss ?? null;", vec![])
            .await
            .unwrap(),
        Value::Null,
        "clicking the link ran nothing"
    );

    let pids = server_pids(&c).await;
    c.close().await.unwrap();
    drop(driver);
    // the app was killed by the driver: its servers die with it
    assert_all_gone(&pids, "the app was killed");

    // ---- relaunch: the conversation is there and reopens with its card ----
    let App { c, driver } = App::launch(home.path()).await;
    let titles = text_content(&c, "#conversation-list").await;
    assert!(titles.contains("what is 2+40?"), "{titles}");
    assert!(titles.contains("show me xss"), "{titles}");
    let first = c
        .find_all(Locator::Css("#conversation-list .conv"))
        .await
        .unwrap();
    let mut opened = false;
    for b in first {
        if b.prop("textContent")
            .await
            .unwrap()
            .unwrap_or_default()
            .contains("what is 2+40?")
        {
            b.click().await.unwrap();
            opened = true;
            break;
        }
    }
    assert!(opened);
    wait_css(&c, ".tool-card.ok").await;
    assert_eq!(text_content(&c, "#chat-title").await, "what is 2+40?");
    assert_eq!(text_content(&c, ".tool-card .result").await, "42");
    assert!(text_content(&c, ".tool-card").await.contains("\"b\": 40"));
    assert_eq!(text_content(&c, ".msg.user .body").await, "what is 2+40?");
    assert_eq!(text_content(&c, ".msg.assistant .body strong").await, "42");
    // quit as a person does, by closing the window: the app shuts its servers down (once
    // they have started: the window shows a stored chat before its servers are up)
    wait_servers(&c, 3).await;
    let pids = server_pids(&c).await;
    let _ = c.close_window().await;
    assert_all_gone(&pids, "the window was closed");
    let _ = c.close().await;
    drop(driver);

    // the store agrees
    let db = home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("conversations.sqlite3");
    let store = switchboard_engine::store::Store::open(&db).await.unwrap();
    let convs = store.list_conversations().await.unwrap();
    assert_eq!(convs.len(), 2);
    assert_eq!(fake.chat_requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_unreachable_llm_shows_which_url_failed_and_how_to_fix_it() {
    let home = tempfile::tempdir().unwrap();
    let dead_port = support::DeadPort::new();
    let dead = dead_port.url();
    let config_dir = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER);
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": dead}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    wait_css(&c, "#banner:not([hidden])").await;
    let banner = text_content(&c, "#banner").await;
    assert!(banner.contains(&dead), "{banner}");
    assert!(banner.contains("ollama serve"), "{banner}");
    assert!(banner.contains("Settings"), "{banner}");
    // Settings opens from the banner with the URL in it
    click(&c, "#banner-settings").await;
    wait_css(&c, "#settings-dialog[open]").await;
    let url = c
        .execute(
            "return document.querySelector('#set-llm-url').value;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(url, json!(dead));
    // the bounded inputs have the engine's bounds (set from its table: the page writes none)
    let bounds = c
        .execute(
            "const i = document.querySelector('#set-max-iterations');\
             return [i.min, i.max, i.step, i.value, document.querySelector('#set-temperature').step];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(bounds, json!(["1", "100", "1", "5", "0.1"]));
    // a value outside: the table's message, and the dialog stays open
    let rounds = wait_css(&c, "#set-max-iterations").await;
    rounds.clear().await.unwrap();
    rounds.send_keys("101").await.unwrap();
    click(&c, "#settings-save").await;
    wait_until(
        &c,
        "document.querySelector('#settings-error').textContent === \
         'Max tool rounds must be a whole number from 1 to 100'",
    )
    .await;
    assert!(c
        .execute(
            "return document.querySelector('#settings-dialog').open;",
            vec![]
        )
        .await
        .unwrap()
        .as_bool()
        .unwrap());
    rounds.clear().await.unwrap();
    rounds.send_keys("5").await.unwrap();

    // fixing the URL in Settings brings the models back and is saved (tauri-plugin-store)
    let fake = FakeOllama::start().await;
    let field = wait_css(&c, "#set-llm-url").await;
    field.clear().await.unwrap();
    field.send_keys(&fake.url).await.unwrap();
    click(&c, "#settings-save").await;
    wait_css(&c, "#settings-dialog:not([open])").await;
    wait_css(&c, "#banner[hidden]").await;
    wait_until(
        &c,
        &format!(
            "document.querySelector('#model-select').value === '{}'",
            fake_ollama::MODEL
        ),
    )
    .await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(saved["llmUrl"], json!(fake.url));
    assert_eq!(saved["maxIterations"], 5);
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn escape_stops_a_streaming_reply_and_keeps_the_partial_text() {
    let fake = FakeOllama::start().await;
    let mut slow = Stream::new();
    for i in 0..40 {
        slow = slow.text(&format!("word{i} "));
    }
    let mut reply = slow.done().reply();
    reply.pause = Duration::from_millis(100);
    fake.push(reply);
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    // Shift+Enter is a new line, not a send
    let input = wait_css(&c, "#input").await;
    // (modifiers are released at the end of each send)
    input.send_keys("line one\u{E008}\u{E007}").await.unwrap();
    input.send_keys("line two").await.unwrap();
    let typed = c
        .execute("return document.querySelector('#input').value;", vec![])
        .await
        .unwrap();
    assert_eq!(typed, json!("line one\nline two"));
    assert_eq!(fake.chat_requests().len(), 0, "nothing was sent");
    input.clear().await.unwrap();
    send(&c, "tell me a long story").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.streaming .body')?.textContent.includes('word3')",
    )
    .await;
    assert!(
        c.find(Locator::Css("#stop:not([hidden])")).await.is_ok(),
        "Stop is offered while it streams"
    );
    wait_css(&c, "#input")
        .await
        .send_keys("\u{E00C}")
        .await
        .unwrap(); // Escape
    wait_css(&c, ".msg.assistant.stopped").await;
    let body = text_content(&c, ".msg.assistant.stopped .body").await;
    assert!(body.contains("word3") && !body.contains("word39"), "{body}");
    assert!(text_content(&c, ".msg.assistant.stopped .status-line")
        .await
        .contains("Stopped"));
    wait_until(&c, "!document.querySelector('#send').hidden").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn after_the_tool_round_limit_continue_goes_on_and_wrap_up_answers_without_tools() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        if req.get("tools").is_none() {
            return Stream::new()
                .text("Summing up: the echoes worked.")
                .done()
                .reply();
        }
        let n = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        Stream::new()
            .tool_call(
                "e",
                "everything__echo",
                json!({"message": format!("round {n}")}),
            )
            .done()
            .reply()
    });
    let allow = json!({"everything__echo": "allow"});
    let (_home, _driver, c) = launch_with_everything(
        json!({"llmUrl": fake.url, "toolPolicies": allow, "maxIterations": 2}),
    )
    .await;
    send(&c, "echo forever").await;
    wait_css(&c, ".notice [data-action=wrap-up]").await;
    assert!(text_content(&c, ".notice")
        .await
        .contains("Stopped after 2 rounds"));
    // Continue: two more rounds, then the buttons again
    click(&c, ".notice [data-action=continue]").await;
    wait_until(
        &c,
        "document.querySelectorAll('.tool-card.ok').length === 4 && document.querySelector('.notice [data-action=wrap-up]')",
    )
    .await;
    assert_eq!(
        c.execute(
            "return document.querySelectorAll('.msg.user').length;",
            vec![]
        )
        .await
        .unwrap(),
        json!(1),
        "continuing adds no message of yours"
    );
    click(&c, ".notice [data-action=wrap-up]").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('Summing up')",
    )
    .await;
    assert!(
        c.find(Locator::Css(".notice [data-action=wrap-up]"))
            .await
            .is_err(),
        "the buttons are gone"
    );
    assert!(fake.chat_requests().last().unwrap().get("tools").is_none());
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_call_a_small_model_writes_as_text_becomes_a_card_and_its_json_never_shows() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            return Stream::new().text("It is ").text("**42**.").done().reply();
        }
        // a tool-capable model that prints its call in its chat template's markup, without the
        // server's prefix, a token at a time
        let leaked = "Let me work that out.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 40}}\n</tool_call>";
        let chars: Vec<char> = leaked.chars().collect();
        let mut reply = chars
            .chunks(4)
            .fold(Stream::new(), |s, c| s.text(&c.iter().collect::<String>()))
            .done()
            .reply();
        reply.pause = Duration::from_millis(40);
        reply
    });
    // the server says the model's context (Ollama's /api/show), and only 4 of the built-ins' 12
    // tools are offered at once
    fake.set_context(2048);
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": fake_ollama::MODEL, "maxOfferedTools": 4}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 3).await;
    send(&c, "what is 2+40?").await;
    // while it streams, and after: the markup is never on screen
    let t = std::time::Instant::now();
    loop {
        let shown = c
            .execute(
                "return document.querySelector('#messages').innerText;",
                vec![],
            )
            .await
            .unwrap();
        let shown = shown.as_str().unwrap_or_default().to_string();
        for markup in ["<tool_call>", "\"arguments\"", "\"name\""] {
            assert!(!shown.contains(markup), "{markup} showed: {shown}");
        }
        if shown.contains("It is 42") {
            break;
        }
        assert!(t.elapsed() < WAIT, "no answer: {shown}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    // it ran as the tool it meant, and the card says what the model wrote
    let card = text_content(&c, ".tool-card").await;
    assert!(
        card.contains("calculator") && card.contains("add"),
        "{card}"
    );
    assert!(card.contains("the model wrote “add”"), "{card}");
    assert!(
        text_content(&c, ".msg.assistant")
            .await
            .contains("Let me work that out."),
        "the prose around the call stays"
    );
    // the header says how much of the model's context the request took, against the window the
    // server reported ("1.2k / 2.0k"), and the Tools button how many tools the model was offered
    let meter = text_content(&c, "#context-meter").await;
    let (used, limit) = meter.split_once(" / ").unwrap_or_else(|| panic!("{meter}"));
    assert_eq!(limit, "2.0k", "{meter}");
    let used: f64 = match used.strip_suffix('k') {
        Some(k) => k.parse::<f64>().unwrap() * 1000.0,
        None => used.parse().unwrap(),
    };
    assert!(used > 100.0 && used < 2048.0, "{meter}");
    let tools = text_content(&c, "#tools-button").await;
    assert_eq!(tools, "Tools 12/12 · 4 offered");
    let offered = fake.chat_requests()[0]["tools"].as_array().unwrap().len();
    assert_eq!(offered, 4);
    screenshot(&c, "recovered-call.png").await;
    c.close().await.unwrap();
}
