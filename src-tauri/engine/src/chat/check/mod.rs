//! The model check: does this model use tools, and how? A fixed set of probes
//! ([`probes::all`]: one call, two calls, nested arguments, a number written in words, a
//! question that needs no tool), each one request with tools that do nothing (nothing runs),
//! first with the tools offered natively, then (when that does not work) described in the
//! system prompt as text mode does. Each probe is classified: a native call, a call recovered
//! from the text (and in which family's markup), wrong arguments, no call, a false call. From
//! that comes the tool mode to propose for the model's chats (native, text, off).
//!
//! Cancellable at any time (what ran is reported); progress comes as [`CheckEvent`]s.
//!
//! Each probe is timed. `Runtime::check_model` keeps the report in the store per provider and
//! model.

pub mod probes;

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::families::{Cx, FamilyId};
use super::recover::recover_with;
use super::resolve::{self, OfferedName};
use super::{repair, text_tools};
use crate::llm::{ChatRequest, GenOptions, LlmClient, LlmError, Message, Role, ToolSpec};
use probes::{Expect, Probe};

/// How the tools were given to the model in a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// In the API's tools field.
    Native,
    /// Described in the system prompt.
    Text,
}

/// What a probe's reply did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Outcome {
    /// The expected calls, in the API's tool-call field.
    Native,
    /// The expected calls, written in the text in this family's markup.
    Recovered { family: String },
    /// Calls, but not the ones asked for (what is wrong, in words).
    WrongArguments { detail: String },
    /// No call (right for the probe that needs none).
    NoCall,
    /// A call where none was needed.
    FalseCall { name: String },
    /// The request failed.
    Failed { message: String },
}

/// One probe's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    pub probe: String,
    pub title: String,
    pub mode: Mode,
    pub outcome: Outcome,
    /// Whether the reply was what the probe asked for.
    pub passed: bool,
    pub ms: u64,
}

/// The tool mode the check proposes for the model's chats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Proposal {
    Native,
    Text,
    /// The model does not use tools: chat without them.
    Off,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub model: String,
    /// The tool-call family detected from the model's template and name, when one was.
    pub format: Option<String>,
    pub results: Vec<ProbeResult>,
    pub proposal: Proposal,
    /// Whether the user stopped it (the results are what ran).
    pub cancelled: bool,
    /// When it ran (milliseconds since 1970).
    pub checked_at: i64,
}

impl CheckReport {
    /// Whether the model can use tools (in the mode proposed).
    pub fn works(&self) -> bool {
        self.proposal != Proposal::Off && !self.cancelled
    }
}

/// Progress while the check runs.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase", tag = "event")]
pub enum CheckEvent {
    /// A probe starts: its place (from 1) among `total` so far planned.
    Probe {
        index: usize,
        total: usize,
        probe: String,
        title: String,
        mode: Mode,
    },
    /// A probe is done.
    Result { result: ProbeResult },
}

/// How the probes of one mode went: (all results, whether tools work in it).
struct Pass {
    results: Vec<ProbeResult>,
    works: bool,
    cancelled: bool,
}

/// Runs the check on `model` (see the module doc).
pub async fn check_model(
    llm: &dyn LlmClient,
    model: &str,
    on_event: &mut (dyn FnMut(CheckEvent) + Send),
    cancel: &CancellationToken,
) -> CheckReport {
    let details = llm.model_details(model).await.unwrap_or_default();
    let format = super::markup::of_model(model, &details);
    let cannot =
        !details.capabilities.is_empty() && !details.capabilities.iter().any(|c| c == "tools");
    let mut results = Vec::new();
    let mut proposal = Proposal::Off;
    let mut cancelled = false;
    for mode in [Mode::Native, Mode::Text] {
        if mode == Mode::Native && cannot {
            continue;
        }
        let pass = run_pass(llm, model, mode, format, on_event, cancel).await;
        results.extend(pass.results);
        cancelled = pass.cancelled;
        if pass.works {
            proposal = match mode {
                Mode::Native => Proposal::Native,
                Mode::Text => Proposal::Text,
            };
        }
        if pass.works || cancelled {
            break;
        }
    }
    CheckReport {
        model: model.to_string(),
        format: format.map(String::from),
        results,
        proposal,
        cancelled,
        checked_at: now_ms(),
    }
}

/// Every probe in one mode. Tools work in it when the one-call probe and the no-tool probe
/// pass; a server that refuses tools stops the pass at once.
async fn run_pass(
    llm: &dyn LlmClient,
    model: &str,
    mode: Mode,
    family: Option<FamilyId>,
    on_event: &mut (dyn FnMut(CheckEvent) + Send),
    cancel: &CancellationToken,
) -> Pass {
    let all = probes::all();
    let mut results = Vec::new();
    for (i, probe) in all.iter().enumerate() {
        if cancel.is_cancelled() {
            return Pass {
                results,
                works: false,
                cancelled: true,
            };
        }
        on_event(CheckEvent::Probe {
            index: i + 1,
            total: all.len(),
            probe: probe.id.into(),
            title: probe.title.into(),
            mode,
        });
        let result = run_probe(llm, model, mode, family, probe, cancel).await;
        // a probe cut short by the cancel says nothing about the model
        if cancel.is_cancelled() {
            return Pass {
                results,
                works: false,
                cancelled: true,
            };
        }
        on_event(CheckEvent::Result {
            result: result.clone(),
        });
        let refused = matches!(&result.outcome, Outcome::Failed { .. });
        results.push(result);
        if cancel.is_cancelled() {
            return Pass {
                results,
                works: false,
                cancelled: true,
            };
        }
        if refused {
            break;
        }
    }
    let passed = |id: &str| results.iter().any(|r| r.probe == id && r.passed);
    let works = passed("one_call") && passed("no_tool");
    Pass {
        results,
        works,
        cancelled: false,
    }
}

