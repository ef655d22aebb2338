//! The research server's folder: `papers/<id>.json` (one paper, keyed by its id without the
//! version, `/` as `_`), `topics/<slug>-<hash>.json` (a topic's ids in arXiv's order, when they
//! were fetched and how many match in all). Written to a temporary file, then renamed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::atom::Paper;

#[derive(Serialize, Deserialize)]
struct Topic {
    topic: String,
    /// Seconds since the Unix epoch.
    fetched_at: u64,
    /// How many were asked for.
    asked: u64,
    total: u64,
    ids: Vec<String>,
}

pub struct Store {
    root: PathBuf,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// `1706.03762v7` → `1706.03762`; `hep-th/9711200v1` → `hep-th_9711200`.
pub(super) fn paper_key(id: &str) -> String {
    let base = match id.rfind('v') {
        Some(i) if i + 1 < id.len() && id[i + 1..].chars().all(|c| c.is_ascii_digit()) => &id[..i],
        _ => id,
    };
    base.replace('/', "_")
}

fn topic_file(topic: &str) -> String {
    let norm = topic
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let slug: String = norm
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .take(60)
        .collect();
    let hash: String = Sha256::digest(norm.as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{slug}-{hash}.json")
}

fn write_atomic(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value)?)?;
    std::fs::rename(&tmp, path)
}

impl Store {
    pub fn open(root: PathBuf) -> std::io::Result<Store> {
        std::fs::create_dir_all(root.join("papers"))?;
        std::fs::create_dir_all(root.join("topics"))?;
        Ok(Store { root })
    }

    fn paper_path(&self, id: &str) -> PathBuf {
        self.root
            .join("papers")
            .join(format!("{}.json", paper_key(id)))
    }

    /// A saved paper (any version of it).
    pub fn paper(&self, id: &str) -> Option<Paper> {
        let text = std::fs::read_to_string(self.paper_path(id)).ok()?;
        serde_json::from_str(&text).ok()
    }

    pub fn save_paper(&self, p: &Paper) -> std::io::Result<()> {
        write_atomic(&self.paper_path(&p.id), p)
    }

    /// Saves the papers and the topic's list of them.
    pub fn save_topic(
        &self,
        topic: &str,
        asked: u64,
        total: u64,
        papers: &[Paper],
    ) -> std::io::Result<()> {
        for p in papers {
            self.save_paper(p)?;
        }
        let t = Topic {
            topic: topic.to_string(),
            fetched_at: now(),
            asked,
            total,
            ids: papers.iter().map(|p| p.id.clone()).collect(),
        };
        write_atomic(&self.root.join("topics").join(topic_file(topic)), &t)
    }

    /// The topic's papers and total when they were fetched within `fresh_secs` with at least
    /// `max` asked for (or all there are), each paper still saved.
    pub fn fresh_topic(&self, topic: &str, max: u64, fresh_secs: u64) -> Option<(Vec<Paper>, u64)> {
        let path = self.root.join("topics").join(topic_file(topic));
        let t: Topic = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        if now().saturating_sub(t.fetched_at) >= fresh_secs || (t.asked < max && t.total > t.asked)
        {
            return None;
        }
        let papers = t
            .ids
            .iter()
            .take(max as usize)
            .map(|id| self.paper(id))
            .collect::<Option<Vec<_>>>()?;
        Some((papers, t.total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper(id: &str) -> Paper {
        Paper {
            id: id.into(),
            title: format!("Title of {id}"),
            ..Paper::default()
        }
    }

    #[test]
    fn papers_and_topics_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path().into()).unwrap();
        s.save_topic(
            "Graph  Networks",
            2,
            10,
            &[paper("1706.03762v7"), paper("hep-th/9711200v1")],
        )
        .unwrap();
        // any version of a saved paper is found
        assert_eq!(s.paper("1706.03762").unwrap().id, "1706.03762v7");
        assert_eq!(s.paper("1706.03762v2").unwrap().id, "1706.03762v7");
        assert_eq!(s.paper("hep-th/9711200").unwrap().id, "hep-th/9711200v1");
        assert!(dir.path().join("papers/hep-th_9711200.json").is_file());
        assert!(s.paper("2101.00001").is_none());
        // the same topic, however spaced or cased, is fresh for as many as were asked
        let (ps, total) = s.fresh_topic("graph networks", 1, 3600).unwrap();
        assert_eq!((ps.len(), total), (1, 10));
        assert_eq!(s.fresh_topic("graph networks", 2, 3600).unwrap().0.len(), 2);
        assert!(s.fresh_topic("graph networks", 3, 3600).is_none());
        assert!(s.fresh_topic("graph networks", 1, 0).is_none());
        assert!(s.fresh_topic("other", 1, 3600).is_none());
    }
}
