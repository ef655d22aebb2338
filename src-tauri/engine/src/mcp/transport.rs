//! The transports the host speaks, as one table: what every part of the app that depends on a
//! server's transport reads (parsing `"type"` in mcp.json, validation, identity, trust, the
//! sandbox, sign-in, the protocol probe, the window's form and rows). Adding a transport is a row
//! here and its arm in `host/connect.rs` (ARCHITECTURE.md, "To add a transport").
//!
//! A row says: the `"type"` names mcp.json uses, its label and description for the window, whether
//! it is remote, signs in, probes `server/discover`.
//!
//! To add a transport: a variant of `Transport` and its row in `TRANSPORTS`; its arm in
//! `host/connect.rs` (`stdio` for a program) or `host/connect/remote.rs` (`remote` for a URL: a
//! `serve_*` per transport that builds an rmcp transport, as `sse.rs` and `rest.rs` do for theirs;
//! its refusals carry `http::SignInWanted` if it signs in). Everything else reads the table:
//! parsing (`ServerConfig::transport`), validation (a URL for remote ones), identity and trust, the
//! sandbox (programs only), the sign-in (`keep_for`), the window's form and rows (`mcp_config`'s
//! `transports`). Tests: `tests/it/transports.rs` and a row in the E2E `servers.rs`.

use serde::Serialize;

/// How Switchboard talks to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A program the host starts, speaking JSON-RPC on its stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
    /// The REST dialect of early MCP chatbot servers (`/mcp/v1/tools/list|call`, `/health`).
    Rest,
}

/// What the app needs to know of one transport.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransportInfo {
    #[serde(rename = "type")]
    pub transport: Transport,
    /// The values of `"type"` in mcp.json that name it; the first is the one written.
    pub names: &'static [&'static str],
    /// The short name on a server's row.
    pub label: &'static str,
    /// What the form's choice says of it.
    pub description: &'static str,
    /// Reached at a URL (with headers), not started as a program: no command, no sandbox, no
    /// process to supervise; its identity is its URL.
    pub remote: bool,
    /// It may refuse with 401/403 and want an OAuth sign-in (`mcp/oauth`).
    pub signs_in: bool,
    /// It is first asked with 2026-07-28 `server/discover` (else `initialize` only).
    pub discovers: bool,
}

/// Every transport, in the order the window offers them.
pub const TRANSPORTS: &[TransportInfo] = &[
    TransportInfo {
        transport: Transport::Stdio,
        names: &["stdio"],
        label: "stdio",
        description: "stdio — a program on this computer",
        remote: false,
        signs_in: false,
        discovers: true,
    },
    TransportInfo {
        transport: Transport::Http,
        names: &["http", "streamable-http", "streamableHttp"],
        label: "HTTP",
        description: "Streamable HTTP — a server at a URL",
        remote: true,
        signs_in: true,
        discovers: true,
    },
    TransportInfo {
        transport: Transport::Sse,
        names: &["sse"],
        label: "HTTP+SSE",
        description: "Legacy HTTP+SSE — an older server at a URL",
        remote: true,
        signs_in: true,
        discovers: false,
    },
    TransportInfo {
        transport: Transport::Rest,
        names: &["rest"],
        label: "REST",
        description: "REST (/mcp/v1/tools/…) — early chatbot servers",
        remote: true,
        signs_in: false,
        discovers: false,
    },
];

impl Transport {
    /// Its row in [`TRANSPORTS`].
    pub fn info(self) -> &'static TransportInfo {
        TRANSPORTS
            .iter()
            .find(|t| t.transport == self)
            .expect("every transport has its row")
    }

    /// The transport a `"type"` value of mcp.json names, if any.
    pub fn named(name: &str) -> Option<Transport> {
        TRANSPORTS
            .iter()
            .find(|t| t.names.contains(&name))
            .map(|t| t.transport)
    }

    /// The `"type"` written for it.
    pub fn name(self) -> &'static str {
        self.info().names[0]
    }

    pub fn is_remote(self) -> bool {
        self.info().remote
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_has_one_row_and_its_names_are_its_own() {
        for t in [
            Transport::Stdio,
            Transport::Http,
            Transport::Sse,
            Transport::Rest,
        ] {
            assert_eq!(TRANSPORTS.iter().filter(|r| r.transport == t).count(), 1);
            assert_eq!(Transport::named(t.name()), Some(t));
            for n in t.info().names {
                assert_eq!(Transport::named(n), Some(t), "{n}");
            }
        }
        assert_eq!(Transport::named("streamableHttp"), Some(Transport::Http));
        assert_eq!(Transport::named("carrier-pigeon"), None);
    }
}
