//! MCP Apps (the `io.modelcontextprotocol/ui` extension, SEP-1865): a tool whose definition links
//! a `ui://` resource gets that HTML shown with its result, as an app the user can use. Here: what
//! a tool's `_meta.ui` says (its resource, who may call it), reading the resource, and the Content
//! Security Policy it runs under, built from what the resource declares — network only to the
//! origins it declares *and* the user allowed for that server (`appNetwork`, `appOrigins` in its
//! config) — and what it asks of the browser (`permissions`, granted only after the user agreed).
//! The frames, their origins and the bridge live in the app (src-tauri/apps.rs,
//! ui/js/views/app-frame.js).
//!
//! Details: a tool's `visibility` (a tool only its app may call gets no name for the model, so
//! nothing routes a model's call to it); declared origins kept only as origins (an address only as
//! itself, never a wildcard over numbers); the CSP reaches `AppDomains::within` the server's
//! `appOrigins` (the list the user was shown when allowing its apps the network, `appNetwork`; none
//! otherwise), lets the app's code `eval` and run from `blob:`/`data:`, workers too, which reach
//! nothing; the stricter policy of the page between window and app (`PROXY_CSP`); what a page asks
//! of the browser (`AppPermissions`: camera, microphone, geolocation, clipboard, as an `allow`
//! attribute); random view ids.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const UI_EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The only kind of UI resource there is so far: an HTML page that speaks the apps bridge.
pub const APP_MIME: &str = "text/html;profile=mcp-app";
/// The largest page shown (the example apps are single files of 0.2–4.3 MB).
pub const MAX_APP_HTML: usize = 8 * 1024 * 1024;
/// The largest answer an app gets to a `resources/read` of its server (server-video-resource's
/// videos are base64 blobs of a few MB).
pub const MAX_APP_READ: usize = 48 * 1024 * 1024;

/// What a tool's `_meta.ui` says about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolUi {
    /// Its app (`ui://…`), shown with its result.
    pub resource_uri: Option<String>,
    /// The model may call it (`visibility` has `model`; the default).
    pub model: bool,
    /// Its app may call it (`visibility` has `app`; the default).
    pub app: bool,
}

impl Default for ToolUi {
    fn default() -> Self {
        ToolUi {
            resource_uri: None,
            model: true,
            app: true,
        }
    }
}

/// A tool's UI from its `_meta`: `ui.resourceUri` (or the older flat `ui/resourceUri`), which
/// must be a `ui://` URI, and `ui.visibility`.
pub fn tool_ui(meta: Option<&Map<String, Value>>) -> ToolUi {
    let Some(meta) = meta else {
        return ToolUi::default();
    };
    let ui = meta.get("ui");
    let uri = ui
        .and_then(|u| u.get("resourceUri"))
        .or_else(|| meta.get("ui/resourceUri"))
        .and_then(Value::as_str)
        .filter(|u| u.starts_with("ui://"))
        .map(String::from);
    let visibility: Option<Vec<&str>> = ui
        .and_then(|u| u.get("visibility"))
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect());
    ToolUi {
        resource_uri: uri,
        model: visibility.as_ref().is_none_or(|v| v.contains(&"model")),
        app: visibility.as_ref().is_none_or(|v| v.contains(&"app")),
    }
}

/// The origins a UI resource declares it needs (`_meta.ui.csp`), each checked to be one origin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppDomains {
    /// fetch, XHR, WebSocket.
    pub connect: Vec<String>,
    /// Scripts, styles, images, fonts, media.
    pub resource: Vec<String>,
    /// Frames it embeds.
    pub frame: Vec<String>,
    /// Where its `<base href>` may point.
    pub base_uri: Vec<String>,
}

impl AppDomains {
    pub fn is_empty(&self) -> bool {
        self.connect.is_empty()
            && self.resource.is_empty()
            && self.frame.is_empty()
            && self.base_uri.is_empty()
    }

