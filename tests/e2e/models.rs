//! Models: pulling one, an OpenAI-compatible server, the debug view.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::{json, Value};

use crate::app::*;
use crate::support;
use crate::support::fake_ollama::{End, FakeOllama, Stream};

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
    let dead_port = support::DeadPort::new();
    let nothing = dead_port.url();
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
    let dead_port = support::DeadPort::new();
    let nothing = dead_port.url();
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

/// The fake's answer to a model-check probe, by model: `native-model` calls natively,
/// `text-model` (whose server says it has no tools) writes Hermes tags, `mute-model` never calls.
fn probe_answer(req: &Value) -> support::fake_ollama::Reply {
    let prompt = support::fake_ollama::last_message(req)["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let calls: Vec<(&str, Value)> = if prompt.contains("17 + 25") {
        vec![("calculator__add", json!({"a": 17, "b": 25}))]
    } else if prompt.contains("6 times 7") {
        vec![
            ("calculator__multiply", json!({"a": 6, "b": 7})),
            ("calculator__add", json!({"a": 100, "b": 23})),
        ]
    } else if prompt.contains("Team lunch") {
        vec![(
            "calendar__create_event",
            json!({"title": "Team lunch", "when": {"date": "2025-03-14", "time": "12:30"},
                   "attendees": ["Ada", "Grace"]}),
        )]
    } else if prompt.contains("twelve and thirty") {
        vec![("calculator__add", json!({"a": 12, "b": 30}))]
    } else {
        vec![]
    };
    match req["model"].as_str().unwrap_or_default() {
        "native-model" if !calls.is_empty() => {
            let c: Vec<(&str, &str, Value)> =
                calls.iter().map(|(n, a)| ("c", *n, a.clone())).collect();
            Stream::new().tool_calls(&c).done().reply()
        }
        "text-model" if !calls.is_empty() => {
            let text: String = calls
                .iter()
                .map(|(n, a)| {
                    format!(
                        "<tool_call>\n{}\n</tool_call>\n",
                        json!({"name": n, "arguments": a})
                    )
                })
                .collect();
            Stream::new().text(&text).done().reply()
        }
        _ => Stream::new().text("Paris").done().reply(),
    }
}

