//! The user's own skills: a folder of skills in the Agent Skills format (agentskills.io), so
//! skills written for other hosts work here: `<folder>/<name>/SKILL.md` (YAML frontmatter, then
//! the instructions) plus any files of its own. They are offered under the origin [`LOCAL`].
//!
//! Listing reads each `SKILL.md`'s frontmatter only (up to the block's end; the folder is read
//! again before each turn and when Settings → Skills opens: no watcher), and refuses one over
//! [`MAX_FILE`] bytes; a skill whose frontmatter breaks the format
//! (`name` 1–64 lowercase letters, digits and single hyphens, equal to its folder's name;
//! `description` 1–1024 characters; `compatibility` up to 500; `license` text; `metadata` a map
//! of text; `allowed-tools` text) is refused with why, never offered. Loading reads `SKILL.md`
//! again (and checks it again); a file of a skill is read only inside the skill's own folder
//! (its path relative, no `..`, canonicalised: a symlink leading out is refused), only up to
//! [`MAX_FILE`] bytes, and only as text. Nothing in a skill runs: it is text for the model.
//!
//! The folder is `<data dir>/skills` (`Places::skills`); `list_skill` reads up to the frontmatter's
//! closing `---`, at most `MAX_FRONTMATTER` (64 KiB).

use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::skills::{split_frontmatter, valid_name, MAX_FILES, SKILL_MD};

/// The origin the user's own skills are offered under (`local/<name>`).
pub const LOCAL: &str = "local";
/// The largest file of a local skill that is read (`SKILL.md` included).
pub const MAX_FILE: u64 = 1024 * 1024;
/// The most of a `SKILL.md` a listing reads for its frontmatter.
pub const MAX_FRONTMATTER: u64 = 64 * 1024;
/// The most skill folders one listing reads.
pub const MAX_SKILLS: usize = 500;

/// One of the user's skills, as listed (its frontmatter only).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalSkill {
    pub name: String,
    pub description: String,
    pub frontmatter: Map<String, Value>,
    /// Its folder.
    pub dir: PathBuf,
}

/// A folder of skills as last read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalListing {
    /// The folder (`None`: the user's skills are not looked for).
    pub dir: Option<PathBuf>,
    pub skills: Vec<LocalSkill>,
    /// Folders refused, each `<folder>: <why>`.
    pub refused: Vec<String>,
}

impl LocalListing {
    pub fn skill(&self, name: &str) -> Option<&LocalSkill> {
        self.skills.iter().find(|s| s.name == name)
    }
}

/// Reads the folder `dir`: each subfolder with a `SKILL.md`, its frontmatter checked. A folder
/// that does not exist has no skills (nothing refused); one that cannot be read is refused.
pub fn list(dir: &Path) -> LocalListing {
    let mut out = LocalListing {
        dir: Some(dir.to_path_buf()),
        ..LocalListing::default()
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.refused
                .push(format!("{}: it cannot be read: {e}", dir.display()));
            return out;
        }
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders.into_iter().take(MAX_SKILLS) {
        let label = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if label.starts_with('.') {
            continue;
        }
        match list_skill(&folder) {
            Ok(skill) => out.skills.push(skill),
            Err(why) => out.refused.push(format!("{label}: {why}")),
        }
    }
    out
}

/// A skill's folder read: its whole `SKILL.md` (within [`MAX_FILE`]), its frontmatter checked
/// against the format and its folder's name; the skill and the whole text.
pub fn read_skill(folder: &Path) -> Result<(LocalSkill, String), String> {
    let path = folder.join(SKILL_MD);
    if !path.is_file() {
        return Err(format!("it has no {SKILL_MD}"));
    }
    let text = read_text(&path)?;
    Ok((skill_of(folder, &text)?, text))
}

/// A skill's folder as listed: its `SKILL.md`'s size checked (within [`MAX_FILE`]) and its
/// frontmatter read (only up to the block's end, at most [`MAX_FRONTMATTER`] bytes) and checked.
pub fn list_skill(folder: &Path) -> Result<LocalSkill, String> {
    use std::io::{BufRead, Read};
    let path = folder.join(SKILL_MD);
    if !path.is_file() {
        return Err(format!("it has no {SKILL_MD}"));
    }
    let file = open_within_size(&path)?;
    let mut reader = std::io::BufReader::new(file.take(MAX_FRONTMATTER));
    let mut head = Vec::new();
    let mut line = Vec::new();
    let mut lines = 0;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{SKILL_MD} cannot be read: {e}"))?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&line);
        lines += 1;
        // the block ends at its second `---` line
        if lines > 1 && String::from_utf8_lossy(&line).trim_end() == "---" {
            break;
        }
    }
    let head = String::from_utf8(head)
        .map_err(|_| format!("{SKILL_MD}'s frontmatter is not text (UTF-8)"))?;
    skill_of(folder, &head)
}

