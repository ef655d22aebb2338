//! Recovering tool calls from a reply's text, every family of the registry tried: a 2 KB reply
//! with one Hermes call, one with a bare JSON call, one with a Qwen3-Coder XML call, one of plain
//! prose; and all a reply costs the loop for it, the streaming hold-back fed 4 characters at a
//! time as a model streams, then the recovery; a 2 KB reply in a markup learned from a chat
//! template; and the analysis of a template (a small one, and real ones llama.cpp ships when
//! `.tools/templates/` is installed: `scripts/install-deps.sh --test`). The targets: under 50 µs
//! per 2 KB reply, under 50 ms per template.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use switchboard_markup::families::Cx;
use switchboard_markup::gate::{text_of, StreamGate};
use switchboard_markup::recover::{recover, recover_with};
use switchboard_markup::resolve::{names_a_tool, OfferedName};
use switchboard_markup::template;

/// A template of a family no file names (its markup learned from it).
const TEMPLATE: &str = r#"{%- for m in messages -%}<|turn|>{{ m.role }}
{% if m.content %}{{ m.content }}{% endif %}{% for tc in m.tool_calls or [] %}<act name="{{ tc.function.name }}">
{% for k, v in tc.function.arguments.items() %}<arg key="{{ k }}">{{ v }}</arg>
{% endfor %}</act>
{% endfor %}<|end|>
{% endfor -%}{% if add_generation_prompt %}<|turn|>assistant
{% endif %}"#;

const OFFERED: [&str; 3] = ["calculator__add", "files__read_file", "time__now"];

fn prose(bytes: usize) -> String {
    let sentence = "The quick brown fox jumps over the lazy dog, and then it (briefly) considers \
                    the [meaning] of `life`: 42 < 43. ";
    let mut out = String::new();
    while out.len() < bytes {
        out.push_str(sentence);
        if out.len() % 500 < sentence.len() {
            out.push_str("\n\n");
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    // the check the loop makes (with the recovery on): a name of an offered tool, resolved
    let offered: Vec<OfferedName> = OFFERED
        .iter()
        .map(|e| OfferedName::from_exposed(e))
        .collect();
    let is_offered = |n: &str| names_a_tool(n, &offered);
    let call = r#"{"name": "calculator__add", "arguments": {"a": 2, "b": 40}}"#;
    let hermes = format!("{}\n<tool_call>\n{call}\n</tool_call>", prose(1900));
    let bare = format!("{}\n{call}\n{}", prose(1000), prose(900));
    let plain = prose(2000);
    let xml = format!(
        "{}\n<tool_call>\n<function=calculator__add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n40\n</parameter>\n</function>\n</tool_call>",
        prose(1900)
    );
    for (name, text) in [
        ("hermes_2kb", &hermes),
        ("bare_2kb", &bare),
        ("qwen3_coder_2kb", &xml),
        ("prose_2kb", &plain),
    ] {
        assert!(text.len() >= 2000);
        c.bench_function(name, |b| b.iter(|| recover(black_box(text), &is_offered)));
    }
    // a family no file names, its markup learned from its template
    let family = template::learn(TEMPLATE).family.expect("learned");
    let learned = format!(
        "{}\n<act name=\"calculator__add\">\n<arg key=\"a\">2</arg>\n<arg key=\"b\">40</arg>\n</act>",
        prose(1900)
    );
    let cx = Cx {
        family: Some(family),
        ..Cx::names(&is_offered)
    };
    assert_eq!(recover_with(&learned, &cx).expect("a call").calls.len(), 1);
    c.bench_function("learned_2kb", |b| {
        b.iter(|| recover_with(black_box(&learned), &cx))
    });
    c.bench_function("template_analysis", |b| {
        b.iter(|| template::learn_again(black_box(TEMPLATE)))
    });
    // real templates: Qwen 3.5 (XML parameters, thinking opened in the prompt), gpt-oss (the
    // largest, 16 KB: Harmony's channels)
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.tools/templates/models/templates");
    for (name, file) in [
        ("template_analysis_qwen3_5", "Qwen3.5-4B.jinja"),
        ("template_analysis_gpt_oss", "openai-gpt-oss-120b.jinja"),
    ] {
        match std::fs::read_to_string(real.join(file)) {
            Ok(src) => {
                c.bench_function(name, |b| b.iter(|| template::learn_again(black_box(&src))));
            }
            Err(_) => eprintln!("{name}: {file} not installed (scripts/install-deps.sh --test)"),
        }
    }
    // as the loop does it: the text in pieces through the hold-back, then the recovery
    let pieces: Vec<String> = hermes
        .chars()
        .collect::<Vec<_>>()
        .chunks(4)
        .map(|c| c.iter().collect())
        .collect();
    c.bench_function("streamed_hermes_2kb", |b| {
        b.iter(|| {
            // as the loop does: its own copy of the names for each reply
            let names = offered.clone();
            let mut gate = StreamGate::with_names(move |n| names_a_tool(n, &names));
            let mut shown = 0;
            for p in &pieces {
                shown += text_of(&gate.push(black_box(p))).len();
            }
            shown += gate.finish().len();
            (shown, recover(black_box(&hermes), &is_offered))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
