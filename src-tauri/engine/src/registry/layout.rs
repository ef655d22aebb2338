//! A package's or a remote's inputs laid out once: the form's fields, and where each field's
//! value goes (an argument, an environment variable, a header, the URL). The same layout gives
//! the form and, with the values, the config, so the two can never disagree on a key.
//!
//! The inputs: `environmentVariables`, `packageArguments`, `runtimeArguments`, remote `headers` and
//! URL `variables`; a field has required, default, choices, format, `isSecret`. `read_values`
//! checks what the user gave (the window's form, or `--set`). A secret asked for on the command
//! line is refused (argv is readable by every program). A path field has no default (a publisher's
//! default is the placeholder; `bundle::form` does the same).

use std::collections::BTreeMap;

use serde_json::json;

use super::server_json::{Argument, Input, KeyValueInput, Package, TransportSpec};
use crate::form::{Field, FieldKind, Target};

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The user's value for the field with this key.
    Field(String),
    /// A fixed text whose `{name}`s are filled from fields (`(name, key)`).
    Fixed {
        template: String,
        vars: Vec<(String, String)>,
    },
}

/// One command-line argument.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// Its value(s) as is; repeated: one argument per value.
    Positional { value: Source, repeated: bool },
    /// `--flag=value` (`-f value` for a short flag); `flag`: a flag with no value, given as is;
    /// `boolean`: the flag alone when the user says yes.
    Named {
        name: String,
        value: Option<Source>,
        repeated: bool,
        boolean: bool,
    },
}

/// An environment variable or a header.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub name: String,
    pub value: Source,
    pub secret: bool,
}

/// The inputs of one way to get the server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layout {
    pub fields: Vec<Field>,
    pub runtime_args: Vec<Arg>,
    pub package_args: Vec<Arg>,
    pub env: Vec<Pair>,
    pub headers: Vec<Pair>,
    /// A remote's URL template.
    pub url: Option<Source>,
    /// Why this way cannot be installed as it is described, when it cannot.
    pub refused: Option<String>,
}

impl Layout {
    pub fn of_package(p: &Package) -> Layout {
        let mut l = Layout::default();
        for a in &p.runtime_arguments {
            let arg = l.argument(a);
            l.runtime_args.extend(arg);
        }
        for a in &p.package_arguments {
            let arg = l.argument(a);
            l.package_args.extend(arg);
        }
        for e in &p.environment_variables {
            let pair = l.pair(e, Target::Env(e.name.clone()));
            l.env.push(pair);
        }
        l
    }

    pub fn of_remote(r: &TransportSpec) -> Layout {
        let mut l = Layout::default();
        if let Some(url) = &r.url {
            let mut vars = Vec::new();
            for (name, input) in &r.variables {
                if input.is_secret {
                    l.refuse("it puts a secret in its address");
                }
                let key = l.field(name, name, input, Target::Url, false);
                vars.push((name.clone(), key));
            }
            l.url = Some(Source::Fixed {
                template: url.clone(),
                vars,
            });
        }
        for h in &r.headers {
            let pair = l.pair(h, Target::Header(h.name.clone()));
            l.headers.push(pair);
        }
        l
    }

    fn refuse(&mut self, why: &str) {
        if self.refused.is_none() {
            self.refused = Some(why.to_string());
        }
    }

