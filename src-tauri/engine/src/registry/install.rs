//! An install, from what it is made of (a registry entry's package or remote, or a bundle) to
//! the config it saves and the preview shown before: the exact command, arguments and
//! environment (secrets masked), the proposed sandbox (no network unless the user allows it or
//! the server is remote; only the folders the user picks), and for an update the config's diff.
//!
//! A prepared install is a `Pending` (a registry way or a bundle, its form, the server it updates
//! or completes: `Runtime::catalog_prepare` picks a server installed from the same entry whose
//! required secret was never set, `lacks_secret`, so installing again completes it) → `build`: the
//! config (a new one turned off and not trusted, like an import; an update keeps the user's
//! choices) with the proposed sandbox (only the grants of `grants.rs`, and `onlyNamed`: the
//! sandbox's policy derives nothing from the arguments), its `source` (registry, name, version,
//! kind, the non-secret values given, a bundle's SHA-256), and the preview (`preview.rs`: also
//! every grant with why and the network it will have, `NetworkView`: the sandbox's, or a
//! container's own).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::grants;
use super::layout::Layout;
use super::plan::{self, Launch, PackageKind};
use super::preview::{config_diff, preview};
pub use super::preview::{GrantReason, GrantView, InstallPreview, NetworkView, Note, PreviewVar};
use super::server_json::Listed;
use crate::bundle::{self, Machine, Opened, Signature, UserDirs};
use crate::form::{self, Field, FormError, Given, Target};
use crate::mcp::{InstallSource, SandboxConfig, SandboxSetting, ServerConfig, Transport};

/// What an install is made of.
#[derive(Debug, Clone)]
pub enum Origin {
    /// Way `way` of a registry entry (for an mcpb package, `bundle` is its download, opened).
    Registry {
        registry: String,
        listed: Box<Listed>,
        way: usize,
        bundle: Option<Box<Opened>>,
    },
    /// A bundle file the user opened.
    Bundle(Box<Opened>),
}

/// An install being prepared: what it is made of, its form, and the server it updates.
#[derive(Debug, Clone)]
pub struct Pending {
    pub origin: Origin,
    pub fields: Vec<Field>,
    /// The registry way's own inputs (for a bundle from a registry: besides its settings).
    pub layout: Option<Layout>,
    /// The configured server this replaces (an update), and its config.
    pub update_of: Option<(String, ServerConfig)>,
    /// The update completes that server: it was installed from this entry before, and a
    /// secret it needs was never set (installing it again sets it, and adds no second one).
    pub completes: bool,
    pub default_name: String,
    /// A bundle's folder's own part (`form::random_tag`, made once per prepared install, so the
    /// preview shows the folder it is unpacked into): no two installs share a folder.
    pub folder_tag: String,
}

/// A prepared install as the window shows it before the form is filled.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    pub token: String,
    pub title: String,
    /// The registry name (`io.github.x/y`) or the bundle's name.
    pub name: String,
    pub version: String,
    pub description: String,
    pub kind: String,
    pub default_name: String,
    pub fields: Vec<Field>,
    /// For an update: the values it has now (secrets as `{"secret": "kept"}`).
    pub values: BTreeMap<String, Value>,
    pub signature: Option<Signature>,
    /// For an update: the server, and the version it is at.
    pub update: Option<UpdateView>,
    /// A remote: no sandbox, the network is its nature.
    pub remote: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateView {
    pub server: String,
    pub from: String,
    pub to: String,
    /// It completes that server (a secret it needs was never set), rather than updating it.
    pub completes: bool,
}

