//! A call's checks before anyone is asked about it: where its name leads (a tool, or a server
//! that waits for a sign-in), whether the tool is on for this conversation, and whether its
//! arguments fit the tool's schema (repaired where that is exact). A call that fails one is
//! refused on its card, and the model reads why.
//!
//! A skill tool's call that names a skill off in this chat (the chat's own `skills`, else
//! `Settings::skills_off`; `skill_on`) is refused as `TurnedOff`; `turn.rs`'s `tools_on` offers
//! only the skills on in the first place.

use serde_json::{Map, Value};

use super::super::approval::Approval;
use super::super::events::{ChatEvent, Emit};
use super::super::repair;
use super::super::resolve;
use super::super::turn::Turn;
use super::super::{ChatEngine, ChatError};
use super::{Card, Ended};
use crate::mcp::RoutedTool;

/// What the checks make of a call: ready to be asked about, or refused (how it ended).
pub(super) enum Checked<'c> {
    Ready(Ready<'c>),
    Refused(Ended),
}

/// A call that passed the checks: the tool it leads to, its arguments (repaired) and the tool's
/// schema.
pub(super) struct Ready<'c> {
    pub routed: &'c RoutedTool,
    pub args: Map<String, Value>,
    pub schema: Value,
}

/// The arguments as the model sent them, without repair (only to measure what repair buys): an
/// object, or a JSON string holding one; anything else is refused as it is.
fn as_sent(arguments: &Value) -> Result<Map<String, Value>, Vec<repair::FieldProblem>> {
    let problem = |got: String| {
        vec![repair::FieldProblem {
            field: String::new(),
            wants: "a JSON object".into(),
            got,
        }]
    };
    match arguments {
        Value::Object(m) => Ok(m.clone()),
        Value::Null => Ok(Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(problem(s.clone())),
        },
        other => Err(problem(other.to_string())),
    }
}

