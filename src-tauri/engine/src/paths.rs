//! Where Switchboard keeps its files. The same folders Tauri uses for the app's identifier, so the
//! window and the headless CLI share config, conversations and the files sandbox.
//!
//! Private, atomic JSON writes, and `folder_name`: one folder name per name (letters, digits, `-`,
//! `_` kept, every other byte `%XX`; a long one cut with a hash), for servers' private folders and
//! bundles. **Invariant:** what the app keeps is its user's alone whatever the umask: its folders
//! are `0700` (`private_dir`, `private_app_dirs` at the window's start, tightening older ones), its
//! files `0600` (`write_private`, the database and its journal made `0600` before SQLite opens
//! them).

use std::path::PathBuf;

pub const APP_IDENTIFIER: &str = "dev.switchboard.desktop";

/// Conversations database, the files sandbox, logs.
pub fn data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(APP_IDENTIFIER)
}

/// `mcp.json`, `settings.json`.
pub fn config_dir() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(APP_IDENTIFIER)
}

/// Each sandboxed server's private folder (its temporary files) lives under `sandbox/` here.
pub fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(APP_IDENTIFIER)
}

/// The secrets file where there is no keyring (`secrets.json`, in a folder only the user may enter).
pub fn secrets_dir() -> PathBuf {
    data_dir().join("secrets")
}

pub fn database_file() -> PathBuf {
    data_dir().join("conversations.sqlite3")
}

pub fn mcp_config_file() -> PathBuf {
    config_dir().join("mcp.json")
}

pub fn settings_file() -> PathBuf {
    config_dir().join("settings.json")
}

/// Where an import dialog starts: Claude Desktop's config folder when it exists, else home.
pub fn import_start_dir() -> Option<PathBuf> {
    dirs::config_dir()
        .map(|d| d.join("Claude"))
        .filter(|d| d.is_dir())
        .or_else(dirs::home_dir)
}

/// Where an export dialog starts: the Documents folder when there is one.
pub fn documents_dir() -> Option<PathBuf> {
    dirs::document_dir()
        .filter(|d| d.is_dir())
        .or_else(dirs::home_dir)
}

/// Writes `keys` into the JSON object in `path`, keeping its other keys (a file that is not a
/// JSON object is replaced). Atomic (a temporary file, then rename) and private: the file is
/// 0600 and a folder it creates 0700, since settings and server configs can hold secrets.
pub fn write_json_merged(
    path: &std::path::Path,
    keys: serde_json::Map<String, serde_json::Value>,
) -> std::io::Result<()> {
    let mut doc = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| match v {
            serde_json::Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    doc.extend(keys);
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(doc))?;
    write_private(path, text.as_bytes())
}

/// Makes `dir` (and the folders above it that are missing) and leaves it `0700`, whatever the
/// umask and whatever it was (the app's config, data and cache folders, a server's private one).
pub fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        b.mode(0o700);
        b.create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    b.create(dir)
}

/// Makes the app's config, data and cache folders, `0700` whatever the umask (and tightens ones
/// an older version or another umask left open): what is inside is the user's alone.
pub fn private_app_dirs() -> std::io::Result<()> {
    for dir in [config_dir(), data_dir(), cache_dir()] {
        private_dir(&dir)?;
    }
    Ok(())
}

