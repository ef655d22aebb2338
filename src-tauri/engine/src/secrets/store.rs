//! Where secrets are kept: the system keyring (Secret Service) and the fallback file.

use super::*;

/// A place secrets are kept, blocking (called on tokio's blocking pool by [`Secrets`]). The
/// system keyring and the file implement it; tests can give [`Secrets`] either.
pub trait SecretStore: Send + Sync {
    /// The value stored under `id`; `None` when there is none.
    fn get(&self, id: &str) -> Result<Option<String>, SecretError>;
    /// Stores `value` under `id` (replacing one there); `label` says what it is to a person
    /// looking at the keyring.
    fn set(&self, id: &str, label: &str, value: &str) -> Result<(), SecretError>;
    /// Removes `id`; nothing there is fine.
    fn delete(&self, id: &str) -> Result<(), SecretError>;
}

/// The fallback: one JSON file, 0600, in a folder that is 0700 (`{"secrets": {"<id>": {"label",
/// "value"}}}`), written atomically. A file or folder found readable by others is made private
/// again before it is used.
pub struct FileStore {
    dir: PathBuf,
    lock: Mutex<()>,
}

#[derive(Serialize, Deserialize, Default)]
struct FileDoc {
    #[serde(default)]
    secrets: BTreeMap<String, FileEntry>,
}

#[derive(Serialize, Deserialize)]
struct FileEntry {
    label: String,
    value: String,
}

impl FileStore {
    pub fn new(dir: PathBuf) -> FileStore {
        FileStore {
            dir,
            lock: Mutex::new(()),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    fn error(&self, e: impl std::fmt::Display) -> SecretError {
        SecretError::File {
            path: self.path().display().to_string(),
            detail: e.to_string(),
        }
    }

    /// Makes the folder and file private if they are not (0700, 0600).
    fn make_private(&self) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for (p, mode) in [(self.dir.clone(), 0o700), (self.path(), 0o600)] {
                if let Ok(m) = std::fs::metadata(&p) {
                    if m.permissions().mode() & 0o777 != mode {
                        tracing::warn!("{} was not private; made it {mode:o}", p.display());
                        let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode));
                    }
                }
            }
        }
    }

    fn read(&self) -> Result<FileDoc, SecretError> {
        self.make_private();
        match std::fs::read_to_string(self.path()) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| self.error(e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileDoc::default()),
            Err(e) => Err(self.error(e)),
        }
    }

    fn write(&self, doc: &FileDoc) -> Result<(), SecretError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|e| self.error(e))?;
        }
        self.make_private();
        let text = serde_json::to_string_pretty(doc).expect("secrets serialize");
        crate::paths::write_private(&self.path(), text.as_bytes()).map_err(|e| self.error(e))
    }

    /// How many secrets the file holds.
    pub fn count(&self) -> usize {
        let _g = self.lock.lock().unwrap();
        self.read().map(|d| d.secrets.len()).unwrap_or(0)
    }
}

impl SecretStore for FileStore {
    fn get(&self, id: &str) -> Result<Option<String>, SecretError> {
        let _g = self.lock.lock().unwrap();
        Ok(self.read()?.secrets.remove(id).map(|e| e.value))
    }

    fn set(&self, id: &str, label: &str, value: &str) -> Result<(), SecretError> {
        let _g = self.lock.lock().unwrap();
        let mut doc = self.read()?;
        doc.secrets.insert(
            id.to_string(),
            FileEntry {
                label: label.to_string(),
                value: value.to_string(),
            },
        );
        self.write(&doc)
    }

    fn delete(&self, id: &str) -> Result<(), SecretError> {
        let _g = self.lock.lock().unwrap();
        let mut doc = self.read()?;
        if doc.secrets.remove(id).is_some() {
            self.write(&doc)?;
        }
        Ok(())
    }
}

/// The system keyring: the Secret Service (D-Bus), items in its default collection with the
/// attributes `service` = [`KEYRING_SERVICE`] and `username` = the id.
#[cfg(target_os = "linux")]
pub struct KeyringStore {
    store: Arc<zbus_secret_service_keyring_store::Store>,
}

#[cfg(target_os = "linux")]
impl KeyringStore {
    /// Connects to the Secret Service on the session bus (blocking; it may start the keyring
    /// daemon through D-Bus activation).
    pub fn connect() -> Result<KeyringStore, SecretError> {
        let store = zbus_secret_service_keyring_store::Store::new()
            .map_err(|e| SecretError::Keyring(e.to_string()))?;
        Ok(KeyringStore { store })
    }

    fn entry(&self, id: &str, label: Option<&str>) -> Result<keyring_core::Entry, SecretError> {
        use keyring_core::api::CredentialStoreApi;
        let mods = label.map(|l| std::collections::HashMap::from([("label", l)]));
        self.store
            .build(KEYRING_SERVICE, id, mods.as_ref())
            .map_err(|e| SecretError::Keyring(e.to_string()))
    }
}

#[cfg(target_os = "linux")]
impl SecretStore for KeyringStore {
    fn get(&self, id: &str) -> Result<Option<String>, SecretError> {
        match self.entry(id, None)?.get_password() {
            Ok(v) => Ok(Some(v)),
            Err(keyring_core::Error::NoEntry) => Ok(None),
            Err(e) => Err(SecretError::Keyring(e.to_string())),
        }
    }

    fn set(&self, id: &str, label: &str, value: &str) -> Result<(), SecretError> {
        self.entry(id, Some(label))?
            .set_password(value)
            .map_err(|e| SecretError::Keyring(e.to_string()))
    }

    fn delete(&self, id: &str) -> Result<(), SecretError> {
        match self.entry(id, None)?.delete_credential() {
            Ok(()) | Err(keyring_core::Error::NoEntry) => Ok(()),
            Err(e) => Err(SecretError::Keyring(e.to_string())),
        }
    }
}
