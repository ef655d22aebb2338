//! Which tools fit the conversation: BM25 lexical relevance of each tool (its name, description
//! and argument names) to the conversation's recent text, so a small model can be offered the few
//! tools that matter instead of all of them.

use std::collections::{HashMap, HashSet};

use crate::llm::ToolSpec;

/// BM25's usual constants: term-frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Words too common to tell tools apart.
const STOP: [&str; 40] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for", "from",
    "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "please", "the", "this",
    "that", "to", "what", "whats", "with", "would", "you", "your", "we", "our", "was", "will",
];
/// Arithmetic written with symbols, and the words tools use for it.
const OPERATORS: [(char, &str); 8] = [
    (
        '+',
        "add plus sum number calculator calculate math arithmetic",
    ),
    (
        '-',
        "subtract minus difference number calculator calculate math arithmetic",
    ),
    (
        '*',
        "multiply times product number calculator calculate math arithmetic",
    ),
    (
        '×',
        "multiply times product number calculator calculate math arithmetic",
    ),
    (
        '/',
        "divide quotient number calculator calculate math arithmetic",
    ),
    (
        '÷',
        "divide quotient number calculator calculate math arithmetic",
    ),
    (
        '^',
        "power exponent number calculator calculate math arithmetic",
    ),
    ('%', "percent number calculator calculate math arithmetic"),
];

/// The indices of the `limit` tools most relevant to `query`, best first. Tools named in `keep`
/// (e.g. those already used in this conversation) are always in, even past `limit`; the rest is
/// filled with the best others. Equal scores (no match at all included) keep the tools' order.
pub fn rank_tools(
    query: &str,
    tools: &[ToolSpec],
    keep: &HashSet<String>,
    limit: usize,
) -> Vec<usize> {
    let scores = bm25(
        &query_terms(query),
        &tools.iter().map(document).collect::<Vec<_>>(),
    );
    let mut order: Vec<usize> = (0..tools.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let kept = order
        .iter()
        .filter(|&&i| keep.contains(&tools[i].name))
        .count();
    let mut room = limit.saturating_sub(kept);
    order
        .into_iter()
        .filter(|&i| {
            if keep.contains(&tools[i].name) {
                true
            } else if room > 0 {
                room -= 1;
                true
            } else {
                false
            }
        })
        .collect()
}

/// A tool's words: its name twice (names say most), its description, its arguments' names and
/// descriptions.
fn document(tool: &ToolSpec) -> Vec<String> {
    let mut text = format!("{0} {0} {1}", tool.name, tool.description);
    if let Some(props) = tool
        .parameters
        .get("properties")
        .and_then(|p| p.as_object())
    {
        for (name, schema) in props {
            text.push(' ');
            text.push_str(name);
            if let Some(d) = schema.get("description").and_then(|d| d.as_str()) {
                text.push(' ');
                text.push_str(d);
            }
        }
    }
    terms(&text)
}

/// The query's words, plus words for arithmetic written with symbols (`2+40` → add, plus…) and
/// `file` for a file name (`notes.txt`).
fn query_terms(query: &str) -> Vec<String> {
    let mut out = terms(query);
    let chars: Vec<char> = query.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let Some((_, words)) = OPERATORS.iter().find(|(op, _)| *op == c) else {
            continue;
        };
        let before = chars[..i].iter().rev().find(|c| !c.is_whitespace());
        let after = chars[i + 1..].iter().find(|c| !c.is_whitespace());
        let digit = |c: Option<&char>| c.is_some_and(|c| c.is_ascii_digit() || *c == ')');
        if digit(before) && (digit(after) || c == '%') {
            out.extend(words.split(' ').map(String::from));
        }
    }
    for word in query.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        if let Some((stem, ext)) = word.rsplit_once('.') {
            if !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
            {
                out.push("file".into());
            }
        }
    }
    out
}

