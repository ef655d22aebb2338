//! Where a server's sign-in is kept: [`Keep`], one secret per server URL in the OS keyring (else
//! the 0600 secrets file, or only in memory), which is rmcp's credential store too, so refreshed
//! tokens are kept as they come.

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, AuthorizationMetadata, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::SignInError;
use crate::secrets::Secrets;

/// A sign-in as its server's row shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedIn {
    /// The authorization server that issued the tokens.
    pub issuer: Option<String>,
    /// Who signed in, when the authorization server said (an OpenID Connect ID token's `email`,
    /// else `preferred_username`, `name` or `sub`).
    pub account: Option<String>,
}

/// The account an OpenID Connect ID token names. Shown to the person only, never used to decide
/// anything, so its signature is not checked: it came from the token endpoint with the tokens.
pub(super) fn account_of(id_token: &str) -> Option<String> {
    use base64::Engine;
    let payload = id_token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    ["email", "preferred_username", "name", "sub"]
        .iter()
        .find_map(|k| claims.get(k)?.as_str().filter(|s| !s.trim().is_empty()))
        .map(|s| s.chars().take(200).collect())
}

/// What a sign-in leaves for one server: the client it signed in as, the authorization server
/// that issued the tokens, and the tokens (rmcp's credentials).
#[derive(Clone, Serialize, Deserialize)]
pub struct Kept {
    pub issuer: Option<String>,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub metadata: AuthorizationMetadata,
    pub credentials: Option<StoredCredentials>,
    /// Who signed in, as the ID token that came with the first tokens said (refreshed tokens
    /// usually come without one).
    #[serde(default)]
    pub account: Option<String>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("signed_in", &self.credentials.is_some())
            .finish_non_exhaustive()
    }
}

/// Where one server's sign-in is kept: the secrets store (keyring, else the 0600 file) under an
/// id derived from the server's URL, or only in memory (`switchboard mcp-call` on a bare URL).
/// It is rmcp's credential store too, so refreshed tokens are kept as they come.
#[derive(Clone)]
pub struct Keep {
    inner: Arc<KeepInner>,
}

struct KeepInner {
    id: String,
    secrets: Option<Secrets>,
    /// `None`: not read from the store yet.
    kept: tokio::sync::Mutex<Option<Option<Kept>>>,
}

impl Keep {
    /// The sign-in of the server at `url`, kept in `secrets` (`None`: in memory only).
    pub fn new(url: &str, secrets: Option<Secrets>) -> Keep {
        let hash = sha2::Sha256::digest(canonical(url).as_bytes());
        let id = format!(
            "oauth-{}",
            hash[..12]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        Keep {
            inner: Arc::new(KeepInner {
                id,
                secrets,
                kept: tokio::sync::Mutex::new(None),
            }),
        }
    }

    /// Its id in the secrets store.
    #[cfg(test)]
    pub(super) fn id(&self) -> &str {
        &self.inner.id
    }

    /// What is kept (read once from the store).
    pub async fn get(&self) -> Result<Option<Kept>, SignInError> {
        let mut kept = self.inner.kept.lock().await;
        if kept.is_none() {
            *kept = Some(self.read().await?);
        }
        Ok(kept.clone().flatten())
    }

    async fn read(&self) -> Result<Option<Kept>, SignInError> {
        let Some(secrets) = &self.inner.secrets else {
            return Ok(None);
        };
        let Some(text) = secrets.get_named(&self.inner.id).await? else {
            return Ok(None);
        };
        // a sign-in that cannot be read is as good as none: the next sign-in replaces it
        Ok(serde_json::from_str(&text).ok())
    }

    pub(super) async fn set(&self, value: Option<Kept>) -> Result<(), SignInError> {
        let mut kept = self.inner.kept.lock().await;
        if let Some(secrets) = &self.inner.secrets {
            match &value {
                Some(v) => {
                    secrets
                        .put_named(
                            &self.inner.id,
                            "Switchboard: MCP server sign-in",
                            &serde_json::to_string(v)?,
                        )
                        .await?
                }
                None => secrets.delete_named(&self.inner.id).await?,
            }
        }
        *kept = Some(value);
        Ok(())
    }

    /// Forgets the sign-in (Sign out).
    pub async fn forget(&self) -> Result<(), SignInError> {
        self.set(None).await
    }

    /// Whether there are tokens to send.
    pub async fn signed_in(&self) -> bool {
        matches!(self.get().await, Ok(Some(k)) if k.credentials.is_some())
    }

    /// The issuer of the tokens kept, as far as known without waiting (`None`: not signed in,
    /// or not read yet).
    pub fn signed_in_now(&self) -> Option<SignedIn> {
        let kept = self.inner.kept.try_lock().ok()?;
        let kept = kept.as_ref()?.as_ref()?;
        kept.credentials.as_ref()?;
        Some(SignedIn {
            issuer: kept.issuer.clone(),
            account: kept.account.clone(),
        })
    }
}

#[async_trait::async_trait]
impl CredentialStore for Keep {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self
            .get()
            .await
            .map_err(internal)?
            .and_then(|k| k.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let Some(mut kept) = self.get().await.map_err(internal)? else {
            return Err(AuthError::InternalError(
                "tokens came before the client they are for was kept".into(),
            ));
        };
        let account = credentials
            .token_response
            .as_ref()
            .and_then(|t| t.extra_fields().0.get("id_token"))
            .and_then(|v| v.as_str())
            .and_then(account_of);
        if account.is_some() {
            kept.account = account;
        }
        kept.credentials = Some(credentials);
        self.set(Some(kept)).await.map_err(internal)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        if let Some(mut kept) = self.get().await.map_err(internal)? {
            kept.credentials = None;
            self.set(Some(kept)).await.map_err(internal)?;
        }
        Ok(())
    }
}

fn internal(e: SignInError) -> AuthError {
    AuthError::InternalError(e.to_string())
}

/// The server URL as a resource: no fragment, no trailing slash on the path.
pub(super) fn canonical(url: &str) -> String {
    let url = url.split('#').next().unwrap_or(url);
    url.strip_suffix('/').unwrap_or(url).to_string()
}