/// One probe: its request, the reply, its classification, its time.
async fn run_probe(
    llm: &dyn LlmClient,
    model: &str,
    mode: Mode,
    family: Option<FamilyId>,
    probe: &Probe,
    cancel: &CancellationToken,
) -> ProbeResult {
    let tools = probes::tools();
    let request = request(model, mode, &tools, probe);
    let started = Instant::now();
    let reply = llm.chat(&request, &mut |_| {}, cancel).await;
    let ms = started.elapsed().as_millis() as u64;
    let outcome = match reply {
        Err(e) => Outcome::Failed {
            message: refusal(&e),
        },
        Ok(r) => classify(&r.content, &r.tool_calls, &tools, family, &probe.expect),
    };
    let passed = matches!(
        (&probe.expect, &outcome),
        (Expect::NoCall, Outcome::NoCall)
            | (
                Expect::Calls(_),
                Outcome::Native | Outcome::Recovered { .. }
            )
    );
    ProbeResult {
        probe: probe.id.into(),
        title: probe.title.into(),
        mode,
        outcome,
        passed,
        ms,
    }
}

/// The request of a probe: the tools in the API's field, or described in the system prompt.
fn request(model: &str, mode: Mode, tools: &[ToolSpec], probe: &Probe) -> ChatRequest {
    let (system, offered) = match mode {
        Mode::Native => (probes::SYSTEM.to_string(), tools.to_vec()),
        Mode::Text => (
            format!(
                "{}\n\n{}",
                probes::SYSTEM,
                text_tools::describe_tools(tools, false)
            ),
            vec![],
        ),
    };
    ChatRequest {
        model: model.to_string(),
        messages: vec![
            Message::new(Role::System, system),
            Message::new(Role::User, probe.prompt),
        ],
        tools: offered,
        options: GenOptions {
            temperature: Some(0.0),
            ..Default::default()
        },
    }
}

/// A failed request, said short (a server that does not take tools says so).
fn refusal(e: &LlmError) -> String {
    match e {
        LlmError::Http {
            status: 400,
            message,
        } => format!("refused: {message}"),
        other => other.to_string(),
    }
}

/// What a reply did, for what the probe expects: its native calls win; else the calls written
/// in its text (any family's markup, the model's own first).
fn classify(
    text: &str,
    native: &[crate::llm::ToolCall],
    tools: &[ToolSpec],
    family: Option<FamilyId>,
    expect: &Expect,
) -> Outcome {
    let names: Vec<OfferedName> = tools
        .iter()
        .map(|t| OfferedName::from_exposed(&t.name))
        .collect();
    let (calls, how): (Vec<(String, Value)>, Outcome) = if !native.is_empty() {
        let calls = native
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect();
        (calls, Outcome::Native)
    } else {
        let offered = |n: &str| resolve::names_a_tool(n, &names);
        let schema = |n: &str| {
            let exposed = resolve::resolve(n, &names).exposed()?.to_string();
            tools
                .iter()
                .find(|t| t.name == exposed)
                .map(|t| t.parameters.clone())
        };
        let cx = Cx {
            offered: &offered,
            schema: &schema,
            quoted: None,
            family,
        };
        match recover_with(text, &cx).filter(|r| !r.calls.is_empty()) {
            Some(r) => {
                let family = r.calls[0].family.to_string();
                let calls = r.calls.into_iter().map(|c| (c.name, c.arguments)).collect();
                (calls, Outcome::Recovered { family })
            }
            None => (vec![], Outcome::NoCall),
        }
    };
    match expect {
        Expect::NoCall => match calls.first() {
            Some((name, _)) => Outcome::FalseCall { name: name.clone() },
            None => Outcome::NoCall,
        },
        Expect::Calls(_) if calls.is_empty() => Outcome::NoCall,
        Expect::Calls(want) => match wrong(&calls, want, tools, &names) {
            Some(detail) => Outcome::WrongArguments { detail },
            None => how,
        },
    }
}

/// What is wrong with `calls` for `want` (by resolved name, arguments repaired for the schema as
/// the loop would before running them), if anything.
fn wrong(
    calls: &[(String, Value)],
    want: &[(&str, Value)],
    tools: &[ToolSpec],
    names: &[OfferedName],
) -> Option<String> {
    let mut got: Vec<(String, Value)> = Vec::new();
    for (name, args) in calls {
        let Some(exposed) = resolve::resolve(name, names).exposed().map(String::from) else {
            return Some(format!("called {name}, which is not a tool on offer"));
        };
        let schema = tools
            .iter()
            .find(|t| t.name == exposed)
            .map(|t| t.parameters.clone())
            .unwrap_or(Value::Null);
        let args = match repair::repair(args, &schema) {
            Ok(r) => Value::Object(r.arguments),
            Err(problems) => {
                let what: Vec<String> = problems
                    .iter()
                    .map(|p| format!("{} wants {}, got {}", p.field, p.wants, p.got))
                    .collect();
                return Some(format!("{exposed}: {}", what.join("; ")));
            }
        };
        got.push((exposed, args));
    }
    if got.len() != want.len() {
        return Some(format!(
            "made {} of the {} calls asked for",
            got.len(),
            want.len()
        ));
    }
    for (name, args) in want {
        let hit = got
            .iter()
            .position(|(n, a)| n == name && probes::fits(a, args));
        match hit {
            Some(i) => {
                got.remove(i);
            }
            None => return Some(format!("no call to {name} with {args}")),
        }
    }
    None
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests;
