//! The engine's integration tests: one binary, one module per feature. They run headless on the
//! engine's small `switchboard-mcp` binary (the built-in servers), the real npm and PyPI MCP
//! servers, fixture servers that misbehave, and a scripted fake LLM speaking Ollama's and
//! llama-server's wire formats byte for byte. Nothing here links the window.

mod support;

mod approval;
mod apps;
mod attachments;
mod bundles;
mod catalog;
mod compaction;
mod context;
mod conversation;
mod eval_tools;
mod families;
mod host;
mod layers;
mod legacy_tasks;
mod llm_faults;
mod llm_ollama;
mod llm_openai;
mod model_check;
mod pins;
mod real_llm;
mod recovery;
mod registry;
mod research;
mod sandbox;
mod secrets;
mod server_requests;
mod sign_in;
mod skills;
mod startup;
mod task_restarts;
mod tasks;
mod transports;
mod turn;
