//! The app binary without its window: the headless CLI (`chat`, `conversations`, `mcp-server`,
//! `mcp-call`) and the official MCP client conformance suite driving `switchboard mcp-call`.
//!
//! `catalog.rs`: `catalog search` and `install` against the registry stand-in, bundles, refusals.
//! `conformance.rs`: every client scenario the installed suite lists, at every spec version it
//! names; those that do not pass are listed with why.

#[path = "../common/mod.rs"]
mod support;

mod catalog;
mod cli;
mod conformance;
