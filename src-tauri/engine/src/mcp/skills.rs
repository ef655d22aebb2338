//! Skills from MCP servers: the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640,
//! protocol 2026-07-28). A server that declares the extension lists its skills with
//! `skills/list` (paged, cacheable for `ttlMs`): each entry names its `SKILL.md`
//! (`skill://<path>/SKILL.md`), the `SKILL.md`'s frontmatter, and every file of the skill with
//! its SHA-256 digest and size (or `"dynamic"`: its files are found with
//! `resources/directory/read`). Nothing of a skill is read until it is loaded; every file read is
//! checked against its entry (size, then digest) and a `SKILL.md`'s frontmatter against the
//! entry's, field by field, before anything of it is used: a mismatch refuses the skill.
//!
//! This module is the extension's data and checks, without I/O; the host's requests are in
//! `host/skills.rs`. A skill is pinned like a tool ([`definition`]: its frontmatter and the
//! digest of each file, recorded for the server's identity under [`pin_scope`]).
//!
//! The entry rules checked here: `skill://…/SKILL.md`, the Agent Skills name rules, digests,
//! limits; `SKILL.md`'s YAML frontmatter is read with serde_norway.

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::apps::ToolUi;
use super::pins::Definition;

/// The extension's id, declared in the client's capabilities and looked for in the server's.
pub use rmcp::model::SKILLS_EXTENSION_ID;
/// The file at the root of every skill.
pub const SKILL_MD: &str = "SKILL.md";
/// Most files one skill may list (the spec's limit).
pub const MAX_FILES: usize = 512;
/// Most bytes one skill's files may add up to (16 MiB, the spec's limit).
pub const MAX_TOTAL_SIZE: u64 = 16 * 1024 * 1024;
/// Most pages of `skills/list` followed (a server whose cursor never ends is cut short).
pub const MAX_PAGES: usize = 50;

/// One file of a skill, as its entry lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillFile {
    pub uri: String,
    /// `sha256:<64 lowercase hex>`.
    pub digest: String,
    pub size: u64,
}

/// A skill's files: listed with digests, or a directory read when needed (no digests).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "files")]
pub enum SkillFiles {
    Listed(Vec<SkillFile>),
    Directory,
}

/// A skill as a server lists it (`skills/list`, `skills/get`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillEntry {
    /// `skill://<path>/SKILL.md`.
    pub uri: String,
    /// The `SKILL.md`'s frontmatter as the server says it is (`name`, `description`, …).
    pub frontmatter: Map<String, Value>,
    pub files: SkillFiles,
}

impl SkillEntry {
    /// Its name: the frontmatter's (which the entry's checks made equal to the last segment).
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The skill's folder: its `SKILL.md`'s URI without `/SKILL.md`.
    pub fn root(&self) -> &str {
        self.uri
            .strip_suffix(&format!("/{SKILL_MD}"))
            .unwrap_or(&self.uri)
    }

    /// The URI of the file at `path` (relative to the skill's folder, or a full URI inside it).
    pub fn file_uri(&self, path: &str) -> String {
        if path.starts_with("skill://") {
            path.to_string()
        } else {
            format!("{}/{}", self.root(), path.trim_start_matches("./"))
        }
    }

    /// The listed file at `uri` (`None`: not one of its files, or a directory skill).
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.files {
            SkillFiles::Listed(f) => f.iter().find(|f| f.uri == uri),
            SkillFiles::Directory => None,
        }
    }

    /// Its files' paths relative to its folder (`SKILL.md` among them), for the model.
    pub fn paths(&self) -> Vec<String> {
        match &self.files {
            SkillFiles::Listed(f) => f
                .iter()
                .map(|f| {
                    f.uri
                        .strip_prefix(&format!("{}/", self.root()))
                        .unwrap_or(&f.uri)
                        .to_string()
                })
                .collect(),
            SkillFiles::Directory => vec![SKILL_MD.to_string()],
        }
    }
}

/// One page of `skills/list`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListPage {
    pub skills: Vec<SkillEntry>,
    /// Entries refused, with why (shown on the server's row).
    pub refused: Vec<String>,
    pub next_cursor: Option<String>,
    /// How long the listing may be kept (`ttlMs`; `None`: not said, or 0).
    pub ttl_ms: Option<u64>,
}

