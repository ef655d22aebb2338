//! MCP Bundles (`.mcpb`): a zip with `manifest.json` and the server's files. Opening one checks
//! its signature (when it has one), its archive (`archive.rs`), its manifest (`manifest.rs`) and
//! whether this computer can run it, and writes nothing; installing unpacks it into the app's data
//! (`bundles/<server>/<version>-<tag>`: a folder of its own, never over another's), all or
//! nothing, and makes the server's config from its `mcp_config` with the user's settings.
//!
//! The form comes from `user_config`; the config from `mcp_config` with `${__dirname}`, `${HOME}`,
//! `${DOCUMENTS}`, `${pathSeparator}`, `${user_config.x}` (a list as several arguments). Unpacking
//! goes into `bundles/<paths::folder_name(server)>/<version>-<tag>` (`install_dir`; the tag random
//! per prepared install, `Pending::folder_tag`) through a fresh folder renamed into place, removed
//! on any failure, never over a folder that exists; `catalog_install` also refuses a folder another
//! configured server uses. The config's `source.bundleSha256` is the file's SHA-256, part of
//! `ServerConfig::identity`.

pub mod archive;
pub mod manifest;
pub mod signature;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::form::{Field, FieldKind, Given, Target};
use crate::mcp::ServerConfig;
use crate::secrets::SecretValue;
pub use archive::{ArchiveError, Limits, LIMITS};
pub use manifest::{Manifest, OptionType, ServerType};
pub use signature::Signature;

/// The largest bundle opened (the file, or a download).
pub const MAX_BUNDLE: u64 = 256 * 1024 * 1024;
/// The largest `manifest.json` read.
const MAX_MANIFEST: u64 = 1024 * 1024;