/// What the user chose.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Choices {
    /// The name to save it under (ignored for an update: it keeps its name).
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub values: BTreeMap<String, Value>,
    /// Let it use the network (a program on this computer; a remote always does).
    #[serde(default)]
    pub network: bool,
    /// Folders (or files) it may also read, picked by the user (absolute, or `~/…`).
    #[serde(default)]
    pub folders: Vec<String>,
    /// Required secrets may be left unset: the server is added turned off until they are (the
    /// command line, which cannot ask for them).
    #[serde(default)]
    pub defer_secrets: bool,
    /// Folders typed again to let it write them although they decide what runs when the user
    /// logs in (`/`, home, `~/.config`, …: [`grants::STARTUP_PLACES`]).
    #[serde(default)]
    pub confirm_write: Vec<String>,
    /// Folders (or files) it may also write, given by the user (`--write`, or the preview's
    /// offer of the folder a database needs).
    #[serde(default)]
    pub write: Vec<String>,
    /// Without the network, the hosts it may still reach (`--allow-host`; the sandbox's
    /// `hosts`).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Proposed read grants ([`grants::READ_PROPOSALS`]) the user left out, by path.
    #[serde(default)]
    pub declined: Vec<String>,
}

/// Why an install cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}")]
    Field(#[from] FormError),
    #[error("This way of installing it is refused: {0}.")]
    Refused(String),
    #[error("That install is no longer open; start it again.")]
    Gone,
}

/// What this computer offers an install: its programs, its folders, where bundles go.
pub struct Host<'a> {
    pub machine: &'a dyn Machine,
    pub dirs: &'a UserDirs,
    pub bundles: &'a Path,
}

/// The built install: the config to save, its preview, and where its bundle unpacks.
pub struct Built {
    pub name: String,
    pub config: ServerConfig,
    pub preview: InstallPreview,
    pub bundle_dir: Option<PathBuf>,
}

impl Pending {
    /// The bundle it installs, if it is one.
    pub fn bundle(&self) -> Option<&Opened> {
        match &self.origin {
            Origin::Bundle(o) => Some(o),
            Origin::Registry { bundle, .. } => bundle.as_deref(),
        }
    }

    fn kind(&self) -> String {
        match &self.origin {
            Origin::Bundle(_) => "mcpb".into(),
            Origin::Registry { listed, way, .. } => super::ways(&listed.server)
                .get(*way)
                .map(|w| w.kind.clone())
                .unwrap_or_default(),
        }
    }

    /// The window's view of it.
    pub fn view(&self, token: &str) -> Prepared {
        let (name, title, version, description) = match &self.origin {
            Origin::Registry { listed, .. } => {
                let s = &listed.server;
                (
                    s.name.clone(),
                    s.title.clone().unwrap_or(s.name.clone()),
                    s.version.clone(),
                    s.description.clone(),
                )
            }
            Origin::Bundle(o) => {
                let m = &o.manifest;
                (
                    m.name.clone(),
                    m.display_name.clone().unwrap_or(m.name.clone()),
                    m.version.clone(),
                    m.description.clone(),
                )
            }
        };
        let update = self.update_of.as_ref().map(|(server, c)| UpdateView {
            server: server.clone(),
            from: c
                .source
                .as_ref()
                .map(|s| s.version.clone())
                .unwrap_or_default(),
            to: version.clone(),
            completes: self.completes,
        });
        Prepared {
            token: token.into(),
            title,
            name,
            version,
            description,
            kind: self.kind(),
            default_name: self.default_name.clone(),
            fields: self.fields.clone(),
            values: self.current_values(),
            signature: self.bundle().map(|b| b.signature.clone()),
            update,
            remote: self.remote(),
        }
    }

    /// The package's identifier, for a registry entry's package.
    fn package(&self) -> Option<&str> {
        match &self.origin {
            Origin::Registry { listed, way, .. } => listed
                .server
                .packages
                .get(*way)
                .map(|p| p.identifier.as_str()),
            Origin::Bundle(_) => None,
        }
    }

    fn remote(&self) -> bool {
        match &self.origin {
            Origin::Registry { listed, way, .. } => super::ways(&listed.server)
                .get(*way)
                .is_some_and(|w| w.remote),
            Origin::Bundle(_) => false,
        }
    }

