//! A registry entry's package or remote, with the user's values, as a server config pinned to
//! the entry's version: npm → `npx -y pkg@version`, PyPI → `uvx pkg@version`, NuGet →
//! `dnx pkg@version --yes`, OCI → `docker run --rm -i image:tag` (or podman), remotes → their URL
//! and headers. Always argv, never a shell; an identifier is checked so it can never be read as
//! an option.
//!
//! OCI: `docker run --rm -i [--network=none] … -e NAME … image:tag` (podman when docker is missing;
//! variables by name, never their values on the command line); a remote's values are encoded into
//! its URL. A named argument is two words, `--name value` (VS Code's form, which servers read; the
//! schema's one-line description says `--flag={value}`), except a value that starts with `-`, kept
//! bound as `--name=-x`. `container_refusal` (in `mcp/sandbox/run_options.rs`, below both the
//! registry and the sandbox, re-exported here) names a container's runtime options that widen its
//! reach: privileges, host namespaces, capabilities, devices, security options, root, groups,
//! sysctls, another container's volumes, an env file, published ports, the Docker API socket, a
//! volume driver, a network other than none, a word docker would take for the image (a value is
//! never taken from a word that is an option); mounts only inside the folders granted, read-only
//! ones `:ro`, links resolved, no named volume, no `--mount` key it does not know, twice, or
//! quoted. The fixed ones are checked in `refusal` (the catalog shows the way refused), all of them
//! with the user's values at `build`.
//!
//! To add a package kind: a variant of `PackageKind` and its row in `KINDS` (its `registryType`,
//! label, identifier check, what "one exact version" means for it); then the compiler names the
//! rest, as no `match` on it has a `_` arm: `refusal` (what else it needs), `package_config` (its
//! launcher and arguments), `registry/mod.rs::ways` (its label), `registry/install.rs` (its notes
//! at install), and its offline fetcher in `mcp/sandbox` (`to_fetch`). Tests:
//! `registry/plan/tests.rs` and `tests/it/registry.rs`.

use std::collections::BTreeMap;

use super::layout::{var_keys, Arg, Layout, Pair, Source};
use super::server_json::{Package, TransportSpec};
use crate::form::is_one_version;
use crate::form::Given;
pub use crate::mcp::sandbox::run_options::{container_image_at, container_refusal, Mountable};
use crate::mcp::ServerConfig;
use crate::secrets::SecretValue;

pub const NPM_REGISTRY: &str = "https://registry.npmjs.org";
pub const PYPI: &str = "https://pypi.org";
pub const NUGET: &str = "https://api.nuget.org/v3/index.json";

/// What a kind of package needs of this computer and how it is run. To add one: a variant, its
/// row in [`KINDS`], and its arm in every `match` on it (none has a `_` arm, so the compiler
/// names each place: how it is refused, launched, labelled, noted at install).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageKind {
    Npm,
    Pypi,
    Nuget,
    Oci,
    Mcpb,
}

/// What the catalog knows of a kind of package: one row each.
pub struct KindRow {
    pub kind: PackageKind,
    /// Its `registryType` in the MCP Registry (compared without letter case).
    pub registry_type: &'static str,
    /// How the window and refusals name its packages.
    pub label: &'static str,
    /// Whether an identifier names a package of it (never an option); `None`: checked otherwise
    /// (an image reference, a download address).
    pub identifier: Option<fn(&str) -> bool>,
    /// Whether a version is one exact version (what "pinned" means for it); `None`: pinned
    /// otherwise (an image's tag or digest, a bundle's SHA-256).
    pub exact_version: Option<fn(&str) -> bool>,
}

