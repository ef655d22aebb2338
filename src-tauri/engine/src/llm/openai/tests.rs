use super::*;

/// Every line and every UTF-8 character is split somewhere: the text goes in one byte at a time.
fn feed(lines: &[&str]) -> (Result<ChatReply, LlmError>, Vec<Delta>) {
    let text: String = lines.iter().map(|l| format!("{l}\n\n")).collect();
    parse_chunks(text.as_bytes().chunks(1))
}

#[test]
fn text_split_anywhere_and_fragmented_tool_calls_come_together() {
    let (r, deltas) = feed(&[
        ": keep-alive",
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Ça "}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"content":"va — 👍"}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"calculator__add","arguments":""}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"files__read_file","arguments":"{\"pa"}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": 2,"}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"b\": 40}"}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\": \"é.txt\"}"}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "data: [DONE]",
    ]);
    let r = r.unwrap();
    assert_eq!(r.content, "Ça va — 👍");
    assert_eq!(r.done_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].id.as_deref(), Some("call_a"));
    assert_eq!(r.tool_calls[0].name, "calculator__add");
    assert_eq!(r.tool_calls[0].arguments, json!({"a": 2, "b": 40}));
    assert_eq!(r.tool_calls[1].arguments, json!({"path": "é.txt"}));
    let texts: Vec<&Delta> = deltas
        .iter()
        .filter(|d| matches!(d, Delta::Text(_)))
        .collect();
    assert_eq!(texts.len(), 2);
}

#[test]
fn reasoning_errors_bad_arguments_and_cut_streams() {
    let (r, deltas) = feed(&[
        r#"data: {"choices":[{"delta":{"reasoning_content":"Hmm."}}]}"#,
        r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"t","arguments":"{broken"}}]}}]}"#,
        r#"data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let r = r.unwrap();
    assert_eq!(r.thinking, "Hmm.");
    assert!(matches!(deltas[0], Delta::Thinking(_)));
    assert_eq!(
        r.tool_calls[0].arguments,
        json!("{broken"),
        "kept as text for the loop to report"
    );
    let (r, _) = feed(&[r#"data: {"error":{"message":"model crashed","type":"server_error"}}"#]);
    assert!(matches!(r, Err(LlmError::Stream(m)) if m == "model crashed"));
    let (r, _) = feed(&[r#"data: {"choices":[{"delta":{"content":"half"}}]}"#]);
    assert!(
        matches!(r, Err(LlmError::Protocol(_))),
        "no finish_reason, no [DONE]"
    );
}

#[test]
fn messages_get_ids_that_pair_calls_with_results() {
    let mut a = Message::new(Role::Assistant, "");
    a.tool_calls = vec![
        ToolCall {
            id: None,
            name: "x__a".into(),
            arguments: json!({"q": 1}),
            written: None,
        },
        ToolCall {
            id: Some("own".into()),
            name: "x__b".into(),
            arguments: json!("{\"q\": 2}"),
            written: None,
        },
    ];
    let t1 = Message::new(Role::Tool, "r1");
    let mut t2 = Message::new(Role::Tool, "r2");
    t2.tool_call_id = Some("own".into());
    let wire = messages_to_wire(&[Message::new(Role::User, "hi"), a, t1, t2]);
    assert_eq!(wire[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        wire[1]["tool_calls"][0]["function"]["arguments"],
        "{\"q\":1}"
    );
    assert_eq!(
        wire[1]["tool_calls"][1]["function"]["arguments"],
        "{\"q\": 2}"
    );
    // a model's broken arguments (as a real small model sent them) go back as {}
    let mut broken = Message::new(Role::Assistant, "");
    broken.tool_calls = vec![ToolCall {
        id: Some("b".into()),
        name: "x__c".into(),
        arguments: json!("{\"x\":2"),
        written: None,
    }];
    assert_eq!(
        messages_to_wire(&[broken])[0]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    assert_eq!(wire[1]["content"], Value::Null);
    assert_eq!(
        wire[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "r1"})
    );
    assert_eq!(wire[3]["tool_call_id"], "own");
}

#[test]
fn the_base_url_may_end_in_v1() {
    assert_eq!(
        OpenAiClient::new("http://h:8080/v1/", None).url("/models"),
        "http://h:8080/v1/models"
    );
    assert_eq!(
        OpenAiClient::new("http://h:8080", None).url("/models"),
        "http://h:8080/v1/models"
    );
}

#[test]
fn arguments_encoded_twice_are_decoded_once() {
    // `arguments` is JSON text; some servers send that text as a JSON string holding it
    let (r, _) = feed(&[
        r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"calculator__add","arguments":"\"{\\\"a\\\": 2, \\\"b\\\": 40}\""}}]}}]}"#,
        r#"data: {"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"t","arguments":"\"not an object\""}}]}}]}"#,
        r#"data: {"choices":[{"finish_reason":"tool_calls","delta":{}}]}"#,
        "data: [DONE]",
    ]);
    let r = r.expect("a reply");
    assert_eq!(r.tool_calls[0].arguments, json!({"a": 2, "b": 40}));
    // a string that holds no object stays a string (the repair reports it)
    assert_eq!(r.tool_calls[1].arguments, json!("not an object"));
}
