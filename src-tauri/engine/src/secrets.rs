//! Secrets: the API keys of OpenAI-compatible providers, the HTTP headers of MCP servers, and the
//! environment values the user marks secret.
//!
//! They live in the OS keyring — the Secret Service on Linux (GNOME Keyring, KWallet, KeePassXC),
//! reached over D-Bus — or, where there is none (no session bus, no provider on it, or it fails or
//! does not answer in time), in a file only the user can read: `secrets.json`, 0600, in a 0700
//! folder of the app's data dir. The config files (`settings.json`, `mcp.json`) hold a
//! [reference](SecretValue::Stored) in the value's place: `{"secret": "keyring:<id>"}` or
//! `{"secret": "file:<id>"}`. A plain string there is a value typed by hand: it keeps working,
//! and the next save that touches the file moves it into the store (for headers and API keys,
//! which are always secret; an environment value is secret only when the user marks it so).
//!
//! A value is read at the moment it is used — a server started with it in its environment or
//! headers, a request sent to an LLM — and goes nowhere else: not into a file, a log line, a view
//! the window receives (those get [`SecretValue::redacted`]: where it is, never what), or an
//! export (a placeholder, [`EXPORT_PLACEHOLDER`]).
//!
//! Every call into the keyring is blocking D-Bus I/O that may wait on the user (an unlock prompt):
//! it runs on tokio's blocking pool, with a timeout, and never on the runtime's threads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The keyring items' `service` attribute (their `username` is the secret's id):
/// `secret-tool search --all service dev.switchboard.desktop` lists them.
pub const KEYRING_SERVICE: &str = crate::paths::APP_IDENTIFIER;

/// What an export writes in a secret's place. An import of it leaves the value unset (and says so).
pub const EXPORT_PLACEHOLDER: &str = "<secret: set it after import>";

/// The fallback file, in [`Secrets::file_path`]'s folder.
const FILE_NAME: &str = "secrets.json";

/// A value in a config that may be a secret.
///
/// In a file: a plain string, or `{"secret": "<store>:<id>"}`. From the window: a plain string
/// (a value typed), `{"newSecret": "…"}` (a value typed to be kept secret), or `{"secret": …}`
/// meaning "keep this field's current value" — whatever the string: the window never names a
/// stored secret, it can only keep the one a field has (see [`adopt`]).
#[derive(Clone, PartialEq, Eq)]
pub enum SecretValue {
    /// A value as it was typed. Secret for headers and API keys (moved into the store on the
    /// next save); for an environment variable, a value that is not secret.
    Plain(String),
    /// In the secret store; the reference (`keyring:<id>`, `file:<id>`).
    Stored(String),
    /// A value to store, from the window. Never written: saving stores it and writes a
    /// reference (and were it ever serialized, it would be written without its value).
    New(String),
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Repr {
    Plain(String),
    Stored {
        secret: String,
    },
    New {
        #[serde(rename = "newSecret")]
        new_secret: String,
    },
}

impl Serialize for SecretValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SecretValue::Plain(v) => Repr::Plain(v.clone()),
            SecretValue::Stored(r) => Repr::Stored { secret: r.clone() },
            // never the value
            SecretValue::New(_) => Repr::Stored {
                secret: "unsaved".into(),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SecretValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Plain(v) => SecretValue::Plain(v),
            Repr::Stored { secret } => SecretValue::Stored(secret),
            Repr::New { new_secret } => SecretValue::New(new_secret),
        })
    }
}

/// Never a value, so a config can be logged or shown in a test failure.
impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretValue::Plain(v) => write!(f, "Plain(<{} chars>)", v.chars().count()),
            SecretValue::Stored(r) => write!(f, "Stored({r})"),
            SecretValue::New(v) => write!(f, "New(<{} chars>)", v.chars().count()),
        }
    }
}

