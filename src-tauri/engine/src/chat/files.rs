//! Files the user attaches from their computer (pasted, dropped, or picked): read off the async
//! threads with a time limit, at most `READERS` at once (a read given up on keeps its place), images kept in the store (re-encoded, content-addressed), a
//! document's text given back to go into the message. What the window shows before sending
//! comes from here: thumbnails as `data:` URLs, and about how many tokens each file will take.
//!
//! `attach_file` reads through `media` (at most `READ_TIME`, 30 s, a decoder's panic caught;
//! `read_within`: at most `READERS`, 2, reads at once, a read given up on keeping its place until
//! its thread ends); a document's text is sent back by the window with the message, into the text.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::budget;
use crate::llm::image_tokens;
use crate::media::{self, MediaError, Prepared};
use crate::store::{AttachedImage, Store, StoreError};

/// A file that takes longer than this to read is refused (a hostile PDF can make a parser
/// crawl; its thread is left to finish on its own).
const READ_TIME: Duration = Duration::from_secs(30);

/// Files read at once. A read given up on keeps its place until its thread ends, so files that
/// make a parser crawl cannot pile up threads that run on: past this many, another file waits
/// (within its own time limit) for one to end.
const READERS: usize = 2;
static READING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(READERS);

/// Runs `work` on a blocking thread, one of `readers`' places held until that thread ends;
/// refused when no place frees up within `limit`, or the work does not end within what is left.
async fn read_within<T: Send + 'static>(
    readers: &'static tokio::sync::Semaphore,
    limit: Duration,
    work: impl FnOnce() -> Result<T, MediaError> + Send + 'static,
) -> Result<T, AttachError> {
    let started = tokio::time::Instant::now();
    let place = match tokio::time::timeout(limit, readers.acquire()).await {
        Ok(Ok(p)) => p,
        _ => return Err(AttachError::Busy),
    };
    let job = tokio::task::spawn_blocking(move || {
        let _held = place;
        media::guarded(work)
    });
    match tokio::time::timeout(limit.saturating_sub(started.elapsed()), job).await {
        Ok(Ok(r)) => Ok(r?),
        Ok(Err(_)) => Err(MediaError::Crashed.into()),
        Err(_) => Err(AttachError::TooSlow),
    }
}

/// An image the window asks to send with a message: its name in the store and the file's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRef {
    pub sha256: String,
    pub name: String,
}

/// A file made ready to send, as the window shows it before sending.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum AttachedFile {
    /// An image, kept in the store: it goes with the message by its `sha256`.
    #[serde(rename_all = "camelCase")]
    Image {
        #[serde(flatten)]
        image: AttachedImage,
        /// About how many tokens of context it takes.
        tokens: usize,
    },
    /// A document's text: it goes into the message as an attachment block.
    #[serde(rename_all = "camelCase")]
    Document {
        name: String,
        /// `text/plain` or `application/pdf`.
        mime: String,
        text: String,
        pages: Option<usize>,
        /// Only the start of its text is kept (it was longer than 256 KB).
        cut: bool,
        tokens: usize,
    },
}

/// Why a file was not attached.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("{0}")]
    Media(#[from] MediaError),
    #[error("reading it took longer than {} s", READ_TIME.as_secs())]
    TooSlow,
    #[error("files attached before are still being read (one that took too long is read to its end); try again in a moment")]
    Busy,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reads a file the user attaches (`name` is only shown; the type comes from `bytes`): an image
/// is made fit to send (at most `max_side` a side, no metadata) and kept in `store`; a document
/// gives its text.
pub async fn attach_file(
    store: &Store,
    name: &str,
    bytes: Vec<u8>,
    max_side: u32,
) -> Result<AttachedFile, AttachError> {
    let prepared = read_within(&READING, READ_TIME, move || {
        media::prepare(&bytes, max_side)
    })
    .await?;
    let name = clean_name(name);
    Ok(match prepared {
        Prepared::Image(img) => {
            let image = store.keep_image(&img, &name).await?;
            AttachedFile::Image {
                tokens: image_tokens(image.width, image.height),
                image,
            }
        }
        Prepared::Document(d) => AttachedFile::Document {
            tokens: budget::estimate_tokens(&d.text),
            name,
            mime: d.mime.to_string(),
            text: d.text,
            pages: d.pages,
            cut: d.cut,
        },
    })
}

pub use crate::media::clean_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_last_component_without_controls() {
        assert_eq!(clean_name("/home/ada/Pictures/shot.png"), "shot.png");
        assert_eq!(clean_name("C:\\Users\\ada\\a\u{7}b.txt"), "ab.txt");
        assert_eq!(clean_name("  "), "file");
        assert_eq!(clean_name(&"x".repeat(300)).len(), 200);
        assert_eq!(clean_name("photo\u{202E}gnp.exe"), "photognp.exe");
        assert_eq!(clean_name("a\u{200B}b\u{FEFF}.png"), "ab.png");
    }

    /// A read that never ends is given up on at its limit but keeps its place until its thread
    /// ends: with every place held, even a quick file is refused; once one ends, it is read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_that_never_end_cannot_pile_up() {
        static READERS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);
        let short = Duration::from_millis(200);
        let mut release = Vec::new();
        for _ in 0..2 {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            release.push(tx);
            let r = read_within(&READERS, short, move || {
                let _ = rx.recv();
                Ok(1)
            })
            .await;
            assert!(matches!(r, Err(AttachError::TooSlow)), "{r:?}");
        }
        let r = read_within(&READERS, short, || Ok(2)).await;
        assert!(matches!(r, Err(AttachError::Busy)), "{r:?}");
        // one of them ends: its place is free again
        release.pop().unwrap().send(()).unwrap();
        let r = read_within(&READERS, Duration::from_secs(10), || Ok(3)).await;
        assert_eq!(r.unwrap(), 3);
        release.pop().unwrap().send(()).unwrap();
    }

    #[test]
    fn image_tokens_grow_with_the_size_from_a_floor() {
        assert_eq!(image_tokens(100, 100), 256);
        assert_eq!(image_tokens(1024, 768), 768);
    }
}
