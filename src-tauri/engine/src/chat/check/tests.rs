use super::*;
use serde_json::json;

fn expect(id: &str) -> Expect {
    probes::all()
        .into_iter()
        .find(|p| p.id == id)
        .expect("a probe")
        .expect
}

fn native(calls: &[(&str, Value)]) -> Vec<crate::llm::ToolCall> {
    calls
        .iter()
        .map(|(n, a)| crate::llm::ToolCall {
            id: None,
            name: n.to_string(),
            arguments: a.clone(),
            written: None,
        })
        .collect()
}

fn classified(text: &str, calls: &[(&str, Value)], probe: &str) -> Outcome {
    classify(text, &native(calls), &probes::tools(), None, &expect(probe))
}

#[test]
fn native_calls_with_the_right_arguments() {
    assert_eq!(
        classified(
            "",
            &[("calculator__add", json!({"a": 17, "b": 25}))],
            "one_call"
        ),
        Outcome::Native
    );
    // a name written without its server, numbers as strings: the loop resolves and repairs them
    assert_eq!(
        classified(
            "",
            &[("add", json!({"a": "12", "b": "30"}))],
            "number_as_text"
        ),
        Outcome::Native
    );
    assert_eq!(
        classified(
            "",
            &[
                ("calculator__add", json!({"a": 100, "b": 23})),
                ("calculator__multiply", json!({"a": 6, "b": 7}))
            ],
            "two_calls"
        ),
        Outcome::Native
    );
}

#[test]
fn calls_written_in_text_say_their_family() {
    let hermes = "<tool_call>\n{\"name\": \"calculator__add\", \"arguments\": {\"a\": 17, \"b\": 25}}\n</tool_call>";
    assert_eq!(
        classified(hermes, &[], "one_call"),
        Outcome::Recovered {
            family: "hermes".into()
        }
    );
    let pythonic = "[calendar__create_event(title='Team lunch', when={'date': '2025-03-14', 'time': '12:30'}, attendees=['Ada', 'Grace'])]";
    assert_eq!(
        classified(pythonic, &[], "nested"),
        Outcome::Recovered {
            family: "pythonic".into()
        }
    );
}

#[test]
fn wrong_missing_and_false_calls() {
    assert!(matches!(
        classified(
            "",
            &[("calculator__add", json!({"a": 17, "b": 26}))],
            "one_call"
        ),
        Outcome::WrongArguments { .. }
    ));
    match classified(
        "",
        &[("calculator__multiply", json!({"a": 6, "b": 7}))],
        "two_calls",
    ) {
        Outcome::WrongArguments { detail } => assert!(detail.contains("1 of the 2"), "{detail}"),
        other => panic!("{other:?}"),
    }
    match classified(
        "",
        &[("calculator__add", json!({"a": "many", "b": 25}))],
        "one_call",
    ) {
        Outcome::WrongArguments { detail } => assert!(detail.contains("/a"), "{detail}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        classified("", &[("weather__get", json!({}))], "one_call"),
        Outcome::WrongArguments { .. }
    ));
    assert_eq!(classified("It is 42.", &[], "one_call"), Outcome::NoCall);
    assert_eq!(classified("Paris", &[], "no_tool"), Outcome::NoCall);
    assert_eq!(
        classified(
            "",
            &[("calculator__add", json!({"a": 1, "b": 1}))],
            "no_tool"
        ),
        Outcome::FalseCall {
            name: "calculator__add".into()
        }
    );
}

#[test]
fn a_report_reads_back_as_it_was_kept() {
    let r = CheckReport {
        model: "m".into(),
        format: Some("hermes".into()),
        results: vec![ProbeResult {
            probe: "one_call".into(),
            title: "One call".into(),
            mode: Mode::Text,
            outcome: Outcome::Recovered {
                family: "hermes".into(),
            },
            passed: true,
            ms: 12,
        }],
        proposal: Proposal::Text,
        cancelled: false,
        checked_at: 1,
    };
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"kind\":\"recovered\""), "{json}");
    assert_eq!(serde_json::from_str::<CheckReport>(&json).unwrap(), r);
    assert!(r.works());
}
