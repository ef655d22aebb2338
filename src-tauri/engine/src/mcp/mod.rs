//! The MCP host: starts the configured servers (programs on stdio, and remote servers over
//! Streamable HTTP, legacy HTTP+SSE or the REST dialect: `transport.rs`), on rmcp, caches their
//! tools, routes calls, and keeps a failing server from affecting the others.
//!
//! `host/` (the host and one supervisor per server), `config.rs` (mcp.json), `transport.rs`,
//! `http.rs`/`sse.rs`/`rest.rs` (our HTTP transports), `oauth/` (sign-in), `sandbox*` (a program's
//! kernel sandbox), `process.rs`, `pins.rs`, `tool_key.rs` (the key of
//! everything decided about a tool), `apps.rs` (MCP Apps), `catalog.rs` (prompts and
//! resources), `import.rs` (other hosts' configs), `names.rs`.

pub mod apps;
pub mod catalog;
pub mod config;
mod host;
pub mod http;
pub mod import;
pub mod local_skills;
pub mod names;
pub mod oauth;
pub mod pins;
mod process;
pub mod rest;
pub mod sandbox;
pub mod skills;
pub mod sse;
mod tool_key;
pub mod transport;

pub use process::{app_path, login_shell_path, merge_paths};

pub use tool_key::ToolKey;
pub use transport::{Transport, TransportInfo, TRANSPORTS};

pub use catalog::{PromptArg, PromptText, PromptView, ResourceText, ResourceView};
pub use config::{
    validate_server, ConfigError, FieldError, HostRule, InstallSource, LimitsConfig, McpConfig,
    OAuthClient, SandboxConfig, SandboxSetting, ServerConfig, LOG_LEVELS,
};
pub use host::{
    file_uri, result_images, result_text, task_is_open, AppListing, CallEvent, Elicitation,
    ElicitationAction, ElicitationAnswer, HostError, HostOptions, KeptSession, LoadedSkill,
    McpHost, PendingSkill, PinBook, Progress, Reply, ResultImage, RoutedTool, SamplingAnswer,
    SamplingRequest, SamplingText, SandboxView, ServerSkills, ServerStatus, ServerView, SignInView,
    SkillListing, SkillsOverview, Step, TaskEnd, TaskHandle, TaskState, ToolOutcome, ToolView,
    LOAD_SKILL, MAX_RAW_RESULT, MAX_RESULT_TEXT, MAX_STDIO_MESSAGE, READ_SKILL_FILE, SKILLS_SERVER,
};