/// Why a bundle is refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("This bundle is larger than {} MB.", MAX_BUNDLE / (1024 * 1024))]
    TooBig,
    #[error("This is not a valid MCP Bundle: {0}.")]
    Archive(#[from] ArchiveError),
    #[error("This bundle's manifest is not valid: {0}.")]
    Manifest(String),
    #[error("This bundle is refused: {0}.")]
    Signature(#[from] signature::BadSignature),
    #[error("This bundle cannot run on this computer: {0}.")]
    Incompatible(String),
    #[error("This bundle {0}.")]
    Unsafe(String),
    #[error("The bundle could not be unpacked: {0}")]
    Io(#[from] std::io::Error),
}

/// What the bundle needs from this computer, asked of it: a program on the PATH, and the version
/// it prints.
pub trait Machine {
    fn find(&self, program: &str) -> Option<PathBuf>;
    fn version(&self, program: &Path) -> Option<String>;
}

/// A bundle opened and checked, nothing written yet.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The whole file as it came (signature block included).
    pub bytes: std::sync::Arc<Vec<u8>>,
    /// How many of them are the zip.
    pub zip_len: usize,
    pub manifest: Manifest,
    pub signature: Signature,
    /// SHA-256 of the whole file, hex.
    pub sha256: String,
    /// The programs it runs with, as found (`node` → `/usr/bin/node`).
    pub runtime: Option<PathBuf>,
}

/// Opens a bundle: signature, archive, manifest, compatibility. `extra_roots`: more trusted
/// certificates (PEM), for tests.
pub fn open(
    bytes: Vec<u8>,
    machine: &dyn Machine,
    extra_roots: &[u8],
) -> Result<Opened, BundleError> {
    if bytes.len() as u64 > MAX_BUNDLE {
        return Err(BundleError::TooBig);
    }
    let sha256 = sha256_hex(&bytes);
    let (zip, sig) = signature::split(&bytes)?;
    let signature = match sig {
        Some(der) => signature::verify(zip, der, extra_roots)?,
        None => Signature::Unsigned,
    };
    let zip_len = zip.len();
    let mut archive = archive::Archive::open(zip, LIMITS)?;
    let text = archive.read("manifest.json", MAX_MANIFEST)?;
    let manifest = manifest::parse(&text).map_err(BundleError::Manifest)?;
    if archive.find(&manifest.server.entry_point).is_none() {
        return Err(BundleError::Manifest(format!(
            "its entry_point \"{}\" is not in the bundle",
            manifest.server.entry_point
        )));
    }
    secrets_stay_off_the_command_line(&manifest)?;
    let runtime = compatible(&manifest, machine)?;
    Ok(Opened {
        bytes: std::sync::Arc::new(bytes),
        zip_len,
        manifest,
        signature,
        sha256,
        runtime,
    })
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of `b`, in hex (what a registry's `fileSha256` says).
pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// A sensitive setting goes to the environment (kept in the secret store), never into the
/// command line, which every program on the computer can read.
fn secrets_stay_off_the_command_line(m: &Manifest) -> Result<(), BundleError> {
    let Some(c) = &m.server.mcp_config else {
        return Ok(());
    };
    let overrides = c.platform_overrides.values();
    let command_line = std::iter::once(&c.command)
        .chain(&c.args)
        .chain(overrides.clone().flat_map(|o| o.command.iter()))
        .chain(overrides.flat_map(|o| o.args.iter().flatten()));
    for t in command_line {
        for v in manifest::variables(t) {
            let key = v.strip_prefix("user_config.").unwrap_or_default();
            if m.user_config.get(key).is_some_and(|o| o.sensitive) {
                return Err(BundleError::Unsafe(format!(
                    "passes its sensitive setting \"{key}\" on the command line, where other \
                     programs on this computer can read it"
                )));
            }
        }
    }
    Ok(())
}

/// Whether this computer can run it (its platforms, the runtime its server type needs and the
/// versions it asks for); the runtime program found.
fn compatible(m: &Manifest, machine: &dyn Machine) -> Result<Option<PathBuf>, BundleError> {
    let here = manifest::this_platform();
    let compat = m.compatibility.as_ref();
    if let Some(platforms) = compat.and_then(|c| c.platforms.as_ref()) {
        if !platforms.iter().any(|p| p == here) {
            let names: Vec<&str> = platforms.iter().map(|p| platform_name(p)).collect();
            return Err(BundleError::Incompatible(format!(
                "it is made for {}, and this computer runs {}",
                names.join(" and "),
                platform_name(here)
            )));
        }
    }
    let (runtime, label, candidates): (&str, &str, &[&str]) = match m.server.kind {
        ServerType::Node => ("node", "Node.js", &["node"]),
        ServerType::Python => ("python", "Python", &["python3", "python"]),
        ServerType::Uv => ("python", "uv", &["uv"]),
        ServerType::Binary => ("", "", &[]),
    };
    let found = candidates.iter().find_map(|c| machine.find(c));
    if !candidates.is_empty() && found.is_none() {
        return Err(BundleError::Incompatible(format!(
            "it needs {label}, which is not installed (no {} on the PATH)",
            candidates.join(" or ")
        )));
    }
    let wanted = compat.and_then(|c| c.runtimes.get(runtime));
    if let (Some(program), Some(wanted), false) = (&found, wanted, m.server.kind == ServerType::Uv)
    {
        let have = machine.version(program).unwrap_or_default();
        if manifest::meets(&have, wanted) == Some(false) {
            return Err(BundleError::Incompatible(format!(
                "it needs {label} {wanted}, and this computer has {}",
                have.trim()
            )));
        }
    }
    Ok(found)
}

fn platform_name(p: &str) -> &str {
    match p {
        "darwin" => "macOS",
        "win32" => "Windows",
        "linux" => "Linux",
        other => other,
    }
}

/// The user's folders the manifest's defaults may name.
#[derive(Debug, Clone, Default)]
pub struct UserDirs {
    pub home: Option<PathBuf>,
    pub desktop: Option<PathBuf>,
    pub documents: Option<PathBuf>,
    pub downloads: Option<PathBuf>,
}

impl UserDirs {
    pub fn of_user() -> UserDirs {
        UserDirs {
            home: dirs::home_dir(),
            desktop: dirs::desktop_dir(),
            documents: dirs::document_dir(),
            downloads: dirs::download_dir(),
        }
    }

    fn variables(&self) -> BTreeMap<String, String> {
        let mut v = BTreeMap::new();
        for (name, p) in [
            ("HOME", &self.home),
            ("DESKTOP", &self.desktop),
            ("DOCUMENTS", &self.documents),
            ("DOWNLOADS", &self.downloads),
        ] {
            if let Some(p) = p {
                v.insert(name.to_string(), p.display().to_string());
            }
        }
        v.insert("pathSeparator".into(), "/".into());
        v.insert("/".into(), "/".into());
        v
    }
}

/// The form of a bundle's `user_config`. A folder or file setting starts empty: what it is
/// given becomes a place the server may write, so the publisher's default (`${HOME}`, `/`) is
/// only shown as a suggestion (its placeholder), never given for the user.
pub fn form(m: &Manifest, dirs: &UserDirs) -> Vec<Field> {
    let vars = dirs.variables();
    m.user_config
        .iter()
        .map(|(key, o)| {
            let kind = match o.kind {
                OptionType::String => FieldKind::Text,
                OptionType::Number => FieldKind::Number,
                OptionType::Boolean => FieldKind::Boolean,
                OptionType::Directory => FieldKind::Directory,
                OptionType::File => FieldKind::File,
            };
            let default = o.default.as_ref().map(|d| substitute_default(d, &vars));
            let (default, placeholder) = match kind {
                FieldKind::Directory | FieldKind::File => (None, default.map(|d| suggestion(&d))),
                _ => (default, None),
            };
            Field {
                key: key.clone(),
                label: o.title.clone(),
                description: Some(o.description.clone()).filter(|d| !d.is_empty()),
                kind,
                choices: vec![],
                required: o.required,
                secret: o.sensitive,
                multiple: o.multiple,
                default,
                placeholder,
                min: o.min,
                max: o.max,
                target: Target::Setting(key.clone()),
            }
        })
        .collect()
}

/// A default as a suggestion's text (a list: its values with commas).
fn suggestion(d: &Value) -> String {
    match d {
        Value::String(s) => format!("e.g. {s}"),
        Value::Array(a) => format!(
            "e.g. {}",
            a.iter()
                .map(|v| v
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string()))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => format!("e.g. {other}"),
    }
}

fn substitute_default(d: &Value, vars: &BTreeMap<String, String>) -> Value {
    match d {
        Value::String(s) => json!(substitute(s, vars)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute_default(x, vars)).collect()),
        other => other.clone(),
    }
}

/// `${name}` → its value; names it does not know are left as they are.
fn substitute(t: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = t.to_string();
    for v in manifest::variables(t) {
        if let Some(value) = vars.get(v) {
            out = out.replace(&format!("${{{v}}}"), value);
        }
    }
    out
}

/// The server's config from the manifest, for the bundle unpacked at `dir`, with the user's
/// settings `given` (checked against [`form`]). Secret settings become values to keep secret.
pub fn config(
    opened: &Opened,
    dir: &Path,
    given: &BTreeMap<String, Given>,
    dirs: &UserDirs,
    machine: &dyn Machine,
) -> ServerConfig {
    let m = &opened.manifest;
    let dirname = dir.display().to_string();
    let mut vars = dirs.variables();
    vars.insert("__dirname".into(), dirname.clone());
    let Some(spec) = &m.server.mcp_config else {
        // a uv server without mcp_config: uv runs its entry point in its project
        let mut c = ServerConfig::new(
            "uv",
            &["run", "--directory", &dirname, &m.server.entry_point],
        );
        c.cwd = Some(dirname);
        return c;
    };
    let o = spec.platform_overrides.get(manifest::this_platform());
    let command = o
        .and_then(|o| o.command.clone())
        .unwrap_or(spec.command.clone());
    let args = o.and_then(|o| o.args.clone()).unwrap_or(spec.args.clone());
    let env = o.and_then(|o| o.env.clone()).unwrap_or(spec.env.clone());
    let fill = |t: &str| -> String {
        let mut out = substitute(t, &vars);
        for v in manifest::variables(t) {
            if let Some((_, value)) = setting_of(v, given) {
                out = out.replace(
                    &format!("${{{v}}}"),
                    &value.map(Given::text).unwrap_or_default(),
                );
            }
        }
        out
    };
    let mut argv = Vec::new();
    for a in &args {
        // a whole argument that is one setting: its values as arguments of their own, none
        // when it has none
        let whole = a
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .and_then(|v| setting_of(v, given).filter(|_| manifest::variables(a).len() == 1));
        match whole {
            Some((_, None)) => {}
            Some((_, Some(g))) => argv.extend(g.items()),
            None => argv.push(fill(a)),
        }
    }
    let mut command = fill(&command);
    if command.contains('/') && !Path::new(&command).is_absolute() {
        command = dir.join(&command).display().to_string();
    } else if command == "python" && machine.find("python").is_none() {
        command = "python3".into();
    }
    let mut c = ServerConfig::new(command, &[]);
    c.args = argv;
    for (name, value) in &env {
        let used: Vec<(&str, Option<&Given>)> = manifest::variables(value)
            .into_iter()
            .filter_map(|v| setting_of(v, given))
            .collect();
        let secret = used
            .iter()
            .any(|(k, _)| m.user_config.get(*k).is_some_and(|o| o.sensitive));
        // a variable that is only a setting the user left empty is left out
        if value.starts_with("${")
            && used.len() == 1
            && used[0].1.is_none()
            && manifest::variables(value).len() == 1
        {
            continue;
        }
        let v = if used.iter().any(|(_, g)| *g == Some(&Given::Keep)) {
            SecretValue::Stored("keep".into())
        } else if secret {
            SecretValue::New(fill(value))
        } else {
            SecretValue::Plain(fill(value))
        };
        c.env.insert(name.clone(), v);
    }
    c.cwd = Some(dirname);
    c
}

/// `user_config.KEY`: the setting's key and its value, if it has one.
fn setting_of<'a>(
    v: &'a str,
    given: &'a BTreeMap<String, Given>,
) -> Option<(&'a str, Option<&'a Given>)> {
    let key = v.strip_prefix("user_config.")?;
    Some((key, given.get(key)))
}

/// Where a bundle is unpacked for server `server`: `root/<server>/<version>-<tag>`, the server's
/// name as its own folder name ([`crate::paths::folder_name`]: `a b` and `a_b` never meet) and a
/// random `tag` per install, so a folder belongs to one install of one server and a bundle never
/// lands in another's (nor in its own older version's).
pub fn install_dir(root: &Path, server: &str, m: &Manifest, tag: &str) -> PathBuf {
    root.join(crate::paths::folder_name(server))
        .join(format!("{}-{tag}", safe_name(&m.version)))
}

fn safe_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if out.is_empty() || out.starts_with('.') {
        out.insert(0, '_');
    }
    out
}

