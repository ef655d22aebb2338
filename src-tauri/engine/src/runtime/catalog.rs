//! The catalog through the [`Runtime`]: searching the registry the settings name, preparing an
//! install (an entry's package or remote, or a bundle), its preview, saving it (turned off and
//! not trusted, like an import; an update keeps the user's choices and re-pins on connect), and
//! which installed servers have a newer version.
//!
//! Preparing downloads and opens an mcpb package; install unpacks, then `save_server`; also cancel
//! and icons. `newer` compares by semver, else any other version counts. A bundle's folder is
//! removed when no server uses it any more (an update's old version, a deleted server's:
//! `remove_unused_bundle`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

use super::{McpConfigError, Runtime};
use crate::bundle::{self, BundleError, Machine, Opened, UserDirs};
use crate::mcp::{self, ServerConfig};
use crate::registry::install::{
    self, Choices, Host, InstallError, InstallPreview, Origin, Pending, Prepared,
};
use crate::registry::layout::Layout;
use crate::registry::plan::PackageKind;
use crate::registry::{
    self, ClientLimits, EntryView, FetchError, Installed, Listed, Offline, RegistryClient, Skipped,
    Way,
};

/// Installs being prepared at once (the oldest is dropped past this).
const MAX_PENDING: usize = 8;

/// The catalog's state: its client and the installs being prepared.
pub struct CatalogState {
    pub client: RegistryClient,
    pending: Mutex<Vec<(String, Pending)>>,
    bundles: PathBuf,
    /// Certificates (PEM) trusted for bundle signatures besides the system's (tests).
    pub extra_roots: Vec<u8>,
}

impl CatalogState {
    pub fn new(cache: PathBuf, bundles: PathBuf, limits: ClientLimits) -> CatalogState {
        bundle::clean_leftovers(&bundles);
        CatalogState {
            client: RegistryClient::new(cache, limits),
            pending: Mutex::new(Vec::new()),
            bundles,
            extra_roots: Vec::new(),
        }
    }
}

/// A page of the catalog as the window and the CLI show it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogPage {
    pub registry: String,
    pub entries: Vec<EntryView>,
    pub skipped: Vec<Skipped>,
    pub next_cursor: Option<String>,
    /// Shown from the disk: the registry could not be reached.
    pub offline: Option<Offline>,
}

/// An installed server with a newer version in its registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateAvailable {
    pub server: String,
    pub name: String,
    pub installed: String,
    pub latest: String,
}

