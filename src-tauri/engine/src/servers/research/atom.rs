//! arXiv's Atom 1.0 answers (API manual §3.3, §5.2), read with quick-xml's namespace-aware
//! reader: the arXiv and OpenSearch extension elements (`arxiv:primary_category`,
//! `opensearch:totalResults`, …) are matched by namespace URI, wherever the namespace is declared
//! (today's answers declare it on each extension element, the manual's 2007 sample on the root).

use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::{Namespace, ResolveResult};
use quick_xml::{NsReader, XmlVersion};
use serde::{Deserialize, Serialize};

const ATOM: &str = "http://www.w3.org/2005/Atom";
const OPENSEARCH: &str = "http://a9.com/-/spec/opensearch/1.1/";
const ARXIV: &str = "http://arxiv.org/schemas/atom";

/// One paper as arXiv describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Paper {
    /// `1706.03762v7`, `hep-ex/0307015v1`.
    pub id: String,
    pub title: String,
    pub authors: Vec<String>,
    /// When version 1 was submitted (RFC 3339).
    pub published: String,
    /// When this version was submitted.
    pub updated: String,
    pub summary: String,
    pub abs_url: String,
    pub pdf_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_category: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doi: Option<String>,
}

/// One page of results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Feed {
    /// `opensearch:totalResults`: how many match in all.
    pub total: Option<u64>,
    /// `opensearch:startIndex` (0-based).
    pub start: Option<u64>,
    pub papers: Vec<Paper>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AtomError {
    /// arXiv's error feed: one entry titled `Error` whose summary says what is wrong.
    #[error("arXiv refused the query: {0}")]
    Api(String),
    #[error("arXiv's answer is not a readable Atom feed ({0})")]
    Malformed(String),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ns {
    Atom,
    OpenSearch,
    Arxiv,
    Other,
}

fn ns_of(r: &ResolveResult<'_>) -> Ns {
    match r {
        ResolveResult::Bound(Namespace(uri)) => match *uri {
            ATOM => Ns::Atom,
            OPENSEARCH => Ns::OpenSearch,
            ARXIV => Ns::Arxiv,
            _ => Ns::Other,
        },
        _ => Ns::Other,
    }
}

fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.try_get_attribute(name)
        .ok()
        .flatten()
        .and_then(|a| a.normalized_value(XmlVersion::Implicit1_0).ok())
        .map(|v| v.into_owned())
}

/// Titles and abstracts come with hard line breaks and leading spaces.
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The short id of an entry's `<id>` (`http://arxiv.org/abs/2101.00001v1` → `2101.00001v1`).
fn short_id(url: &str) -> String {
    let s = url.trim();
    for p in ["http://arxiv.org/abs/", "https://arxiv.org/abs/"] {
        if let Some(rest) = s.strip_prefix(p) {
            return rest.to_string();
        }
    }
    s.to_string()
}

#[derive(Default)]
struct EntryState {
    paper: Paper,
    raw_id: String,
    raw_title: String,
    error_link: bool,
}

/// What the reader has seen so far of one answer.
#[derive(Default)]
struct Reading {
    feed: Feed,
    stack: Vec<(Ns, String)>,
    text: String,
    entry: Option<EntryState>,
    author: Option<String>,
    seen_root: bool,
}

fn bad(what: impl Into<String>) -> AtomError {
    AtomError::Malformed(what.into())
}

/// Reads one answer of the arXiv API.
pub fn parse(xml: &str) -> Result<Feed, AtomError> {
    let mut reader = NsReader::from_str(xml);
    reader.config_mut().expand_empty_elements = true;
    let mut r = Reading::default();
    loop {
        let (res, ev) = reader
            .read_resolved_event()
            .map_err(|e| bad(e.to_string()))?;
        let ns = ns_of(&res);
        match ev {
            Event::Start(e) => r.start(ns, &e)?,
            Event::Text(t) => r.text.push_str(&t.xml10_content()),
            Event::CData(t) => r.text.push_str(&t),
            Event::GeneralRef(g) => {
                if let Ok(Some(c)) = g.resolve_char_ref() {
                    r.text.push(c);
                } else {
                    let name = g.xml10_content();
                    match resolve_predefined_entity(&name) {
                        Some(s) => r.text.push_str(s),
                        None => return Err(bad(format!("unknown entity &{name};"))),
                    }
                }
            }
            Event::End(_) => r.end()?,
            Event::Eof => break,
            _ => {}
        }
    }
    if !r.seen_root {
        return Err(bad("no <feed> in it"));
    }
    if let Some((_, open)) = r.stack.last() {
        return Err(bad(format!("it ends inside <{open}> (cut off?)")));
    }
    Ok(r.feed)
}

