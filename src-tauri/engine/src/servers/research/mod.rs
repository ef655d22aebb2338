//! The `research` built-in server: arXiv paper search (`search_papers`) and the details of a paper
//! (`extract_info`), as the original design names them. Papers found are kept in its own folder
//! (`<data dir>/research`): one JSON file per paper under `papers/`, and per topic the ids found
//! under `topics/`, so `extract_info` answers offline later and a topic asked again the same day
//! is not fetched again (arXiv's results change once a day).
//!
//! `mcp-server research [--arxiv-url URL] [--cache DIR]`; `SWITCHBOARD_ARXIV_URL` sets the URL
//! too (the argument wins). The default is the public arXiv API.
//!
//! `atom.rs` reads the Atom answers with quick-xml's namespace-aware reader (the arXiv and
//! OpenSearch extensions by namespace URI; the error feed is an error); `client.rs` the HTTP side
//! (reqwest with native-tls); `store.rs` the papers kept per topic (JSON files, written
//! atomically). Its tests never reach the real arXiv: a local stand-in,
//! `tests/it/support/arxiv.rs`, serves the recorded answers in `tests/fixtures/arxiv/`; the app's
//! tests point `SWITCHBOARD_ARXIV_URL` at a closed port unless they start the stand-in.

pub mod atom;
pub mod client;
mod store;

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use self::atom::Paper;
use self::client::{Client, FetchError, Timing};
use self::store::Store;
use super::{BuiltinServer, ToolResult};

/// The arXiv API's URL when no `--arxiv-url` is given.
pub const URL_ENV: &str = "SWITCHBOARD_ARXIV_URL";
/// `interval_ms,timeout_ms,backoff_ms`: shorter waits, for tests only.
pub const TIMING_ENV: &str = "SWITCHBOARD_RESEARCH_TIMING";

const MAX_RESULTS: u64 = 50;
const DEFAULT_RESULTS: u64 = 5;
/// A topic asked again within this time is answered from the folder.
const FRESH_SECS: u64 = 24 * 3600;

/// What the server is started with.
#[derive(Debug, Clone)]
pub struct Options {
    pub url: String,
    pub cache: PathBuf,
    pub timing: Timing,
}

fn arg(args: &[String], name: &str) -> Option<String> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

/// The folder for its arguments (`--cache DIR`, else `<data dir>/research`).
pub fn cache_dir(args: &[String]) -> PathBuf {
    arg(args, "--cache")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::paths::data_dir().join("research"))
}

impl Options {
    pub fn from_args(args: &[String]) -> Options {
        let url = arg(args, "--arxiv-url")
            .or_else(|| std::env::var(URL_ENV).ok().filter(|s| !s.trim().is_empty()))
            .unwrap_or_else(|| client::DEFAULT_URL.to_string());
        let timing = std::env::var(TIMING_ENV)
            .map(|s| Timing::parse(&s))
            .unwrap_or_default();
        Options {
            url,
            cache: cache_dir(args),
            timing,
        }
    }
}

