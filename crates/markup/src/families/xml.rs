//! Arguments written as XML-like parameters, one value of text each (`<parameter=city>Paris
//! </parameter>`, `<parameter name="days">5</parameter>`, `<arg_key>`/`<arg_value>` pairs),
//! typed from the tool's `inputSchema`: `"5"` becomes 5 where it says integer, `{"a": 1}`
//! becomes an object where it says object. Without a schema, an object or a list written as
//! JSON is read as one and everything else stays a string (the repair, which has the schema
//! when the call runs, converts what it safely can).

use serde_json::{Map, Number, Value};

use super::shapes::is_name;
use super::{Cx, Found};
use crate::lenient;

/// Where the name and the value of one parameter are, in one of the forms.
pub enum ParamForm {
    /// `<parameter=NAME>VALUE</parameter>` (Qwen3-Coder, Seed-OSS).
    Equals,
    /// `<parameter name="NAME">VALUE</parameter>` (MiniMax M2).
    NameAttr,
    /// `<arg_key>NAME</arg_key><arg_value>VALUE</arg_value>` (GLM 4.5/4.6).
    ArgPairs,
}

/// The parameters in `body`, in order: (name, raw value). `None` when something in it is
/// malformed (a parameter that never closes, a key without a value).
pub fn params(body: &str, form: ParamForm) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let (name, value, after) = match form {
            ParamForm::Equals => {
                let Some(at) = rest.find("<parameter=") else {
                    break;
                };
                let after_open = &rest[at + "<parameter=".len()..];
                let gt = after_open.find('>')?;
                let name = after_open[..gt].trim().trim_matches(['"', '\'']);
                let value_part = &after_open[gt + 1..];
                let (value, after) = until_close(value_part, "</parameter>", "<parameter=")?;
                (name, value, after)
            }
            ParamForm::NameAttr => {
                let Some(at) = rest.find("<parameter") else {
                    break;
                };
                let after_open = &rest[at + "<parameter".len()..];
                let gt = after_open.find('>')?;
                let name = attr(&after_open[..gt], "name")?;
                let value_part = &after_open[gt + 1..];
                let (value, after) = until_close(value_part, "</parameter>", "<parameter")?;
                (name, value, after)
            }
            ParamForm::ArgPairs => {
                let Some(at) = rest.find("<arg_key>") else {
                    break;
                };
                let after_key = &rest[at + "<arg_key>".len()..];
                let end_key = after_key.find("</arg_key>")?;
                let name = after_key[..end_key].trim();
                let after_key = &after_key[end_key + "</arg_key>".len()..];
                let open = after_key.find("<arg_value>")?;
                if !after_key[..open].trim().is_empty() {
                    return None;
                }
                let value_part = &after_key[open + "<arg_value>".len()..];
                let close = value_part.find("</arg_value>")?;
                (
                    name,
                    &value_part[..close],
                    &value_part[close + "</arg_value>".len()..],
                )
            }
        };
        if name.is_empty() {
            return None;
        }
        out.push((name.to_string(), value.to_string()));
        rest = after;
    }
    Some(out)
}

/// The value up to `close` (or up to the next `next` opening, or the end: a model that forgot
/// a closing tag), and what follows.
fn until_close<'a>(s: &'a str, close: &str, next: &str) -> Option<(&'a str, &'a str)> {
    match s.find(close) {
        Some(c) if s[..c].find(next).is_none() => Some((&s[..c], &s[c + close.len()..])),
        _ => match s.find(next) {
            Some(n) => Some((&s[..n], &s[n..])),
            None => Some((s, "")),
        },
    }
}

/// The value of attribute `name` in a tag's inside (`name="x"` or `name='x'`).
pub fn attr<'a>(inside: &'a str, name: &str) -> Option<&'a str> {
    let at = inside.find(&format!("{name}="))?;
    let v = &inside[at + name.len() + 1..];
    let q = v.chars().next()?;
    if q == '"' || q == '\'' {
        let end = v[1..].find(q)?;
        Some(&v[1..1 + end])
    } else {
        Some(v.split_whitespace().next()?.trim_end_matches('/'))
    }
}

/// The arguments object from raw parameters, each typed from `schema` (the tool's
/// `inputSchema`) when it has the parameter.
pub fn typed(params: Vec<(String, String)>, schema: Option<&Value>) -> Value {
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let mut out = Map::new();
    for (name, raw) in params {
        let kind = props.and_then(|p| p.get(&name)).and_then(type_of);
        out.insert(name, convert(&raw, kind.as_deref()));
    }
    Value::Object(out)
}

/// The type a property's schema asks for: its `type` (the first that is not `null` in a list),
/// or that of the first `anyOf`/`oneOf` branch that is not `null`.
fn type_of(schema: &Value) -> Option<String> {
    match schema.get("type") {
        Some(Value::String(t)) => return Some(t.clone()),
        Some(Value::Array(ts)) => {
            return ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .map(String::from)
        }
        _ => {}
    }
    ["anyOf", "oneOf"].iter().find_map(|k| {
        schema
            .get(*k)?
            .as_array()?
            .iter()
            .filter_map(type_of)
            .find(|t| t != "null")
    })
}

