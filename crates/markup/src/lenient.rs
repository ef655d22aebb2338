//! Lenient JSON, as small models write it: trailing commas, single-quoted Python dicts,
//! `True`/`False`/`None`, unquoted keys, comments, a closing bracket or two missing at the end.
//!
//! Strict JSON is tried first, so whatever `serde_json` reads is read identically; then the text
//! as a Python literal ([`super::pylit`]: tuples, `True`/`None`, single quotes). Only when both
//! fail does the `jsonrepair-rs` crate (a maintained port of the JavaScript `jsonrepair`, no
//! dependencies) rewrite the text into valid JSON. That crate repairs a whole string; finding
//! where a value starts and ends inside prose is this module's part ([`Balance`], [`parse_at`]).

use serde_json::Value;

/// Longer texts are not repaired (strict JSON of any length is still read): the repair is for
/// tool calls, which are short, and its cost grows with the text.
const MAX_REPAIR: usize = 256 * 1024;
/// Deeper nesting is not repaired: the repairing parser recurses, and tool calls are shallow.
const MAX_DEPTH: usize = 64;

/// Parses one JSON value written leniently (see the module doc). `None` when even the repair
/// cannot make a value of it. Any value is returned, a plain string included: callers that want
/// an object check for one.
pub fn parse(text: &str) -> Option<Value> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if let Ok(v) = serde_json::from_str(t) {
        return Some(v);
    }
    if t.len() > MAX_REPAIR || nesting(t) > MAX_DEPTH {
        return None;
    }
    // a Python literal (tuples, True/None, single quotes) is read as Python reads it
    if t.starts_with(['{', '[', '(']) {
        if let Some(v) = super::pylit::literal(t) {
            return Some(v);
        }
    }
    let fixed = jsonrepair_rs::jsonrepair(t).ok()?;
    serde_json::from_str(&fixed).ok()
}

/// Parses the object or array whose opening bracket is at byte `start` of `text`: the value and
/// the byte just past it. When the brackets never close, the rest of the text is repaired as a
/// cut-off value (and the end is the end of the text).
pub fn parse_at(text: &str, start: usize) -> Option<(Value, usize)> {
    let mut balance = Balance::new(start);
    match balance.advance(text.as_bytes()) {
        Some(end) => parse(&text[start..end]).map(|v| (v, end)),
        None => parse(&text[start..]).map(|v| (v, text.len())),
    }
}

/// The values at the start of `text` (after blanks), one after another, separated by blanks,
/// commas or semicolons (as models list several calls), and the byte where they stop. Only
/// objects and arrays count.
pub fn leading_values(text: &str) -> (Vec<Value>, usize) {
    let bytes = text.as_bytes();
    let (mut values, mut pos, mut i) = (Vec::new(), 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\r' | b'\n' | b',' | b';' => i += 1,
            b'{' | b'[' => match parse_at(text, i) {
                Some((v, end)) => {
                    values.push(v);
                    pos = end;
                    i = end;
                }
                None => break,
            },
            _ => break,
        }
    }
    (values, pos)
}

/// Finds where a bracketed value closes, fed a growing text (the stream gate feeds it as deltas
/// arrive, so a long value is scanned once, not once per delta). Strings in double quotes, and in
/// single quotes where a string may start (after `{ [ , :`), are skipped; bracket kinds are not
/// told apart.
#[derive(Debug, Clone)]
pub struct Balance {
    pos: usize,
    depth: usize,
    quote: Option<u8>,
    escaped: bool,
    /// The last byte outside strings that is not a blank.
    last: u8,
}

impl Balance {
    /// Starts at the opening bracket at byte `start`.
    pub fn new(start: usize) -> Self {
        Balance {
            pos: start,
            depth: 0,
            quote: None,
            escaped: false,
            last: b'{',
        }
    }

    /// Reads `text` from where the last call stopped; the byte just past the closing bracket
    /// once it is there. `text` must be the same text, possibly longer, on every call.
    pub fn advance(&mut self, text: &[u8]) -> Option<usize> {
        while self.pos < text.len() {
            let c = text[self.pos];
            self.pos += 1;
            if let Some(q) = self.quote {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == q || (q == b'\'' && c == b'\n') {
                    // a single-quoted string does not span lines: that was an apostrophe
                    self.quote = None;
                    self.last = b'"';
                }
                continue;
            }
            match c {
                b'"' => self.quote = Some(b'"'),
                b'\'' if matches!(self.last, b'{' | b'[' | b',' | b':') => self.quote = Some(b'\''),
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(self.pos);
                    }
                }
                _ => {}
            }
            if !c.is_ascii_whitespace() {
                self.last = c;
            }
        }
        None
    }
}

