//! The `files` built-in server: list, read, write and delete files inside one sandbox folder.
//! A path is taken apart lexically (a `..` may not climb above the sandbox; an absolute path must
//! lie inside it), then opened one folder at a time from a descriptor of the sandbox, never
//! following a symbolic link (`O_NOFOLLOW` at every step): what is checked is what is acted on,
//! so a link swapped in between cannot lead outside. Reads and writes are bounded.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use serde_json::{json, Map, Value};

use super::{BuiltinServer, ToolResult};

/// Files larger than this are not read whole into a tool result.
const MAX_READ: u64 = 1024 * 1024;
/// The most one write may put in a file.
const MAX_WRITE: usize = 8 * 1024 * 1024;

pub struct Files {
    root: PathBuf,
    /// The sandbox folder, opened once: every path is opened from here.
    root_fd: OwnedFd,
}

/// How folders are opened on the way down: never through a link, never blocking.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

impl Files {
    /// Creates the sandbox folder if needed.
    pub fn new(root: PathBuf) -> std::io::Result<Self> {
        std::fs::create_dir_all(&root)?;
        let root = root.canonicalize()?;
        let root_fd = rustix::fs::open(&root, dir_flags(), Mode::empty())?;
        Ok(Files { root, root_fd })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn refused(&self, p: &str) -> String {
        format!(
            "Refused: \"{p}\" is outside the sandbox folder {}.",
            self.root.display()
        )
    }

    /// The names from the sandbox folder down to `p`, or why `p` is refused. Lexical only: the
    /// opening (below) refuses links.
    fn parts(&self, p: &str) -> Result<Vec<OsString>, String> {
        let given = Path::new(p);
        let rel = if given.is_absolute() {
            given
                .strip_prefix(&self.root)
                .map_err(|_| self.refused(p))?
        } else {
            given
        };
        let mut out: Vec<OsString> = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => out.push(n.to_os_string()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if out.pop().is_none() {
                        return Err(self.refused(p));
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(self.refused(p)),
            }
        }
        Ok(out)
    }

    /// Why an operation on `p` failed, in words.
    fn failed(&self, what: &str, p: &str, e: Errno) -> String {
        match e {
            Errno::LOOP => format!(
                "Refused: \"{p}\" goes through a symbolic link, which the sandbox does not follow."
            ),
            Errno::NOENT => format!("Cannot {what} \"{p}\": there is no such file or folder."),
            Errno::NOTDIR => format!("Cannot {what} \"{p}\": part of the path is not a folder."),
            e => format!("Cannot {what} \"{p}\": {}", std::io::Error::from(e)),
        }
    }

    /// The folder `dirs` names below the sandbox, opened without following links; with
    /// `create`, missing folders are made on the way.
    fn open_dir(&self, dirs: &[OsString], create: bool) -> Result<OwnedFd, Errno> {
        let mut cur = rustix::fs::openat(&self.root_fd, ".", dir_flags(), Mode::empty())?;
        for d in dirs {
            let next = match rustix::fs::openat(&cur, d.as_os_str(), dir_flags(), Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&cur, d.as_os_str(), Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e),
                    }
                    rustix::fs::openat(&cur, d.as_os_str(), dir_flags(), Mode::empty())?
                }
                // with O_DIRECTORY, a link gives ENOTDIR: say it was a link
                Err(Errno::NOTDIR)
                    if rustix::fs::statat(&cur, d.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|st| {
                            FileType::from_raw_mode(st.st_mode) == FileType::Symlink
                        }) =>
                {
                    return Err(Errno::LOOP)
                }
                r => r?,
            };
            cur = next;
        }
        Ok(cur)
    }

    fn shown(parts: &[OsString]) -> String {
        if parts.is_empty() {
            ".".into()
        } else {
            parts
                .iter()
                .map(|p| p.to_string_lossy())
                .collect::<Vec<_>>()
                .join("/")
        }
    }

    fn list(&self, path: &str) -> Result<String, String> {
        let parts = self.parts(path)?;
        let dir = self
            .open_dir(&parts, false)
            .map_err(|e| self.failed("list", path, e))?;
        let entries = rustix::fs::Dir::read_from(&dir).map_err(|e| self.failed("list", path, e))?;
        let mut rows: Vec<(String, String)> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| self.failed("list", path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let row = match rustix::fs::statat(&dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                    FileType::Directory => format!("{name}/"),
                    FileType::Symlink => format!("{name} (a symbolic link, not followed)"),
                    FileType::RegularFile => format!("{name} ({} bytes)", st.st_size),
                    _ => format!("{name} (not a regular file)"),
                },
                Err(_) => name.clone(),
            };
            rows.push((name, row));
        }
        rows.sort();
        if rows.is_empty() {
            return Ok(format!("{} is empty.", Self::shown(&parts)));
        }
        Ok(rows
            .into_iter()
            .map(|(_, r)| r)
            .collect::<Vec<_>>()
            .join("\n"))
    }

    fn read(&self, path: &str) -> Result<String, String> {
        let parts = self.parts(path)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err(format!("\"{path}\" is a folder; use list_files."));
        };
        let dir = self
            .open_dir(dirs, false)
            .map_err(|e| self.failed("read", path, e))?;
        // non-blocking: a FIFO put in the sandbox cannot hang the server
        let fd = rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map_err(|e| self.failed("read", path, e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| self.failed("read", path, e))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err(format!("\"{path}\" is a folder; use list_files.")),
            _ => return Err(format!("\"{path}\" is not a regular file.")),
        }
        if st.st_size as u64 > MAX_READ {
            return Err(format!(
                "\"{path}\" is {} bytes, more than the {MAX_READ}-byte limit.",
                st.st_size
            ));
        }
        // bounded: a file that grows after the check is still read only up to the limit
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(MAX_READ + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("Cannot read \"{path}\": {e}"))?;
        if bytes.len() as u64 > MAX_READ {
            return Err(format!(
                "\"{path}\" is more than the {MAX_READ}-byte limit."
            ));
        }
        String::from_utf8(bytes).map_err(|_| format!("\"{path}\" is not a text file."))
    }

    fn write(&self, path: &str, content: &str) -> Result<String, String> {
        if content.len() > MAX_WRITE {
            return Err(format!(
                "Refused: {} bytes is more than the {MAX_WRITE}-byte limit for one write.",
                content.len()
            ));
        }
        let parts = self.parts(path)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err("A file name is needed.".into());
        };
        let dir = self
            .open_dir(dirs, true)
            .map_err(|e| self.failed("write", path, e))?;
        let fd = rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| self.failed("write", path, e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| self.failed("write", path, e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(format!("\"{path}\" is not a regular file."));
        }
        let file = std::fs::File::from(fd);
        file.set_len(0)
            .and_then(|()| std::io::Write::write_all(&mut &file, content.as_bytes()))
            .map_err(|e| format!("Cannot write \"{path}\": {e}"))?;
        Ok(format!(
            "Wrote {} bytes to {}.",
            content.len(),
            Self::shown(&parts)
        ))
    }

    fn delete(&self, path: &str) -> Result<String, String> {
        let parts = self.parts(path)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err("Refused: the sandbox folder itself cannot be deleted.".into());
        };
        let dir = self
            .open_dir(dirs, false)
            .map_err(|e| self.failed("delete", path, e))?;
        let st = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| self.failed("delete", path, e))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => {
                return Err(format!(
                    "Refused: \"{path}\" is a symbolic link, which the sandbox does not follow."
                ))
            }
            FileType::Directory => rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::REMOVEDIR)
                .map_err(|e| {
                    format!(
                        "Cannot delete the folder \"{path}\" (only empty folders): {}",
                        std::io::Error::from(e)
                    )
                })?,
            _ => rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::empty())
                .map_err(|e| self.failed("delete", path, e))?,
        }
        Ok(format!("Deleted {}.", Self::shown(&parts)))
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
        assert!(
            f.root().join("file-link").symlink_metadata().is_ok(),
            "the link itself is left alone"
        );
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

    #[test]
    fn a_link_swapped_in_for_a_folder_is_not_followed_and_sizes_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("elsewhere")).unwrap();
        std::fs::write(d.path().join("elsewhere/secret.txt"), "s3cret").unwrap();
        let f = Files::new(d.path().join("box")).unwrap();
        // a folder the check would have passed, replaced by a link (as a race would)
        assert!(
            !call(
                &f,
                "write_file",
                json!({"path": "docs/a.txt", "content": "a"})
            )
            .1
        );
        std::fs::remove_dir_all(f.root().join("docs")).unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), f.root().join("docs")).unwrap();
        for (tool, args) in [
            ("read_file", json!({"path": "docs/secret.txt"})),
            (
                "write_file",
                json!({"path": "docs/secret.txt", "content": "pwned"}),
            ),
            ("delete_file", json!({"path": "docs/secret.txt"})),
            ("list_files", json!({"path": "docs"})),
        ] {
            let (t, e) = call(&f, tool, args.clone());
            assert!(e && t.starts_with("Refused"), "{tool} {args}: {t}");
        }
        assert_eq!(
            std::fs::read_to_string(d.path().join("elsewhere/secret.txt")).unwrap(),
            "s3cret"
        );
        // a link is listed as one, not followed
        assert!(call(&f, "list_files", json!({}))
            .0
            .contains("docs (a symbolic link, not followed)"));
        // writes and reads are bounded
        let big = "x".repeat(MAX_WRITE + 1);
        let (t, e) = call(&f, "write_file", json!({"path": "big.txt", "content": big}));
        assert!(e && t.contains("limit"), "{t}");
        std::fs::write(f.root().join("huge.txt"), vec![b'y'; MAX_READ as usize + 1]).unwrap();
        let (t, e) = call(&f, "read_file", json!({"path": "huge.txt"}));
        assert!(e && t.contains("limit"), "{t}");
        // a FIFO neither hangs a read nor is written to
        let fifo = f.root().join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let (t, e) = call(&f, "read_file", json!({"path": "pipe"}));
        assert!(e && t.contains("not a regular file"), "{t}");
        let (t, e) = call(&f, "write_file", json!({"path": "pipe", "content": "x"}));
        assert!(e, "{t}");
    }
}
