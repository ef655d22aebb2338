//! Switchboard's engine: everything but the window. No Tauri here: the desktop app and the
//! headless CLI both drive this crate through [`Runtime`].

pub mod bundle;
pub mod chat;
pub mod form;
pub mod llm;
pub mod markdown;
pub mod mcp;
pub mod media;
pub mod paths;
pub mod registry;
mod runtime;
pub mod secrets;
pub mod servers;
pub mod settings;
pub mod store;
#[cfg(test)]
mod testing;

pub use chat::{ChatEngine, ChatEvent, ChatOptions, TurnRequest, TurnSummary};
pub use runtime::{
    newer, CatalogError, CatalogPage, CatalogState, HostMachine, McpConfigError, OldEntry, Places,
    PolicyView, Runtime, UpdateAvailable,
};
pub use settings::{LiveSettings, Settings};

use std::path::PathBuf;
use std::sync::Arc;

/// A client for one provider; its API key, if it has one, is read from `secrets` when a request
/// is sent.
pub fn llm_client(
    p: &settings::ProviderConfig,
    secrets: &secrets::Secrets,
) -> Arc<dyn llm::LlmClient> {
    match p.kind {
        settings::ProviderKind::Ollama => Arc::new(llm::OllamaClient::new(p.url.clone())),
        settings::ProviderKind::Openai => Arc::new(llm::OpenAiClient::with_secret(
            &p.url,
            p.api_key.clone(),
            secrets,
        )),
    }
}

/// The roots offered to MCP servers: the files sandbox, then the folders the user chose.
pub fn roots(settings: &Settings) -> Vec<PathBuf> {
    let mut out = vec![servers::default_files_root()];
    out.extend(settings.roots.iter().map(PathBuf::from));
    out
}

/// Set (to anything), the app believes the kernel has no Landlock: how the window's tests see a
/// sandboxed server wait for the user's agreement on a kernel that has it.
pub const NO_LANDLOCK_FOR_TESTS: &str = "SWITCHBOARD_TEST_NO_LANDLOCK";
