//! The app binary without its window: the headless CLI (`chat`, `conversations`, `mcp-server`,
//! `mcp-call`) and the official MCP client conformance suite driving `switchboard mcp-call`.

#[path = "../common/mod.rs"]
mod support;

mod catalog;
mod cli;
mod conformance;