pub struct Research {
    client: Client,
    store: Store,
    /// Its own runtime: `BuiltinServer::call` is synchronous, the HTTP client is not.
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for Research {
    fn drop(&mut self) {
        // dropping a runtime inside another one's async context would panic
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Research {
    pub fn new(opts: Options) -> std::io::Result<Research> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Research {
            client: Client::new(opts.url, opts.timing),
            store: Store::open(opts.cache)?,
            rt: Some(rt),
        })
    }

    fn block_on<T: Send>(&self, fut: impl std::future::Future<Output = T> + Send) -> T {
        let rt = self.rt.as_ref().expect("runtime");
        // on a thread of its own: the caller may itself be inside a runtime (serve_stdio)
        std::thread::scope(|s| {
            s.spawn(|| rt.block_on(fut))
                .join()
                .expect("research request")
        })
    }

    fn search(&self, args: &Map<String, Value>) -> ToolResult {
        let topic = match args.get("topic").and_then(Value::as_str).map(str::trim) {
            Some(t) if !t.is_empty() => t.to_string(),
            _ => {
                return ToolResult::error(
                    "missing text argument 'topic' (what to search arXiv for)",
                )
            }
        };
        let max = match count(args.get("max_results")) {
            Ok(n) => n,
            Err(e) => return ToolResult::error(e),
        };
        if let Some(saved) = self.store.fresh_topic(&topic, max, FRESH_SECS) {
            return ToolResult::ok(format_results(&topic, &saved.0, saved.1, true));
        }
        let params = [
            ("search_query", query_for(&topic)),
            ("start", "0".to_string()),
            ("max_results", max.to_string()),
            ("sortBy", "relevance".to_string()),
            ("sortOrder", "descending".to_string()),
        ];
        match self.block_on(self.client.query(&params)) {
            Ok(feed) => {
                let total = feed.total.unwrap_or(feed.papers.len() as u64);
                if let Err(e) = self.store.save_topic(&topic, max, total, &feed.papers) {
                    tracing::warn!("research: could not save the papers: {e}");
                }
                ToolResult::ok(format_results(&topic, &feed.papers, total, false))
            }
            Err(e) => ToolResult::error(e.to_string()),
        }
    }

    fn extract(&self, args: &Map<String, Value>) -> ToolResult {
        let Some(given) = args.get("paper_id").and_then(Value::as_str) else {
            return ToolResult::error(
                "missing text argument 'paper_id' (an arXiv id such as 1706.03762)",
            );
        };
        let Some(id) = normalize_id(given) else {
            return ToolResult::error(format!(
                "\"{given}\" is not an arXiv id (like 1706.03762, 1706.03762v7 or hep-th/9711200)."
            ));
        };
        if let Some(p) = self.store.paper(&id) {
            return ToolResult::ok(format!(
                "{}\n\n(from the papers saved earlier)",
                format_paper(&p)
            ));
        }
        let params = [("id_list", id.clone()), ("max_results", "1".to_string())];
        match self.block_on(self.client.query(&params)) {
            Ok(feed) => match pick(feed.papers, &id) {
                Some(p) => {
                    if let Err(e) = self.store.save_paper(&p) {
                        tracing::warn!("research: could not save the paper: {e}");
                    }
                    ToolResult::ok(format_paper(&p))
                }
                None => ToolResult::error(format!("arXiv has no paper {id}.")),
            },
            Err(FetchError::Refused(e)) => ToolResult::error(e),
            Err(FetchError::Unavailable(e)) => ToolResult::error(format!(
                "Paper {id} is not among the papers saved earlier, and fetching it failed: {e}"
            )),
        }
    }
}

/// The paper with this id (any version) among those arXiv answered.
fn pick(papers: Vec<Paper>, id: &str) -> Option<Paper> {
    let base = |s: &str| store::paper_key(s);
    papers.into_iter().find(|p| base(&p.id) == base(id))
}

/// `max_results`: 1..=50, default 5; models often send numbers as strings.
fn count(v: Option<&Value>) -> Result<u64, String> {
    let n = match v {
        None | Some(Value::Null) => return Ok(DEFAULT_RESULTS),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n.fract() == 0.0 && (1.0..=MAX_RESULTS as f64).contains(&n) => Ok(n as u64),
        _ => Err(format!(
            "'max_results' must be a whole number from 1 to {MAX_RESULTS}"
        )),
    }
}

/// arXiv's query syntax for a topic: as given when it uses field prefixes (`ti:`, `au:`, …),
/// else every word (or quoted phrase) searched in all fields.
pub fn query_for(topic: &str) -> String {
    let fields = [
        "ti:", "au:", "abs:", "co:", "jr:", "cat:", "rn:", "id:", "all:",
    ];
    if fields.iter().any(|f| topic.contains(f)) {
        return topic.to_string();
    }
    let mut terms = Vec::new();
    for (i, part) in topic.split('"').enumerate() {
        if i % 2 == 1 {
            if !part.trim().is_empty() {
                terms.push(format!("all:\"{}\"", part.trim()));
            }
        } else {
            terms.extend(part.split_whitespace().map(|w| format!("all:{w}")));
        }
    }
    terms.join(" AND ")
}

/// An arXiv id from what a model may pass: `arXiv:1706.03762`, an abs or pdf URL, `…v7`.
pub fn normalize_id(given: &str) -> Option<String> {
    let mut s = given.trim();
    for p in ["https://", "http://"] {
        s = s.strip_prefix(p).unwrap_or(s);
    }
    for p in ["export.arxiv.org/", "www.arxiv.org/", "arxiv.org/"] {
        s = s.strip_prefix(p).unwrap_or(s);
    }
    for p in ["abs/", "pdf/"] {
        s = s.strip_prefix(p).unwrap_or(s);
    }
    let s = s.strip_suffix(".pdf").unwrap_or(s);
    let s = s
        .strip_prefix("arXiv:")
        .or_else(|| s.strip_prefix("arxiv:"))
        .unwrap_or(s);
    let (base, version) = match s.rfind('v') {
        Some(i) if i > 0 && s[i + 1..].chars().all(|c| c.is_ascii_digit()) && i + 1 < s.len() => {
            (&s[..i], &s[i..])
        }
        _ => (s, ""),
    };
    let digits = |t: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&t.len()) && t.chars().all(|c| c.is_ascii_digit())
    };
    let new_style = base
        .split_once('.')
        .is_some_and(|(a, b)| digits(a, 4..=4) && digits(b, 4..=5));
    let old_style = base.split_once('/').is_some_and(|(arch, num)| {
        !arch.is_empty()
            && arch
                .chars()
                .all(|c| c.is_ascii_alphabetic() || c == '-' || c == '.')
            && digits(num, 7..=7)
    });
    (new_style || old_style).then(|| format!("{base}{version}"))
}