/// Every kind of package the catalog installs (`PackageKind::of` reads `registryType` here).
pub const KINDS: &[KindRow] = &[
    KindRow {
        kind: PackageKind::Npm,
        registry_type: "npm",
        label: "npm package",
        identifier: Some(npm_name),
        exact_version: Some(crate::form::is_exact_npm_version),
    },
    KindRow {
        kind: PackageKind::Pypi,
        registry_type: "pypi",
        label: "PyPI package",
        identifier: Some(pypi_name),
        exact_version: Some(crate::form::is_exact_pypi_version),
    },
    KindRow {
        kind: PackageKind::Nuget,
        registry_type: "nuget",
        label: "NuGet package",
        identifier: Some(nuget_id),
        exact_version: Some(crate::form::is_exact_nuget_version),
    },
    KindRow {
        kind: PackageKind::Oci,
        registry_type: "oci",
        label: "container image",
        identifier: None,
        exact_version: None,
    },
    KindRow {
        kind: PackageKind::Mcpb,
        registry_type: "mcpb",
        label: "MCP bundle",
        identifier: None,
        exact_version: None,
    },
];

impl PackageKind {
    pub fn of(registry_type: &str) -> Option<PackageKind> {
        KINDS
            .iter()
            .find(|r| r.registry_type.eq_ignore_ascii_case(registry_type))
            .map(|r| r.kind)
    }

    /// Its row in [`KINDS`].
    pub fn row(self) -> &'static KindRow {
        KINDS
            .iter()
            .find(|r| r.kind == self)
            .expect("every kind has its row in KINDS")
    }
}

/// A value with the user's values filled in; `None` when it has none.
pub fn eval(src: &Source, given: &BTreeMap<String, Given>) -> Option<Given> {
    match src {
        Source::Field(k) => given.get(k).cloned(),
        Source::Fixed { template, vars } => {
            let keys = var_keys(vars);
            let mut out = String::with_capacity(template.len());
            let mut rest = template.as_str();
            while let Some(i) = rest.find('{') {
                out.push_str(&rest[..i]);
                let after = &rest[i + 1..];
                let name = after.find('}').map(|j| &after[..j]);
                match name.and_then(|n| keys.get(n).map(|k| (n, *k))) {
                    Some((n, key)) => {
                        match given.get(key) {
                            Some(Given::Keep) => return Some(Given::Keep),
                            Some(g) => out.push_str(&g.text()),
                            None => {}
                        }
                        rest = &after[n.len() + 1..];
                    }
                    // a name the input does not declare stays as it is
                    None => {
                        out.push('{');
                        rest = after;
                    }
                }
            }
            out.push_str(rest);
            Some(Given::Text(out))
        }
    }
}

/// The command-line arguments of `args`.
pub fn argv(args: &[Arg], given: &BTreeMap<String, Given>) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        match a {
            Arg::Positional { value, repeated } => match eval(value, given) {
                Some(g) if *repeated => out.extend(g.items()),
                Some(g) => out.push(g.text()),
                None => {}
            },
            Arg::Named {
                name, value: None, ..
            } => out.push(name.clone()),
            Arg::Named {
                name,
                value: Some(v),
                repeated,
                boolean,
            } => match eval(v, given) {
                Some(Given::Bool(true)) if *boolean => out.push(name.clone()),
                Some(Given::Bool(false)) if *boolean => {}
                Some(g) => {
                    let items = if *repeated { g.items() } else { vec![g.text()] };
                    // two words, `--name value`, as the reference client (VS Code) passes
                    // them and as servers read them (some read only this form); a value that
                    // looks like an option stays bound to its long name (`--name=-x`), so it
                    // cannot be read as an option of its own
                    for item in items {
                        if item.starts_with('-') && name.starts_with("--") {
                            out.push(format!("{name}={item}"));
                        } else {
                            out.push(name.clone());
                            out.push(item);
                        }
                    }
                }
                None => {}
            },
        }
    }
    out
}

/// The values of environment variables or headers.
pub fn pairs(list: &[Pair], given: &BTreeMap<String, Given>) -> BTreeMap<String, SecretValue> {
    let mut out = BTreeMap::new();
    for p in list {
        let v = match eval(&p.value, given) {
            None => continue,
            Some(Given::Keep) => SecretValue::Stored("keep".into()),
            Some(g) if p.secret => SecretValue::New(g.text()),
            Some(g) => SecretValue::Plain(g.text()),
        };
        out.insert(p.name.clone(), v);
    }
    out
}

