//! Signing in to the host's remote servers (`mcp::oauth` does one sign-in): where each server's
//! sign-in is kept, the challenge its last refusal carried, the bound on rounds, and the three
//! ways a sign-in starts — by the host itself when a server refuses and the host may open the
//! browser step (the command line), from the server's Sign in button (the window), or mid-call
//! when a server wants more scopes than it was granted.
//!
//! A server that refuses (401/403 with its challenge) fails at step `signingIn` and waits for its
//! Sign in button, or signs in at once when the host may do the browser step
//! (`HostOptions::sign_in_by_itself`, the command line). A call refused mid-session (expired
//! tokens, a 403 asking more scopes) signs in again, swaps the tokens into the live session and is
//! tried once more; at most `MAX_ROUNDS` (3) sign-ins until an authorized request succeeds.

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::transport::auth::AuthorizationManager;

use super::outcome::HostError;
use super::state::{SessionAuth, SignInView};
use super::{McpHost, Shared};
use crate::mcp::config::ServerConfig;
use crate::mcp::oauth::{self, Browser, ClientChoice, Keep, SignInError};

/// What the host keeps about its servers' sign-ins.
#[derive(Default)]
pub struct SignIns {
    /// By server URL.
    keeps: Mutex<HashMap<String, Keep>>,
    /// By server name: the `WWW-Authenticate` of its last refusal.
    challenges: Mutex<HashMap<String, Option<String>>>,
    /// By server name: sign-in rounds since its last authorized success.
    rounds: Mutex<HashMap<String, u32>>,
    /// By server name: the host of the sign-in page being opened for it, from just before the
    /// browser opens until the sign-in ends (its row shows it).
    opening: Mutex<HashMap<String, String>>,
}

/// The browser step of one server's sign-in, told to its row first: the page's host is shown
/// before the browser opens it.
struct Shown<'a> {
    shared: &'a Shared,
    name: &'a str,
    inner: &'a dyn Browser,
}

#[async_trait::async_trait]
impl Browser for Shown<'_> {
    async fn open(&self, url: &str) -> Result<(), SignInError> {
        let host = oauth::openable_authorization_url(url)?;
        self.shared
            .sign_ins
            .opening
            .lock()
            .unwrap()
            .insert(self.name.to_string(), host);
        self.shared.changed();
        self.inner.open(url).await
    }

    fn interactive(&self) -> bool {
        self.inner.interactive()
    }
}

impl SignIns {
    pub(super) fn keep(&self, url: &str, secrets: Option<&crate::secrets::Secrets>) -> Keep {
        self.keeps
            .lock()
            .unwrap()
            .entry(url.to_string())
            .or_insert_with(|| Keep::new(url, secrets.cloned()))
            .clone()
    }

    /// A server refused without tokens (or with tokens it no longer takes).
    pub(super) fn refused(&self, server: &str, challenge: Option<String>) {
        self.challenges
            .lock()
            .unwrap()
            .insert(server.to_string(), challenge);
    }

    fn wants_sign_in(&self, server: &str) -> bool {
        self.challenges.lock().unwrap().contains_key(server)
    }

    /// An authorized request succeeded: the rounds start again, nothing is waiting.
    pub(super) fn succeeded(&self, server: &str) {
        self.rounds.lock().unwrap().remove(server);
        self.challenges.lock().unwrap().remove(server);
    }

    /// Counts one more round; false when the bound is reached.
    fn another_round(&self, server: &str) -> bool {
        let mut rounds = self.rounds.lock().unwrap();
        let n = rounds.entry(server.to_string()).or_default();
        if *n >= oauth::MAX_ROUNDS {
            return false;
        }
        *n += 1;
        true
    }
}

/// The client identity the user configured for `config`, its secret read from the store.
pub(super) async fn choice(
    config: &ServerConfig,
    secrets: &crate::secrets::Secrets,
) -> Result<ClientChoice, SignInError> {
    let Some(o) = &config.oauth else {
        return Ok(ClientChoice::default());
    };
    let client_secret = match &o.client_secret {
        Some(v) => Some(
            secrets
                .resolve(v)
                .await
                .map_err(SignInError::ClientSecret)?,
        ),
        None => None,
    };
    Ok(ClientChoice {
        client_id: o.client_id.clone().filter(|s| !s.trim().is_empty()),
        client_secret,
        metadata_url: o.client_metadata_url.clone(),
    })
}

impl Shared {
    /// Where `config`'s sign-in is kept (Streamable HTTP and HTTP+SSE servers only).
    pub(super) fn keep_for(&self, config: &ServerConfig) -> Option<Keep> {
        if !config.transport().info().signs_in {
            return None;
        }
        let url = config.url.as_deref()?;
        let secrets = (!self.opts.oauth_in_memory).then_some(&self.opts.secrets);
        Some(self.sign_ins.keep(url, secrets))
    }

    /// Its row's sign-in: when it wants one or has one (remote servers only).
    pub(super) fn sign_in_view(&self, name: &str, config: &ServerConfig) -> Option<SignInView> {
        let keep = self.keep_for(config)?;
        let kept = keep.signed_in_now();
        let needed = self.sign_ins.wants_sign_in(name);
        let opening = self.sign_ins.opening.lock().unwrap().get(name).cloned();
        (needed || kept.is_some() || opening.is_some()).then(|| SignInView {
            needed,
            signed_in: kept.is_some(),
            issuer: kept.as_ref().and_then(|k| k.issuer.clone()),
            account: kept.and_then(|k| k.account),
            opening,
        })
    }

