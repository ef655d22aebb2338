//! Importing another host's MCP config (Claude Desktop, Cursor, VS Code, .mcp.json): any text
//! is read or refused without a panic, and every server in it is offered or skipped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_engine::mcp::import::preview;
use switchboard_engine::mcp::McpConfig;

fuzz_target!(|text: &str| {
    let existing = McpConfig::default_builtin();
    if let Ok(p) = preview(text, &existing) {
        for e in &p.servers {
            assert!(!existing
                .servers
                .keys()
                .any(|k| k.eq_ignore_ascii_case(&e.suggested_name)));
        }
    }
});
