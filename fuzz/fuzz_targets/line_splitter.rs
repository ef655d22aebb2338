//! The NDJSON/SSE line splitter: never panics, and where the stream is cut changes nothing.
//! The first byte picks the cut; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_engine::llm::NdjsonSplitter;

fn lines(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut s = NdjsonSplitter::new();
    let mut out: Vec<Vec<u8>> = chunks.iter().flat_map(|c| s.push(c)).collect();
    out.extend(s.finish());
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&at, bytes)) = data.split_first() else {
        return;
    };
    let whole = lines(&[bytes]);
    let cut = if bytes.is_empty() {
        0
    } else {
        at as usize % bytes.len()
    };
    assert_eq!(lines(&[&bytes[..cut], &bytes[cut..]]), whole);
    let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(lines(&bytewise), whole);
    for l in &whole {
        assert!(!l.is_empty() && !l.contains(&b'\n'));
    }
});
