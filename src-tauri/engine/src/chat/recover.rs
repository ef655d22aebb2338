//! Tool calls recovered from a reply's text, whatever the model's mode: small models often write
//! a call as text instead of using the API's tool-call field, in their chat template's own markup
//! or as bare JSON. This supersedes `text_tools::extract_tool_call`.
//!
//! A candidate counts as a call only when it has a call's shape (a name, arguments, nothing
//! else) and its name names an offered tool (the caller's predicate, normally built on
//! [`super::resolve`]): a JSON object that is data, a code sample, or a call to a tool that is not
//! offered stays text. The markup of the calls found is removed from the returned text.

use serde_json::{Map, Value};

use super::lenient::{self, Balance};

/// How a call was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{"name"|"tool": …, "arguments"|"parameters": …}` in the text.
    BareJson,
    /// The same in a ```` ```json ```` (or plain ```` ``` ````) fence.
    Fenced,
    /// A JSON array of calls.
    JsonArray,
    /// Hermes / Qwen: `<tool_call>{…}</tool_call>`.
    Hermes,
    /// Mistral: `[TOOL_CALLS][{…}]`, or `[TOOL_CALLS]name[ARGS]{…}`.
    Mistral,
    /// Llama 3: `<|python_tag|>{"name": …, "parameters": …}`.
    PythonTag,
    /// OpenAI's `{"type": "function", "function": {"name": …, "arguments": "<json>"}}`.
    OpenAiFunction,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecoveredCall {
    /// The name as the model wrote it (resolve it with [`super::resolve::resolve`]).
    pub name: String,
    /// Normally an object; a JSON string holding an object has been read. Anything else is kept
    /// as sent, for [`super::repair::repair`] to report.
    pub arguments: Value,
    pub shape: Shape,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// In the order they appear in the reply.
    pub calls: Vec<RecoveredCall>,
    /// The reply without the calls' markup (JSON, tags, fences), prose before and after kept,
    /// trimmed.
    pub text: String,
    /// Names in call markup that was removed alongside offered calls, but that name no offered
    /// tool: the model should be told these did not run.
    pub skipped: Vec<String>,
}

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const MISTRAL: &str = "[TOOL_CALLS]";
const PYTHON_TAG: &str = "<|python_tag|>";
/// Fence languages whose content may be calls.
const JSON_FENCES: [&str; 6] = ["", "json", "json5", "jsonc", "tool_call", "tool_code"];
/// How many never-closing brackets are repaired as cut-off values per reply (bounds the work on
/// text full of stray brackets).
const CUT_OFF_TRIES: usize = 4;
/// The bare-JSON search reads at most this many times the text's length (plus a little) while
/// matching brackets: text full of stray or deeply nested brackets (a model stuck repeating
/// `{`) would otherwise cost the square of its length. Past it, the rest is not searched.
const SCAN_BUDGET: usize = 32;
/// How far after `[TOOL_CALLS]` a v11 call's `[ARGS]` may be (the name and a call id).
const MISTRAL_HEAD: usize = 256;

/// The keys that may name the tool, hold the arguments, or come along in a call object.
const NAME_KEYS: [&str; 3] = ["name", "tool", "tool_name"];
const ARG_KEYS: [&str; 4] = ["arguments", "parameters", "args", "input"];
const OTHER_KEYS: [&str; 4] = ["id", "type", "call_id", "index"];

/// Finds the tool calls written in `text` (see the module doc); `None` when there is none whose
/// name `is_offered` accepts.
pub fn recover(text: &str, is_offered: &dyn Fn(&str) -> bool) -> Option<Recovered> {
    let mut regions = Vec::new();
    hermes(text, is_offered, &mut regions);
    mistral(text, is_offered, &mut regions);
    python_tag(text, is_offered, &mut regions);
    let code = fences(text, is_offered, &mut regions);
    bare(text, is_offered, &mut regions, &code);
    if regions.is_empty() {
        return None;
    }
    regions.sort_by_key(|r| r.start);
    let mut out = Recovered {
        calls: Vec::new(),
        text: String::new(),
        skipped: Vec::new(),
    };
    let mut kept = Vec::with_capacity(regions.len() + 1);
    let mut last = 0;
    for r in regions {
        kept.push(&text[last..r.start]);
        last = r.end;
        out.calls.extend(r.calls);
        out.skipped.extend(r.skipped);
    }
    kept.push(&text[last..]);
    out.text = join_kept(&kept);
    Some(out)
}

/// Whether a JSON value has the shape of one or more calls (names not checked): what the stream
/// gate holds back.
pub fn is_call_shaped(v: &Value) -> bool {
    calls_in(v).is_some()
}

