//! MCP Apps (the `io.modelcontextprotocol/ui` extension, SEP-1865): a tool whose definition links
//! a `ui://` resource gets that HTML shown with its result, as an app the user can use. Here: what
//! a tool's `_meta.ui` says (its resource, who may call it), reading the resource, and the Content
//! Security Policy it runs under, built from what the resource declares — network only when it
//! declares domains *and* the user allowed that server (`appNetwork` in its config). The frame,
//! its origin and the bridge to it live in the app (src-tauri/apps.rs, ui/js/views/app-frame.js).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const UI_EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The only kind of UI resource there is so far: an HTML page that speaks the apps bridge.
pub const APP_MIME: &str = "text/html;profile=mcp-app";
/// The largest page shown (the example apps are single files of 0.2–4.3 MB).
pub const MAX_APP_HTML: usize = 8 * 1024 * 1024;

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
}

impl AppDomains {
    pub fn is_empty(&self) -> bool {
        self.connect.is_empty() && self.resource.is_empty() && self.frame.is_empty()
    }

    pub fn of(csp: Option<&Value>) -> AppDomains {
        let list = |key: &str| -> Vec<String> {
            csp.and_then(|c| c.get(key))
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .filter_map(origin_source)
                        .collect()
                })
                .unwrap_or_default()
        };
        AppDomains {
            connect: list("connectDomains"),
            resource: list("resourceDomains"),
            frame: list("frameDomains"),
        }
    }
}

/// A declared domain as a CSP source: an http(s)/ws(s) origin, or a host (with a leading `*.`
/// wildcard at most). Anything else (keywords, paths, schemes like `data:`, separators that would
/// end the directive) is dropped.
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
    let bare = host.strip_prefix("*.").unwrap_or(host);
    let valid = !bare.is_empty()
        && bare.contains('.')
        && bare
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if !valid {
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

/// The Content-Security-Policy an app page runs under. Without `network` (the user has not
/// allowed its server to reach the network from apps) the declared domains are left out: the
/// page reaches nothing but itself. Code it carries may also run from `blob:` and `data:`
/// addresses, as workers too (server-pdf's PDF.js starts its worker that way, as the SDK's
/// reference host allows): those hold only what the page itself made, a worker inherits this
/// policy, and none of it reaches the network.
pub fn content_security_policy(domains: &AppDomains, network: bool) -> String {
    let join = |extra: &[String]| {
        if network && !extra.is_empty() {
            format!(" {}", extra.join(" "))
        } else {
            String::new()
        }
    };
    let resource = join(&domains.resource);
    let connect = if network && !domains.connect.is_empty() {
        domains.connect.join(" ")
    } else {
        "'none'".into()
    };
    let frame = if network && !domains.frame.is_empty() {
        domains.frame.join(" ")
    } else {
        "'none'".into()
    };
    format!(
        "default-src 'none'; script-src 'self' 'unsafe-inline' blob: data:{resource}; \
         worker-src 'self' blob: data:; style-src 'self' 'unsafe-inline'{resource}; \
         img-src 'self' data: blob:{resource}; font-src 'self' data: blob:{resource}; \
         media-src 'self' data: blob:{resource}; connect-src {connect}; frame-src {frame}; \
         object-src 'none'; base-uri 'none'; form-action 'none'"
    )
}

/// A fresh id for one shown app page (128 random bits, as hex): its address, so one page cannot
/// guess another's.
pub fn view_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The page as served: its policy also as the first thing in its `<head>` (the response header
/// is the one that counts; this keeps the page closed if it were ever loaded without it).
pub fn with_policy_meta(html: &str, csp: &str) -> String {
    let meta = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        csp.replace('"', "&quot;")
    );
    let lower = html.to_ascii_lowercase();
    match lower
        .find("<head")
        .and_then(|i| lower[i..].find('>').map(|j| i + j + 1))
    {
        Some(at) => format!("{}{meta}{}", &html[..at], &html[at..]),
        None => format!("{meta}{html}"),
    }
}

/// A UI resource, read.
#[derive(Debug, Clone, PartialEq)]
pub struct AppResource {
    pub uri: String,
    pub html: String,
    pub domains: AppDomains,
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
                               "https://a.example.com; script-src *", "*", "data:", "https://x.example.com/path"],
            "resourceDomains": ["https://*.cdn.example.net", "unpkg.com", "*.b.example.org", "http://localhost"],
        })));
        assert_eq!(
            d.connect,
            vec!["https://api.example.com", "wss://live.example.com:8443"]
        );
        assert_eq!(
            d.resource,
            vec!["https://*.cdn.example.net", "unpkg.com", "*.b.example.org"]
        );
        assert!(d.frame.is_empty());
    }

    #[test]
    fn the_policy_lets_an_app_reach_the_network_only_when_its_server_may() {
        let d = AppDomains {
            connect: vec!["https://api.example.com".into()],
            resource: vec!["https://cdn.example.com".into()],
            frame: vec![],
        };
        let closed = content_security_policy(&d, false);
        assert!(closed.starts_with("default-src 'none';"), "{closed}");
        assert!(closed.contains("connect-src 'none'"), "{closed}");
        assert!(!closed.contains("example.com"), "{closed}");
        assert!(closed.contains("frame-src 'none'") && closed.contains("form-action 'none'"));
        let open = content_security_policy(&d, true);
        assert!(
            open.contains("connect-src https://api.example.com;"),
            "{open}"
        );
        assert!(
            open.contains("script-src 'self' 'unsafe-inline' blob: data: https://cdn.example.com;"),
            "{open}"
        );
        // local code (blob:, data:) may run, as a worker too; nothing else
        assert!(
            closed.contains("worker-src 'self' blob: data:;"),
            "{closed}"
        );
        assert!(!closed.contains("http"), "{closed}");
        assert!(!open.contains("unsafe-eval"));
        // nothing declared: closed either way
        assert_eq!(
            content_security_policy(&AppDomains::default(), true),
            content_security_policy(&AppDomains::default(), false)
        );
    }
}
