//! Built-in MCP servers, served over stdio by the same binary (`switchboard mcp-server NAME`).
//! A deliberately small JSON-RPC loop: initialize, ping, tools/list, tools/call.
//!
//! `calculator`, `files` and `research`, served by `switchboard mcp-server NAME` and by
//! `switchboard-mcp` (`src/bin/`, no GUI libraries), which the host prefers when it sits next to
//! the app binary. `reaches_network` and `own_folders` say what each gets in its sandbox
//! (`SandboxConfig::builtin_default`, `McpConfig::default_builtin`): no network but for `research`;
//! `files` and `research` write in their own folder. This module names nothing of the host (`mcp`),
//! which names it. `BuiltinServer::call` is synchronous; `research` runs its requests on its own
//! small runtime, on a scoped thread, so a call blocks only its own stdio loop (one call at a time,
//! as for the others).
//!
//! To add a built-in server: a module here implementing `BuiltinServer`, its name in `names()` and
//! `by_name`, its network and own folders in `reaches_network` and `own_folders`;
//! `McpConfig::default_builtin` adds it on a fresh install.

pub mod calculator;
pub mod files;
pub mod research;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Protocol versions the built-in servers speak (initialize-era).
pub const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A tool's result: its text, and whether it is an error the model should see.
pub struct ToolResult {
    pub text: String,
    pub is_error: bool,
}

impl ToolResult {
    pub fn ok(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: false,
        }
    }
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: true,
        }
    }
}

pub trait BuiltinServer: Send + Sync {
    fn name(&self) -> &'static str;
    /// `tools/list` entries: `{name, description, inputSchema, annotations?}`.
    fn tools(&self) -> Vec<Value>;
    fn call(&self, tool: &str, args: &serde_json::Map<String, Value>) -> ToolResult;
}

/// Answers one JSON-RPC message; `None` for notifications.
pub fn handle(server: &dyn BuiltinServer, msg: &Value) -> Option<Value> {
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        // a response to us (we send no requests) is ignored; anything else is not a request
        let is_response =
            msg.get("id").is_some() && (msg.get("result").is_some() || msg.get("error").is_some());
        return (!is_response).then(|| {
            error(
                msg.get("id").cloned().unwrap_or(Value::Null),
                -32600,
                "Invalid Request",
            )
        });
    };
    let id = msg.get("id").cloned()?; // notifications get no answer
    let params = msg.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => {
            let asked = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let version = if VERSIONS.contains(&asked) {
                asked
            } else {
                VERSIONS[0]
            };
            json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": format!("switchboard-{}", server.name()), "version": env!("CARGO_PKG_VERSION")},
            })
        }
        "ping" => json!({}),
        "tools/list" => json!({ "tools": server.tools() }),
        "tools/call" => {
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !server.tools().iter().any(|t| t["name"] == name) {
                return Some(error(id, -32602, &format!("Unknown tool: {name}")));
            }
            let empty = serde_json::Map::new();
            let args = params
                .get("arguments")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let r = server.call(name, args);
            json!({ "content": [{"type": "text", "text": r.text}], "isError": r.is_error })
        }
        _ => return Some(error(id, -32601, &format!("Method not found: {method}"))),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Serves `server` on stdin/stdout until stdin closes.
pub async fn serve_stdio(server: &dyn BuiltinServer) -> std::io::Result<()> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(Value::Array(batch)) => {
                let replies: Vec<Value> = batch.iter().filter_map(|m| handle(server, m)).collect();
                (!replies.is_empty()).then_some(Value::Array(replies))
            }
            Ok(msg) => handle(server, &msg),
            Err(e) => Some(
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {e}")}}),
            ),
        };
        if let Some(r) = reply {
            let mut s = serde_json::to_string(&r).expect("json");
            s.push('\n');
            out.write_all(s.as_bytes()).await?;
            out.flush().await?;
        }
    }
    Ok(())
}

