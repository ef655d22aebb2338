use super::*;

#[test]
fn the_context_comes_from_the_modelfile_else_the_default_capped_by_the_model() {
    let v = json!({"capabilities": ["completion", "tools"],
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
            "parameters": "stop \"<|eot_id|>\"\nnum_ctx 8192"});
    let d = show_details(&v);
    assert_eq!(d.capabilities, vec!["completion", "tools"]);
    assert_eq!(
        (d.context_length, d.default_context),
        (Some(131072), Some(8192))
    );
    let d = show_details(&json!({"model_info": {"gemma3.context_length": 2048}}));
    assert_eq!(d.default_context, Some(2048), "a small model's own limit");
    let d = show_details(&json!({"model_info": {"qwen3.context_length": 40960}}));
    assert_eq!(d.default_context, Some(OLLAMA_DEFAULT_CONTEXT));
    assert_eq!(show_details(&json!({})), ModelDetails::default());
}

#[test]
fn pull_lines_are_progress_or_errors() {
    let p = parse_pull_line(br#"{"status":"pulling 6a0746a1ec1a","digest":"sha256:6a07","total":2142590208,"completed":241970}"#).unwrap();
    assert_eq!((p.total, p.completed), (Some(2142590208), Some(241970)));
    assert_eq!(p.digest.as_deref(), Some("sha256:6a07"));
    let p = parse_pull_line(br#"{"status":"pulling manifest"}"#).unwrap();
    assert_eq!((p.status.as_str(), p.total), ("pulling manifest", None));
    assert!(
        matches!(parse_pull_line(br#"{"error":"max retries exceeded"}"#), Err(LlmError::Stream(m)) if m == "max retries exceeded")
    );
    assert!(matches!(
        parse_pull_line(b"not json"),
        Err(LlmError::Protocol(_))
    ));
}

#[test]
fn base_url_prefers_settings_then_ollama_host() {
    assert_eq!(resolve_base_url(None, None), DEFAULT_URL);
    assert_eq!(
        resolve_base_url(Some("http://x:1/"), Some("y")),
        "http://x:1"
    );
    assert_eq!(
        resolve_base_url(Some("  "), Some("0.0.0.0")),
        "http://127.0.0.1:11434"
    );
    assert_eq!(
        resolve_base_url(None, Some("example.lan:8080")),
        "http://example.lan:8080"
    );
    assert_eq!(
        resolve_base_url(None, Some("https://ollama.example")),
        "https://ollama.example:11434"
    );
    assert_eq!(
        resolve_base_url(None, Some(":9999")),
        "http://127.0.0.1:9999"
    );
}

#[test]
fn tool_messages_carry_tool_name_and_call_id() {
    let mut m = Message::new(Role::Tool, "42");
    m.tool_name = Some("calculator__add".into());
    m.tool_call_id = Some("call_1".into());
    let w = message_to_wire(&m);
    assert_eq!(
        w,
        json!({"role":"tool","content":"42","tool_name":"calculator__add","tool_call_id":"call_1"})
    );
}

#[test]
fn assistant_tool_calls_go_back_as_objects() {
    let mut m = Message::new(Role::Assistant, "");
    m.tool_calls = vec![
        ToolCall {
            id: Some("c1".into()),
            name: "a".into(),
            arguments: json!({"x": 1}),
            written: None,
        },
        ToolCall {
            id: None,
            name: "b".into(),
            arguments: json!("{\"y\":2}"),
            written: None,
        },
        ToolCall {
            id: None,
            name: "c".into(),
            arguments: json!("{broken"),
            written: None,
        },
    ];
    let w = message_to_wire(&m);
    assert_eq!(
        w["tool_calls"][0],
        json!({"id":"c1","function":{"name":"a","arguments":{"x":1}}})
    );
    assert_eq!(w["tool_calls"][1]["function"]["arguments"], json!({"y":2}));
    assert_eq!(w["tool_calls"][2]["function"]["arguments"], json!({}));
}
