//! Changes to the MCP server config through the [`Runtime`]: add, replace, copy, delete,
//! enable, import; each validated, its secrets stored or forgotten, saved, and the standing
//! approvals of a server that is gone or changed dropped.

use super::Runtime;
use crate::secrets::{self, SecretError, SecretValue, Secrets};
use crate::{chat, mcp, settings};

/// The MCP server config as last read or saved, and why it could not be read (then the app runs
/// with no servers, says why, and never overwrites the file).
pub(super) struct McpState {
    pub(super) config: mcp::McpConfig,
    pub(super) error: Option<String>,
}

/// Why the MCP config could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    #[error("could not save {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    /// The file could not be read at start; it is left alone until the user fixes it.
    #[error("{0}")]
    Unreadable(String),
    /// A server's settings are not valid; `field` names the form field.
    #[error("{message}")]
    Invalid { field: String, message: String },
    #[error("There is no server named \"{0}\" any more.")]
    NoServer(String),
    /// A secret could not be stored, read or kept.
    #[error("{0}")]
    Secret(#[from] SecretError),
}

impl Runtime {
    /// Adds a server, or replaces `original` (which may be renamed: its secrets stay its own).
    /// `copy_of`: the server it duplicates; its secrets are copied (so that deleting one never
    /// breaks the other). In `server`, `{"secret": …}` keeps the value the field has in
    /// `original` (or `copy_of`); `{"newSecret": …}` is a value to keep secret. Validated,
    /// saved and applied (see [`Runtime::update_mcp_config`]); the config saved is returned.
    pub async fn save_server(
        &self,
        original: Option<&str>,
        copy_of: Option<&str>,
        name: &str,
        mut server: mcp::ServerConfig,
    ) -> Result<mcp::McpConfig, McpConfigError> {
        let _one = self.changing.lock().await;
        let current = self.mcp_config_for_change()?;
        if let Some(o) = original {
            if !current.servers.contains_key(o) {
                return Err(McpConfigError::NoServer(o.to_string()));
            }
        }
        let others: Vec<String> = current
            .servers
            .keys()
            .filter(|k| Some(k.as_str()) != original)
            .cloned()
            .collect();
        mcp::validate_server(name, &server, &others).map_err(|e| McpConfigError::Invalid {
            field: e.field.into(),
            message: e.message,
        })?;
        let source = original.or(copy_of).and_then(|n| current.servers.get(n));
        adopt_server(&self.secrets, &mut server, source, original.is_none()).await?;
        let mut next = current;
        if let Some(o) = original {
            next.servers.remove(o);
        }
        next.servers.insert(name.to_string(), server);
        self.commit_mcp(next).await
    }

    /// Removes a server, its secrets from the store, and its bundle's folder.
    pub async fn delete_server(&self, name: &str) -> Result<mcp::McpConfig, McpConfigError> {
        let _one = self.changing.lock().await;
        let mut next = self.mcp_config_for_change()?;
        let gone = next.servers.remove(name);
        let applied = self.commit_mcp(next).await?;
        // its bundle's folder goes with it (its private folder goes when the host applies this)
        if let Some(old) = &gone {
            self.remove_unused_bundle(old, &applied);
        }
        // its sign-in goes with it (unless another server is the same URL)
        if let Some(url) = gone.and_then(|s| s.url) {
            if !applied
                .servers
                .values()
                .any(|s| s.url.as_ref() == Some(&url))
            {
                if let Err(e) = self.host.forget_sign_in(&url).await {
                    tracing::warn!("could not forget the sign-in of {name}: {e}");
                }
            }
        }
        Ok(applied)
    }

    /// Turns a server on or off.
    pub async fn set_server_enabled(
        &self,
        name: &str,
        enabled: bool,
    ) -> Result<mcp::McpConfig, McpConfigError> {
        let _one = self.changing.lock().await;
        let mut next = self.mcp_config_for_change()?;
        let Some(s) = next.servers.get_mut(name) else {
            return Err(McpConfigError::NoServer(name.to_string()));
        };
        s.disabled = !enabled;
        self.commit_mcp(next).await
    }