    /// One sign-in round for server `name` with `browser`, from `challenge` (its refusal), with
    /// the bound on rounds. The tokens are kept; returns the manager that holds them.
    pub(super) async fn sign_in_round(
        &self,
        name: &str,
        config: &ServerConfig,
        challenge: Option<&str>,
        browser: &dyn Browser,
    ) -> Result<AuthorizationManager, SignInError> {
        let keep = self
            .keep_for(config)
            .ok_or_else(|| SignInError::refused("only HTTP and SSE servers sign in"))?;
        // a refusal that said nothing of how (an empty challenge): discovery from the server's URL
        let challenge = challenge.filter(|c| !c.trim().is_empty());
        if !self.sign_ins.another_round(name) {
            return Err(SignInError::refused(format!(
                "the server still refuses after {} sign-ins; not signing in again until it accepts",
                oauth::MAX_ROUNDS
            )));
        }
        let choice = choice(config, &self.opts.secrets).await?;
        let url = config.url.as_deref().unwrap_or_default();
        tracing::info!(server = %name, "signing in");
        let shown = Shown {
            shared: self,
            name,
            inner: browser,
        };
        let signed = oauth::sign_in(url, challenge, &choice, &shown, &keep).await;
        if self.sign_ins.opening.lock().unwrap().remove(name).is_some() {
            self.changed();
        }
        signed
    }
}

impl McpHost {
    /// Signs in to server `name` (its Sign in button): the browser step through `browser`, then
    /// the server starts again with its tokens.
    pub async fn sign_in(&self, name: &str, browser: &dyn Browser) -> Result<(), HostError> {
        let slot = self
            .slot(name)
            .ok_or_else(|| HostError::NotConfigured(name.into()))?;
        let challenge = self
            .shared
            .sign_ins
            .challenges
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .flatten();
        // a person asked: the rounds start again
        self.shared.sign_ins.rounds.lock().unwrap().remove(name);
        self.shared
            .sign_in_round(name, &slot.config, challenge.as_deref(), browser)
            .await?;
        self.shared.sign_ins.challenges.lock().unwrap().remove(name);
        self.restart(name).await;
        Ok(())
    }

    /// Forgets server `name`'s sign-in (its tokens and client; revoked at its authorization
    /// server when that has a revocation endpoint) and starts it again.
    pub async fn sign_out(&self, name: &str) -> Result<(), HostError> {
        let slot = self
            .slot(name)
            .ok_or_else(|| HostError::NotConfigured(name.into()))?;
        if let Some(keep) = self.shared.keep_for(&slot.config) {
            // the authorization server forgets the tokens too, where it can
            if let Ok(Some(kept)) = keep.get().await {
                if let Err(e) = oauth::revoke(&kept).await {
                    tracing::warn!(server = %name, "{e}");
                }
            }
            keep.forget().await?;
        }
        self.restart(name).await;
        Ok(())
    }

    /// Forgets the sign-in kept for the server at `url` (its server was deleted).
    pub async fn forget_sign_in(&self, url: &str) -> Result<(), SignInError> {
        let secrets = (!self.shared.opts.oauth_in_memory).then_some(&self.shared.opts.secrets);
        self.shared.sign_ins.keep(url, secrets).forget().await
    }

    /// Mid-call: the server refused the call (401: its tokens are gone; 403: it wants more
    /// scopes). The host signs in again by itself when it may open the browser step, swaps the
    /// new tokens into the session, and the call is tried again; else the server waits for its
    /// Sign in button.
    pub(super) async fn sign_in_again(
        &self,
        name: &str,
        auth: Option<&SessionAuth>,
        challenge: String,
    ) -> Result<(), SignInError> {
        let slot = self
            .slot(name)
            .ok_or_else(|| SignInError::refused(format!("{name} is not configured")))?;
        let (Some(browser), Some(auth)) = (self.shared.opts.sign_in_by_itself.clone(), auth) else {
            self.shared.sign_ins.refused(name, Some(challenge));
            self.shared.changed();
            return Err(SignInError::refused(format!(
                "The server \"{name}\" wants you to sign in again (Settings → Servers → Sign in)."
            )));
        };
        let manager = self
            .shared
            .sign_in_round(name, &slot.config, Some(&challenge), browser.0.as_ref())
            .await?;
        *auth.lock().await = manager;
        Ok(())
    }
}

/// The `WWW-Authenticate` challenge of a 401 or 403 somewhere in `e`'s chain of causes.
pub(super) fn challenge_of(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rmcp::transport::streamable_http_client::{
        AuthRequiredError, InsufficientScopeError, StreamableHttpError,
    };
    use rmcp::transport::DynamicTransportError;
    let mut source = Some(e);
    while let Some(current) = source {
        if let Some(a) = current.downcast_ref::<AuthRequiredError>() {
            return Some(a.www_authenticate_header.clone());
        }
        if let Some(a) = current.downcast_ref::<InsufficientScopeError>() {
            return Some(a.www_authenticate_header.clone());
        }
        // the 401 or 403 of a request after the handshake (it is no `source` of its error)
        if let Some(h) = current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            if let Some(found) = h.auth_challenge() {
                return Some(found.to_string());
            }
        }
        // our own transports' (a refusal without a challenge still wants a sign-in)
        if let Some(wanted) = current.downcast_ref::<crate::mcp::http::SignInWanted>() {
            return Some(wanted.challenge.clone().unwrap_or_default());
        }
        // a request's transport error is no `source` of rmcp's ServiceError either
        if let Some(rmcp::ServiceError::TransportSend(d)) =
            current.downcast_ref::<rmcp::ServiceError>()
        {
            if let Some(found) = challenge_of(d.error.as_ref()) {
                return Some(found);
            }
        }
        if let Some(d) = current.downcast_ref::<DynamicTransportError>() {
            if let Some(found) = challenge_of(d.error.as_ref()) {
                return Some(found);
            }
        }
        source = current.source();
    }
    None
}
