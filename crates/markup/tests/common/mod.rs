//! What the crate's integration tests share.

use switchboard_markup::gate::{Piece, StreamGate};

/// `reply` streamed through `gate` in pieces of `n` characters: what showed as text, what
/// streamed as thinking, and everything that came out (text, thinking and markup, in order).
pub fn through_gate(mut gate: StreamGate, reply: &str, n: usize) -> (String, String, String) {
    let chars: Vec<char> = reply.chars().collect();
    let (mut text, mut thinking, mut all) = (String::new(), String::new(), String::new());
    for piece in chars.chunks(n) {
        for p in gate.push(&piece.iter().collect::<String>()) {
            match p {
                Piece::Text(t) => {
                    text.push_str(&t);
                    all.push_str(&t)
                }
                Piece::Thinking(t) => {
                    thinking.push_str(&t);
                    all.push_str(&t)
                }
                Piece::Markup(t) => all.push_str(&t),
            }
        }
    }
    all.push_str(&gate.finish());
    (text, thinking, all)
}
