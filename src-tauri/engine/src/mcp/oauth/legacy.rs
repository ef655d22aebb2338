//! The 2025-03-26 discovery, for servers of that revision: no protected resource metadata (RFC
//! 9728 came later); the authorization server's metadata is read at the root of the MCP server's
//! origin (`/.well-known/oauth-authorization-server`), the server being its own authorization
//! server. Such a server may publish an `issuer` that is a path on its origin (`<origin>/oauth`,
//! where its endpoints live), which RFC 8414 §3.3's check refuses, since the metadata was not read
//! under that issuer; rmcp applies that check and fails the sign-in.
//!
//! Taken here only when it can lead nowhere the user did not already trust: the server publishes
//! no protected resource metadata at all (neither the challenge nor either well-known address
//! names one), and the metadata's issuer and every endpoint it names are on the MCP server's own
//! origin. Anything else stays refused.

use rmcp::transport::auth::AuthorizationMetadata;
use std::time::Duration;

/// The largest metadata document read.
const MAX_METADATA: usize = 256 * 1024;

/// The origin's 2025-03-26 authorization server metadata for the MCP server at `url`, when that
/// revision's discovery applies (see the module doc); `challenge` is the server's
/// `WWW-Authenticate`, if any.
pub(super) async fn root_metadata(
    url: &str,
    challenge: Option<&str>,
) -> Option<AuthorizationMetadata> {
    if challenge.is_some_and(|c| c.contains("resource_metadata")) {
        return None;
    }
    let base = url::Url::parse(url).ok()?;
    let origin = base.origin();
    let http = crate::mcp::http::client();
    // a server that publishes protected resource metadata is not of that revision
    let path = base.path().trim_end_matches('/');
    for prm in [
        format!("/.well-known/oauth-protected-resource{path}"),
        "/.well-known/oauth-protected-resource".to_string(),
    ] {
        let answer = get(&http, base.join(&prm).ok()?).await;
        if answer.is_some() {
            return None;
        }
    }
    let body = get(
        &http,
        base.join("/.well-known/oauth-authorization-server").ok()?,
    )
    .await?;
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body).ok()?;
    let here = |u: &str| url::Url::parse(u).is_ok_and(|u| u.origin() == origin);
    let all_here = here(&metadata.authorization_endpoint)
        && here(&metadata.token_endpoint)
        && metadata.registration_endpoint.as_deref().is_none_or(here)
        && metadata.issuer.as_deref().is_none_or(here);
    if !all_here {
        return None;
    }
    tracing::info!(
        issuer = metadata.issuer.as_deref().unwrap_or_default(),
        "2025-03-26 discovery: the authorization server's metadata at the server's origin, all on that origin"
    );
    Some(metadata)
}

/// The body of a successful GET of `url`, capped; `None` on anything else.
async fn get(http: &reqwest::Client, url: reqwest::Url) -> Option<Vec<u8>> {
    let resp = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    crate::mcp::http::read_capped(resp, MAX_METADATA).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    async fn serving(routes: impl FnOnce(&str) -> Vec<(&'static str, Value)>) -> String {
        super::super::test_server::serving(routes).await.base
    }

    /// Metadata whose issuer is `<base>/oauth`, its token endpoint at `token_origin`.
    fn metadata(base: &str, token_origin: &str) -> Value {
        json!({
            "issuer": format!("{base}/oauth"),
            "authorization_endpoint": format!("{base}/oauth/authorize"),
            "token_endpoint": format!("{token_origin}/oauth/token"),
            "registration_endpoint": format!("{base}/oauth/register"),
            "code_challenge_methods_supported": ["S256"],
        })
    }

    const ROOT: &str = "/.well-known/oauth-authorization-server";

    #[tokio::test]
    async fn a_2025_03_26_servers_own_metadata_is_taken_only_when_everything_stays_on_its_origin() {
        // its issuer a path of its origin, everything on that origin: taken
        let own = serving(|base| vec![(ROOT, metadata(base, base))]).await;
        let found = root_metadata(&format!("{own}/mcp"), None).await.unwrap();
        assert_eq!(found.issuer, Some(format!("{own}/oauth")));
        // a challenge that names no resource metadata changes nothing
        assert!(root_metadata(
            &format!("{own}/mcp"),
            Some(r#"Bearer error="invalid_token""#)
        )
        .await
        .is_some());

        // a token endpoint on another origin: refused
        let elsewhere = serving(|base| vec![(ROOT, metadata(base, "http://127.0.0.2:9"))]).await;
        assert!(root_metadata(&format!("{elsewhere}/mcp"), None)
            .await
            .is_none());

        // metadata that names another server altogether: refused
        let other =
            serving(|_| vec![(ROOT, metadata("http://127.0.0.2:9", "http://127.0.0.2:9"))]).await;
        assert!(root_metadata(&format!("{other}/mcp"), None).await.is_none());

        // a server that publishes protected resource metadata is not of that revision
        let newer = serving(|base| {
            vec![
                (ROOT, metadata(base, base)),
                (
                    "/.well-known/oauth-protected-resource/mcp",
                    json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
                ),
            ]
        })
        .await;
        assert!(root_metadata(&format!("{newer}/mcp"), None).await.is_none());
        // nor one whose challenge points at such metadata
        assert!(root_metadata(
            &format!("{own}/mcp"),
            Some(r#"Bearer resource_metadata="http://127.0.0.1:1/prm""#)
        )
        .await
        .is_none());
        // no metadata at the root: nothing
        let bare = serving(|_| vec![]).await;
        assert!(root_metadata(&format!("{bare}/mcp"), None).await.is_none());
    }
}