impl ChatEngine {
    /// The checks before anyone is asked about a call: where it leads, whether it is on for this
    /// conversation, its arguments. A call that fails one is refused, its card and the model told
    /// why.
    pub(super) async fn check_call<'c>(
        &self,
        turn: &Turn,
        card: &'c Card,
        emit: Emit<'_>,
    ) -> Result<Checked<'c>, ChatError> {
        let call = &card.call;
        let Some(routed) = &card.routed else {
            return self.refuse_unrouted(turn, card, emit).await;
        };
        if !turn.tool_choice.allows(&routed.server, &routed.tool) {
            let why = format!(
                "The tool \"{}\" is turned off for this conversation; use only the tools you were given.",
                call.name
            );
            self.refuse(card, Approval::TurnedOff, &why, emit).await?;
            return Ok(Checked::Refused(self.error_outcome(card, why, 0)));
        }
        let schema = self.tools.tool_schema(&call.name).unwrap_or(Value::Null);
        match self.fitting_arguments(card, &schema, emit).await? {
            Ok(args) if routed.server == crate::mcp::SKILLS_SERVER => {
                // a skill this conversation has off (as the arguments name it once repaired)
                let skill = args.get("skill").and_then(Value::as_str);
                if let Some(skill) = skill.filter(|s| !self.skill_on(turn, s)) {
                    let why = format!(
                        "The skill \"{skill}\" is turned off for this conversation; use only the skills you were given."
                    );
                    self.refuse(card, Approval::TurnedOff, &why, emit).await?;
                    return Ok(Checked::Refused(self.error_outcome(card, why, 0)));
                }
                Ok(Checked::Ready(Ready {
                    routed,
                    args,
                    schema,
                }))
            }
            Ok(args) => Ok(Checked::Ready(Ready {
                routed,
                args,
                schema,
            })),
            Err(why) => {
                self.refuse(card, Approval::InvalidArguments, &why, emit)
                    .await?;
                Ok(Checked::Refused(self.error_outcome(card, why, 0)))
            }
        }
    }

    /// A call that leads to no tool, refused: a name that fits no tool (or several) has the
    /// model hear the closest names; a tool of a server that waits for a sign-in has the model
    /// hear that, and the window offer the sign-in.
    async fn refuse_unrouted<'c>(
        &self,
        turn: &Turn,
        card: &Card,
        emit: Emit<'_>,
    ) -> Result<Checked<'c>, ChatError> {
        let call = &card.call;
        if let Some(server) = &card.waiting_for {
            let why = format!(
                "The tools of the server \"{server}\" are unavailable until the user signs in to it; Switchboard offers them a Sign in button. Tell the user, and do not call its tools until they have."
            );
            emit(ChatEvent::SignInNeeded {
                server: server.clone(),
            });
            self.refuse(card, Approval::SignInNeeded, &why, emit)
                .await?;
            return Ok(Checked::Refused(self.error_outcome(card, why, 0)));
        }
        let why =
            resolve::message_for_model(&call.name, &resolve::resolve(&call.name, &turn.names))
                .unwrap_or_else(|| format!("There is no tool named \"{}\".", call.name));
        self.refuse(card, Approval::UnknownTool, &why, emit).await?;
        Ok(Checked::Refused(self.error_outcome(card, why, 0)))
    }

    /// The call's arguments as the schema wants them, repaired where that is exact (the repair
    /// stored and shown on its card); else what is wrong with each, for the model, and nobody is
    /// asked about a call that could not run.
    async fn fitting_arguments(
        &self,
        card: &Card,
        schema: &Value,
        emit: Emit<'_>,
    ) -> Result<Result<Map<String, Value>, String>, ChatError> {
        let call = &card.call;
        let repaired = if self.options.aids.repair {
            repair::repair(&call.arguments, schema)
        } else {
            as_sent(&call.arguments).map(|arguments| repair::Repaired {
                arguments,
                repairs: vec![],
            })
        };
        match repaired {
            Ok(r) => {
                if !r.repairs.is_empty() {
                    self.store
                        .set_tool_call_arguments(card.id, &Value::Object(r.arguments.clone()))
                        .await?;
                    emit(ChatEvent::ToolCallArguments {
                        id: card.id,
                        arguments: Value::Object(r.arguments.clone()),
                        repairs: r.repairs,
                    });
                }
                Ok(Ok(r.arguments))
            }
            Err(problems) => Ok(Err(repair::problems_for_model(&call.name, &problems))),
        }
    }

    /// The server waiting for a sign-in whose tool `name` seems to be, and that tool: the name
    /// starts with the server's (any letter case), then a separator models use (`__`, `.`, `/`,
    /// `:`, `_`), then the tool. The longest such server wins, and none when a running server's
    /// name fits at least as long (`notes_pro__x` is not `notes`'s).
    pub(super) fn waiting_server(&self, name: &str) -> Option<(String, String)> {
        let name = resolve::without_prefix(name.trim());
        let prefix_of = |server: &str| -> Option<String> {
            let (head, rest) = (name.get(..server.len())?, name.get(server.len()..)?);
            if !head.eq_ignore_ascii_case(server) {
                return None;
            }
            let tool = ["__", ".", "/", ":", "_"]
                .iter()
                .find_map(|sep| rest.strip_prefix(sep))?;
            (!tool.is_empty()).then(|| tool.to_string())
        };
        let (server, tool) = self
            .tools
            .waiting_for_sign_in()
            .into_iter()
            .filter_map(|s| prefix_of(&s).map(|t| (s, t)))
            .max_by_key(|(s, _)| s.len())?;
        let running_fits = self
            .tools
            .tool_specs()
            .iter()
            .filter_map(|t| self.tools.route(&t.name))
            .any(|r| r.server.len() >= server.len() && prefix_of(&r.server).is_some());
        (!running_fits).then_some((server, tool))
    }
}
