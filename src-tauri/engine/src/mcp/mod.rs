//! The MCP host: starts the configured servers (stdio, on rmcp), caches their tools, routes
//! calls, and keeps a failing server from affecting the others.

pub mod catalog;
pub mod config;
mod host;
pub mod import;
pub mod names;
mod process;
pub mod rest;
pub mod sse;

pub use process::{login_shell_path, merge_paths};

pub use catalog::{PromptArg, PromptText, PromptView, ResourceText, ResourceView};
pub use config::{validate_server, ConfigError, FieldError, McpConfig, ServerConfig, Transport};
pub use host::{
    CallEvent, Elicitation, ElicitationAnswer, HostOptions, McpHost, Progress, RoutedTool,
    SamplingAnswer, SamplingRequest, SamplingText, ServerStatus, ServerView, ToolOutcome, ToolView,
};
