//! The MCP host: starts the configured servers (stdio, on rmcp), caches their tools, routes
//! calls, and keeps a failing server from affecting the others.

pub mod apps;
pub mod catalog;
pub mod config;
mod host;
pub mod http;
pub mod import;
pub mod names;
pub mod oauth;
pub mod pins;
mod process;
pub mod rest;
pub mod sandbox;
pub mod sse;

pub use process::{login_shell_path, merge_paths};

pub use catalog::{PromptArg, PromptText, PromptView, ResourceText, ResourceView};
pub use config::{
    validate_server, ConfigError, FieldError, McpConfig, OAuthClient, SandboxConfig,
    SandboxSetting, ServerConfig, Transport, LOG_LEVELS,
};
pub use host::{
    file_uri, result_text, task_is_open, AppListing, CallEvent, Elicitation, ElicitationAction,
    ElicitationAnswer, HostError, HostOptions, McpHost, PinBook, Progress, Reply, RoutedTool,
    SamplingAnswer, SamplingRequest, SamplingText, SandboxView, ServerStatus, ServerView,
    SignInView, Step, TaskState, ToolOutcome, ToolView, MAX_RAW_RESULT, MAX_RESULT_TEXT,
    MAX_STDIO_MESSAGE,
};
