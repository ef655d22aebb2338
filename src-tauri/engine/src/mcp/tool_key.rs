//! The one key a tool is known by for everything the user decided about it: its standing policy
//! (settings: `standingPolicies`, "Always allow", "deny"), "allowed in this chat", "allowed for
//! this app", and its pinned definition (`mcp::pins`).
//!
//! It is the server's identity (`ServerConfig::identity`: what runs, not the name it is
//! configured under) and the tool's own name, as its server gives it. Never the name the model
//! is offered (`server__tool`, cleaned to `[A-Za-z0-9_-]`): `read_file` and `read.file` share
//! that name, so a tool renamed to it would inherit what the user decided about the other.
//!
//! The identity (`ServerConfig::identity`): a program's command line, folder, environment names and
//! a hash of their values; a remote server's URL; a bundle's SHA-256.

use serde::Serialize;

/// A tool of one server: (server identity, the tool's own name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolKey {
    /// The server's identity (`ServerConfig::identity`).
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
}

impl ToolKey {
    /// The key of tool `tool` of the server whose identity is `identity`.
    pub fn new(identity: impl Into<String>, tool: impl Into<String>) -> ToolKey {
        ToolKey {
            server: identity.into(),
            tool: tool.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_tool_is_another_key_though_the_model_sees_one_name() {
        let (a, b) = (
            ToolKey::new("id", "read_file"),
            ToolKey::new("id", "read.file"),
        );
        assert_ne!(a, b);
        assert_eq!(
            crate::mcp::names::assign(&[("s".into(), "read_file".into())])
                .keys()
                .collect::<Vec<_>>(),
            crate::mcp::names::assign(&[("s".into(), "read.file".into())])
                .keys()
                .collect::<Vec<_>>(),
            "the model is offered both as s__read_file"
        );
        assert_ne!(a, ToolKey::new("other", "read_file"), "another program");
    }
}
