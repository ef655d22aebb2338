//! What the catalog's HTTP client may reach beyond the registry the user chose. The registry's
//! own address (the settings' `catalogRegistry`: a company's registry may sit on a private
//! network, a developer's on this computer) and a proxy set in the environment are the user's
//! choice; anything an answer chooses (a redirect, an entry's icon) is not: a redirect leaves its
//! origin only for https, and no host name resolves to this computer, a private network or a
//! link-local address (the resolver refuses them when connecting, so a name that resolves to
//! 127.0.0.1 — DNS rebinding — is refused as an address written as 127.0.0.1 is).
//!
//! Two parts: a redirect policy (at most 5; within the origin reached, anything; elsewhere https
//! and never an address that is not public) and a DNS resolver (`reqwest::dns::Resolve`) that keeps
//! only public addresses except for the registry's own host and the environment's proxies.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, RwLock};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// Whether `ip` is on the public internet: not this computer, a private network (10/8,
/// 172.16/12, 192.168/16, 100.64/10, fc00::/7), link-local (169.254/16, fe80::/10), unspecified,
/// multicast, broadcast, documentation or reserved (and the same for an IPv4 address inside an
/// IPv6 one).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => is_public_v4(a),
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = a.segments();
            // NAT64 (64:ff9b::/96) reaches the IPv4 address it holds
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let o = a.octets();
                return is_public_v4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
            }
            !(a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || a == Ipv6Addr::from([0u8; 16]))
        }
    }
}

fn is_public_v4(a: Ipv4Addr) -> bool {
    let o = a.octets();
    !(a.is_loopback()
        || a.is_private()
        || a.is_link_local()
        || a.is_unspecified()
        || a.is_broadcast()
        || a.is_multicast()
        || a.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared (carrier-grade NAT)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
        || o[0] >= 240) // reserved
}

/// The address of `url` when it is written as one (`https://127.0.0.1/`, `https://[::1]/`).
pub fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(a) => Some(IpAddr::V4(a)),
        url::Host::Ipv6(a) => Some(IpAddr::V6(a)),
        url::Host::Domain(_) => None,
    }
}

/// A refused address, in words.
#[derive(Debug, thiserror::Error)]
#[error("{0} is on this computer or a private network, and the catalog only goes there for the registry you chose.")]
pub struct NotPublic(pub String);

/// A refused redirect, in words.
#[derive(Debug, thiserror::Error)]
pub enum BadRedirect {
    #[error("the answer redirected more than {MAX_REDIRECTS} times.")]
    TooMany,
    #[error("the answer redirected to {0}, which is not https; it was not followed.")]
    NotHttps(String),
    #[error("the answer redirected to {0}, which is on this computer or a private network; it was not followed.")]
    NotPublic(String),
}

/// The redirect policy: at most [`MAX_REDIRECTS`]; within the origin already reached, anything;
/// elsewhere https only, and never to an address (written as one) that is not public. A name is
/// checked by [`Resolver`] when it is connected to.
pub fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(BadRedirect::TooMany);
        }
        let next = attempt.url();
        let same_origin = attempt
            .previous()
            .last()
            .is_some_and(|p| p.origin() == next.origin());
        if same_origin {
            return attempt.follow();
        }
        if next.scheme() != "https" {
            let shown = next.to_string();
            return attempt.error(BadRedirect::NotHttps(shown));
        }
        if literal_ip(next).is_some_and(|ip| !is_public(ip)) {
            let shown = next.to_string();
            return attempt.error(BadRedirect::NotPublic(shown));
        }
        attempt.follow()
    })
}

/// Resolves host names (the system's resolver) and keeps only public addresses, except for the
/// names it was told to trust (the registry the user chose, a proxy of the environment).
#[derive(Clone, Default)]
pub struct Resolver {
    trusted: Arc<RwLock<HashSet<String>>>,
}

impl Resolver {
    /// A resolver trusting the proxies set in the environment (`HTTPS_PROXY`, `HTTP_PROXY`,
    /// `ALL_PROXY`, either case): the client connects to them, and they resolve the rest.
    pub fn new() -> Resolver {
        let r = Resolver::default();
        for var in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            if let Ok(v) = std::env::var(var) {
                let url = reqwest::Url::parse(&v)
                    .ok()
                    .filter(|u| u.host_str().is_some())
                    .or_else(|| reqwest::Url::parse(&format!("http://{v}")).ok());
                if let Some(h) = url.as_ref().and_then(|u| u.host_str()) {
                    r.trust(h);
                }
            }
        }
        r
    }

    /// `host`'s addresses are used whatever they are (the registry the user chose).
    pub fn trust(&self, host: &str) {
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        let mut t = self.trusted.write().unwrap_or_else(|e| e.into_inner());
        t.insert(host);
    }

    fn trusts(&self, host: &str) -> bool {
        let t = self.trusted.read().unwrap_or_else(|e| e.into_inner());
        t.contains(&host.to_ascii_lowercase())
    }
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        let trusted = self.trusts(&host);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = if trusted {
                addrs
            } else {
                addrs.into_iter().filter(|a| is_public(a.ip())).collect()
            };
            if kept.is_empty() {
                return Err(Box::new(NotPublic(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for a in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(!is_public(a.parse().unwrap()), "{a}");
        }
        for a in [
            "1.1.1.1",
            "140.82.112.3",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(is_public(a.parse().unwrap()), "{a}");
        }
    }

    #[tokio::test]
    async fn a_name_for_this_computer_is_refused_unless_trusted() {
        let r = Resolver::default();
        let err = r
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .expect("localhost is refused");
        assert!(
            err.to_string().contains("localhost is on this computer"),
            "{err}"
        );
        r.trust("LocalHost");
        let addrs: Vec<SocketAddr> = r
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }
}