/// Finds a built-in server by name; `args` are its arguments after the name (`--root DIR` for
/// `files`, `--arxiv-url URL` and `--cache DIR` for `research`).
pub fn by_name(name: &str, args: &[String]) -> Option<Box<dyn BuiltinServer>> {
    match name {
        "calculator" => Some(Box::new(calculator::Calculator)),
        "files" => Some(Box::new(files::Files::new(files_root(args)).ok()?)),
        "research" => Some(Box::new(
            research::Research::new(research::Options::from_args(args)).ok()?,
        )),
        _ => None,
    }
}

/// Whether a built-in reaches the network (its default sandbox allows it then; otherwise none):
/// only `research`, which asks arXiv. Its folder is its own, see [`own_folders`].
pub fn reaches_network(name: &str) -> bool {
    name == "research"
}

/// The folders a built-in writes in because they are its own, for its arguments.
pub fn own_folders(name: &str, args: &[String]) -> Vec<std::path::PathBuf> {
    own_folder(name, args).map(|(_, f)| f).into_iter().collect()
}

/// A built-in's own folder for its arguments, and the option that names it.
fn own_folder(name: &str, args: &[String]) -> Option<(&'static str, std::path::PathBuf)> {
    match name {
        "files" => Some(("--root", files_root(args))),
        "research" => Some(("--cache", research::cache_dir(args))),
        _ => None,
    }
}

/// A built-in's arguments with its own folder named (`--root` for `files`, `--cache` for
/// `research`), as the host starts it: the folder the host grants it is the one it is told,
/// rather than one each side derives from its environment.
pub fn with_own_folder(name: &str, args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    if let Some((flag, folder)) = own_folder(name, args) {
        if !args.iter().any(|a| a == flag) {
            out.extend([flag.to_string(), folder.display().to_string()]);
        }
    }
    out
}

/// The `files` server's folder when it is given no `--root`.
pub fn default_files_root() -> std::path::PathBuf {
    crate::paths::data_dir().join("files")
}

/// The `files` server's folder for its arguments (`mcp-server files [--root DIR]`).
pub fn files_root(args: &[String]) -> std::path::PathBuf {
    args.iter()
        .position(|a| a == "--root")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(default_files_root)
}

pub fn names() -> &'static [&'static str] {
    &["calculator", "files", "research"]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_negotiates_and_unknown_methods_are_errors() {
        let c = calculator::Calculator;
        let r = handle(&c, &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}})).unwrap();
        assert_eq!(r["result"]["protocolVersion"], "2024-11-05");
        let r = handle(&c, &json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2099-01-01"}})).unwrap();
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
        let r = handle(
            &c,
            &json!({"jsonrpc":"2.0","id":3,"method":"server/discover"}),
        )
        .unwrap();
        assert_eq!(r["error"]["code"], -32601);
        assert!(handle(
            &c,
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"})
        )
        .is_none());
        let r = handle(
            &c,
            &json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}),
        )
        .unwrap();
        assert_eq!(r["error"]["code"], -32602);
    }

    #[test]
    fn a_builtin_is_told_its_own_folder_unless_it_was() {
        let w = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let files = with_own_folder("files", &w("mcp-server files"));
        assert_eq!(files[..3], w("mcp-server files --root")[..]);
        assert_eq!(std::path::PathBuf::from(&files[3]), default_files_root());
        assert_eq!(
            with_own_folder("files", &w("mcp-server files --root /r")),
            w("mcp-server files --root /r")
        );
        let research = with_own_folder("research", &w("mcp-server research"));
        assert_eq!(research[2], "--cache");
        assert_eq!(
            std::path::PathBuf::from(&research[3]),
            research::cache_dir(&[])
        );
        // the folder it is told is the one its sandbox grants
        assert_eq!(
            own_folders("research", &research),
            own_folders("research", &w("mcp-server research"))
        );
        assert_eq!(
            with_own_folder("calculator", &w("mcp-server calculator")),
            w("mcp-server calculator")
        );
    }
}
