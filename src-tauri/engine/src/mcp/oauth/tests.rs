//! The sign-in's own parts: revocation, where a sign-in is kept, and the refusals (no PKCE, an
//! answer from another issuer) against a local authorization server.
use super::*;
use crate::secrets::Secrets;
use keep::canonical;
use rmcp::transport::auth::{AuthorizationMetadata, CredentialStore, StoredCredentials};

fn kept_with(revocation: &str, secret: Option<&str>) -> Kept {
    let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
        "authorization_endpoint": "http://127.0.0.1:1/authorize",
        "token_endpoint": revocation.replace("/revoke", "/token"),
        "revocation_endpoint": revocation,
    }))
    .unwrap();
    let tokens = serde_json::from_value(serde_json::json!({
        "access_token": "at-1", "token_type": "bearer", "refresh_token": "rt-1"
    }))
    .unwrap();
    Kept {
        issuer: None,
        client_id: "c1".into(),
        client_secret: secret.map(String::from),
        metadata,
        credentials: Some(StoredCredentials::new(
            "c1".into(),
            Some(tokens),
            vec![],
            None,
        )),
        account: None,
    }
}

#[tokio::test]
async fn sign_out_revokes_the_refresh_token_where_the_server_can() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("token_type_hint") {
            let n = conn.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        String::from_utf8_lossy(&got).to_string()
    });
    let kept = kept_with(&format!("http://127.0.0.1:{port}/revoke"), None);
    assert_eq!(revoke(&kept).await, Ok(true));
    let request = server.await.unwrap();
    assert!(request.starts_with("POST /revoke "), "{request}");
    assert!(
        request.contains("token=rt-1&token_type_hint=refresh_token&client_id=c1&client_secret="),
        "{request}"
    );
    // without an endpoint nothing is sent, and that is no error
    let mut none = kept.clone();
    none.metadata.additional_fields.clear();
    assert_eq!(revoke(&none).await, Ok(false));
    // an endpoint on another origin than the token endpoint does not get the token
    let mut elsewhere = kept;
    elsewhere.metadata.token_endpoint = "http://127.0.0.2:9/token".into();
    assert!(revoke(&elsewhere).await.is_err());
}

#[test]
fn a_resource_is_its_url_without_fragment_or_trailing_slash() {
    assert_eq!(
        canonical("https://a.example/mcp/#x"),
        "https://a.example/mcp"
    );
    assert_eq!(canonical("https://a.example/mcp"), "https://a.example/mcp");
}

#[tokio::test]
async fn a_kept_sign_in_survives_in_the_secrets_file_and_is_forgotten_on_sign_out() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = Secrets::file_only(dir.path().to_path_buf(), "test");
    let keep = Keep::new("http://127.0.0.1:9/mcp", Some(secrets.clone()));
    assert!(keep.get().await.unwrap().is_none());
    keep.set(Some(Kept {
        issuer: Some("http://127.0.0.1:9".into()),
        client_id: "c1".into(),
        client_secret: Some("s3cret".into()),
        metadata: AuthorizationMetadata::default(),
        credentials: None,
        account: None,
    }))
    .await
    .unwrap();
    keep.save(StoredCredentials::new(
        "c1".into(),
        None,
        vec!["mcp:read".into()],
        Some(1),
    ))
    .await
    .unwrap();
    // another run of the app reads it back
    let again = Keep::new("http://127.0.0.1:9/mcp/", Some(secrets.clone()));
    let kept = again.get().await.unwrap().unwrap();
    assert_eq!(kept.client_secret.as_deref(), Some("s3cret"));
    assert_eq!(kept.credentials.unwrap().granted_scopes, ["mcp:read"]);
    // not in plain sight: the secrets file is the place, 0600
    let text = std::fs::read_to_string(secrets.file_path()).unwrap();
    assert!(text.contains("s3cret"));
    again.forget().await.unwrap();
    let third = Keep::new("http://127.0.0.1:9/mcp", Some(secrets.clone()));
    assert!(third.get().await.unwrap().is_none());
    // another server's sign-in is another entry
    let other = Keep::new("http://127.0.0.1:9/other", Some(secrets));
    assert_ne!(other.id(), third.id());
}