fn date(s: &str) -> &str {
    s.get(..10).unwrap_or(s)
}

fn format_results(topic: &str, papers: &[Paper], total: u64, saved: bool) -> String {
    if papers.is_empty() {
        return format!("No arXiv papers match \"{topic}\".");
    }
    let mut out = format!(
        "{} of {total} arXiv papers on \"{topic}\"{}:\n",
        papers.len(),
        if saved { " (saved earlier today)" } else { "" }
    );
    for (i, p) in papers.iter().enumerate() {
        let summary: String = p.summary.chars().take(600).collect();
        let cut = if summary.len() < p.summary.len() {
            "…"
        } else {
            ""
        };
        out.push_str(&format!(
            "\n{}. [{}] {}\n   Authors: {}\n   Published: {}\n   PDF: {}\n   Summary: {summary}{cut}\n",
            i + 1,
            p.id,
            p.title,
            authors(p, 5),
            date(&p.published),
            p.pdf_url,
        ));
    }
    out.push_str("\nextract_info with an id gives a paper's full details.");
    out
}

fn authors(p: &Paper, most: usize) -> String {
    let mut s = p
        .authors
        .iter()
        .take(most)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if p.authors.len() > most {
        s.push_str(" et al.");
    }
    s
}

fn format_paper(p: &Paper) -> String {
    let mut out = format!(
        "[{}] {}\nAuthors: {}\nPublished: {}",
        p.id,
        p.title,
        authors(p, usize::MAX),
        date(&p.published)
    );
    if date(&p.updated) != date(&p.published) && !p.updated.is_empty() {
        out.push_str(&format!(" (this version: {})", date(&p.updated)));
    }
    if let Some(c) = &p.primary_category {
        out.push_str(&format!("\nCategory: {c}"));
    }
    out.push_str(&format!(
        "\nAbstract page: {}\nPDF: {}",
        p.abs_url, p.pdf_url
    ));
    for (label, v) in [
        ("Comment", &p.comment),
        ("Journal reference", &p.journal_ref),
        ("DOI", &p.doi),
    ] {
        if let Some(v) = v {
            out.push_str(&format!("\n{label}: {v}"));
        }
    }
    out.push_str(&format!("\n\nSummary: {}", p.summary));
    out
}

