//! What the host shows of its servers: the servers list, the tools as the model is offered them
//! (named `server__tool`, a function of the tool set only), routing a name to its server and tool,
//! tool definitions that changed since the user accepted them, and the servers' prompts and
//! resources. All read from the supervisors' published snapshots.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::Value;

use super::state::{self, Phase};
use super::{
    pins, sandbox_view, HostError, McpHost, Names, RoutedTool, ServerView, ToolView,
    REPORT_LOG_LINES,
};
use crate::llm::ToolSpec;
use crate::mcp::catalog::{PromptView, ResourceView};
use crate::mcp::names;
use crate::mcp::pins::Pin;

impl McpHost {
    /// Exposed names for the current state: a function of the tool set only.
    fn names(&self) -> Arc<Names> {
        let version = self.shared.version.load(Ordering::SeqCst);
        let mut cached = self.names.lock().unwrap();
        if cached.0 != version {
            let mut pairs = Vec::new();
            for (name, slot) in self.slots() {
                // a tool only its app may call has no name for the model: nothing routes to it
                // (nor to one recorded so, whose change to model-visible is not accepted yet)
                let snapshot = slot.snapshot();
                let visible = snapshot.catalog.tools.iter().filter(|t| {
                    t.ui.model
                        && self
                            .unaccepted(&name, t)
                            .is_none_or(|p| p.accepted().is_none_or(|b| b.ui.model))
                });
                for t in visible {
                    pairs.push((name.clone(), t.name.clone()));
                }
            }
            *cached = (version, Arc::new(names::assign(&pairs)));
        }
        cached.1.clone()
    }

    fn exposed_names(&self) -> BTreeMap<(String, String), String> {
        self.names()
            .iter()
            .map(|(k, v)| (v.clone(), k.clone()))
            .collect()
    }

    /// Every configured server as the servers list shows it.
    pub fn servers(&self) -> Vec<ServerView> {
        let exposed = self.exposed_names();
        self.slots()
            .into_iter()
            .map(|(name, slot)| {
                let s = slot.snapshot();
                let report = match &s.phase {
                    Phase::Failed(r) => Some(r),
                    _ => None,
                };
                ServerView {
                    status: s.status(),
                    busy: s
                        .busy
                        .clone()
                        .filter(|_| matches!(s.phase, Phase::Starting)),
                    transport: slot.config.transport(),
                    command: s
                        .resolved
                        .clone()
                        .unwrap_or_else(|| slot.config.command.clone()),
                    args: slot.config.args.clone(),
                    protocol_version: s.session().and_then(|x| x.protocol_version.clone()),
                    server_info: s.session().and_then(|x| x.server_info.clone()),
                    tools: s
                        .catalog
                        .tools
                        .iter()
                        .map(|t| ToolView {
                            name: t.name.clone(),
                            exposed: exposed
                                .get(&(name.clone(), t.name.clone()))
                                .cloned()
                                .unwrap_or_default(),
                            description: t.description.clone(),
                            input_schema: t.input_schema.clone(),
                            read_only: t.read_only,
                            destructive: t.destructive,
                            open_world: t.open_world,
                            changed: self
                                .unaccepted(&name, t)
                                .map(|pin| pin.diff(&t.definition())),
                            unaccepted: self.unaccepted(&name, t).map(|pin| pin.code()),
                            hash: t.definition().hash(),
                            ui: t.ui.clone(),
                        })
                        .collect(),
                    error: report.map(|r| r.error.clone()),
                    failed_step: report.map(|r| r.step),
                    restarts: s.restarts,
                    exit: report.and_then(|r| r.exit.clone()),
                    stderr_tail: slot.log.last(REPORT_LOG_LINES),
                    pid: s
                        .session()
                        .and_then(|x| x.pid)
                        .or(report.and_then(|r| r.pid)),
                    path: s.path.clone(),
                    trusted: slot.config.trusts_hints(),
                    sandbox: sandbox_view(&slot, self.shared.landlock_abi, &self.shared.opts),
                    sign_in: self.shared.sign_in_view(&name, &slot.config),
                    name,
                }
            })
            .collect()
    }

