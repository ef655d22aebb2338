//! gpt-oss's Harmony format: messages of `[<|start|>role]<|channel|>channel[ to=recipient]
//! [<|constrain|>json]<|message|>content` ended by `<|end|>`, `<|call|>` or `<|return|>`. The
//! `analysis` channel is thinking; a message to `functions.name` (the recipient may also stand
//! in the role header) is a call with its content as arguments; `final` (and `commentary`
//! without a recipient) is text, its header never shown.

use super::shapes::{add_calls, from_string, Finder};
use super::spans::{Kind, Span, Spans};
use super::{Cx, Detect, Family, FamilyId, Found, StreamCx, Strip, Verdict};

pub struct Harmony;

const START: &str = "<|start|>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const ENDS: [&str; 3] = ["<|end|>", "<|call|>", "<|return|>"];
/// What ends a message's content: its end token, or the next message.
const STOPS: [&str; 5] = ["<|end|>", "<|call|>", "<|return|>", START, CHANNEL];
/// A header longer than this is not one.
const MAX_HEADER: usize = 256;

impl Family for Harmony {
    fn id(&self) -> FamilyId {
        "harmony"
    }
    fn name(&self) -> &'static str {
        "gpt-oss Harmony (<|channel|>)"
    }
    fn strips(&self) -> &'static [Strip] {
        &[
            Strip::Token("<|return|>"),
            Strip::Token("<|call|>"),
            Strip::Token("<|end|>"),
        ]
    }
    fn triggers(&self) -> &'static [u8] {
        b"<"
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        let mut heads = Finder::new(text, &[START, CHANNEL]);
        let mut stops = Finder::new(text, &STOPS);
        let mut from = 0;
        while let Some((h, _)) = heads.next(from) {
            if let Some(s) = spans.at(h) {
                from = s.end.max(h + 1);
                continue;
            }
            let Some(m) = message(text, h) else {
                from = h + 1;
                continue;
            };
            let content_start = m.body;
            let (content_end, end) = match stops.next(content_start) {
                Some((p, k)) if k < ENDS.len() => (p, p + STOPS[k].len()),
                Some((p, _)) => (p, p),
                None => (text.len(), text.len()),
            };
            let content = &text[content_start..content_end];
            match (m.recipient, m.channel) {
                (Some(to), _) => {
                    let name = to.strip_prefix("functions.").unwrap_or(to);
                    let call = Found::new(name, from_string(content.trim()));
                    if !add_calls(spans, h, end, vec![call], self.id(), cx) {
                        spans.add(Span {
                            start: h,
                            end,
                            kind: Kind::Keep,
                        });
                    }
                }
                (None, "analysis") => {
                    spans.add(Span {
                        start: h,
                        end,
                        kind: Kind::Thinking(content.to_string()),
                    });
                }
                _ => {
                    // the header and the end token go, the content stays
                    spans.add(Span {
                        start: h,
                        end: content_start,
                        kind: Kind::Markup,
                    });
                    if end > content_end {
                        spans.add(Span {
                            start: content_end,
                            end,
                            kind: Kind::Markup,
                        });
                    }
                }
            }
            from = end.max(h + 1);
        }
    }
    fn stream(&self, held: &str, _sx: &mut StreamCx) -> Verdict {
        if let Some(end) = ENDS.iter().find(|e| held.starts_with(*e)) {
            return Verdict::Strip(end.len());
        }
        if ENDS.iter().any(|e| e.starts_with(held)) {
            return Verdict::Wait;
        }
        if !held.starts_with(START) && !held.starts_with(CHANNEL) {
            return if START.starts_with(held) || CHANNEL.starts_with(held) {
                Verdict::Wait
            } else {
                Verdict::NotMine
            };
        }
        match message(held, 0) {
            Some(m) if m.recipient.is_some() => Verdict::Lock,
            Some(m) if m.channel == "analysis" => Verdict::Think {
                open: m.body,
                close: &["<|end|>"],
            },
            Some(m) => Verdict::Strip(m.body),
            None if held.len() < MAX_HEADER && !held[1..].contains(MESSAGE) => Verdict::Wait,
            None => Verdict::NotMine,
        }
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &["<|channel|>"],
            names: &["gpt-oss", "gpt_oss"],
            families: &["gptoss", "gpt-oss"],
        }
    }
}

/// A message's header, read.
struct Header<'t> {
    channel: &'t str,
    recipient: Option<&'t str>,
    /// Where the content starts.
    body: usize,
}

/// The header that starts at `h` (`<|start|>assistant to=x<|channel|>commentary json<|message|>`
/// or `<|channel|>…<|message|>`), when it is one.
fn message(text: &str, h: usize) -> Option<Header<'_>> {
    let mut cut = (text.len() - h).min(MAX_HEADER + MESSAGE.len());
    while !text.is_char_boundary(h + cut) {
        cut -= 1;
    }
    let window = &text[h..];
    let m = window[..cut].find(MESSAGE)?;
    let head = &window[..m];
    if head[1..].contains(START) || head.contains('\n') {
        return None;
    }
    let channel = head
        .split(CHANNEL)
        .nth(1)
        .map(|c| c.split([' ', '<']).next().unwrap_or("").trim())
        .unwrap_or("");
    let recipient = head
        .find("to=")
        .map(|p| head[p + 3..].split([' ', '<']).next().unwrap_or("").trim())
        .filter(|r| !r.is_empty());
    Some(Header {
        channel,
        recipient,
        body: h + m + MESSAGE.len(),
    })
}
