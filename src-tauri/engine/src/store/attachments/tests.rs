use super::*;
use crate::llm::{Image, Message, Role};
use crate::store::MessageStatus;

fn prepared(seed: u8) -> PreparedImage {
    let img = image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([x as u8 * seed, y as u8, seed]));
    let mut png = Vec::new();
    image::DynamicImage::from(img)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    media::prepare_image(&png, 1024).unwrap()
}

fn on(m: Message, img: &PreparedImage, name: &str) -> Message {
    Message {
        images: vec![Image {
            sha256: img.sha256.clone(),
            name: name.into(),
            mime: img.mime.into(),
            width: img.width,
            height: img.height,
            base64: "".into(),
        }],
        ..m
    }
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| std::fs::read_dir(d.path()).unwrap().count())
        .sum()
}

#[tokio::test]
async fn an_image_is_kept_once_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db.sqlite3")).await.unwrap();
    let img = prepared(3);
    let a = store.keep_image(&img, "one.png").await.unwrap();
    let b = store.keep_image(&img, "two.png").await.unwrap();
    assert_eq!(a.sha256, b.sha256);
    assert_eq!(b.name, "two.png");
    assert!(a.thumbnail.starts_with("data:image/"));
    let files = dir.path().join("attachments");
    assert_eq!(files_in(&files), 1);
    let path = files.join(&img.sha256[..2]).join(&img.sha256);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(path.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    let kept = store.kept_image(&img.sha256).await.unwrap();
    assert_eq!(kept.bytes, img.bytes);
    assert_eq!((kept.width, kept.height), (40, 30));
    // a name that is not a hash never becomes a path
    for bad in ["../../etc/passwd", "ab", &"A".repeat(64)] {
        assert!(matches!(
            store.kept_image(bad).await,
            Err(StoreError::NoAttachment(_))
        ));
    }
    // a file gone from the folder is missing, not a crash
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        store.kept_image(&img.sha256).await,
        Err(StoreError::NoAttachment(_))
    ));
}

#[tokio::test]
async fn a_messages_images_are_read_with_it_and_their_names_are_searched() {
    let store = Store::open_in_memory().await.unwrap();
    let c = store.create_conversation("t", "m").await.unwrap();
    let (x, y) = (prepared(1), prepared(2));
    store.keep_image(&x, "").await.unwrap();
    store.keep_image(&y, "").await.unwrap();
    let mut m = on(Message::new(Role::User, "look"), &x, "otter-portrait.png");
    m.images
        .extend(on(Message::new(Role::User, ""), &y, "beaver.jpg").images);
    let id = store
        .append_message(c, &m, MessageStatus::Complete)
        .await
        .unwrap();
    let conv = store.conversation(c).await.unwrap();
    let names: Vec<&str> = conv.messages[0]
        .attachments
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["otter-portrait.png", "beaver.jpg"]);
    assert_eq!(store.message(id).await.unwrap().attachments.len(), 2);
    for q in ["otter", "beaver", "look"] {
        let hits = store.search(q, 10).await.unwrap();
        assert_eq!(hits.len(), 1, "{q}");
        assert_eq!(hits[0].message_id, id);
    }
    // the text changing (as a reply streams) keeps the names searchable
    store
        .update_message(
            id,
            &Message::new(Role::User, "look again"),
            MessageStatus::Complete,
        )
        .await
        .unwrap();
    assert_eq!(store.search("beaver", 10).await.unwrap().len(), 1);
    assert_eq!(store.search("again", 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn images_no_conversation_refers_to_go_once_they_are_old() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite3");
    let files = dir.path().join("attachments");
    let store = Store::open(&db).await.unwrap();
    let c = store.create_conversation("t", "m").await.unwrap();
    let (used, unused, gone) = (prepared(1), prepared(2), prepared(3));
    for i in [&used, &unused, &gone] {
        store.keep_image(i, "").await.unwrap();
    }
    store
        .append_message(
            c,
            &on(Message::new(Role::User, "x"), &used, "u.png"),
            MessageStatus::Complete,
        )
        .await
        .unwrap();
    let d = store.create_conversation("d", "m").await.unwrap();
    store
        .append_message(
            d,
            &on(Message::new(Role::User, "y"), &gone, "g.png"),
            MessageStatus::Complete,
        )
        .await
        .unwrap();
    store.delete_conversation(d).await.unwrap();
    // a stray file nobody wrote a row for (a write cut short)
    std::fs::write(files.join(&used.sha256[..2]).join("stray.tmp"), b"x").unwrap();
    drop(store);
    // young: everything stays
    Store::open(&db).await.unwrap();
    assert_eq!(files_in(&files), 4);
    // an hour on
    let c2 = rusqlite::Connection::open(&db).unwrap();
    c2.execute(
        "UPDATE attachments SET created_at = created_at - 7200000",
        [],
    )
    .unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for d in std::fs::read_dir(&files).unwrap().flatten() {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            std::fs::File::options()
                .write(true)
                .open(f.path())
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    let store = Store::open(&db).await.unwrap();
    assert_eq!(files_in(&files), 1, "only the image a conversation carries");
    assert!(store.kept_image(&used.sha256).await.is_ok());
    assert!(store.kept_image(&unused.sha256).await.is_err());
    assert!(store.kept_image(&gone.sha256).await.is_err());
}
