//! Where Switchboard keeps its files. The same folders Tauri uses for the app's identifier, so the
//! window and the headless CLI share config, conversations and the files sandbox.

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

/// Writes a file only its owner can read, atomically: `0600` in a `0700` folder whatever the
/// umask.
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            private_dir(dir)?;
        }
    }
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    opts.mode(0o600);
    let mut f = opts.open(&tmp)?;
    private_file(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

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
