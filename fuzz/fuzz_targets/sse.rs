//! The OpenAI-compatible SSE parser (llama-server, LM Studio, vLLM): any bytes are parsed or
//! refused without a panic, and the outcome does not depend on where the stream is cut.
//! The first byte picks the cut; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_engine::llm::openai::parse_chunks;
use switchboard_engine::llm::{ChatReply, Delta};

/// The reply (or the error, as text) and the deltas, from the parser `chat` uses.
fn run(chunks: &[&[u8]]) -> (Result<ChatReply, String>, Vec<Delta>) {
    let (r, deltas) = parse_chunks(chunks.iter().copied());
    (r.map_err(|e| e.to_string()), deltas)
}

fuzz_target!(|data: &[u8]| {
    let Some((&at, bytes)) = data.split_first() else {
        return;
    };
    let whole = run(&[bytes]);
    let cut = if bytes.is_empty() {
        0
    } else {
        at as usize % bytes.len()
    };
    assert_eq!(run(&[&bytes[..cut], &bytes[cut..]]), whole);
});