impl Reading {
    fn start(&mut self, ns: Ns, e: &BytesStart<'_>) -> Result<(), AtomError> {
        let name = e.local_name().as_ref().to_string();
        if self.stack.is_empty() {
            if self.seen_root || ns != Ns::Atom || name != "feed" {
                return Err(bad(format!(
                    "the document is a <{name}>, not an Atom <feed>"
                )));
            }
            self.seen_root = true;
        }
        let parent = self.stack.last().map(|(_, n)| n.as_str());
        match (parent, ns, name.as_str()) {
            (Some("feed"), Ns::Atom, "entry") => self.entry = Some(EntryState::default()),
            (Some("entry"), Ns::Atom, "author") => self.author = Some(String::new()),
            (Some("entry"), Ns::Atom, "link") => {
                if let Some(st) = self.entry.as_mut() {
                    let href = attr(e, "href").unwrap_or_default();
                    let rel = attr(e, "rel").unwrap_or_default();
                    let title = attr(e, "title").unwrap_or_default();
                    if href.contains("arxiv.org/api/errors") {
                        st.error_link = true;
                    } else if rel == "alternate" {
                        st.paper.abs_url = href;
                    } else if rel == "related" && title == "pdf" {
                        st.paper.pdf_url = href;
                    }
                }
            }
            (Some("entry"), Ns::Atom, "category") => {
                if let (Some(st), Some(term)) = (self.entry.as_mut(), attr(e, "term")) {
                    st.paper.categories.push(term);
                }
            }
            (Some("entry"), Ns::Arxiv, "primary_category") => {
                if let Some(st) = self.entry.as_mut() {
                    st.paper.primary_category = attr(e, "term");
                }
            }
            _ => {}
        }
        self.stack.push((ns, name));
        self.text.clear();
        Ok(())
    }