/// The skill a `SKILL.md`'s text (or its beginning, through the frontmatter) says it is.
fn skill_of(folder: &Path, text: &str) -> Result<LocalSkill, String> {
    let (frontmatter, _) = split_frontmatter(text)?;
    let folder_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_frontmatter(&frontmatter, &folder_name)?;
    let description = frontmatter
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(LocalSkill {
        name: folder_name,
        description,
        frontmatter,
        dir: folder.to_path_buf(),
    })
}

/// Checks a frontmatter against the Agent Skills format, and its `name` against the folder's.
pub fn check_frontmatter(fm: &Map<String, Value>, folder_name: &str) -> Result<(), String> {
    let name = match fm.get("name") {
        Some(Value::String(n)) => n,
        Some(_) => return Err("its name is not text".into()),
        None => return Err("its frontmatter has no name".into()),
    };
    if !valid_name(name) {
        return Err(format!(
            "\"{name}\" is not a valid skill name (1–64 lowercase letters, digits and single \
             hyphens, no hyphen first or last)"
        ));
    }
    if name != folder_name {
        return Err(format!(
            "its name \"{name}\" is not its folder's name \"{folder_name}\""
        ));
    }
    match fm.get("description") {
        Some(Value::String(d)) if !d.trim().is_empty() && d.chars().count() <= 1024 => {}
        Some(Value::String(d)) if !d.trim().is_empty() => {
            return Err(format!(
                "its description is {} characters, more than 1024",
                d.chars().count()
            ))
        }
        Some(Value::String(_)) => return Err("its description is empty".into()),
        Some(_) => return Err("its description is not text".into()),
        None => return Err("its frontmatter has no description".into()),
    }
    match fm.get("compatibility") {
        None => {}
        Some(Value::String(c)) if (1..=500).contains(&c.chars().count()) => {}
        Some(_) => return Err("its compatibility is not text of 1–500 characters".into()),
    }
    for key in ["license", "allowed-tools"] {
        if fm.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("its {key} is not text"));
        }
    }
    match fm.get("metadata") {
        None => {}
        Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
        Some(_) => return Err("its metadata is not a map of text values".into()),
    }
    Ok(())
}

/// A loaded skill: its `SKILL.md` read (and checked) again, and its other files' paths.
pub fn load(skill: &LocalSkill) -> Result<(String, Vec<String>), String> {
    let (now, text) = read_skill(&skill.dir)?;
    if now.name != skill.name {
        return Err(format!("the skill \"{}\" is no longer there", skill.name));
    }
    Ok((text, files(&skill.dir)))
}

/// The file at `path` (relative to the skill's folder) of `skill`, as text: refused when the
/// path is absolute or climbs out (`..`), when it leads out of the folder once symlinks are
/// resolved, when it is not a file, when it is over [`MAX_FILE`] bytes or not UTF-8.
pub fn read_file(skill: &LocalSkill, path: &str) -> Result<String, String> {
    let rel = Path::new(path);
    if path.is_empty() {
        return Err("name a file of the skill".into());
    }
    if !rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "{path} is not a file of the skill \"{}\": give a path inside its folder, without .. \
             or a leading /",
            skill.name
        ));
    }
    let root = skill
        .dir
        .canonicalize()
        .map_err(|e| format!("the skill's folder cannot be read: {e}"))?;
    let real = root.join(rel).canonicalize().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("the skill \"{}\" has no file {path}", skill.name)
        } else {
            format!("{path} cannot be read: {e}")
        }
    })?;
    if !real.starts_with(&root) {
        return Err(format!(
            "{path} leads out of the skill \"{}\"'s folder (a symlink): it is not read",
            skill.name
        ));
    }
    if !real.is_file() {
        return Err(format!("{path} is not a file"));
    }
    read_text(&real)
}