/// A browser that records the pages it was given and, when told to, answers the loopback
/// listener as an authorization server would after the person approved (with `iss`).
struct AnsweringBrowser {
    opened: std::sync::Mutex<Vec<String>>,
    iss: Option<String>,
}

#[async_trait::async_trait]
impl Browser for AnsweringBrowser {
    async fn open(&self, url: &str) -> Result<(), String> {
        self.opened.lock().unwrap().push(url.to_string());
        let page = url::Url::parse(url).unwrap();
        let get = |k: &str| {
            page.query_pairs()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.into_owned())
                .unwrap()
        };
        let mut back = url::Url::parse(&get("redirect_uri")).unwrap();
        back.query_pairs_mut()
            .append_pair("code", "the-code")
            .append_pair("state", &get("state"));
        if let Some(iss) = &self.iss {
            back.query_pairs_mut().append_pair("iss", iss);
        }
        reqwest::get(back).await.map_err(|e| e.to_string())?;
        Ok(())
    }
    fn interactive(&self) -> bool {
        false
    }
}

/// An MCP server at `<base>/mcp` whose authorization server is itself, with `extra` in its
/// authorization server metadata (and a registration endpoint that gives `c1`).
async fn authorization_server(extra: serde_json::Value) -> test_server::TestServer {
    test_server::serving(|base| {
        let mut metadata = serde_json::json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "registration_endpoint": format!("{base}/register"),
            "response_types_supported": ["code"],
        });
        metadata
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        vec![
            (
                "/.well-known/oauth-protected-resource/mcp",
                serde_json::json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
            ),
            ("/.well-known/oauth-authorization-server", metadata),
            (
                "/register",
                serde_json::json!({"client_id": "c1", "redirect_uris": ["http://127.0.0.1/callback"]}),
            ),
            (
                "/token",
                serde_json::json!({"access_token": "at", "token_type": "Bearer", "expires_in": 3600}),
            ),
        ]
    })
    .await
}

async fn try_sign_in(
    server: &test_server::TestServer,
    browser: &AnsweringBrowser,
) -> Result<(), String> {
    let url = format!("{}/mcp", server.base);
    let challenge = format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
        server.base
    );
    sign_in(
        &url,
        Some(&challenge),
        &ClientChoice::default(),
        browser,
        &Keep::new(&url, None),
    )
    .await
    .map(drop)
}

#[tokio::test]
async fn an_authorization_server_that_does_not_say_it_does_pkce_is_refused_before_anything() {
    let server = authorization_server(serde_json::json!({})).await;
    let browser = AnsweringBrowser {
        opened: Default::default(),
        iss: None,
    };
    let e = try_sign_in(&server, &browser).await.unwrap_err();
    assert!(e.contains("PKCE"), "{e}");
    assert!(browser.opened.lock().unwrap().is_empty(), "no page opened");
    assert!(
        !server.seen().iter().any(|p| p == "/register"),
        "{:?}",
        server.seen()
    );
}

#[tokio::test]
async fn an_answer_from_another_issuer_is_refused_and_its_code_never_used() {
    let pkce = serde_json::json!({
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
    });
    // the same authorization server, answering as another issuer
    let server = authorization_server(pkce.clone()).await;
    let browser = AnsweringBrowser {
        opened: Default::default(),
        iss: Some("http://evil.example".into()),
    };
    let e = try_sign_in(&server, &browser).await.unwrap_err();
    assert!(e.contains("issuer"), "{e}");
    assert_eq!(browser.opened.lock().unwrap().len(), 1);
    assert!(
        !server.seen().iter().any(|p| p == "/token"),
        "{:?}",
        server.seen()
    );
    // answering as itself: the code is exchanged
    let server = authorization_server(pkce).await;
    let browser = AnsweringBrowser {
        opened: Default::default(),
        iss: Some(server.base.clone()),
    };
    try_sign_in(&server, &browser).await.unwrap();
    assert!(
        server.seen().iter().any(|p| p == "/token"),
        "{:?}",
        server.seen()
    );
}