/// A call as read from JSON, before its name is checked.
struct Candidate {
    name: String,
    arguments: Value,
    openai: bool,
}

/// A span of the text that is call markup, and the calls in it.
struct Region {
    start: usize,
    end: usize,
    calls: Vec<RecoveredCall>,
    skipped: Vec<String>,
}

/// The calls a JSON value describes: one call object, an array of them, or a
/// `{"tool_calls": […]}` wrapper. `None` when it is anything else.
/// The names of the calls a call-shaped value holds; `None` when it is not call-shaped.
pub fn call_names(v: &Value) -> Option<Vec<String>> {
    calls_in(v).map(|cs| cs.into_iter().map(|c| c.name).collect())
}

fn calls_in(v: &Value) -> Option<Vec<Candidate>> {
    match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(one_call).collect(),
        Value::Object(o) => match o.get("tool_calls") {
            Some(Value::Array(items))
                if !items.is_empty()
                    && o.keys()
                        .all(|k| ["tool_calls", "role", "content"].contains(&k.as_str())) =>
            {
                items.iter().map(one_call).collect()
            }
            _ => one_call(v).map(|c| vec![c]),
        },
        _ => None,
    }
}

/// One call object: `{"name": …, "arguments": …}` and its synonyms, or OpenAI's
/// `{"type": "function", "function": {…}}`.
fn one_call(v: &Value) -> Option<Candidate> {
    let o = v.as_object()?;
    if let Some(Value::Object(f)) = o.get("function") {
        let extra_ok = o
            .iter()
            .all(|(k, v)| k == "function" || (OTHER_KEYS.contains(&k.as_str()) && type_ok(k, v)));
        let mut c = plain(f)?;
        c.openai = true;
        return extra_ok.then_some(c);
    }
    plain(o)
}

fn type_ok(key: &str, v: &Value) -> bool {
    key != "type" || matches!(v.as_str(), Some("function" | "tool_use" | "tool_call"))
}

/// `{"name"|"tool"|"tool_name"|"function": "<name>", "arguments"|"parameters"|"args"|"input": …}`
/// with at most `id`/`type`/`call_id`/`index` besides: an object with other keys is data (a tool
/// description, a record with a `name` field…), not a call.
fn plain(o: &Map<String, Value>) -> Option<Candidate> {
    let mut name = None;
    let mut arguments = None;
    for (k, v) in o {
        let k = k.as_str();
        if NAME_KEYS.contains(&k) || k == "function" {
            let n = v.as_str()?.trim();
            if n.is_empty() || name.is_some() {
                return None;
            }
            name = Some(n.to_string());
        } else if ARG_KEYS.contains(&k) {
            if arguments.is_some() {
                return None;
            }
            arguments = Some(v);
        } else if !OTHER_KEYS.contains(&k) || !type_ok(k, v) {
            return None;
        }
    }
    let arguments = match arguments {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(s)) => match lenient::parse(s) {
            Some(v @ Value::Object(_)) => v,
            _ => Value::String(s.clone()),
        },
        Some(a) => a.clone(),
    };
    Some(Candidate {
        name: name?,
        arguments,
        openai: false,
    })
}

/// Turns the values found in one span into a region, when at least one call in them is offered.
/// `shape` is the span's shape; `None` = by the value (bare JSON).
fn region(
    start: usize,
    end: usize,
    values: &[Value],
    shape: Option<Shape>,
    is_offered: &dyn Fn(&str) -> bool,
) -> Option<Region> {
    let mut r = Region {
        start,
        end,
        calls: Vec::new(),
        skipped: Vec::new(),
    };
    for v in values {
        for c in calls_in(v)? {
            let shape = shape.unwrap_or(if v.is_array() {
                Shape::JsonArray
            } else if c.openai {
                Shape::OpenAiFunction
            } else {
                Shape::BareJson
            });
            if is_offered(&c.name) {
                r.calls.push(RecoveredCall {
                    name: c.name,
                    arguments: c.arguments,
                    shape,
                });
            } else {
                r.skipped.push(c.name);
            }
        }
    }
    (!r.calls.is_empty()).then_some(r)
}

fn overlaps(regions: &[Region], start: usize, end: usize) -> bool {
    regions.iter().any(|r| start < r.end && r.start < end)
}