    /// Lets a sandboxed server reach `host` (one of what its sandbox refused: a name, an
    /// address, with a port or not), or all of the network when `host` is none; saved in its
    /// config, returned to apply (it starts again with it).
    pub async fn allow_server_network(
        &self,
        name: &str,
        host: Option<&str>,
    ) -> Result<mcp::McpConfig, McpConfigError> {
        self.change_sandbox(name, |sb| {
            match host {
                None => sb.network = true,
                Some(h) => {
                    let rule = mcp::HostRule::parse(h).map_err(sandbox_invalid)?;
                    let text = match rule.port {
                        Some(p) if rule.address.is_some_and(|a| a.is_ipv6()) => {
                            format!("[{}]:{p}", rule.host)
                        }
                        Some(p) => format!("{}:{p}", rule.host),
                        None if rule.wildcard => format!("*.{}", rule.host),
                        None => rule.host.clone(),
                    };
                    if !sb.hosts.contains(&text) {
                        sb.hosts.push(text);
                    }
                }
            }
            Ok(())
        })
        .await
    }

    /// Changes the sandbox of the sandboxed server `name` with `change` (a built-in's default
    /// sandbox made explicit, as it is), then saves and applies the config.
    async fn change_sandbox(
        &self,
        name: &str,
        change: impl FnOnce(&mut mcp::SandboxConfig) -> Result<(), McpConfigError>,
    ) -> Result<mcp::McpConfig, McpConfigError> {
        let _one = self.changing.lock().await;
        let mut next = self.mcp_config_for_change()?;
        let Some(s) = next.servers.get_mut(name) else {
            return Err(McpConfigError::NoServer(name.to_string()));
        };
        let Some(wanted) = mcp::sandbox::wanted(s) else {
            return Err(sandbox_invalid(format!(
                "\"{name}\" does not run in a sandbox."
            )));
        };
        let mut sb = wanted.config;
        change(&mut sb)?;
        s.sandbox = Some(mcp::SandboxSetting::On(sb));
        self.commit_mcp(next).await
    }

    /// Lets a sandboxed server read `path` (a file or folder its sandbox refused: the row's
    /// "Allow reading"), saved in its sandbox's `read` and applied (it starts again). Never a
    /// protected path (credentials, the app's own folders: `mcp/sandbox/protect.rs`), which
    /// only typing it in its settings grants; never `/` or home.
    pub async fn allow_server_read(
        &self,
        name: &str,
        path: &str,
    ) -> Result<mcp::McpConfig, McpConfigError> {
        let invalid = sandbox_invalid;
        let p = std::path::Path::new(path);
        let home = self.host.sandbox_home();
        if !p.is_absolute() || p.symlink_metadata().is_err() {
            return Err(invalid(format!(
                "{path} is not an existing file or folder (a full path)."
            )));
        }
        let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if real.parent().is_none() || home.as_deref().is_some_and(|h| h == p || h == real) {
            return Err(invalid(format!(
                "{path} is too much to allow from here: list it in the server's sandbox settings."
            )));
        }
        if self.host.is_protected(p) {
            return Err(invalid(format!(
                "{path} holds credentials or Switchboard's own data: it is allowed only by \
                 listing it in the server's sandbox settings yourself."
            )));
        }
        self.change_sandbox(name, |sb| {
            if !sb.read.iter().any(|r| r == path) {
                sb.read.push(path.to_string());
            }
            Ok(())
        })
        .await
    }

    /// Adds the chosen servers of an import (all or nothing), turned off and not trusted: a
    /// server from someone else's config runs only after the user says so a second time. Their
    /// headers, and environment values whose names say they are secret (keys, tokens,
    /// passwords), go to the secret store. Returns the config and how many were added.
    pub async fn import_servers(
        &self,
        choices: Vec<mcp::import::ImportChoice>,
    ) -> Result<(mcp::McpConfig, usize), McpConfigError> {
        let _one = self.changing.lock().await;
        let mut next = self.mcp_config_for_change()?;
        let n = choices.len();
        for c in choices {
            let others: Vec<String> = next
                .servers
                .keys()
                .filter(|k| !(c.replace && k.eq_ignore_ascii_case(&c.name)))
                .cloned()
                .collect();
            mcp::validate_server(&c.name, &c.server, &others).map_err(|e| {
                McpConfigError::Invalid {
                    field: c.name.clone(),
                    message: format!("{}: {}", c.name, e.message),
                }
            })?;
            if c.replace {
                next.servers.retain(|k, _| !k.eq_ignore_ascii_case(&c.name));
            }
            // whatever the window sent: off, and its annotations not believed, until the user says
            let mut server = mcp::ServerConfig {
                disabled: true,
                trusted: Some(false),
                // nor may its apps reach the network until the user says so
                app_network: false,
                app_origins: Vec::new(),
                ..c.server
            };
            // nothing of this user's can be kept for a server that was not theirs
            adopt_server(&self.secrets, &mut server, None, true).await?;
            for (k, v) in server.env.iter_mut() {
                if let SecretValue::Plain(p) = v {
                    if secrets::looks_secret(k) {
                        *v = SecretValue::New(std::mem::take(p));
                    }
                }
            }
            next.servers.insert(c.name, server);
        }
        Ok((self.commit_mcp(next).await?, n))
    }

