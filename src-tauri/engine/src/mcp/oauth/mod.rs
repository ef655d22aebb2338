//! Signing in to remote MCP servers (OAuth 2.1 as the MCP authorization spec has it, 2025-11-25
//! and 2026-07-28).
//!
//! rmcp's `auth` does the protocol: protected resource metadata (RFC 9728, from the 401's
//! `WWW-Authenticate` or the well-known fallbacks, with its `resource` checked against the
//! server's URL), authorization server metadata (RFC 8414, OpenID discovery, the issuer checked),
//! dynamic client registration (RFC 7591, `application_type` native), PKCE S256 with the
//! `resource` indicator, the RFC 9207 `iss` check on the answer, the token exchange, refresh before
//! expiry and on a 401, and an address filter on everything discovery reaches.
//!
//! Ours, because rmcp leaves it to the host: refusing an authorization server that does not say
//! it supports PKCE; which client identity to use (the one the user entered, else a Client ID
//! Metadata Document when the server takes one, else registration); the scopes of a step-up (the
//! ones granted so far and the ones asked for); the browser step and the loopback listener the
//! answer comes back to (`loopback`); where tokens are kept ([`Keep`]: the OS keyring, else the
//! 0600 secrets file, one entry per server URL, never in mcp.json, logs or exports); and a bound on
//! sign-in rounds (`MAX_ROUNDS`), which rmcp's own step-up counter does not give.
//!
//! A sign-in page is opened only at `https` (or `http` on a loopback address; never another scheme:
//! [`openable_authorization_url`]), and its host is on the server's row before the browser opens
//! it. The tokens, client secret and refresh token are only in the secret store; a token goes only
//! to the server it was issued for (rmcp checks the metadata's `resource` against the server's
//! URL).

mod error;
mod keep;
mod legacy;
mod loopback;

pub use error::SignInError;
pub use keep::{Keep, Kept, SignedIn};

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata, OAuthClientConfig};

/// Sign-in rounds for one server before giving up, until one of its authorized requests
/// succeeds (a server that keeps refusing every token must not loop the user through the browser).
pub const MAX_ROUNDS: u32 = 3;

/// How long the browser step may take: a person signs in.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// The name Switchboard registers under.
const CLIENT_NAME: &str = "Switchboard";

/// Who does the browser step: shows the authorization page to the person (the system browser),
/// or, with nobody to ask, follows its redirects (tests and the conformance suite, whose
/// authorization servers approve at once).
#[async_trait::async_trait]
pub trait Browser: Send + Sync {
    async fn open(&self, url: &str) -> Result<(), SignInError>;
    /// Whether a person answers (then the wait is long; else the redirects end it at once).
    fn interactive(&self) -> bool {
        true
    }
}

/// The host of an authorization page that may be opened: `https`, or `http` to a loopback
/// address only (`127.0.0.0/8`, `::1`, `localhost`); any other scheme (`file:`, `javascript:`, a
/// custom handler…) or a page with credentials in its address is never opened.
pub fn openable_authorization_url(url: &str) -> Result<String, SignInError> {
    let u = url::Url::parse(url)
        .map_err(|e| SignInError::refused(format!("the sign-in address is not valid: {e}")))?;
    if !matches!(u.scheme(), "https" | "http") {
        return Err(SignInError::refused(format!(
            "the sign-in address is a {}: address, never opened",
            u.scheme()
        )));
    }
    let host = u
        .host()
        .ok_or_else(|| SignInError::refused("the sign-in address names no host: not opened"))?
        .to_owned();
    let loopback = match &host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(a) => a.is_loopback(),
        url::Host::Ipv6(a) => a.is_loopback(),
    };
    if u.scheme() == "http" && !loopback {
        return Err(SignInError::refused(format!(
            "the sign-in page is at http://{host}: not opened, only https (or http on this computer) is"
        )));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(SignInError::refused(
            "the sign-in address carries a user name or password: not opened",
        ));
    }
    Ok(host.to_string())
}

