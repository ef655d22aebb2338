//! Models: pulling one, an OpenAI-compatible server, the debug view.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::{json, Value};

use crate::app::*;
use crate::support;
use crate::support::fake_ollama::{FakeOllama, Stream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn pulling_a_model_shows_a_progress_bar_and_the_model_appears() {
    let fake = FakeOllama::start().await;
    fake.set_pull(30, Duration::from_millis(60));
    let (home, _driver, c) = launch_with_everything(json!({"llmUrl": fake.url})).await;
    click(&c, "#models-button").await;
    wait_css(
        &c,
        "#models-dialog[open] .model-row[data-name='fake-llama:latest']",
    )
    .await;
    let name = c.find(Locator::Css("#pull-name")).await.unwrap();
    name.send_keys("qwen3:0.6b").await.unwrap();
    click(&c, "#pull-start").await;
    // the bar moves while it downloads
    wait_until(&c, "(() => { const b = document.querySelector('#pull-bar'); return !document.querySelector('#pull-progress').hidden && b.max === 1000000 && b.value > 0 && b.value < b.max; })()").await;
    assert!(text_content(&c, "#pull-status").await.contains("%"));
    screenshot(&c, "pull.png").await;
    wait_until(
        &c,
        "document.querySelector('#pull-status').textContent === 'qwen3:0.6b is ready.'",
    )
    .await;
    wait_css(&c, ".model-row[data-name='qwen3:0.6b']").await;
    // it is in the model picker too
    wait_until(&c, "[...document.querySelectorAll('#model-select option')].some((o) => o.value === 'qwen3:0.6b')").await;
    // a second download, cancelled
    fake.set_pull(100, Duration::from_millis(60));
    name.send_keys("big:70b").await.unwrap();
    click(&c, "#pull-start").await;
    wait_until(&c, "document.querySelector('#pull-bar').value > 0").await;
    click(&c, "#pull-cancel").await;
    wait_until(
        &c,
        "document.querySelector('#pull-status').textContent === 'Cancelled.'",
    )
    .await;
    // a model can be told to get its tools in text (no native tool calling): saved in settings
    c.execute(
        "const s = document.querySelector(\".model-row[data-name='fake-llama:latest'] .tool-mode\"); s.value = 'text'; s.dispatchEvent(new Event('change'));",
        vec![],
    )
    .await
    .unwrap();
    let settings_file = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("settings.json");
    let t = Instant::now();
    loop {
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
        if saved["toolModes"]["fake-llama:latest"] == "text" {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{saved}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // delete asks first
    let del = c
        .find(Locator::Css(
            ".model-row[data-name='qwen3:0.6b'] [data-action=delete]",
        ))
        .await
        .unwrap();
    del.click().await.unwrap();
    assert!(text_content(
        &c,
        ".model-row[data-name='qwen3:0.6b'] [data-action=delete]"
    )
    .await
    .contains("Delete qwen3:0.6b?"));
    del.click().await.unwrap();
    wait_until(
        &c,
        "!document.querySelector(\".model-row[data-name='qwen3:0.6b']\")",
    )
    .await;
    // the text mode is used: no native tools in the request, the tools in the system prompt
    click(&c, "#models-close").await;
    fake.set_responder(|_req: &Value| Stream::new().text("ok").done().reply());
    send(&c, "hi").await;
    wait_until(&c, "document.querySelector('.msg.assistant.complete')").await;
    let sent = fake.chat_requests().last().unwrap().clone();
    assert!(sent.get("tools").is_none(), "{sent}");
    assert!(sent["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("- everything__echo:"));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn an_openai_compatible_server_added_in_settings_answers_and_the_debug_view_shows_the_call() {
    let fake = FakeOllama::start().await;
    fake.set_models(&["gemma-270m.gguf"]);
    fake.set_openai_responder(|_req: &Value| {
        support::fake_ollama::Sse::new()
            .text("Hi from ")
            .text("llama.cpp")
            .finish("stop")
            .done()
            .reply()
    });
    // Ollama itself is not running: its URL answers nothing
    let nothing = format!("http://127.0.0.1:{}", support::free_port());
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": nothing}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    click(&c, "#settings-button").await;
    click(&c, "#add-provider").await;
    wait_css(&c, ".provider-row .prov-name")
        .await
        .send_keys("llama.cpp")
        .await
        .unwrap();
    c.find(Locator::Css(".provider-row .prov-url"))
        .await
        .unwrap()
        .send_keys(&format!("{}/v1", fake.url))
        .await
        .unwrap();
    c.find(Locator::Css(".provider-row .prov-key"))
        .await
        .unwrap()
        .send_keys("sk-test")
        .await
        .unwrap();
    click(&c, "#settings-save").await;
    wait_until(&c, "[...document.querySelectorAll('#model-select option')].some((o) => o.value === 'gemma-270m.gguf' && o.dataset.provider === 'llama-cpp')").await;
    c.execute("const s = document.querySelector('#model-select'); [...s.options].find((o) => o.value === 'gemma-270m.gguf').selected = true; s.dispatchEvent(new Event('change'));", vec![]).await.unwrap();
    send(&c, "hello").await;
    wait_until(&c, "document.querySelector('.msg.assistant.complete')?.textContent.includes('Hi from llama.cpp')").await;
    assert_eq!(fake.openai_requests().len(), 1);
    assert_eq!(
        fake.authorizations().last().unwrap().as_deref(),
        Some("Bearer sk-test")
    );
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(saved["providers"][0]["url"], format!("{}/v1", fake.url));
    // no keyring here (no session bus): the key is in the private secrets file, not in settings
    assert!(saved["providers"][0]["apiKey"]["secret"]
        .as_str()
        .is_some_and(|r| r.starts_with("file:")));
    // the debug view: the exact request and the streamed events
    click(&c, "#debug-button").await;
    wait_css(&c, "#debug-dialog[open] .debug-call").await;
    let request = text_content(&c, ".debug-call .debug-request").await;
    assert!(
        request.contains("\"stream\": true") && request.contains("\"content\": \"hello\""),
        "{request}"
    );
    assert!(text_content(&c, ".debug-call .debug-response")
        .await
        .contains("llama.cpp"));
    screenshot(&c, "debug.png").await;
    c.close().await.unwrap();
}

/// An API key typed in the settings goes to the system keyring (a real gnome-keyring, on the app's
/// own session bus): once saved, the form shows where it is and never the key, the page holds it
/// nowhere, settings.json holds only a reference (and is 0600), secret-tool finds it in the
/// keyring, and the LLM gets it with the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_typed_api_key_goes_to_the_keyring_and_the_form_only_says_where() {
    const KEY: &str = "sk-e2e-typed-key-8c41d2";
    let fake = FakeOllama::start().await;
    fake.set_models(&["gemma-270m.gguf"]);
    fake.set_openai_responder(|_req: &Value| {
        support::fake_ollama::Sse::new()
            .text("keyed")
            .finish("stop")
            .done()
            .reply()
    });
    let nothing = format!("http://127.0.0.1:{}", support::free_port());
    let (home, config_dir) = app_home();
    let settings_file = config_dir.join("settings.json");
    std::fs::write(&settings_file, json!({"llmUrl": nothing}).to_string()).unwrap();
    let App { c, driver: _driver } = App::launch_with_keyring(home.path()).await;
    click(&c, "#settings-button").await;
    click(&c, "#add-provider").await;
    for (field, text) in [
        ("prov-name", "Keyed"),
        ("prov-url", &format!("{}/v1", fake.url)),
        ("prov-key", KEY),
    ] {
        let css = format!(".provider-row .{field}");
        wait_css(&c, &css).await.send_keys(text).await.unwrap();
    }
    click(&c, "#settings-save").await;
    wait_until(&c, "[...document.querySelectorAll('#model-select option')].some((o) => o.dataset.provider === 'keyed')").await;

    // opened again: where the key is, never what it is
    click(&c, "#settings-button").await;
    wait_css(&c, "#settings-dialog[open] .provider-row .prov-key-set").await;
    let shown = text_content(&c, ".provider-row .prov-key-set").await;
    assert!(shown.contains("stored in the keyring"), "{shown}");
    assert!(c
        .find(Locator::Css(".provider-row input.prov-key"))
        .await
        .is_err());
    let note = text_content(&c, "#secrets-note").await;
    assert!(note.contains("kept in the system keyring"), "{note}");
    let page = c
        .execute(
            "return document.documentElement.outerHTML + [...document.querySelectorAll('input, textarea')].map((i) => i.value).join(' ');",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        !page.as_str().unwrap().contains(KEY),
        "the key is in the page"
    );
    let view = c
        .execute_async(
            "const done = arguments[arguments.length - 1]; window.__TAURI__.core.invoke('get_settings').then((s) => done(s));",
            vec![],
        )
        .await
        .unwrap();
    assert!(!view.to_string().contains(KEY), "{view}");
    assert_eq!(view["providers"][0]["apiKey"], json!({"secret": "keyring"}));
    // scrolled into view by a click: the key and the note
    click(&c, "#secrets-note").await;
    screenshot(&c, "settings-secrets.png").await;

    // on disk: a reference, in a file only the user can read; the key itself in the keyring
    let text = std::fs::read_to_string(&settings_file).unwrap();
    assert!(!text.contains(KEY), "{text}");
    let saved: Value = serde_json::from_str(&text).unwrap();
    let r = saved["providers"][0]["apiKey"]["secret"].as_str().unwrap();
    let id = r.strip_prefix("keyring:").unwrap_or_else(|| panic!("{r}"));
    assert_eq!(keyring_lookup(home.path(), id).as_deref(), Some(KEY));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&settings_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!home
        .path()
        .join("data")
        .join(switchboard_engine::paths::APP_IDENTIFIER)
        .join("secrets/secrets.json")
        .exists());

    // saved again as it is: the key is kept; and the LLM gets it
    click(&c, "#settings-save").await;
    wait_until(&c, "!document.querySelector('#settings-dialog').open").await;
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
    assert_eq!(
        again["providers"][0]["apiKey"],
        saved["providers"][0]["apiKey"]
    );
    c.execute("const s = document.querySelector('#model-select'); [...s.options].find((o) => o.dataset.provider === 'keyed').selected = true; s.dispatchEvent(new Event('change'));", vec![]).await.unwrap();
    send(&c, "hello").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('keyed')",
    )
    .await;
    assert_eq!(
        fake.authorizations().last().unwrap().as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    c.close().await.unwrap();
}
