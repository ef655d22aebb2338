//! A bundle's zip, read with care: every entry's name is a plain relative path (no absolute path,
//! no `..`, no backslash), every entry a file or a folder (no symlink, no device, nothing
//! encrypted), and the archive within limits (entries, sizes, compression ratio) — checked from
//! the central directory before anything is written, and counted again while unpacking, where a
//! size the directory understated stops it. The `zip` crate reads the format.
//!
//! The limits (`LIMITS`): at most 50,000 entries, 1 GB, 512 MB a file, a compression ratio of 200
//! over 1 MB.

use std::collections::BTreeSet;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

/// How much a bundle may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_entries: usize,
    /// Uncompressed, all entries.
    pub max_total: u64,
    /// Uncompressed, one entry.
    pub max_file: u64,
    /// Uncompressed size over compressed size, for an entry over `ratio_floor` bytes.
    pub max_ratio: u64,
    pub ratio_floor: u64,
}

pub const LIMITS: Limits = Limits {
    max_entries: 50_000,
    max_total: 1024 * 1024 * 1024,
    max_file: 512 * 1024 * 1024,
    max_ratio: 200,
    ratio_floor: 1024 * 1024,
};

/// Why a bundle's archive is refused.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("it is not a zip archive ({0})")]
    NotZip(String),
    #[error("it holds \"{name}\": {why}")]
    Entry { name: String, why: &'static str },
    #[error("it holds more than {0} files")]
    TooMany(usize),
    #[error("it unpacks to more than {} MB", .0 / (1024 * 1024))]
    TooBig(u64),
    #[error("\"{0}\" unpacks to far more than it takes in the archive (a zip bomb)")]
    Bomb(String),
    #[error("it has no {0}")]
    Missing(String),
    #[error("it could not be unpacked: {0}")]
    Io(#[from] std::io::Error),
    #[error("\"{name}\" could not be unpacked: {error}")]
    Unpack { name: String, error: std::io::Error },
}

/// One entry, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub index: usize,
    pub path: PathBuf,
    pub dir: bool,
    pub executable: bool,
    pub size: u64,
}

/// A bundle's archive, its entries checked.
pub struct Archive<'a> {
    zip: zip::ZipArchive<Cursor<&'a [u8]>>,
    pub entries: Vec<Entry>,
}

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

impl<'a> Archive<'a> {
    /// Reads the central directory and checks every entry.
    pub fn open(bytes: &'a [u8], limits: Limits) -> Result<Archive<'a>, ArchiveError> {
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| ArchiveError::NotZip(e.to_string()))?;
        if zip.len() > limits.max_entries {
            return Err(ArchiveError::TooMany(limits.max_entries));
        }
        let mut entries = Vec::with_capacity(zip.len());
        let mut seen = BTreeSet::new();
        let mut total: u64 = 0;
        for index in 0..zip.len() {
            let f = zip
                .by_index_raw(index)
                .map_err(|e| ArchiveError::NotZip(e.to_string()))?;
            let raw = String::from_utf8_lossy(f.name_raw()).into_owned();
            let bad = |why| ArchiveError::Entry {
                name: raw.chars().take(200).collect(),
                why,
            };
            let name = f.name().map_err(|_| bad("a name that cannot be read"))?;
            let path = clean_path(&name).map_err(bad)?;
            let mode = f.unix_mode().unwrap_or(0);
            let kind = mode & S_IFMT;
            if f.is_symlink() || kind == S_IFLNK {
                return Err(bad("a symbolic link"));
            }
            let dir = f.is_dir() || kind == S_IFDIR;
            if kind != 0 && kind != S_IFREG && kind != S_IFDIR {
                return Err(bad("a device or other special file"));
            }
            if f.encrypted() {
                return Err(bad("encrypted content"));
            }
            if !seen.insert(path.clone()) {
                return Err(bad("a name used twice"));
            }
            let size = f.size();
            if size > limits.max_file {
                return Err(ArchiveError::TooBig(limits.max_file));
            }
            total = total.saturating_add(size);
            if total > limits.max_total {
                return Err(ArchiveError::TooBig(limits.max_total));
            }
            if size > limits.ratio_floor && size / f.compressed_size().max(1) > limits.max_ratio {
                return Err(ArchiveError::Bomb(raw));
            }
            entries.push(Entry {
                index,
                path,
                dir,
                executable: !dir && mode & 0o111 != 0,
                size,
            });
        }
        // a folder and a file of the same name cannot both be unpacked
        for e in entries.iter().filter(|e| !e.dir) {
            if e.path.ancestors().skip(1).any(|a| {
                entries
                    .iter()
                    .any(|o| !o.dir && o.path == a && !a.as_os_str().is_empty())
            }) {
                return Err(ArchiveError::Entry {
                    name: e.path.display().to_string(),
                    why: "a file inside another file",
                });
            }
        }
        Ok(Archive { zip, entries })
    }

