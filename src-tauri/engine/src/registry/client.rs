//! Talking to a registry (API v0.1) over HTTP: pages of servers and one server's latest version,
//! kept on disk with their ETag (asked again with If-None-Match, and shown from the disk when the
//! registry cannot be reached, saying so); downloads (bundles) and icons (https only, images
//! only). Every answer is capped in size and time. Redirects and host names are checked by
//! `net_guard`: past the registry the user chose, https only and public addresses only.
//!
//! The registry is the settings' `catalogRegistry`, else the official one: `GET
//! /v0.1/servers?search&cursor&limit&version=latest` (the window pages lazily, the CLI follows
//! every `nextCursor`, never the same one twice) and `/v0.1/servers/{name}/versions/latest`.
//! Answers are kept in `cache/catalog/`, by URL; a registry that cannot be reached (or answers 5xx)
//! gives the kept copy with a note (`Offline`). Limits (`LIMITS`): pages 8 MB, 30 s; downloads 256
//! MB, 10 min (https, or http to this computer), checked against `fileSha256`; icons PNG, JPEG or
//! WebP by their bytes (never SVG), at most 512 KB, given to the window as `data:`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::server_json::{self, Listed, NotV01, Page};

/// The official MCP Registry.
pub const OFFICIAL_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// How much and how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    pub page_bytes: u64,
    pub download_bytes: u64,
    pub icon_bytes: u64,
    pub connect: Duration,
    /// For a page or an icon, from the request to the last byte.
    pub page_time: Duration,
    /// For a download, from the request to the last byte.
    pub download_time: Duration,
    /// Servers asked per page.
    pub page_size: u32,
    /// Pages followed when listing everything.
    pub max_pages: usize,
}

pub const LIMITS: ClientLimits = ClientLimits {
    page_bytes: 8 * 1024 * 1024,
    download_bytes: crate::bundle::MAX_BUNDLE,
    icon_bytes: 512 * 1024,
    connect: Duration::from_secs(10),
    page_time: Duration::from_secs(30),
    download_time: Duration::from_secs(600),
    page_size: 50,
    max_pages: 500,
};

/// Why the registry (or a download) did not give what was asked.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("The registry at {url} cannot be reached ({reason}).")]
    Unreachable { url: String, reason: String },
    #[error("The registry at {url} did not answer in time.")]
    TimedOut { url: String },
    #[error("{url} answered with an error ({status}).")]
    Status { url: String, status: u16 },
    #[error("There is no server named \"{0}\" in this registry.")]
    NotFound(String),
    #[error("{url} sent more than {} MB; it was not read further.", .max / (1024 * 1024))]
    TooBig { url: String, max: u64 },
    #[error("The registry at {url} answered in a form Switchboard cannot read: {detail}")]
    NotV01 { url: String, detail: String },
    #[error("\"{0}\" is not an http:// or https:// address.")]
    BadUrl(String),
    #[error("The download does not match its fileSha256: it was refused.")]
    HashMismatch,
}

/// Said of something shown from the disk because the registry could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Offline {
    /// When the copy shown was fetched (Unix seconds).
    pub fetched_at: u64,
    /// Why the registry was not asked (its error, in words).
    pub reason: String,
}

