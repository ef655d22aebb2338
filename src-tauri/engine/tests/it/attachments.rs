//! Images and files in the conversation: what the user attaches reaches the model in each
//! provider's shape, its bytes the re-encoded image (no metadata); a tool's image reaches a model
//! that sees images and not one that does not; a server's sampling request with an image too;
//! attachments are kept once, found by search, exported and imported, and dropped when no
//! conversation refers to them.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Value};
use switchboard_engine::chat::{attach_file, with_attachments, AttachedFile, Attachment, ImageRef};
use switchboard_engine::llm::OpenAiClient;
use switchboard_engine::store::Store;
use switchboard_engine::TurnRequest;

use crate::support::fake_ollama::{last_message, Sse, Stream, MODEL};
use crate::support::samples;
use crate::support::*;

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Attaches `bytes` as `name`: the image it became.
async fn attach_image(store: &Store, name: &str, bytes: Vec<u8>) -> ImageRef {
    match attach_file(store, name, bytes, 1024).await.unwrap() {
        AttachedFile::Image { image, tokens } => {
            assert!(tokens >= 256);
            ImageRef {
                sha256: image.sha256,
                name: image.name,
            }
        }
        other => panic!("not an image: {other:?}"),
    }
}

fn with_images(text: &str, id: Option<i64>, images: Vec<ImageRef>) -> TurnRequest {
    TurnRequest {
        images,
        ..say(text, id)
    }
}

/// The files kept in the rig's attachments folder.
fn kept_files(r: &Rig) -> Vec<std::path::PathBuf> {
    let dir = r.dir.path().join("attachments");
    let mut out = Vec::new();
    for d in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        out.extend(
            std::fs::read_dir(d.path())
                .unwrap()
                .flatten()
                .map(|f| f.path()),
        );
    }
    out
}

/// What a vision model's server says it can do.
const VISION: &[&str] = &["completion", "tools", "vision"];

/// A rig with no servers whose model sees images and answers `reply` to everything.
async fn vision_rig(reply: &'static str) -> Rig {
    let r = rig(vec![]).await;
    r.fake.set_capabilities(MODEL, VISION);
    r.fake
        .set_responder(move |_: &Value| Stream::new().text(reply).done().reply());
    r
}

#[tokio::test]
async fn an_attached_photo_reaches_an_ollama_vision_model_upright_and_without_its_metadata() {
    let r = vision_rig("A gradient.").await;
    // 2000×1500 as stored, EXIF orientation 6: 1500×2000 as seen
    let photo = samples::photo_jpeg(2000, 1500);
    assert!(contains(&photo, samples::CAMERA.as_bytes()));
    let img = attach_image(&r.store, "/home/ada/Pictures/IMG_0001.jpg", photo.clone()).await;
    assert_eq!(img.name, "IMG_0001.jpg", "the last part of the name only");
    let (s, _) = collecting(
        &r.engine(3),
        with_images("what is this?", None, vec![img.clone()]),
    )
    .await;
    assert!(s.llm_error.is_none(), "{s:?}");

    let sent = last_message(&r.fake.chat_requests()[0]);
    assert_eq!(sent["content"], "what is this?");
    let images = sent["images"].as_array().unwrap();
    assert_eq!(images.len(), 1);
    let bytes = b64(images[0].as_str().unwrap());
    // the bytes kept are the bytes sent, and they are the re-encoded image
    let kept = r.store.kept_image(&img.sha256).await.unwrap();
    assert_eq!(bytes, kept.bytes);
    assert!(!contains(&bytes, samples::CAMERA.as_bytes()));
    assert!(!contains(&bytes, b"Exif"));
    assert!(switchboard_engine::media::is_clean(&bytes));
    let decoded = image::load_from_memory(&bytes).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (768, 1024));

    // kept with the message, found by its name, and sent again with the history
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    assert_eq!(conv.messages[0].attachments[0].name, "IMG_0001.jpg");
    assert!(conv.messages[0].attachments[0]
        .thumbnail
        .starts_with("data:image/jpeg;base64,"));
    let hits = r.store.search("IMG_0001", 10).await.unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].message_id, conv.messages[0].id);
    // the same photo attached again is kept once
    let again = attach_image(&r.store, "again.jpg", photo).await;
    assert_eq!(again.sha256, img.sha256);
    collecting(
        &r.engine(3),
        with_images("and this?", Some(s.conversation_id), vec![again]),
    )
    .await;
    let second = &r.fake.chat_requests()[1];
    let with: Vec<&Value> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("images").is_some())
        .collect();
    assert_eq!(with.len(), 2, "the history's image and the new one");
    assert_eq!(kept_files(&r).len(), 1);
    // the debug view keeps a note, not megabytes of base64
    let calls = r.store.llm_calls(s.conversation_id).await.unwrap();
    let recorded = calls[0].request.to_string();
    assert!(recorded.contains("[image: "), "{recorded:.300}");
    assert!(recorded.len() < 10_000);
}