    fn end(&mut self) -> Result<(), AtomError> {
        let Some((ns, name)) = self.stack.pop() else {
            return Err(bad("an end tag without a start"));
        };
        let value = collapse(&self.text);
        self.text.clear();
        let parent = self.stack.last().map(|(_, n)| n.as_str());
        match (parent, ns, name.as_str()) {
            (Some("feed"), Ns::OpenSearch, "totalResults") => self.feed.total = value.parse().ok(),
            (Some("feed"), Ns::OpenSearch, "startIndex") => self.feed.start = value.parse().ok(),
            (Some("feed"), Ns::Atom, "entry") => {
                let st = self.entry.take().unwrap_or_default();
                finish_entry(st, &mut self.feed)?;
            }
            (Some("entry"), Ns::Atom, field) => self.entry_field(field, value),
            (Some("entry"), Ns::Arxiv, field) => {
                if let Some(st) = self.entry.as_mut() {
                    let v = Some(value).filter(|v| !v.is_empty());
                    match field {
                        "comment" => st.paper.comment = v,
                        "journal_ref" => st.paper.journal_ref = v,
                        "doi" => st.paper.doi = v,
                        _ => {}
                    }
                }
            }
            (Some("author"), Ns::Atom, "name") => {
                if let Some(a) = self.author.as_mut() {
                    *a = value;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// An Atom element of an entry ended with `value`.
    fn entry_field(&mut self, field: &str, value: String) {
        let Some(st) = self.entry.as_mut() else {
            return;
        };
        let p = &mut st.paper;
        match field {
            "id" => st.raw_id = value,
            "title" => st.raw_title = value,
            "summary" => p.summary = value,
            "published" => p.published = value,
            "updated" => p.updated = value,
            "author" => {
                if let Some(a) = self.author.take().filter(|a| !a.is_empty()) {
                    p.authors.push(a);
                }
            }
            _ => {}
        }
    }
}

fn finish_entry(st: EntryState, feed: &mut Feed) -> Result<(), AtomError> {
    let EntryState {
        mut paper,
        raw_id,
        raw_title,
        error_link,
    } = st;
    if error_link || raw_id.contains("arxiv.org/api/errors") || raw_title == "Error" {
        let msg = Some(paper.summary)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "an unspecified error".into());
        return Err(AtomError::Api(msg));
    }
    if raw_id.is_empty() {
        return Err(AtomError::Malformed("an entry has no <id>".into()));
    }
    paper.id = short_id(&raw_id);
    paper.title = raw_title;
    if paper.abs_url.is_empty() {
        paper.abs_url = format!("https://arxiv.org/abs/{}", paper.id);
    }
    if paper.pdf_url.is_empty() {
        paper.pdf_url = format!("https://arxiv.org/pdf/{}", paper.id);
    }
    feed.papers.push(paper);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/arxiv")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn two_results_with_every_documented_element() {
        let f = parse(&fixture("two_results.xml")).unwrap();
        assert_eq!(f.total, Some(2));
        assert_eq!(f.start, Some(0));
        assert_eq!(f.papers.len(), 2);
        let a = &f.papers[0];
        assert_eq!(a.id, "1706.03762v7");
        assert_eq!(a.title, "Attention Is All You Need");
        assert_eq!(a.authors, ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar"]);
        assert_eq!(a.published, "2017-06-12T17:57:34Z");
        assert_eq!(a.updated, "2023-08-02T00:41:18Z");
        assert!(a.summary.starts_with("The dominant sequence transduction models are based on complex recurrent or convolutional"));
        assert!(!a.summary.contains('\n'));
        assert_eq!(a.pdf_url, "http://arxiv.org/pdf/1706.03762v7");
        assert_eq!(a.abs_url, "http://arxiv.org/abs/1706.03762v7");
        assert_eq!(a.primary_category.as_deref(), Some("cs.CL"));
        assert_eq!(a.categories, ["cs.CL", "cs.LG"]);
        assert_eq!(a.comment.as_deref(), Some("15 pages, 5 figures"));
        assert_eq!((a.doi.as_ref(), a.journal_ref.as_ref()), (None, None));
        let b = &f.papers[1];
        assert_eq!(b.id, "hep-ex/0307015v1");
        assert_eq!(
            b.title,
            "Multi-Electron Production at High Transverse Momenta in ep Collisions at HERA"
        );
        // the affiliation is not part of the name
        assert_eq!(b.authors, ["H1 Collaboration"]);
        assert_eq!(b.doi.as_deref(), Some("10.1140/epjc/s2003-01326-x"));
        assert_eq!(
            b.journal_ref.as_deref(),
            Some("Eur.Phys.J. C31 (2003) 17-29")
        );
        assert_eq!(b.primary_category.as_deref(), Some("hep-ex"));
        // the doi link is not taken for the pdf
        assert_eq!(b.pdf_url, "http://arxiv.org/pdf/hep-ex/0307015v1");
    }

    #[test]
    fn namespaces_declared_on_the_root_as_in_the_manual_read_the_same() {
        let f = parse(&fixture("root_namespaces.xml")).unwrap();
        assert_eq!(f.total, Some(1000));
        let p = &f.papers[0];
        assert_eq!(p.id, "hep-ex/0307015");
        assert_eq!(p.primary_category.as_deref(), Some("hep-ex"));
        assert_eq!(
            p.journal_ref.as_deref(),
            Some("Eur.Phys.J. C31 (2003) 17-29")
        );
        // entities are resolved inside the text
        assert!(p.summary.ends_with("at HERA & DESY."), "{}", p.summary);
    }

    #[test]
    fn an_empty_result_is_not_an_error() {
        let f = parse(&fixture("empty.xml")).unwrap();
        assert_eq!(f.total, Some(0));
        assert!(f.papers.is_empty());
    }

    #[test]
    fn the_error_feed_is_an_api_error_with_arxivs_message() {
        assert_eq!(
            parse(&fixture("error.xml")),
            Err(AtomError::Api("incorrect id format for 1234.12345".into()))
        );
    }

    #[test]
    fn malformed_answers_are_errors_that_say_why() {
        let cut = parse(&fixture("malformed.xml")).unwrap_err();
        assert!(matches!(cut, AtomError::Malformed(_)), "{cut:?}");
        // the plain-text body of a 429, an HTML page, a mismatched tag, an RSS feed, nothing
        for body in [
            "Rate exceeded.",
            "<html><body>Service Unavailable</body></html>",
            "<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry></feed>",
            "<rss version=\"2.0\"><channel/></rss>",
            "",
        ] {
            let e = parse(body).unwrap_err();
            assert!(matches!(e, AtomError::Malformed(_)), "{body}: {e:?}");
        }
    }
}
