//! Files the user attaches from their computer (pasted, dropped, or picked): read off the async
//! threads with a time limit, images kept in the store (re-encoded, content-addressed), a
//! document's text given back to go into the message. What the window shows before sending
//! comes from here: thumbnails as `data:` URLs, and about how many tokens each file will take.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::budget;
use crate::llm::image_tokens;
use crate::media::{self, MediaError, Prepared};
use crate::store::{AttachedImage, Store, StoreError};

/// A file that takes longer than this to read is refused (a hostile PDF can make a parser
/// crawl; its thread is left to finish on its own).
const READ_TIME: Duration = Duration::from_secs(30);

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
    let work =
        tokio::task::spawn_blocking(move || media::guarded(|| media::prepare(&bytes, max_side)));
    let prepared = match tokio::time::timeout(READ_TIME, work).await {
        Ok(Ok(r)) => r?,
        Ok(Err(_)) => return Err(MediaError::Crashed.into()),
        Err(_) => return Err(AttachError::TooSlow),
    };
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

    #[test]
    fn image_tokens_grow_with_the_size_from_a_floor() {
        assert_eq!(image_tokens(100, 100), 256);
        assert_eq!(image_tokens(1024, 768), 768);
    }
}