/// What was asked for, and whether it came from the disk.
struct Fetched {
    body: Vec<u8>,
    offline: Option<Offline>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CacheEntry {
    url: String,
    etag: Option<String>,
    fetched_at: u64,
    body: String,
}

/// A client of one app: its HTTP client, its cache folder, its limits.
#[derive(Clone)]
pub struct RegistryClient {
    http: reqwest::Client,
    /// The client's resolver: told the registry's host (its addresses are the user's choice).
    resolver: super::net_guard::Resolver,
    cache: PathBuf,
    pub limits: ClientLimits,
    /// An icon's own address may be plain http on this computer (tests; never the app, where
    /// icons are https on a public address). Its redirects are checked all the same.
    pub loopback_http: bool,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `url`, when it may be downloaded from: https, or http to this computer (127.0.0.1, ::1,
/// localhost; a company's registry on a developer's machine, and the tests).
pub fn download_url(url: &str) -> Option<reqwest::Url> {
    let u = reqwest::Url::parse(url).ok()?;
    let local = matches!(
        u.host(),
        Some(url::Host::Ipv4(a)) if a.is_loopback()
    ) || matches!(u.host(), Some(url::Host::Ipv6(a)) if a.is_loopback())
        || u.host_str() == Some("localhost");
    (u.scheme() == "https" || (u.scheme() == "http" && local)).then_some(u)
}

impl RegistryClient {
    pub fn new(cache: PathBuf, limits: ClientLimits) -> RegistryClient {
        let resolver = super::net_guard::Resolver::new();
        let http = reqwest::Client::builder()
            .connect_timeout(limits.connect)
            .user_agent(concat!("Switchboard/", env!("CARGO_PKG_VERSION")))
            // past the registry the user chose: https only, public addresses only
            .redirect(super::net_guard::redirect_policy())
            .dns_resolver(resolver.clone())
            .build()
            .expect("an HTTP client");
        RegistryClient {
            http,
            resolver,
            cache,
            limits,
            loopback_http: false,
        }
    }

    /// One page of the servers whose name has `term` (all: empty), latest versions only.
    pub async fn page(
        &self,
        registry: &str,
        term: &str,
        cursor: Option<&str>,
    ) -> Result<(Page, Option<Offline>), FetchError> {
        let mut url = self.base(registry)?.join("v0.1/servers").expect("a path");
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("limit", &self.limits.page_size.to_string());
            q.append_pair("version", "latest");
            if !term.trim().is_empty() {
                q.append_pair("search", term.trim());
            }
            if let Some(c) = cursor {
                q.append_pair("cursor", c);
            }
        }
        let f = self
            .get_cached(url.as_str(), self.limits.page_bytes)
            .await?;
        let mut page =
            server_json::parse_page(&f.body).map_err(|NotV01(detail)| FetchError::NotV01 {
                url: url.to_string(),
                detail,
            })?;
        page.entries
            .retain(|l| !l.deleted() && l.official.is_latest != Some(false));
        Ok((page, f.offline))
    }

    /// Every page (following `nextCursor`, at most `max_pages`, never the same cursor twice).
    pub async fn all(
        &self,
        registry: &str,
        term: &str,
    ) -> Result<(Page, Option<Offline>), FetchError> {
        let mut all = Page {
            entries: vec![],
            skipped: vec![],
            next_cursor: None,
        };
        let mut offline = None;
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..self.limits.max_pages {
            let (page, off) = self.page(registry, term, cursor.as_deref()).await?;
            offline = offline.or(off);
            all.entries.extend(page.entries);
            all.skipped.extend(page.skipped);
            match page.next_cursor {
                Some(c) if seen.insert(c.clone()) => cursor = Some(c),
                _ => break,
            }
        }
        Ok((all, offline))
    }

    /// The latest version of the server `name`.
    pub async fn latest(
        &self,
        registry: &str,
        name: &str,
    ) -> Result<(Listed, Option<Offline>), FetchError> {
        let enc: String = url::form_urlencoded::byte_serialize(name.as_bytes()).collect();
        let url = format!(
            "{}v0.1/servers/{}/versions/latest",
            self.base(registry)?,
            enc.replace('+', "%20")
        );
        let f = match self.get_cached(&url, self.limits.page_bytes).await {
            Err(FetchError::Status { status: 404, .. }) => {
                return Err(FetchError::NotFound(name.into()))
            }
            other => other?,
        };
        let listed =
            server_json::parse_one(&f.body).map_err(|NotV01(detail)| FetchError::NotV01 {
                url: url.clone(),
                detail,
            })?;
        if listed.server.name != name || listed.deleted() {
            return Err(FetchError::NotFound(name.into()));
        }
        Ok((listed, f.offline))
    }

    /// Downloads a file (a bundle) of at most `download_bytes`, checked against `sha256`.
    pub async fn download(&self, url: &str, sha256: &str) -> Result<Vec<u8>, FetchError> {
        let u = self.allowed(url)?;
        let resp = self
            .http
            .get(u)
            .timeout(self.limits.download_time)
            .send()
            .await
            .map_err(|e| fetch_error(url, e))?;
        if !resp.status().is_success() {
            return Err(FetchError::Status {
                url: url.into(),
                status: resp.status().as_u16(),
            });
        }
        let body = read_capped(resp, url, self.limits.download_bytes).await?;
        if !crate::bundle::sha256_hex(&body).eq_ignore_ascii_case(sha256) {
            return Err(FetchError::HashMismatch);
        }
        Ok(body)
    }

    /// The registry's address as a base; its host is the user's choice, so whatever it resolves
    /// to is used.
    fn base(&self, registry: &str) -> Result<reqwest::Url, FetchError> {
        let u = base(registry)?;
        if let Some(h) = u.host_str() {
            self.resolver.trust(h);
        }
        Ok(u)
    }

    fn allowed(&self, url: &str) -> Result<reqwest::Url, FetchError> {
        download_url(url).ok_or_else(|| FetchError::BadUrl(url.into()))
    }

    /// An icon as a `data:` URL: https only, on a public address (a host name is checked when
    /// connecting; redirects too), PNG, JPEG or WebP (read from its bytes, not its label), at
    /// most `icon_bytes`; kept on disk. `None` when it cannot be had.
    pub async fn icon(&self, url: &str) -> Option<String> {
        let u = reqwest::Url::parse(url).ok()?;
        let test_loopback = self.loopback_http && download_url(url).is_some();
        if !test_loopback
            && (u.scheme() != "https"
                || super::net_guard::literal_ip(&u)
                    .is_some_and(|ip| !super::net_guard::is_public(ip)))
        {
            return None;
        }
        let key = format!("icon-{}", cache_key(url));
        if let Some(e) = self.read_cache(&key) {
            return Some(e.body);
        }
        let resp = self
            .http
            .get(u)
            .timeout(self.limits.page_time)
            .send()
            .await
            .ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let body = read_capped(resp, url, self.limits.icon_bytes).await.ok()?;
        let mime = image_type(&body)?;
        let data = format!(
            "data:{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&body)
        );
        self.write_cache(&key, url, None, &data);
        Some(data)
    }

    /// GET with the cached copy's ETag; the cached copy when the registry says it has not
    /// changed (304), or cannot be reached (or fails: 5xx), saying so.
    async fn get_cached(&self, url: &str, max: u64) -> Result<Fetched, FetchError> {
        let key = cache_key(url);
        let cached = self.read_cache(&key).filter(|e| e.url == url);
        let mut req = self
            .http
            .get(url)
            .timeout(self.limits.page_time)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(etag) = cached.as_ref().and_then(|c| c.etag.as_deref()) {
            req = req.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        let fallback = |reason: String, cached: Option<CacheEntry>| match cached {
            Some(c) => Ok(Fetched {
                body: c.body.into_bytes(),
                offline: Some(Offline {
                    fetched_at: c.fetched_at,
                    reason,
                }),
            }),
            None => Err(reason),
        };
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                let err = fetch_error(url, e);
                return fallback(err.to_string(), cached).map_err(|_| err);
            }
        };
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_MODIFIED {
            if let Some(c) = cached {
                self.write_cache(&key, url, c.etag.as_deref(), &c.body);
                return Ok(Fetched {
                    body: c.body.into_bytes(),
                    offline: None,
                });
            }
        }
        if status.is_server_error() {
            let err = FetchError::Status {
                url: url.into(),
                status: status.as_u16(),
            };
            return fallback(err.to_string(), cached).map_err(|_| err);
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                url: url.into(),
                status: status.as_u16(),
            });
        }
        let etag = resp
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let body = match read_capped(resp, url, max).await {
            Ok(b) => b,
            Err(e @ FetchError::TooBig { .. }) => return Err(e),
            Err(e) => return fallback(e.to_string(), cached).map_err(|_| e),
        };
        if let Ok(text) = std::str::from_utf8(&body) {
            self.write_cache(&key, url, etag.as_deref(), text);
        }
        Ok(Fetched {
            body,
            offline: None,
        })
    }

    fn read_cache(&self, key: &str) -> Option<CacheEntry> {
        let text = std::fs::read(self.cache.join(format!("{key}.json"))).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn write_cache(&self, key: &str, url: &str, etag: Option<&str>, body: &str) {
        let e = CacheEntry {
            url: url.into(),
            etag: etag.map(String::from),
            fetched_at: now(),
            body: body.into(),
        };
        let path = self.cache.join(format!("{key}.json"));
        let text = serde_json::to_vec(&e).expect("a cache entry serializes");
        if let Err(err) = crate::paths::write_private(&path, &text) {
            tracing::warn!("could not keep {url} in the catalog's cache: {err}");
        }
    }
}