impl From<&str> for SecretValue {
    fn from(v: &str) -> Self {
        SecretValue::Plain(v.to_string())
    }
}

impl From<String> for SecretValue {
    fn from(v: String) -> Self {
        SecretValue::Plain(v)
    }
}

impl SecretValue {
    /// The value itself, when it is written in the config (not in the store).
    pub fn plain(&self) -> Option<&str> {
        match self {
            SecretValue::Plain(v) | SecretValue::New(v) => Some(v),
            SecretValue::Stored(_) => None,
        }
    }

    /// The reference, when it is in the store.
    pub fn reference(&self) -> Option<&str> {
        match self {
            SecretValue::Stored(r) => Some(r),
            _ => None,
        }
    }

    /// As a view for the window shows it: where a secret is, never what it is. `always`: the
    /// field is always secret (a header, an API key), so a plain value there is hidden too.
    /// `{"secret": "keyring" | "file" | "config"}` ("config": typed into the config file by
    /// hand, moved into the store on the next save); a plain value that is not secret as is.
    pub fn redacted(&self, always: bool) -> SecretValue {
        match self {
            SecretValue::Plain(v) if !always => SecretValue::Plain(v.clone()),
            SecretValue::Plain(_) => SecretValue::Stored("config".into()),
            SecretValue::Stored(r) => SecretValue::Stored(
                match parse_reference(r) {
                    Some((place, _)) => place.as_str(),
                    None => "unknown",
                }
                .into(),
            ),
            SecretValue::New(_) => SecretValue::Stored("unsaved".into()),
        }
    }

    /// As an export writes it: a plain value that is not secret as is, else [`EXPORT_PLACEHOLDER`].
    pub fn exported(&self, always: bool) -> String {
        match self {
            SecretValue::Plain(v) if !always => v.clone(),
            _ => EXPORT_PLACEHOLDER.into(),
        }
    }

    /// A value that came from a file someone else wrote (an import): plain text only. A reference
    /// (it could name one of this user's secrets) or the export placeholder is no value.
    pub fn from_import(v: &serde_json::Value) -> Option<SecretValue> {
        match v {
            serde_json::Value::String(s) if s == EXPORT_PLACEHOLDER => None,
            serde_json::Value::String(s) => Some(SecretValue::Plain(s.clone())),
            serde_json::Value::Null
            | serde_json::Value::Object(_)
            | serde_json::Value::Array(_) => None,
            other => Some(SecretValue::Plain(other.to_string())),
        }
    }
}

/// Where a stored secret is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    Keyring,
    File,
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Keyring => "keyring",
            Place::File => "file",
        }
    }
}

/// `keyring:<id>` / `file:<id>`; ids are letters, digits, `-` and `_`.
pub fn parse_reference(r: &str) -> Option<(Place, &str)> {
    let (place, id) = r.split_once(':')?;
    let place = match place {
        "keyring" => Place::Keyring,
        "file" => Place::File,
        _ => return None,
    };
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then_some((place, id))
}

fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Environment variable names that usually hold a secret (an imported server's are kept as
/// secrets; the window ticks "secret" for them as they are typed).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "CREDENTIAL",
        "AUTH",
        "PAT",
    ]
    .iter()
    .any(|w| upper.split('_').any(|part| part == *w) || upper.ends_with(w) && *w != "PAT")
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum SecretError {
    /// The keyring could not be reached, or failed.
    #[error("the keyring failed: {0}")]
    Keyring(String),
    /// The keyring did not answer in time (it may be waiting for the user to unlock it).
    #[error("the keyring did not answer within {0} s (is it waiting to be unlocked?)")]
    TimedOut(u64),
    /// The secrets file could not be read or written.
    #[error("the secrets file {path}: {detail}")]
    File { path: String, detail: String },
    /// The reference names nothing in its store (deleted there, or the config was copied from
    /// another computer).
    #[error("{0} is not in the {1} any more: set it again")]
    Missing(String, &'static str),
    /// The reference is not one Switchboard wrote.
    #[error("\"{0}\" is not a secret reference (keyring:<id> or file:<id>)")]
    BadReference(String),
    /// A secret names the keyring, and there is none here.
    #[error("{0} is in the keyring, which is not available: {1}")]
    NoKeyring(String, String),
    /// The window asked to keep a value that is not there (its view is out of date).
    #[error("the {0} has no value to keep: enter it again")]
    NothingToKeep(String),
}

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

/// How long to wait for the keyring.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// To connect (D-Bus activation of the daemon included).
    pub connect: Duration,
    /// For one read, write or delete: long, since the keyring may ask the user to unlock it.
    pub operation: Duration,
    /// After the keyring was found unavailable, how long before it is tried again.
    pub retry_after: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(5),
            operation: Duration::from_secs(120),
            retry_after: Duration::from_secs(60),
        }
    }
}

