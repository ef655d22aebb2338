//! The npm MCP Apps example servers in the window: system-monitor (its app polls a tool only
//! apps may call: asked once, no card per poll), map (CesiumJS from a CDN: offline it shows its
//! own error and never starts) and pdf (a local PDF rendered in its viewer, each of its tools
//! asked about once, the context it gives the model sent with the next turn); and what the server
//! form says an app names.

use serde_json::{json, Value};

use super::*;

/// The names of the tools the model was offered, over every request it got.
fn offered(fake: &FakeOllama) -> Vec<String> {
    fake.chat_requests()
        .iter()
        .flat_map(|r| r["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["function"]["name"].as_str().map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn the_system_monitor_app_polls_a_tool_only_it_may_call_through_approval() {
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("system-monitor__get-system-info"));
    let home = app_home_with_example(&fake, "system-monitor", &[]);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    show_app(&c, "how is the machine doing?").await;
    // with the result the app starts polling poll-system-stats: asked once, on its own card, in
    // its name
    wait_css(&c, ".tool-card .app-box .app-approval").await;
    assert_eq!(
        text_content(&c, ".app-approval .approval-question").await,
        "The app “System Monitor” of system-monitor wants to run system-monitor › poll-system-stats with these arguments:"
    );
    // its polls that come meanwhile join that question (one question, which counts them), and
    // what the user most likely means, the app, is the default
    wait_until(
        &c,
        "Number(document.querySelector('.app-approval .app-waiting')?.dataset.waiting) >= 2",
    )
    .await;
    assert_eq!(count(&c, ".app-approval").await, 1);
    let default = c
        .execute(
            "return document.querySelector('.app-approval .btn.primary').dataset.action;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(default, json!("allowConversation"));
    screenshot(&c, "app-system-monitor-waiting.png").await;
    click(&c, ".app-approval [data-action='allowConversation']").await;
    // what it polled is shown in the app
    in_frame_until(
        &c,
        "/^\\d+%$/.test(document.querySelector('#memory-percent')?.textContent ?? '')",
    )
    .await;
    in_frame_until(
        &c,
        &format!(
            "document.querySelector('#info-hostname')?.textContent === {}",
            json!(hostname())
        ),
    )
    .await;
    // later polls run without asking, and without cards: its card counts them
    wait_until(
        &c,
        "Number(document.querySelector('.app-calls')?.dataset.calls) >= 3 && !document.querySelector('.app-approval')",
    )
    .await;
    assert_eq!(count(&c, ".tool-card").await, 1);
    c.execute(
        "document.querySelector('iframe.app-frame').scrollIntoView({ block: 'start' });",
        vec![],
    )
    .await
    .unwrap();
    screenshot(&c, "app-system-monitor.png").await;
    // a step, not a check: the app's own button stops its polling, so no more calls come
    click_in_app(&c, "#poll-toggle-btn").await;
    // the model was never offered the app's tool
    let offered = offered(&fake);
    assert!(
        offered.contains(&"system-monitor__get-system-info".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|n| n.contains("poll-system-stats")),
        "{offered:?}"
    );
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// server-map loads CesiumJS from its CDN before it starts talking to the host, so without the
/// network it never starts: its page renders in its frame and shows its own error. Its server's
/// form, with "Let its apps reach the sites they name" ticked, says which sites that would be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn the_map_app_renders_offline_and_its_form_says_which_sites_it_names() {
    let fake = FakeOllama::start().await;
    fake.set_responder(calls("map__show-map"));
    let home = app_home_with_calculator(&fake, "map", example_server("map", &[]));
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 2).await;
    send_and_allow(&c, "show me London").await;
    wait_css(&c, ".tool-card.ok iframe.app-frame").await;
    in_frame_until(
        &c,
        "document.querySelector('#loading')?.textContent === 'Error: Failed to load CesiumJS from CDN'",
    )
    .await;
    enter_app(&c, 0).await;
    let inside = c
        .execute(
            "return [!!document.querySelector('#cesiumContainer'), !!document.querySelector('#fullscreen-btn'), typeof Cesium];",
            vec![],
        )
        .await
        .unwrap();
    leave_app(&c).await;
    assert_eq!(inside, json!([true, true, "undefined"]));
    // it never sent ui/initialize (it connects once Cesium has loaded)
    assert_eq!(frame_state(&c).await, json!("loading"));
    screenshot(&c, "app-map-offline.png").await;

    // the form: ticking the box shows what its page declares
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server.running[data-name='map']").await;
    click(&c, ".server[data-name='map'] [data-act='edit']").await;
    wait_css(&c, "#server-form:not([hidden])").await;
    assert!(c
        .find(fantoccini::Locator::Css("#srv-app-origins[hidden]"))
        .await
        .is_ok());
    click(&c, "#srv-app-network").await;
    wait_css(&c, "#srv-app-origins .app-page").await;
    let page = c
        .execute(
            "const p = document.querySelector('#srv-app-origins .app-page');
             return [p.dataset.uri, [...p.querySelectorAll('li')].map((li) => li.textContent)];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        page,
        json!([
            "ui://cesium-map/mcp-app.html",
            [
                "talk to https://*.openstreetmap.org, https://cesium.com, https://*.cesium.com",
                "load scripts, styles, images and fonts from https://*.openstreetmap.org, https://cesium.com, https://*.cesium.com"
            ]
        ])
    );
    c.execute(
        "document.querySelector('#srv-app-origins').scrollIntoView({ block: 'center' });",
        vec![],
    )
    .await
    .unwrap();
    screenshot(&c, "app-network-consent.png").await;
    click(&c, "#srv-app-network").await;
    wait_css(&c, "#srv-app-origins[hidden]").await;
    click(&c, "#server-cancel").await;
    // a server whose tools show no app: ticking says so
    click(&c, ".server[data-name='calculator'] [data-act='edit']").await;
    click(&c, "#srv-app-network").await;
    wait_until(
        &c,
        "document.querySelector('#srv-app-origins').textContent === 'None of its tools shows an app, so this changes nothing for now.'",
    )
    .await;
    click(&c, "#server-cancel").await;
    c.close().await.unwrap();
}

/// A small one-page PDF whose page says `text` (Helvetica, not embedded).
fn tiny_pdf(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 24 Tf 72 700 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        pdf.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

/// server-pdf with a local PDF (given on its command line): its viewer reads the file through a
/// tool only it may call, asked about once for the chat, and renders the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn the_pdf_app_renders_a_local_pdf_it_reads_through_its_own_tool() {
    let scratch = tempfile::tempdir().unwrap();
    let pdf = scratch.path().join("hello.pdf");
    std::fs::write(&pdf, tiny_pdf("Hello from Switchboard")).unwrap();
    let url = format!("file://{}", pdf.display());
    let fake = FakeOllama::start().await;
    let args = json!({"url": url});
    fake.set_responder(calls_with("pdf__display_pdf", args));
    let home = app_home_with_example(&fake, "pdf", &[pdf.to_str().unwrap()]);
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 1).await;
    send_and_allow(&c, "show me the paper").await;
    // it declares the clipboard (for copying text): asked before it loads; without it, the
    // viewer still works
    wait_css(&c, ".tool-card .app-box .app-permissions").await;
    assert_eq!(
        text_content(&c, ".app-permissions .approval-question").await,
        "The app of pdf asks to write to your clipboard."
    );
    click(&c, ".app-permissions [data-action='refuse']").await;
    wait_app_ready(&c).await;
    // each of its own tools asks once, on its card, one question at a time; allowed for the
    // app, the viewer goes on
    let t = std::time::Instant::now();
    let mut asked: Vec<String> = Vec::new();
    loop {
        let asking: Value = c
            .execute(
                "return [...document.querySelectorAll('.app-approval')].map((q) => q.dataset.tool);",
                vec![],
            )
            .await
            .unwrap();
        let asking = asking.as_array().unwrap();
        assert!(asking.len() <= 1, "two questions at once: {asking:?}");
        if let Some(tool) = asking.first() {
            let tool = tool.as_str().unwrap().to_string();
            assert!(!asked.contains(&tool), "{tool} asked twice ({asked:?})");
            click(&c, ".app-approval [data-action='allowConversation']").await;
            wait_until(
                &c,
                &format!(
                    "!document.querySelector('.app-approval[data-tool={}]')",
                    json!(tool)
                ),
            )
            .await;
            asked.push(tool);
        }
        enter_app(&c, 0).await;
        // rendered: its page drawn (612 × 792 pt at 100 %) and its text in the text layer
        let shown = c
            .execute(
                "return getComputedStyle(document.querySelector('#error')).display === 'none'
                   && [...document.querySelectorAll('canvas')].some((c) => c.width === 612)
                   && (document.querySelector('.text-layer')?.textContent ?? '').includes('Hello from Switchboard');",
                vec![],
            )
            .await
            .unwrap();
        leave_app(&c).await;
        if shown == json!(true) {
            break;
        }
        assert!(t.elapsed() < WAIT, "the PDF viewer did not render its page");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    assert!(asked.contains(&"read_pdf_bytes".to_string()), "{asked:?}");
    // no card but the model's
    assert_eq!(count(&c, ".tool-card").await, 1);
    c.execute(
        "document.querySelector('iframe.app-frame').scrollIntoView({ block: 'center' });",
        vec![],
    )
    .await
    .unwrap();
    screenshot(&c, "app-pdf.png").await;
    let offered = offered(&fake);
    assert!(
        !offered.iter().any(|n| n.contains("read_pdf_bytes")),
        "{offered:?}"
    );
    every_display_mode(&c).await;
    c.close().await.unwrap();
}
