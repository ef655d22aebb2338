//! The desktop app: Tauri builder, plugins, state. Commands live in `commands/` and only adapt
//! between the window and the engine.

pub mod cli;
mod commands;
mod state;

use tauri::{Manager, RunEvent};

pub use state::AppState;

fn init_logging() -> Option<tracing_appender::non_blocking::WorkerGuard> {
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_env("SWITCHBOARD_LOG")
        .unwrap_or_else(|_| "info,rmcp=warn".into());
    let dir = switchboard_engine::paths::data_dir().join("logs");
    let file = std::fs::create_dir_all(&dir).ok().map(|_| {
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

pub fn run() {
    let _log_guard = init_logging();
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Some(w) = app.get_webview_window("main") {
                let _ = w.unminimize();
                let _ = w.show();
                let _ = w.set_focus();
            }
        }))
        .plugin(tauri_plugin_store::Builder::new().build())
        .plugin(tauri_plugin_opener::init())
        // used from Rust only (the import file picker): the window gets no dialog permission
        .plugin(tauri_plugin_dialog::init())
        .setup(|app| {
            let state = tauri::async_runtime::block_on(AppState::open())?;
            app.manage(state);
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                let state = handle.state::<AppState>();
                state.start_servers().await;
            });
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::app::app_info,
            commands::app::render_markdown,
            commands::settings::delete_model,
            commands::settings::cancel_pull,
            commands::settings::pull_model,
            commands::settings::model_capabilities,
            commands::conversations::import_conversation,
            commands::conversations::export_conversation,
            commands::conversations::llm_calls,
            commands::conversations::set_conversation_settings,
            commands::conversations::show_branch,
            commands::conversations::duplicate_conversation,
            commands::conversations::restore_conversation,
            commands::conversations::delete_conversation,
            commands::conversations::set_conversation_pinned,
            commands::conversations::rename_conversation,
            commands::conversations::search_conversations,
            commands::conversations::set_conversation_tools,
            commands::mcp::pick_mcp_import_file,
            commands::mcp::mcp_resources,
            commands::mcp::get_mcp_prompt,
            commands::mcp::mcp_prompts,
            commands::chat::resolve_sampling,
            commands::settings::get_settings,
            commands::settings::save_settings,
            commands::settings::list_models,
            commands::conversations::list_conversations,
            commands::conversations::load_conversation,
            commands::chat::send_message,
            commands::chat::stop_turn,
            commands::chat::resolve_approval,
            commands::chat::cancel_tool_call,
            commands::chat::answer_elicitation,
            commands::mcp::mcp_servers,
            commands::mcp::mcp_config,
            commands::mcp::save_mcp_server,
            commands::mcp::delete_mcp_server,
            commands::mcp::set_mcp_server_enabled,
            commands::mcp::restart_mcp_server,
            commands::mcp::preview_mcp_import,
            commands::mcp::import_mcp_servers,
            commands::mcp::export_mcp_config,
        ])
        .build(tauri::generate_context!())
        .expect("error while building the Switchboard window");
    app.run(|handle, event| {
        if let RunEvent::Exit = event {
            // every MCP server process (and its children) ends with the app
            let state = handle.state::<AppState>();
            tauri::async_runtime::block_on(state.shutdown());
        }
    });
}