/// Whether `name` follows the Agent Skills naming rules: 1–64 characters, lowercase letters,
/// digits and hyphens, no hyphen first, last or twice in a row.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// A `skills/list` (or `skills/get`'s `skill`) result read: the entries that pass their checks,
/// and why the others do not.
pub fn parse_page(result: &Value) -> ListPage {
    let mut page = ListPage {
        next_cursor: result
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(String::from),
        ttl_ms: result
            .get("ttlMs")
            .and_then(Value::as_u64)
            .filter(|t| *t > 0),
        ..ListPage::default()
    };
    let entries = result
        .get("skills")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, e) in entries.iter().enumerate() {
        match parse_entry(e) {
            Ok(s) => page.skills.push(s),
            Err(why) => {
                let label = e
                    .get("uri")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| format!("skills[{i}]"));
                page.refused.push(format!("{label}: {why}"));
            }
        }
    }
    page
}

/// One entry, checked: a `skill://…/SKILL.md` URI whose last folder is the frontmatter's valid
/// `name`, a `description`, and files inside the skill with well-formed digests, within the
/// spec's limits.
pub fn parse_entry(e: &Value) -> Result<SkillEntry, String> {
    let uri = e
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("the entry has no uri")?;
    let root = uri
        .strip_prefix("skill://")
        .and_then(|r| r.strip_suffix(&format!("/{SKILL_MD}")))
        .filter(|r| !r.is_empty())
        .ok_or_else(|| format!("{uri} is not a skill://<path>/{SKILL_MD} URI"))?;
    let frontmatter = e
        .get("frontmatter")
        .and_then(Value::as_object)
        .cloned()
        .ok_or("the entry has no frontmatter")?;
    let name = frontmatter
        .get("name")
        .and_then(Value::as_str)
        .ok_or("its frontmatter has no name")?;
    if !valid_name(name) {
        return Err(format!("\"{name}\" is not a valid skill name"));
    }
    let last = root.rsplit('/').next().unwrap_or(root);
    if last != name {
        return Err(format!("its folder \"{last}\" is not its name \"{name}\""));
    }
    match frontmatter.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => {}
        _ => return Err("its frontmatter has no description".into()),
    }
    let files = match e.get("resources") {
        Some(Value::String(s)) if s == "dynamic" => SkillFiles::Directory,
        Some(Value::Array(list)) => {
            if list.len() > MAX_FILES {
                return Err(format!(
                    "it lists {} files, more than {MAX_FILES}",
                    list.len()
                ));
            }
            let mut files = Vec::new();
            for f in list {
                let file_uri = f
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or("a file has no uri")?;
                if !file_uri.starts_with(&format!("skill://{root}/")) || file_uri.contains("/../") {
                    return Err(format!("{file_uri} is outside the skill"));
                }
                let digest = f
                    .get("digest")
                    .and_then(Value::as_str)
                    .filter(|d| valid_digest(d))
                    .ok_or_else(|| format!("{file_uri} has no sha256:<hex> digest"))?;
                let size = f
                    .get("size")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("{file_uri} has no size"))?;
                files.push(SkillFile {
                    uri: file_uri.to_string(),
                    digest: digest.to_string(),
                    size,
                });
            }
            if !files.iter().any(|f| f.uri == uri) {
                return Err(format!("its files do not include {SKILL_MD}"));
            }
            let total: u64 = files.iter().map(|f| f.size).sum();
            if total > MAX_TOTAL_SIZE {
                return Err(format!(
                    "its files add up to {total} bytes, more than {MAX_TOTAL_SIZE}"
                ));
            }
            SkillFiles::Listed(files)
        }
        _ => return Err("the entry has no resources".into()),
    };
    Ok(SkillEntry {
        uri: uri.to_string(),
        frontmatter,
        files,
    })
}

fn valid_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a file read against its entry: its size first (a different length fails whatever its
/// digest), then its digest.
pub fn verify(file: &SkillFile, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 != file.size {
        return Err(format!(
            "{} is {} bytes, not the {} its skill lists",
            file.uri,
            bytes.len(),
            file.size
        ));
    }
    let got = digest_of(bytes);
    if got != file.digest {
        return Err(format!(
            "{}'s content does not match its digest ({got}, listed {})",
            file.uri, file.digest
        ));
    }
    Ok(())
}

/// The YAML frontmatter of a `SKILL.md` (between a first line `---` and the next `---`), and the
/// text after it.
pub fn split_frontmatter(text: &str) -> Result<(Map<String, Value>, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not begin with a --- frontmatter block")?;
    let mut offset = 0;
    let mut end = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let (yaml_end, body_start) = end.ok_or("SKILL.md's frontmatter block is not closed by ---")?;
    let yaml = &rest[..yaml_end];
    let value: Value = serde_norway::from_str(yaml)
        .map_err(|e| format!("SKILL.md's frontmatter is not YAML: {e}"))?;
    match value {
        Value::Object(m) => Ok((m, &rest[body_start..])),
        _ => Err("SKILL.md's frontmatter is not a mapping".into()),
    }
}

/// Compares a `SKILL.md`'s frontmatter with its entry's, field by field: any difference refuses
/// the skill.
pub fn check_frontmatter(entry: &SkillEntry, text: &str) -> Result<(), String> {
    let (file, _) = split_frontmatter(text)?;
    let mut keys: Vec<&String> = file.keys().chain(entry.frontmatter.keys()).collect();
    keys.sort();
    keys.dedup();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| file.get(*k) != entry.frontmatter.get(*k))
        .map(|k| {
            format!(
                "{k}: the file says {}, the listing {}",
                file.get(k).cloned().unwrap_or(Value::Null),
                entry.frontmatter.get(k).cloned().unwrap_or(Value::Null)
            )
        })
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}'s frontmatter is not the one listed: {}",
            entry.uri,
            differ.join("; ")
        ))
    }
}