/// Which keyring [`Secrets`] uses.
enum Source {
    /// The system's, when it has one (Linux: the Secret Service on the session bus).
    System,
    /// This one (tests).
    Given(Arc<dyn SecretStore>),
    /// None: always the file.
    Never(String),
}

enum KeyringState {
    /// Not tried yet.
    Unknown,
    Ready(Arc<dyn SecretStore>),
    Unavailable {
        why: String,
        at: Instant,
    },
}

/// Where new secrets go, and why, for the settings screen's note.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretsStatus {
    /// `keyring`, `file` (no keyring: see `reason`), or `unknown` (not asked yet).
    pub store: StatusPlace,
    /// The fallback file.
    pub file: String,
    /// Why the keyring is not used, when it is not.
    pub reason: Option<String>,
    /// How many secrets the file holds.
    pub in_file: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusPlace {
    Keyring,
    File,
    Unknown,
}

struct Inner {
    file: Arc<FileStore>,
    source: Source,
    state: Mutex<KeyringState>,
    /// One connection attempt at a time.
    connecting: tokio::sync::Mutex<()>,
    timeouts: Timeouts,
}

/// The app's secrets: the keyring when there is one, else the file. Cheap to clone (one shared
/// state). Creating it does nothing: the keyring is asked for at the first use, or by
/// [`Secrets::probe`].
#[derive(Clone)]
pub struct Secrets {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("file", &self.inner.file.path())
            .finish_non_exhaustive()
    }
}

/// A session bus to ask: `DBUS_SESSION_BUS_ADDRESS`, else the one at `$XDG_RUNTIME_DIR/bus`
/// (where zbus looks next).
fn session_bus_configured() -> bool {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|a| !a.is_empty()) {
        return true;
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{}", unsafe { libc::geteuid() })));
    runtime.join("bus").exists()
}

impl Secrets {
    /// Secrets in the system keyring when there is one, else in `dir/secrets.json`.
    pub fn new(dir: PathBuf) -> Secrets {
        Secrets::with_source(dir, Source::System)
    }

    /// The app's: its data dir's `secrets/` folder for the fallback.
    pub fn for_app() -> Secrets {
        Secrets::new(crate::paths::secrets_dir())
    }

    /// Secrets in `store` (a test's keyring), with `dir` as the fallback.
    pub fn with_store(dir: PathBuf, store: Arc<dyn SecretStore>) -> Secrets {
        Secrets::with_source(dir, Source::Given(store))
    }

    /// Secrets only ever in `dir/secrets.json`; `why` is what the status says.
    pub fn file_only(dir: PathBuf, why: &str) -> Secrets {
        Secrets::with_source(dir, Source::Never(why.to_string()))
    }

    fn with_source(dir: PathBuf, source: Source) -> Secrets {
        Secrets {
            inner: Arc::new(Inner {
                file: Arc::new(FileStore::new(dir)),
                source,
                state: Mutex::new(KeyringState::Unknown),
                connecting: tokio::sync::Mutex::new(()),
                timeouts: Timeouts::default(),
            }),
        }
    }

