fn main() {
    // Every command the window may call must be listed here and granted in
    // src-tauri/capabilities/ (least privilege: the app's own commands are not allowed by default).
    let commands = &[
        "app_info",
        "get_settings",
        "save_settings",
        "list_models",
        "list_conversations",
        "load_conversation",
        "send_message",
        "stop_turn",
        "resolve_approval",
        "cancel_tool_call",
        "answer_elicitation",
        "mcp_servers",
        "mcp_config",
        "save_mcp_server",
        "delete_mcp_server",
        "set_mcp_server_enabled",
        "restart_mcp_server",
        "preview_mcp_import",
        "import_mcp_servers",
        "export_mcp_config",
        "render_markdown",
        "delete_model",
        "cancel_pull",
        "pull_model",
        "model_capabilities",
        "import_conversation",
        "export_conversation",
        "llm_calls",
        "set_conversation_settings",
        "show_branch",
        "duplicate_conversation",
        "restore_conversation",
        "delete_conversation",
        "set_conversation_pinned",
        "rename_conversation",
        "search_conversations",
        "set_conversation_tools",
        "pick_mcp_import_file",
        "mcp_resources",
        "get_mcp_prompt",
        "mcp_prompts",
        "resolve_sampling",
    ];
    let attrs = tauri_build::Attributes::new()
        .capabilities_path_pattern("src-tauri/capabilities/**/*")
        .app_manifest(tauri_build::AppManifest::new().commands(commands));
    tauri_build::try_build(attrs).expect("tauri-build failed");
}
