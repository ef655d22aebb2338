//! Every family's samples (`samples/<family>.txt`: replies from the family's documentation, chat
//! template or parser tests, their source cited in the file), read whole by the recovery and
//! streamed through the gate in pieces of 1 to 3 characters and at random cuts: the calls are
//! found (and named by the family), the text and thinking come out clean, nothing shows while
//! streaming that is not the clean text, and the negatives stay text. One set of samples for
//! both, as the registry is one table for both.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::Value;

use super::sample_file::{self, Sample};
use super::{Cx, FamilyId, ALL};
use crate::gate::{text_of, thinking_of, Piece, StreamGate};
use crate::recover::{recover_with, Recovered};

fn schemas() -> HashMap<String, Value> {
    sample_file::tools()
        .into_iter()
        .map(|(n, _, s)| (n, s))
        .collect()
}

/// The sample read whole, its own family known or not.
fn read(s: &Sample, family: Option<FamilyId>) -> Option<Recovered> {
    let schemas = schemas();
    let offered = |n: &str| schemas.contains_key(n);
    let schema = |n: &str| schemas.get(n).cloned();
    let cx = Cx {
        offered: &offered,
        schema: &schema,
        quoted: None,
        family,
    };
    recover_with(&s.reply, &cx)
}

fn family_of(s: &Sample) -> Option<FamilyId> {
    ALL.iter().map(|f| f.id()).find(|id| *id == s.file)
}

/// Blanks collapsed, for comparing what streamed with what was expected.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What is wrong with the sample read whole, if anything.
fn whole_problem(s: &Sample, own: bool) -> Option<String> {
    let family = own.then(|| family_of(s)).flatten();
    let r = read(s, family);
    let (calls, text, thinking, families) = match &r {
        Some(r) => (
            r.calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect::<Vec<_>>(),
            r.text.clone(),
            r.thinking.clone(),
            r.calls.iter().map(|c| c.family).collect::<Vec<_>>(),
        ),
        None => (vec![], s.reply.clone(), String::new(), vec![]),
    };
    if calls != s.calls {
        return Some(format!("calls {calls:?}, want {:?}", s.calls));
    }
    if text != s.text {
        return Some(format!("text {text:?}, want {:?}", s.text));
    }
    if thinking != s.thinking {
        return Some(format!("thinking {thinking:?}, want {:?}", s.thinking));
    }
    if own {
        if let Some(want) = &s.family {
            if let Some(f) = families.iter().find(|f| *f != want) {
                return Some(format!("read by {f}, want {want}"));
            }
        }
    }
    None
}

/// What is wrong with the sample streamed in `pieces`, if anything: text that is not a start of
/// the clean text showed, thinking that is not a start of the expected thinking streamed, or
/// something was lost.
fn streamed_problem(s: &Sample, pieces: &[String], own: bool) -> Option<String> {
    if s.stream_known_only && !own {
        return None;
    }
    let schemas = schemas();
    let names: Vec<String> = schemas.keys().cloned().collect();
    let family = own.then(|| family_of(s)).flatten();
    let mut gate = StreamGate::with_names(move |n| names.iter().any(|x| x == n)).for_family(family);
    let mut out: Vec<Piece> = Vec::new();
    for p in pieces {
        out.extend(gate.push(p));
    }
    let held = gate.finish();
    let all: String = out
        .iter()
        .map(|p| match p {
            Piece::Text(t) | Piece::Thinking(t) | Piece::Markup(t) => t.as_str(),
        })
        .collect::<String>()
        + &held;
    if all != s.reply {
        return Some(format!("lost or reordered: {all:?}"));
    }
    let shown = squash(&text_of(&out));
    let want = squash(&s.text);
    if !want.starts_with(&shown) {
        return Some(format!(
            "showed {shown:?} while streaming; the clean text is {want:?}"
        ));
    }
    let thought = squash(&thinking_of(&out));
    if !squash(&s.thinking).starts_with(&thought) {
        return Some(format!(
            "streamed thinking {thought:?}; the thinking is {:?}",
            s.thinking
        ));
    }
    None
}