    /// The same, waiting for the keyring as `timeouts` say (before any use).
    pub fn with_timeouts(self, timeouts: Timeouts) -> Secrets {
        let inner = Arc::try_unwrap(self.inner)
            .ok()
            .expect("timeouts are set before the secrets are shared");
        Secrets {
            inner: Arc::new(Inner { timeouts, ..inner }),
        }
    }

    /// The fallback file.
    pub fn file_path(&self) -> PathBuf {
        self.inner.file.path()
    }

    /// Where new secrets go now, for the settings screen; no I/O but counting the file's.
    pub fn status(&self) -> SecretsStatus {
        let (store, reason) = match &*self.inner.state.lock().unwrap() {
            KeyringState::Ready(_) => (StatusPlace::Keyring, None),
            KeyringState::Unavailable { why, .. } => (StatusPlace::File, Some(why.clone())),
            KeyringState::Unknown => match &self.inner.source {
                Source::Never(why) => (StatusPlace::File, Some(why.clone())),
                _ => (StatusPlace::Unknown, None),
            },
        };
        SecretsStatus {
            store,
            file: self.file_path().display().to_string(),
            reason,
            in_file: self.inner.file.count(),
        }
    }

    /// Asks for the keyring now (at most [`Timeouts::connect`]); where new secrets go.
    pub async fn probe(&self) -> Place {
        match self.keyring().await {
            Some(_) => Place::Keyring,
            None => Place::File,
        }
    }

    fn unavailable(&self, why: String) {
        tracing::warn!(
            "no keyring ({why}); secrets are kept in {}",
            self.file_path().display()
        );
        *self.inner.state.lock().unwrap() = KeyringState::Unavailable {
            why,
            at: Instant::now(),
        };
    }

    /// The keyring, connecting to it if that was not tried lately.
    async fn keyring(&self) -> Option<Arc<dyn SecretStore>> {
        let fresh = |s: &Secrets| match &*s.inner.state.lock().unwrap() {
            KeyringState::Ready(k) => Some(Some(k.clone())),
            KeyringState::Unavailable { at, .. } if at.elapsed() < s.inner.timeouts.retry_after => {
                Some(None)
            }
            _ => None,
        };
        if let Some(known) = fresh(self) {
            return known;
        }
        let _one = self.inner.connecting.lock().await;
        if let Some(known) = fresh(self) {
            return known;
        }
        let connected: Result<Arc<dyn SecretStore>, String> = match &self.inner.source {
            Source::Never(why) => Err(why.clone()),
            Source::Given(k) => Ok(k.clone()),
            Source::System => self.connect_system().await,
        };
        match connected {
            Ok(k) => {
                *self.inner.state.lock().unwrap() = KeyringState::Ready(k.clone());
                Some(k)
            }
            Err(why) => {
                self.unavailable(why);
                None
            }
        }
    }

    #[cfg(target_os = "linux")]
    async fn connect_system(&self) -> Result<Arc<dyn SecretStore>, String> {
        if !session_bus_configured() {
            return Err(
                "there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)".into(),
            );
        }
        let wait = self.inner.timeouts.connect;
        match tokio::time::timeout(wait, tokio::task::spawn_blocking(KeyringStore::connect)).await {
            Ok(Ok(Ok(k))) => Ok(Arc::new(k)),
            Ok(Ok(Err(e))) => Err(match e {
                SecretError::Keyring(d) => format!("no Secret Service answered: {d}"),
                e => e.to_string(),
            }),
            Ok(Err(e)) => Err(format!("connecting to the keyring failed: {e}")),
            Err(_) => Err(format!(
                "the Secret Service did not answer within {} s",
                wait.as_secs()
            )),
        }
    }

