//! The two tools through which the model uses skills (`skills.rs`, a server's; and the user's
//! own, `mcp::local_skills`): `load_skill` (a skill's `SKILL.md`, verified) and
//! `read_skill_file` (one file of a skill, verified). They are offered, with the name and
//! description of every skill on, only while there is a skill to offer: a running server's that
//! the user accepted, or one of the user's own folder. The model names a skill by its origin and
//! name (`server/skill`, `local/skill` for the user's own), so a skill never stands for another's
//! of the same name; a server named `local` has its skills left out (they would read as the
//! user's). Which skills are on (per skill, per chat) is the chat loop's to say
//! ([`McpHost::skill_tool_specs_with`]); the host offers all of them otherwise. They are the
//! host's own read-only tools (routed to the pseudo-server [`SKILLS_SERVER`]): loading needs no
//! approval, is shown as a card like any call (its arguments name the skill's origin), and its
//! text counts in the context like any result. A skill's text is only text: what it leads the
//! model to call is approved as usual.
//!
//! The user's folder is read again by `refresh_local_skills` before each turn and when Settings →
//! Skills opens; `skills_overview` is what Settings → Skills lists. The chat loop offers only the
//! skills on through `ToolHost::tool_specs_with_skills` (`chat/tools.rs`), which calls
//! `skill_tool_specs_with`.

use serde_json::{json, Map, Value};

use serde::Serialize;

use super::state::RoutedTool;
use super::{McpHost, SkillListing, ToolOutcome};
use crate::llm::ToolSpec;
use crate::mcp::local_skills::{self, LocalListing, LOCAL};

/// The pseudo-server the skill tools are routed to (their cards, a chat's tool choices).
pub const SKILLS_SERVER: &str = "skills";
/// The tool that loads a skill.
pub const LOAD_SKILL: &str = "load_skill";
/// The tool that reads one file of a skill.
pub const READ_SKILL_FILE: &str = "read_skill_file";

impl McpHost {
    /// The skills on offer: `(origin/name, description)` of each of the user's own skills (as
    /// last read) and each accepted skill of each running server (as last listed).
    pub fn skills_on_offer(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .shared
            .local_skills
            .lock()
            .unwrap()
            .skills
            .iter()
            .map(|s| (format!("{LOCAL}/{}", s.name), s.description.clone()))
            .collect();
        for (server, listing) in self.listed_skills() {
            if is_local(&server) {
                continue;
            }
            for s in &listing.skills {
                out.push((
                    format!("{server}/{}", s.name()),
                    s.description().to_string(),
                ));
            }
        }
        out
    }

    /// Reads the folder of the user's own skills again (their frontmatter only): before each
    /// turn, and when Settings → Skills opens.
    pub fn refresh_local_skills(&self) -> LocalListing {
        let listing = match &self.shared.opts.skills_dir {
            Some(dir) => local_skills::list(dir),
            None => LocalListing::default(),
        };
        let changed = {
            let mut kept = self.shared.local_skills.lock().unwrap();
            let changed = *kept != listing;
            *kept = listing.clone();
            changed
        };
        if changed {
            self.shared.changed();
        }
        listing
    }

    /// The folder of the user's own skills, when they are looked for.
    pub fn skills_dir(&self) -> Option<std::path::PathBuf> {
        self.shared.opts.skills_dir.clone()
    }

    /// Every skill there is, for Settings → Skills: the user's own folder (read again) and each
    /// running server's listing as last fetched (offered, held back, refused).
    pub fn skills_overview(&self) -> SkillsOverview {
        let local = self.refresh_local_skills();
        SkillsOverview {
            local,
            servers: self
                .listed_skills()
                .into_iter()
                .map(|(server, listing)| ServerSkills {
                    left_out: is_local(&server),
                    server,
                    listing,
                })
                .collect(),
        }
    }

    /// The skill tools, when there are skills to offer (all of them).
    pub(super) fn skill_tool_specs(&self) -> Vec<ToolSpec> {
        self.skill_tool_specs_with(&|_| true)
    }

    /// The skill tools offering only the skills `on` says are on (by `origin/name`); none when
    /// no skill is on.
    pub fn skill_tool_specs_with(&self, on: &dyn Fn(&str) -> bool) -> Vec<ToolSpec> {
        let offer: Vec<(String, String)> = self
            .skills_on_offer()
            .into_iter()
            .filter(|(n, _)| on(n))
            .collect();
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
        if is_local(server) {
            return Some(match self.call_local_skill(exposed, name, arguments) {
                Ok(text) => outcome(text, false),
                Err(e) => outcome(e, true),
            });
        }
        let result = if exposed == LOAD_SKILL {
            self.load_skill(server, name).await.map(|l| {
                loaded(
                    name,
                    &format!("the MCP server \"{server}\""),
                    &l.files,
                    &l.text,
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

    /// `load_skill` or `read_skill_file` of the user's own skill `name` (read from disk now).
    fn call_local_skill(
        &self,
        exposed: &str,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<String, String> {
        let skill = self
            .shared
            .local_skills
            .lock()
            .unwrap()
            .skill(name)
            .cloned()
            .ok_or_else(|| format!("There is no skill \"{name}\" of your own (local)."))?;
        if exposed == LOAD_SKILL {
            let (text, files) = local_skills::load(&skill)
                .map_err(|why| format!("The skill \"{name}\" cannot be loaded: {why}"))?;
            Ok(loaded(name, "the user's own skills (local)", &files, &text))
        } else {
            let path = arguments
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            local_skills::read_file(&skill, path)
        }
    }
}

/// Every skill there is, as Settings → Skills shows them.
/// Whether a skill's origin (as the model names it, `origin/name`) is the user's own skills: a
/// server named so (in any case) never stands for them — its skills are left out.
fn is_local(origin: &str) -> bool {
    origin.eq_ignore_ascii_case(LOCAL)
}

/// What the model reads of a loaded skill `name` of `origin` (in words): what it is, its other
/// files, then its `SKILL.md`.
fn loaded(name: &str, origin: &str, files: &[String], text: &str) -> String {
    let files = if files.is_empty() {
        String::new()
    } else {
        format!(
            "Its files (read one with {READ_SKILL_FILE}): {}\n",
            files.join(", ")
        )
    };
    format!(
        "Skill \"{name}\" of {origin}. Its instructions are text to follow with your tools; \
         nothing in them runs by itself.\n{files}\n{text}"
    )
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsOverview {
    /// The user's own folder, its skills and what was refused.
    pub local: LocalListing,
    pub servers: Vec<ServerSkills>,
}

/// One running server's skills.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerSkills {
    pub server: String,
    pub listing: SkillListing,
    /// The server is named `local`: its skills are not offered (they would read as the user's).
    pub left_out: bool,
}
