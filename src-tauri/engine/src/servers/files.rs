//! The `files` built-in server: list, read, write and delete files inside one sandbox folder.
//! Any path that leaves the sandbox, by `..`, an absolute path elsewhere, or a symlink, is refused.

use std::path::{Component, Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{BuiltinServer, ToolResult};

/// Files larger than this are not read whole into a tool result.
const MAX_READ: u64 = 1024 * 1024;

pub struct Files {
    root: PathBuf,
}

impl Files {
    /// Creates the sandbox folder if needed.
    pub fn new(root: PathBuf) -> std::io::Result<Self> {
        std::fs::create_dir_all(&root)?;
        Ok(Files {
            root: root.canonicalize()?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path for `p` (relative to the sandbox), or why it is refused.
    pub fn confine(&self, p: &str) -> Result<PathBuf, String> {
        let refused = || {
            format!(
                "Refused: \"{p}\" is outside the sandbox folder {}.",
                self.root.display()
            )
        };
        let given = Path::new(p);
        let rel = if given.is_absolute() {
            given
                .strip_prefix(&self.root)
                .map_err(|_| refused())?
                .to_path_buf()
        } else {
            given.to_path_buf()
        };
        // lexical: no `..` may climb above the root
        let mut out = self.root.clone();
        let mut depth = 0usize;
        for c in rel.components() {
            match c {
                Component::Normal(n) => {
                    out.push(n);
                    depth += 1;
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if depth == 0 {
                        return Err(refused());
                    }
                    out.pop();
                    depth -= 1;
                }
                Component::RootDir | Component::Prefix(_) => return Err(refused()),
            }
        }
        // physical: the deepest part that exists must resolve inside the root (catches symlinks)
        let mut probe = out.clone();
        loop {
            if probe.symlink_metadata().is_ok() {
                let real = probe.canonicalize().map_err(|_| refused())?;
                if !real.starts_with(&self.root) {
                    return Err(refused());
                }
                break;
            }
            if !probe.pop() {
                return Err(refused());
            }
        }
        Ok(out)
    }

    fn shown(&self, p: &Path) -> String {
        let rel = p.strip_prefix(&self.root).unwrap_or(p);
        if rel.as_os_str().is_empty() {
            ".".into()
        } else {
            rel.display().to_string()
        }
    }

    fn list(&self, path: &str) -> Result<String, String> {
        let dir = self.confine(path)?;
        let rd = std::fs::read_dir(&dir).map_err(|e| format!("Cannot list \"{path}\": {e}"))?;
        let mut entries: Vec<(String, bool, u64)> = rd
            .filter_map(Result::ok)
            .map(|e| {
                let md = e.metadata().ok();
                (
                    e.file_name().to_string_lossy().to_string(),
                    md.as_ref().is_some_and(|m| m.is_dir()),
                    md.map(|m| m.len()).unwrap_or(0),
                )
            })
            .collect();
        entries.sort();
        if entries.is_empty() {
            return Ok(format!("{} is empty.", self.shown(&dir)));
        }
        Ok(entries
            .iter()
            .map(|(n, d, s)| {
                if *d {
                    format!("{n}/")
                } else {
                    format!("{n} ({s} bytes)")
                }
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }

    fn read(&self, path: &str) -> Result<String, String> {
        let p = self.confine(path)?;
        let md = std::fs::metadata(&p).map_err(|e| format!("Cannot read \"{path}\": {e}"))?;
        if md.is_dir() {
            return Err(format!("\"{path}\" is a folder; use list_files."));
        }
        if md.len() > MAX_READ {
            return Err(format!(
                "\"{path}\" is {} bytes, more than the {MAX_READ}-byte limit.",
                md.len()
            ));
        }
        let bytes = std::fs::read(&p).map_err(|e| format!("Cannot read \"{path}\": {e}"))?;
        String::from_utf8(bytes).map_err(|_| format!("\"{path}\" is not a text file."))
    }

    fn write(&self, path: &str, content: &str) -> Result<String, String> {
        let p = self.confine(path)?;
        if p == self.root {
            return Err("A file name is needed.".into());
        }
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("Cannot create the folder for \"{path}\": {e}"))?;
        }
        std::fs::write(&p, content).map_err(|e| format!("Cannot write \"{path}\": {e}"))?;
        Ok(format!(
            "Wrote {} bytes to {}.",
            content.len(),
            self.shown(&p)
        ))
    }

    fn delete(&self, path: &str) -> Result<String, String> {
        let p = self.confine(path)?;
        if p == self.root {
            return Err("Refused: the sandbox folder itself cannot be deleted.".into());
        }
        let md =
            std::fs::symlink_metadata(&p).map_err(|e| format!("Cannot delete \"{path}\": {e}"))?;
        if md.is_dir() {
            std::fs::remove_dir(&p).map_err(|e| {
                format!("Cannot delete the folder \"{path}\" (only empty folders): {e}")
            })?;
        } else {
            std::fs::remove_file(&p).map_err(|e| format!("Cannot delete \"{path}\": {e}"))?;
        }
        Ok(format!("Deleted {}.", self.shown(&p)))
    }
}

fn schema(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn string_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!("'{key}' must be a string, got {other}")),
        None => Err(format!("missing string argument '{key}'")),
    }
}

impl BuiltinServer for Files {
    fn name(&self) -> &'static str {
        "files"
    }

    fn tools(&self) -> Vec<Value> {
        let path = json!({"type": "string", "description": "Path relative to the sandbox folder"});
        vec![
            json!({"name": "list_files", "description": "List the files and folders in a folder of the sandbox (default: its top).",
                   "inputSchema": schema(json!({"path": {"type": "string", "description": "Folder relative to the sandbox; default \".\""}}), &[]),
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "read_file", "description": "Read a text file from the sandbox.",
                   "inputSchema": schema(json!({"path": path}), &["path"]), "annotations": {"readOnlyHint": true}}),
            json!({"name": "write_file", "description": "Write (create or replace) a text file in the sandbox.",
                   "inputSchema": schema(json!({"path": path, "content": {"type": "string", "description": "The whole new content"}}), &["path", "content"]),
                   "annotations": {"readOnlyHint": false, "destructiveHint": true}}),
            json!({"name": "delete_file", "description": "Delete a file (or an empty folder) in the sandbox.",
                   "inputSchema": schema(json!({"path": path}), &["path"]),
                   "annotations": {"readOnlyHint": false, "destructiveHint": true}}),
        ]
    }

    fn call(&self, tool: &str, args: &Map<String, Value>) -> ToolResult {
        let r = match tool {
            "list_files" => match args.get("path") {
                None | Some(Value::Null) => self.list("."),
                Some(_) => string_arg(args, "path").and_then(|p| self.list(p)),
            },
            "read_file" => string_arg(args, "path").and_then(|p| self.read(p)),
            "write_file" => string_arg(args, "path")
                .and_then(|p| Ok((p, string_arg(args, "content")?)))
                .and_then(|(p, c)| self.write(p, c)),
            "delete_file" => string_arg(args, "path").and_then(|p| self.delete(p)),
            other => Err(format!("Unknown tool: {other}")),
        };
        match r {
            Ok(t) => ToolResult::ok(t),
            Err(e) => ToolResult::error(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(f: &Files, tool: &str, args: Value) -> (String, bool) {
        let r = f.call(tool, args.as_object().unwrap());
        (r.text, r.is_error)
    }

    #[test]
    fn write_read_list_delete_inside_the_sandbox() {
        let d = tempfile::tempdir().unwrap();
        let f = Files::new(d.path().join("box")).unwrap();
        assert_eq!(
            call(&f, "list_files", json!({})),
            (". is empty.".into(), false)
        );
        assert!(
            !call(
                &f,
                "write_file",
                json!({"path": "a/b.txt", "content": "héllo"})
            )
            .1
        );
        assert_eq!(
            call(&f, "read_file", json!({"path": "a/./b.txt"})),
            ("héllo".into(), false)
        );
        assert_eq!(
            call(&f, "list_files", json!({"path": "a"})).0,
            "b.txt (6 bytes)"
        );
        assert_eq!(call(&f, "list_files", json!({})).0, "a/");
        assert!(!call(&f, "delete_file", json!({"path": "a/b.txt"})).1);
        assert!(call(&f, "read_file", json!({"path": "a/b.txt"})).1);
    }

    #[test]
    fn escapes_by_dotdot_absolute_path_or_symlink_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("secret.txt");
        std::fs::write(&outside, "s3cret").unwrap();
        let f = Files::new(d.path().join("box")).unwrap();
        std::os::unix::fs::symlink(d.path(), f.root().join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, f.root().join("file-link")).unwrap();
        for (tool, args) in [
            ("read_file", json!({"path": "../secret.txt"})),
            ("read_file", json!({"path": "a/../../secret.txt"})),
            ("read_file", json!({"path": outside.to_str().unwrap()})),
            ("read_file", json!({"path": "link/secret.txt"})),
            ("read_file", json!({"path": "file-link"})),
            (
                "write_file",
                json!({"path": "link/new.txt", "content": "x"}),
            ),
            ("write_file", json!({"path": "../new.txt", "content": "x"})),
            ("delete_file", json!({"path": "file-link"})),
            ("delete_file", json!({"path": "."})),
            ("list_files", json!({"path": "link"})),
        ] {
            let (t, e) = call(&f, tool, args.clone());
            assert!(e, "{tool} {args} was allowed: {t}");
            assert!(t.starts_with("Refused"), "{tool} {args}: {t}");
        }
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "s3cret");
        assert!(!d.path().join("new.txt").exists());
        // an absolute path inside the sandbox is fine
        let inside = f.root().join("ok.txt");
        assert!(
            !call(
                &f,
                "write_file",
                json!({"path": inside.to_str().unwrap(), "content": "x"})
            )
            .1
        );
    }
}
