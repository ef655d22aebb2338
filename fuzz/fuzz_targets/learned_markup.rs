//! The template-derived parser: families learned from chat templates (one with a tagged-parameter
//! markup, one with JSON calls in a section, one whose prompt opens thinking) read any text, whole
//! and streamed in pieces; and the analysis itself over any text as a template. Never panics; the
//! gate never loses or reorders text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use switchboard_markup::families::{Cx, FamilyId};
use switchboard_markup::gate::{Piece, StreamGate};
use switchboard_markup::{recover, template};

const OFFERED: [&str; 2] = ["get_weather", "calculator__add"];

const TAGGED: &str = r#"{% for m in messages %}<|turn|>{{ m.role }}
{{ m.content }}{% for tc in m.tool_calls or [] %}<act name="{{ tc.function.name }}">
{% for k, v in tc.function.arguments.items() %}<arg key="{{ k }}">{{ v }}</arg>
{% endfor %}</act>
{% endfor %}<|end|>
{% endfor %}{% if add_generation_prompt %}<|turn|>assistant
<think>
{% endif %}{# </think> #}"#;

const SECTION: &str = r#"{% for m in messages %}[[{{ m.role }}]]{{ m.content }}{% if m.tool_calls %}<<calls>>[{% for tc in m.tool_calls %}{"tool": "{{ tc.function.name }}", "input": {{ tc.function.arguments | tojson }}}{% if not loop.last %}, {% endif %}{% endfor %}]<</calls>>{% endif %}[[end]]{% endfor %}{% if add_generation_prompt %}[[assistant]]{% endif %}"#;

fn families() -> &'static [FamilyId] {
    static F: OnceLock<Vec<FamilyId>> = OnceLock::new();
    F.get_or_init(|| {
        [TAGGED, SECTION]
            .iter()
            .filter_map(|t| template::learn(t).family)
            .collect()
    })
}

fuzz_target!(|text: &str| {
    let offered = |n: &str| OFFERED.contains(&n);
    for &family in families() {
        let cx = Cx {
            family: Some(family),
            ..Cx::names(&offered)
        };
        let _ = recover::recover_with(text, &cx);
        let mut gate = StreamGate::with_names(|n| OFFERED.contains(&n)).for_family(Some(family));
        let chars: Vec<char> = text.chars().collect();
        let mut all = String::new();
        for piece in chars.chunks(1 + text.len() % 7) {
            for p in gate.push(&piece.iter().collect::<String>()) {
                match p {
                    Piece::Text(t) | Piece::Thinking(t) | Piece::Markup(t) => all.push_str(&t),
                }
            }
        }
        all.push_str(&gate.finish());
        assert_eq!(all, text);
    }
    // the analysis over any text as a template (short ones: each is kept)
    if text.len() < 512 && text.len() % 16 == 0 {
        let _ = template::learn_again(text);
    }
});