/// The deepest bracket nesting in `text`, strings not told apart (an over-estimate is fine).
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in text.bytes() {
        match c {
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn what_models_write_is_read() {
        let cases = [
            (r#"{"a": 1, "b": [1, 2,],}"#, json!({"a": 1, "b": [1, 2]})),
            (
                "{'name': 'calc', 'ok': True, 'no': False, 'n': None}",
                json!({"name": "calc", "ok": true, "no": false, "n": null}),
            ),
            (
                "{name: \"calc\", args: {a: 2}}",
                json!({"name": "calc", "args": {"a": 2}}),
            ),
            (
                "{\"a\": 1, // the first\n \"b\": 2 /* the second */}",
                json!({"a": 1, "b": 2}),
            ),
            (r#"{"a": {"b": 2}"#, json!({"a": {"b": 2}})),
            (r#"{"x": 'it\'s'}"#, json!({"x": "it's"})),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), Some(want), "{text}");
        }
        assert_eq!(parse("   "), None);
        assert_eq!(parse(&"[".repeat(10_000)), None, "too deep to repair");
    }

    #[test]
    fn a_value_is_found_inside_prose() {
        let text = r#"Sure: {"a": "} not the end", 'b': 'x'} and then more"#;
        let start = text.find('{').unwrap();
        let (v, end) = parse_at(text, start).unwrap();
        assert_eq!(v, json!({"a": "} not the end", "b": "x"}));
        assert_eq!(&text[end..], " and then more");
        // an apostrophe in prose inside braces does not start a string
        let text = "{it's a brace} {\"a\": 1}";
        assert_eq!(Balance::new(0).advance(text.as_bytes()), Some(14));
        // cut off at the end: repaired, and the end is the end of the text
        let text = r#"call {"name": "t", "arguments": {"a": 1}"#;
        let (v, end) = parse_at(text, 5).unwrap();
        assert_eq!(
            (v, end),
            (json!({"name": "t", "arguments": {"a": 1}}), text.len())
        );
    }

    #[test]
    fn the_balance_can_be_fed_piece_by_piece() {
        let text = r#"{"a": "x}", "b": [1, {"c": 2}]} tail"#;
        let mut b = Balance::new(0);
        for n in 0..text.len() - 5 {
            assert_eq!(b.advance(&text.as_bytes()[..n]), None);
        }
        assert_eq!(b.advance(text.as_bytes()), Some(text.len() - 5));
    }

    #[test]
    fn several_values_in_a_row_are_read() {
        let (vs, end) = leading_values(" {\"a\": 1}, {'b': 2};\n[3] and prose");
        assert_eq!(vs, vec![json!({"a": 1}), json!({"b": 2}), json!([3])]);
        assert_eq!(end, " {\"a\": 1}, {'b': 2};\n[3]".len());
        assert_eq!(leading_values("prose {\"a\": 1}"), (vec![], 0));
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1_000_000i32..1_000_000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((".{0,8}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,200}") {
            let _ = parse(&s);
            for (i, c) in s.char_indices() {
                if c == '{' || c == '[' {
                    let _ = parse_at(&s, i);
                }
            }
            let _ = leading_values(&s);
        }

        #[test]
        fn never_panics_on_json_like_text(s in r#"[\[\]{}"':,\\ a-zTFN0-9.\-\n/*#]{0,120}"#) {
            let _ = parse(&s);
            let _ = leading_values(&s);
        }

        #[test]
        fn reads_what_serde_json_reads_identically(v in any_json()) {
            let compact = serde_json::to_string(&v).unwrap();
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            prop_assert_eq!(parse(&compact), Some(v.clone()));
            prop_assert_eq!(parse(&pretty), Some(v.clone()));
            if v.is_object() || v.is_array() {
                let text = format!("prose {compact} prose");
                prop_assert_eq!(parse_at(&text, 6), Some((v, 6 + compact.len())));
            }
        }
    }
}