/// `<tool_call>{…}</tool_call>`, several possibly; the closing tag may be missing (then the call
/// ends where its JSON ends, or at the next opening tag).
fn hermes(text: &str, is_offered: &dyn Fn(&str) -> bool, out: &mut Vec<Region>) {
    let mut from = 0;
    while let Some(p) = text[from..].find(HERMES_OPEN) {
        let open = from + p;
        let body = open + HERMES_OPEN.len();
        let rest = &text[body..];
        let next = rest.find(HERMES_OPEN).map_or(text.len(), |n| body + n);
        let close = text[body..next].find(HERMES_CLOSE).map(|c| body + c);
        let content_end = close.unwrap_or(next);
        let content = &text[body..content_end];
        let (inner, offset) = unfence(content);
        let (values, used) = lenient::leading_values(inner);
        let end = match close {
            Some(c) => c + HERMES_CLOSE.len(),
            None => body + offset + used,
        };
        if let Some(r) = region(open, end, &values, Some(Shape::Hermes), is_offered) {
            out.push(r);
        }
        from = end.max(body);
    }
}

/// A fence around the whole of `s`, if there is one: its content and where that starts.
fn unfence(s: &str) -> (&str, usize) {
    let t = s.trim_start();
    let lead = s.len() - t.len();
    if let Some(after) = t.strip_prefix("```") {
        let nl = after.find('\n').map_or(after.len(), |n| n + 1);
        let body = &after[nl..];
        let body = body.trim_end().strip_suffix("```").unwrap_or(body);
        return (body, lead + 3 + nl);
    }
    (s, 0)
}

/// `[TOOL_CALLS][{…}, …]` (or one object), and the v11 form `[TOOL_CALLS]name[ARGS]{…}` (with an
/// optional `[CALL_ID]id` before `[ARGS]`).
fn mistral(text: &str, is_offered: &dyn Fn(&str) -> bool, out: &mut Vec<Region>) {
    let mut from = 0;
    while let Some(p) = text[from..].find(MISTRAL) {
        let open = from + p;
        let after = open + MISTRAL.len();
        let rest = &text[after..];
        let lead = rest.len() - rest.trim_start().len();
        let found = if rest.trim_start().starts_with(['[', '{']) {
            let (values, used) = lenient::leading_values(rest);
            (!values.is_empty()).then(|| (values, after + used))
        } else {
            mistral_v11(text, after)
        };
        let end = match found {
            Some((values, end)) if !overlaps(out, open, end) => {
                let end = skip_token(text, end, &["</s>"]);
                if let Some(r) = region(open, end, &values, Some(Shape::Mistral), is_offered) {
                    out.push(r);
                }
                end
            }
            _ => after + lead,
        };
        from = end.max(after);
    }
}

/// `name[ARGS]{…}` or `name[CALL_ID]id[ARGS]{…}` at byte `at`: the call as a value, and its end.
fn mistral_v11(text: &str, at: usize) -> Option<(Vec<Value>, usize)> {
    let rest = &text[at..];
    let mut window = rest.len().min(MISTRAL_HEAD);
    while !rest.is_char_boundary(window) {
        window -= 1;
    }
    let args_at = rest[..window].find("[ARGS]")?;
    let head = &rest[..args_at];
    let name = head.split("[CALL_ID]").next()?.trim();
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.:/".contains(c));
    if !name_ok {
        return None;
    }
    let json_at = at + args_at + "[ARGS]".len();
    let lead = text[json_at..].len() - text[json_at..].trim_start().len();
    if !text[json_at + lead..].starts_with('{') {
        return None;
    }
    let (args, end) = lenient::parse_at(text, json_at + lead)?;
    Some((
        vec![serde_json::json!({"name": name, "arguments": args})],
        end,
    ))
}

/// `<|python_tag|>{…}` (several separated by `;` possibly), with the `<|eom_id|>`/`<|eot_id|>`
/// that may follow.
fn python_tag(text: &str, is_offered: &dyn Fn(&str) -> bool, out: &mut Vec<Region>) {
    let mut from = 0;
    while let Some(p) = text[from..].find(PYTHON_TAG) {
        let open = from + p;
        let after = open + PYTHON_TAG.len();
        let (values, used) = lenient::leading_values(&text[after..]);
        let end = skip_token(text, after + used, &["<|eom_id|>", "<|eot_id|>"]);
        if !values.is_empty() && !overlaps(out, open, end) {
            if let Some(r) = region(open, end, &values, Some(Shape::PythonTag), is_offered) {
                out.push(r);
            }
        }
        from = end.max(after);
    }
}

/// Past one of `tokens` that follows byte `at` (after blanks), or `at`.
fn skip_token(text: &str, at: usize, tokens: &[&str]) -> usize {
    let rest = &text[at..];
    let t = rest.trim_start();
    tokens
        .iter()
        .find(|tok| t.starts_with(*tok))
        .map_or(at, |tok| at + (rest.len() - t.len()) + tok.len())
}