/// The registry's address as a base (ending in `/`), http(s) only.
fn base(registry: &str) -> Result<reqwest::Url, FetchError> {
    let trimmed = registry.trim();
    let with_slash = if trimmed.ends_with('/') {
        trimmed.to_string()
    } else {
        format!("{trimmed}/")
    };
    match reqwest::Url::parse(&with_slash) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(u),
        _ => Err(FetchError::BadUrl(registry.into())),
    }
}

fn cache_key(url: &str) -> String {
    crate::bundle::hex(&Sha256::digest(url.as_bytes()))[..32].to_string()
}

fn fetch_error(url: &str, e: reqwest::Error) -> FetchError {
    if e.is_timeout() {
        FetchError::TimedOut { url: url.into() }
    } else {
        // the innermost cause says most (connection refused, no such host)
        let mut reason = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            reason = s.to_string();
            source = s.source();
        }
        FetchError::Unreachable {
            url: url.into(),
            reason,
        }
    }
}

/// The body, at most `max` bytes (more is an error, not read further).
async fn read_capped(
    mut resp: reqwest::Response,
    url: &str,
    max: u64,
) -> Result<Vec<u8>, FetchError> {
    let too_big = || FetchError::TooBig {
        url: url.into(),
        max,
    };
    if resp.content_length().is_some_and(|n| n > max) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| fetch_error(url, e))? {
        if body.len() as u64 + chunk.len() as u64 > max {
            return Err(too_big());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The image type of these bytes, when they are a PNG, a JPEG or a WebP.
fn image_type(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if b.len() > 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}