    /// A field for `input`; its key.
    fn field(
        &mut self,
        key: &str,
        label: &str,
        input: &Input,
        target: Target,
        multiple: bool,
    ) -> String {
        // a key of its own: one used already gets -2, -3, …
        let taken = |k: &str| self.fields.iter().any(|f| f.key == k);
        let key = if taken(key) {
            (2..)
                .map(|n| format!("{key}-{n}"))
                .find(|k| !taken(k))
                .unwrap_or_default()
        } else {
            key.to_string()
        };
        let kind = if !input.choices.is_empty() {
            FieldKind::Choice
        } else {
            match input.format.as_deref() {
                Some("number") => FieldKind::Number,
                Some("boolean") => FieldKind::Boolean,
                Some("filepath") => FieldKind::Path,
                _ => FieldKind::Text,
            }
        };
        let default = input.default.as_ref().map(|d| match kind {
            FieldKind::Boolean => json!(d == "true"),
            _ if multiple => json!([d]),
            _ => json!(d),
        });
        // a path becomes a place the server may write: the entry's default is a suggestion,
        // never given for the user
        let (default, placeholder) = match kind {
            FieldKind::Path => (
                None,
                input
                    .placeholder
                    .clone()
                    .or_else(|| input.default.as_ref().map(|d| format!("e.g. {d}"))),
            ),
            _ => (default, input.placeholder.clone()),
        };
        self.fields.push(Field {
            key: key.clone(),
            label: label.to_string(),
            description: input.description.clone(),
            kind,
            choices: input.choices.clone(),
            required: input.is_required,
            secret: input.is_secret,
            multiple,
            default,
            placeholder,
            min: None,
            max: None,
            target,
        });
        key
    }

    /// Where an input's value comes from: a fixed value (its variables asked), or the user.
    fn source(
        &mut self,
        key: &str,
        label: &str,
        input: &Input,
        target: Target,
        multiple: bool,
    ) -> Source {
        match &input.value {
            Some(template) => {
                let mut vars = Vec::new();
                for (name, v) in &input.variables {
                    let k = self.field(name, name, v, target.clone(), false);
                    vars.push((name.clone(), k));
                }
                Source::Fixed {
                    template: template.clone(),
                    vars,
                }
            }
            None => Source::Field(self.field(key, label, input, target, multiple)),
        }
    }

    /// Whether any value of this input is a secret.
    fn any_secret(input: &Input) -> bool {
        input.is_secret || input.variables.values().any(|v| v.is_secret)
    }

    fn argument(&mut self, a: &Argument) -> Option<Arg> {
        if Self::any_secret(&a.input) {
            self.refuse(
                "it passes a secret on the command line, where other programs on this computer can read it",
            );
        }
        match a.kind.as_str() {
            "positional" => {
                let hint = a.value_hint.clone().unwrap_or_else(|| "argument".into());
                let target = Target::Argument(hint.clone());
                Some(Arg::Positional {
                    value: self.source(&hint, &hint, &a.input, target, a.is_repeated),
                    repeated: a.is_repeated,
                })
            }
            "named" => {
                let Some(name) = a.name.clone().filter(|n| !n.trim().is_empty()) else {
                    self.refuse("one of its named arguments has no name");
                    return None;
                };
                let i = &a.input;
                let bare = i.value.is_none()
                    && i.default.is_none()
                    && i.description.is_none()
                    && i.choices.is_empty()
                    && i.format.is_none()
                    && !i.is_required;
                let boolean = i.value.is_none() && i.format.as_deref() == Some("boolean");
                let key = name.trim_start_matches('-').to_string();
                let target = Target::Argument(name.clone());
                // a flag that asks nothing (`--stdio`) is given as it is
                let value = (!bare).then(|| self.source(&key, &name, i, target, a.is_repeated));
                Some(Arg::Named {
                    name,
                    value,
                    repeated: a.is_repeated,
                    boolean,
                })
            }
            other => {
                self.refuse(&format!(
                    "it has an argument of a type Switchboard does not know (\"{other}\")"
                ));
                None
            }
        }
    }

    fn pair(&mut self, kv: &KeyValueInput, target: Target) -> Pair {
        let secret = Self::any_secret(&kv.input);
        Pair {
            name: kv.name.clone(),
            value: self.source(&kv.name, &kv.name, &kv.input, target, false),
            secret,
        }
    }
}

/// The fields' keys by the name their template uses.
pub fn var_keys(vars: &[(String, String)]) -> BTreeMap<&str, &str> {
    vars.iter().map(|(n, k)| (n.as_str(), k.as_str())).collect()
}