    /// The tools of the running servers, as offered to the model (every skill on).
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.tool_specs_with_skills(&|_| true)
    }

    /// The tools of the running servers, with only the skills `skill_on` says are on (by
    /// `origin/name`) offered through the skill tools.
    pub fn tool_specs_with_skills(&self, skill_on: &dyn Fn(&str) -> bool) -> Vec<ToolSpec> {
        let exposed = self.exposed_names();
        let mut out = Vec::new();
        for (name, slot) in self.slots() {
            let s = slot.snapshot();
            if s.session().is_none() {
                continue;
            }
            for t in &s.catalog.tools {
                if let Some(exposed) = exposed.get(&(name.clone(), t.name.clone())) {
                    // a changed tool is offered as the user accepted it, until they accept the
                    // change: a new description reaches the model only with their consent
                    let pin = self.unaccepted(&name, t);
                    let (description, parameters) = match pin.as_deref().and_then(Pin::accepted) {
                        Some(before) => (before.description.clone(), before.input_schema.clone()),
                        None => (t.description.clone(), t.input_schema.clone()),
                    };
                    out.push(ToolSpec {
                        name: exposed.clone(),
                        description,
                        parameters,
                    });
                }
            }
        }
        // the skills on offer, through the host's two skill tools (`skill_tools.rs`)
        out.extend(self.skill_tool_specs_with(skill_on));
        out
    }

    /// The `inputSchema` of a tool, by exposed name.
    pub fn tool_schema(&self, exposed: &str) -> Option<Value> {
        if let Some(schema) = self.skill_tool_schema(exposed) {
            return Some(schema);
        }
        let (server, tool) = self.names().get(exposed).cloned()?;
        let snapshot = self.slot(&server)?.snapshot();
        snapshot
            .catalog
            .tools
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.input_schema.clone())
    }

    /// The `inputSchema` of `server`'s tool `tool` (by its own name: an app-only tool has no
    /// exposed one).
    pub fn server_tool_schema(&self, server: &str, tool: &str) -> Option<Value> {
        let snapshot = self.slot(server)?.snapshot();
        snapshot
            .catalog
            .tools
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.input_schema.clone())
    }

    /// Which server and tool an exposed name stands for.
    pub fn route(&self, exposed: &str) -> Option<RoutedTool> {
        if let Some(routed) = self.skill_route(exposed) {
            return Some(routed);
        }
        let (server, tool) = self.names().get(exposed).cloned()?;
        self.route_tool(server, tool)
    }

    /// A tool of a server by its own name, with what is known of it (an MCP App's call); `None`
    /// when the server offers no such tool.
    pub fn route_server_tool(&self, server: &str, tool: &str) -> Option<RoutedTool> {
        let known = self
            .slot(server)?
            .snapshot()
            .catalog
            .tools
            .iter()
            .any(|t| t.name == tool);
        known.then(|| self.route_tool(server.to_string(), tool.to_string()))?
    }

    /// Every tool whose name the model was offered, or an app's call named, was `name`
    /// (`server__tool`: how settings written by older versions name a tool), with what is known
    /// of it. Cleaned names are not unique over time (`read_file` and `read.file` share one),
    /// so this is for reading those old settings only (`settings::Candidate`), never a key.
    pub fn tools_once_named(&self, name: &str) -> Vec<RoutedTool> {
        let exposed = self.exposed_names();
        let mut found = Vec::new();
        for (server, slot) in self.slots() {
            for t in &slot.snapshot().catalog.tools {
                let offered = exposed.get(&(server.clone(), t.name.clone()));
                if offered.is_some_and(|e| e == name) || format!("{server}__{}", t.name) == name {
                    found.extend(self.route_tool(server.clone(), t.name.clone()));
                }
            }
        }
        found
    }

    fn route_tool(&self, server: String, tool: String) -> Option<RoutedTool> {
        let slot = self.slot(&server);
        let trusted = slot.as_ref().is_some_and(|s| s.config.trusts_hints());
        let identity = slot
            .as_ref()
            .map(|s| s.config.identity())
            .unwrap_or_default();
        let hints = slot.and_then(|slot| {
            slot.snapshot()
                .catalog
                .tools
                .iter()
                .find(|t| t.name == tool)
                .map(|t| {
                    let pin = self.unaccepted(&server, t);
                    // while it is not accepted, its app and callers are those the user accepted
                    let ui = match pin.as_deref().and_then(Pin::accepted) {
                        Some(before) => before.ui.clone(),
                        None => t.ui.clone(),
                    };
                    (
                        t.read_only,
                        t.destructive,
                        t.open_world,
                        pin.as_deref().map(Pin::code),
                        ui,
                    )
                })
        });
        let (read_only, destructive, open_world, unaccepted, ui) = hints.unwrap_or_default();
        let exposed = self
            .exposed_names()
            .get(&(server.clone(), tool.clone()))
            .cloned();
        Some(RoutedTool {
            server,
            tool,
            read_only,
            destructive,
            open_world,
            trusted,
            changed: unaccepted.is_some(),
            unaccepted,
            identity,
            exposed,
            ui,
        })
    }

    /// Why the definition `server` presents for `tool` is not one the user accepted, when it is
    /// not (changed, new, unchecked): a change the user accepted in this run counts as accepted.
    fn unaccepted(&self, server: &str, tool: &state::CachedTool) -> Option<Arc<Pin>> {
        let pin = tool.pinned.clone()?;
        let identity = self.slot(server)?.config.identity();
        let accepted = self.shared.accepted.lock().unwrap();
        (!accepted.contains(&(identity, tool.definition().hash()))).then_some(pin)
    }

    /// What changed in a tool's definition since the user accepted it (`None`: nothing, or no
    /// such tool); all of it for a tool with no accepted definition (new, unchecked).
    pub fn tool_change(&self, server: &str, tool: &str) -> Option<Vec<pins::DiffLine>> {
        let snapshot = self.slot(server)?.snapshot();
        let t = snapshot.catalog.tools.iter().find(|t| t.name == tool)?;
        self.unaccepted(server, t)
            .map(|pin| pin.diff(&t.definition()))
    }

    /// The user accepts the definition `server` presents for `tool`, the one they were shown
    /// (`shown`: its hash, as its view gave it): it is pinned, offered to the model as it is, and
    /// standing approvals hold for it again. When the server presents another one by now, nothing
    /// is accepted ([`HostError::ChangedAgain`]: the view shows the new change).
    pub async fn accept_tool_definition(
        &self,
        server: &str,
        tool: &str,
        shown: &str,
    ) -> Result<(), HostError> {
        let slot = self
            .slot(server)
            .ok_or_else(|| HostError::NotConfigured(server.to_string()))?;
        let def = slot
            .snapshot()
            .catalog
            .tools
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.definition())
            .ok_or_else(|| HostError::NoTool {
                server: server.into(),
                tool: tool.into(),
            })?;
        if def.hash() != shown {
            return Err(HostError::ChangedAgain {
                server: server.to_string(),
                tool: tool.to_string(),
            });
        }
        let identity = slot.config.identity();
        if let Some(pins) = &self.shared.opts.pins {
            pins.0.accept(&identity, &def).await;
        }
        self.shared
            .accepted
            .lock()
            .unwrap()
            .insert((identity, def.hash()));
        self.shared.changed();
        Ok(())
    }

    /// What makes `server` the server it is (`ServerConfig::identity`), when it is configured.
    pub fn server_identity(&self, server: &str) -> Option<String> {
        self.slot(server).map(|s| s.config.identity())
    }

    /// The prompts of the running servers (typing `/` lists them).
    pub fn prompts(&self) -> Vec<PromptView> {
        self.running_catalogs()
            .flat_map(|c| c.prompts.clone())
            .collect()
    }

    /// The resources of the running servers.
    pub fn resources(&self) -> Vec<ResourceView> {
        self.running_catalogs()
            .flat_map(|c| c.resources.clone())
            .collect()
    }

    fn running_catalogs(&self) -> impl Iterator<Item = Arc<state::Catalog>> {
        self.slots().into_iter().filter_map(|(_, slot)| {
            let s = slot.snapshot();
            s.session().is_some().then(|| s.catalog.clone())
        })
    }
}
