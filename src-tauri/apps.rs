//! MCP Apps in the window. Each app shown on a card gets an origin of its own,
//! `mcpapp://<random id>`, never the window's and never another app's: the window frames the
//! page between them (the sandbox proxy, `app-frame/proxy.{html,js}`, at `/`), with
//! `sandbox="allow-scripts allow-same-origin allow-forms"`, and that page frames the app's own
//! page (`/app`, under the Content-Security-Policy built from what it declares and what the user
//! allowed, `switchboard_engine::mcp::apps`) in the same origin, so the app's `window.parent` is
//! a page it may read (Vue's reactivity does) and the window stays out of its reach: a different
//! origin, no IPC (Tauri's scripts are the main frame's only), no storage but its own (which no
//! other page shares, and which is gone with its random origin). Only the main window's frames
//! are served, and only pages the window asked for through `open_app`.
//!
//! At `/` the proxy is served under `PROXY_CSP`; at `/app` the app's page under its own CSP (the
//! header, and a `<meta>` first in its `<head>` followed by `app-frame/watch.js`, which reports
//! what that policy refuses and what the page asked of the network that did not come); every answer `no-store`, `nosniff`, `no-referrer`. `close_app`
//! forgets a page and cancels its calls under way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use switchboard_engine::mcp::apps::{AppPermissions, PROXY_CSP};
use tauri::http::{header, Request, Response, StatusCode};
use tauri::ipc::Channel;
use tokio_util::sync::CancellationToken;

const PROXY_HTML: &str = include_str!("app-frame/proxy.html");
const PROXY_JS: &str = include_str!("app-frame/proxy.js");
const WATCH_JS: &str = include_str!("app-frame/watch.js");

/// One app page shown on the card of tool call `call_id`.
pub struct AppView {
    pub call_id: i64,
    pub server: String,
    /// What the page asks of the browser, and the server identity and page it was asked for
    /// (grants are remembered by app: `AppViews::grant`).
    pub asks: AppPermissions,
    app: (String, String),
    html: String,
    csp: String,
    /// Its calls under way: cancelled when it goes.
    calls: CancellationToken,
    /// How many CSP violations it has had (the log hears the first few).
    pub violations: u32,
}

/// The app pages shown now, by their random id; what the user granted each app (by server
/// identity and page, for this run); and the window's ear for its own closing, so the apps it
/// shows are told first (`hold_close`).
#[derive(Default)]
pub struct AppViews {
    views: Mutex<HashMap<String, AppView>>,
    grants: Mutex<HashMap<(String, String), AppPermissions>>,
    on_close: Mutex<Option<Channel<()>>>,
    /// The window was told it is closing: the next close goes through.
    closing: AtomicBool,
}

/// A new view's page, as `open_app` read it.
pub struct NewView {
    pub call_id: i64,
    pub server: String,
    /// The server's identity and the page's `ui://` address: the app, as grants know it.
    pub identity: String,
    pub page: String,
    pub html: String,
    pub csp: String,
    pub asks: AppPermissions,
}

impl AppViews {
    /// Where to say that the window is about to close (`watch_window_close`).
    pub fn watch_close(&self, on_close: Channel<()>) {
        *self.on_close.lock().unwrap() = Some(on_close);
    }

