//! Getting servers from an MCP Registry (API v0.1): the client (`client.rs`: pages, the latest
//! version, downloads, icons; an ETag cache on disk), the documents (`server_json.rs`), an entry
//! as the catalog shows it, the ways it can be had (its packages and remotes), the form each asks
//! (`layout.rs`, `form.rs`), the config each makes, pinned to the entry's version (`plan.rs`),
//! the folders its sandbox grants, each with why, and the start-up places a write grant needs
//! confirming for (`grants.rs`), and an install from preview to saved config (`install.rs`;
//! `.mcpb` bundles in `crate::bundle`).

pub mod client;
pub mod grants;
pub use crate::form;
pub mod install;
pub mod layout;
pub mod net_guard;
pub mod plan;
pub mod preview;
pub mod server_json;

use serde::Serialize;

pub use crate::form::{is_one_version, random_tag};
pub use client::{ClientLimits, FetchError, Offline, RegistryClient, OFFICIAL_REGISTRY};
pub use server_json::{Listed, ServerJson, Skipped};

use plan::PackageKind;

/// An entry as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryView {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub version: String,
    /// Its source code (http(s) only).
    pub repository: Option<String>,
    pub website: Option<String>,
    /// An https icon, for [`RegistryClient::icon`].
    pub icon: Option<String>,
    /// What it runs: npm, pypi, oci, nuget, mcpb, …, or streamable-http / sse for a remote.
    pub kinds: Vec<String>,
    /// Some value it asks for is a secret (a key, a token).
    pub needs_secrets: bool,
    pub deprecated: bool,
    pub status_message: Option<String>,
    /// At least one of its ways can be installed here.
    pub installable: bool,
    /// The configured server installed from it, and the version it is at.
    pub installed: Option<Installed>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    pub server: String,
    pub version: String,
}

/// One way to have a server: a package or a remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Way {
    pub index: usize,
    pub kind: String,
    /// `identifier@version`, the image, the download address, or the URL.
    pub label: String,
    pub remote: bool,
    /// Why it cannot be installed here, when it cannot.
    pub refused: Option<String>,
}

fn http_only(u: &Option<String>) -> Option<String> {
    u.as_ref()
        .filter(|u| reqwest::Url::parse(u).is_ok_and(|p| matches!(p.scheme(), "http" | "https")))
        .cloned()
}

impl EntryView {
    pub fn of(l: &Listed) -> EntryView {
        let s = &l.server;
        let ways = ways(s);
        let icon = s
            .icons
            .iter()
            .filter(|i| i.src.starts_with("https://"))
            .filter(|i| {
                !matches!(i.mime_type.as_deref(), Some(m) if m.contains("svg"))
                    && !i.src.to_ascii_lowercase().ends_with(".svg")
            })
            .find(|i| i.theme.as_deref() != Some("dark"))
            .map(|i| i.src.clone());
        let secret_inputs = s.packages.iter().any(|p| {
            p.environment_variables
                .iter()
                .map(|e| &e.input)
                .chain(p.package_arguments.iter().map(|a| &a.input))
                .chain(p.runtime_arguments.iter().map(|a| &a.input))
                .any(|i| i.is_secret || i.variables.values().any(|v| v.is_secret))
        }) || s.remotes.iter().any(|r| {
            r.headers
                .iter()
                .any(|h| h.input.is_secret || h.input.variables.values().any(|v| v.is_secret))
        });
        EntryView {
            name: s.name.clone(),
            title: s.title.clone(),
            description: s.description.clone(),
            version: s.version.clone(),
            repository: http_only(&s.repository.as_ref().map(|r| r.url.clone())),
            website: http_only(&s.website_url),
            icon,
            kinds: ways.iter().map(|w| w.kind.clone()).collect(),
            needs_secrets: secret_inputs,
            deprecated: l.deprecated(),
            status_message: l.official.status_message.clone(),
            installable: ways.iter().any(|w| w.refused.is_none()),
            installed: None,
        }
    }
}

/// The ways to have `s`: its packages, then its remotes; each with why it is refused, if it is.
pub fn ways(s: &ServerJson) -> Vec<Way> {
    let packages = s.packages.iter().map(|p| {
        let kind = p.registry_type.to_ascii_lowercase();
        let label = match (PackageKind::of(&kind), &p.version) {
            (Some(PackageKind::Oci), _) => plan::oci_image(p).unwrap_or(p.identifier.clone()),
            (Some(PackageKind::Npm | PackageKind::Pypi | PackageKind::Nuget), Some(v)) => {
                format!("{}@{v}", p.identifier)
            }
            (Some(PackageKind::Mcpb), _)
            | (Some(PackageKind::Npm | PackageKind::Pypi | PackageKind::Nuget), None)
            | (None, _) => p.identifier.clone(),
        };
        let refused = plan::refusal(p).or_else(|| layout::Layout::of_package(p).refused);
        (kind, label, false, refused)
    });
    let remotes = s.remotes.iter().map(|r| {
        let refused = if !matches!(r.kind.as_str(), "streamable-http" | "sse") {
            Some(format!(
                "Switchboard cannot reach \"{}\" remotes",
                r.kind.chars().take(40).collect::<String>()
            ))
        } else {
            layout::Layout::of_remote(r).refused
        };
        (
            r.kind.clone(),
            r.url.clone().unwrap_or_default(),
            true,
            refused,
        )
    });
    packages
        .chain(remotes)
        .enumerate()
        .map(|(index, (kind, label, remote, refused))| Way {
            index,
            kind,
            label,
            remote,
            refused,
        })
        .collect()
}

#[cfg(test)]
mod tests;
