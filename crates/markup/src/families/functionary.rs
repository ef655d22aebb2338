//! MeetKai Functionary v3: v3.2 writes `>>>recipient\n` before each part (`all` for text, a
//! function's name before its JSON arguments; the first `>>>` is in the prompt, so a reply
//! starts with `all\n` or with `name\n{…}`); v3.1 (on Llama 3.1) writes
//! `<function=name>{…}</function>`.

use super::shapes::{add_calls, blocks, cut, is_name, Finder};
use super::spans::{Kind, Span, Spans};
use super::{Cx, Detect, Family, FamilyId, Found, StreamCx, Verdict};
use crate::lenient;

pub struct Functionary;

const ARROWS: &str = ">>>";
/// The longest recipient read.
const MAX_NAME: usize = 128;

impl Family for Functionary {
    fn id(&self) -> FamilyId {
        "functionary"
    }
    fn name(&self) -> &'static str {
        "Functionary v3 (>>>name, <function=name>)"
    }
    fn markers(&self) -> &'static [&'static str] {
        &[ARROWS, "<function="]
    }
    fn parse(&self, text: &str, cx: &Cx, spans: &mut Spans) {
        v31(self.id(), text, cx, spans);
        let arrows = v32(self.id(), text, cx, spans);
        // `all\n` is read as markup only where it cannot be prose: after `>>>` parts, or from a
        // model known to write this format
        let own = arrows || super::is_own(cx.family, self.id());
        reply_start(self.id(), text, cx, spans, own);
    }
    fn stream(&self, held: &str, sx: &mut StreamCx) -> Verdict {
        // `>>>` right after a word is a word's end (`<toolbar>`), unless this is the model's format
        if held.starts_with('>') && !sx.word_start && !super::is_own(sx.family, self.id()) {
            return Verdict::NotMine;
        }
        if let Some(rest) = held.strip_prefix(ARROWS) {
            return recipient(rest, ARROWS.len(), sx);
        }
        if ARROWS.starts_with(held) || "<function=".starts_with(held) {
            return Verdict::Wait;
        }
        if held.starts_with("<function=") {
            return Verdict::Lock;
        }
        if sx.reply_start && super::is_own(sx.family, self.id()) {
            return recipient(held, 0, sx);
        }
        Verdict::NotMine
    }
    fn detect(&self) -> Detect {
        Detect {
            template: &[">>>all"],
            names: &["functionary"],
            families: &[],
        }
    }
}

/// While streaming: the recipient line that starts at byte `at`: `all` is markup, a name on
/// offer a call.
fn recipient(rest: &str, at: usize, sx: &StreamCx) -> Verdict {
    match rest.find('\n') {
        None if rest.len() < MAX_NAME && (rest.is_empty() || is_name(rest)) => Verdict::Wait,
        None => Verdict::NotMine,
        Some(n) => {
            let name = rest[..n].trim();
            if name == "all" {
                Verdict::Strip(at + n + 1)
            } else if is_name(name) && sx.offers(name) {
                Verdict::Lock
            } else {
                Verdict::NotMine
            }
        }
    }
}

/// `<function=name>{…}</function>`.
fn v31(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) {
    for b in blocks(text, &["<function="], &["</function>"], spans) {
        let inner = &text[b.body..b.body_end];
        let Some(gt) = inner.find('>') else { continue };
        let name = inner[..gt].trim();
        let json = inner[gt + 1..].trim();
        if !is_name(name) || !json.starts_with('{') {
            continue;
        }
        if let Some(v @ serde_json::Value::Object(_)) = lenient::parse(json) {
            add_calls(spans, b.open, b.end, vec![Found::new(name, v)], family, cx);
        }
    }
}

/// `>>>name\n{…}` and `>>>all\n`: whether any `>>>` part was there.
fn v32(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans) -> bool {
    let mut finder = Finder::new(text, &[ARROWS]);
    let mut from = 0;
    let mut any = false;
    while let Some((at, _)) = finder.next(from) {
        from = at + ARROWS.len();
        if spans.at(at).is_some() {
            continue;
        }
        let head = &text[from..];
        let Some(nl) = cut(head, MAX_NAME).find('\n') else {
            continue;
        };
        let name = head[..nl].trim();
        let body = from + nl + 1;
        if name == "all" {
            any |= spans.add(Span {
                start: at,
                end: body,
                kind: Kind::Markup,
            });
        } else if let Some(end) = call(family, text, name, at, body, cx, spans) {
            any = true;
            from = end;
        }
    }
    any
}

/// A reply that starts with `all\n` (its text) or `name\n{…}` (a call).
fn reply_start(family: FamilyId, text: &str, cx: &Cx, spans: &mut Spans, arrows: bool) {
    let start = text.len() - text.trim_start().len();
    let head = &text[start..];
    let Some(nl) = cut(head, MAX_NAME).find('\n') else {
        return;
    };
    let name = head[..nl].trim();
    if name == "all" {
        if arrows && spans.free(start, start + nl + 1) {
            spans.add(Span {
                start,
                end: start + nl + 1,
                kind: Kind::Markup,
            });
        }
    } else if spans.free(start, start + nl + 1) {
        call(family, text, name, start, start + nl + 1, cx, spans);
    }
}

/// The call to `name` whose JSON starts at `body` (after blanks), its markup starting at `at`:
/// where it ends, when it was one.
fn call(
    family: FamilyId,
    text: &str,
    name: &str,
    at: usize,
    body: usize,
    cx: &Cx,
    spans: &mut Spans,
) -> Option<usize> {
    if !is_name(name) {
        return None;
    }
    let lead = text[body..].len() - text[body..].trim_start().len();
    if !text[body + lead..].starts_with('{') {
        return None;
    }
    let (args, end) = lenient::parse_at(text, body + lead)?;
    if !args.is_object() || !spans.free(at, end) {
        return None;
    }
    add_calls(spans, at, end, vec![Found::new(name, args)], family, cx).then_some(end)
}
