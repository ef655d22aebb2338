//! Tool calls written as text by small models: every family of the registry over any text (none
//! preferred, and each in turn as the model's own), the lenient JSON reader under it, and the gate
//! that holds back call markup while a reply streams. Never panics; the gate never loses or
//! reorders text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_markup::families::{Cx, ALL};
use switchboard_markup::gate::{Piece, StreamGate};
use switchboard_markup::{lenient, recover};

const OFFERED: [&str; 3] = ["calculator__add", "files__read_file", "time__now"];

fuzz_target!(|text: &str| {
    let _ = recover::recover(text, &|_| true);
    let _ = recover::recover(text, &|n| OFFERED.contains(&n));
    // the model's own family first: the one the text's length picks
    let family = ALL[text.len() % ALL.len()].id();
    let offered = |n: &str| OFFERED.contains(&n);
    let cx = Cx {
        family: Some(family),
        ..Cx::names(&offered)
    };
    let _ = recover::recover_with(text, &cx);
    let _ = lenient::parse(text);
    // the text streamed in pieces of 1 to 7 characters
    let mut gate = StreamGate::with_names(|n| OFFERED.contains(&n)).for_family(Some(family));
    let chars: Vec<char> = text.chars().collect();
    let mut all = String::new();
    for piece in chars.chunks(1 + text.len() % 7) {
        for p in gate.push(&piece.iter().collect::<String>()) {
            match p {
                Piece::Text(t) | Piece::Thinking(t) | Piece::Markup(t) => all.push_str(&t),
            }
        }
    }
    all.push_str(&gate.finish());
    assert_eq!(all, text);
});