    #[cfg(not(target_os = "linux"))]
    async fn connect_system(&self) -> Result<Arc<dyn SecretStore>, String> {
        Err("Switchboard uses the system keyring only on Linux so far".into())
    }

    /// Runs a blocking store call on the blocking pool, at most `wait`.
    async fn blocking<T: Send + 'static>(
        &self,
        wait: Duration,
        f: impl FnOnce() -> Result<T, SecretError> + Send + 'static,
    ) -> Result<T, SecretError> {
        match tokio::time::timeout(wait, tokio::task::spawn_blocking(f)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(SecretError::Keyring(format!(
                "the keyring call failed: {e}"
            ))),
            // the thread may stay stuck (on a prompt): it ends with it, or with the app
            Err(_) => Err(SecretError::TimedOut(wait.as_secs())),
        }
    }

    /// The value a reference names.
    pub async fn read(&self, reference: &str) -> Result<String, SecretError> {
        let (place, id) = parse_reference(reference)
            .ok_or_else(|| SecretError::BadReference(reference.to_string()))?;
        let id = id.to_string();
        let got = match place {
            Place::File => {
                let file = self.inner.file.clone();
                self.blocking(self.inner.timeouts.operation, move || file.get(&id))
                    .await?
            }
            Place::Keyring => {
                let Some(k) = self.keyring().await else {
                    let why = self.status().reason.unwrap_or_default();
                    return Err(SecretError::NoKeyring(reference.to_string(), why));
                };
                let r = self
                    .blocking(self.inner.timeouts.operation, move || k.get(&id))
                    .await;
                if let Err(SecretError::TimedOut(_)) = &r {
                    // its connection may be stuck: make a new one next time
                    *self.inner.state.lock().unwrap() = KeyringState::Unknown;
                }
                r?
            }
        };
        got.ok_or_else(|| {
            SecretError::Missing(
                reference.to_string(),
                match place {
                    Place::Keyring => "keyring",
                    Place::File => "secrets file",
                },
            )
        })
    }

    /// The value to use: a plain one as it is, a stored one read from its store.
    pub async fn resolve(&self, v: &SecretValue) -> Result<String, SecretError> {
        match v {
            SecretValue::Plain(p) | SecretValue::New(p) => Ok(p.clone()),
            SecretValue::Stored(r) => self.read(r).await,
        }
    }

    /// Every value of a map (an environment, headers) to use; the failing key with its error.
    pub async fn resolve_map(
        &self,
        m: &BTreeMap<String, SecretValue>,
    ) -> Result<BTreeMap<String, String>, (String, SecretError)> {
        let mut out = BTreeMap::new();
        for (k, v) in m {
            out.insert(
                k.clone(),
                self.resolve(v).await.map_err(|e| (k.clone(), e))?,
            );
        }
        Ok(out)
    }

    /// Stores a value: in the keyring, else (none, or it fails) in the file. Returns its
    /// reference. `label` says what it is ("Switchboard: …").
    pub async fn store(&self, label: &str, value: &str) -> Result<String, SecretError> {
        let id = new_id();
        if let Some(k) = self.keyring().await {
            let (i, l, v) = (id.clone(), label.to_string(), value.to_string());
            match self
                .blocking(self.inner.timeouts.operation, move || k.set(&i, &l, &v))
                .await
            {
                Ok(()) => return Ok(format!("keyring:{id}")),
                Err(e) => self.unavailable(e.to_string()),
            }
        }
        let file = self.inner.file.clone();
        let (i, l, v) = (id.clone(), label.to_string(), value.to_string());
        self.blocking(self.inner.timeouts.operation, move || file.set(&i, &l, &v))
            .await?;
        Ok(format!("file:{id}"))
    }

    /// Removes a stored secret (nothing there is fine).
    pub async fn delete(&self, reference: &str) -> Result<(), SecretError> {
        let (place, id) = parse_reference(reference)
            .ok_or_else(|| SecretError::BadReference(reference.to_string()))?;
        let id = id.to_string();
        match place {
            Place::File => {
                let file = self.inner.file.clone();
                self.blocking(self.inner.timeouts.operation, move || file.delete(&id))
                    .await
            }
            Place::Keyring => {
                let Some(k) = self.keyring().await else {
                    return Err(SecretError::NoKeyring(
                        reference.to_string(),
                        self.status().reason.unwrap_or_default(),
                    ));
                };
                self.blocking(self.inner.timeouts.operation, move || k.delete(&id))
                    .await
            }
        }
    }

    /// Stores `v` when it holds a value to keep secret — a new one, or a plain one in a field
    /// that is always secret (`always`) — and puts its reference in its place; the reference is
    /// also added to `created` (to undo, should the config not be saved).
    pub async fn seal(
        &self,
        v: &mut SecretValue,
        always: bool,
        label: &str,
        created: &mut Vec<String>,
    ) -> Result<(), SecretError> {
        let value = match v {
            SecretValue::New(x) => x.clone(),
            SecretValue::Plain(x) if always => x.clone(),
            _ => return Ok(()),
        };
        let r = self.store(label, &value).await?;
        created.push(r.clone());
        *v = SecretValue::Stored(r);
        Ok(())
    }

    /// Removes these stored secrets, logging what could not be removed (best effort: they are
    /// no longer referenced, or were never saved).
    pub async fn forget(&self, refs: impl IntoIterator<Item = String>) {
        for r in refs {
            if let Err(e) = self.delete(&r).await {
                tracing::warn!("could not remove the stored secret {r}: {e}");
            }
        }
    }
}