    pub fn of(csp: Option<&Value>) -> AppDomains {
        let list = |key: &str| -> Vec<String> {
            let mut v: Vec<String> = csp
                .and_then(|c| c.get(key))
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .filter_map(origin_source)
                        .collect()
                })
                .unwrap_or_default();
            v.dedup();
            v
        };
        AppDomains {
            connect: list("connectDomains"),
            resource: list("resourceDomains"),
            frame: list("frameDomains"),
            base_uri: list("baseUriDomains"),
        }
    }

    /// Every origin it names, each once, sorted: what the user is shown before allowing them.
    pub fn all(&self) -> Vec<String> {
        let mut all: Vec<String> = [&self.connect, &self.resource, &self.frame, &self.base_uri]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// Only the origins that are also in `allowed` (what the user saw and allowed).
    pub fn within(&self, allowed: &[String]) -> AppDomains {
        let keep = |v: &Vec<String>| -> Vec<String> {
            v.iter().filter(|o| allowed.contains(o)).cloned().collect()
        };
        AppDomains {
            connect: keep(&self.connect),
            resource: keep(&self.resource),
            frame: keep(&self.frame),
            base_uri: keep(&self.base_uri),
        }
    }

    /// The origins it names that `allowed` does not have.
    pub fn beyond(&self, allowed: &[String]) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|o| !allowed.contains(o))
            .collect()
    }
}

/// A declared domain as a CSP source: an http(s)/ws(s) origin, or a host (with a leading `*.`
/// wildcard at most). Anything else (keywords, paths, schemes like `data:`, separators that would
/// end the directive) is dropped. An IP address is kept only as itself: a wildcard over numbers
/// (`*.0.0.1`, which would reach addresses nobody named) is dropped.
fn origin_source(d: &str) -> Option<String> {
    let d = d.trim();
    if d.is_empty() || d.len() > 253 {
        return None;
    }
    let (scheme, rest) = match d.split_once("://") {
        Some((s, r)) if matches!(s, "https" | "http" | "wss" | "ws") => (Some(s), r),
        Some(_) => return None,
        None => (None, d),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => (h, Some(p)),
        _ => (rest, None),
    };
    let wildcard = host.starts_with("*.");
    let bare = host.strip_prefix("*.").unwrap_or(host);
    let valid = !bare.is_empty()
        && bare.contains('.')
        && bare
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    let numeric = bare
        .split('.')
        .all(|l| l.chars().all(|c| c.is_ascii_digit()));
    if !valid || (wildcard && numeric) {
        return None;
    }
    let mut s = String::new();
    if let Some(scheme) = scheme {
        s.push_str(scheme);
        s.push_str("://");
    }
    s.push_str(host);
    if let Some(p) = port {
        s.push(':');
        s.push_str(p);
    }
    Some(s)
}

/// What a page asks of the browser (`_meta.ui.permissions`): each is granted only after the user
/// agreed, through its frame's `allow` attribute (Permissions Policy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppPermissions {
    pub camera: bool,
    pub microphone: bool,
    pub geolocation: bool,
    pub clipboard_write: bool,
}