/// A [`Browser`] to keep in options.
#[derive(Clone)]
pub struct BrowserStep(pub Arc<dyn Browser>);

impl std::fmt::Debug for BrowserStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BrowserStep")
    }
}

/// The headless browser step: GET the authorization URL and follow its redirects, the last of
/// which reaches our loopback listener.
pub struct FollowRedirects;

#[async_trait::async_trait]
impl Browser for FollowRedirects {
    async fn open(&self, url: &str) -> Result<(), SignInError> {
        let http = |source| SignInError::Http {
            what: "the authorization page could not be reached",
            source,
        };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(http)?;
        let resp = client.get(url).send().await.map_err(http)?;
        if resp.url().host_str() == Some("127.0.0.1") && resp.url().path() == loopback::PATH {
            Ok(())
        } else {
            Err(SignInError::NeedsPerson {
                origin: resp.url().origin().ascii_serialization(),
                status: resp.status().as_u16(),
            })
        }
    }
    fn interactive(&self) -> bool {
        false
    }
}

/// Prints the authorization URL for a person to open (the command line).
pub struct PrintUrl;

#[async_trait::async_trait]
impl Browser for PrintUrl {
    async fn open(&self, url: &str) -> Result<(), SignInError> {
        eprintln!("Sign in by opening this address in a browser:\n{url}");
        Ok(())
    }
}

/// The client identity the user configured for a server (`oauth` in its config).
#[derive(Debug, Clone, Default)]
pub struct ClientChoice {
    /// A pre-registered client id, and its secret when it has one.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// A Client ID Metadata Document (an https URL), used when the authorization server takes one.
    pub metadata_url: Option<String>,
}

/// The authorization manager for a server whose sign-in is kept: its tokens (refreshed as they
/// expire), its client, its authorization server's endpoints, without asking the network.
/// `None`: not signed in.
pub async fn restore(url: &str, keep: &Keep) -> Result<Option<AuthorizationManager>, SignInError> {
    let Some(kept) = keep.get().await? else {
        return Ok(None);
    };
    if kept.credentials.is_none() {
        return Ok(None);
    }
    let mut m = AuthorizationManager::new(url).await?;
    m.set_metadata(kept.metadata.clone());
    let mut client = OAuthClientConfig::new(kept.client_id.clone(), loopback::REDIRECT_PLACEHOLDER);
    if let Some(s) = &kept.client_secret {
        client = client.with_client_secret(s.clone());
    }
    m.configure_client(client)?;
    m.set_credential_store(keep.clone());
    Ok(Some(m))
}

/// One sign-in round for the server at `url`: from its challenge (the `WWW-Authenticate` of its
/// 401 or 403, if any) to tokens kept in `keep`. Returns the manager that holds them.
pub async fn sign_in(
    url: &str,
    challenge: Option<&str>,
    choice: &ClientChoice,
    browser: &dyn Browser,
    keep: &Keep,
) -> Result<AuthorizationManager, SignInError> {
    let mut m = AuthorizationManager::new(url).await?;
    let metadata = authorization_server(&m, url, challenge).await?;
    m.set_metadata(metadata.clone());
    let listener = loopback::Listener::bind().await?;
    let redirect = listener.redirect_uri();
    let client = client_identity(&mut m, choice, &metadata, &redirect).await?;
    let scopes = scopes_to_ask(&m, keep, &metadata).await;
    let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let auth_url = m.get_authorization_url(&refs).await?;
    let state = url::Url::parse(&auth_url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| SignInError::refused("the authorization address has no state"))?;

    // the client is kept before the tokens come (rmcp saves them through `keep`)
    keep.set(Some(Kept {
        issuer: metadata.issuer.clone(),
        client_id: client.client_id.clone(),
        client_secret: client.client_secret.clone(),
        metadata: metadata.clone(),
        credentials: None,
        account: None,
    }))
    .await?;
    m.set_credential_store(keep.clone());

    let answer = browser_step(browser, &listener, &auth_url, &state).await?;
    let code = code_of(&answer, metadata.issuer.as_deref())?;
    m.exchange_code_for_token_with_issuer(&code, &state, answer.issuer.as_deref())
        .await?;
    Ok(m)
}

