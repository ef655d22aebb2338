//! MCP Apps in the window. Each app page shown on a card is served from the `mcpapp` scheme
//! (`mcpapp://localhost/v/<random id>`), never from the app's own origin, with the
//! Content-Security-Policy built from what it declares (`switchboard_engine::mcp::apps`); the
//! window frames it with `sandbox="allow-scripts"` (an opaque origin: it cannot reach the window,
//! the IPC, other pages or storage). Only the main window's frames are served, and only pages
//! the window asked for through `open_app`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tauri::http::{header, Request, Response, StatusCode};
use tauri::ipc::Channel;

/// One app page shown on the card of tool call `call_id`.
pub struct AppView {
    pub call_id: i64,
    pub server: String,
    html: String,
    csp: String,
}

/// The app pages shown now, by their random id; and the window's ear for its own closing, so
/// the apps it shows are told first (`hold_close`).
#[derive(Default)]
pub struct AppViews {
    views: Mutex<HashMap<String, AppView>>,
    on_close: Mutex<Option<Channel<()>>>,
    /// The window was told it is closing: the next close goes through.
    closing: AtomicBool,
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

    /// Keeps a page to serve; its id.
    pub fn add(&self, call_id: i64, server: String, html: String, csp: String) -> String {
        let id = switchboard_engine::mcp::apps::view_id();
        let html = switchboard_engine::mcp::apps::with_policy_meta(&html, &csp);
        self.views.lock().unwrap().insert(
            id.clone(),
            AppView {
                call_id,
                server,
                html,
                csp,
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

    /// Forgets view `id`; the call and server it came from, if it was known.
    pub fn remove(&self, id: &str) -> Option<(i64, String)> {
        let view = self.views.lock().unwrap().remove(id)?;
        Some((view.call_id, view.server))
    }

    /// Answers a request for `mcpapp://localhost/v/<id>` from the window labelled `label`.
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
        let Some(id) = request.uri().path().strip_prefix("/v/") else {
            return refuse(StatusCode::NOT_FOUND);
        };
        let views = self.views.lock().unwrap();
        let Some(view) = views.get(id) else {
            return refuse(StatusCode::NOT_FOUND);
        };
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
            .header("Content-Security-Policy", &view.csp)
            .header(header::CACHE_CONTROL, "no-store")
            .header("X-Content-Type-Options", "nosniff")
            .header("Referrer-Policy", "no-referrer")
            .body(view.html.clone().into_bytes())
            .unwrap()
    }
}