/// Unpacks the bundle at `dest`, all or nothing: into a fresh folder beside it first, renamed
/// into place only once everything is out. Never over anything: a `dest` that exists is refused
/// (a bundle never replaces files another install put there).
pub fn unpack(opened: &Opened, dest: &Path) -> Result<(), BundleError> {
    let parent = dest.parent().ok_or_else(|| {
        BundleError::Io(std::io::Error::other("the bundles folder has no parent"))
    })?;
    if dest.symlink_metadata().is_ok() {
        return Err(BundleError::Unsafe(format!(
            "would be unpacked over files already at {}",
            dest.display()
        )));
    }
    std::fs::create_dir_all(parent)?;
    let tag = crate::form::random_tag();
    let partial = parent.join(format!(".partial-{tag}"));
    let zip = &opened.bytes[..opened.zip_len];
    let done = archive::Archive::open(zip, LIMITS)
        .map_err(BundleError::from)
        .and_then(|mut a| a.unpack(&partial, LIMITS).map_err(BundleError::from));
    if let Err(e) = done {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    // renameat2's RENAME_NOREPLACE is not in std: a folder made meanwhile makes rename fail
    // (ENOTEMPTY) unless it is empty, and an empty one holds nothing to lose
    if let Err(e) = std::fs::rename(&partial, dest) {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e.into());
    }
    Ok(())
}

/// Leftovers of unpacks that were cut short (a crash): removed.
pub fn clean_leftovers(root: &Path) {
    let Ok(names) = std::fs::read_dir(root) else {
        return;
    };
    for bundle in names.flatten() {
        let Ok(inner) = std::fs::read_dir(bundle.path()) else {
            continue;
        };
        for e in inner.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            if n.starts_with(".partial-") || n.starts_with(".old-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}
