//! The OpenAI-compatible SSE parser (llama-server, LM Studio, vLLM): any bytes are parsed or
//! refused without a panic, and the outcome does not depend on where the stream is cut.
//! The first byte picks the cut; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_engine::llm::openai::SseState;
use switchboard_engine::llm::{ChatReply, Delta, NdjsonSplitter};

fn run(chunks: &[&[u8]]) -> (Result<ChatReply, String>, Vec<Delta>) {
    let mut deltas = Vec::new();
    let mut on = |d: Delta| {
        if !matches!(d, Delta::Raw(_)) {
            deltas.push(d)
        }
    };
    let mut splitter = NdjsonSplitter::new();
    let mut lines: Vec<Vec<u8>> = chunks.iter().flat_map(|c| splitter.push(c)).collect();
    lines.extend(splitter.finish());
    let mut reply = ChatReply::default();
    let mut state = SseState::default();
    let mut result = Ok(());
    for line in lines {
        match state.apply_line(&line, &mut reply, &mut on) {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let r = result
        .and_then(|_| state.finish(&mut reply, &mut on))
        .map(|_| reply)
        .map_err(|e| e.to_string());
    (r, deltas)
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