impl BuiltinServer for Research {
    fn name(&self) -> &'static str {
        "research"
    }

    fn tools(&self) -> Vec<Value> {
        // it reaches the internet: read-only, but open-world (asked before its first call)
        let ann = json!({"readOnlyHint": true, "openWorldHint": true});
        vec![
            json!({"name": "search_papers",
                "description": "Search arXiv for papers on a topic. Returns each paper's id, title, authors, publication date, summary and PDF link; the papers are saved for extract_info.",
                "inputSchema": {"type": "object", "properties": {
                    "topic": {"type": "string", "description": "what to search for (words, or arXiv query syntax such as ti:transformer AND au:vaswani)"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": DEFAULT_RESULTS, "description": "how many papers (1-50)"},
                }, "required": ["topic"], "additionalProperties": false},
                "annotations": ann}),
            json!({"name": "extract_info",
                "description": "Full details of an arXiv paper by id (e.g. 1706.03762): from the papers found earlier, else fetched from arXiv.",
                "inputSchema": {"type": "object", "properties": {
                    "paper_id": {"type": "string", "description": "the arXiv id, e.g. 1706.03762 or hep-th/9711200"},
                }, "required": ["paper_id"], "additionalProperties": false},
                "annotations": ann}),
        ]
    }

    fn call(&self, tool: &str, args: &Map<String, Value>) -> ToolResult {
        match tool {
            "search_papers" => self.search(args),
            "extract_info" => self.extract(args),
            other => ToolResult::error(format!("Unknown tool: {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_become_arxiv_queries() {
        assert_eq!(
            query_for("graph neural networks"),
            "all:graph AND all:neural AND all:networks"
        );
        assert_eq!(
            query_for("\"large language\" agents"),
            "all:\"large language\" AND all:agents"
        );
        assert_eq!(
            query_for("ti:transformer AND au:vaswani"),
            "ti:transformer AND au:vaswani"
        );
    }

    #[test]
    fn ids_are_normalized_and_nonsense_is_refused() {
        for (given, want) in [
            ("1706.03762", "1706.03762"),
            ("1706.03762v7", "1706.03762v7"),
            ("arXiv:1706.03762", "1706.03762"),
            ("https://arxiv.org/abs/1706.03762v2", "1706.03762v2"),
            ("http://arxiv.org/pdf/1706.03762v7.pdf", "1706.03762v7"),
            ("hep-th/9711200", "hep-th/9711200"),
            ("math.GT/0309136v1", "math.GT/0309136v1"),
            (" 2101.00001 ", "2101.00001"),
        ] {
            assert_eq!(normalize_id(given).as_deref(), Some(want), "{given}");
        }
        for bad in [
            "",
            "attention",
            "1706.037",
            "../../etc/passwd",
            "1706.03762v",
            "a/b",
            "12345.6789",
        ] {
            assert_eq!(normalize_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn max_results_is_bounded() {
        assert_eq!(count(None), Ok(5));
        assert_eq!(count(Some(&json!(3))), Ok(3));
        assert_eq!(count(Some(&json!("7"))), Ok(7));
        assert!(count(Some(&json!(0))).is_err());
        assert!(count(Some(&json!(51))).is_err());
        assert!(count(Some(&json!(2.5))).is_err());
    }

    #[test]
    fn tools_are_read_only_and_open_world() {
        let dir = tempfile::tempdir().unwrap();
        let r = Research::new(Options {
            url: "http://127.0.0.1:9/api/query".into(),
            cache: dir.path().into(),
            timing: Timing::default(),
        })
        .unwrap();
        let tools = r.tools();
        let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["search_papers", "extract_info"]);
        for t in &tools {
            assert_eq!(
                t["annotations"],
                json!({"readOnlyHint": true, "openWorldHint": true})
            );
        }
        // refused before any request
        let e = r.call(
            "extract_info",
            json!({"paper_id": "nope"}).as_object().unwrap(),
        );
        assert!(
            e.is_error && e.text.contains("not an arXiv id"),
            "{}",
            e.text
        );
        let e = r.call("search_papers", json!({}).as_object().unwrap());
        assert!(e.is_error && e.text.contains("'topic'"), "{}", e.text);
    }
}