    /// The MCP config as the window gets it: secrets replaced by where they are kept.
    pub fn mcp_config_view(&self) -> mcp::McpConfig {
        self.mcp_config().redacted()
    }

    /// The config in the Claude Desktop shape, secrets left out.
    pub fn export_mcp_config(&self) -> String {
        mcp::import::export(&self.mcp_config())
    }

    fn mcp_config_for_change(&self) -> Result<mcp::McpConfig, McpConfigError> {
        let state = self.mcp.read().unwrap();
        match &state.error {
            Some(e) => Err(McpConfigError::Unreadable(e.clone())),
            None => Ok(state.config.clone()),
        }
    }

    /// Saves `next` as the MCP config: every value to keep secret stored first (new ones, and
    /// plain headers typed into the file by hand), the file written, then what no server refers
    /// to any more removed from the store. Nothing stored is left behind when the file cannot
    /// be written.
    async fn commit_mcp(&self, mut next: mcp::McpConfig) -> Result<mcp::McpConfig, McpConfigError> {
        let mut created = Vec::new();
        for (name, server) in next.servers.iter_mut() {
            for (field, v) in server.secret_fields_mut() {
                let label = format!(
                    "Switchboard: {} of the MCP server “{name}”",
                    field.describe()
                );
                if let Err(e) = self
                    .secrets
                    .seal(v, field.always_secret(), &label, &mut created)
                    .await
                {
                    self.secrets.forget(created).await;
                    return Err(e.into());
                }
            }
        }
        let referenced = self.secret_references();
        match self.update_mcp_config(|c| *c = next) {
            Ok(saved) => {
                self.forget_unreferenced(referenced).await;
                Ok(saved)
            }
            Err(e) => {
                self.secrets.forget(created).await;
                Err(e)
            }
        }
    }

    /// Why `mcp.json` could not be read at start, if it could not.
    pub fn mcp_config_error(&self) -> Option<String> {
        self.mcp.read().unwrap().error.clone()
    }

    /// Changes the MCP config with `change` and saves it (the file's other keys kept); returns the
    /// new config. Once the servers were started, the host applies it in the background
    /// ([`Applier`]; [`Runtime::mcp_applied`] waits for it). A config that could not be read at
    /// start is never overwritten.
    pub fn update_mcp_config(
        &self,
        change: impl FnOnce(&mut mcp::McpConfig),
    ) -> Result<mcp::McpConfig, McpConfigError> {
        let mut state = self.mcp.write().unwrap();
        if let Some(e) = &state.error {
            return Err(McpConfigError::Unreadable(e.clone()));
        }
        let mut next = state.config.clone();
        change(&mut next);
        next.save(&self.mcp_file)
            .map_err(|source| McpConfigError::Write {
                path: self.mcp_file.display().to_string(),
                source,
            })?;
        forget_standing_approvals(&self.settings, &self.shared, &state.config, &next);
        state.config = next.clone();
        self.applier.changed();
        Ok(next)
    }

    /// Waits until the MCP config as saved now is what the host runs: the servers started
    /// ([`Runtime::start_servers`]), once the change being applied in the background has been;
    /// else it is applied now.
    pub async fn mcp_applied(&self) {
        if !self.applier.wait().await {
            self.host.apply_config(&self.mcp_config()).await;
        }
    }
}