/// Puts the values a field should keep in the place of the window's "keep" markers
/// (`{"secret": …}`), from `source`: the field's own value when the entry is edited
/// (`copy: false`), or a copy of the value when it is duplicated (`copy: true`: read now, stored
/// anew when sealed, so deleting one never breaks the other). `fields` are the incoming entry's
/// secret fields with their names; `source` looks a field up by name. A marker with nothing to
/// keep is an error: the window's view was out of date.
pub async fn adopt<'a>(
    secrets: &Secrets,
    fields: impl IntoIterator<Item = (String, &'a mut SecretValue)>,
    source: impl Fn(&str) -> Option<SecretValue>,
    copy: bool,
) -> Result<(), SecretError> {
    for (name, v) in fields {
        if !matches!(v, SecretValue::Stored(_)) {
            continue;
        }
        *v = match source(&name) {
            None | Some(SecretValue::New(_)) => return Err(SecretError::NothingToKeep(name)),
            Some(SecretValue::Stored(r)) if copy => SecretValue::New(secrets.read(&r).await?),
            Some(SecretValue::Stored(r)) => SecretValue::Stored(r),
            // typed into the file by hand: it becomes a secret now
            Some(SecretValue::Plain(p)) => SecretValue::New(p),
        };
    }
    Ok(())
}

/// The references among `values`.
pub fn references<'a>(values: impl IntoIterator<Item = &'a SecretValue>) -> BTreeSet<String> {
    values
        .into_iter()
        .filter_map(|v| v.reference().map(String::from))
        .collect()
}

