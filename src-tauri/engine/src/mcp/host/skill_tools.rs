//! The two tools through which the model uses skills (`skills.rs`): `load_skill` (a skill's
//! `SKILL.md`, verified) and `read_skill_file` (one file of a loaded skill, verified). They are
//! offered, with the name and description of every skill on, only while some running server
//! lists skills the user accepted; the model names a skill by its origin and name
//! (`server/skill`), so a server's skill never stands for another's of the same name. They are
//! the host's own read-only tools (routed to the pseudo-server [`SKILLS_SERVER`]): loading needs
//! no approval, is shown as a card like any call (its arguments name the skill's origin), and its
//! text counts in the context like any result. A skill's text is only text: what it leads the
//! model to call is approved as usual.

use serde_json::{json, Map, Value};

use super::state::RoutedTool;
use super::{McpHost, ToolOutcome};
use crate::llm::ToolSpec;

/// The pseudo-server the skill tools are routed to (their cards, a chat's tool choices).
pub const SKILLS_SERVER: &str = "skills";
/// The tool that loads a skill.
pub const LOAD_SKILL: &str = "load_skill";
/// The tool that reads one file of a skill.
pub const READ_SKILL_FILE: &str = "read_skill_file";

impl McpHost {
    /// The skills on offer: `(origin/name, description)` of each accepted skill of each running
    /// server, as last listed.
    pub fn skills_on_offer(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (server, listing) in self.listed_skills() {
            for s in &listing.skills {
                out.push((
                    format!("{server}/{}", s.name()),
                    s.description().to_string(),
                ));
            }
        }
        out
    }

    /// The skill tools, when there are skills to offer.
    pub(super) fn skill_tool_specs(&self) -> Vec<ToolSpec> {
        let offer = self.skills_on_offer();
        if offer.is_empty() {
            return vec![];
        }
        let names: Vec<&str> = offer.iter().map(|(n, _)| n.as_str()).collect();
        let list: String = offer.iter().map(|(n, d)| format!("\n- {n}: {d}")).collect();
        vec![
            ToolSpec {
                name: LOAD_SKILL.into(),
                description: format!(
                    "Loads a skill: instructions for getting a kind of job done (which steps, in \
                     which order, what to avoid). Load the skill whose description fits the job \
                     before you start it, then follow it with the tools you have. Skills:{list}"
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {"skill": {
                        "type": "string",
                        "enum": names,
                        "description": "The skill, as listed (origin/name)"
                    }},
                    "required": ["skill"]
                }),
            },
            ToolSpec {
                name: READ_SKILL_FILE.into(),
                description: "Reads a file of a skill (one its instructions name, or one listed \
                              when it was loaded)."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "skill": {"type": "string", "enum": names, "description": "The skill (origin/name)"},
                        "path": {"type": "string", "description": "The file, relative to the skill's folder (e.g. references/FORMS.md)"}
                    },
                    "required": ["skill", "path"]
                }),
            },
        ]
    }

    /// Where a skill tool's name leads: the host's own read-only tool.
    pub(super) fn skill_route(&self, exposed: &str) -> Option<RoutedTool> {
        if exposed != LOAD_SKILL && exposed != READ_SKILL_FILE {
            return None;
        }
        self.skills_on_offer().first()?;
        Some(RoutedTool {
            server: SKILLS_SERVER.into(),
            tool: exposed.into(),
            read_only: true,
            trusted: true,
            identity: format!("switchboard:{SKILLS_SERVER}"),
            exposed: Some(exposed.into()),
            ..RoutedTool::default()
        })
    }

    pub(super) fn skill_tool_schema(&self, exposed: &str) -> Option<Value> {
        self.skill_tool_specs()
            .into_iter()
            .find(|t| t.name == exposed)
            .map(|t| t.parameters)
    }

    /// Runs a skill tool; `None` when `exposed` is not one.
    pub(super) async fn call_skill_tool(
        &self,
        exposed: &str,
        arguments: &Map<String, Value>,
    ) -> Option<ToolOutcome> {
        self.skill_route(exposed)?;
        let outcome = |text: String, is_error: bool| ToolOutcome {
            server: SKILLS_SERVER.into(),
            tool: exposed.to_string(),
            text,
            is_error,
            raw: None,
            images: vec![],
        };
        let Some((server, name)) = arguments
            .get("skill")
            .and_then(Value::as_str)
            .and_then(|s| s.split_once('/'))
        else {
            let offered: Vec<String> = self.skills_on_offer().into_iter().map(|(n, _)| n).collect();
            return Some(outcome(
                format!(
                    "Name the skill as listed (origin/name): one of {}.",
                    offered.join(", ")
                ),
                true,
            ));
        };
        let result = if exposed == LOAD_SKILL {
            self.load_skill(server, name).await.map(|l| {
                let files = if l.files.is_empty() {
                    String::new()
                } else {
                    format!(
                        "Its files (read one with {READ_SKILL_FILE}): {}\n",
                        l.files.join(", ")
                    )
                };
                format!(
                    "Skill \"{name}\" of the MCP server \"{server}\". Its instructions are text to \
                     follow with your tools; nothing in them runs by itself.\n{files}\n{}",
                    l.text
                )
            })
        } else {
            let path = arguments
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            self.read_skill_file(server, name, path).await
        };
        Some(match result {
            Ok(text) => outcome(text, false),
            Err(e) => outcome(e.to_string(), true),
        })
    }
}
