use super::*;
use serde_json::json;

fn two_numbers() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"]
    })
}

fn ok(args: Value, schema: &Value) -> Repaired {
    repair(&args, schema).unwrap_or_else(|p| panic!("{args}: {p:?}"))
}

fn problems(args: Value, schema: &Value) -> Vec<FieldProblem> {
    repair(&args, schema).expect_err("should not be valid")
}

#[test]
fn valid_arguments_pass_untouched() {
    let r = ok(json!({"a": 2, "b": 40.5}), &two_numbers());
    assert_eq!(Value::Object(r.arguments), json!({"a": 2, "b": 40.5}));
    assert!(r.repairs.is_empty());
}

#[test]
fn strings_become_numbers_and_booleans_only_when_exact() {
    let r = ok(json!({"a": "2", "b": " 2.5 "}), &two_numbers());
    assert_eq!(Value::Object(r.arguments), json!({"a": 2, "b": 2.5}));
    assert_eq!(r.repairs[0], "\"a\": the string \"2\" became the number 2");
    assert_eq!(
        r.repairs[1],
        "\"b\": the string \" 2.5 \" became the number 2.5"
    );
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer"}, "flag": {"type": "boolean"}, "m": {"type": "integer"}}});
    let r = ok(json!({"n": "2.0", "flag": "True", "m": "-7"}), &schema);
    assert_eq!(
        Value::Object(r.arguments),
        json!({"n": 2, "flag": true, "m": -7})
    );
    // not exact: left as sent, and reported
    for bad in ["2.5", "two", "", "+2", ".5", "1e400", "0x10"] {
        let p = problems(json!({"n": bad}), &schema);
        assert_eq!(p.len(), 1, "{bad}");
        assert_eq!(p[0].field, "/n");
        assert_eq!(p[0].wants, "an integer");
    }
    let p = problems(json!({"flag": "yes"}), &schema);
    assert_eq!(
        (p[0].wants.as_str(), p[0].got.as_str()),
        ("true or false", "the string \"yes\"")
    );
}

#[test]
fn numbers_become_strings_where_strings_are_wanted() {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let r = ok(json!({"path": 42}), &schema);
    assert_eq!(Value::Object(r.arguments), json!({"path": "42"}));
    assert_eq!(
        r.repairs,
        vec!["\"path\": the number 42 became the string \"42\""]
    );
}

#[test]
fn arguments_as_a_string_or_null() {
    let r = ok(json!("{\"a\": 1, \"b\": '2',}"), &two_numbers());
    assert_eq!(Value::Object(r.arguments), json!({"a": 1, "b": 2}));
    assert_eq!(r.repairs.len(), 2, "{:?}", r.repairs);
    let schema = json!({"type": "object", "properties": {}});
    assert_eq!(ok(Value::Null, &schema).arguments, Map::new());
    assert_eq!(ok(json!(""), &schema).arguments, Map::new());
    let p = problems(json!("add two and forty"), &schema);
    assert_eq!(
        (p[0].field.as_str(), p[0].wants.as_str()),
        ("", "a JSON object of arguments")
    );
    assert_eq!(problems(json!([1, 2]), &schema)[0].got, "the array [1,2]");
}

#[test]
fn unknown_arguments_are_dropped_only_when_the_schema_forbids_them() {
    let mut schema = two_numbers();
    let r = ok(json!({"a": 1, "b": 2, "c": 3}), &schema);
    assert_eq!(r.arguments.len(), 3, "allowed by default");
    schema["additionalProperties"] = json!(false);
    let r = ok(json!({"c": 3, "a": 1, "b": 2}), &schema);
    assert_eq!(Value::Object(r.arguments.clone()), json!({"a": 1, "b": 2}));
    assert_eq!(
        r.arguments.keys().collect::<Vec<_>>(),
        ["a", "b"],
        "order kept"
    );
    assert_eq!(
        r.repairs,
        vec!["\"c\": dropped (the tool takes no such argument)"]
    );
}

#[test]
fn nested_objects_arrays_refs_and_optionals() {
    let schema = json!({
        "type": "object",
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {
            "points": {"type": "array", "items": {"$ref": "#/$defs/point"}},
            "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "additionalProperties": false},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }
    });
    let r = ok(
        json!({"points": [{"x": "1"}, {"x": 2}], "opts": {"deep": "false", "junk": 1},
               "limit": "10", "tags": "[\"a\", 2]", "unit": "Celsius"}),
        &schema,
    );
    assert_eq!(
        Value::Object(r.arguments),
        json!({"points": [{"x": 1}, {"x": 2}], "opts": {"deep": false}, "limit": 10,
               "tags": ["a", "2"], "unit": "celsius"})
    );
    assert!(
        r.repairs
            .contains(&"\"points/0/x\": the string \"1\" became the number 1".to_string()),
        "{:?}",
        r.repairs
    );
    assert!(r
        .repairs
        .contains(&"\"opts/junk\": dropped (the tool takes no such argument)".to_string()));
    assert!(r
        .repairs
        .contains(&"\"tags\": a JSON string was read as an array".to_string()));
    assert!(r
        .repairs
        .contains(&"\"tags/1\": the number 2 became the string \"2\"".to_string()));
    assert!(r
        .repairs
        .iter()
        .any(|s| s.starts_with("\"unit\": \"Celsius\" became \"celsius\"")));
    let r = ok(json!({"limit": null}), &schema);
    assert_eq!(r.arguments["limit"], Value::Null);
    let p = problems(json!({"points": [{}], "unit": "kelvin"}), &schema);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p.contains(&FieldProblem {
        field: "/points/0/x".into(),
        wants: "a value (it is required)".into(),
        got: "nothing".into()
    }));
    assert!(p.contains(&FieldProblem {
        field: "/unit".into(),
        wants: "one of \"celsius\", \"fahrenheit\"".into(),
        got: "the string \"kelvin\"".into()
    }));
}

#[test]
fn missing_required_values_are_never_invented() {
    let p = problems(json!({"a": "2"}), &two_numbers());
    assert_eq!(
        p,
        vec![FieldProblem {
            field: "/b".into(),
            wants: "a value (it is required)".into(),
            got: "nothing".into()
        }]
    );
    let text = problems_for_model("calculator__add", &p);
    assert_eq!(
        text,
        "The arguments for calculator__add are not valid:\n- \"b\": wants a value (it is required); got nothing\n\
         Call calculator__add again with these fixed. If you do not know a value, ask the user; do not make one up."
    );
}

#[test]
fn other_constraints_are_said_in_words() {
    let schema = json!({"type": "object", "properties": {
        "q": {"type": "string", "minLength": 3}, "n": {"type": "integer", "maximum": 10}}});
    let p = problems(json!({"q": "ab", "n": 11}), &schema);
    assert!(
        p.iter()
            .any(|p| p.field == "/q" && p.wants == "at least 3 characters"),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|p| p.field == "/n" && p.wants == "a number of at most 10"),
        "{p:?}"
    );
    let long = "x".repeat(200);
    let p = problems(json!({"n": long}), &schema);
    assert!(p[0].got.ends_with('…') && p[0].got.chars().count() < 80);
}

#[test]
fn a_broken_schema_lets_the_arguments_through() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": "not a list"});
    let r = ok(json!({"a": "1"}), &schema);
    assert_eq!(Value::Object(r.arguments), json!({"a": 1}));
    assert_eq!(ok(json!({"x": 1}), &json!(true)).arguments.len(), 1);
}