/// Applies every saved change of the MCP config to the running host, in the background and in
/// order, each time the config as it is then (so the last change is always the one that
/// stays, however quickly they come). It runs once the servers were started: before, a change
/// is only saved (the servers start from it), as in the command line's `catalog install`.
#[derive(Default)]
pub(crate) struct Applier {
    /// How many changes were saved.
    saved: tokio::sync::watch::Sender<u64>,
    /// How many of them the host has applied (after the servers were started).
    applied: tokio::sync::watch::Sender<u64>,
    running: std::sync::atomic::AtomicBool,
}

impl Applier {
    /// A change was saved.
    fn changed(&self) {
        self.saved.send_modify(|n| *n += 1);
    }

    /// The changes saved from now on (taken before the servers start, so none is missed).
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.saved.subscribe()
    }

    /// Applies `changes` to `host` from now on, the config read from `mcp` each time.
    pub(crate) fn run(
        &self,
        mut changes: tokio::sync::watch::Receiver<u64>,
        host: std::sync::Arc<mcp::McpHost>,
        mcp: std::sync::Arc<std::sync::RwLock<McpState>>,
    ) {
        use std::sync::atomic::Ordering;
        if self.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let applied = self.applied.clone();
        tokio::spawn(async move {
            // a change saved while the servers started counts as one not yet applied
            if *changes.borrow() > *applied.borrow() {
                changes.mark_changed();
            }
            while changes.changed().await.is_ok() {
                let n = *changes.borrow_and_update();
                let config = mcp.read().unwrap().config.clone();
                host.apply_config(&config).await;
                applied.send_replace(n);
            }
        });
    }

    /// Waits until every change saved so far is applied; false when nothing applies them (the
    /// servers were not started).
    async fn wait(&self) -> bool {
        if !self.running.load(std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        let want = *self.saved.borrow();
        let mut applied = self.applied.subscribe();
        let _ = applied.wait_for(|n| *n >= want).await;
        true
    }
}

/// Puts the values a server's secret fields keep in the place of the window's "keep" markers:
/// from `source` (the server it was, or the one it copies: `copy`), see [`secrets::adopt`].
async fn adopt_server(
    secrets: &Secrets,
    server: &mut mcp::ServerConfig,
    source: Option<&mcp::ServerConfig>,
    copy: bool,
) -> Result<(), SecretError> {
    let fields = server
        .secret_fields_mut()
        .map(|(f, v)| (f.describe(), v))
        .collect::<Vec<_>>();
    let lookup = |name: &str| {
        source.and_then(|s| {
            s.secret_fields()
                .find(|(f, _)| f.describe() == name)
                .map(|(_, v)| v.clone())
        })
    };
    secrets::adopt(secrets, fields, lookup, copy).await
}

/// Standing approvals (standing policies, "allow in this chat", "allow for this app") of a server
/// that was deleted or is now another program or URL are dropped: they were given to what it was
/// (its identity, which no configured server has any more). Entries older versions kept by name
/// (`toolPolicies`) go too: bound to an identity no server has, or written by hand under its name.
fn forget_standing_approvals(
    settings: &settings::LiveSettings,
    shared: &chat::EngineShared,
    before: &mcp::McpConfig,
    after: &mcp::McpConfig,
) {
    let gone: Vec<&String> = before
        .servers
        .iter()
        .filter(|(name, old)| {
            after
                .servers
                .get(*name)
                .is_none_or(|new| new.identity() != old.identity())
        })
        .map(|(name, _)| name)
        .collect();
    if gone.is_empty() {
        return;
    }
    let identities: std::collections::HashSet<String> =
        after.servers.values().map(|c| c.identity()).collect();
    let prefixes: Vec<String> = gone.iter().map(|n| mcp::names::prefix(n)).collect();
    let ours = |tool: &str| prefixes.iter().any(|p| tool.starts_with(p.as_str()));
    let stale = |tool: &str, entry: &chat::approval::PolicyEntry| match entry.server() {
        Some(server) => !identities.contains(server),
        None => ours(tool),
    };
    let dropped = settings.read(|s| settings::SettingsPatch {
        standing_policies: s
            .standing_policies
            .iter()
            .filter(|(identity, _)| !identities.contains(*identity))
            .map(|(identity, tools)| {
                let none = tools.keys().map(|t| (t.clone(), None)).collect();
                (identity.clone(), none)
            })
            .collect(),
        tool_policies: s
            .tool_policies
            .iter()
            .filter(|(k, e)| stale(k, e))
            .map(|(k, _)| (k.clone(), None))
            .collect(),
        ..Default::default()
    });
    if !dropped.standing_policies.is_empty() || !dropped.tool_policies.is_empty() {
        if let Err(e) = settings.apply(&dropped) {
            tracing::warn!("could not drop the approvals of removed or changed servers: {e}");
        }
    }
    shared
        .allowed_in_conversation
        .lock()
        .unwrap()
        .retain(|(_, key)| identities.contains(&key.server));
    shared
        .app_allowed
        .lock()
        .unwrap()
        .retain(|(_, key, _)| identities.contains(&key.server));
}

