//! Files the user attaches and images tools return, made fit to keep and to send. The type is
//! sniffed from the bytes, never taken from the name; images are decoded within limits (a
//! decompression bomb is refused before any pixel is decoded), turned upright, downscaled and
//! re-encoded, so what is kept and sent carries no metadata (EXIF, GPS, comments); a document's
//! text is read (UTF-8 or UTF-16 text, or a PDF's text layer through lopdf, itself bounded).
//!
//! Pure and synchronous, and slow on big inputs: callers run it off the async threads
//! (`spawn_blocking`) and wrap it in [`guarded`], which turns a decoder's panic into an error.
//! Names nothing else of the engine.
//!
//! `sniff` reads the type. `clean_name`: a file's last path component without control or invisible
//! format characters (bidi overrides), at most 200 characters — for attached, dropped and imported
//! names. Files over 32 MiB are refused (the window checks the size before reading a file, the
//! adapter before copying the bytes); text is cut at 256 K characters. SVG is text, never an image.

mod images;
mod pdf;
mod text;

pub use images::{
    data_url, import_image, is_clean, prepare_image, sha256_hex, PreparedImage, MAX_PIXELS,
    MAX_SIDE, THUMBNAIL_SIDE,
};

/// The largest file that can be attached (and the largest image a tool may return).
pub const MAX_FILE_BYTES: usize = 32 * 1024 * 1024;
/// The most text a document adds to a message; the rest is cut with a note.
pub const MAX_DOCUMENT_CHARS: usize = 256 * 1024;

/// Why a file cannot be attached, in words for the person who chose it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    #[error("the file is empty")]
    Empty,
    #[error("it is {} MB; files up to {} MB can be attached", mb(*.size), mb(*.limit))]
    TooBig { size: usize, limit: usize },
    #[error(
        "the image is {width}×{height} pixels: more than Switchboard decodes (at most {} a side and {} megapixels)",
        MAX_SIDE,
        MAX_PIXELS / 1_000_000
    )]
    TooManyPixels { width: u32, height: u32 },
    #[error("decoding the image would take more memory than Switchboard allows")]
    TooMuchMemory,
    #[error("the image cannot be read ({0})")]
    BadImage(String),
    #[error("the PDF cannot be read ({0})")]
    BadPdf(String),
    #[error("the PDF is protected by a password")]
    Encrypted,
    #[error("the PDF has no text in it ({pages} page(s)): it may be scanned pages, which Switchboard cannot read")]
    NoText { pages: usize },
    #[error("Switchboard reads PNG, JPEG and WebP images, PDFs and text files; this is {}", .0.as_deref().unwrap_or("another kind of file"))]
    Unsupported(Option<String>),
    #[error("the file made the decoder fail")]
    Crashed,
}

fn mb(bytes: usize) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    if m >= 10.0 {
        format!("{m:.0}")
    } else {
        format!("{m:.1}")
    }
}

/// What the bytes are, read from the bytes alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// PNG, JPEG or WebP.
    Image,
    Pdf,
    Text,
    /// Anything else (an SVG is text: it is never shown as an image).
    Other,
}

/// What `bytes` are.
pub fn sniff(bytes: &[u8]) -> Kind {
    if images::format_of(bytes).is_some() {
        Kind::Image
    } else if pdf::is_pdf(bytes) {
        Kind::Pdf
    } else if text::decode(bytes).is_some() {
        Kind::Text
    } else {
        Kind::Other
    }
}

/// A document's text, as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `text/plain` or `application/pdf`.
    pub mime: &'static str,
    pub text: String,
    /// A PDF's pages.
    pub pages: Option<usize>,
    /// The text was longer than [`MAX_DOCUMENT_CHARS`] and was cut.
    pub cut: bool,
}

/// A file made fit to attach.
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    Image(PreparedImage),
    Document(Document),
}

/// Reads a file the user attaches: an image is decoded, downscaled to `max_side` and
/// re-encoded; a PDF or a text file gives its text.
pub fn prepare(bytes: &[u8], max_side: u32) -> Result<Prepared, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    if bytes.len() > MAX_FILE_BYTES {
        return Err(MediaError::TooBig {
            size: bytes.len(),
            limit: MAX_FILE_BYTES,
        });
    }
    match sniff(bytes) {
        Kind::Image => prepare_image(bytes, max_side).map(Prepared::Image),
        Kind::Pdf => pdf::read(bytes).map(Prepared::Document),
        Kind::Text => {
            let text = text::decode(bytes).unwrap_or_default();
            let (text, cut) = cut(text);
            Ok(Prepared::Document(Document {
                mime: "text/plain",
                text,
                pages: None,
                cut,
            }))
        }
        Kind::Other => Err(MediaError::Unsupported(
            infer::get(bytes).map(|t| t.mime_type().to_string()),
        )),
    }
}

/// At most [`MAX_DOCUMENT_CHARS`] of `text`, and whether it was cut.
fn cut(text: String) -> (String, bool) {
    match text.char_indices().nth(MAX_DOCUMENT_CHARS) {
        Some((end, _)) => (text[..end].to_string(), true),
        None => (text, false),
    }
}

/// Runs `f` (a decoder over untrusted bytes); a panic in it becomes [`MediaError::Crashed`], so
/// a hostile file never takes the app down.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, MediaError>) -> Result<T, MediaError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(Err(MediaError::Crashed))
}

/// Unicode's format characters (category Cf) that matter in a name: bidirectional controls,
/// zero-width characters, the BOM, soft hyphen, invisible operators.
fn is_format_char(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// A file's name as shown and sent: its last path component, without control or invisible
/// format characters, at most 200 characters; "file" when nothing is left.
pub fn clean_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    // no control characters, nor the invisible ones that reorder or hide text (a right-to-left
    // override, U+202E, makes "photo<U+202E>gnp.exe" show as "photoexe.png")
    let clean: String = last
        .chars()
        .filter(|c| !c.is_control() && !is_format_char(*c))
        .take(200)
        .collect();
    let clean = clean.trim().to_string();
    if clean.is_empty() {
        "file".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests;
