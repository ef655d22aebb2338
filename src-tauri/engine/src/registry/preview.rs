//! What an install shows before it is saved: the exact command, arguments and environment
//! (secrets masked), the proposed sandbox, the bundle's signature, notes, and for an update the
//! config's line diff.

use serde::Serialize;

pub use super::grants::{GrantReason, GrantView};
use crate::bundle::{Opened, Signature};
use crate::mcp::import::{env_risk, EnvRisk};
use crate::mcp::pins::DiffLine;
use crate::mcp::{SandboxConfig, SandboxSetting, ServerConfig, Transport};

/// One environment variable or header as the preview shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewVar {
    pub name: String,
    /// Its value; none for a secret (masked).
    pub value: Option<String>,
    pub secret: bool,
    pub risk: Option<EnvRisk>,
}

/// Something the preview points out (worded by the window).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Note {
    /// The launcher downloads the package when the server first starts: it needs the network
    /// then, unless the package is already on this computer.
    #[serde(rename_all = "camelCase")]
    DownloadsOnStart { launcher: String, package: String },
    /// The program it runs is not on the PATH.
    #[serde(rename_all = "camelCase")]
    ProgramMissing { program: String },
    /// The registry marks the entry deprecated.
    #[serde(rename_all = "camelCase")]
    Deprecated { message: Option<String> },
    /// A container, which is its sandbox: the docker (podman) command runs outside Switchboard's
    /// sandbox (it must reach its daemon) with only the options Switchboard checks before each
    /// start (`mcp/sandbox/container.rs`); the container's network is `--network=none` unless
    /// the user allows it, and it mounts only the folders the user gave it.
    Container,
    /// The container's image is named by a tag, which its publisher can move to another image
    /// (only a digest, `@sha256:`, names one image: then this note is not given).
    #[serde(rename_all = "camelCase")]
    ImageByTag { image: String, tag: String },
    /// A server elsewhere: what it gets is what the user sends it.
    #[serde(rename_all = "camelCase")]
    Remote { host: String },
    /// A file it is given needs a folder of its own (a database whose program writes beside
    /// it, or a file not made yet), and its folder holds other things: allowing the folder
    /// (`Choices::write`) is offered.
    FileNeedsFolder(super::grants::FileNeedsFolder),
}

/// The exact server an install would add.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallPreview {
    pub name: String,
    pub kind: String,
    pub transport: Transport,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    pub env: Vec<PreviewVar>,
    pub headers: Vec<PreviewVar>,
    pub sandbox: Option<SandboxConfig>,
    pub signature: Option<Signature>,
    pub notes: Vec<Note>,
    /// An update: what changes in its config, line by line (secrets masked).
    pub diff: Option<Vec<DiffLine>>,
    /// Added turned off: it starts after the user's second confirmation.
    pub starts_off: bool,
    /// Required secrets left unset (`defer_secrets`): it stays off until they are.
    pub missing: Vec<String>,
    /// Every folder and file its sandbox grants, and why (a stdio server; the system's folders
    /// and its program's are not listed).
    pub grants: Vec<GrantView>,
    /// The network what runs will have.
    pub network: NetworkView,
}

/// The network the server will have, as it will run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum NetworkView {
    /// A program on this computer: its sandbox's network, allowed or none.
    Sandbox { allowed: bool },
    /// A container: with `--network=none` none at all, whatever the sandbox of the docker
    /// command says; else Docker's own network for it (outside the sandbox).
    Container { allowed: bool },
    /// A server elsewhere, reached over the network.
    Remote,
}

/// Whether `docker run` arguments give the container no network (`--network=none`, `--net
/// none`, …).
fn container_network_none(args: &[String]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        matches!(a.as_str(), "--network=none" | "--net=none")
            || (matches!(a.as_str(), "--network" | "--net")
                && args.get(i + 1).map(String::as_str) == Some("none"))
    })
}

/// The server as the preview shows it.
pub(super) fn preview(
    name: &str,
    kind: String,
    c: &ServerConfig,
    bundle: Option<&Opened>,
    notes: Vec<Note>,
    diff: Option<Vec<DiffLine>>,
) -> InstallPreview {
    let var = |(k, v): (&String, &crate::secrets::SecretValue), always: bool| {
        let plain = match v {
            crate::secrets::SecretValue::Plain(p) if !always => Some(p.clone()),
            _ => None,
        };
        PreviewVar {
            name: k.clone(),
            secret: plain.is_none(),
            value: plain,
            risk: env_risk(k),
        }
    };
    let stdio = c.transport() == Transport::Stdio;
    let sandboxed = match &c.sandbox {
        Some(SandboxSetting::On(s)) => Some(s.clone()),
        _ => None,
    };
    let network = if !stdio {
        NetworkView::Remote
    } else if kind == "oci" {
        NetworkView::Container {
            allowed: !container_network_none(&c.args),
        }
    } else {
        NetworkView::Sandbox {
            allowed: sandboxed.as_ref().is_none_or(|s| s.network),
        }
    };
    InstallPreview {
        name: name.into(),
        kind,
        transport: c.transport(),
        command: stdio.then(|| c.command.clone()),
        args: c.args.clone(),
        cwd: c.cwd.clone(),
        url: c.url.clone(),
        env: c.env.iter().map(|e| var(e, false)).collect(),
        headers: c.headers.iter().map(|h| var(h, true)).collect(),
        sandbox: sandboxed,
        signature: bundle.map(|b| b.signature.clone()),
        notes,
        diff,
        starts_off: c.disabled,
        missing: vec![],
        grants: vec![],
        network,
    }
}

/// What changes from `before` to `after`, each as the window sees it (secrets masked).
pub(super) fn config_diff(before: &ServerConfig, after: &ServerConfig) -> Vec<DiffLine> {
    let text = |c: &ServerConfig| {
        let mut c = c.redacted();
        // what the user typed for the install is not the server's config
        if let Some(s) = c.source.as_mut() {
            s.inputs.clear();
        }
        serde_json::to_string_pretty(&c).unwrap_or_default()
    };
    crate::mcp::pins::diff_text(&text(before), &text(after))
}