    /// For an update: the values the server was installed with (secrets: kept).
    fn current_values(&self) -> BTreeMap<String, Value> {
        let Some((_, current)) = &self.update_of else {
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        let inputs = current.source.as_ref().map(|s| &s.inputs);
        for f in &self.fields {
            if f.secret {
                if self.keepable(f) {
                    out.insert(f.key.clone(), json!({"secret": "kept"}));
                }
            } else if let Some(v) = inputs.and_then(|i| i.get(&f.key)) {
                out.insert(f.key.clone(), v.clone());
            }
        }
        out
    }

    /// Whether the server being updated lacks a secret it needs: a required secret field
    /// without a stored value.
    pub fn lacks_secret(&self) -> bool {
        self.update_of.is_some()
            && self
                .fields
                .iter()
                .any(|f| f.secret && f.required && !self.keepable(f))
    }

    /// Whether the server being updated has a stored value for secret field `f`.
    fn keepable(&self, f: &Field) -> bool {
        let Some((_, current)) = &self.update_of else {
            return false;
        };
        let stored =
            |v: Option<&crate::secrets::SecretValue>| v.is_some_and(|v| v.reference().is_some());
        match &f.target {
            Target::Env(n) => stored(current.env.get(n)),
            Target::Header(n) => stored(current.headers.get(n)),
            Target::Setting(key) => {
                // the variables of the bundle's environment that are this setting
                let Some(spec) = self
                    .bundle()
                    .and_then(|b| b.manifest.server.mcp_config.as_ref())
                else {
                    return false;
                };
                let var = format!("${{user_config.{key}}}");
                spec.env
                    .iter()
                    .filter(|(_, v)| v.contains(&var))
                    .any(|(n, _)| stored(current.env.get(n)))
            }
            _ => false,
        }
    }

    /// The server these choices make, and its preview.
    pub fn build(&self, choices: &Choices, host: &Host) -> Result<Built, InstallError> {
        let mut fields = self.fields.clone();
        if choices.defer_secrets {
            for f in fields.iter_mut().filter(|f| f.secret) {
                f.required = false;
            }
        }
        let given = form::read_values(
            &fields,
            &choices.values,
            &|f| self.keepable(f),
            host.dirs.home.as_deref(),
        )?;
        let missing: Vec<String> = self
            .fields
            .iter()
            .filter(|f| f.secret && f.required && !given.contains_key(&f.key))
            .map(|f| f.key.clone())
            .collect();
        let (mut config, bundle_dir, notes) = self.config(&given, choices, host)?;
        let stdio = config.transport() == Transport::Stdio;
        let mut picked = Vec::new();
        for f in choices.folders.iter().filter(|f| !f.trim().is_empty()) {
            let p = form::expand_home(f.trim(), host.dirs.home.as_deref());
            if !p.is_absolute() || !p.exists() {
                return Err(InstallError::Field(FormError {
                    field: "folders".into(),
                    message: format!(
                        "{} is not an existing folder or file (give its full path).",
                        f.trim()
                    ),
                }));
            }
            let p = p.display().to_string();
            if !picked.contains(&p) {
                picked.push(p);
            }
        }
        let home = host.dirs.home.as_deref();
        let grants::Grants {
            list: mut listed,
            needs_folder,
        } = grants::grants(
            &self.fields,
            &given,
            bundle_dir.as_deref(),
            grants::Picks {
                read: &picked,
                write: &choices.write,
                confirmed: &choices.confirm_write,
            },
            home,
        )?;
        // what a well-known tool it runs reads, proposed (never for a container: it sees only
        // what it mounts)
        if stdio && self.kind() != "oci" {
            for g in grants::proposed(self.package(), &config.command, home, &choices.declined) {
                if !listed.iter().any(|l| l.path == g.path) {
                    listed.push(g);
                }
            }
        }
        let mut notes = notes;
        notes.extend(needs_folder.into_iter().map(Note::FileNeedsFolder));
        let mut hosts: Vec<String> = Vec::new();
        for h in choices
            .hosts
            .iter()
            .map(|h| h.trim())
            .filter(|h| !h.is_empty())
        {
            crate::mcp::HostRule::parse(h).map_err(|message| FormError {
                field: "hosts".into(),
                message,
            })?;
            if !hosts.iter().any(|x| x == h) {
                hosts.push(h.to_string());
            }
        }
        let paths = |write: bool| -> Vec<String> {
            listed
                .iter()
                .filter(|g| g.write == write)
                .map(|g| g.path.clone())
                .collect()
        };
        if let (Some(layout), true) = (&self.layout, self.kind() == "oci") {
            // a container mounts only what it was given, as it was given
            let real = |write: bool| -> Vec<PathBuf> {
                paths(write)
                    .iter()
                    .map(|p| Path::new(p).canonicalize().unwrap_or_else(|_| p.into()))
                    .collect()
            };
            let (write, read) = (real(true), real(false));
            let runtime = plan::argv(&layout.runtime_args, &given);
            let mountable = plan::Mountable {
                write: &write,
                read: &read,
            };
            if let Some(why) = plan::container_refusal(&runtime, Some(mountable)) {
                return Err(InstallError::Refused(why));
            }
        }
        // only what is listed: nothing guessed from the arguments a publisher wrote
        config.sandbox = stdio.then_some(SandboxSetting::On(SandboxConfig {
            network: choices.network,
            hosts: if choices.network { vec![] } else { hosts },
            read: paths(false),
            write: paths(true),
            only_named: true,
            ..Default::default()
        }));
        config.source = Some(self.source(&given, bundle_dir.as_deref()));
        let (name, diff) = match &self.update_of {
            Some((name, current)) => {
                // an update keeps what the user decided about the server
                config.disabled = current.disabled;
                config.trusted = current.trusted;
                config.timeout = current.timeout;
                config.log_level = current.log_level.clone();
                (name.clone(), Some(config_diff(current, &config)))
            }
            None => {
                // like an import: turned off and not believed until the user says so
                config.disabled = true;
                config.trusted = Some(false);
                (choices.name.trim().to_string(), None)
            }
        };
        if !missing.is_empty() {
            config.disabled = true;
        }
        let mut preview = preview(&name, self.kind(), &config, self.bundle(), notes, diff);
        preview.missing = missing;
        if stdio {
            preview.grants = listed;
        }
        Ok(Built {
            name,
            config,
            preview,
            bundle_dir,
        })
    }

    fn config(
        &self,
        given: &BTreeMap<String, Given>,
        choices: &Choices,
        host: &Host,
    ) -> Result<(ServerConfig, Option<PathBuf>, Vec<Note>), InstallError> {
        let mut notes = Vec::new();
        let has = |p: &str| host.machine.find(p).is_some();
        if let Some(b) = self.bundle() {
            let server = match &self.update_of {
                Some((name, _)) => name.as_str(),
                None => choices.name.trim(),
            };
            let dir = bundle::install_dir(host.bundles, server, &b.manifest, &self.folder_tag);
            let mut c = bundle::config(b, &dir, given, host.dirs, host.machine);
            // a registry's mcpb package may ask for more environment
            if let Some(l) = &self.layout {
                c.env.extend(plan::pairs(&l.env, given));
            }
            return Ok((c, Some(dir), notes));
        }
        let Origin::Registry { listed, way, .. } = &self.origin else {
            return Err(InstallError::Gone);
        };
        let layout = self.layout.clone().unwrap_or_default();
        if let Some(why) = &layout.refused {
            return Err(InstallError::Refused(why.clone()));
        }
        if listed.deprecated() {
            notes.push(Note::Deprecated {
                message: listed.official.status_message.clone(),
            });
        }
        let s = &listed.server;
        let c = if let Some(p) = s.packages.get(*way) {
            if let Some(why) = plan::refusal(p) {
                return Err(InstallError::Refused(why));
            }
            let c = plan::package_config(
                p,
                &layout,
                given,
                &Launch {
                    has_program: &has,
                    network: choices.network,
                },
            );
            // what the host would refuse to fetch it with (an interpreter given as a path)
            if let Err(why) = crate::mcp::sandbox::to_fetch(&c.command, &c.args) {
                return Err(InstallError::Refused(why));
            }
            match PackageKind::of(&p.registry_type) {
                Some(PackageKind::Mcpb) | None => {}
                Some(PackageKind::Oci) => {
                    notes.push(Note::Container);
                    if let Some((image, tag)) =
                        plan::oci_image(p).as_deref().and_then(plan::oci_tag)
                    {
                        notes.push(Note::ImageByTag { image, tag });
                    }
                }
                Some(PackageKind::Npm | PackageKind::Pypi | PackageKind::Nuget) => {
                    notes.push(Note::DownloadsOnStart {
                        launcher: c.command.clone(),
                        package: c
                            .args
                            .iter()
                            .find(|a| a.starts_with(&p.identifier))
                            .cloned()
                            .unwrap_or_default(),
                    })
                }
            }
            if !has(&c.command) {
                notes.push(Note::ProgramMissing {
                    program: c.command.clone(),
                });
            }
            c
        } else {
            let r = s
                .remotes
                .get(way - s.packages.len())
                .ok_or(InstallError::Gone)?;
            let c = plan::remote_config(r, &layout, given).map_err(InstallError::Refused)?;
            if let Some(host) = c
                .url
                .as_deref()
                .and_then(|u| url::Url::parse(u).ok())
                .and_then(|u| u.host_str().map(String::from))
            {
                notes.push(Note::Remote { host });
            }
            c
        };
        Ok((c, None, notes))
    }

    /// What the server remembers of where it came from.
    fn source(&self, given: &BTreeMap<String, Given>, dir: Option<&Path>) -> InstallSource {
        let inputs = self
            .fields
            .iter()
            .filter(|f| !f.secret)
            .filter_map(|f| {
                let v = match given.get(&f.key)? {
                    Given::Text(t) => json!(t),
                    Given::List(l) => json!(l),
                    Given::Bool(b) => json!(b),
                    Given::Keep => return None,
                };
                Some((f.key.clone(), v))
            })
            .collect();
        let (registry, name, version, package) = match &self.origin {
            Origin::Registry {
                registry,
                listed,
                way,
                ..
            } => {
                let s = &listed.server;
                let package = s
                    .packages
                    .get(*way)
                    .map(|p| p.identifier.clone())
                    .or_else(|| {
                        s.remotes
                            .get(way - s.packages.len())
                            .and_then(|r| r.url.clone())
                    });
                (
                    Some(registry.clone()),
                    s.name.clone(),
                    s.version.clone(),
                    package,
                )
            }
            Origin::Bundle(o) => (
                None,
                o.manifest.name.clone(),
                o.manifest.version.clone(),
                None,
            ),
        };
        InstallSource {
            registry,
            name,
            version,
            kind: self.kind(),
            package,
            bundle_dir: dir.map(|d| d.display().to_string()),
            bundle_sha256: self.bundle().map(|b| b.sha256.clone()),
            inputs,
        }
    }
}

/// A free server name from `wanted`: only the characters a name may have, at most 40, `-2`,
/// `-3`, … when taken (letter case ignored).
pub fn free_name(wanted: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let mut base: String = wanted
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches(['-', '.', ' '])
        .chars()
        .take(36)
        .collect();
    if base.is_empty() {
        base = "server".into();
    }
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|n| !taken(n))
        .unwrap_or(base)
}
