//! Links and images in what the model writes: an image from elsewhere is never fetched (it is a
//! link), and a link opens in the browser only after the window has shown where it really goes.
//! The "browser" is a stand-in `xdg-open` on the app's PATH that writes down what it was given.

use std::time::Duration;

use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{self, FakeOllama, Stream};

const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_link_shows_where_it_goes_before_it_opens_and_outside_images_are_links() {
    let fake = FakeOllama::start().await;
    fake.set_responder(|_req: &Value| {
        Stream::new()
            .text("Read [the official docs](https://docs.example/guide?ref=chat) first.\n\n")
            .text("![the chart](https://tracker.example/pixel.png?user=me)\n\n")
            .text(&format!("![a dot]({PNG})"))
            .done()
            .reply()
    });
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": fake_ollama::MODEL}).to_string(),
    )
    .unwrap();
    let browser = StandInBrowser::install(home.path());
    let App { c, driver: _driver } =
        App::launch_with_env(home.path(), &[("PATH", &browser.path)]).await;

    send(&c, "where do I start?").await;
    wait_css(&c, ".msg.assistant.complete .body img").await;
    // only the image the text carries is an image; the outside one is a link to it
    let images = c
        .execute(
            "return [...document.querySelectorAll('#messages img')].map((i) => i.getAttribute('src'));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(images, json!([PNG]));
    let chart = c
        .execute(
            "const a = [...document.querySelectorAll('#messages a')].find((a) => a.textContent === 'the chart');
             return a && a.getAttribute('href');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(chart, json!("https://tracker.example/pixel.png?user=me"));

    // a link: the dialog shows its site, its whole address and what its words said
    let docs = "[...document.querySelectorAll('#messages a')].find((a) => a.textContent === 'the official docs').click();";
    c.execute(docs, vec![]).await.unwrap();
    wait_css(&c, "#link-dialog[open]").await;
    assert_eq!(text_content(&c, "#link-site").await, "docs.example");
    assert_eq!(
        text_content(&c, "#link-url").await,
        "https://docs.example/guide?ref=chat"
    );
    assert_eq!(text_content(&c, "#link-words").await, "the official docs");
    screenshot(&c, "link-dialog.png").await;
    // Cancel (which has the focus) opens nothing
    let focused = c
        .execute("return document.activeElement.id;", vec![])
        .await
        .unwrap();
    assert_eq!(focused, json!("link-cancel"));
    click(&c, "#link-cancel").await;
    wait_css(&c, "#link-dialog:not([open])").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(browser.opened(), "", "cancelled: nothing opened");

    // Open, and always for this site: opened, remembered in the settings file
    c.execute(docs, vec![]).await.unwrap();
    wait_css(&c, "#link-dialog[open]").await;
    click(&c, "#link-always").await;
    click(&c, "#link-open").await;
    wait_css(&c, "#link-dialog:not([open])").await;
    assert_eq!(
        browser.wait_opened(1).await,
        "https://docs.example/guide?ref=chat\n"
    );
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(saved["trustedLinkHosts"], json!(["docs.example"]));

    // the next link to that site opens without asking; another site still asks
    c.execute(docs, vec![]).await.unwrap();
    assert_eq!(browser.wait_opened(2).await.lines().count(), 2);
    assert!(c
        .find(fantoccini::Locator::Css("#link-dialog:not([open])"))
        .await
        .is_ok());
    c.execute(
        "[...document.querySelectorAll('#messages a')].find((a) => a.textContent === 'the chart').click();",
        vec![],
    )
    .await
    .unwrap();
    wait_css(&c, "#link-dialog[open]").await;
    assert_eq!(text_content(&c, "#link-site").await, "tracker.example");
    click(&c, "#link-cancel").await;
    wait_css(&c, "#link-dialog:not([open])").await;
    assert_eq!(
        browser.opened().lines().count(),
        2,
        "cancelled: nothing more opened"
    );

    // Settings lists the site and can forget it
    click(&c, "#settings-button").await;
    wait_css(&c, "#settings-dialog[open]").await;
    assert!(text_content(&c, "#set-link-hosts")
        .await
        .contains("docs.example"));
    click(&c, "#set-link-hosts .link-host button").await;
    assert!(!text_content(&c, "#set-link-hosts")
        .await
        .contains("docs.example"));
    click(&c, "#settings-save").await;
    wait_css(&c, "#settings-dialog:not([open])").await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(saved["trustedLinkHosts"], json!([]));
    c.execute(docs, vec![]).await.unwrap();
    wait_css(&c, "#link-dialog[open]").await;
    c.close().await.unwrap();
}
