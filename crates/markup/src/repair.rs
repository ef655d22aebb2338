//! Arguments checked against the tool's `inputSchema`, after the repairs that are certain to keep
//! the model's meaning: arguments sent as a JSON string, `null` for none, `"2"` where a number is
//! wanted, `2` where a string is wanted, arguments the schema forbids. Values are never invented
//! (a missing required argument stays missing), and what is still wrong is said field by field in
//! words a small model can act on.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::ValidationError;
use serde_json::{Map, Number, Value};

use super::lenient;

#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    pub arguments: Map<String, Value>,
    /// What was changed, in words, e.g. `"a": the string "2" became the number 2`.
    pub repairs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// A JSON pointer to the argument (`/a`, `/items/0/x`); `""` for the arguments as a whole.
    pub field: String,
    /// What the schema wants there: `a number`, `one of "c", "f"`, `a value (it is required)`…
    pub wants: String,
    /// What was sent: `the string "two"`, `nothing`…
    pub got: String,
}

/// How deep the repair follows `properties`/`items` (and local `$ref`s).
const MAX_DEPTH: usize = 16;
/// How much of a value a problem quotes.
const QUOTE: usize = 60;

/// Repairs `arguments` (see the module doc), then validates them against `schema`. A schema that
/// is itself not valid cannot judge anything: the arguments pass as repaired (the server will
/// check them).
pub fn repair(arguments: &Value, schema: &Value) -> Result<Repaired, Vec<FieldProblem>> {
    let mut repairs = Vec::new();
    let object = match arguments {
        Value::Object(m) => m.clone(),
        Value::Null => {
            repairs.push("no arguments were sent (null): used {}".to_string());
            Map::new()
        }
        Value::String(s) if s.trim().is_empty() => {
            repairs.push("the arguments were an empty string: used {}".to_string());
            Map::new()
        }
        Value::String(s) => match lenient::parse(s) {
            Some(Value::Object(m)) => {
                repairs.push("the arguments were a JSON string: read it as an object".to_string());
                m
            }
            _ => return Err(vec![not_an_object(arguments)]),
        },
        _ => return Err(vec![not_an_object(arguments)]),
    };
    let mut value = Value::Object(object);
    coerce(&mut value, schema, schema, "", &mut repairs, 0);
    if let Ok(validator) = jsonschema::validator_for(schema) {
        let problems: Vec<FieldProblem> =
            validator.iter_errors(&value).map(|e| problem(&e)).collect();
        if !problems.is_empty() {
            return Err(problems);
        }
    }
    let Value::Object(arguments) = value else {
        unreachable!("coerce keeps an object an object")
    };
    Ok(Repaired { arguments, repairs })
}

/// The text the model reads when its arguments are still not valid.
pub fn problems_for_model(tool: &str, problems: &[FieldProblem]) -> String {
    let mut out = format!("The arguments for {tool} are not valid:\n");
    for p in problems {
        let field = match p.field.strip_prefix('/') {
            Some(f) => format!("\"{f}\""),
            None => "the arguments".to_string(),
        };
        out.push_str(&format!("- {field}: wants {}; got {}\n", p.wants, p.got));
    }
    out.push_str(&format!(
        "Call {tool} again with these fixed. If you do not know a value, ask the user; do not make one up."
    ));
    out
}

fn not_an_object(v: &Value) -> FieldProblem {
    FieldProblem {
        field: String::new(),
        wants: "a JSON object of arguments".into(),
        got: describe(v),
    }
}

/// Follows a local `$ref` (`#/$defs/x`, `#/definitions/x`) to the schema it names.
fn deref<'a>(mut schema: &'a Value, root: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) if r.starts_with('#') => match root.pointer(&r[1..]) {
                Some(target) => schema = target,
                None => break,
            },
            _ => break,
        }
    }
    schema
}

/// The schema, or the `anyOf`/`oneOf` branches (as pydantic writes `Optional[int]`), that apply.
fn branches<'a>(schema: &'a Value, root: &'a Value) -> Vec<&'a Value> {
    let mut out = vec![schema];
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(bs)) = schema.get(key) {
            out.extend(bs.iter().map(|b| deref(b, root)));
        }
    }
    out
}

