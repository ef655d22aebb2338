//! What the chat loop needs from a tool host: the tools on offer, where a name leads, and a
//! call. [`McpHost`] is the real one; tests may bring their own.

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::llm::ToolSpec;
use crate::mcp::{CallEvent, McpHost, RoutedTool, TaskHandle, ToolOutcome};

#[async_trait]
pub trait ToolHost: Send + Sync {
    fn tool_specs(&self) -> Vec<ToolSpec>;
    /// The tools on offer with only the skills `skill_on` says are on (by `origin/name`) in the
    /// skill tools (`mcp::LOAD_SKILL`); a host without skills offers [`ToolHost::tool_specs`].
    fn tool_specs_with_skills(&self, _skill_on: &dyn Fn(&str) -> bool) -> Vec<ToolSpec> {
        self.tool_specs()
    }
    /// Reads the user's own skills again (before each turn).
    fn refresh_skills(&self) {}
    /// The server and tool behind an exposed name, with its annotations.
    fn route(&self, name: &str) -> Option<RoutedTool>;
    /// The tool's `inputSchema`, by exposed name.
    fn tool_schema(&self, name: &str) -> Option<Value>;
    /// What changed in a tool's definition since the user accepted it, if it did.
    fn tool_change(&self, _server: &str, _tool: &str) -> Option<Vec<crate::mcp::pins::DiffLine>> {
        None
    }
    /// Runs a call; what happens meanwhile (progress, the server's questions) goes to `events`.
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome;
    /// A tool of `server` by its own name (an MCP App's call).
    fn route_server_tool(&self, _server: &str, _tool: &str) -> Option<RoutedTool> {
        None
    }
    /// The `inputSchema` of `server`'s tool, by its own name (an MCP App's call).
    fn server_tool_schema(&self, _server: &str, _tool: &str) -> Option<Value> {
        None
    }
    /// Every tool whose offered (or app-called) name was `name`, `server__tool`: how settings of
    /// older versions named a tool (`McpHost::tools_once_named`).
    fn tools_once_named(&self, _name: &str) -> Vec<RoutedTool> {
        vec![]
    }
    /// Adds a line to `server`'s log (what an app did).
    fn note(&self, _server: &str, _line: String) {}
    /// The servers that wait for the user to sign in (their tools are not offered until then).
    fn waiting_for_sign_in(&self) -> Vec<String> {
        vec![]
    }
    /// Calls a tool of `server` by its own name (an MCP App's call).
    async fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        _arguments: Map<String, Value>,
        _cancel: &CancellationToken,
        _events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        ToolOutcome {
            server: server.to_string(),
            tool: tool.to_string(),
            text: "This host cannot run apps' calls.".into(),
            is_error: true,
            raw: None,
            images: vec![],
        }
    }
    /// What makes `server` the server it is (`ServerConfig::identity`), when it is configured.
    fn server_identity(&self, _server: &str) -> Option<String> {
        None
    }
    /// Follows a task an earlier run started on `server` (its handle from the store) to its end.
    async fn resume_task(
        &self,
        server: &str,
        tool: &str,
        _task: &TaskHandle,
        _cancel: &CancellationToken,
        _events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        ToolOutcome {
            server: server.to_string(),
            tool: tool.to_string(),
            text: "This host cannot follow tasks.".into(),
            is_error: true,
            raw: None,
            images: vec![],
        }
    }
}

#[async_trait]
impl ToolHost for McpHost {
    fn tool_specs(&self) -> Vec<ToolSpec> {
        McpHost::tool_specs(self)
    }
    fn tool_specs_with_skills(&self, skill_on: &dyn Fn(&str) -> bool) -> Vec<ToolSpec> {
        McpHost::tool_specs_with_skills(self, skill_on)
    }
    fn refresh_skills(&self) {
        McpHost::refresh_local_skills(self);
    }
    fn route(&self, name: &str) -> Option<RoutedTool> {
        McpHost::route(self, name)
    }
    fn tool_schema(&self, name: &str) -> Option<Value> {
        McpHost::tool_schema(self, name)
    }
    fn tool_change(&self, server: &str, tool: &str) -> Option<Vec<crate::mcp::pins::DiffLine>> {
        McpHost::tool_change(self, server, tool)
    }
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        McpHost::call_tool(self, name, arguments, cancel, events).await
    }
    fn route_server_tool(&self, server: &str, tool: &str) -> Option<RoutedTool> {
        McpHost::route_server_tool(self, server, tool)
    }
    fn server_tool_schema(&self, server: &str, tool: &str) -> Option<Value> {
        McpHost::server_tool_schema(self, server, tool)
    }
    fn note(&self, server: &str, line: String) {
        McpHost::note(self, server, line)
    }
    fn tools_once_named(&self, name: &str) -> Vec<RoutedTool> {
        McpHost::tools_once_named(self, name)
    }
    fn waiting_for_sign_in(&self) -> Vec<String> {
        self.servers()
            .into_iter()
            .filter(|s| s.sign_in.as_ref().is_some_and(|i| i.needed))
            .map(|s| s.name)
            .collect()
    }
    async fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        McpHost::call_server_tool(self, server, tool, arguments, cancel, events).await
    }
    fn server_identity(&self, server: &str) -> Option<String> {
        McpHost::server_identity(self, server)
    }
    async fn resume_task(
        &self,
        server: &str,
        tool: &str,
        task: &TaskHandle,
        cancel: &CancellationToken,
        events: Option<mpsc::UnboundedSender<CallEvent>>,
    ) -> ToolOutcome {
        McpHost::resume_task(self, server, tool, task, cancel, events.as_ref()).await
    }
}
