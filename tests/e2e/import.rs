//! Importing MCP servers from another host's config (the preview, a name clash, the second
//! confirmation, imported servers off and untrusted) and exporting them.

use serde_json::{json, Value};

use crate::app::*;
use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn a_claude_desktop_config_is_imported_with_its_conflict_resolved_and_exported() {
    let (home, config_dir) = app_home();
    let config_file = config_dir.join("mcp.json");
    let App { c, driver: _driver } = App::launch_with_servers(home.path(), 3).await;
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server[data-name='calculator']").await;
    click(&c, "#server-import").await;
    let claude_desktop = json!({
        "mcpServers": {
            "dyn": {
                "command": "python3",
                "args": [support::fixture("dynamic_server.py")],
                "env": {"NODE_OPTIONS": "--require /tmp/evil.js", "API_TOKEN": "s3cret-value-123"}
            },
            "calculator": {"command": "python3", "args": [support::fixture("crash_server.py")]},
            "ws": {"type": "websocket", "url": "wss://example.com/mcp"}
        },
        "globalShortcut": ""
    });
    // where Claude Desktop keeps it; the Open dialog starts in that folder
    let claude_dir = home.path().join("config").join("Claude");
    std::fs::create_dir_all(&claude_dir).unwrap();
    let claude_file = claude_dir.join("claude_desktop_config.json");
    std::fs::write(&claude_file, claude_desktop.to_string()).unwrap();
    // pasted text that is not a config is refused with a reason
    wait_css(&c, "#import-text")
        .await
        .send_keys("{\"mcpServers\": ")
        .await
        .unwrap();
    click(&c, "#import-preview-button").await;
    wait_until(
        &c,
        "document.querySelector('#import-error').textContent.length > 0",
    )
    .await;
    click(&c, "#import-choose").await;
    // the real GTK file dialog: type the path into it (xdotool), as a person would
    pick_in_file_dialog("Import MCP servers", &claude_file).await;
    wait_css(&c, ".import-row").await;
    assert_eq!(
        text_content(&c, "#import-file-name").await,
        claude_file.display().to_string()
    );
    wait_css(&c, ".import-row").await;
    let preview = text_content(&c, "#import-preview").await;
    assert!(preview.contains("Claude Desktop"), "{preview}");
    assert!(
        preview.contains("Skipped “ws”: \"websocket\" servers are not supported"),
        "{preview}"
    );
    let names = c
        .execute(
            "return [...document.querySelectorAll('.import-name')].map((i) => i.value);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        names,
        json!(["dyn", "calculator-imported"]),
        "the conflicting name gets a free one"
    );
    // everything that would run is shown: the environment's names and lengths, never its values,
    // the risky variable flagged
    assert!(preview.contains("NODE_OPTIONS"), "{preview}");
    assert!(preview.contains("API_TOKEN"), "{preview}");
    assert!(preview.contains("16 characters"), "{preview}");
    assert!(
        !preview.contains("s3cret"),
        "a value is never shown: {preview}"
    );
    assert!(
        !preview.contains("evil.js"),
        "a value is never shown: {preview}"
    );
    assert!(
        preview.contains("⚠ NODE_OPTIONS: passes options to the runtime"),
        "{preview}"
    );
    // nothing is ticked for the user: Import waits until they choose
    assert!(
        c.execute(
            "return document.querySelector('#import-go').disabled \
               && ![...document.querySelectorAll('.import-include')].some((i) => i.checked);",
            vec![]
        )
        .await
        .unwrap()
        .as_bool()
        .unwrap(),
        "rows start unticked and Import disabled"
    );
    for i in 0..2 {
        click(
            &c,
            &format!(".import-row[data-index='{i}'] .import-include"),
        )
        .await;
    }
    click(&c, "#import-go").await;
    // added, turned off: nothing started yet; the second confirmation lists what would start
    wait_css(&c, "#import-confirm:not([hidden])").await;
    let confirm = text_content(&c, "#import-confirm-list").await;
    assert!(
        confirm.contains("dyn") && confirm.contains("calculator-imported"),
        "{confirm}"
    );
    assert!(confirm.contains("NODE_OPTIONS"), "{confirm}");
    screenshot(&c, "import-confirm.png").await;
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    for name in ["dyn", "calculator-imported"] {
        assert_eq!(saved["mcpServers"][name]["disabled"], true, "{saved}");
        assert_eq!(saved["mcpServers"][name]["trusted"], false, "{saved}");
    }
    click(&c, "#import-start").await;
    wait_css(&c, ".server.running[data-name='dyn']").await;
    wait_css(&c, ".server.running[data-name='calculator-imported']").await;
    wait_css(&c, ".server.running[data-name='calculator']").await;
    // an imported server's claims about its tools are not believed; the built-in's are
    let untrusted = text_content(&c, ".server[data-name='dyn'] .server-head").await;
    assert!(untrusted.contains("every call asks"), "{untrusted}");
    let builtin = text_content(&c, ".server[data-name='calculator'] .server-head").await;
    assert!(!builtin.contains("every call asks"), "{builtin}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    assert_eq!(saved["mcpServers"]["dyn"]["command"], "python3");
    assert_eq!(
        saved["mcpServers"]["calculator"]["args"],
        json!(["mcp-server", "calculator"]),
        "the existing one is kept"
    );

    click(&c, "#server-export").await;
    wait_css(&c, "#export-panel:not([hidden])").await;
    let exported = c
        .execute(
            "return document.querySelector('#export-text').value;",
            vec![],
        )
        .await
        .unwrap();
    let exported: Value = serde_json::from_str(exported.as_str().unwrap()).unwrap();
    assert_eq!(exported["mcpServers"].as_object().unwrap().len(), 5);
    assert_eq!(
        exported["mcpServers"]["calculator-imported"]["command"],
        "python3"
    );
    c.close().await.unwrap();
}
