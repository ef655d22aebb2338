//! The desktop app: Tauri builder, plugins, state. Commands live in `commands/` and only adapt
//! between the window and the engine.
//!
//! Plugins: opener, dialog, single-instance, store (and notification, `notify.rs`); the `mcpapp`
//! scheme (`apps.rs`); the servers shut down on exit. A close of the window while apps are shown
//! waits until the window has told them (`AppViews::hold_close`, at most 5 s). WebKitGTK's
//! compositing is turned off before anything starts (`lighter_webview`: ~90 MiB less for the web
//! process; the environment may say otherwise). `on_permission_request` answers the webview's own
//! question for the microphone, camera and location from what the user granted each app (by server
//! identity and page, for this run; `apps.rs`); everything else is refused.

mod apps;
mod bundles;
pub mod cli;
mod commands;
mod notify;
mod state;

use state::AppState;
mod window_state;

use std::sync::Arc;

use tauri::{Manager, RunEvent};
use window_state::{WindowState, WindowStateExt};

fn init_logging() -> Option<tracing_appender::non_blocking::WorkerGuard> {
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_env("SWITCHBOARD_LOG")
        .unwrap_or_else(|_| "info,rmcp=warn".into());
    // the app's folders, and the logs in them, are the user's alone whatever the umask
    if let Err(e) = switchboard_engine::paths::private_app_dirs() {
        eprintln!("could not make the app's folders private: {e}");
    }
    let dir = switchboard_engine::paths::data_dir().join("logs");
    let file = switchboard_engine::paths::private_dir(&dir).ok().map(|_| {
        tracing_appender::non_blocking(tracing_appender::rolling::daily(&dir, "switchboard.log"))
    });
    let (file_layer, guard) = match file {
        Some((w, g)) => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(w),
            ),
            Some(g),
        ),
        None => (None, None),
    };
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(file_layer)
        .try_init();
    guard
}

/// WebKitGTK composites the page on the GPU by default; for a chat window that costs the web
/// process about 90 MiB (PSS at idle, `make bench-memory`; README) and buys nothing a person sees.
/// Turned off unless the environment says otherwise (`WEBKIT_DISABLE_COMPOSITING_MODE=0` turns
/// it back on). Called first in [`run`], before any thread exists: changing the environment is
/// only sound then, and WebKit reads it when its first web process starts.
fn lighter_webview() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
}

pub fn run() {
    lighter_webview();
    let _log_guard = init_logging();
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, args, cwd| {
            if let Some(w) = app.get_webview_window("main") {
                let _ = w.unminimize();
                let _ = w.show();
                let _ = w.set_focus();
            }
            // another launch with bundles to open (the desktop's handler for .mcpb)
            open_bundles(app, bundles::bundle_args(&args, std::path::Path::new(&cwd)));
        }))
        .plugin(tauri_plugin_opener::init())
        // the window's own state (window_state/)
        .plugin(tauri_plugin_store::Builder::default().build())
        // used from Rust only (the import file picker): the window gets no dialog permission
        .plugin(tauri_plugin_dialog::init())
        // used from Rust only (notify.rs): the window gets no notification permission
        .plugin(tauri_plugin_notification::init())
        // MCP App pages, each at its own address, never the app's origin (apps.rs)
        .register_uri_scheme_protocol("mcpapp", |ctx, request| {
            match ctx.app_handle().try_state::<AppState>() {
                Some(state) => state.apps.serve(ctx.webview_label(), &request),
                None => tauri::http::Response::builder()
                    .status(tauri::http::StatusCode::SERVICE_UNAVAILABLE)
                    .body(Vec::new())
                    .unwrap(),
            }
        })
        // the microphone, the camera and the location: only for an app the user granted them
        // (its frame's `allow` attribute lets only that frame ask); everything else is refused
        .on_permission_request(|webview, kind| {
            use tauri::webview::{PermissionKind as K, PermissionResponse as R};
            let granted = |feature: fn(&switchboard_engine::mcp::apps::AppPermissions) -> bool| {
                webview
                    .try_state::<AppState>()
                    .is_some_and(|s| s.apps.any_granted(feature))
            };
            let allowed = match kind {
                K::Microphone => granted(|p| p.microphone),
                K::Camera => granted(|p| p.camera),
                K::Geolocation => granted(|p| p.geolocation),
                _ => false,
            };
            if allowed {
                R::Allow
            } else {
                R::Deny
            }
        })
        .setup(|app| {
            let window_state = Arc::new(WindowState::open(app.handle()));
            if let Some(w) = app.get_webview_window("main") {
                window_state.restore(&w);
            }
            app.manage(window_state);
            app.manage(notify::Notifier::default());
            notify::Notifier::listen(app.handle());
            let state = tauri::async_runtime::block_on(AppState::open())?;
            // what the chat engine does outside a turn (a summary written in the background)
            // reaches the window as calls followed outside a turn do
            let events = app.handle().clone();
            state
                .runtime
                .shared
                .set_background_events(std::sync::Arc::new(move |ev| {
                    events.state::<AppState>().task_events.send(ev);
                }));
            app.manage(state);
            // bundles this launch was given (`switchboard FILE.mcpb`)
            let args: Vec<String> = std::env::args().collect();
            let cwd = std::env::current_dir().unwrap_or_default();
            open_bundles(app.handle(), bundles::bundle_args(&args, &cwd));
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                let state = handle.state::<AppState>();
                state.runtime.start_servers().await;
                // tasks still running on their servers when the app last ended
                let events = handle.clone();
                let emit = std::sync::Arc::new(move |ev| {
                    events.state::<AppState>().task_events.send(ev);
                });
                state.runtime.resume_tasks(emit).await;
            });
            Ok(())
        })
        // closing the window while apps are shown: they are told first (apps.rs::hold_close),
        // for at most a little longer than the window waits for them
        .on_window_event(|window, event| {
            if let (tauri::WindowEvent::Moved(_) | tauri::WindowEvent::Resized(_), Some(w)) =
                (event, window.get_webview_window(window.label()))
            {
                if let Some(s) = window.app_handle().window_state() {
                    s.window_changed(&w);
                }
            }
            if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                let held = window.label() == "main"
                    && window
                        .try_state::<AppState>()
                        .is_some_and(|s| s.apps.hold_close());
                if held {
                    api.prevent_close();
                    let window = window.clone();
                    tauri::async_runtime::spawn(async move {
                        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                        let _ = window.close();
                    });
                }
            }
        })
        .invoke_handler(commands::handler!())
        .build(tauri::generate_context!())
        .expect("error while building the Switchboard window");
    app.run(|handle, event| {
        if let RunEvent::Exit = event {
            if let Some(s) = handle.window_state() {
                if let Err(e) = s.save() {
                    tracing::warn!("window state: {e}");
                }
            }
            // every MCP server process (and its children) ends with the app
            let state = handle.state::<AppState>();
            tauri::async_runtime::block_on(state.shutdown());
        }
    });
}

/// Opens each of `paths` that is a bundle, in the background, for the window.
fn open_bundles(app: &tauri::AppHandle, paths: Vec<std::path::PathBuf>) {
    for path in paths {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            let state = app.state::<AppState>();
            if let Some(open) = bundles::open(&state.runtime, &path).await {
                state.bundle_opens.send(open);
            }
        });
    }
}
