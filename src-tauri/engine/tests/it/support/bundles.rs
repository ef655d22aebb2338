//! MCP Bundles built in the tests: a tiny MCP server in Node (no dependencies: JSON-RPC over
//! stdio by hand) in a zip with its `manifest.json`, and the broken ones (a `..` path, an absolute
//! path, a symlink, a zip bomb, a bad manifest, a platform it is not for). Shared with the app's
//! tests (tests/common).

use std::io::Write;

use serde_json::{json, Value};
use zip::write::SimpleFileOptions;

/// The tiny server's code: `tools` (a JSON array of tool definitions) is what it lists; its
/// tools `argv` (its command-line arguments, as JSON), `env` (the value of variable `name`) and
/// anything else (`"<name> ran"`).
pub fn tiny_server_js(tools: &Value) -> String {
    format!(
        r#"const readline = require('readline');
const TOOLS = {tools};
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
readline.createInterface({{ input: process.stdin }}).on('line', (line) => {{
  let m;
  try {{ m = JSON.parse(line); }} catch {{ return; }}
  if (m.id === undefined || m.id === null) return;
  const reply = (result) => send({{ jsonrpc: '2.0', id: m.id, result }});
  switch (m.method) {{
    case 'initialize':
      return reply({{ protocolVersion: m.params.protocolVersion, capabilities: {{ tools: {{}} }},
        serverInfo: {{ name: 'tiny', version: '1.0.0' }} }});
    case 'tools/list': return reply({{ tools: TOOLS }});
    case 'tools/call': {{
      const a = m.params.arguments || {{}};
      const text = m.params.name === 'argv' ? JSON.stringify(process.argv.slice(2))
        : m.params.name === 'env' ? String(process.env[a.name] ?? '(unset)')
        : m.params.name + ' ran';
      return reply({{ content: [{{ type: 'text', text }}] }});
    }}
    case 'ping': return reply({{}});
    default: send({{ jsonrpc: '2.0', id: m.id, error: {{ code: -32601, message: 'Method not found' }} }});
  }}
}});
"#
    )
}

/// The tiny server's tools: `argv`, `env`, and `extra` ones (name → description).
pub fn tiny_tools(extra: &[(&str, &str)]) -> Value {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let mut tools = vec![
        json!({"name": "argv", "description": "Its command-line arguments", "inputSchema": {"type": "object"}}),
        json!({"name": "env", "description": "An environment variable's value", "inputSchema": schema}),
    ];
    for (name, description) in extra {
        tools.push(
            json!({"name": name, "description": description, "inputSchema": {"type": "object"}}),
        );
    }
    Value::Array(tools)
}

/// A manifest for the tiny server at `server/index.js`, version `version`, with `user_config`
/// and the environment and arguments its `mcp_config` passes.
pub fn tiny_manifest(
    name: &str,
    version: &str,
    user_config: Value,
    env: Value,
    args: Value,
) -> Value {
    let mut all_args = vec![json!("${__dirname}/server/index.js")];
    all_args.extend(args.as_array().cloned().unwrap_or_default());
    json!({
        "manifest_version": "0.3",
        "name": name,
        "display_name": format!("Tiny {name}"),
        "version": version,
        "description": "A tiny MCP server for tests",
        "author": {"name": "Switchboard tests"},
        "server": {
            "type": "node",
            "entry_point": "server/index.js",
            "mcp_config": {"command": "node", "args": all_args, "env": env}
        },
        "user_config": user_config,
        "compatibility": {"platforms": ["linux", "darwin"], "runtimes": {"node": ">=16.0.0"}}
    })
}

/// One entry of a zip being built.
pub enum Item<'a> {
    File(&'a str, Vec<u8>),
    /// A file with these unix permission bits.
    Mode(&'a str, Vec<u8>, u32),
    Symlink(&'a str, &'a str),
    Dir(&'a str),
}

/// A zip of these items (names written exactly as given, even `..` or absolute ones).
pub fn zip_of(items: &[Item]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    for item in items {
        match item {
            Item::File(name, bytes) => {
                w.start_file(*name, opts).unwrap();
                w.write_all(bytes).unwrap();
            }
            Item::Mode(name, bytes, mode) => {
                w.start_file(*name, opts.unix_permissions(*mode)).unwrap();
                w.write_all(bytes).unwrap();
            }
            Item::Symlink(name, target) => w.add_symlink(*name, *target, opts).unwrap(),
            Item::Dir(name) => w.add_directory(*name, opts).unwrap(),
        }
    }
    w.finish().unwrap().into_inner()
}

/// The tiny server as a bundle: `manifest` and `server/index.js` listing `tools`.
pub fn tiny_bundle(manifest: &Value, tools: &Value) -> Vec<u8> {
    zip_of(&[
        Item::File(
            "manifest.json",
            serde_json::to_vec_pretty(manifest).unwrap(),
        ),
        Item::Dir("server/"),
        Item::File("server/index.js", tiny_server_js(tools).into_bytes()),
    ])
}

/// The plain tiny bundle: no settings, version `version`.
pub fn plain_bundle(name: &str, version: &str, extra_tools: &[(&str, &str)]) -> Vec<u8> {
    tiny_bundle(
        &tiny_manifest(name, version, json!({}), json!({}), json!([])),
        &tiny_tools(extra_tools),
    )
}
