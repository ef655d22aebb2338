//! Files and images in the conversation, in the real window: an image pasted and one dropped (a
//! ClipboardEvent and a DragEvent whose DataTransfer holds a File made from bytes, as the page
//! gets them from WebKit), a text file picked in the system's dialog and a PDF dropped; sent together;
//! still there after a restart, and found by search. A decompression-bomb PNG and a corrupt PDF
//! are refused with a note. A model that does not see images is named, with those that do.

use base64::Engine as _;
use fantoccini::{Client, Locator};
use serde_json::{json, Value};

use crate::app::*;
use crate::support::fake_ollama::{last_message, FakeOllama, Stream, MODEL};
use crate::support::samples;

/// Dispatches a paste of a file `name` (of `mime`, holding `bytes`) on the message box, or a drop
/// of it on the messages (`drop`); true when the page took it (prevented the default).
pub(crate) async fn hand_over(
    c: &Client,
    name: &str,
    mime: &str,
    bytes: &[u8],
    drop: bool,
) -> bool {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let v = c
        .execute(
            r#"const [name, type, b64, drop] = arguments;
               const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
               const dt = new DataTransfer();
               dt.items.add(new File([bytes], name, { type }));
               const make = (kind, init) => {
                 const ev = drop ? new DragEvent(kind, { ...init, dataTransfer: dt }) : new ClipboardEvent(kind, { ...init, clipboardData: dt });
                 // an engine that does not take the data in the constructor: set it on the event
                 const key = drop ? 'dataTransfer' : 'clipboardData';
                 if (!ev[key]) Object.defineProperty(ev, key, { value: dt });
                 return ev;
               };
               const init = { bubbles: true, cancelable: true };
               if (drop) {
                 document.querySelector('#messages').dispatchEvent(make('dragover', init));
                 const ev = make('drop', init);
                 document.querySelector('#messages').dispatchEvent(ev);
                 return ev.defaultPrevented;
               }
               const ev = make('paste', init);
               document.querySelector('#input').dispatchEvent(ev);
               return ev.defaultPrevented;"#,
            vec![json!(name), json!(mime), json!(b64), json!(drop)],
        )
        .await
        .unwrap();
    v == json!(true)
}

async fn wait_count(c: &Client, css: &str, n: usize) {
    wait_until(
        c,
        &format!("document.querySelectorAll({}).length === {n}", json!(css)),
    )
    .await;
}

/// 📎 → "A file from this computer…", and `path` typed into the dialog.
async fn pick_file(c: &Client, path: &std::path::Path) {
    click(c, "#attach").await;
    wait_css(c, "#composer-menu [data-action='attach-file']").await;
    click(c, "#composer-menu [data-action='attach-file']").await;
    pick_in_file_dialog("Attach files", path).await;
}

/// Waits until `n` documents are attached; a refusal note instead fails with its words.
async fn picked(c: &Client, n: usize) {
    wait_until(
        c,
        &format!("document.querySelectorAll('#files .file-chip.document').length === {n} || document.querySelector('#attach-note').textContent.trim() !== ''"),
    )
    .await;
    let note = text_content(c, "#attach-note").await;
    assert!(note.trim().is_empty(), "refused: {note}");
}

