//! Python calls as models write them (`get_weather(city='Paris', days=3)`), read into a name and
//! JSON arguments: keyword arguments whose values are Python literals (strings in either quote
//! with escapes, numbers, `True`/`False`/`None`, lists, tuples, dicts, nested). Anything else
//! (positional arguments, expressions, bytes, a number too big for JSON) is not a call.

use serde_json::{Map, Number, Value};

/// How deep literals may nest.
const MAX_DEPTH: usize = 32;

/// A whole text that is one Python literal (a dict, a list, a tuple…), as JSON; `None` when it
/// is not one.
pub fn literal(text: &str) -> Option<Value> {
    let mut p = Parser { s: text, i: 0 };
    let v = p.value(0)?;
    p.blanks();
    (p.i == text.len()).then_some(v)
}

/// One call read: its name, its arguments, and the byte just past its `)`.
#[derive(Debug, Clone, PartialEq)]
pub struct PyCall {
    pub name: String,
    pub arguments: Map<String, Value>,
    pub end: usize,
}

/// The call starting at byte `at` of `text` (after blanks).
pub fn call_at(text: &str, at: usize) -> Option<PyCall> {
    let mut p = Parser { s: text, i: at };
    p.blanks();
    let name = p.dotted_name()?;
    p.blanks();
    p.eat(b'(')?;
    let mut arguments = Map::new();
    loop {
        p.blanks();
        if p.eat(b')').is_some() {
            break;
        }
        let key = p.ident()?;
        p.blanks();
        p.eat(b'=')?;
        if p.peek() == Some(b'=') {
            return None;
        }
        let value = p.value(0)?;
        arguments.insert(key.to_string(), value);
        p.blanks();
        if p.eat(b',').is_none() {
            p.blanks();
            p.eat(b')')?;
            break;
        }
    }
    Some(PyCall {
        name: name.to_string(),
        arguments,
        end: p.i,
    })
}

/// A list of calls `[f(…), g(…)]` starting at byte `at`: the calls that read, and the byte past
/// `]`. A call that does not read is skipped when its end can be found (its siblings are kept);
/// `None` when the list's shape is not a list of calls.
pub fn list_at(text: &str, at: usize) -> Option<(Vec<PyCall>, usize)> {
    let mut p = Parser { s: text, i: at };
    p.blanks();
    p.eat(b'[')?;
    let mut calls = Vec::new();
    loop {
        p.blanks();
        if p.eat(b']').is_some() {
            break;
        }
        let start = p.i;
        match call_at(text, start) {
            Some(c) => {
                p.i = c.end;
                calls.push(c);
            }
            None => {
                // not a call: skip a name and its balanced parentheses, or give up
                let mut q = Parser { s: text, i: start };
                q.dotted_name()?;
                q.blanks();
                if q.peek() != Some(b'(') {
                    return None;
                }
                p.i = skip_balanced(text, q.i)?;
            }
        }
        p.blanks();
        if p.eat(b',').is_none() {
            p.blanks();
            p.eat(b']')?;
            break;
        }
    }
    (!calls.is_empty()).then_some((calls, p.i))
}

/// Past the parenthesis, bracket or brace that closes the one at `at`, quotes skipped.
pub fn skip_balanced(text: &str, at: usize) -> Option<usize> {
    Depth::new(at).advance(text.as_bytes())
}

/// Finds where Python's brackets close, fed a growing text (the stream gate feeds it as pieces
/// arrive, so a long list is scanned once): parentheses, brackets and braces, strings in either
/// quote skipped.
#[derive(Debug, Clone)]
pub struct Depth {
    pos: usize,
    depth: usize,
    quote: Option<u8>,
    escaped: bool,
    /// A closing bracket came with none open: the text is not a Python value.
    broken: bool,
}

impl Depth {
    /// Starts at the opening bracket at byte `start`.
    pub fn new(start: usize) -> Self {
        Depth {
            pos: start,
            depth: 0,
            quote: None,
            escaped: false,
            broken: false,
        }
    }