/// A file's text, refused over [`MAX_FILE`] bytes or not UTF-8.
fn read_text(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let name = file_name(path);
    let mut bytes = Vec::new();
    // no more than the cap is read, even of a file that grew since its size was seen
    open_within_size(path)?
        .take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name} cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("{name} is more than {MAX_FILE} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| format!("{name} is not text (UTF-8)"))
}

/// The file at `path` opened, refused (with its size) when it is over [`MAX_FILE`] bytes.
fn open_within_size(path: &Path) -> Result<std::fs::File, String> {
    let name = file_name(path);
    let file = std::fs::File::open(path).map_err(|e| format!("{name} cannot be read: {e}"))?;
    let size = file
        .metadata()
        .map_err(|e| format!("{name} cannot be read: {e}"))?
        .len();
    if size > MAX_FILE {
        return Err(format!(
            "{name} is {size} bytes, more than the {MAX_FILE} a skill's file may be"
        ));
    }
    Ok(file)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The files of a skill's folder but its `SKILL.md`, relative to it (symlinks and hidden
/// entries left out; at most [`MAX_FILES`]), sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = e.file_type() else { continue };
            let path = rel.join(&name);
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file() && path != Path::new(SKILL_MD) {
                out.push(path.to_string_lossy().into_owned());
            }
            if out.len() >= MAX_FILES {
                break;
            }
        }
    }
    out.sort();
    out.truncate(MAX_FILES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(yaml: &str) -> Map<String, Value> {
        split_frontmatter(&format!("---\n{yaml}---\nbody\n"))
            .unwrap()
            .0
    }

    #[test]
    fn frontmatter_follows_the_agent_skills_format() {
        let ok = fm("name: pdf\ndescription: Fill PDF forms\nlicense: MIT\ncompatibility: needs python3\nmetadata:\n  author: me\nallowed-tools: Bash Read\n");
        assert_eq!(check_frontmatter(&ok, "pdf"), Ok(()));
        let cases = [
            ("name: pdf\ndescription: x\n", "other", "folder's name"),
            (
                "name: Pdf\ndescription: x\n",
                "Pdf",
                "not a valid skill name",
            ),
            ("name: pdf\n", "pdf", "no description"),
            ("name: pdf\ndescription: \"\"\n", "pdf", "empty"),
            ("description: x\n", "pdf", "no name"),
            (
                "name: pdf\ndescription: x\nmetadata: [1]\n",
                "pdf",
                "metadata",
            ),
            (
                "name: pdf\ndescription: x\ncompatibility: \"\"\n",
                "pdf",
                "compatibility",
            ),
        ];
        for (yaml, folder, why) in cases {
            let err = check_frontmatter(&fm(yaml), folder).unwrap_err();
            assert!(err.contains(why), "{yaml}: {err}");
        }
        let long = format!("name: pdf\ndescription: {}\n", "a".repeat(1025));
        assert!(check_frontmatter(&fm(&long), "pdf")
            .unwrap_err()
            .contains("1024"));
    }

    #[test]
    fn listing_reads_the_frontmatter_only_and_refuses_an_oversize_skill() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            std::fs::create_dir_all(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join(SKILL_MD), text).unwrap();
        };
        let head = "---\nname: long\ndescription: A long skill\n---\n";
        // a body longer than the part a listing reads: listed; loading reads it all
        write("long", &format!("{head}{}", "x".repeat(200 * 1024)));
        write(
            "huge",
            &format!(
                "---\nname: huge\ndescription: Too big\n---\n{}",
                "x".repeat(MAX_FILE as usize)
            ),
        );
        write(
            "unclosed",
            &format!(
                "---\nname: unclosed\ndescription: x\n{}",
                "y: z\n".repeat(20_000)
            ),
        );
        let listing = list(dir.path());
        let names: Vec<&str> = listing.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["long"]);
        let refused = listing.refused.join("\n");
        let huge = 40 + MAX_FILE; // its frontmatter block is 40 bytes
        assert!(
            refused.contains(&format!("huge: SKILL.md is {huge} bytes, more than")),
            "{refused}"
        );
        assert!(
            refused.contains("unclosed: SKILL.md's frontmatter block is not closed"),
            "{refused}"
        );
        let (text, files) = load(&listing.skills[0]).unwrap();
        assert_eq!(text.len(), head.len() + 200 * 1024);
        assert!(files.is_empty());
    }
}