/// Types `q` into the library's search box: the hits' text.
async fn search(c: &Client, q: &str) -> String {
    let s = wait_css(c, "#search").await;
    s.clear().await.unwrap();
    s.send_keys(q).await.unwrap();
    wait_css(c, "#conversation-list .hit").await;
    text_content(c, "#conversation-list").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn pasted_dropped_and_picked_files_go_with_the_message_and_survive_a_restart() {
    let fake = FakeOllama::start().await;
    fake.set_capabilities(MODEL, &["completion", "tools", "vision"]);
    fake.set_responder(|_: &Value| {
        Stream::new()
            .text("Two pictures, a plan and a census.")
            .done()
            .reply()
    });
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url}).to_string(),
    )
    .unwrap();
    let files = home.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let notes = files.join("otter-plan.md");
    std::fs::write(&notes, "# Otter plan\n- count the otters at dawn\n").unwrap();
    let report = files.join("census.pdf");
    std::fs::write(
        &report,
        samples::pdf(&[&["Quarterly beaver census", "Beavers counted: 17"]]),
    )
    .unwrap();
    let broken = files.join("broken.pdf");
    std::fs::write(&broken, samples::corrupt_pdf()).unwrap();
    let App { c, driver } = App::launch(home.path()).await;

    // an image pasted into the message box, one dropped on the window
    assert!(
        hand_over(
            &c,
            "shot.png",
            "image/png",
            &samples::screenshot_png(400, 300),
            false
        )
        .await
    );
    wait_count(&c, "#files .file-chip.image", 1).await;
    assert!(
        hand_over(
            &c,
            "beach.jpg",
            "image/jpeg",
            &samples::photo_jpeg(600, 400),
            true
        )
        .await
    );
    wait_count(&c, "#files .file-chip.image", 2).await;
    // a text pasted stays text: the page lets WebKit paste it
    let text_paste = c
        .execute(
            "const dt = new DataTransfer(); dt.setData('text/plain', 'hi');
             let ev = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
             if (!ev.clipboardData) Object.defineProperty(ev, 'clipboardData', { value: dt });
             document.querySelector('#input').dispatchEvent(ev); return ev.defaultPrevented;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(text_paste, json!(false));
    // a text file and a PDF picked in the system's dialog
    pick_file(&c, &notes).await;
    picked(&c, 1).await;
    // the PDF dropped (a second pick in the same GTK dialog is not reliably typed into by
    // xdotool: the dialog opens in its last folder and ignores the typed location at times)
    assert!(
        hand_over(
            &c,
            "census.pdf",
            "application/pdf",
            &std::fs::read(&report).unwrap(),
            true
        )
        .await
    );
    picked(&c, 2).await;
    let chips = text_content(&c, "#files").await;
    assert!(
        chips.contains("shot.png") && chips.contains("census.pdf") && chips.contains("1 page"),
        "{chips}"
    );
    // the thumbnails are data: URLs the engine built
    let thumb: Value = c
        .execute(
            "return document.querySelector('#files .file-chip.image img').src;",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        thumb.as_str().unwrap().starts_with("data:image/"),
        "{thumb}"
    );
    // the context meter counts them before anything is sent
    let meter = text_content(&c, "#context-meter").await;
    assert!(meter.contains("with attachments"), "{meter}");
    // a decompression bomb and a corrupt PDF are refused with a note, and the window goes on
    assert!(
        hand_over(
            &c,
            "bomb.png",
            "image/png",
            &samples::bomb_png(100_000),
            false
        )
        .await
    );
    wait_css(&c, "#attach-note .attach-error").await;
    let note = text_content(&c, "#attach-note").await;
    assert!(
        note.contains("bomb.png") && note.contains("100000×100000"),
        "{note}"
    );
    assert!(
        hand_over(
            &c,
            "broken.pdf",
            "application/pdf",
            &std::fs::read(&broken).unwrap(),
            true
        )
        .await
    );
    wait_count(&c, "#attach-note .attach-error", 2).await;
    let note = text_content(&c, "#attach-note").await;
    assert!(
        note.contains("broken.pdf") && note.contains("PDF cannot be read"),
        "{note}"
    );
    assert_eq!(
        count(&c, "#files .file-chip").await,
        4,
        "nothing else was attached"
    );
    screenshot(&c, "attachments.png").await;

    send(&c, "What is in these?").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('census')",
    )
    .await;
    let sent = last_message(&fake.chat_requests()[0]);
    assert_eq!(sent["images"].as_array().unwrap().len(), 2);
    let content = sent["content"].as_str().unwrap();
    assert!(
        content.starts_with(
            "What is in these?\n\n<attachment name=\"otter-plan.md\" type=\"text/plain\">"
        ),
        "{content}"
    );
    assert!(
        content.contains("count the otters at dawn") && content.contains("Beavers counted: 17")
    );
    // the composer is empty again; the message shows the images and the files
    assert_eq!(count(&c, "#files .file-chip").await, 0);
    assert_eq!(count(&c, ".msg.user .image-strip .thumb").await, 2);
    assert_eq!(count(&c, ".msg.user details.attachment").await, 2);
    // an image opens full size
    click(&c, ".msg.user .image-strip .thumb").await;
    wait_css(&c, "#image-dialog[open] img.full-image:not(.loading)").await;
    let full: Value = c
        .execute(
            "const i = document.querySelector('#image-dialog img.full-image'); return [i.src.slice(0, 22), i.naturalWidth];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(full[0], "data:image/png;base64,", "{full}");
    assert_eq!(full[1], 400);
    screenshot(&c, "attachment-full-size.png").await;
    c.execute("document.querySelector('#image-dialog').close();", vec![])
        .await
        .unwrap();
    c.close().await.unwrap();
    drop(driver);

    // a restart: the conversation shows its images and files, and search finds them
    let App { c, driver: _driver } = App::launch(home.path()).await;
    click(&c, "#conversation-list .conv").await;
    wait_count(&c, ".msg.user .image-strip .thumb", 2).await;
    assert_eq!(count(&c, ".msg.user details.attachment").await, 2);
    let names = text_content(&c, ".msg.user").await;
    assert!(
        names.contains("otter-plan.md") && names.contains("census.pdf"),
        "{names}"
    );
    let hits = search(&c, "beaver").await;
    assert!(hits.contains("What is in these?"), "the PDF's text: {hits}");
    let hits = search(&c, "beach").await;
    assert!(
        hits.contains("What is in these?"),
        "an image's name: {hits}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_model_that_does_not_see_images_is_named_and_one_that_does_is_offered() {
    let fake = FakeOllama::start().await;
    fake.set_models(&[MODEL, "llava:7b"]);
    fake.set_capabilities(MODEL, &["completion", "tools"]);
    fake.set_capabilities("llava:7b", &["completion", "vision"]);
    fake.set_responder(|_: &Value| Stream::new().text("A screenshot.").done().reply());
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        json!({"llmUrl": fake.url, "model": MODEL}).to_string(),
    )
    .unwrap();
    let App { c, driver: _driver } = App::launch(home.path()).await;
    wait_until(
        &c,
        &format!("document.querySelector('#model-select').value === '{MODEL}'"),
    )
    .await;
    assert!(
        hand_over(
            &c,
            "shot.png",
            "image/png",
            &samples::screenshot_png(300, 200),
            false
        )
        .await
    );
    wait_css(
        &c,
        "#attach-note .vision-note button[data-model='llava:7b']",
    )
    .await;
    let note = text_content(&c, "#attach-note").await;
    assert!(
        note.contains(&format!("{MODEL} does not see images")),
        "{note}"
    );
    screenshot(&c, "vision-note.png").await;
    // nothing is sent without the image
    send(&c, "what is this?").await;
    wait_css(&c, ".toast").await;
    assert!(fake.chat_requests().is_empty());
    assert_eq!(
        count(&c, "#files .file-chip.image").await,
        1,
        "still attached"
    );
    // the offered model is picked; the note goes; the message goes with its image
    click(&c, "#attach-note button[data-model='llava:7b']").await;
    wait_until(
        &c,
        "document.querySelector('#model-select').value === 'llava:7b'",
    )
    .await;
    wait_until(&c, "document.querySelector('#attach-note').hidden").await;
    click(&c, "#send").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete')?.textContent.includes('A screenshot.')",
    )
    .await;
    let req = &fake.chat_requests()[0];
    assert_eq!(req["model"], "llava:7b");
    assert_eq!(last_message(req)["images"].as_array().unwrap().len(), 1);
    assert!(c
        .find(Locator::Css(".msg.user .image-strip .thumb"))
        .await
        .is_ok());
}