/// Words: split on anything that is not a letter or digit, and at camelCase humps; lower case;
/// stop words dropped; a plural `s` taken off (`files` → `file`).
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev = ' ';
    for c in text.chars() {
        if c.is_alphanumeric() {
            if !word.is_empty() && c.is_uppercase() && prev.is_lowercase() {
                words.push(std::mem::take(&mut word));
            }
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        prev = c;
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
        .into_iter()
        .filter(|w| !STOP.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

fn stem(w: &str) -> String {
    if w.len() > 4 && w.ends_with("ies") {
        format!("{}y", &w[..w.len() - 3])
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        w[..w.len() - 1].to_string()
    } else {
        w.to_string()
    }
}

/// Okapi BM25 score of each document for the query terms (each distinct term counted once).
fn bm25(query: &[String], docs: &[Vec<String>]) -> Vec<f64> {
    let n = docs.len() as f64;
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let tfs: Vec<HashMap<&str, usize>> = docs
        .iter()
        .map(|d| {
            let mut tf = HashMap::new();
            for t in d {
                *tf.entry(t.as_str()).or_insert(0) += 1;
            }
            tf
        })
        .collect();
    let distinct: HashSet<&str> = query.iter().map(String::as_str).collect();
    let mut scores = vec![0.0; docs.len()];
    for term in distinct {
        let df = tfs.iter().filter(|tf| tf.contains_key(term)).count() as f64;
        if df == 0.0 {
            continue;
        }
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        for (i, tf) in tfs.iter().enumerate() {
            if let Some(&f) = tf.get(term) {
                let f = f as f64;
                let norm = 1.0 - B + B * docs[i].len() as f64 / avg.max(1.0);
                scores[i] += idf * f * (K1 + 1.0) / (f + K1 * norm);
            }
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, args: &[&str]) -> ToolSpec {
        let props: serde_json::Map<String, serde_json::Value> = args
            .iter()
            .map(|a| (a.to_string(), json!({"type": "string"})))
            .collect();
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": props}),
        }
    }

    /// Tools like the built-in servers' and a few common MCP servers'.
    fn tools() -> Vec<ToolSpec> {
        vec![
            tool(
                "files__list_files",
                "List the files and folders in a folder of the sandbox.",
                &["path"],
            ),
            tool(
                "web__fetch",
                "Fetch a URL from the internet and return its content as markdown.",
                &["url"],
            ),
            tool("calculator__add", "Add two numbers: a + b.", &["a", "b"]),
            tool(
                "files__read_file",
                "Read a text file from the sandbox.",
                &["path"],
            ),
            tool(
                "time__get_current_time",
                "Get the current time in a time zone.",
                &["timezone"],
            ),
            tool("calculator__multiply", "Multiply: a * b.", &["a", "b"]),
            tool(
                "files__write_file",
                "Write (create or replace) a text file in the sandbox.",
                &["path", "content"],
            ),
            tool(
                "git__gitLog",
                "Show the commit logs of a repository.",
                &["repoPath"],
            ),
            tool("calculator__subtract", "Subtract: a - b.", &["a", "b"]),
        ]
    }

    fn names(idx: &[usize]) -> Vec<String> {
        let t = tools();
        idx.iter().map(|&i| t[i].name.clone()).collect()
    }

    #[test]
    fn arithmetic_ranks_the_calculator_first() {
        let r = names(&rank_tools("what is 2+40", &tools(), &HashSet::new(), 3));
        assert_eq!(r[0], "calculator__add", "{r:?}");
        assert!(r.iter().all(|n| n.starts_with("calculator__")), "{r:?}");
        let r = names(&rank_tools("and 6 × 7?", &tools(), &HashSet::new(), 1));
        assert_eq!(r, ["calculator__multiply"]);
    }

    #[test]
    fn file_talk_ranks_the_files_tools_first() {
        let r = names(&rank_tools(
            "read the file notes.txt",
            &tools(),
            &HashSet::new(),
            3,
        ));
        assert_eq!(r[0], "files__read_file", "{r:?}");
        assert!(r.iter().all(|n| n.starts_with("files__")), "{r:?}");
        let r = names(&rank_tools(
            "what's in notes.txt?",
            &tools(),
            &HashSet::new(),
            2,
        ));
        assert!(r.iter().all(|n| n.starts_with("files__")), "{r:?}");
        let r = names(&rank_tools(
            "show me the git log",
            &tools(),
            &HashSet::new(),
            1,
        ));
        assert_eq!(r, ["git__gitLog"]);
    }

    #[test]
    fn kept_tools_are_always_in_and_the_limit_holds_for_the_rest() {
        let keep: HashSet<String> = ["time__get_current_time".to_string()].into();
        let r = names(&rank_tools("what is 2+40", &tools(), &keep, 3));
        assert_eq!(r.len(), 3);
        assert!(r.contains(&"time__get_current_time".to_string()));
        assert_eq!(r[0], "calculator__add");
        let r = rank_tools("what is 2+40", &tools(), &keep, 0);
        assert_eq!(names(&r), ["time__get_current_time"]);
    }

    #[test]
    fn no_match_keeps_the_order_and_fills_the_limit() {
        assert_eq!(
            rank_tools("hello there", &tools(), &HashSet::new(), 3),
            [0, 1, 2]
        );
        assert_eq!(rank_tools("", &[], &HashSet::new(), 3), Vec::<usize>::new());
        assert_eq!(
            rank_tools("anything", &tools(), &HashSet::new(), 100).len(),
            tools().len()
        );
    }

    #[test]
    fn words_are_split_as_names_are_written() {
        assert_eq!(terms("files__read_file"), ["file", "read", "file"]);
        assert_eq!(terms("gitLog repoPath"), ["git", "log", "repo", "path"]);
        assert_eq!(
            terms("calculator.add-numbers"),
            ["calculator", "add", "number"]
        );
        assert_eq!(terms("What is the Weather in Paris?"), ["weather", "pari"]);
        assert_eq!(terms("queries class status"), ["query", "class", "status"]);
    }
}