/// Fences whose whole content is calls become regions; every other fence is code, returned so
/// that the bare-JSON search skips it (a code sample is not a call).
fn fences(
    text: &str,
    is_offered: &dyn Fn(&str) -> bool,
    out: &mut Vec<Region>,
) -> Vec<(usize, usize)> {
    let mut code = Vec::new();
    let mut from = 0;
    while let Some(p) = text[from..].find("```") {
        let open = from + p;
        let info_at = open + 3;
        let line_end = text[info_at..]
            .find('\n')
            .map_or(text.len(), |n| info_at + n);
        let info = text[info_at..line_end].trim().to_ascii_lowercase();
        let body = (line_end + 1).min(text.len());
        let close = text[body..].find("```").map(|c| body + c);
        let (body_end, end) = close.map_or((text.len(), text.len()), |c| (c, c + 3));
        if overlaps(out, open, end) {
            from = info_at;
            continue;
        }
        let content = &text[body..body_end];
        let (values, used) = lenient::leading_values(content);
        let whole = !values.is_empty() && content[used..].trim().is_empty();
        let found = (whole && JSON_FENCES.contains(&info.as_str()))
            .then(|| region(open, end, &values, Some(Shape::Fenced), is_offered))
            .flatten();
        match found {
            Some(r) => out.push(r),
            None => code.push((open, end)),
        }
        from = end.max(info_at);
    }
    code
}

/// Bare JSON anywhere else in the text: each object (or array of objects) is a candidate.
fn bare(
    text: &str,
    is_offered: &dyn Fn(&str) -> bool,
    out: &mut Vec<Region>,
    code: &[(usize, usize)],
) {
    let bytes = text.as_bytes();
    let mut cut_off_tries = CUT_OFF_TRIES;
    let mut budget = SCAN_BUDGET * text.len() + 64 * 1024;
    let mut i = 0;
    while i < bytes.len() {
        let Some(p) = bytes[i..].iter().position(|&c| c == b'{' || c == b'[') else {
            break;
        };
        i += p;
        if let Some(&(_, end)) = code.iter().find(|&&(s, e)| s <= i && i < e) {
            i = end;
            continue;
        }
        if let Some(r) = out.iter().find(|r| r.start <= i && i < r.end) {
            i = r.end;
            continue;
        }
        if bytes[i] == b'[' && text[i + 1..].trim_start().as_bytes().first() != Some(&b'{') {
            i += 1;
            continue;
        }
        // stop at the next region or code block: a value does not run into them
        let limit = out
            .iter()
            .map(|r| r.start)
            .chain(code.iter().map(|c| c.0))
            .filter(|&s| s > i)
            .min()
            .unwrap_or(text.len());
        let span = &text[..limit];
        let mut balance = Balance::new(i);
        let found = balance.advance(span.as_bytes());
        let read = found.unwrap_or(limit) - i;
        if read > budget {
            break;
        }
        budget -= read;
        let (parsed, closed) = match found {
            Some(end) => (lenient::parse(&span[i..end]).map(|v| (v, end)), true),
            None if cut_off_tries > 0 => {
                cut_off_tries -= 1;
                (lenient::parse(&span[i..]).map(|v| (v, limit)), false)
            }
            None => (None, false),
        };
        match parsed {
            Some((v, end)) => {
                if let Some(r) = region(i, end, std::slice::from_ref(&v), None, is_offered) {
                    out.push(r);
                    i = end;
                } else if closed {
                    // a closed value that is data is skipped whole: what is inside is data too
                    i = end;
                } else {
                    i += 1;
                }
            }
            None => i += 1,
        }
    }
}

/// Joins what is left of the text around removed markup: a paragraph break where there was one,
/// a line break where there was one, else a space.
fn join_kept(pieces: &[&str]) -> String {
    // the blanks between two kept pieces, one run at a time: around a call on its own line, the
    // line break before it and the one after it make one line break, not a paragraph break
    fn sep(blanks: &[&str]) -> &'static str {
        if blanks.iter().any(|b| b.contains("\n\n")) {
            "\n\n"
        } else if blanks.iter().any(|b| b.contains('\n')) {
            "\n"
        } else {
            " "
        }
    }
    let mut out = String::new();
    let mut blanks: Vec<&str> = Vec::new();
    for piece in pieces {
        let t = piece.trim();
        if t.is_empty() {
            blanks.push(piece);
            continue;
        }
        blanks.push(&piece[..piece.len() - piece.trim_start().len()]);
        if !out.is_empty() {
            out.push_str(sep(&blanks));
        }
        out.push_str(t);
        blanks.clear();
        blanks.push(&piece[piece.trim_end().len()..]);
    }
    out
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
