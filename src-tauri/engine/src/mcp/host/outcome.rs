//! What a routed call comes to (`ToolOutcome`, never a Rust error: the model reads it and the
//! turn goes on) and why a request to a server failed (`HostError`): the host's files share
//! them, so they sit here, below all of them.

use serde::Serialize;
use serde_json::Value;

use super::shaping::ResultImage;

/// The outcome of routing one call: never a Rust error, because whatever happened is something
/// the model should read and the turn should go on.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcome {
    pub server: String,
    pub tool: String,
    pub text: String,
    pub is_error: bool,
    /// The server's whole result, when there was one.
    pub raw: Option<Value>,
    /// The images in the result (read before `raw` is bounded), for a model that sees them.
    pub images: Vec<ResultImage>,
}

/// Why a request to a server (other than a tool call) could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("The server \"{0}\" is not configured.")]
    NotConfigured(String),
    #[error("The server \"{0}\" is not running.")]
    NotRunning(String),
    #[error("{server} did not answer {method} within {secs} s")]
    Timeout {
        server: String,
        method: &'static str,
        secs: u64,
    },
    /// The server answered the request with an error, or the session ended under it.
    #[error("{method} failed: {source}")]
    Request {
        method: &'static str,
        #[source]
        source: rmcp::ServiceError,
    },
    /// The server's answer cannot be used: what is wrong with it.
    #[error("{0}")]
    Unusable(String),
    #[error("{server} has no tool \"{tool}\"")]
    NoTool { server: String, tool: String },
    /// Signing in or out did not happen.
    #[error(transparent)]
    SignIn(#[from] crate::mcp::oauth::SignInError),
    /// The definition the user accepted is no longer the one the server presents.
    #[error(
        "The tool \"{tool}\" of {server} changed again since you were shown it: look at what \
         changed now before you accept it."
    )]
    ChangedAgain { server: String, tool: String },
    /// The tool's definition is not one the user accepted (changed, new, or not checkable).
    #[error(
        "The tool \"{tool}\" of {server} is not what you accepted (it changed, or it is new): \
         accept it in the servers list first."
    )]
    NotAccepted { server: String, tool: String },
}

/// A call's end in words, as an error.
pub fn error_outcome(server: &str, tool: &str, text: String) -> ToolOutcome {
    ToolOutcome {
        server: server.to_string(),
        tool: tool.to_string(),
        text,
        is_error: true,
        raw: None,
        images: vec![],
    }
}

/// A task the user stopped.
pub fn cancelled(server: &str, tool: &str) -> ToolOutcome {
    error_outcome(server, tool, "The call was cancelled by the user.".into())
}