/// The pin scope of a server's skills: its identity, marked apart from its tools' (a skill and a
/// tool of the same name are two pins).
pub fn pin_scope(identity: &str) -> String {
    format!("{identity}#skills")
}

/// What is pinned of a skill, as a tool [`Definition`] (so the same store, diff and acceptance
/// serve): its name is the skill's URI, its description the frontmatter and each file's digest.
pub fn definition(entry: &SkillEntry) -> Definition {
    let fm =
        serde_json::to_string_pretty(&Value::Object(entry.frontmatter.clone())).unwrap_or_default();
    let files = match &entry.files {
        SkillFiles::Listed(f) => f
            .iter()
            .map(|f| format!("{} {} ({} bytes)", f.uri, f.digest, f.size))
            .collect::<Vec<_>>()
            .join("\n"),
        SkillFiles::Directory => "(a directory: its files are not listed)".into(),
    };
    Definition {
        name: entry.uri.clone(),
        description: format!("Frontmatter:\n{fm}\n\nFiles:\n{files}"),
        input_schema: Value::Null,
        annotations: Value::Null,
        output_schema: Value::Null,
        ui: ToolUi::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SKILL: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

    fn entry(body: &str) -> Value {
        json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "digest": digest_of(body.as_bytes()), "size": body.len()},
            ]
        })
    }

    #[test]
    fn an_entry_is_read_and_its_file_verified_by_size_and_digest() {
        let page = parse_page(&json!({"skills": [entry(SKILL)], "ttlMs": 5000, "nextCursor": "2"}));
        assert_eq!(page.refused, Vec::<String>::new());
        assert_eq!(page.ttl_ms, Some(5000));
        assert_eq!(page.next_cursor.as_deref(), Some("2"));
        let s = &page.skills[0];
        assert_eq!(
            (s.name(), s.root()),
            ("pdf-processing", "skill://pdf-processing")
        );
        let file = s.file(&s.uri).unwrap();
        assert!(verify(file, SKILL.as_bytes()).is_ok());
        let evil = SKILL.replace("Skill body.", "Evil body!!");
        assert!(verify(file, evil.as_bytes())
            .unwrap_err()
            .contains("digest"));
        let longer = format!("{SKILL}more");
        assert!(verify(file, longer.as_bytes())
            .unwrap_err()
            .contains("bytes"));
        assert!(check_frontmatter(s, SKILL).is_ok());
        let other = SKILL.replace("Extract, fill, and assemble PDF documents", "Exfiltrate");
        let err = check_frontmatter(s, &other).unwrap_err();
        assert!(err.contains("description"), "{err}");
    }

    #[test]
    fn entries_breaking_the_rules_are_refused_with_why() {
        let mut bad_name = entry(SKILL);
        bad_name["uri"] = json!("skill://other/SKILL.md");
        let mut bad_digest = entry(SKILL);
        bad_digest["resources"][0]["digest"] = json!("md5:abc");
        let mut outside = entry(SKILL);
        outside["resources"]
            .as_array_mut()
            .unwrap()
            .push(json!({"uri": "skill://elsewhere/x.md", "digest": digest_of(b""), "size": 0}));
        let page = parse_page(&json!({"skills": [bad_name, bad_digest, outside, {"uri": 3}]}));
        assert!(page.skills.is_empty());
        assert_eq!(page.refused.len(), 4, "{:?}", page.refused);
        assert!(page.refused[0].contains("not its name"));
        assert!(page.refused[1].contains("digest"));
        assert!(page.refused[2].contains("outside"));
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for ok in ["a", "pdf-processing", "x1-2"] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "Upper", "a_b", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_skill_pins_its_files_digests() {
        let a = parse_entry(&entry(SKILL)).unwrap();
        let b = parse_entry(&entry(&SKILL.replace("body", "text"))).unwrap();
        assert_ne!(definition(&a).hash(), definition(&b).hash());
        assert_eq!(definition(&a).hash(), definition(&a.clone()).hash());
    }
}
