//! Text files (code, Markdown, CSV, JSON, logs): UTF-8 (a byte-order mark dropped), or UTF-16
//! with its byte-order mark. Bytes with a NUL in them, or that are mostly not UTF-8, are not
//! text.
//!
//! A stray invalid byte is decoded lossily.

/// How much of the start is checked for NUL bytes and decoding errors.
const SAMPLE: usize = 64 * 1024;

/// The text `bytes` hold, when they are text. A few bytes that are not UTF-8 (a log with a
/// stray Latin-1 byte) become U+FFFD.
pub(super) fn decode(bytes: &[u8]) -> Option<String> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return Some(String::from_utf8_lossy(rest).into_owned());
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, u16::from_be_bytes);
    }
    let sample = &bytes[..bytes.len().min(SAMPLE)];
    if sample.contains(&0) {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Some(s.to_string()),
        Err(_) => {
            let lossy = String::from_utf8_lossy(bytes);
            let bad = lossy.chars().filter(|&c| c == '\u{FFFD}').count();
            // more than one character in a hundred undecodable: not text
            (bad * 100 <= lossy.chars().count()).then(|| lossy.into_owned())
        }
    }
}

fn utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> Option<String> {
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|c| unit([c[0], c[1]])).collect();
    String::from_utf16(&units).ok()
}