/// The authorization server's metadata, found from the server's challenge (or, for a 2025-03-26
/// server, at its root); refused when the server does not say it does PKCE.
async fn authorization_server(
    m: &AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, SignInError> {
    let (metadata, discovered) = match m.resolve_metadata_from_challenge(challenge).await {
        Ok(found) => (found.metadata, found.source.is_discovered()),
        // a 2025-03-26 server's own metadata, which rmcp's issuer check refuses (legacy.rs)
        Err(e) => match legacy::root_metadata(url, challenge).await {
            Some(metadata) => (metadata, true),
            None => return Err(e.into()),
        },
    };
    // the spec: refuse an authorization server that does not say it does PKCE (the 2025-03-26
    // fallback endpoints are guessed, not published: nothing to read there)
    if discovered && metadata.code_challenge_methods_supported.is_none() {
        return Err(SignInError::refused(
            "the server's authorization server does not say it supports PKCE, which signing in safely needs; not signing in",
        ));
    }
    Ok(metadata)
}

/// The client identity, configured in `m`: the user's, else a metadata document the server
/// takes, else one registered now; refused when none of them can be had.
async fn client_identity(
    m: &mut AuthorizationManager,
    choice: &ClientChoice,
    metadata: &AuthorizationMetadata,
    redirect: &str,
) -> Result<OAuthClientConfig, SignInError> {
    let takes_documents = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        == Some(&serde_json::Value::Bool(true));
    Ok(if let Some(id) = &choice.client_id {
        let mut c = OAuthClientConfig::new(id.clone(), redirect);
        if let Some(s) = &choice.client_secret {
            c = c.with_client_secret(s.clone());
        }
        m.configure_client(c.clone())?;
        c
    } else if let (Some(doc), true) = (&choice.metadata_url, takes_documents) {
        let c = OAuthClientConfig::new(doc.clone(), redirect);
        m.configure_client(c.clone())?;
        c
    } else if metadata.registration_endpoint.is_some() {
        m.register_client(CLIENT_NAME, redirect, &[]).await?
    } else {
        return Err(SignInError::refused(
            "the server's authorization server does not let Switchboard register itself: enter the client id it gave you in the server's settings",
        ));
    })
}

/// The scopes to ask for: the challenge's, else all the server lists, else none; a new round
/// keeps what was granted before by the same issuer (a step-up adds to it).
async fn scopes_to_ask(
    m: &AuthorizationManager,
    keep: &Keep,
    metadata: &AuthorizationMetadata,
) -> Vec<String> {
    let before = keep
        .get()
        .await
        .ok()
        .flatten()
        .filter(|k| k.issuer == metadata.issuer)
        .and_then(|k| k.credentials)
        .map(|c| c.granted_scopes)
        .unwrap_or_default();
    let mut scopes = m.select_initial_scopes(&[]).await;
    for s in before {
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    scopes
}

/// The browser step: the authorization page opened (never anything but a web page: https, or
/// http on this computer) and the answer awaited on the loopback listener, long for a person,
/// briefly for redirects followed.
async fn browser_step(
    browser: &dyn Browser,
    listener: &loopback::Listener,
    auth_url: &str,
    state: &str,
) -> Result<loopback::Answer, SignInError> {
    let wait = if browser.interactive() {
        SIGN_IN_WAIT
    } else {
        Duration::from_secs(30)
    };
    // never anything but a web page (https, or http on this computer)
    openable_authorization_url(auth_url)?;
    let open = browser.open(auth_url);
    let answer = listener.answer(state, wait);
    tokio::pin!(open, answer);
    tokio::select! {
        a = &mut answer => a,
        opened = &mut open => match opened {
            Ok(()) => answer.await,
            Err(e) => Err(e),
        },
    }
}

/// The code in the authorization server's answer; its error when it refused, and nothing acted
/// on when the answer came from another authorization server than `expected_issuer`.
fn code_of(
    answer: &loopback::Answer,
    expected_issuer: Option<&str>,
) -> Result<String, SignInError> {
    if let Some(error) = &answer.error {
        // an answer from another authorization server is not acted on, not even its error
        if answer.issuer.is_some() && answer.issuer.as_deref() != expected_issuer {
            return Err(SignInError::refused(
                "the sign-in answer came from another authorization server; ignored",
            ));
        }
        return Err(SignInError::Denied {
            error: error.clone(),
            description: answer.error_description.clone(),
        });
    }
    answer
        .code
        .clone()
        .ok_or_else(|| SignInError::refused("the sign-in answer has no code"))
}

/// Asks the authorization server to forget the kept tokens (RFC 7009), when its metadata names a
/// revocation endpoint on the same origin as its token endpoint: the refresh token (which ends
/// its access tokens too, at most servers), else the access token. True when one was revoked;
/// a server without revocation is no error (the tokens are forgotten here either way).
pub async fn revoke(kept: &Kept) -> Result<bool, SignInError> {
    let Some(endpoint) = kept
        .metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(serde_json::Value::as_str)
    else {
        return Ok(false);
    };
    let same_origin = match (
        url::Url::parse(endpoint),
        url::Url::parse(&kept.metadata.token_endpoint),
    ) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    };
    if !same_origin {
        return Err(SignInError::refused(format!(
            "the revocation endpoint ({endpoint}) is not where the tokens came from; not sending them there"
        )));
    }
    let tokens = kept
        .credentials
        .as_ref()
        .and_then(|c| c.token_response.as_ref())
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or_default();
    let (token, hint) = match (
        tokens["refresh_token"].as_str(),
        tokens["access_token"].as_str(),
    ) {
        (Some(r), _) => (r, "refresh_token"),
        (None, Some(a)) => (a, "access_token"),
        _ => return Ok(false),
    };
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|source| SignInError::Http {
            what: "revoking the sign-in failed",
            source,
        })?;
    let mut request = client.post(endpoint).header(
        reqwest::header::CONTENT_TYPE,
        "application/x-www-form-urlencoded",
    );
    // a confidential client authenticates one way: in the form when that is all the server
    // lists, else HTTP basic (the RFC's default); a public client names itself
    let methods = |key: &str| -> Vec<String> {
        kept.metadata
            .additional_fields
            .get(key)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    };
    let mut listed = methods("revocation_endpoint_auth_methods_supported");
    if listed.is_empty() {
        listed = methods("token_endpoint_auth_methods_supported");
    }
    let post_only = listed.iter().any(|m| m == "client_secret_post")
        && !listed.iter().any(|m| m == "client_secret_basic");
    let body = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", token)
            .append_pair("token_type_hint", hint);
        match &kept.client_secret {
            Some(secret) if post_only => {
                form.append_pair("client_id", &kept.client_id)
                    .append_pair("client_secret", secret);
            }
            Some(secret) => request = request.basic_auth(&kept.client_id, Some(secret)),
            // an empty secret, which RFC 6749 §2.3.1 lets a client send or leave out: the MCP
            // Python SDK's revocation endpoint refuses a request without the field
            None => {
                form.append_pair("client_id", &kept.client_id)
                    .append_pair("client_secret", "");
            }
        }
        form.finish()
    };
    let resp = request
        .body(body)
        .send()
        .await
        .map_err(|source| SignInError::Http {
            what: "revoking the sign-in failed",
            source,
        })?;
    if resp.status().is_success() {
        Ok(true)
    } else {
        Err(SignInError::refused(format!(
            "the authorization server did not revoke the sign-in (HTTP {})",
            resp.status().as_u16()
        )))
    }
}

#[cfg(test)]
mod test_server;
#[cfg(test)]
mod tests;