    pub fn find(&self, path: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| !e.dir && e.path == Path::new(path))
    }

    /// The whole of a (small) file.
    pub fn read(&mut self, path: &str, max: u64) -> Result<Vec<u8>, ArchiveError> {
        let e = self
            .find(path)
            .cloned()
            .ok_or_else(|| ArchiveError::Missing(path.into()))?;
        if e.size > max {
            return Err(ArchiveError::TooBig(max));
        }
        let f = self
            .zip
            .by_index(e.index)
            .map_err(|err| ArchiveError::NotZip(err.to_string()))?;
        let mut out = Vec::with_capacity(e.size as usize);
        f.take(max + 1).read_to_end(&mut out)?;
        if out.len() as u64 != e.size {
            return Err(ArchiveError::Entry {
                name: path.into(),
                why: "a size other than its header says",
            });
        }
        Ok(out)
    }

    /// Unpacks everything into `dest`, which must not exist yet (it is made, private to the
    /// user). A failure leaves `dest` half-made: the caller removes it.
    pub fn unpack(&mut self, dest: &Path, limits: Limits) -> Result<(), ArchiveError> {
        make_dir(dest)?;
        let mut total: u64 = 0;
        for e in self.entries.clone() {
            let target = dest.join(&e.path);
            if e.dir {
                make_dirs(dest, &e.path)?;
                continue;
            }
            if let Some(parent) = e.path.parent() {
                make_dirs(dest, parent)?;
            }
            let mut f = self
                .zip
                .by_index(e.index)
                .map_err(|err| ArchiveError::NotZip(err.to_string()))?;
            let mut out = create_new(&target, e.executable)?;
            // never more than the directory said, whatever the stream holds
            let mut limited = (&mut f).take(e.size + 1);
            let n =
                std::io::copy(&mut limited, &mut out).map_err(|error| ArchiveError::Unpack {
                    name: e.path.display().to_string(),
                    error,
                })?;
            if n != e.size {
                return Err(ArchiveError::Entry {
                    name: e.path.display().to_string(),
                    why: "more or less content than its header says",
                });
            }
            total += n;
            if total > limits.max_total {
                return Err(ArchiveError::TooBig(limits.max_total));
            }
            out.flush()?;
        }
        Ok(())
    }
}

/// An entry's name as a relative path: no absolute path, no drive, no `..`, no backslash, no
/// NUL; `.` and empty parts dropped.
pub fn clean_path(name: &str) -> Result<PathBuf, &'static str> {
    if name.contains('\0') {
        return Err("a NUL in its name");
    }
    if name.contains('\\') {
        return Err("a backslash in its name");
    }
    if name.starts_with('/') {
        return Err("an absolute path");
    }
    let mut out = PathBuf::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("a path that leaves the bundle (..)"),
            p if p.contains(':') && out.as_os_str().is_empty() => {
                return Err("an absolute path (a drive)")
            }
            p => out.push(p),
        }
    }
    if out.as_os_str().is_empty() {
        return Err("an empty name");
    }
    Ok(out)
}

fn make_dir(p: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o755);
    b.create(p)
}

/// Makes `rel`'s folders under `root`, one at a time, never through a link.
fn make_dirs(root: &Path, rel: &Path) -> std::io::Result<()> {
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("{} is not a folder", at.display()),
                ))
            }
            Err(_) => make_dir(&at)?,
        }
    }
    Ok(())
}

fn create_new(p: &Path, executable: bool) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, if executable { 0o755 } else { 0o644 });
    o.open(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_relative_paths() {
        assert_eq!(
            clean_path("server/index.js").unwrap(),
            PathBuf::from("server/index.js")
        );
        assert_eq!(clean_path("./a//b/").unwrap(), PathBuf::from("a/b"));
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a\\..\\x",
            "C:/x",
            "a\0b",
            "",
            "./",
        ] {
            assert!(clean_path(bad).is_err(), "{bad:?}");
        }
    }
}