/// An ID token (a JWT, unsigned: only its claims are read) carrying `claims`.
fn id_token(claims: serde_json::Value) -> String {
    use base64::Engine;
    let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    format!(
        "{}.{}.{}",
        b64(br#"{"alg":"RS256"}"#),
        b64(claims.to_string().as_bytes()),
        b64(b"sig")
    )
}

#[test]
fn the_account_shown_is_the_id_tokens_email_else_its_name_else_its_subject() {
    let email = serde_json::json!({"sub": "123", "email": "ada@example.com", "name": "Ada"});
    assert_eq!(
        keep::account_of(&id_token(email)).as_deref(),
        Some("ada@example.com")
    );
    let name = serde_json::json!({"sub": "123", "preferred_username": "ada"});
    assert_eq!(keep::account_of(&id_token(name)).as_deref(), Some("ada"));
    let empty_email = serde_json::json!({"sub": "123", "email": "", "name": "Ada"});
    assert_eq!(
        keep::account_of(&id_token(empty_email)).as_deref(),
        Some("Ada")
    );
    let sub = serde_json::json!({"sub": "123"});
    assert_eq!(keep::account_of(&id_token(sub)).as_deref(), Some("123"));
    assert_eq!(keep::account_of("not a token"), None);
    assert_eq!(keep::account_of("a.!!!.c"), None);
}

#[tokio::test]
async fn the_account_is_kept_from_the_first_tokens_when_refreshed_ones_come_without_it() {
    let id_token = id_token(serde_json::json!({"email": "ada@example.com"}));
    let keep = Keep::new("http://127.0.0.1:9/mcp", None);
    keep.set(Some(Kept {
        issuer: Some("http://127.0.0.1:9".into()),
        client_id: "c1".into(),
        client_secret: None,
        metadata: AuthorizationMetadata::default(),
        credentials: None,
        account: None,
    }))
    .await
    .unwrap();
    let tokens = |extra: serde_json::Value| {
        let mut t = serde_json::json!({"access_token": "at", "token_type": "bearer"});
        t.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        StoredCredentials::new(
            "c1".into(),
            Some(serde_json::from_value(t).unwrap()),
            vec![],
            None,
        )
    };
    keep.save(tokens(serde_json::json!({"id_token": id_token})))
        .await
        .unwrap();
    let shown = keep.signed_in_now().unwrap();
    assert_eq!(shown.account.as_deref(), Some("ada@example.com"));
    // refreshed: no ID token this time
    keep.save(tokens(serde_json::json!({}))).await.unwrap();
    assert_eq!(
        keep.signed_in_now().unwrap().account.as_deref(),
        Some("ada@example.com")
    );
}

#[tokio::test]
async fn a_sign_in_page_that_is_not_https_is_never_opened() {
    for endpoint in [
        "http://auth.example/authorize",
        "file:///etc/passwd",
        "javascript:alert(1)//authorize",
        "ssh://auth.example/authorize",
    ] {
        let server = authorization_server(serde_json::json!({
            "code_challenge_methods_supported": ["S256"],
            "authorization_endpoint": endpoint,
        }))
        .await;
        let browser = AnsweringBrowser {
            opened: Default::default(),
            iss: None,
        };
        let e = try_sign_in(&server, &browser).await.unwrap_err();
        assert!(
            e.contains("not opened") || e.contains("never opened"),
            "{endpoint}: {e}"
        );
        assert!(
            browser.opened.lock().unwrap().is_empty(),
            "{endpoint} opened"
        );
    }
}

#[test]
fn only_https_or_loopback_http_sign_in_pages_are_opened() {
    let ok = |u: &str| openable_authorization_url(u);
    assert_eq!(ok("https://auth.example/a?x=1").unwrap(), "auth.example");
    assert_eq!(ok("http://127.0.0.1:8080/a").unwrap(), "127.0.0.1");
    assert_eq!(ok("http://localhost/a").unwrap(), "localhost");
    assert_eq!(ok("http://[::1]:9/a").unwrap(), "[::1]");
    for bad in [
        "http://auth.example/a",
        "http://10.0.0.1/a",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,hi",
        "https://user:pw@auth.example/a",
        "not a url",
    ] {
        assert!(ok(bad).is_err(), "{bad}");
    }
}
