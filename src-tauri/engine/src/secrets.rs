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
//!
//! `Secrets` is one handle, shared by the runtime, the host and the LLM clients. The keyring store
//! (`secrets/store.rs`, `KeyringStore`: `keyring-core` + `zbus-secret-service-keyring-store`) keeps
//! items with `service` = the app id and `username` = a random id, in the default collection; the
//! keyring gets 5 s to connect and is tried again after a minute; the file store (`FileStore`)
//! makes its folder private again if found open. `SecretsStatus` says where new secrets go and why,
//! for the note in the settings screen and the server form. From the window only, a config may hold
//! `{"newSecret": "…"}` (never written).
//!
//! Values are resolved (`Secrets::resolve`) when a server starts (`mcp/host/connect.rs`, step
//! `readingSecrets`) and when an LLM request is sent (`llm/openai.rs`, per request). What the
//! window sends back as `{"secret": …}` means "keep this field's value" and is resolved against the
//! entry being edited (or the one duplicated, which gets a copy), by field name, so it can never
//! name another secret ([`adopt`]). The import preview shows the text the user pasted or picked;
//! imported headers and secret-looking variables are stored at apply; an import takes no reference
//! and no placeholder as a value (and says which values to set). `SecretValue`'s `Debug` never
//! prints a value; header values are marked sensitive (never in hyper's or reqwest's logs), the
//! bearer token too. A secret no provider or server refers to any more (deleted, replaced, dropped
//! from the form) is removed from its store after the change is written; one stored for a change
//! that could not be written is removed too. A duplicated server gets its own copy, so deleting one
//! never breaks the other.

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

mod store;
mod value;

pub use store::{FileStore, KeyringStore, SecretStore};
pub use value::*;

/// A new secret's id: 128 random bits in hex.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
        self.store_as(&new_id(), label, value).await
    }

    async fn store_as(&self, id: &str, label: &str, value: &str) -> Result<String, SecretError> {
        let id = id.to_string();
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

    /// Keeps a value under a fixed id that no config file refers to (a server's sign-in): in the
    /// keyring, else in the file. An older copy in the other place is removed.
    pub async fn put_named(&self, id: &str, label: &str, value: &str) -> Result<(), SecretError> {
        let reference = self.store_as(id, label, value).await?;
        let other = if reference.starts_with("keyring:") {
            format!("file:{id}")
        } else {
            format!("keyring:{id}")
        };
        let _ = self.delete(&other).await;
        Ok(())
    }

    /// The value kept under a fixed id, from the keyring or the file; `None`: there is none.
    pub async fn get_named(&self, id: &str) -> Result<Option<String>, SecretError> {
        for place in ["keyring", "file"] {
            if place == "keyring" && self.keyring().await.is_none() {
                continue;
            }
            match self.read(&format!("{place}:{id}")).await {
                Ok(v) => return Ok(Some(v)),
                Err(SecretError::Missing(..)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Forgets the value kept under a fixed id, wherever it is.
    pub async fn delete_named(&self, id: &str) -> Result<(), SecretError> {
        if self.keyring().await.is_some() {
            self.delete(&format!("keyring:{id}")).await?;
        }
        self.delete(&format!("file:{id}")).await
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
mod tests;
