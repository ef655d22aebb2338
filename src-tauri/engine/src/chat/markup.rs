//! What the loop asks of the markup layer (the `switchboard-markup` crate) about one model: the
//! family of tool-call markup it writes, from what its server says of it.

use super::families::{detect, tool_format, FamilyId, ModelFacts, ToolFormat};
use crate::llm::ModelDetails;

/// The family of tool-call markup a model writes, from what its server says of it (its chat
/// template, its name, its reported family).
pub fn of_model(name: &str, details: &ModelDetails) -> Option<FamilyId> {
    detect(&facts(name, details))
}

/// The tool-call format detected for a model, from what its server says of it, for the window.
pub fn format_of_model(name: &str, details: &ModelDetails) -> Option<ToolFormat> {
    tool_format(&facts(name, details))
}

fn facts<'a>(name: &'a str, details: &'a ModelDetails) -> ModelFacts<'a> {
    ModelFacts {
        name,
        template: details.template.as_deref(),
        family: details.family.as_deref(),
    }
}