fn in_pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

#[test]
fn every_family_has_samples_with_sources_and_negatives() {
    let samples = sample_file::all();
    for f in ALL {
        let mine: Vec<&Sample> = samples.iter().filter(|s| s.file == f.id()).collect();
        let positives = mine.iter().filter(|s| !s.calls.is_empty()).count();
        let negatives = mine.iter().filter(|s| s.negative).count();
        assert!(
            positives >= 3,
            "{}: {positives} samples with calls (at least 3)",
            f.id()
        );
        assert!(negatives >= 1, "{}: no negative sample", f.id());
        assert!(
            mine.iter().any(|s| s.calls.len() >= 2) || f.id() == "internlm",
            "{}: no sample with parallel calls",
            f.id()
        );
    }
    for s in &samples {
        assert!(
            ALL.iter().any(|f| f.id() == s.file),
            "samples/{}.txt names no registered family",
            s.file
        );
        if let Some(f) = &s.family {
            assert!(
                ALL.iter().any(|x| x.id() == f),
                "{}: family {f} is not registered",
                s.title
            );
        }
    }
    let tools = schemas();
    for s in &samples {
        for (n, _) in &s.calls {
            assert!(
                tools.contains_key(n),
                "{}: {n} is not in tools.json",
                s.title
            );
        }
    }
}