/// Why a package cannot be run as it is described.
pub fn refusal(p: &Package) -> Option<String> {
    let kind = match PackageKind::of(&p.registry_type) {
        Some(k) => k,
        None => {
            return Some(format!(
                "Switchboard cannot run {} packages",
                p.registry_type.chars().take(40).collect::<String>()
            ))
        }
    };
    if let Some(t) = &p.transport {
        if t.kind != "stdio" {
            return Some(format!(
                "it runs as a local {} server; Switchboard runs programs on this computer over stdio",
                t.kind
            ));
        }
    }
    let row = kind.row();
    if row.identifier.is_some_and(|valid| !valid(&p.identifier)) {
        return Some(format!("its {} name is not valid", row.label));
    }
    if row
        .exact_version
        .is_some_and(|exact| !p.version.as_deref().is_some_and(exact))
    {
        return Some(not_pinned(p));
    }
    match kind {
        PackageKind::Npm | PackageKind::Pypi | PackageKind::Nuget => None,
        PackageKind::Oci if oci_image(p).is_none() => {
            Some("its image is not a valid reference pinned to a tag or digest".into())
        }
        // its fixed options, before the user's values are known
        PackageKind::Oci => container_refusal(
            &argv(&Layout::of_package(p).runtime_args, &BTreeMap::new()),
            None,
        ),
        PackageKind::Mcpb if !p.file_sha256.as_deref().is_some_and(is_sha256) => {
            Some("it has no fileSha256 to check the download against".into())
        }
        PackageKind::Mcpb if super::client::download_url(&p.identifier).is_none() => {
            Some("its download address is not https://".into())
        }
        PackageKind::Mcpb => None,
    }
}

/// Why a package's version pins nothing (a dist-tag, a range, a partial version).
fn not_pinned(p: &Package) -> String {
    match p.version.as_deref() {
        Some(v) => format!(
            "it is not pinned: its version \"{}\" is not one exact version (a tag, a range or a partial version gets whatever is newest when it runs)",
            v.chars().take(100).collect::<String>()
        ),
        None => "it is not pinned to one version (it names none)".into(),
    }
}

pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// `name` or `@scope/name`; never an option.
fn npm_name(s: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with(['.', '_', '-'])
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~'))
    };
    s.len() <= 214
        && match s.strip_prefix('@') {
            Some(scoped) => scoped
                .split_once('/')
                .is_some_and(|(a, b)| part(a) && part(b)),
            None => part(s),
        }
}

fn pypi_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn nuget_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The image reference to run: the identifier with its tag or digest (or the entry's version as
/// the tag, as entries written before 2025-10 say it).
pub fn oci_image(p: &Package) -> Option<String> {
    let id = p.identifier.trim();
    let ok_chars = |s: &str| {
        !s.is_empty()
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '@')
            })
    };
    if !ok_chars(id) || id.len() > 255 {
        return None;
    }
    let last = id.rsplit('/').next().unwrap_or(id);
    let pinned = id.contains("@sha256:") || last.contains(':');
    if pinned {
        return Some(id.to_string());
    }
    let v = p.version.as_deref().filter(|v| is_one_version(v))?;
    Some(format!("{id}:{v}"))
}

/// An image reference named by a tag (not a digest): the image and its tag. `None` for a
/// digest (`@sha256:`), the only name of one image that cannot move.
pub fn oci_tag(image: &str) -> Option<(String, String)> {
    if image.contains('@') {
        return None;
    }
    let slash = image.rfind('/').map_or(0, |i| i + 1);
    let colon = slash + image[slash..].rfind(':')?;
    Some((image[..colon].to_string(), image[colon + 1..].to_string()))
}

/// How a package runs: its launcher and the arguments before its own.
pub struct Launch<'a> {
    /// Whether a program can be found (docker or podman for an OCI image).
    pub has_program: &'a dyn Fn(&str) -> bool,
    /// The user allows the network (for an OCI image: its container gets one).
    pub network: bool,
}

