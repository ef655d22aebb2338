//! Switchboard's engine: everything but the window. No Tauri here: the desktop app and the
//! headless CLI both drive this crate through [`Runtime`].

pub mod bundle;
pub mod chat;
pub mod form;
pub mod limits;
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
    llm_client, newer, CatalogError, CatalogPage, CatalogState, HostMachine, McpConfigError,
    OldEntry, Places, PolicyView, Runtime, UpdateAvailable, NO_LANDLOCK_FOR_TESTS,
};
pub use settings::{LiveSettings, Settings};
