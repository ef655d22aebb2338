//! A chat template rendered with probe conversations: minijinja (the Jinja engine Hugging Face's
//! TGI and mistral.rs use), with Python's string, list and dict methods from minijinja-contrib's
//! `pycompat`, `tojson` as Python's `json.dumps` writes it (Hugging Face's), `raise_exception`
//! and `strftime_now` as transformers defines them. A template is untrusted: it renders with a
//! fuel limit (no endless loop) and no access to anything but the values given.

use minijinja::value::{Kwargs, Serde};
use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::{json, Value as Json};

/// How many instructions one render may take (a real template takes well under 100,000).
const FUEL: u64 = 2_000_000;

/// The probe's sentinels: text no template holds and no tokenizer merges into its markup.
pub const FUN_1: &str = "zqa_first_fn";
pub const FUN_2: &str = "zqb_second_fn";
pub const KEY_1: &str = "zqk_one";
pub const KEY_2: &str = "zqk_two";
pub const VAL_1: &str = "zqv_one";
pub const VAL_2: &str = "zqv_two";
/// The number the second key holds (a value that is not a string).
pub const NUM: i64 = 7;
pub const ID_1: &str = "call00001";
pub const ID_2: &str = "call00002";
pub const USER: &str = "zqu user says hi";
pub const CONTENT: &str = "zqc answer text";
pub const THINKING: &str = "zqr thinking here";
/// The tokens a template may print for the tokenizer's bos and eos (not the model's own).
pub const BOS: &str = "\u{E000}";
pub const EOS: &str = "\u{E001}";

/// One compiled template, ready to render probes.
pub struct Renderer {
    env: Environment<'static>,
}

impl Renderer {
    /// Compiles `source`; the error says why it could not be read.
    pub fn new(source: &str) -> Result<Renderer, String> {
        let mut env = Environment::new();
        let mut syntax = minijinja::syntax::SyntaxConfig::builder();
        syntax.trim_blocks(true).lstrip_blocks(true);
        env.set_syntax(syntax.build().map_err(|e| e.to_string())?);
        env.set_fuel(Some(FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_function("strftime_now", |_fmt: String| "26 Jul 2026".to_string());
        env.add_template_owned("t", without_generation_tags(source))
            .map_err(|e| format!("the template does not compile: {e}"))?;
        Ok(Renderer { env })
    }

    /// The template rendered for `messages` (and the probe tools).
    pub fn render(
        &self,
        messages: &Json,
        generation_prompt: bool,
        thinking: bool,
    ) -> Result<String, String> {
        self.render_with(messages, &tools(), generation_prompt, thinking)
    }

    /// The template rendered for `messages` and `tools` (in the OpenAI shape).
    pub fn render_with(
        &self,
        messages: &Json,
        tools: &Json,
        generation_prompt: bool,
        thinking: bool,
    ) -> Result<String, String> {
        let t = self.env.get_template("t").map_err(|e| e.to_string())?;
        let ctx = json!({
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": generation_prompt,
            "enable_thinking": thinking,
            "bos_token": BOS,
            "eos_token": EOS,
        });
        t.render(Value::from(Serde(ctx))).map_err(|e| {
            let mut why = e.to_string();
            if let Some(d) = e.detail() {
                why = format!("{why}: {d}");
            }
            why
        })
    }
}

/// `{% generation %}` … `{% endgeneration %}` (a training marker of transformers' templates):
/// minijinja has no such block; its content renders as it is.
fn without_generation_tags(source: &str) -> String {
    let mut out = source.to_string();
    for tag in ["generation", "endgeneration"] {
        for (open, close) in [("{%-", "-%}"), ("{%", "%}"), ("{%-", "%}"), ("{%", "-%}")] {
            for pad in [" ", ""] {
                out = out.replace(&format!("{open}{pad}{tag}{pad}{close}"), "");
            }
        }
    }
    out
}

/// Two tools with the same parameters: a string and an integer.
pub fn tools() -> Json {
    let tool = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": "A probe.",
            "parameters": {"type": "object", "properties": {
                KEY_1: {"type": "string", "description": "A string."},
                KEY_2: {"type": "integer", "description": "A number."}},
            "required": [KEY_1]}}})
    };
    json!([tool(FUN_1), tool(FUN_2)])
}

/// A call as the OpenAI shape has it, arguments as an object.
pub fn call(name: &str, arguments: Json, id: &str) -> Json {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// `tojson` as Hugging Face's templates expect it: Python's `json.dumps` (`", "` and `": "`
/// between items, no HTML escaping), with its `indent` and `sort_keys`.
fn tojson(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort: Option<bool> = kwargs.get("sort_keys")?;
    let _: Option<Value> = kwargs.get("ensure_ascii")?;
    let _: Option<Value> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let mut v: Json = serde_json::to_value(&value)
        .map_err(|e| Error::new(ErrorKind::BadSerialization, e.to_string()))?;
    if sort == Some(true) {
        v = sorted(v);
    }
    Ok(Value::from_safe_string(python_json(&v, indent)))
}

fn sorted(v: Json) -> Json {
    match v {
        Json::Object(o) => {
            let mut items: Vec<(String, Json)> = o.into_iter().collect();
            items.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(items.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Json::Array(a) => Json::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// JSON as Python's `json.dumps(v, ensure_ascii=False, indent=indent)` writes it.
pub fn python_json(v: &Json, indent: Option<usize>) -> String {
    let mut out = String::new();
    write_json(v, indent, 0, &mut out);
    out
}

fn write_json(v: &Json, indent: Option<usize>, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * depth));
        }
    };
    let (comma, colon) = match indent {
        Some(_) => (",", ": "),
        None => (", ", ": "),
    };
    match v {
        Json::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(comma);
                }
                newline(out, depth + 1);
                write_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Json::Object(o) if !o.is_empty() => {
            out.push('{');
            for (i, (k, item)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(comma);
                }
                newline(out, depth + 1);
                out.push_str(&Json::String(k.clone()).to_string());
                out.push_str(colon);
                write_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tojson_writes_what_python_writes() {
        let v = json!({"a": [1, {"b": "é<"}], "c": {}});
        assert_eq!(python_json(&v, None), r#"{"a": [1, {"b": "é<"}], "c": {}}"#);
        assert_eq!(
            python_json(&json!({"a": [1]}), Some(2)),
            "{\n  \"a\": [\n    1\n  ]\n}"
        );
    }

    #[test]
    fn a_template_renders_with_python_methods_and_no_endless_loop() {
        let r = Renderer::new(
            "{% for m in messages %}{{ m.content.strip().upper() }}{% endfor %}{{ tools[0] | tojson }}",
        )
        .unwrap();
        let out = r
            .render(&json!([{"role": "user", "content": " hi "}]), false, false)
            .unwrap();
        assert!(out.starts_with("HI{\"type\": \"function\""), "{out}");
        let endless = Renderer::new(
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        )
        .unwrap();
        assert!(endless.render(&json!([]), false, false).is_err());
        assert!(Renderer::new("{% if %}").is_err());
    }
}