    /// The window was asked to close: whether that must wait until it has told its apps (some
    /// are shown and the window listens; said once, so the next close goes through).
    pub fn hold_close(&self) -> bool {
        if self.views.lock().unwrap().is_empty() || self.closing.swap(true, Ordering::SeqCst) {
            return false;
        }
        self.on_close
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|ch| ch.send(()).is_ok())
    }

    /// Keeps a page to serve; its id (also its origin's host).
    pub fn add(&self, view: NewView) -> String {
        let id = switchboard_engine::mcp::apps::view_id();
        // the page's first script reports what its policy refuses (watch.js)
        let html = switchboard_engine::mcp::apps::with_policy_meta(
            &view.html,
            &view.csp,
            "<script src=\"/watch.js\"></script>",
        );
        self.views.lock().unwrap().insert(
            id.clone(),
            AppView {
                call_id: view.call_id,
                server: view.server,
                asks: view.asks,
                app: (view.identity, view.page),
                html,
                csp: view.csp,
                calls: CancellationToken::new(),
                violations: 0,
            },
        );
        id
    }

    /// The call and server of page `id`.
    pub fn origin(&self, id: &str) -> Option<(i64, String)> {
        self.views
            .lock()
            .unwrap()
            .get(id)
            .map(|v| (v.call_id, v.server.clone()))
    }

    /// A token for one call of page `id`, cancelled when the page goes.
    pub fn call_token(&self, id: &str) -> Option<CancellationToken> {
        self.views
            .lock()
            .unwrap()
            .get(id)
            .map(|v| v.calls.child_token())
    }

    /// What the user granted the app of page `id` before (in this run), if they were asked.
    pub fn granted(&self, id: &str) -> Option<AppPermissions> {
        let views = self.views.lock().unwrap();
        let view = views.get(id)?;
        self.grants.lock().unwrap().get(&view.app).copied()
    }

    /// The user granted (or refused: nothing) what the app of page `id` asks; remembered for that
    /// app. What its frame may use: the asked and granted features, as an `allow` attribute.
    pub fn grant(&self, id: &str, granted: AppPermissions) -> Option<String> {
        let views = self.views.lock().unwrap();
        let view = views.get(id)?;
        let kept = view.asks.and(&granted);
        self.grants.lock().unwrap().insert(view.app.clone(), kept);
        Some(kept.allow_attribute())
    }

    /// Whether some app shown now was granted `feature` (the webview asks before a page gets the
    /// microphone, the camera or the location; only a granted frame can ask at all).
    pub fn any_granted(&self, feature: impl Fn(&AppPermissions) -> bool) -> bool {
        let views = self.views.lock().unwrap();
        let grants = self.grants.lock().unwrap();
        views
            .values()
            .any(|v| grants.get(&v.app).is_some_and(|g| feature(&v.asks.and(g))))
    }

    /// Counts a CSP violation of page `id`: its server and how many it has had, if it is shown.
    pub fn violation(&self, id: &str) -> Option<(String, u32)> {
        let mut views = self.views.lock().unwrap();
        let view = views.get_mut(id)?;
        view.violations += 1;
        Some((view.server.clone(), view.violations))
    }

    /// Forgets view `id` (its calls under way are cancelled); the call and server it came from,
    /// if it was known.
    pub fn remove(&self, id: &str) -> Option<(i64, String)> {
        let view = self.views.lock().unwrap().remove(id)?;
        view.calls.cancel();
        Some((view.call_id, view.server))
    }

    /// Answers a request for `mcpapp://<id>/…` from the window labelled `label`: `/` the page
    /// between window and app, `/proxy.js` its script, `/app` the app's page, `/watch.js` the
    /// script put first in it.
    pub fn serve(&self, label: &str, request: &Request<Vec<u8>>) -> Response<Vec<u8>> {
        let refuse = |status| {
            Response::builder()
                .status(status)
                .header(header::CONTENT_TYPE, "text/plain")
                .body(Vec::new())
                .unwrap()
        };
        if label != "main" {
            return refuse(StatusCode::FORBIDDEN);
        }
        let Some(id) = request.uri().host() else {
            return refuse(StatusCode::NOT_FOUND);
        };
        let views = self.views.lock().unwrap();
        let Some(view) = views.get(id) else {
            return refuse(StatusCode::NOT_FOUND);
        };
        let (kind, csp, body) = match request.uri().path() {
            "/" => (
                "text/html; charset=utf-8",
                PROXY_CSP,
                PROXY_HTML.to_string(),
            ),
            "/proxy.js" => ("text/javascript; charset=utf-8", PROXY_CSP, PROXY_JS.into()),
            "/watch.js" => ("text/javascript; charset=utf-8", PROXY_CSP, WATCH_JS.into()),
            "/app" => (
                "text/html; charset=utf-8",
                view.csp.as_str(),
                view.html.clone(),
            ),
            _ => return refuse(StatusCode::NOT_FOUND),
        };
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, kind)
            .header("Content-Security-Policy", csp)
            .header(header::CACHE_CONTROL, "no-store")
            .header("X-Content-Type-Options", "nosniff")
            .header("Referrer-Policy", "no-referrer")
            .body(body.into_bytes())
            .unwrap()
    }
}