/// The types the schema allows; empty = any.
fn types<'a>(branches: &[&'a Value]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for b in branches {
        match b.get("type") {
            Some(Value::String(t)) => out.push(t.as_str()),
            Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    out
}

fn fits(v: &Value, t: &str) -> bool {
    match t {
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// Repairs `v` in place where the schema says what it should be (recursively through
/// `properties`, `additionalProperties` and `items`), noting each change in `repairs`.
fn coerce(
    v: &mut Value,
    schema: &Value,
    root: &Value,
    path: &str,
    repairs: &mut Vec<String>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = deref(schema, root);
    let bs = branches(schema, root);
    let wanted = types(&bs);
    if !wanted.is_empty() && !wanted.iter().any(|t| fits(v, t)) {
        if let Some((new, note)) = convert(v, &wanted) {
            repairs.push(format!("{}: {note}", label(path)));
            *v = new;
        }
    }
    if let (Value::String(s), Some(Value::Array(options))) = (&*v, schema.get("enum")) {
        if !options.contains(v) {
            let hits: Vec<&Value> = options
                .iter()
                .filter(|o| o.as_str().is_some_and(|o| o.eq_ignore_ascii_case(s)))
                .collect();
            if let [hit] = hits[..] {
                repairs.push(format!(
                    "{}: \"{s}\" became {hit} (the letter case the tool takes)",
                    label(path)
                ));
                *v = hit.clone();
            }
        }
    }
    match v {
        Value::Object(m) => {
            let Some(b) = bs
                .iter()
                .find(|b| b.get("properties").is_some() || b.get("additionalProperties").is_some())
            else {
                return;
            };
            let props = b.get("properties").and_then(Value::as_object);
            let additional = b.get("additionalProperties");
            let forbids =
                additional == Some(&Value::Bool(false)) && b.get("patternProperties").is_none();
            let mut dropped = Vec::new();
            for (k, child) in m.iter_mut() {
                let at = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match props.and_then(|p| p.get(k)) {
                    Some(s) => coerce(child, s, root, &at, repairs, depth + 1),
                    None if forbids => dropped.push(k.clone()),
                    None => {
                        if let Some(s @ Value::Object(_)) = additional {
                            coerce(child, s, root, &at, repairs, depth + 1);
                        }
                    }
                }
            }
            if !dropped.is_empty() {
                m.retain(|k, _| !dropped.contains(k));
                for k in dropped {
                    repairs.push(format!(
                        "{}: dropped (the tool takes no such argument)",
                        label(&format!("{path}/{k}"))
                    ));
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = bs
                .iter()
                .find_map(|b| b.get("items").filter(|i| i.is_object()))
            else {
                return;
            };
            for (i, item) in items.iter_mut().enumerate() {
                coerce(
                    item,
                    item_schema,
                    root,
                    &format!("{path}/{i}"),
                    repairs,
                    depth + 1,
                );
            }
        }
        _ => {}
    }
}

/// The value converted to one of the wanted types, when the conversion is exact, and a note.
fn convert(v: &Value, wanted: &[&str]) -> Option<(Value, String)> {
    let wants = |t: &str| wanted.contains(&t);
    match v {
        Value::String(s) => {
            let t = s.trim();
            let became = |new: &Value| format!("the string \"{s}\" became {}", describe_short(new));
            if wants("integer") {
                if let Some(n) = exact_integer(t) {
                    let new = Value::from(n);
                    return Some((new.clone(), became(&new)));
                }
            }
            if wants("number") {
                if let Some(n) = exact_number(t) {
                    let new = Value::Number(n);
                    return Some((new.clone(), became(&new)));
                }
            }
            if wants("boolean") {
                for b in [true, false] {
                    if t.eq_ignore_ascii_case(if b { "true" } else { "false" }) {
                        return Some((Value::Bool(b), became(&Value::Bool(b))));
                    }
                }
            }
            if wants("null") && t == "null" {
                return Some((Value::Null, became(&Value::Null)));
            }
            if (wants("array") && t.starts_with('[')) || (wants("object") && t.starts_with('{')) {
                if let Some(new) = lenient::parse(t).filter(|n| n.is_array() || n.is_object()) {
                    let kind = if new.is_array() {
                        "an array"
                    } else {
                        "an object"
                    };
                    return Some((new, format!("a JSON string was read as {kind}")));
                }
            }
            None
        }
        Value::Number(n) if wants("string") => {
            let new = Value::String(n.to_string());
            Some((new, format!("the number {n} became the string \"{n}\"")))
        }
        _ => None,
    }
}

/// `"2"`, `"-7"`, `"2.0"`, `"1e3"` as an integer; not `"2.5"`, not past what an f64 holds exactly.
fn exact_integer(t: &str) -> Option<i64> {
    let n = exact_number(t)?;
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0).then_some(f as i64)
}

/// A string that is exactly a JSON number (no `+`, no `.5`, no words), as that number.
fn exact_number(t: &str) -> Option<Number> {
    if !t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return None;
    }
    match serde_json::from_str::<Value>(t).ok()? {
        Value::Number(n) if n.as_f64().is_some_and(f64::is_finite) => Some(n),
        _ => None,
    }
}

/// `"a"` for `/a`, `"items/0/x"` for deeper; `the arguments` for the root.
fn label(path: &str) -> String {
    match path.strip_prefix('/') {
        Some(p) => format!("\"{p}\""),
        None => "the arguments".into(),
    }
}

/// The value in words, quoted short.
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!(
            "the string {}",
            quote(&Value::String(s.clone()).to_string())
        ),
        Value::Number(n) => format!("the number {n}"),
        Value::Bool(b) => format!("{b}"),
        Value::Null => "null".into(),
        Value::Array(_) => format!("the array {}", quote(&v.to_string())),
        Value::Object(_) => format!("the object {}", quote(&v.to_string())),
    }
}

fn describe_short(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("the number {n}"),
        other => other.to_string(),
    }
}

