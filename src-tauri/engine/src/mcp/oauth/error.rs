//! Why a sign-in (or a sign-out) did not happen, in words a person can act on.

use rmcp::transport::auth::AuthError;

use crate::secrets::SecretError;

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// A step of the protocol failed (rmcp's `auth`: discovery, registration, the token exchange).
    #[error("{}", describe(.0))]
    Protocol(#[source] AuthError),
    /// Signing in safely is not possible this way; the reason, for the person.
    #[error("{0}")]
    Refused(String),
    /// The authorization server said no (its `error` and `error_description`).
    #[error("the sign-in was refused ({error}{})", .description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Denied {
        error: String,
        description: Option<String>,
    },
    /// The browser step could not show the page.
    #[error("the sign-in page could not be opened: {0}")]
    Browser(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The authorization page wants a person, and nobody is there to sign in (headless).
    #[error("the authorization page ({origin}) wants a person to sign in (HTTP {status})")]
    NeedsPerson { origin: String, status: u16 },
    /// The loopback listener the answer comes back to.
    #[error("could not listen for the sign-in answer: {0}")]
    Listen(#[source] std::io::Error),
    #[error("no answer from the sign-in page within {minutes} minutes")]
    NoAnswer { minutes: u64 },
    /// Reaching an authorization server or page.
    #[error("{what}: {source}")]
    Http {
        what: &'static str,
        #[source]
        source: reqwest::Error,
    },
    /// Where sign-ins are kept (the keyring or the secrets file).
    #[error("the sign-in cannot be kept: {0}")]
    Keep(#[from] SecretError),
    #[error("the sign-in cannot be written: {0}")]
    Encode(#[from] serde_json::Error),
    /// The client secret the user entered cannot be read from the store.
    #[error("cannot read the OAuth client secret: {0}")]
    ClientSecret(#[source] SecretError),
}

impl SignInError {
    pub(crate) fn refused(why: impl Into<String>) -> SignInError {
        SignInError::Refused(why.into())
    }
}

impl From<AuthError> for SignInError {
    fn from(e: AuthError) -> Self {
        SignInError::Protocol(e)
    }
}

/// An rmcp auth error in words a person can act on.
fn describe(e: &AuthError) -> String {
    match e {
        AuthError::AuthorizationServerMismatch {
            expected_issuer: expected,
            received_issuer: received,
        } => format!(
            "the authorization server's metadata names another issuer ({received}, expected {expected}); not signing in"
        ),
        AuthError::ProtectedResourceMetadataInvalid { url, reason } => format!(
            "the server's protected resource metadata ({url}) cannot be used: {reason}; not signing in"
        ),
        AuthError::PkceUnsupported => {
            "the authorization server does not support PKCE S256; not signing in".into()
        }
        other => format!("signing in failed: {other}"),
    }
}