impl AppPermissions {
    /// What `_meta.ui.permissions` asks for: each key present as an object.
    pub fn of(permissions: Option<&Value>) -> AppPermissions {
        let asks = |key: &str| {
            permissions
                .and_then(|p| p.get(key))
                .is_some_and(Value::is_object)
        };
        AppPermissions {
            camera: asks("camera"),
            microphone: asks("microphone"),
            geolocation: asks("geolocation"),
            clipboard_write: asks("clipboardWrite"),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == AppPermissions::default()
    }

    /// Only what both ask for and grant.
    pub fn and(&self, other: &AppPermissions) -> AppPermissions {
        AppPermissions {
            camera: self.camera && other.camera,
            microphone: self.microphone && other.microphone,
            geolocation: self.geolocation && other.geolocation,
            clipboard_write: self.clipboard_write && other.clipboard_write,
        }
    }

    /// The Permissions Policy features, as an iframe's `allow` attribute lists them.
    pub fn allow_attribute(&self) -> String {
        [
            (self.camera, "camera"),
            (self.microphone, "microphone"),
            (self.geolocation, "geolocation"),
            (self.clipboard_write, "clipboard-write"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| name)
        .collect::<Vec<_>>()
        .join("; ")
    }
}

/// The Content-Security-Policy an app page runs under, with the origins it may reach: those it
/// declares that the user allowed (`AppDomains::within`); none, and the page reaches nothing but
/// itself. Its code may `eval` (three.js and other libraries build code at run time; the
/// reference host allows it) and may also run from `blob:` and `data:` addresses, as workers
/// too (server-pdf's PDF.js starts its worker that way): all of that is code the page itself
/// carries, a worker inherits this policy, and none of it reaches the network.
pub fn content_security_policy(allowed: &AppDomains) -> String {
    let join = |extra: &[String]| {
        if extra.is_empty() {
            String::new()
        } else {
            format!(" {}", extra.join(" "))
        }
    };
    let or_none = |list: &[String]| {
        if list.is_empty() {
            "'none'".to_string()
        } else {
            list.join(" ")
        }
    };
    let resource = join(&allowed.resource);
    format!(
        "default-src 'none'; script-src 'self' 'unsafe-inline' 'unsafe-eval' blob: data:{resource}; \
         worker-src 'self' blob: data:; style-src 'self' 'unsafe-inline' blob: data:{resource}; \
         img-src 'self' data: blob:{resource}; font-src 'self' data: blob:{resource}; \
         media-src 'self' data: blob:{resource}; connect-src {}; frame-src {}; \
         object-src 'none'; base-uri {}; form-action 'none'",
        or_none(&allowed.connect),
        or_none(&allowed.frame),
        or_none(&allowed.base_uri),
    )
}

/// The policy of the page between the window and an app (the sandbox proxy, served from the
/// app's own origin): its one script, and a frame of its own origin (the app's page). The app
/// can run code in it (they share an origin), so it reaches less than any app: nothing.
pub const PROXY_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     frame-src 'self'; connect-src 'none'; img-src 'none'; object-src 'none'; base-uri 'none'; \
     form-action 'none'";

/// A fresh id for one shown app page (128 random bits, as hex): its address, so one page cannot
/// guess another's.
pub fn view_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The page as served: its policy also as the first thing in its `<head>` (the response header
/// is the one that counts; this keeps the page closed if it were ever loaded without it), then
/// `first` (markup the host puts before anything of the page's own).
pub fn with_policy_meta(html: &str, csp: &str, first: &str) -> String {
    let meta = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">{first}",
        csp.replace('"', "&quot;")
    );
    // after the start of its <head>, else of <html>, else its doctype (anything before a
    // doctype would put the page in quirks mode)
    let lower = html.to_ascii_lowercase();
    let after = |tag: &str| {
        lower
            .find(tag)
            .and_then(|i| lower[i..].find('>').map(|j| i + j + 1))
    };
    let at = after("<head")
        .or_else(|| after("<html"))
        .or_else(|| after("<!doctype"))
        .unwrap_or(0);
    format!("{}{meta}{}", &html[..at], &html[at..])
}

/// A UI resource, read.
#[derive(Debug, Clone, PartialEq)]
pub struct AppResource {
    pub uri: String,
    pub html: String,
    pub domains: AppDomains,
    /// What it asks of the browser (microphone, camera, …).
    pub permissions: AppPermissions,
    /// The page would rather have (or not have) a border drawn around it.
    pub prefers_border: Option<bool>,
}

/// One app page of a server and the origins it declares (for the settings form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppPage {
    pub uri: String,
    pub domains: AppDomains,
    /// Why it could not be read.
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_tools_ui_comes_from_its_meta_in_either_form_and_only_as_ui_uri() {
        assert_eq!(tool_ui(None), ToolUi::default());
        let m = meta(json!({"ui": {"resourceUri": "ui://a/app.html"}}));
        assert_eq!(
            tool_ui(Some(&m)).resource_uri.as_deref(),
            Some("ui://a/app.html")
        );
        let m = meta(json!({"ui/resourceUri": "ui://b/app.html"}));
        assert_eq!(
            tool_ui(Some(&m)).resource_uri.as_deref(),
            Some("ui://b/app.html")
        );
        for bad in [
            "https://evil.example/app.html",
            "file:///etc/passwd",
            "javascript:alert(1)",
        ] {
            let m = meta(json!({"ui": {"resourceUri": bad}}));
            assert_eq!(tool_ui(Some(&m)).resource_uri, None, "{bad}");
        }
        let m = meta(json!({"ui": {"visibility": ["app"]}}));
        assert_eq!(
            (tool_ui(Some(&m)).model, tool_ui(Some(&m)).app),
            (false, true)
        );
        let m = meta(json!({"ui": {"visibility": ["model"]}}));
        assert_eq!(
            (tool_ui(Some(&m)).model, tool_ui(Some(&m)).app),
            (true, false)
        );
    }

    #[test]
    fn declared_domains_are_kept_only_as_origins() {
        let d = AppDomains::of(Some(&json!({
            "connectDomains": ["https://api.example.com", "wss://live.example.com:8443", "'unsafe-eval'",
                               "https://a.example.com; script-src *", "*", "data:", "https://x.example.com/path",
                               "http://127.0.0.1:8080", "https://*.0.0.1", "*.168.1.1"],
            "resourceDomains": ["https://*.cdn.example.net", "unpkg.com", "*.b.example.org", "http://localhost"],
            "baseUriDomains": ["https://cdn.example.com"],
        })));
        // an address is kept as itself; a wildcard over numbers is not
        assert_eq!(
            d.connect,
            vec![
                "https://api.example.com",
                "wss://live.example.com:8443",
                "http://127.0.0.1:8080"
            ]
        );
        assert_eq!(
            d.resource,
            vec!["https://*.cdn.example.net", "unpkg.com", "*.b.example.org"]
        );
        assert!(d.frame.is_empty());
        assert_eq!(d.base_uri, vec!["https://cdn.example.com"]);
    }

    fn example() -> AppDomains {
        AppDomains {
            connect: vec!["https://api.example.com".into()],
            resource: vec!["https://cdn.example.com".into()],
            frame: vec![],
            base_uri: vec![],
        }
    }

    #[test]
    fn the_policy_lets_an_app_reach_only_what_it_declares_and_the_user_allowed() {
        let d = example();
        let closed = content_security_policy(&d.within(&[]));
        assert!(closed.starts_with("default-src 'none';"), "{closed}");
        assert!(closed.contains("connect-src 'none'"), "{closed}");
        assert!(!closed.contains("example.com"), "{closed}");
        assert!(closed.contains("frame-src 'none'") && closed.contains("form-action 'none'"));
        assert!(closed.contains("base-uri 'none'"), "{closed}");
        let all = d.all();
        assert_eq!(
            all,
            vec!["https://api.example.com", "https://cdn.example.com"]
        );
        let open = content_security_policy(&d.within(&all));
        assert!(
            open.contains("connect-src https://api.example.com;"),
            "{open}"
        );
        assert!(
            open.contains("script-src 'self' 'unsafe-inline' 'unsafe-eval' blob: data: https://cdn.example.com;"),
            "{open}"
        );
        // allowed for one origin only: the other stays closed, and is named as not allowed
        let one = vec!["https://cdn.example.com".to_string()];
        let part = content_security_policy(&d.within(&one));
        assert!(part.contains("connect-src 'none'"), "{part}");
        assert!(
            part.contains("img-src 'self' data: blob: https://cdn.example.com;"),
            "{part}"
        );
        assert_eq!(d.beyond(&one), vec!["https://api.example.com"]);
        // an origin the user allowed that the page does not declare is not reached either
        let other = vec!["https://other.example.org".to_string()];
        assert_eq!(content_security_policy(&d.within(&other)), closed);
        // local code (blob:, data:, eval) may run, as a worker too; nothing else
        assert!(
            closed.contains("worker-src 'self' blob: data:;"),
            "{closed}"
        );
        assert!(!closed.contains("http"), "{closed}");
        // the proxy between window and app reaches nothing and runs only its own script
        assert!(
            PROXY_CSP.contains("connect-src 'none'") && PROXY_CSP.contains("script-src 'self';")
        );
        assert!(!PROXY_CSP.contains("unsafe"));
    }

    #[test]
    fn the_policy_and_the_hosts_script_come_first_in_the_page() {
        let first = "<script src=\"/w.js\"></script>";
        let page = with_policy_meta(
            "<!DOCTYPE html><html><head><title>x</title>",
            "a 'b' \"c\"",
            first,
        );
        assert_eq!(
            page,
            "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"a 'b' &quot;c&quot;\"><script src=\"/w.js\"></script><title>x</title>"
        );
        // no <head>: after <html>, else after the doctype, never before it
        assert!(
            with_policy_meta("<!doctype html><html lang=en><p>x", "p", first)
                .starts_with("<!doctype html><html lang=en><meta ")
        );
        assert!(with_policy_meta("<!DOCTYPE html><p>x", "p", first)
            .starts_with("<!DOCTYPE html><meta "));
        assert!(with_policy_meta("<p>x", "p", first).starts_with("<meta "));
    }

    #[test]
    fn permissions_are_what_the_page_asks_and_the_user_grants() {
        let asked = AppPermissions::of(Some(
            &json!({"microphone": {}, "clipboardWrite": {}, "camera": true}),
        ));
        assert_eq!(
            asked,
            AppPermissions {
                microphone: true,
                clipboard_write: true,
                ..Default::default()
            }
        );
        assert_eq!(asked.allow_attribute(), "microphone; clipboard-write");
        let granted = AppPermissions {
            microphone: true,
            camera: true,
            ..Default::default()
        };
        assert_eq!(asked.and(&granted).allow_attribute(), "microphone");
        assert!(AppPermissions::of(None).is_empty());
        assert_eq!(AppPermissions::default().allow_attribute(), "");
    }
}
