//! What the loop asks of the markup layer (the `switchboard-markup` crate) about one model: the
//! family of tool-call markup it writes, from what its server says of it. Its chat template
//! (llama-server's `/props` `chat_template`, Jinja) is analysed first, once per template (the
//! crate keeps the analysis by the template's digest): a format learned from it goes first.
//! Without a template, or when nothing could be learned from it (Ollama's `template` is a Go
//! template, which is not rendered), the named families are detected from the template's text,
//! the model's name and its reported family.
//!
//! Each turn asks this of its model (`turn/open.rs`), from the details its server gave, which are
//! asked once per model (`model_details`); the template's analysis is kept by its digest, so this
//! is cheap. Native `tool_calls` always win over calls written in the text, whose text is still
//! cleaned (`stream.rs`).

use super::families::{by_id, detect, tool_format, FamilyId, ModelFacts, Sign, ToolFormat};
use super::template;
use crate::llm::ModelDetails;

/// The family of tool-call markup a model writes: the one learned from its chat template, else
/// the named family its template, name or reported family point to.
pub fn of_model(name: &str, details: &ModelDetails) -> Option<FamilyId> {
    learned(details)
        .and_then(|l| {
            l.family
                .filter(|_| l.calls.is_some() || l.thinking.is_some())
        })
        .or_else(|| detect(&facts(name, details)))
}

/// The tool-call format of a model, for the window: learned from its template when it could be
/// (what was learned goes with it), else the named family detected (with why the template
/// taught nothing, when it was analysed).
pub fn format_of_model(name: &str, details: &ModelDetails) -> Option<ToolFormat> {
    let learning = learned(details).map(|l| (*l).clone());
    if let Some(l) = learning.as_ref().filter(|l| l.calls.is_some()) {
        let id = l.family?;
        return Some(ToolFormat {
            id,
            name: by_id(id)?.name(),
            from: Sign::Learned,
            learned: learning,
        });
    }
    let mut f = tool_format(&facts(name, details))?;
    f.learned = learning;
    Some(f)
}

/// What the model's chat template taught, when the server gave one.
fn learned(details: &ModelDetails) -> Option<std::sync::Arc<template::Learning>> {
    details.template.as_deref().map(template::learn)
}

fn facts<'a>(name: &'a str, details: &'a ModelDetails) -> ModelFacts<'a> {
    ModelFacts {
        name,
        template: details.template.as_deref(),
        family: details.family.as_deref(),
    }
}
