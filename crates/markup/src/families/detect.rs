//! Which family a model writes, from what its server says about it: the chat template (Ollama's
//! `/api/show` `template`, llama-server's `/props` `chat_template`) is the strongest sign, then
//! the model's name, then the family the server reports (Ollama's `details.family`).

use serde::Serialize;

use super::{by_id, FamilyId, ALL};

/// What is known of a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelFacts<'a> {
    pub name: &'a str,
    pub template: Option<&'a str>,
    pub family: Option<&'a str>,
}

/// Which sign told a model's family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Sign {
    /// Its chat template holds the family's markup.
    Template,
    /// Its name.
    Name,
    /// The family its server reports.
    Family,
    /// Learned from its chat template.
    Learned,
}

/// The tool-call format detected for a model, as the window shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFormat {
    /// The family's id (`hermes`, `qwen3_coder`…).
    pub id: FamilyId,
    /// As a person reads it (`Hermes / Qwen 2.5 (<tool_call>)`).
    pub name: &'static str,
    /// What told it.
    pub from: Sign,
    /// What its chat template taught, when it was analysed (also when its calls could not be
    /// learned: then why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned: Option<super::learned::Learning>,
}

/// The family whose signs fit the model best, and what told it; `None` when none fits.
pub fn tool_format(m: &ModelFacts) -> Option<ToolFormat> {
    let (id, from) = best(m)?;
    let f = by_id(id)?;
    Some(ToolFormat {
        id,
        name: f.name(),
        from,
        learned: None,
    })
}

/// The family whose signs fit the model best; `None` when none fits. Every text the template
/// must hold counts most (so Qwen3-Coder's `<tool_call>` + `<function=` beats Hermes'
/// `<tool_call>` alone), then the longest part of the name that fits (`qwen3-coder` beats
/// `qwen3`), then the reported family; a tie goes to the family registered first.
pub fn detect(m: &ModelFacts) -> Option<FamilyId> {
    best(m).map(|(id, _)| id)
}

fn best(m: &ModelFacts) -> Option<(FamilyId, Sign)> {
    let name = m.name.to_ascii_lowercase();
    let family = m.family.map(str::to_ascii_lowercase);
    let mut best: Option<(usize, FamilyId)> = None;
    for f in ALL {
        let d = f.detect();
        let mut score = 0;
        if let Some(t) = m.template {
            if !d.template.is_empty() && d.template.iter().all(|n| t.contains(n)) {
                score += TEMPLATE * d.template.len();
            }
        }
        score += 10
            * d.names
                .iter()
                .filter(|n| name.contains(*n))
                .map(|n| n.len())
                .max()
                .unwrap_or(0);
        if family
            .as_deref()
            .is_some_and(|fam| d.families.contains(&fam))
        {
            score += 5;
        }
        if score > 0 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, f.id()));
        }
    }
    best.map(|(score, id)| {
        let sign = if score >= TEMPLATE {
            Sign::Template
        } else if score >= 10 {
            Sign::Name
        } else {
            Sign::Family
        };
        (id, sign)
    })
}

/// What one text the template holds counts (more than any name).
const TEMPLATE: usize = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Option<FamilyId> {
        detect(&ModelFacts {
            name,
            ..Default::default()
        })
    }

    #[test]
    fn by_name() {
        for (name, want) in [
            ("qwen2.5:7b", "hermes"),
            ("qwen3-coder:30b", "qwen3_coder"),
            (
                "hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF",
                "qwen3_coder",
            ),
            ("llama3.1:8b", "llama3"),
            ("llama3.2:3b", "llama3"),
            ("llama4:scout", "pythonic"),
            ("mistral-nemo:12b", "mistral"),
            ("gemma3:4b", "gemma"),
            ("phi4-mini:3.8b", "phi4"),
            ("granite3.3:8b", "granite"),
            ("deepseek-r1:8b", "deepseek"),
            ("command-r7b", "command_r"),
            ("glm-4.6", "glm"),
            ("kimi-k2", "kimi"),
            ("gpt-oss:20b", "harmony"),
            ("functionary-small-v3.2", "functionary"),
            ("xlam-2-8b-fc-r", "xlam"),
            ("internlm2.5", "internlm"),
            ("jamba-mini", "jamba"),
            ("hunyuan-a13b", "hunyuan"),
            ("minimax-m2", "minimax"),
            ("seed-oss-36b", "seed_oss"),
        ] {
            assert_eq!(named(name), Some(want), "{name}");
        }
        assert_eq!(named("my-own-model"), None);
    }

    #[test]
    fn the_template_wins_over_the_name() {
        let m = ModelFacts {
            name: "my-finetune",
            template: Some("{% if tools %}<tool_call>\n<function=x>\n<parameter=y>{% endif %}"),
            family: Some("llama"),
        };
        assert_eq!(detect(&m), Some("qwen3_coder"));
        let m = ModelFacts {
            name: "qwen2.5-but-renamed",
            template: Some("<|start|>assistant<|channel|>final<|message|>"),
            family: None,
        };
        assert_eq!(detect(&m), Some("harmony"));
        let m = ModelFacts {
            name: "x",
            template: Some("{{ '<tool_call>' }}{{ tool_call | tojson }}{{ '</tool_call>' }}"),
            family: None,
        };
        assert_eq!(detect(&m), Some("hermes"));
        let m = ModelFacts {
            name: "x",
            template: Some("<tool_call>{{ name }}<arg_key>{{ k }}</arg_key>"),
            family: None,
        };
        assert_eq!(detect(&m), Some("glm"));
    }

    #[test]
    fn what_told_it_is_said() {
        let m = ModelFacts {
            name: "qwen2.5:7b",
            template: Some("{{ '<tool_call>' }}"),
            family: Some("qwen2"),
        };
        let f = tool_format(&m).unwrap();
        assert_eq!((f.id, f.from), ("hermes", Sign::Template));
        assert_eq!(f.name, "Hermes / Qwen 2.5 (<tool_call>)");
        let m = ModelFacts {
            name: "qwen2.5:7b",
            ..Default::default()
        };
        assert_eq!(tool_format(&m).unwrap().from, Sign::Name);
    }

    #[test]
    fn the_reported_family_alone() {
        let m = ModelFacts {
            name: "custom",
            template: None,
            family: Some("gemma3"),
        };
        assert_eq!(detect(&m), Some("gemma"));
    }
}
