//! A PDF's text layer, through lopdf (maintained, pure Rust, with bounds on how far a stream
//! may decompress, so a small file cannot inflate to gigabytes). A scanned PDF has no text
//! layer: it is refused with words that say so, rather than attached empty.
//!
//! lopdf 0.44; streams bounded to 64 MiB decompressed; pages read for at most 15 s; an encrypted
//! PDF is refused.

use lopdf::{Document as Pdf, LoadOptions};

use super::{cut, Document, MediaError, MAX_DOCUMENT_CHARS};

/// How far one stream may decompress, loading the file or reading a page's content.
const MAX_STREAM: usize = 64 * 1024 * 1024;
/// How long reading the pages may take (a file is given up at 30 s).
const MAX_READING: std::time::Duration = std::time::Duration::from_secs(15);
/// Pages read at most (the text is cut long before in any real document).
const MAX_PAGES: usize = 5000;

/// Whether the bytes are a PDF: `%PDF-` near the start (readers allow leading junk).
pub(super) fn is_pdf(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(1024)]
        .windows(5)
        .any(|w| w == b"%PDF-")
}

/// The text of every page, pages apart by a blank line, cut at [`MAX_DOCUMENT_CHARS`].
pub(super) fn read(bytes: &[u8]) -> Result<Document, MediaError> {
    let options = LoadOptions {
        max_decompressed_size: Some(MAX_STREAM),
        ..LoadOptions::default()
    };
    let pdf = Pdf::load_mem_with_options(bytes, options).map_err(|e| match e {
        lopdf::Error::InvalidPassword | lopdf::Error::Decryption(_) => MediaError::Encrypted,
        e => MediaError::BadPdf(e.to_string()),
    })?;
    // encrypted with a password it could not guess (not the empty one)
    if pdf.is_encrypted() && pdf.encryption_state.is_none() {
        return Err(MediaError::Encrypted);
    }
    let pages: Vec<u32> = pdf.get_pages().keys().copied().collect();
    if pages.is_empty() {
        return Err(MediaError::BadPdf("it has no pages".into()));
    }
    let mut text = String::new();
    let mut chars = 0usize;
    let mut failed = None;
    let started = std::time::Instant::now();
    let mut out_of_time = false;
    for &page in pages.iter().take(MAX_PAGES) {
        // the bound on each stream is not one on the whole file: many pages of streams that
        // inflate to the limit would take minutes; what was read by then is what it gives
        if started.elapsed() > MAX_READING {
            out_of_time = true;
            break;
        }
        let mut page_text = String::new();
        for chunk in pdf.extract_text_chunks_with_limit(&[page], MAX_STREAM) {
            match chunk {
                Ok(t) => page_text.push_str(&t),
                Err(e) => failed = Some(e.to_string()),
            }
        }
        let page_text = page_text.trim();
        if page_text.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(page_text);
        chars += page_text.chars().count();
        if chars > MAX_DOCUMENT_CHARS {
            break;
        }
    }
    if text.trim().is_empty() {
        return Err(match failed {
            Some(why) => MediaError::BadPdf(why),
            None => MediaError::NoText { pages: pages.len() },
        });
    }
    let (text, was_cut) = cut(text);
    Ok(Document {
        mime: "application/pdf",
        text,
        pages: Some(pages.len()),
        cut: was_cut || pages.len() > MAX_PAGES || out_of_time,
    })
}
