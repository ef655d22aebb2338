//! The `calculator` built-in server.

use serde_json::{json, Map, Value};

use super::{BuiltinServer, ToolResult};

pub struct Calculator;

fn two(desc: &str, a: &str, b: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            a: {"type": "number", "description": format!("{desc}: first operand")},
            b: {"type": "number", "description": format!("{desc}: second operand")},
        },
        "required": [a, b],
        "additionalProperties": false,
    })
}

fn num(args: &Map<String, Value>, key: &str) -> Result<f64, ToolResult> {
    match args.get(key) {
        Some(Value::Number(n)) => n
            .as_f64()
            .ok_or_else(|| ToolResult::error(format!("'{key}' is not a usable number"))),
        // models often send numbers as strings
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| ToolResult::error(format!("'{key}' must be a number, got \"{s}\""))),
        Some(other) => Err(ToolResult::error(format!(
            "'{key}' must be a number, got {other}"
        ))),
        None => Err(ToolResult::error(format!(
            "missing number argument '{key}'"
        ))),
    }
}

/// 42.0 → "42", 0.1+0.2 → "0.30000000000000004" (exact f64, no rounding hidden from the model).
pub fn format_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

impl BuiltinServer for Calculator {
    fn name(&self) -> &'static str {
        "calculator"
    }

    fn tools(&self) -> Vec<Value> {
        let ro = json!({"readOnlyHint": true, "openWorldHint": false});
        vec![
            json!({"name": "add", "description": "Add two numbers: a + b.", "inputSchema": two("add", "a", "b"), "annotations": ro}),
            json!({"name": "subtract", "description": "Subtract: a - b.", "inputSchema": two("subtract", "a", "b"), "annotations": ro}),
            json!({"name": "multiply", "description": "Multiply: a * b.", "inputSchema": two("multiply", "a", "b"), "annotations": ro}),
            json!({"name": "divide", "description": "Divide: a / b. b must not be zero.", "inputSchema": two("divide", "a", "b"), "annotations": ro}),
            json!({"name": "power", "description": "Raise base to exponent: base ^ exponent.", "inputSchema": two("power", "base", "exponent"), "annotations": ro}),
            json!({"name": "square_root", "description": "Square root of x (x must not be negative).", "inputSchema": {
                "type": "object", "properties": {"x": {"type": "number", "description": "the number"}},
                "required": ["x"], "additionalProperties": false}, "annotations": ro}),
        ]
    }

    fn call(&self, tool: &str, args: &Map<String, Value>) -> ToolResult {
        let r = (|| -> Result<f64, ToolResult> {
            Ok(match tool {
                "add" => num(args, "a")? + num(args, "b")?,
                "subtract" => num(args, "a")? - num(args, "b")?,
                "multiply" => num(args, "a")? * num(args, "b")?,
                "divide" => {
                    let (a, b) = (num(args, "a")?, num(args, "b")?);
                    if b == 0.0 {
                        return Err(ToolResult::error("Cannot divide by zero."));
                    }
                    a / b
                }
                "power" => num(args, "base")?.powf(num(args, "exponent")?),
                "square_root" => {
                    let x = num(args, "x")?;
                    if x < 0.0 {
                        return Err(ToolResult::error(format!(
                            "Cannot take the square root of a negative number ({}).",
                            format_number(x)
                        )));
                    }
                    x.sqrt()
                }
                other => return Err(ToolResult::error(format!("Unknown tool: {other}"))),
            })
        })();
        match r {
            Ok(x) if !x.is_finite() => {
                ToolResult::error(format!("The result is not a finite number ({x})."))
            }
            Ok(x) => ToolResult::ok(format_number(x)),
            Err(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, args: Value) -> (String, bool) {
        let r = Calculator.call(tool, args.as_object().unwrap());
        (r.text, r.is_error)
    }

    #[test]
    fn arithmetic() {
        assert_eq!(call("add", json!({"a": 2, "b": 40})), ("42".into(), false));
        assert_eq!(
            call("subtract", json!({"a": 2, "b": 40})),
            ("-38".into(), false)
        );
        assert_eq!(
            call("multiply", json!({"a": 6, "b": "7"})),
            ("42".into(), false)
        );
        assert_eq!(
            call("divide", json!({"a": 1, "b": 4})),
            ("0.25".into(), false)
        );
        assert_eq!(
            call("power", json!({"base": 2, "exponent": 10})),
            ("1024".into(), false)
        );
        assert_eq!(call("square_root", json!({"x": 16})), ("4".into(), false));
    }

    #[test]
    fn errors_are_is_error_results_with_clear_messages() {
        let (t, e) = call("divide", json!({"a": 1, "b": 0}));
        assert!(e && t.contains("divide by zero"), "{t}");
        let (t, e) = call("square_root", json!({"x": -4}));
        assert!(e && t.contains("negative number (-4)"), "{t}");
        let (t, e) = call("add", json!({"a": 1}));
        assert!(e && t.contains("missing number argument 'b'"), "{t}");
        let (t, e) = call("add", json!({"a": "x", "b": 1}));
        assert!(e && t.contains("must be a number"), "{t}");
        let (_, e) = call("power", json!({"base": 10, "exponent": 400}));
        assert!(e);
    }
}