    /// Reads `text` from where the last call stopped; the byte just past the closing bracket
    /// once it is there. `text` must be the same text, possibly longer, on every call.
    pub fn advance(&mut self, text: &[u8]) -> Option<usize> {
        while !self.broken && self.pos < text.len() {
            let c = text[self.pos];
            self.pos += 1;
            if let Some(q) = self.quote {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == q {
                    self.quote = None;
                }
                continue;
            }
            match c {
                b'\'' | b'"' => self.quote = Some(c),
                b'(' | b'[' | b'{' => self.depth += 1,
                b')' | b']' | b'}' => {
                    let Some(d) = self.depth.checked_sub(1) else {
                        self.broken = true;
                        return None;
                    };
                    self.depth = d;
                    if d == 0 {
                        return Some(self.pos);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

struct Parser<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek() == Some(c)).then(|| self.i += 1)
    }

    fn blanks(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn ident(&mut self) -> Option<&'a str> {
        let b = self.s.as_bytes();
        let start = self.i;
        if !b
            .get(start)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            return None;
        }
        while b
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            self.i += 1;
        }
        Some(&self.s[start..self.i])
    }

    /// `name`, `a.b.c`, or a name with `-` inside (tool names have them).
    fn dotted_name(&mut self) -> Option<&'a str> {
        let start = self.i;
        self.ident()?;
        while matches!(self.peek(), Some(b'.' | b'-')) {
            self.i += 1;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
            {
                self.i += 1;
            }
        }
        Some(&self.s[start..self.i])
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.blanks();
        match self.peek()? {
            b'\'' | b'"' => self.string().map(Value::String),
            b'[' => self.seq(b']', depth),
            b'(' => self.seq(b')', depth),
            b'{' => self.dict(depth),
            b'-' | b'+' | b'0'..=b'9' | b'.' => self.number(),
            _ => {
                let word = self.ident()?;
                match word {
                    "True" | "true" => Some(Value::Bool(true)),
                    "False" | "false" => Some(Value::Bool(false)),
                    "None" | "null" => Some(Value::Null),
                    _ => None,
                }
            }
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> Option<Value> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.blanks();
            if self.eat(close).is_some() {
                return Some(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.blanks();
            if self.eat(b',').is_none() {
                self.blanks();
                self.eat(close)?;
                return Some(Value::Array(items));
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Option<Value> {
        self.i += 1;
        let mut map = Map::new();
        loop {
            self.blanks();
            if self.eat(b'}').is_some() {
                return Some(Value::Object(map));
            }
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            self.blanks();
            self.eat(b':')?;
            let v = self.value(depth + 1)?;
            map.insert(key, v);
            self.blanks();
            if self.eat(b',').is_none() {
                self.blanks();
                self.eat(b'}')?;
                return Some(Value::Object(map));
            }
        }
    }

    fn number(&mut self) -> Option<Value> {
        let b = self.s.as_bytes();
        let start = self.i;
        while b
            .get(self.i)
            .is_some_and(|c| c.is_ascii_digit() || b"+-.eE_".contains(c))
        {
            self.i += 1;
        }
        let raw: String = self.s[start..self.i]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let raw = raw.strip_prefix('+').unwrap_or(&raw);
        if let Ok(n) = raw.parse::<i64>() {
            return Some(Value::Number(n.into()));
        }
        let f: f64 = raw.parse().ok()?;
        Number::from_f64(f).map(Value::Number)
    }

    /// A string in either quote, or triple quotes; Python's escapes.
    fn string(&mut self) -> Option<String> {
        let b = self.s.as_bytes();
        let q = b[self.i];
        let triple = b.get(self.i..self.i + 3) == Some(&[q, q, q][..]);
        self.i += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let c = self.s[self.i..].chars().next()?;
            if triple {
                if b.get(self.i..self.i + 3) == Some(&[q, q, q][..]) {
                    self.i += 3;
                    return Some(out);
                }
            } else if c as u32 == q as u32 {
                self.i += 1;
                return Some(out);
            } else if c == '\n' {
                return None;
            }
            self.i += c.len_utf8();
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = self.s[self.i..].chars().next()?;
            self.i += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'u' | 'x' => {
                    let n = if e == 'u' { 4 } else { 2 };
                    let hex = self.s.get(self.i..self.i + n)?;
                    let ch = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)?;
                    self.i += n;
                    out.push(ch);
                }
                '\n' => {}
                other => out.push(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(text: &str) -> Option<Value> {
        call_at(text, 0).map(|c| Value::Object(c.arguments))
    }

    #[test]
    fn keyword_arguments_of_every_literal_kind() {
        // vLLM tests/tool_parsers/test_pythonic_tool_parser.py, MORE_TYPES_FUNCTION_OUTPUT
        let c = call_at(
            "register_user(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'])",
            0,
        )
        .unwrap();
        assert_eq!(c.name, "register_user");
        assert_eq!(
            Value::Object(c.arguments),
            json!({"name": "John Doe", "age": 37, "address": {"city": "San Francisco", "state": "CA"},
                   "role": null, "passed_test": true, "aliases": ["John", "Johnny"]})
        );
        assert_eq!(args("f()"), Some(json!({})));
        assert_eq!(
            args("f(t=(1, 2.5), e={}, l=[], n=-3)"),
            Some(json!({"t": [1, 2.5], "e": {}, "l": [], "n": -3}))
        );
        // vLLM ESCAPED_STRING_FUNCTION_OUTPUT
        assert_eq!(
            args(r#"get_weather(city='Martha\'s Vineyard', metric='\"cool units\"')"#),
            Some(json!({"city": "Martha's Vineyard", "metric": "\"cool units\""}))
        );
        assert_eq!(
            args("f(s=\"\"\"two\nlines\"\"\")"),
            Some(json!({"s": "two\nlines"}))
        );
        assert_eq!(args("f(u='caf\\u00e9')"), Some(json!({"u": "café"})));
    }

    #[test]
    fn a_whole_literal() {
        assert_eq!(
            literal("{'a': ('x', 1,), 'b': None, \"c\": True}"),
            Some(json!({"a": ["x", 1], "b": null, "c": true}))
        );
        assert_eq!(literal("{'a': 1} and more"), None);
        assert_eq!(literal("{a: 1}"), None);
    }

    #[test]
    fn what_is_not_a_call_of_literals_is_refused() {
        for text in [
            "f(1, 2)",
            "f(x=y)",
            "f(x=1e999)",
            "f(x=b'z')",
            "f(x=1 + 2)",
            "f(x='unclosed)",
            "f(x==1)",
            "(x=1)",
            &format!("f(x={}{})", "[".repeat(40), "]".repeat(40)),
        ] {
            assert_eq!(call_at(text, 0), None, "{text}");
        }
    }

    #[test]
    fn a_list_keeps_the_calls_that_read() {
        let (calls, end) = list_at("[bad(x=b'z'), get_weather(city='SF')] after", 0).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(end, "[bad(x=b'z'), get_weather(city='SF')]".len());
        assert_eq!(list_at("[1, 2]", 0), None);
        assert_eq!(list_at("[foo(x=1])]", 0), None);
    }
}