#[test]
fn every_sample_is_read_whole_with_its_family_known_or_not() {
    let mut failures = Vec::new();
    for s in sample_file::all() {
        for own in [true, false] {
            if let Some(p) = whole_problem(&s, own) {
                failures.push(format!(
                    "{}/{} ({}): {p}",
                    s.file,
                    s.title,
                    if own {
                        "family known"
                    } else {
                        "family unknown"
                    }
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_sample_streams_clean_in_pieces_of_one_to_three_characters() {
    let mut failures = Vec::new();
    for s in sample_file::all() {
        for n in [1, 2, 3, 1000] {
            for own in [true, false] {
                if let Some(p) = streamed_problem(&s, &in_pieces(&s.reply, n), own) {
                    failures.push(format!("{}/{} (pieces of {n}): {p}", s.file, s.title));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether some family's markup could start in `text`.
fn has_marker(text: &str) -> bool {
    ALL.iter()
        .flat_map(|f| f.markers().iter().chain(f.line_markers()))
        .copied()
        .chain(super::thinking_pairs().iter().map(|(o, _)| *o))
        .chain(super::strip_tokens().iter().copied())
        .any(|m| text.contains(m))
}

#[test]
fn a_negative_without_markup_flows_while_it_streams() {
    let schemas = schemas();
    for s in sample_file::all().into_iter().filter(|s| s.negative) {
        if has_marker(&s.reply) {
            continue;
        }
        let names: Vec<String> = schemas.keys().cloned().collect();
        let mut gate = StreamGate::with_names(move |n| names.iter().any(|x| x == n));
        for p in in_pieces(&s.reply, 2) {
            gate.push(&p);
        }
        let held = gate.finish();
        assert!(
            held.len() <= 3,
            "{}/{}: {held:?} was held to the end",
            s.file,
            s.title
        );
    }
}

fn split(s: &str, cuts: &[usize]) -> Vec<String> {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    if bounds.is_empty() {
        return vec![];
    }
    let mut at: Vec<usize> = cuts.iter().map(|c| bounds[c % bounds.len()]).collect();
    at.push(0);
    at.push(s.len());
    at.sort();
    at.dedup();
    at.windows(2).map(|w| s[w[0]..w[1]].to_string()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_sample_streams_clean_cut_anywhere(
        which in 0usize..1000,
        cuts in prop::collection::vec(0usize..2000, 0..40),
    ) {
        let samples = sample_file::all();
        let s = &samples[which % samples.len()];
        let pieces = split(&s.reply, &cuts);
        prop_assert_eq!(streamed_problem(s, &pieces, which % 2 == 0), None, "{}/{}", s.file, s.title);
    }
}

/// Text made of every family's markers, thinking openers, end tokens and bracket starts, in a
/// fixed pseudo-random order, none of them closed as it should be: `bytes` long.
fn soup(bytes: usize) -> String {
    let mut parts: Vec<String> = ALL
        .iter()
        .flat_map(|f| f.markers().iter().chain(f.line_markers()))
        .chain(super::thinking_pairs().iter().map(|(o, _)| o))
        .chain(super::strip_tokens())
        .map(|m| m.to_string())
        .collect();
    for p in [
        "{",
        "[",
        "(",
        "\"",
        "'",
        "```",
        "```json\n",
        "```tool_code\n",
        "[get_weather(",
        "get_weather(city='",
        "<function=get_weather>",
        "<parameter=city>",
        ">>>get_weather\n",
        "\nAction: get_weather\n",
        "Action Input: ",
        "<|channel|>analysis<|message|>",
        "{\"name\": \"get_weather\", \"arguments\": {",
        "{\"action\": \"search\", ",
        "\n",
        " x ",
        "<arg_key>",
        "<invoke name=\"get_weather\">",
        "`",
        "> ",
        "For example, ",
    ] {
        parts.push(p.to_string());
    }
    let mut out = String::with_capacity(bytes + 64);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    while out.len() < bytes {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.push_str(&parts[(seed % parts.len() as u64) as usize]);
    }
    out
}

/// The shortest of three runs of `f`.
fn fastest(f: impl Fn()) -> std::time::Duration {
    (0..3)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .expect("three runs")
}

#[test]
fn a_megabyte_of_unbalanced_markers_costs_linear_time() {
    let schemas = schemas();
    let offered = |n: &str| schemas.contains_key(n);
    let read = |text: &str| {
        let cx = Cx::names(&offered);
        let _ = recover_with(text, &cx);
        let cx = Cx {
            family: Some("harmony"),
            ..Cx::names(&offered)
        };
        let _ = recover_with(text, &cx);
    };
    let stream = |text: &str| {
        let names: Vec<String> = schemas.keys().cloned().collect();
        let mut gate = StreamGate::with_names(move |n| names.iter().any(|x| x == n));
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(64) {
            gate.push(&piece.iter().collect::<String>());
        }
        let _ = gate.finish();
    };
    // the gate also gets text that never becomes a call: prefixes of markers, lists and objects
    // that never close, names nobody offered (what holds text back the longest)
    let unfinished = |bytes: usize| {
        let parts = [
            "<tool_ca",
            "[TOOL_CA",
            "```json\n{\"na",
            "[nope(x='",
            "{\"action\": \"nope\", ",
            "<|channel|>commentary",
            ">>",
            "\nActio",
            "func",
            "`x",
            "\n> ",
            "<think",
            " word ",
        ];
        let mut out = String::new();
        let mut i = 0;
        while out.len() < bytes {
            out.push_str(parts[i % parts.len()]);
            i = (i * 7 + 3) % 1009;
        }
        out
    };
    // linear: 8 times the work; the square of the length would be 64 times
    for (what, run, small, big) in [
        (
            "read whole",
            &read as &dyn Fn(&str),
            soup(128 * 1024),
            soup(1024 * 1024),
        ),
        ("streamed", &stream, soup(128 * 1024), soup(1024 * 1024)),
        (
            "streamed, never a call",
            &stream,
            unfinished(128 * 1024),
            unfinished(1024 * 1024),
        ),
    ] {
        let t_small = fastest(|| run(&small));
        let t_big = fastest(|| run(&big));
        eprintln!("{what}: {t_small:?} for 128 KB, {t_big:?} for 1 MB");
        assert!(
            t_big <= t_small * 24 + std::time::Duration::from_millis(50),
            "{what}: {t_small:?} for 128 KB, {t_big:?} for 1 MB"
        );
    }
}