/// Whether only its owner may read or enter `p` (no group or other permission bits).
pub fn is_private(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o077 == 0)
    }
    #[cfg(not(unix))]
    {
        p.exists()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_never_show_themselves() {
        let v: BTreeMap<String, SecretValue> = serde_json::from_str(
            r#"{"a": "plain", "b": {"secret": "keyring:ab12"}, "c": {"newSecret": "typed"}, "d": {"secret": "file:x"}}"#,
        )
        .unwrap();
        assert_eq!(v["a"], SecretValue::Plain("plain".into()));
        assert_eq!(v["b"], SecretValue::Stored("keyring:ab12".into()));
        assert_eq!(v["c"], SecretValue::New("typed".into()));
        let back = serde_json::to_string(&v).unwrap();
        assert!(
            !back.contains("typed"),
            "a new value is never written: {back}"
        );
        assert!(back.contains(r#""b":{"secret":"keyring:ab12"}"#), "{back}");
        assert!(!format!("{v:?}").contains("plain") && !format!("{v:?}").contains("typed"));
        assert_eq!(v["b"].redacted(true), SecretValue::Stored("keyring".into()));
        assert_eq!(v["d"].redacted(false), SecretValue::Stored("file".into()));
        assert_eq!(v["a"].redacted(false), v["a"]);
        assert_eq!(v["a"].redacted(true), SecretValue::Stored("config".into()));
        assert_eq!(v["a"].exported(false), "plain");
        assert_eq!(v["a"].exported(true), EXPORT_PLACEHOLDER);
        assert_eq!(v["b"].exported(false), EXPORT_PLACEHOLDER);
        assert_eq!(
            SecretValue::from_import(&serde_json::json!({"secret": "keyring:ab12"})),
            None
        );
        assert_eq!(
            SecretValue::from_import(&serde_json::json!(EXPORT_PLACEHOLDER)),
            None
        );
        assert_eq!(
            SecretValue::from_import(&serde_json::json!(3)),
            Some("3".into())
        );
    }

    #[test]
    fn references_parse() {
        assert_eq!(
            parse_reference("keyring:0af3"),
            Some((Place::Keyring, "0af3"))
        );
        assert_eq!(parse_reference("file:a-b_c"), Some((Place::File, "a-b_c")));
        for bad in ["keyring:", "vault:x", "keyring", "file:a/b", "file:../x"] {
            assert_eq!(parse_reference(bad), None, "{bad}");
        }
        assert_eq!(new_id().len(), 32);
        assert_ne!(new_id(), new_id());
    }

    #[test]
    fn secret_looking_names() {
        for n in [
            "API_KEY",
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "DB_PASSWORD",
            "CLIENT_SECRET",
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "apikey",
            "BRAVE_API_KEY",
            "AUTH",
        ] {
            assert!(looks_secret(n), "{n}");
        }
        for n in ["PATH", "HOME", "LOG_LEVEL", "NODE_ENV", "PORT", "KEYBOARD"] {
            assert!(!looks_secret(n), "{n}");
        }
    }

    #[tokio::test]
    async fn the_file_store_is_private_and_keeps_values_apart() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("secrets");
        let s = Secrets::file_only(dir.clone(), "tests");
        assert_eq!(s.status().store, StatusPlace::File);
        let a = s.store("Switchboard: a", "alpha").await.unwrap();
        let b = s.store("Switchboard: b", "beta").await.unwrap();
        assert!(a.starts_with("file:") && b.starts_with("file:") && a != b);
        assert_eq!(s.read(&a).await.unwrap(), "alpha");
        assert_eq!(
            s.resolve(&SecretValue::Stored(b.clone())).await.unwrap(),
            "beta"
        );
        assert!(is_private(&dir) && is_private(&s.file_path()));
        assert_eq!(s.status().in_file, 2);
        s.delete(&a).await.unwrap();
        assert!(matches!(s.read(&a).await, Err(SecretError::Missing(..))));
        s.delete(&a).await.unwrap();
        assert!(matches!(
            s.read("keyring:zz").await,
            Err(SecretError::NoKeyring(..))
        ));
        assert!(matches!(
            s.read("nonsense").await,
            Err(SecretError::BadReference(_))
        ));
        // made private again when found open
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(s.file_path(), std::fs::Permissions::from_mode(0o644))
                .unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            assert_eq!(s.read(&b).await.unwrap(), "beta");
            assert!(is_private(&dir) && is_private(&s.file_path()));
        }
    }

    /// A keyring in memory that can be made to fail, to see the fallback.
    #[derive(Default)]
    struct Flaky {
        items: Mutex<BTreeMap<String, String>>,
        broken: std::sync::atomic::AtomicBool,
    }

    impl SecretStore for Flaky {
        fn get(&self, id: &str) -> Result<Option<String>, SecretError> {
            Ok(self.items.lock().unwrap().get(id).cloned())
        }
        fn set(&self, id: &str, _: &str, v: &str) -> Result<(), SecretError> {
            if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(SecretError::Keyring(
                    "org.freedesktop.Secret.Error.IsLocked".into(),
                ));
            }
            self.items.lock().unwrap().insert(id.into(), v.into());
            Ok(())
        }
        fn delete(&self, id: &str) -> Result<(), SecretError> {
            self.items.lock().unwrap().remove(id);
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_failing_keyring_falls_back_to_the_file_and_says_why() {
        let d = tempfile::tempdir().unwrap();
        let k = Arc::new(Flaky::default());
        let s = Secrets::with_store(d.path().join("s"), k.clone());
        assert_eq!(s.status().store, StatusPlace::Unknown);
        let a = s.store("a", "alpha").await.unwrap();
        assert!(a.starts_with("keyring:"), "{a}");
        assert_eq!(s.status().store, StatusPlace::Keyring);
        assert_eq!(k.items.lock().unwrap().len(), 1);
        k.broken.store(true, std::sync::atomic::Ordering::SeqCst);
        let b = s.store("b", "beta").await.unwrap();
        assert!(b.starts_with("file:"), "{b}");
        let st = s.status();
        assert_eq!(st.store, StatusPlace::File);
        assert!(st.reason.unwrap().contains("IsLocked"));
        assert_eq!(st.in_file, 1);
        assert_eq!(s.read(&b).await.unwrap(), "beta");
    }

    #[tokio::test]
    async fn keep_markers_take_the_fields_value_or_a_copy() {
        let d = tempfile::tempdir().unwrap();
        let s = Secrets::file_only(d.path().join("s"), "tests");
        let r = s.store("x", "v1").await.unwrap();
        let source = |name: &str| match name {
            "A" => Some(SecretValue::Stored(r.clone())),
            "B" => Some(SecretValue::Plain("hand".into())),
            _ => None,
        };
        let mut a = SecretValue::Stored("keyring".into());
        let mut b = SecretValue::Stored("config".into());
        let mut c = SecretValue::Plain("typed".into());
        adopt(
            &s,
            [
                ("A".to_string(), &mut a),
                ("B".into(), &mut b),
                ("C".into(), &mut c),
            ],
            source,
            false,
        )
        .await
        .unwrap();
        assert_eq!(a, SecretValue::Stored(r.clone()));
        assert_eq!(b, SecretValue::New("hand".into()));
        assert_eq!(c, SecretValue::Plain("typed".into()));
        let mut a = SecretValue::Stored("anything".into());
        adopt(&s, [("A".to_string(), &mut a)], source, true)
            .await
            .unwrap();
        assert_eq!(a, SecretValue::New("v1".into()), "a copy reads the value");
        let mut gone = SecretValue::Stored("keyring".into());
        assert!(matches!(
            adopt(&s, [("Z".to_string(), &mut gone)], source, false).await,
            Err(SecretError::NothingToKeep(_))
        ));
        let mut created = vec![];
        s.seal(&mut a, false, "copy", &mut created).await.unwrap();
        assert_eq!(created.len(), 1);
        assert_ne!(a, SecretValue::Stored(r));
        let mut plain = SecretValue::Plain("p".into());
        s.seal(&mut plain, false, "env", &mut created)
            .await
            .unwrap();
        assert_eq!(
            plain,
            SecretValue::Plain("p".into()),
            "a plain env value stays"
        );
        s.seal(&mut plain, true, "header", &mut created)
            .await
            .unwrap();
        assert!(plain.reference().is_some(), "a plain header is moved");
    }
}