#[tokio::test]
async fn a_model_that_does_not_see_images_is_refused_before_anything_is_kept() {
    let r = rig(vec![]).await;
    r.fake.set_capabilities(MODEL, &["completion", "tools"]);
    let img = attach_image(&r.store, "shot.png", samples::screenshot_png(300, 200)).await;
    let err = r
        .engine(3)
        .run_turn(
            with_images("look", None, vec![img]),
            &|_| {},
            Default::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not see images"), "{err}");
    assert!(r.store.list_conversations().await.unwrap().is_empty());
    assert!(r.fake.chat_requests().is_empty());
}

#[tokio::test]
async fn openai_compatible_servers_get_image_url_parts() {
    let r = rig(vec![]).await;
    r.fake.set_vision(true);
    r.fake.set_openai_responder(|_: &Value| {
        Sse::new()
            .text("A screenshot.")
            .finish("stop")
            .done()
            .reply()
    });
    let img = attach_image(&r.store, "shot.png", samples::screenshot_png(300, 200)).await;
    let mut engine = r.engine(3);
    engine.llm = Arc::new(OpenAiClient::new(&r.fake.url, None));
    let (s, _) = collecting(&engine, with_images("read it", None, vec![img.clone()])).await;
    assert!(s.llm_error.is_none(), "{s:?}");
    let sent = r.fake.openai_requests()[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        sent["content"][0],
        json!({"type": "text", "text": "read it"})
    );
    let url = sent["content"][1]["image_url"]["url"].as_str().unwrap();
    let data = url.strip_prefix("data:image/png;base64,").unwrap();
    assert_eq!(
        b64(data),
        r.store.kept_image(&img.sha256).await.unwrap().bytes
    );
}

/// A rig with the image server, the model (with capabilities `caps`) calling `tool` once then
/// answering.
async fn image_tool_rig(tool: &str, caps: &[&str]) -> Rig {
    let r = rig(vec![("images", python("image_server.py"))]).await;
    r.fake.set_capabilities(MODEL, caps);
    r.fake.set_responder(call_then_answer(vec![(
        "c1",
        &format!("images__{tool}"),
        json!({}),
    )]));
    r
}

#[tokio::test]
async fn a_tools_image_reaches_a_vision_model_on_the_tool_message() {
    let r = image_tool_rig("screenshot", VISION).await;
    let (s, _) = r.turn("take a screenshot").await;
    assert!(s.llm_error.is_none(), "{s:?}");
    let tool = &tool_messages(&r.fake.chat_requests()[1])[0];
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("[image image/png]"),
        "{tool}"
    );
    let bytes = b64(tool["images"][0].as_str().unwrap());
    assert!(
        !contains(&bytes, b"secret-location"),
        "the text chunk is gone"
    );
    assert!(switchboard_engine::media::is_clean(&bytes));
    let img = image::load_from_memory(&bytes).unwrap();
    assert_eq!((img.width(), img.height()), (640, 400));
    // kept with the conversation: the next turn sends it again
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    let result = conv
        .messages
        .iter()
        .find(|m| m.role == switchboard_engine::llm::Role::Tool)
        .unwrap();
    assert_eq!(result.attachments[0].name, "images__screenshot image 1");
    // an embedded image resource too
    let r = image_tool_rig("photo", VISION).await;
    r.turn("a photo").await;
    let tool = &tool_messages(&r.fake.chat_requests()[1])[0];
    assert_eq!(tool["images"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_model_that_does_not_see_images_keeps_the_text_note() {
    let r = image_tool_rig("screenshot", &["completion", "tools"]).await;
    let (s, _) = r.turn("take a screenshot").await;
    assert!(s.llm_error.is_none());
    let tool = &tool_messages(&r.fake.chat_requests()[1])[0];
    assert!(tool.get("images").is_none(), "{tool}");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("[image image/png]"),
        "{tool}"
    );
}

#[tokio::test]
async fn openai_compatible_servers_get_a_tools_image_after_the_tool_messages() {
    let r = rig(vec![("images", python("image_server.py"))]).await;
    r.fake.set_vision(true);
    r.fake.set_openai_responder(|req: &Value| {
        let messages = req["messages"].as_array().unwrap();
        if messages.iter().any(|m| m["role"] == "tool") {
            Sse::new()
                .text("I see lines.")
                .finish("stop")
                .done()
                .reply()
        } else {
            Sse::new()
                .tool_call(0, "c1", "images__screenshot", "{}")
                .finish("tool_calls")
                .done()
                .reply()
        }
    });
    let mut engine = r.engine(3);
    engine.llm = Arc::new(OpenAiClient::new(&r.fake.url, None));
    let (s, _) = collecting(&engine, say("screenshot please", None)).await;
    assert!(s.llm_error.is_none(), "{s:?}");
    let messages = r.fake.openai_requests()[1]["messages"]
        .as_array()
        .unwrap()
        .clone();
    let at = messages.iter().position(|m| m["role"] == "tool").unwrap();
    // the tool message as the API wants it (text only), then the image, labelled as its output
    assert!(messages[at]["content"].is_string());
    let next = &messages[at + 1];
    assert_eq!(next["role"], "user");
    let label = next["content"][0]["text"].as_str().unwrap();
    assert!(
        label.contains("images__screenshot") && label.contains("c1"),
        "{label}"
    );
    let url = next["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,"));
    assert_eq!(at + 2, messages.len());
}

#[tokio::test]
async fn a_tools_image_too_big_to_keep_raw_still_reaches_the_model_and_a_bomb_does_not() {
    let r = image_tool_rig("big", VISION).await;
    let (s, _) = r.turn("big").await;
    let tool = &tool_messages(&r.fake.chat_requests()[1])[0];
    let img = image::load_from_memory(&b64(tool["images"][0].as_str().unwrap())).unwrap();
    assert_eq!((img.width(), img.height()), (1024, 1024), "downscaled");
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    assert!(
        conv.tool_calls[0].result_raw.is_none(),
        "the raw result is over 2 MB"
    );
    // the card shows the kept image instead
    let view = switchboard_engine::chat::view::conversation_view(&conv);
    let images = serde_json::to_value(&view.items).unwrap();
    assert!(images.to_string().contains("images__big image 1"));

    let r = image_tool_rig("bomb", VISION).await;
    let (s, _) = r.turn("bomb").await;
    assert!(s.llm_error.is_none());
    let tool = &tool_messages(&r.fake.chat_requests()[1])[0];
    assert!(tool.get("images").is_none());
    let content = tool["content"].as_str().unwrap();
    assert!(
        content.contains("was not passed on") && content.contains("100000×100000"),
        "{content}"
    );
}

#[tokio::test]
async fn a_sampling_request_with_an_image_reaches_a_vision_model() {
    let r = rig(vec![("images", python("image_server.py"))]).await;
    r.fake
        .set_capabilities(MODEL, &["completion", "tools", "vision"]);
    let tool_turn = call_then_answer(vec![("c1", "images__look", json!({}))]);
    r.fake.set_responder(move |req: &Value| {
        // the server's own request has no tools
        if req.get("tools").is_none() && last_message(req).get("images").is_some() {
            return Stream::new().text("grey lines").done().reply();
        }
        tool_turn(req)
    });
    let mut engine = r.engine(3);
    engine.broker = Script::sampling(vec![true]).broker();
    let (s, _) = collecting(&engine, say("look at the screen", None)).await;
    assert!(s.llm_error.is_none(), "{s:?}");
    let sampled = r
        .fake
        .chat_requests()
        .into_iter()
        .find(|q| q.get("tools").is_none())
        .expect("the sampling request");
    let image = last_message(&sampled)["images"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!contains(&b64(&image), b"secret-location"));
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    assert_eq!(
        conv.tool_calls[0].result.as_deref(),
        Some("the model said: grey lines")
    );
}

#[tokio::test]
async fn attachments_survive_export_and_import_byte_for_byte_and_go_when_nothing_refers_to_them() {
    let r = vision_rig("ok").await;
    let img = attach_image(&r.store, "shot.png", samples::screenshot_png(300, 200)).await;
    let (s, _) = collecting(&r.engine(3), with_images("see", None, vec![img.clone()])).await;
    let doc = r.store.export_json(s.conversation_id).await.unwrap();
    assert_eq!(doc.messages[0].attachments[0].sha256, img.sha256);
    assert_eq!(doc.files.len(), 1);
    // into another store: the image comes along, and exports the same
    let other = Store::open_in_memory().await.unwrap();
    let id = other.import_json(&doc, None).await.unwrap();
    let again = other.export_json(id).await.unwrap();
    assert_eq!(
        serde_json::to_value(&again.messages).unwrap(),
        serde_json::to_value(&doc.messages).unwrap()
    );
    assert_eq!(again.files, doc.files);
    assert_eq!(
        other.kept_image(&img.sha256).await.unwrap().bytes,
        r.store.kept_image(&img.sha256).await.unwrap().bytes
    );
    // a duplicate names the same file
    let copy = r
        .store
        .duplicate_conversation(s.conversation_id)
        .await
        .unwrap();
    assert_eq!(
        r.store.conversation(copy).await.unwrap().messages[0].attachments[0].sha256,
        img.sha256
    );

    // a file whose bytes are not what its name says is refused; one with metadata is made again
    let mut lying = doc.clone();
    lying.files[0].data =
        base64::engine::general_purpose::STANDARD.encode(samples::screenshot_png(10, 10));
    let err = other.import_json(&lying, None).await.unwrap_err();
    assert!(err.to_string().contains("not what its name says"), "{err}");
    let mut foreign = doc.clone();
    let png = samples::screenshot_png(50, 40);
    let sha = switchboard_engine::media::sha256_hex(&png);
    foreign.files[0] = switchboard_engine::store::exchange::ExportedFile {
        sha256: sha.clone(),
        mime_type: "image/png".into(),
        data: base64::engine::general_purpose::STANDARD.encode(&png),
    };
    foreign.messages[0].attachments[0].sha256 = sha.clone();
    let id = other.import_json(&foreign, None).await.unwrap();
    let kept = &other.conversation(id).await.unwrap().messages[0].attachments[0];
    assert_ne!(kept.sha256, sha, "made again without its text chunk");
    let bytes = other.kept_image(&kept.sha256).await.unwrap().bytes;
    assert!(!contains(&bytes, samples::PNG_COMMENT.as_bytes()));
    let mut missing = doc.clone();
    missing.files.clear();
    assert!(other.import_json(&missing, None).await.is_err());

    // an image whose file is gone from the disk: the rest of the conversation still exports,
    // without it, and the export imports
    let files = kept_files(&r);
    let saved: Vec<_> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    for f in &files {
        std::fs::remove_file(f).unwrap();
    }
    let without = r.store.export_json(s.conversation_id).await.unwrap();
    assert!(without.files.is_empty());
    assert!(without.messages[0].attachments.is_empty());
    assert_eq!(without.messages.len(), doc.messages.len());
    other.import_json(&without, None).await.unwrap();
    for (f, bytes) in files.iter().zip(saved) {
        std::fs::write(f, bytes).unwrap();
    }

    // deleted for good (on the next open): the file goes once nothing refers to it (an hour on)
    r.store
        .delete_conversation(s.conversation_id)
        .await
        .unwrap();
    r.store.delete_conversation(copy).await.unwrap();
    drop(r.store.clone());
    let path = r.dir.path().join("db.sqlite3");
    let reopened = Store::open(&path).await.unwrap();
    assert_eq!(
        kept_files(&r).len(),
        1,
        "young files stay (an unsent attachment)"
    );
    age_attachments(&path, &kept_files(&r));
    drop(reopened);
    let _ = Store::open(&path).await.unwrap();
    assert!(kept_files(&r).is_empty(), "{:?}", kept_files(&r));
}

/// Makes every kept image two hours old (row and file), as if attached long ago.
fn age_attachments(db: &std::path::Path, files: &[std::path::PathBuf]) {
    let c = rusqlite_connection(db);
    c.execute(
        "UPDATE attachments SET created_at = created_at - 7200000",
        [],
    )
    .unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for f in files {
        std::fs::File::options()
            .write(true)
            .open(f)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
}

fn rusqlite_connection(db: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(db).unwrap()
}

#[tokio::test]
async fn text_files_and_pdfs_go_into_the_message_and_are_found_by_search() {
    let r = rig(vec![]).await;
    let pdf = samples::pdf(&[&["Quarterly otters report", "Otters counted: 42"]]);
    let AttachedFile::Document {
        text, mime, pages, ..
    } = attach_file(&r.store, "report.pdf", pdf, 1024)
        .await
        .unwrap()
    else {
        panic!("a document")
    };
    assert_eq!((mime.as_str(), pages), ("application/pdf", Some(1)));
    assert!(text.contains("Otters counted: 42"), "{text}");
    let AttachedFile::Document { text: notes, .. } = attach_file(
        &r.store,
        "notes.md",
        "# Plan\n- feed the beavers\n".into(),
        1024,
    )
    .await
    .unwrap() else {
        panic!("a document")
    };
    let doc = |name: &str, mime: &str, text: String| Attachment {
        name: name.into(),
        uri: None,
        mime: Some(mime.into()),
        text,
    };
    let message = with_attachments(
        "",
        &[
            doc("report.pdf", &mime, text),
            doc("notes.md", "text/plain", notes),
        ],
    );
    r.fake
        .set_responder(|_: &Value| Stream::new().text("42 otters").done().reply());
    let (s, _) = r.turn(&message).await;
    let sent = last_message(&r.fake.chat_requests()[0]);
    let content = sent["content"].as_str().unwrap();
    assert!(
        content.starts_with("<attachment name=\"report.pdf\" type=\"application/pdf\">\n"),
        "{content}"
    );
    assert!(content.contains("feed the beavers"));
    let conv = r.store.conversation(s.conversation_id).await.unwrap();
    assert_eq!(
        conv.summary.title, "report.pdf",
        "named after its first attachment"
    );
    for word in ["Quarterly", "beavers", "notes"] {
        let hits = r.store.search(word, 10).await.unwrap();
        assert_eq!(hits.len(), 1, "{word}: {hits:?}");
    }
    for bad in [
        samples::corrupt_pdf(),
        samples::pdf(&[&[]]),
        samples::bomb_png(100_000),
    ] {
        let err = attach_file(&r.store, "bad", bad, 1024).await.unwrap_err();
        assert!(!err.to_string().is_empty());
    }
    // no image of a refused file is kept
    assert!(kept_files(&r).is_empty());
}

#[tokio::test]
async fn a_task_results_image_sent_after_its_turn_reaches_a_vision_model() {
    let r = vision_rig("I see it.").await;
    // a call whose task ended after its turn, its result (with an image) waiting for the user
    let conv = r.store.create_conversation("t", MODEL).await.unwrap();
    let mut asked =
        switchboard_engine::llm::Message::new(switchboard_engine::llm::Role::User, "look");
    asked.images = vec![];
    r.store
        .append_message(
            conv,
            &asked,
            switchboard_engine::store::MessageStatus::Complete,
        )
        .await
        .unwrap();
    let reply = r
        .store
        .append_message(
            conv,
            &switchboard_engine::llm::Message::new(switchboard_engine::llm::Role::Assistant, ""),
            switchboard_engine::store::MessageStatus::Complete,
        )
        .await
        .unwrap();
    let call = switchboard_engine::llm::ToolCall {
        id: Some("c1".into()),
        name: "shots__take".into(),
        arguments: json!({}),
        written: None,
    };
    let id = r
        .store
        .start_tool_call(conv, reply, &call, "shots", "take")
        .await
        .unwrap();
    let state: switchboard_engine::mcp::TaskState =
        serde_json::from_value(json!({"taskId": "t1", "status": "working"})).unwrap();
    r.store
        .set_tool_task(id, "shots", None, &state)
        .await
        .unwrap();
    let png = samples::screenshot_png(320, 200);
    let raw = json!({"content": [
        {"type": "text", "text": "the screen"},
        {"type": "image", "mimeType": "image/png",
         "data": base64::engine::general_purpose::STANDARD.encode(&png)}
    ]});
    r.store
        .finish_late_task(
            id,
            "the screen\n[image image/png]",
            Some(&raw),
            false,
            10,
            true,
        )
        .await
        .unwrap();
    let late = TurnRequest {
        conversation_id: Some(conv),
        model: MODEL.into(),
        late_result: Some(id),
        ..Default::default()
    };
    let (s, _) = collecting(&r.engine(3), late).await;
    assert!(s.llm_error.is_none(), "{s:?}");
    let sent = r.fake.chat_requests().pop().unwrap();
    let tool = &tool_messages(&sent)[0];
    let bytes = b64(tool["images"][0].as_str().unwrap());
    assert!(switchboard_engine::media::is_clean(&bytes), "re-encoded");
    assert!(!contains(&bytes, samples::PNG_COMMENT.as_bytes()));
    // kept with the tool message, as inside a turn
    let stored = r.store.conversation(conv).await.unwrap();
    let result = stored
        .messages
        .iter()
        .find(|m| m.role == switchboard_engine::llm::Role::Tool)
        .unwrap();
    assert_eq!(result.attachments[0].name, "shots__take image 1");
}
