//! The analysis on small templates written here (the test over every template llama.cpp ships
//! is `tests/templates.rs`).

use super::*;
use crate::families::{by_id, Cx};
use crate::recover::recover_with;
use serde_json::json;

const HERMES_LIKE: &str = r#"{%- for m in messages -%}<|im_start|>{{ m.role }}
{% if m.content %}{{ m.content.split('</reason>')[-1] }}{% endif %}{% for tc in m.tool_calls or [] %}<my_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</my_call>
{% endfor %}<|im_end|>
{% endfor -%}{% if add_generation_prompt %}<|im_start|>assistant
<reason>
{% endif %}"#;

#[test]
fn a_family_nobody_named_is_learned_from_its_template() {
    let l = learn(HERMES_LIKE);
    assert_eq!(l.not_learned, None, "{l:?}");
    let id = l.family.expect("a family");
    assert!(l.calls.as_deref().unwrap().contains("<my_call>"), "{l:?}");
    assert_eq!(l.thinking.as_deref(), Some("<reason>…</reason>"), "{l:?}");
    assert!(l.opens_thinking);
    // a reply: thinking opened by the prompt, a call in the learned markup
    let reply = "I should look.</reason>\nLet me check.\n<my_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</my_call><|im_end|>";
    let offered = |n: &str| n == "get_weather";
    let cx = Cx {
        family: Some(id),
        ..Cx::names(&offered)
    };
    let r = recover_with(reply, &cx).unwrap();
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(r.calls[0].family, id);
    assert_eq!(r.text, "Let me check.");
    assert_eq!(r.thinking, "I should look.");
    // the same analysis again is the one kept
    assert!(Arc::ptr_eq(&learn(HERMES_LIKE), &learn(HERMES_LIKE)));
    assert!(by_id(id).is_some());
}

#[test]
fn a_template_that_cannot_be_analysed_says_why() {
    let l = learn("{% if %}");
    assert_eq!(l.family, None);
    assert!(
        l.not_learned
            .as_deref()
            .unwrap()
            .contains("does not compile"),
        "{l:?}"
    );
    let l = learn("{{ messages[0].content }}");
    assert_eq!(l.family, None);
    assert!(l.not_learned.is_some());
}

#[test]
fn an_ollama_go_template_is_not_rendered_and_says_so() {
    let l = learn("{{- range $i, $_ := .Messages }}{{ .Content }}{{ range .ToolCalls }}<tool_call>{{ end }}{{ end }}");
    assert_eq!(l.family, None);
    assert!(
        l.not_learned.as_deref().unwrap().contains("Go template"),
        "{l:?}"
    );
}