/// A sandbox change refused, in words.
fn sandbox_invalid(message: String) -> McpConfigError {
    McpConfigError::Invalid {
        field: "sandbox".into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{LiveSettings, Settings};
    use chat::approval::{Policy, PolicyEntry};
    use mcp::{McpConfig, ServerConfig};

    #[test]
    fn approvals_of_a_deleted_or_replaced_server_are_dropped_the_others_kept() {
        let weather = ServerConfig::new("python3", &["weather.py"]);
        let notes = ServerConfig::new("node", &["notes.js"]);
        let mut before = McpConfig::default();
        before.servers.insert("weather".into(), weather.clone());
        before.servers.insert("notes".into(), notes.clone());
        before
            .servers
            .insert("gone".into(), ServerConfig::new("x", &[]));
        let key = |c: &ServerConfig, tool: &str| mcp::ToolKey::new(c.identity(), tool);
        let settings = LiveSettings::in_memory(Settings::default());
        for (k, p) in [
            (key(&weather, "now"), Policy::Allow),
            (key(&notes, "add"), Policy::Allow),
            (key(&notes, "delete"), Policy::Deny),
        ] {
            settings
                .apply(&settings::SettingsPatch::policy(&k, Some(p)))
                .unwrap();
        }
        // as older versions kept them
        let old = |name: &str, e: PolicyEntry| {
            settings
                .apply(&settings::SettingsPatch::tool_policy(name, Some(e)))
                .unwrap();
        };
        old(
            "weather__then",
            PolicyEntry::bound(Policy::Allow, weather.identity()),
        );
        old("weather__hand", PolicyEntry::Plain(Policy::Allow));
        old(
            "notes__old",
            PolicyEntry::bound(Policy::Allow, notes.identity()),
        );
        old("gone__t", PolicyEntry::Plain(Policy::Deny));
        let shared = chat::EngineShared::default();
        shared
            .allowed_in_conversation
            .lock()
            .unwrap()
            .extend([(1, key(&weather, "now")), (1, key(&notes, "add"))]);
        shared.app_allowed.lock().unwrap().extend([
            (1, key(&weather, "now"), "ui://w".to_string()),
            (1, key(&notes, "add"), "ui://n".to_string()),
        ]);
        // "weather" is now another program; "gone" is deleted; "notes" is as it was (its
        // timeout changed, which does not change what runs)
        let mut after = McpConfig::default();
        after
            .servers
            .insert("weather".into(), ServerConfig::new("python3", &["evil.py"]));
        let mut notes2 = notes.clone();
        notes2.timeout = Some(5);
        after.servers.insert("notes".into(), notes2);
        forget_standing_approvals(&settings, &shared, &before, &after);
        let s = settings.get();
        assert_eq!(
            s.standing_policies.keys().collect::<Vec<_>>(),
            [&notes.identity()]
        );
        assert_eq!(s.policy(&key(&notes, "delete")), Some(Policy::Deny));
        assert_eq!(s.tool_policies.keys().collect::<Vec<_>>(), ["notes__old"]);
        let chat: Vec<_> = shared
            .allowed_in_conversation
            .lock()
            .unwrap()
            .iter()
            .map(|k| k.1.clone())
            .collect();
        assert_eq!(chat, vec![key(&notes, "add")]);
        let apps: Vec<_> = shared
            .app_allowed
            .lock()
            .unwrap()
            .iter()
            .map(|k| k.2.clone())
            .collect();
        assert_eq!(apps, vec!["ui://n".to_string()]);
    }
}
