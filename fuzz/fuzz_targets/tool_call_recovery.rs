//! Tool calls written as text by small models: recovering them, the lenient JSON reader under
//! it, and the gate that holds back call markup while a reply streams. Never panics; the gate
//! never loses or reorders text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_engine::chat::gate::StreamGate;
use switchboard_engine::chat::{lenient, recover};

const OFFERED: [&str; 3] = ["calculator__add", "files__read_file", "time__now"];

fuzz_target!(|text: &str| {
    let _ = recover::recover(text, &|_| true);
    let _ = recover::recover(text, &|n| OFFERED.contains(&n));
    let _ = lenient::parse(text);
    // the text streamed in pieces of 1 to 7 characters
    let mut gate = StreamGate::with_names(|n| OFFERED.contains(&n));
    let chars: Vec<char> = text.chars().collect();
    let mut shown = String::new();
    for piece in chars.chunks(1 + text.len() % 7) {
        shown.push_str(&gate.push(&piece.iter().collect::<String>()));
    }
    shown.push_str(&gate.finish());
    assert_eq!(shown, text);
});