/// Why the catalog could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{0}")]
    Fetch(#[from] FetchError),
    #[error("{0}")]
    Bundle(#[from] BundleError),
    #[error("{0}")]
    Install(#[from] InstallError),
    #[error("{0}")]
    Config(#[from] McpConfigError),
    #[error("“{0}” cannot be installed here: {1}.")]
    NoWay(String, String),
    #[error("“{0}” was not installed from a registry.")]
    NotFromRegistry(String),
    #[error("“{0}” is at its registry's latest version already.")]
    UpToDate(String),
}

/// Programs as the host finds them (its PATH: the login shell's, once known).
pub struct HostMachine {
    pub path: Option<String>,
}

impl Machine for HostMachine {
    fn find(&self, program: &str) -> Option<PathBuf> {
        let path = self
            .path
            .clone()
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default();
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        which::which_in(program, Some(path), cwd).ok()
    }

    /// `program --version`, at most 5 s.
    fn version(&self, program: &Path) -> Option<String> {
        let mut child = std::process::Command::new(program)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let start = std::time::Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if start.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
            }
        }
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
        Some(out)
    }
}

impl Runtime {
    /// The registry the catalog searches: the settings' own, or the official one.
    pub fn catalog_registry(&self) -> String {
        self.settings
            .read(|s| s.catalog_registry.clone())
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| registry::OFFICIAL_REGISTRY.into())
    }

    fn machine(&self) -> HostMachine {
        HostMachine {
            path: self.host.path(),
        }
    }

    /// One page of the entries whose name has `term` (`registry`: another registry than the
    /// settings').
    pub async fn catalog_page(
        &self,
        registry: Option<&str>,
        term: &str,
        cursor: Option<&str>,
    ) -> Result<CatalogPage, CatalogError> {
        let registry = registry
            .map(String::from)
            .unwrap_or_else(|| self.catalog_registry());
        let (page, offline) = self.catalog.client.page(&registry, term, cursor).await?;
        Ok(self.page_view(registry, page, offline))
    }

    /// Every entry whose name has `term`, following every page.
    pub async fn catalog_all(
        &self,
        registry: Option<&str>,
        term: &str,
    ) -> Result<CatalogPage, CatalogError> {
        let registry = registry
            .map(String::from)
            .unwrap_or_else(|| self.catalog_registry());
        let (page, offline) = self.catalog.client.all(&registry, term).await?;
        Ok(self.page_view(registry, page, offline))
    }

    fn page_view(
        &self,
        registry: String,
        page: registry::server_json::Page,
        offline: Option<Offline>,
    ) -> CatalogPage {
        let config = self.mcp_config();
        let entries = page
            .entries
            .iter()
            .map(|l| {
                let mut v = EntryView::of(l);
                v.installed = config.servers.iter().find_map(|(server, c)| {
                    let s = c.source.as_ref()?;
                    (s.name == l.server.name && s.registry.as_deref() == Some(registry.as_str()))
                        .then(|| Installed {
                            server: server.clone(),
                            version: s.version.clone(),
                        })
                });
                v
            })
            .collect();
        CatalogPage {
            registry,
            entries,
            skipped: page.skipped,
            next_cursor: page.next_cursor,
            offline,
        }
    }

    /// The ways to have entry `name` (its latest version).
    pub async fn catalog_ways(
        &self,
        registry: Option<&str>,
        name: &str,
    ) -> Result<(EntryView, Vec<Way>), CatalogError> {
        let registry = registry
            .map(String::from)
            .unwrap_or_else(|| self.catalog_registry());
        let (listed, _) = self.catalog.client.latest(&registry, name).await?;
        Ok((EntryView::of(&listed), registry::ways(&listed.server)))
    }

    /// Prepares installing entry `name` by its way `way` (none: the first that can be
    /// installed). An mcpb package is downloaded, checked against its fileSha256 and opened.
    pub async fn catalog_prepare(
        &self,
        registry: Option<&str>,
        name: &str,
        way: Option<usize>,
    ) -> Result<Prepared, CatalogError> {
        let registry = registry
            .map(String::from)
            .unwrap_or_else(|| self.catalog_registry());
        let (listed, _) = self.catalog.client.latest(&registry, name).await?;
        let entry = listed.server.name.clone();
        let mut pending = self.pending_of(registry.clone(), listed, way, None).await?;
        // installed from this entry before, and a secret it needs was never set: installing
        // it again completes that server (its name, its choices), it adds no second one
        for (server, c) in self.mcp_config().servers {
            let from_here = c
                .source
                .as_ref()
                .is_some_and(|s| s.registry.as_deref() == Some(&registry) && s.name == entry);
            if !from_here {
                continue;
            }
            pending.update_of = Some((server, c));
            if pending.lacks_secret() {
                pending.completes = true;
                break;
            }
            pending.update_of = None;
        }
        Ok(self.keep_pending(pending))
    }

    async fn pending_of(
        &self,
        registry: String,
        listed: Listed,
        way: Option<usize>,
        update_of: Option<(String, ServerConfig)>,
    ) -> Result<Pending, CatalogError> {
        let ways = registry::ways(&listed.server);
        let chosen = match way {
            Some(i) => ways.get(i),
            None => ways.iter().find(|w| w.refused.is_none()),
        };
        let name = listed.server.name.clone();
        let Some(w) = chosen else {
            let why = ways
                .iter()
                .find_map(|w| w.refused.clone())
                .unwrap_or_else(|| "it lists no package and no remote".into());
            return Err(CatalogError::NoWay(name, why));
        };
        if let Some(why) = &w.refused {
            return Err(CatalogError::NoWay(name, why.clone()));
        }
        let s = &listed.server;
        let (layout, bundle) = match s.packages.get(w.index) {
            Some(p) if PackageKind::of(&p.registry_type) == Some(PackageKind::Mcpb) => {
                let sha = p.file_sha256.clone().unwrap_or_default();
                let bytes = self.catalog.client.download(&p.identifier, &sha).await?;
                (
                    Some(Layout::of_package(p)),
                    Some(Box::new(self.open_bundle(bytes).await?)),
                )
            }
            Some(p) => (Some(Layout::of_package(p)), None),
            None => (
                s.remotes
                    .get(w.index - s.packages.len())
                    .map(Layout::of_remote),
                None,
            ),
        };
        let mut fields = bundle
            .as_ref()
            .map(|b| bundle::form(&b.manifest, &UserDirs::of_user()))
            .unwrap_or_default();
        fields.extend(layout.iter().flat_map(|l| l.fields.clone()));
        let wanted = s.name.rsplit('/').next().unwrap_or(&s.name).to_string();
        Ok(Pending {
            default_name: self.free_server_name(&wanted),
            origin: Origin::Registry {
                registry,
                listed: Box::new(listed),
                way: w.index,
                bundle,
            },
            fields,
            layout,
            update_of,
            completes: false,
            folder_tag: crate::form::random_tag(),
        })
    }

    /// Opens a bundle (a file's bytes): checked, nothing written.
    pub async fn open_bundle(&self, bytes: Vec<u8>) -> Result<Opened, BundleError> {
        let machine = self.machine();
        let roots = self.catalog.extra_roots.clone();
        tokio::task::spawn_blocking(move || bundle::open(bytes, &machine, &roots))
            .await
            .map_err(|e| BundleError::Io(std::io::Error::other(e.to_string())))?
    }

    /// Prepares installing a bundle the user opened.
    pub async fn bundle_prepare(&self, bytes: Vec<u8>) -> Result<Prepared, CatalogError> {
        let opened = self.open_bundle(bytes).await?;
        let m = &opened.manifest;
        let wanted = m.display_name.clone().unwrap_or(m.name.clone());
        let pending = Pending {
            default_name: self.free_server_name(&wanted),
            fields: bundle::form(m, &UserDirs::of_user()),
            origin: Origin::Bundle(Box::new(opened)),
            layout: None,
            update_of: None,
            completes: false,
            folder_tag: crate::form::random_tag(),
        };
        Ok(self.keep_pending(pending))
    }

    /// Prepares updating `server` to its registry's latest version (the same kind of package,
    /// or remote), its form filled with what it was installed with.
    pub async fn catalog_prepare_update(&self, server: &str) -> Result<Prepared, CatalogError> {
        let current = self
            .mcp_config()
            .servers
            .get(server)
            .cloned()
            .ok_or_else(|| McpConfigError::NoServer(server.into()))?;
        let source = current.source.clone().filter(|s| s.registry.is_some());
        let Some(source) = source else {
            return Err(CatalogError::NotFromRegistry(server.into()));
        };
        let registry = source.registry.clone().unwrap_or_default();
        let (listed, _) = self.catalog.client.latest(&registry, &source.name).await?;
        let ways = registry::ways(&listed.server);
        let same = |w: &&Way| {
            w.refused.is_none()
                && w.kind == source.kind
                && match (&source.package, listed.server.packages.get(w.index)) {
                    (Some(id), Some(p)) if source.kind != "mcpb" && source.kind != "oci" => {
                        &p.identifier == id
                    }
                    _ => true,
                }
        };
        let way = ways.iter().find(same).map(|w| w.index);
        let pending = self
            .pending_of(registry, listed, way, Some((server.to_string(), current)))
            .await?;
        Ok(self.keep_pending(pending))
    }

    fn keep_pending(&self, p: Pending) -> Prepared {
        let token = crate::form::random_tag();
        let view = p.view(&token);
        let mut pending = self.catalog.pending.lock().unwrap();
        pending.push((token, p));
        if pending.len() > MAX_PENDING {
            pending.remove(0);
        }
        view
    }

    fn pending(&self, token: &str) -> Result<Pending, CatalogError> {
        self.catalog
            .pending
            .lock()
            .unwrap()
            .iter()
            .find(|(t, _)| t == token)
            .map(|(_, p)| p.clone())
            .ok_or(CatalogError::Install(InstallError::Gone))
    }

    /// Forgets a prepared install.
    pub fn catalog_cancel(&self, token: &str) {
        self.catalog
            .pending
            .lock()
            .unwrap()
            .retain(|(t, _)| t != token);
    }

    fn build(&self, p: &Pending, choices: &Choices) -> Result<install::Built, CatalogError> {
        let machine = self.machine();
        let dirs = UserDirs::of_user();
        let host = Host {
            machine: &machine,
            dirs: &dirs,
            bundles: &self.catalog.bundles,
        };
        let built = p.build(choices, &host)?;
        if p.update_of.is_none() {
            let others: Vec<String> = self.mcp_config().servers.keys().cloned().collect();
            let mut check = built.config.clone();
            // its folder is made when it is installed
            check.cwd = None;
            mcp::validate_server(&built.name, &check, &others).map_err(|e| {
                McpConfigError::Invalid {
                    field: e.field.into(),
                    message: e.message,
                }
            })?;
        }
        Ok(built)
    }

    /// The exact server `choices` would add, nothing saved.
    pub fn catalog_preview(
        &self,
        token: &str,
        choices: &Choices,
    ) -> Result<InstallPreview, CatalogError> {
        let p = self.pending(token)?;
        Ok(self.build(&p, choices)?.preview)
    }

    /// Installs: unpacks its bundle (if it is one), saves the server (a new one turned off and
    /// not trusted; an update as the user had it), and returns its name and the config to apply.
    pub async fn catalog_install(
        &self,
        token: &str,
        choices: &Choices,
    ) -> Result<(String, mcp::McpConfig), CatalogError> {
        let p = self.pending(token)?;
        let built = self.build(&p, choices)?;
        let dir = match (p.bundle(), &built.bundle_dir) {
            (Some(b), Some(dir)) => {
                let own = p.update_of.as_ref().map(|(n, _)| n.as_str());
                if let Some(other) = self.server_in(dir, own) {
                    return Err(BundleError::Unsafe(format!(
                        "would be unpacked into {}, which the server “{other}” uses",
                        dir.display()
                    ))
                    .into());
                }
                let (b, dir) = (b.clone(), dir.clone());
                let root = self.catalog.bundles.clone();
                tokio::task::spawn_blocking(move || {
                    let made = bundle::unpack(&b, &dir);
                    if made.is_err() {
                        remove_empty_up_to(&dir, &root);
                    }
                    made
                })
                .await
                .map_err(|e| BundleError::Io(std::io::Error::other(e.to_string())))??;
                Some(built.bundle_dir.clone().unwrap_or_default())
            }
            _ => None,
        };
        let original = p.update_of.as_ref().map(|(n, _)| n.as_str());
        let saved = self
            .save_server(original, None, &built.name, built.config.clone())
            .await;
        match saved {
            Ok(config) => {
                self.catalog_cancel(token);
                if let Some((_, old)) = &p.update_of {
                    // what the user accepted of the old version is what the new one is checked
                    // against (before the config is applied and it starts)
                    if let Some(new) = config.servers.get(&built.name) {
                        let (from, to) = (old.identity(), new.identity());
                        if from != to {
                            if let Err(e) = self.store.carry_pins(&from, &to).await {
                                tracing::warn!("could not carry the pins over to the update: {e}");
                            }
                        }
                    }
                    // the folder of the version it replaced, when nothing uses it any more
                    self.remove_unused_bundle(old, &config);
                }
                Ok((built.name, config))
            }
            Err(e) => {
                // its folder is new (an update's too): nothing uses it
                if let Some(dir) = dir {
                    let _ = std::fs::remove_dir_all(&dir);
                    remove_empty_up_to(&dir, &self.catalog.bundles);
                }
                Err(e.into())
            }
        }
    }

    /// A configured server (not `except`) whose bundle folder or working folder is `dir` or
    /// inside it, or whose bundle folder holds `dir`.
    fn server_in(&self, dir: &Path, except: Option<&str>) -> Option<String> {
        self.mcp_config()
            .servers
            .iter()
            .filter(|(name, _)| Some(name.as_str()) != except)
            .find(|(_, c)| {
                let bundle = c.source.as_ref().and_then(|s| s.bundle_dir.as_deref());
                let inside = |p: &str| Path::new(p).starts_with(dir);
                bundle.is_some_and(|b| inside(b) || dir.starts_with(b))
                    || c.cwd.as_deref().is_some_and(inside)
            })
            .map(|(name, _)| name.clone())
    }

    /// Removes the folder `old`'s bundle was unpacked into, when it is the app's and no server
    /// of `now` uses it (an update's old version, a deleted server's).
    pub(super) fn remove_unused_bundle(&self, old: &ServerConfig, now: &mcp::McpConfig) {
        let Some(dir) = old.source.as_ref().and_then(|s| s.bundle_dir.clone()) else {
            return;
        };
        let used = now
            .servers
            .values()
            .any(|c| c.source.as_ref().and_then(|s| s.bundle_dir.as_ref()) == Some(&dir));
        let ours = Path::new(&dir).starts_with(&self.catalog.bundles);
        if !used && ours {
            let _ = std::fs::remove_dir_all(&dir);
            remove_empty_up_to(Path::new(&dir), &self.catalog.bundles);
        }
    }

    /// The installed servers whose registry has a newer version (registries that cannot be
    /// reached are skipped).
    pub async fn catalog_updates(&self) -> Vec<UpdateAvailable> {
        let mut out = Vec::new();
        let servers: BTreeMap<String, ServerConfig> = self.mcp_config().servers;
        for (server, c) in servers {
            let Some(s) = c.source else { continue };
            let Some(registry) = &s.registry else {
                continue;
            };
            let Ok((latest, _)) = self.catalog.client.latest(registry, &s.name).await else {
                continue;
            };
            if newer(&latest.server.version, &s.version) {
                out.push(UpdateAvailable {
                    server,
                    name: s.name.clone(),
                    installed: s.version.clone(),
                    latest: latest.server.version.clone(),
                });
            }
        }
        out
    }

    /// An entry's icon as a `data:` URL (https only), or none.
    pub async fn catalog_icon(&self, url: &str) -> Option<String> {
        self.catalog.client.icon(url).await
    }

    fn free_server_name(&self, wanted: &str) -> String {
        let config = self.mcp_config();
        install::free_name(wanted, &|n| {
            config.servers.keys().any(|k| k.eq_ignore_ascii_case(n))
        })
    }
}

/// Removes `dir`'s empty parents up to (and with) `root`, when empty.
fn remove_empty_up_to(dir: &Path, root: &Path) {
    let mut at = dir.parent();
    while let Some(d) = at {
        if !d.starts_with(root) || std::fs::remove_dir(d).is_err() {
            return;
        }
        if d == root {
            return;
        }
        at = d.parent();
    }
}

/// Whether version `a` is newer than `b`: as semantic versions when both are, else when they
/// differ.
pub fn newer(a: &str, b: &str) -> bool {
    let parse = |v: &str| semver::Version::parse(v.trim_start_matches('v')).ok();
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x > y,
        _ => a != b,
    }
}