fn quote(s: &str) -> String {
    if s.chars().count() <= QUOTE {
        return s.to_string();
    }
    let cut: String = s.chars().take(QUOTE).collect();
    format!("{cut}…")
}

fn type_words(t: &str) -> &'static str {
    match t {
        "integer" => "an integer",
        "number" => "a number",
        "string" => "a string",
        "boolean" => "true or false",
        "object" => "an object",
        "array" => "an array",
        "null" => "null",
        _ => "a value",
    }
}

/// One validation error as a field problem.
fn problem(e: &ValidationError) -> FieldProblem {
    let at = e.instance_path().to_string();
    let got = describe(e.instance());
    let list = |vs: &Value| match vs {
        Value::Array(items) => items
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    let (field, wants, got) = match e.kind() {
        ValidationErrorKind::Required { property } => {
            let p = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            (
                format!("{at}/{p}"),
                "a value (it is required)".to_string(),
                "nothing".to_string(),
            )
        }
        ValidationErrorKind::Type { kind } => {
            let words: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![type_words(t.as_str())],
                TypeKind::Multiple(set) => set.iter().map(|t| type_words(t.as_str())).collect(),
            };
            (at, words.join(" or "), got)
        }
        ValidationErrorKind::Enum { options } => (at, format!("one of {}", list(options)), got),
        ValidationErrorKind::Constant { expected_value } => {
            (at, format!("exactly {expected_value}"), got)
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => (
            format!("{at}/{}", unexpected.join(",")),
            "no such argument (the tool does not take it)".to_string(),
            "an argument it does not take".to_string(),
        ),
        ValidationErrorKind::MinLength { limit } => {
            (at, format!("at least {limit} characters"), got)
        }
        ValidationErrorKind::MaxLength { limit } => {
            (at, format!("at most {limit} characters"), got)
        }
        ValidationErrorKind::Minimum { limit } => {
            (at, format!("a number of at least {limit}"), got)
        }
        ValidationErrorKind::Maximum { limit } => (at, format!("a number of at most {limit}"), got),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            (at, format!("a number above {limit}"), got)
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            (at, format!("a number below {limit}"), got)
        }
        ValidationErrorKind::MinItems { limit } => (at, format!("at least {limit} items"), got),
        ValidationErrorKind::MaxItems { limit } => (at, format!("at most {limit} items"), got),
        ValidationErrorKind::Pattern { pattern } => {
            (at, format!("text matching the pattern {pattern}"), got)
        }
        ValidationErrorKind::Format { format } => (at, format!("a {format}"), got),
        _ => (at, format!("a value the schema accepts ({e})"), got),
    };
    FieldProblem { field, wants, got }
}

#[cfg(test)]
#[path = "repair_tests.rs"]
mod tests;