/// Leaves the file at `path` (when there is one) readable and writable by its owner only.
pub fn private_file(path: &std::path::Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// Why [`read_at_most`] gave no bytes.
#[derive(Debug, thiserror::Error)]
pub enum ReadAtMost {
    #[error("it is larger than {} MB", .limit / (1024 * 1024))]
    TooBig { limit: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A file's bytes, at most `limit` of them: the limit is kept while reading (never more than
/// `limit + 1` bytes are read), so a file that grows after its size was looked at, or is not a
/// regular file (a pipe, a device such as /dev/zero, whose size says 0), is refused rather than
/// read without end.
pub fn read_at_most(path: &std::path::Path, limit: u64) -> Result<Vec<u8>, ReadAtMost> {
    use std::io::Read;
    let f = std::fs::File::open(path)?;
    let hint = f.metadata().map(|m| m.len().min(limit)).unwrap_or(0);
    if f.metadata().is_ok_and(|m| m.len() > limit) {
        return Err(ReadAtMost::TooBig { limit });
    }
    let mut bytes = Vec::with_capacity(hint as usize);
    f.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadAtMost::TooBig { limit });
    }
    Ok(bytes)
}

/// Writes a file only its owner can read, atomically: `0600` in a `0700` folder whatever the
/// umask. Writes of the same file at once each go through a temporary file of their own (the
/// last rename wins; none fails for another's).
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static WRITES: AtomicU64 = AtomicU64::new(0);
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            private_dir(dir)?;
        }
    }
    let tmp = path.with_extension(format!(
        "{}.{}-{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        opts.mode(0o600);
        let mut f = opts.open(&tmp)?;
        private_file(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A folder name for `name` (a server's name, a bundle's): one name, one folder. Letters,
/// digits, `-` and `_` stay; every other byte becomes `%XX` (so `.c` and `_.c`, `a b` and `a_b`
/// never meet, and no name gives `.`, `..`, a hidden name or a `/`); the empty name is `%`. A
/// name whose folder name would be long keeps its first 80 characters and adds `~` and a hash
/// of the whole name (`~` appears in no other folder name).
pub fn folder_name(name: &str) -> String {
    const LONGEST: usize = 120;
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        return "%".into();
    }
    if out.len() <= LONGEST {
        return out;
    }
    use sha2::{Digest, Sha256};
    let mut cut = 80;
    // never inside a %XX
    while out[..cut].rfind('%').is_some_and(|i| i + 3 > cut) {
        cut -= 1;
    }
    let hash: String = Sha256::digest(name.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}~{hash}", &out[..cut])
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_is_read_up_to_its_limit_and_never_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![7u8; 1000]).unwrap();
        assert_eq!(super::read_at_most(&p, 1000).unwrap().len(), 1000);
        assert!(matches!(
            super::read_at_most(&p, 999),
            Err(super::ReadAtMost::TooBig { limit: 999 })
        ));
        // a size that says nothing (0), and no end: refused once past the limit
        let zero = std::path::Path::new("/dev/zero");
        assert!(matches!(
            super::read_at_most(zero, 4096),
            Err(super::ReadAtMost::TooBig { limit: 4096 })
        ));
    }

    use super::*;

    #[test]
    fn each_name_has_a_folder_of_its_own() {
        let names = [
            ".c", "_.c", "%2Ec", "a b", "a_b", "a+b", "a/b", "../x", "..", ".", "", "%", "files",
            "Files", "é", "e\u{301}",
        ];
        let folders: Vec<String> = names.iter().map(|n| folder_name(n)).collect();
        for (i, f) in folders.iter().enumerate() {
            assert!(
                !f.is_empty() && !f.starts_with('.') && !f.contains('/'),
                "{f}"
            );
            for (j, g) in folders.iter().enumerate() {
                assert!(
                    i == j || f != g,
                    "{:?} and {:?} share {f}",
                    names[i],
                    names[j]
                );
            }
        }
        assert_eq!(
            folder_name("files"),
            "files",
            "plain names stay as they were"
        );
        assert_eq!(folder_name("a b"), "a%20b");
        assert_eq!(folder_name(""), "%");
        // long names: short enough for a folder, still one each
        let long_a = "a".repeat(300);
        let long_b = format!("{}b", "a".repeat(299));
        let dotted = ".".repeat(200);
        for n in [&long_a, &long_b, &dotted] {
            let f = folder_name(n);
            assert!(f.len() <= 120 && f.contains('~'), "{f}");
            assert!(!f[..f.find('~').unwrap()].ends_with('%'), "{f}");
        }
        assert_ne!(folder_name(&long_a), folder_name(&long_b));
        assert!(!folder_name(&"a".repeat(120)).contains('~'));
    }

    #[test]
    fn writes_of_one_file_at_once_all_succeed_and_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cache/entry.json");
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                std::thread::spawn(move || {
                    (0..20)
                        .map(|_| write_private(&p, format!("{i}").as_bytes()))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap().unwrap();
        }
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.parse::<u32>().is_ok_and(|n| n < 8), "{text}");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("entry.json")]);
    }

    #[test]
    fn merged_writes_keep_other_keys_and_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/settings.json");
        write_json_merged(&p, serde_json::json!({"a": 1}).as_object().unwrap().clone()).unwrap();
        std::fs::write(&p, r#"{"a": 1, "theirs": true}"#).unwrap();
        write_json_merged(&p, serde_json::json!({"a": 2}).as_object().unwrap().clone()).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"a": 2, "theirs": true}));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&p), 0o600);
            assert_eq!(mode(p.parent().unwrap()), 0o700);
        }
    }

    /// Files and folders stay private whatever the umask (here none at all), in a child process
    /// (the umask is the whole process's).
    #[cfg(unix)]
    #[test]
    fn data_files_are_0600_and_folders_0700_whatever_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        if std::env::var_os("SWITCHBOARD_UMASK_CHILD").is_some() {
            let dir =
                std::path::PathBuf::from(std::env::var_os("SWITCHBOARD_UMASK_CHILD").unwrap());
            unsafe { libc::umask(0) };
            write_private(&dir.join("a/b/settings.json"), b"{}").unwrap();
            private_dir(&dir.join("data")).unwrap();
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(crate::store::Store::open(&dir.join("data/db.sqlite3")))
                .unwrap();
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        // an existing folder that was too open is closed
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::set_permissions(
            dir.path().join("data"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "paths::tests::data_files_are_0600_and_folders_0700_whatever_the_umask",
                "--test-threads=1",
            ])
            .env("SWITCHBOARD_UMASK_CHILD", dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let mode = |p: &str| {
            std::fs::metadata(dir.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("a"), 0o700);
        assert_eq!(mode("a/b"), 0o700);
        assert_eq!(mode("a/b/settings.json"), 0o600);
        assert_eq!(mode("data"), 0o700);
        assert_eq!(mode("data/db.sqlite3"), 0o600);
        for side in ["data/db.sqlite3-wal", "data/db.sqlite3-shm"] {
            if dir.path().join(side).exists() {
                assert_eq!(mode(side), 0o600, "{side}");
            }
        }
    }
}
