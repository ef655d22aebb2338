//! Tool names as small models write them, resolved to the exposed names offered
//! (`server__tool`, as the host names them): without the server, with another separator
//! (`calculator.add`), with a `functions.` prefix, in other letter case. A guess is taken only
//! when exactly one offered tool fits; otherwise the model is told the closest names.

/// One offered tool: its exposed name and the server and tool behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferedName {
    pub exposed: String,
    pub server: String,
    pub tool: String,
}

impl OfferedName {
    pub fn new(exposed: &str, server: &str, tool: &str) -> Self {
        OfferedName {
            exposed: exposed.into(),
            server: server.into(),
            tool: tool.into(),
        }
    }

    /// From the exposed name alone, split at its first `__` (when the server and tool are not at
    /// hand; a hashed or unsplittable name is all tool).
    pub fn from_exposed(exposed: &str) -> Self {
        match exposed.split_once("__") {
            Some((s, t)) => Self::new(exposed, s, t),
            None => Self::new(exposed, "", exposed),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The name is an offered name as it is.
    Exact(String),
    /// The name fits exactly one offered tool; `how` says by which rule (for the log and card).
    Resolved { exposed: String, how: &'static str },
    /// The name fits several offered tools (sorted).
    Ambiguous(Vec<String>),
    /// The name fits none; up to five offered names, the most similar first.
    Unknown { closest: Vec<String> },
}

impl Resolution {
    /// The exposed name to call, when there is exactly one.
    pub fn exposed(&self) -> Option<&str> {
        match self {
            Resolution::Exact(e) | Resolution::Resolved { exposed: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// How many names an unknown name's message suggests.
const CLOSEST: usize = 5;
/// With this few tools on offer, an unknown name's message lists them all (most similar first):
/// a small model does better with the whole, short list.
const ALL_WHEN_AT_MOST: usize = 8;
/// Prefixes models put before a function name (OpenAI's `functions.` namespace and the like).
const PREFIXES: [&str; 4] = ["functions.", "function.", "tools.", "tool."];

/// `name` without a prefix models put before a function name ([`PREFIXES`], any letter case).
pub fn without_prefix(name: &str) -> &str {
    PREFIXES
        .iter()
        .find_map(|p| {
            // by `get`: a name cut inside a character is no match, never a panic
            let rest = name.get(p.len()..).filter(|r| !r.is_empty())?;
            name.get(..p.len())?.eq_ignore_ascii_case(p).then_some(rest)
        })
        .unwrap_or(name)
}

/// Resolves `name` against the offered tools. The rules are tried in order (exact; other letter
/// case; without a `functions.` prefix; another separator between server and tool; the tool name
/// without the server), and the first rule that fits any tool decides: one tool → resolved,
/// several → ambiguous.
pub fn resolve(name: &str, offered: &[OfferedName]) -> Resolution {
    let name = name.trim();
    if offered.iter().any(|o| o.exposed == name) {
        return Resolution::Exact(name.to_string());
    }
    let bare = without_prefix(name);
    let key = canon(bare);
    type Rule<'a> = (&'static str, Box<dyn Fn(&OfferedName) -> bool + 'a>);
    let rules: [Rule; 4] = [
        (
            "letter case",
            Box::new(|o| o.exposed.eq_ignore_ascii_case(name)),
        ),
        (
            "functions. prefix",
            Box::new(|o| bare != name && o.exposed.eq_ignore_ascii_case(bare)),
        ),
        (
            "separator",
            Box::new(|o| {
                !key.is_empty()
                    && (key == canon(&o.exposed)
                        || key == canon(&format!("{}_{}", o.server, o.tool)))
            }),
        ),
        (
            "tool name without the server",
            Box::new(|o| !key.is_empty() && key == canon(&o.tool)),
        ),
    ];
    for (how, fits) in rules {
        let mut hits: Vec<String> = offered
            .iter()
            .filter(|o| fits(o))
            .map(|o| o.exposed.clone())
            .collect();
        hits.sort();
        hits.dedup();
        match hits.len() {
            0 => continue,
            1 => {
                return Resolution::Resolved {
                    exposed: hits.remove(0),
                    how,
                }
            }
            _ => return Resolution::Ambiguous(hits),
        }
    }
    Resolution::Unknown {
        closest: closest(&key, offered),
    }
}

/// Whether `name` names an offered tool, possibly ambiguously: the predicate for
/// [`super::recover::recover`] (an ambiguous call is still a call, and the model is then told
/// which names it could mean).
pub fn names_a_tool(name: &str, offered: &[OfferedName]) -> bool {
    !matches!(resolve(name, offered), Resolution::Unknown { .. })
}

/// What the model reads when its tool name did not resolve; `None` when it did.
pub fn message_for_model(name: &str, resolution: &Resolution) -> Option<String> {
    let name = name.trim();
    match resolution {
        Resolution::Exact(_) | Resolution::Resolved { .. } => None,
        Resolution::Ambiguous(names) => Some(format!(
            "Tool name \"{name}\" is ambiguous: it could be {}. Call one of them by its exact name.",
            names.join(" or ")
        )),
        Resolution::Unknown { closest } if closest.is_empty() => Some(format!(
            "Unknown tool \"{name}\". No tools are offered: answer without tools."
        )),
        Resolution::Unknown { closest } => Some(format!(
            "Unknown tool \"{name}\". The closest tools offered: {}. Call one of them by its exact name.",
            closest.join(", ")
        )),
    }
}

/// A name reduced for comparison: lower case, every run of other characters than letters and
/// digits one `_`, none at the ends, camelCase split. `Calculator.Add`, `calculator/add`,
/// `calculatorAdd` and `calculator__add` all become `calculator_add`.
fn canon(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    let mut prev = ' ';
    for c in s.chars() {
        if c.is_alphanumeric() {
            // camelCase: `readFile` is `read_file`
            if c.is_uppercase() && (prev.is_lowercase() || prev.is_ascii_digit()) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
        prev = c;
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The offered names most similar to `key` (already [`canon`]ical): Jaro-Winkler against the
/// whole name and against the tool part (models often drop or misspell the server), with a bonus
/// when one contains the other.
fn closest(key: &str, offered: &[OfferedName]) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = offered
        .iter()
        .map(|o| {
            let (whole, tool) = (canon(&o.exposed), canon(&o.tool));
            let mut s = strsim::jaro_winkler(key, &whole).max(strsim::jaro_winkler(key, &tool));
            if !key.is_empty() && (whole.contains(key) || (!tool.is_empty() && key.contains(&tool)))
            {
                s += 0.2;
            }
            (s, o.exposed.as_str())
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let mut out: Vec<String> = Vec::new();
    for (_, name) in scored {
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
        if out.len() == CLOSEST && offered.len() > ALL_WHEN_AT_MOST {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> Vec<OfferedName> {
        [
            "calculator__add",
            "calculator__subtract",
            "calculator__multiply",
            "calculator__divide",
            "files__read_file",
            "files__write_file",
            "files__list_files",
            "math__divide",
        ]
        .iter()
        .map(|e| OfferedName::from_exposed(e))
        .collect()
    }

    fn resolved(name: &str) -> (String, &'static str) {
        match resolve(name, &offered()) {
            Resolution::Resolved { exposed, how } => (exposed, how),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn exact_names_are_exact() {
        assert_eq!(
            resolve(" calculator__add ", &offered()),
            Resolution::Exact("calculator__add".into())
        );
    }

    #[test]
    fn a_name_with_a_character_across_a_prefixs_end_is_no_call_and_no_panic() {
        // "functio" + "ñ" puts a two-byte character across byte 9 ("tool." and "function."'s
        // end) and byte 10 ("functions."'s)
        for name in ["functioñs.add", "functioñ", "toolñ.add", "ñ"] {
            assert!(
                !matches!(resolve(name, &offered()), Resolution::Exact(_)),
                "{name}"
            );
        }
    }

    #[test]
    fn near_names_resolve_when_one_tool_fits() {
        for (name, how) in [
            ("Calculator__Add", "letter case"),
            ("functions.calculator__add", "functions. prefix"),
            ("Functions.CALCULATOR__ADD", "functions. prefix"),
            ("calculator.add", "separator"),
            ("calculator_add", "separator"),
            ("calculator/add", "separator"),
            ("calculator:add", "separator"),
            ("calculator-add", "separator"),
            ("calculator add", "separator"),
            ("add", "tool name without the server"),
            ("functions.add", "tool name without the server"),
            ("ADD", "tool name without the server"),
        ] {
            assert_eq!(resolved(name), ("calculator__add".into(), how), "{name}");
        }
        assert_eq!(resolved("read_file").0, "files__read_file");
        assert_eq!(
            resolved("readFile").0,
            "files__read_file",
            "camelCase is another case"
        );
    }

    #[test]
    fn a_server_name_with_other_characters_still_resolves() {
        let offered = vec![OfferedName::new(
            "my_server__get_time",
            "my server",
            "get.time",
        )];
        for name in [
            "my server.get.time",
            "my-server.get_time",
            "get.time",
            "GET_TIME",
        ] {
            assert_eq!(
                resolve(name, &offered).exposed(),
                Some("my_server__get_time"),
                "{name}"
            );
        }
    }

    #[test]
    fn two_fitting_tools_are_ambiguous() {
        assert_eq!(
            resolve("divide", &offered()),
            Resolution::Ambiguous(vec!["calculator__divide".into(), "math__divide".into()])
        );
        let msg = message_for_model("divide", &resolve("divide", &offered())).unwrap();
        assert_eq!(msg, "Tool name \"divide\" is ambiguous: it could be calculator__divide or math__divide. Call one of them by its exact name.");
        assert!(names_a_tool("divide", &offered()));
    }

    #[test]
    fn unknown_names_get_the_closest_offered_names() {
        let r = resolve("adder", &offered());
        let Resolution::Unknown { closest } = &r else {
            panic!("{r:?}")
        };
        assert_eq!(
            closest.len(),
            8,
            "a few tools: all of them, the closest first"
        );
        assert_eq!(closest[0], "calculator__add");
        let many: Vec<OfferedName> = (0..12)
            .map(|i| OfferedName::from_exposed(&format!("s{i}__tool{i}")))
            .collect();
        let Resolution::Unknown { closest: five } = resolve("adder", &many) else {
            panic!()
        };
        assert_eq!(five.len(), 5, "many tools: the five closest");
        let msg = message_for_model("adder", &r).unwrap();
        assert!(
            msg.starts_with("Unknown tool \"adder\". The closest tools offered: calculator__add, "),
            "{msg}"
        );
        assert!(msg.ends_with(". Call one of them by its exact name."));
        let Resolution::Unknown { closest } = resolve("read_files", &offered()) else {
            panic!()
        };
        assert!(
            closest[..2].contains(&"files__read_file".to_string()),
            "{closest:?}"
        );
        assert!(!names_a_tool("weather", &offered()));
        assert_eq!(resolve("x", &[]), Resolution::Unknown { closest: vec![] });
        assert!(message_for_model("x", &resolve("x", &[]))
            .unwrap()
            .contains("No tools are offered"));
        assert_eq!(message_for_model("add", &resolve("add", &offered())), None);
        assert_eq!(
            resolve("", &offered()),
            Resolution::Unknown {
                closest: closest_of("")
            }
        );
    }

    fn closest_of(name: &str) -> Vec<String> {
        closest(&canon(name), &offered())
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(canon("Calculator.Add"), "calculator_add");
        assert_eq!(canon("__a--b__"), "a_b");
        assert_eq!(canon("..."), "");
        assert_eq!(canon("readFile2Go"), "read_file2_go");
    }
}