/// One raw value as the type asks (a value that does not fit stays a string, for the repair
/// to report).
fn convert(raw: &str, kind: Option<&str>) -> Value {
    // the value's own line breaks around it are layout
    let v = raw.strip_prefix('\n').unwrap_or(raw);
    let v = v.strip_suffix('\n').unwrap_or(v);
    let t = v.trim();
    let as_string = || Value::String(v.to_string());
    match kind {
        Some("string") => as_string(),
        Some("integer") => t
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| t.parse::<f64>().map(|f| number(f, t)))
            .unwrap_or_else(|_| as_string()),
        Some("number" | "float") => t
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| t.parse::<f64>().map(|f| number(f, t)))
            .unwrap_or_else(|_| as_string()),
        Some("boolean") => match t.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => as_string(),
        },
        Some("null") if matches!(t, "null" | "None" | "") => Value::Null,
        Some("object" | "array") => match lenient::parse(t) {
            Some(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => as_string(),
        },
        _ if t.starts_with(['{', '[']) => match lenient::parse(t) {
            Some(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => as_string(),
        },
        _ => as_string(),
    }
}

fn number(f: f64, raw: &str) -> Value {
    Number::from_f64(f).map_or_else(|| Value::String(raw.to_string()), Value::Number)
}

/// The `<function=NAME>` … `</function>` calls in `body` (Qwen3-Coder, Seed-OSS), their
/// parameters typed from each tool's schema; `None` when something in it is not such a call.
pub fn equals_functions(body: &str, cx: &Cx) -> Option<Vec<Found>> {
    let mut out = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let after = rest.strip_prefix("<function=")?;
        let gt = after.find('>')?;
        let name = after[..gt].trim().trim_matches(['"', '\'']);
        if !is_name(name) {
            return None;
        }
        let inner = &after[gt + 1..];
        let (content, next) = match inner.find("</function>") {
            Some(c) => (&inner[..c], &inner[c + "</function>".len()..]),
            None => (inner, ""),
        };
        if !content.trim().is_empty() && !content.trim_start().starts_with("<parameter=") {
            return None;
        }
        let params = params(content, ParamForm::Equals)?;
        out.push(Found::new(name, typed(params, (cx.schema)(name).as_ref())));
        rest = next.trim();
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_in_each_form() {
        let p = params(
            "<parameter=city>\nDallas\n</parameter>\n<parameter=n>\n2\n</parameter>",
            ParamForm::Equals,
        )
        .unwrap();
        assert_eq!(
            p,
            vec![
                ("city".into(), "\nDallas\n".into()),
                ("n".into(), "\n2\n".into())
            ]
        );
        let p = params(
            r#"<parameter name="city">Seattle</parameter><parameter name='days'>5</parameter>"#,
            ParamForm::NameAttr,
        )
        .unwrap();
        assert_eq!(p[1], ("days".into(), "5".into()));
        let p = params(
            "\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>",
            ParamForm::ArgPairs,
        )
        .unwrap();
        assert_eq!(p, vec![("city".into(), "Beijing".into())]);
        assert_eq!(
            params("<arg_key>city</arg_key>x", ParamForm::ArgPairs),
            None
        );
    }

    #[test]
    fn values_are_typed_from_the_schema() {
        // after vLLM tests/tool_parsers/test_qwen3coder_tool_parser.py, test_extract_tool_calls_type_conversion
        let schema = json!({"type": "object", "properties": {
            "int_param": {"type": "integer"}, "float_param": {"type": "float"},
            "bool_param": {"type": "boolean"}, "str_param": {"type": "string"},
            "obj_param": {"type": "object"}, "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "both": {"type": ["integer", "null"]}}});
        let p = vec![
            ("int_param".to_string(), "\n42\n".to_string()),
            ("float_param".into(), "\n2.75\n".into()),
            ("bool_param".into(), "\ntrue\n".into()),
            ("str_param".into(), "\nhello world\n".into()),
            ("obj_param".into(), "\n{\"key\": \"value\"}\n".into()),
            ("opt".into(), "7".into()),
            ("both".into(), "8".into()),
            ("extra".into(), "5".into()),
        ];
        assert_eq!(
            typed(p, Some(&schema)),
            json!({"int_param": 42, "float_param": 2.75, "bool_param": true,
                   "str_param": "hello world", "obj_param": {"key": "value"}, "opt": 7,
                   "both": 8, "extra": "5"})
        );
        // without a schema: only an object or a list is read
        let p = vec![
            ("d".to_string(), "{\"width\": 10}".to_string()),
            ("n".into(), "2".into()),
        ];
        assert_eq!(typed(p, None), json!({"d": {"width": 10}, "n": "2"}));
        // a value that does not fit the type stays as written
        let p = vec![("int_param".to_string(), "many".to_string())];
        assert_eq!(typed(p, Some(&schema)), json!({"int_param": "many"}));
    }
}