/// Picks `model` in the model picker, opens the models dialog and runs the check; waits until
/// it is done.
async fn check_in_window(c: &fantoccini::Client, model: &str) {
    c.execute(
        "const s = document.querySelector('#model-select'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));",
        vec![json!(model)],
    )
    .await
    .unwrap();
    click(c, "#models-button").await;
    // the dialog done opening: the model's format and the model list filled in and the focus in
    // the download field. A click computed before the list came in could land where the button had
    // been (the dialog was centered and grew both ways; now it is anchored at the top) and start
    // nothing: CI saw it now and then, the check at status "", 0 rows, Check enabled.
    wait_until(
        c,
        &format!(
            "document.querySelector('#check-model-name').textContent === '{model}' \
             && document.querySelector('#check-format').textContent !== '' \
             && document.querySelectorAll('#models-list li').length > 0 \
             && document.activeElement === document.querySelector('#pull-name')"
        ),
    )
    .await;
    click(c, "#check-start").await;
    // done: its proposal shown and Check enabled again; a timeout says where the check stood
    // (this wait has timed out now and then in CI, with nothing else to go on)
    let t = Instant::now();
    loop {
        let now = c
            .execute(
                "return [!document.querySelector('#check-proposal').hidden && !document.querySelector('#check-start').disabled,
                         document.querySelector('#check-status').textContent,
                         document.querySelector('#check-start').disabled,
                         document.querySelectorAll('#check-table tbody tr').length];",
                vec![],
            )
            .await
            .unwrap();
        if now[0] == json!(true) {
            return;
        }
        assert!(
            t.elapsed() < WAIT,
            "the check of {model} never ended: [done, status, Check disabled, rows] = {now}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every row of the check's table: (probe, mode, outcome, passed).
async fn check_rows(c: &fantoccini::Client) -> Vec<(String, String, String, bool)> {
    let v = c
        .execute(
            "return [...document.querySelectorAll('#check-table tbody tr')].map((r) => [r.dataset.probe, r.dataset.mode, r.querySelector('.check-outcome').textContent, r.classList.contains('passed')]);",
            vec![],
        )
        .await
        .unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().unwrap().to_string(),
                r[2].as_str().unwrap().to_string(),
                r[3].as_bool().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn checking_tool_use_shows_each_probe_proposes_a_mode_and_is_remembered() {
    let fake = FakeOllama::start().await;
    fake.set_models(&["native-model", "text-model", "mute-model"]);
    fake.set_capabilities("text-model", &["completion"]);
    fake.set_template("{{ '<tool_call>' }}");
    fake.set_responder(probe_answer);
    let (home, config_dir) = app_home();
    let settings = json!({"llmUrl": fake.url, "model": "native-model"});
    std::fs::write(config_dir.join("settings.json"), settings.to_string()).unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    wait_until(
        &c,
        "document.querySelectorAll('#model-select option').length === 3",
    )
    .await;

    // a model that calls natively: five probes passed, native proposed; its format shown
    check_in_window(&c, "native-model").await;
    let rows = check_rows(&c).await;
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert!(rows.iter().all(|r| r.1 == "native" && r.3), "{rows:?}");
    assert!(rows[0].2.contains("native call"), "{rows:?}");
    assert!(rows[4].2.contains("no call"), "{rows:?}");
    assert_eq!(
        text_content(&c, "#check-proposal-mode").await,
        "Tools: native"
    );
    assert!(text_content(&c, "#check-format")
        .await
        .contains("Hermes / Qwen 2.5 (<tool_call>) (from its chat template)"));
    screenshot(&c, "model-check.png").await;
    click(&c, "#models-close").await;

    // a model without native tools that writes its calls in text: checked in text, the family
    // named, and "Use it" sets its tool mode
    check_in_window(&c, "text-model").await;
    let rows = check_rows(&c).await;
    assert!(rows.iter().all(|r| r.1 == "text" && r.3), "{rows:?}");
    assert!(
        rows[0].2.contains("recovered from text (hermes)"),
        "{rows:?}"
    );
    assert_eq!(
        text_content(&c, "#check-proposal-mode").await,
        "Tools: in text"
    );
    click(&c, "#check-apply").await;
    let settings_file = config_dir.join("settings.json");
    let t = Instant::now();
    loop {
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
        if saved["toolModes"]["text-model"] == "text" {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{saved}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    click(&c, "#models-close").await;

    // a model that cannot call tools: both ways tried, proposed off, nothing to apply
    check_in_window(&c, "mute-model").await;
    let rows = check_rows(&c).await;
    assert_eq!(rows.len(), 10, "{rows:?}");
    assert!(rows[0].2.contains("no call") && !rows[0].3, "{rows:?}");
    assert!(text_content(&c, "#check-proposal-mode")
        .await
        .starts_with("Off"));
    assert!(c
        .execute(
            "return document.querySelector('#check-apply').hidden;",
            vec![]
        )
        .await
        .unwrap()
        .as_bool()
        .unwrap());
    click(&c, "#models-close").await;

    // remembered: the native model's check shows again when the dialog opens
    c.execute(
        "const s = document.querySelector('#model-select'); s.value = 'native-model'; s.dispatchEvent(new Event('change'));",
        vec![],
    )
    .await
    .unwrap();
    click(&c, "#models-button").await;
    wait_until(
        &c,
        "document.querySelector('#check-status').textContent.startsWith('Last checked')",
    )
    .await;
    assert_eq!(check_rows(&c).await.len(), 5);

    // cancelled while it runs: the first probe is answered, the second never is (the server
    // stalls until the check lets go of it); Cancel ends it with the probe so far, "Stopped."
    let answered = std::sync::atomic::AtomicBool::new(false);
    fake.set_responder(move |req: &Value| {
        if !answered.swap(true, std::sync::atomic::Ordering::SeqCst) {
            probe_answer(req)
        } else {
            Stream::new().text("Let me").reply().ending(End::Stall)
        }
    });
    click(&c, "#check-start").await;
    wait_until(&c, "!document.querySelector('#check-cancel').hidden && document.querySelectorAll('#check-table tbody tr').length === 1 && document.querySelector('#check-status').textContent.includes('2 of')").await;
    click(&c, "#check-cancel").await;
    wait_until(
        &c,
        "document.querySelector('#check-status').textContent === 'Stopped.'",
    )
    .await;
    assert_eq!(check_rows(&c).await.len(), 1);
    c.close().await.unwrap();
}