/// The config of package `p` (not mcpb: a bundle makes its own) with the user's values.
pub fn package_config(
    p: &Package,
    layout: &Layout,
    given: &BTreeMap<String, Given>,
    launch: &Launch,
) -> ServerConfig {
    let runtime = argv(&layout.runtime_args, given);
    let package = argv(&layout.package_args, given);
    let env = pairs(&layout.env, given);
    let version = p.version.clone().unwrap_or_default();
    let base = p
        .registry_base_url
        .as_deref()
        .map(|u| u.trim_end_matches('/'));
    let mut args: Vec<String> = Vec::new();
    // a kind not in KINDS is refused before (`refusal`)
    let Some(kind) = PackageKind::of(&p.registry_type) else {
        unreachable!("a package of an unknown kind is refused before it is configured")
    };
    let command = match kind {
        PackageKind::Pypi => {
            if let Some(b) = base.filter(|b| *b != PYPI) {
                args.extend(["--default-index".to_string(), b.to_string()]);
            }
            args.extend(runtime);
            args.push(format!("{}@{version}", p.identifier));
            args.extend(package);
            "uvx"
        }
        PackageKind::Nuget => {
            args.extend(runtime);
            args.push(format!("{}@{version}", p.identifier));
            args.push("--yes".into());
            if let Some(b) = base.filter(|b| *b != NUGET) {
                args.extend(["--add-source".to_string(), b.to_string()]);
            }
            if !package.is_empty() {
                args.push("--".into());
                args.extend(package);
            }
            "dnx"
        }
        PackageKind::Oci => {
            args.extend(["run", "--rm", "-i"].map(String::from));
            // the container's network is Docker's to give: none unless the user allows it (an
            // entry may name only none itself: `container_refusal`)
            let names_network = runtime.iter().any(|a| {
                a == "--network"
                    || a.starts_with("--network=")
                    || a == "--net"
                    || a.starts_with("--net=")
            });
            if !launch.network && !names_network {
                args.push("--network=none".into());
            }
            args.extend(runtime);
            // the container sees the environment only when told to: each variable by name (its
            // value comes from docker's own environment, never the command line)
            for name in env.keys() {
                args.extend(["-e".to_string(), name.clone()]);
            }
            args.push(oci_image(p).unwrap_or_default());
            args.extend(package);
            match p.runtime_hint.as_deref() {
                Some("podman") => "podman",
                Some("docker") => "docker",
                _ if !(launch.has_program)("docker") && (launch.has_program)("podman") => "podman",
                _ => "docker",
            }
        }
        PackageKind::Mcpb => unreachable!("a bundle makes its own config"),
        PackageKind::Npm => {
            args.push("-y".into());
            if let Some(b) = base.filter(|b| *b != NPM_REGISTRY) {
                args.push(format!("--registry={b}"));
            }
            args.extend(runtime);
            args.push(format!("{}@{version}", p.identifier));
            args.extend(package);
            "npx"
        }
    };
    let mut c = ServerConfig::new(command, &[]);
    c.args = args;
    c.env = env;
    c
}

/// The config of a remote with the user's values; or why its address is not one.
pub fn remote_config(
    r: &TransportSpec,
    layout: &Layout,
    given: &BTreeMap<String, Given>,
) -> Result<ServerConfig, String> {
    let url = match &layout.url {
        Some(Source::Fixed { template, vars }) => {
            // values go into the address encoded, but for one that starts it (a base URL)
            let starts = vars
                .iter()
                .find(|(n, _)| template.starts_with(&format!("{{{n}}}")))
                .map(|(_, k)| k.clone());
            let mut encoded = given.clone();
            for (k, g) in encoded.iter_mut() {
                if Some(k) != starts.as_ref() {
                    if let Given::Text(t) = g {
                        *t = url::form_urlencoded::byte_serialize(t.as_bytes()).collect();
                    }
                }
            }
            eval(
                &layout.url.clone().unwrap_or(Source::Field(String::new())),
                &encoded,
            )
            .map(|g| g.text())
            .unwrap_or_default()
        }
        _ => String::new(),
    };
    match url::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        _ => return Err(format!("its address \"{url}\" is not an http(s) URL")),
    }
    let mut c = ServerConfig::http(url);
    if r.kind == "sse" {
        c.transport = Some("sse".into());
    }
    c.headers = pairs(&layout.headers, given)
        .into_iter()
        .map(|(k, v)| match v {
            SecretValue::Plain(p) => (k, SecretValue::New(p)),
            other => (k, other),
        })
        .collect();
    Ok(c)
}

#[cfg(test)]
mod tests;
