//! The form an install asks the user to fill: fields made from a registry entry's inputs or a
//! bundle's `user_config`, and the values given for them (from the window, or `--set KEY=VALUE`),
//! checked before anything is built or saved. Below both `registry` (which installs bundles) and
//! `bundle`, with the two small things they share: what a pinned version is, and a random tag.
//!
//! What a pinned version is: `is_one_version`; the tag: `random_tag` (install tokens, staging
//! folders). Versions must be exact: a range or `latest` is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

/// The longest value a field takes.
pub const MAX_VALUE: usize = 8 * 1024;

/// One thing to ask.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Field {
    /// Unique in its form: what the window sends back and `--set` names.
    pub key: String,
    pub label: String,
    pub description: Option<String>,
    pub kind: FieldKind,
    /// For `choice`: the values allowed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    pub required: bool,
    /// Kept in the secret store, masked in the form and the preview.
    pub secret: bool,
    /// Several values (a repeated argument, several folders).
    pub multiple: bool,
    pub default: Option<Value>,
    pub placeholder: Option<String>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Where the value goes (worded by the window).
    pub target: Target,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FieldKind {
    Text,
    Number,
    Boolean,
    Choice,
    /// A path on this computer; what the user picks becomes a sandbox grant.
    File,
    Directory,
    /// A file or a folder (a registry input of format `filepath`).
    Path,
}

/// Where a field's value ends up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "camelCase")]
pub enum Target {
    Env(String),
    Header(String),
    Argument(String),
    /// A part of a remote's URL.
    Url,
    /// A bundle's setting, used wherever its manifest says.
    Setting(String),
}

/// A value as given, checked against its field.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    Text(String),
    List(Vec<String>),
    Bool(bool),
    /// A secret field's stored value, kept (an update).
    Keep,
}

impl Given {
    /// As text: a list joined with commas, a boolean as `true`/`false`.
    pub fn text(&self) -> String {
        match self {
            Given::Text(t) => t.clone(),
            Given::List(l) => l.join(","),
            Given::Bool(b) => b.to_string(),
            Given::Keep => String::new(),
        }
    }

    /// As separate values (a repeated argument).
    pub fn items(&self) -> Vec<String> {
        match self {
            Given::List(l) => l.clone(),
            other => vec![other.text()],
        }
    }
}

/// A value that does not fit its field (or a value for no field).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message}")]
pub struct FormError {
    /// The field's key (empty: the form as a whole).
    pub field: String,
    pub message: String,
}

fn err<T>(field: &Field, message: impl Into<String>) -> Result<T, FormError> {
    Err(FormError {
        field: field.key.clone(),
        message: message.into(),
    })
}

/// The values for `fields`, checked: each known, of its kind, within its limits, given when
/// required (a default counts); a secret may be kept only when `keepable` says it has a value.
/// Fields with no value are left out.
pub fn read_values(
    fields: &[Field],
    values: &BTreeMap<String, Value>,
    keepable: &dyn Fn(&Field) -> bool,
    home: Option<&Path>,
) -> Result<BTreeMap<String, Given>, FormError> {
    if let Some(k) = values.keys().find(|k| !fields.iter().any(|f| &f.key == *k)) {
        let known: Vec<&str> = fields.iter().map(|f| f.key.as_str()).collect();
        return Err(FormError {
            field: String::new(),
            message: if known.is_empty() {
                format!("\"{k}\" is not a setting of this server: it has none.")
            } else {
                format!(
                    "\"{k}\" is not a setting of this server; its settings are: {}.",
                    known.join(", ")
                )
            },
        });
    }
    let mut out = BTreeMap::new();
    for f in fields {
        let v = values.get(&f.key).or(f.default.as_ref());
        let given = match v {
            None | Some(Value::Null) => None,
            Some(v) => read_one(f, v, keepable, home)?,
        };
        match given {
            Some(g) => {
                out.insert(f.key.clone(), g);
            }
            None if f.required => return err(f, format!("{} is needed.", f.label)),
            None => {}
        }
    }
    Ok(out)
}

/// One value; `None` when it is empty.
fn read_one(
    f: &Field,
    v: &Value,
    keepable: &dyn Fn(&Field) -> bool,
    home: Option<&Path>,
) -> Result<Option<Given>, FormError> {
    if let Value::Object(o) = v {
        if o.contains_key("secret") && f.secret {
            return if keepable(f) {
                Ok(Some(Given::Keep))
            } else {
                err(f, format!("{} has no value to keep: enter one.", f.label))
            };
        }
        return err(f, format!("{} takes text, not an object.", f.label));
    }
    if f.kind == FieldKind::Boolean {
        return match v {
            Value::Bool(b) => Ok(Some(Given::Bool(*b))),
            Value::String(s) if s == "true" || s == "false" => Ok(Some(Given::Bool(s == "true"))),
            Value::String(s) if s.is_empty() => Ok(None),
            _ => err(f, format!("{} is yes or no (true or false).", f.label)),
        };
    }
    let items: Vec<String> = match v {
        Value::Array(a) if f.multiple => a
            .iter()
            .map(scalar_text)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| FormError {
                field: f.key.clone(),
                message: format!("{} takes a list of text values.", f.label),
            })?,
        Value::Array(_) => return err(f, format!("{} takes one value, not a list.", f.label)),
        other => match scalar_text(other) {
            // a comma-separated list where several are allowed (the command line's --set)
            Some(t) if f.multiple && matches!(f.kind, FieldKind::Directory | FieldKind::File) => {
                t.split(',').map(str::to_string).collect()
            }
            Some(t) => vec![t],
            None => return err(f, format!("{} takes text.", f.label)),
        },
    };
    let items: Vec<String> = items.into_iter().filter(|s| !s.is_empty()).collect();
    if items.is_empty() {
        return Ok(None);
    }
    let mut checked = Vec::with_capacity(items.len());
    for item in items {
        checked.push(check_item(f, item, home)?);
    }
    Ok(Some(if f.multiple {
        Given::List(checked)
    } else {
        Given::Text(checked.remove(0))
    }))
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn check_item(f: &Field, item: String, home: Option<&Path>) -> Result<String, FormError> {
    if item.len() > MAX_VALUE {
        return err(
            f,
            format!("{} is too long (at most {MAX_VALUE} bytes).", f.label),
        );
    }
    if item.contains('\0') {
        return err(f, format!("{} cannot contain a NUL character.", f.label));
    }
    match f.kind {
        FieldKind::Number => {
            let n: f64 = item
                .trim()
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite())
                .ok_or_else(|| FormError {
                    field: f.key.clone(),
                    message: format!("{} is a number.", f.label),
                })?;
            if f.min.is_some_and(|m| n < m) || f.max.is_some_and(|m| n > m) {
                return err(f, format!("{} is {}.", f.label, range_words(f.min, f.max)));
            }
            Ok(item.trim().to_string())
        }
        FieldKind::Choice if !f.choices.contains(&item) => err(
            f,
            format!("{} is one of: {}.", f.label, f.choices.join(", ")),
        ),
        FieldKind::File | FieldKind::Directory | FieldKind::Path => {
            let p = expand_home(item.trim(), home);
            if !p.is_absolute() {
                return err(
                    f,
                    format!(
                        "{}: \"{item}\" is not a full path (it starts with / or ~/).",
                        f.label
                    ),
                );
            }
            // a file may be one not made yet (a database its server creates), in a folder
            // that exists
            let new_file = !p.exists() && p.parent().is_some_and(|d| d.is_dir());
            let ok = match f.kind {
                FieldKind::Directory => p.is_dir(),
                FieldKind::File => p.is_file() || new_file,
                _ => p.exists() || new_file,
            };
            if !ok {
                let what = match f.kind {
                    FieldKind::Directory => "an existing folder",
                    FieldKind::File => "a file in an existing folder",
                    _ => "an existing folder, or a file in one",
                };
                return err(f, format!("{}: {} is not {what}.", f.label, p.display()));
            }
            Ok(p.display().to_string())
        }
        _ => Ok(item),
    }
}

fn range_words(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("from {a} to {b}"),
        (Some(a), None) => format!("at least {a}"),
        (None, Some(b)) => format!("at most {b}"),
        (None, None) => "a number".into(),
    }
}

/// `~` and `~/x` → under `home`; anything else as is.
pub fn expand_home(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix('~'), home) {
        (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
            h.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(p),
    }
}

/// A version string that names one version: not empty, not `latest`, no range or wildcard.
pub fn is_one_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 255
        && v != "latest"
        && !v.starts_with('-')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
        && !v.split('.').any(|p| p == "x" || p == "X")
}

/// An npm version that names one release: a whole semver version (`1.2.3`, `1.2.3-beta.1`),
/// never a dist-tag (`latest`, `next`), a range or a partial version (`1`, `1.2`, `^1.2.3`,
/// `1.x`), each of which npx resolves to whatever is newest when it runs.
pub fn is_exact_npm_version(v: &str) -> bool {
    v.len() <= 255 && semver::Version::parse(v).is_ok()
}

/// A PyPI version that names one release, as `uvx pkg@v` (`pkg==v`) takes it: a PEP 440 version
/// in its canonical form (`1.2.3`, `2025.4.7`, `1.0rc1`, `1.0.post2`, `1!2.0`, `1.0+local`),
/// never a word (`latest`, `next`), a range or a wildcard. A release of fewer parts (`0.5`) is a
/// whole version in PEP 440 (`==0.5` matches only 0.5, equal to 0.5.0), unlike npm's.
pub fn is_exact_pypi_version(v: &str) -> bool {
    fn digits(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    }
    if v.is_empty() || v.len() > 255 {
        return false;
    }
    let (public, local) = match v.split_once('+') {
        Some((p, l)) => (p, Some(l)),
        None => (v, None),
    };
    if let Some(l) = local {
        let ok = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric());
        if !l.split('.').all(ok) {
            return false;
        }
    }
    let rest = match public.split_once('!') {
        Some((epoch, r)) if digits(epoch) => r,
        Some(_) => return false,
        None => public,
    };
    // N(.N)* then [a|b|rc N] then [.post N] then [.dev N]
    let mut rest = rest;
    for suffix in [".dev", ".post"] {
        if let Some((r, n)) = rest.rsplit_once(suffix) {
            if !digits(n) {
                return false;
            }
            rest = r;
        }
    }
    let release_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (release, pre) = rest.split_at(release_end);
    if !release.split('.').all(digits) {
        return false;
    }
    pre.is_empty()
        || ["a", "b", "rc"]
            .iter()
            .any(|k| pre.strip_prefix(k).is_some_and(digits))
}

/// A NuGet version that names one release: one version (`is_one_version`) beginning with a
/// digit (never a word such as `latest`).
pub fn is_exact_nuget_version(v: &str) -> bool {
    is_one_version(v) && v.starts_with(|c: char| c.is_ascii_digit())
}

/// A random hex tag (staging folders, install tokens).
pub fn random_tag() -> String {
    let mut b = [0u8; 12];
    getrandom::fill(&mut b).expect("the system's random numbers");
    b.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_exact_version_is_one_release_and_nothing_else() {
        for v in ["1.2.3", "0.0.1", "1.2.3-beta.1", "1.2.3+build.5"] {
            assert!(is_exact_npm_version(v), "{v}");
        }
        for v in [
            "latest", "next", "1", "1.2", "^1.2.3", "~1.2.3", "1.x", ">=1.0.0", "*", "", "v1.2.3",
        ] {
            assert!(!is_exact_npm_version(v), "{v}");
        }
        for v in [
            "1.2.3",
            "0.5",
            "2025.4.7",
            "1.0rc1",
            "1.0a2",
            "1.0.post2",
            "1.0.dev3",
            "1!2.0",
            "1.0+local.7",
        ] {
            assert!(is_exact_pypi_version(v), "{v}");
        }
        for v in [
            "latest", "next", "", "1.*", ">=1.0", "~=1.2", "1.2,<2", "1..2", ".1", "1.", "1.0rc",
            "1.0beta1", "v1.0", "1.0+",
        ] {
            assert!(!is_exact_pypi_version(v), "{v}");
        }
        assert!(is_exact_nuget_version("0.4.0"));
        assert!(!is_exact_nuget_version("latest") && !is_exact_nuget_version("preview"));
    }

    fn field(key: &str, kind: FieldKind) -> Field {
        Field {
            key: key.into(),
            label: key.into(),
            description: None,
            kind,
            choices: vec![],
            required: false,
            secret: false,
            multiple: false,
            default: None,
            placeholder: None,
            min: None,
            max: None,
            target: Target::Env(key.into()),
        }
    }

    fn read(fields: &[Field], v: Value) -> Result<BTreeMap<String, Given>, FormError> {
        let values: BTreeMap<String, Value> = serde_json::from_value(v).unwrap();
        read_values(fields, &values, &|_| false, Some(Path::new("/home/u")))
    }

    #[test]
    fn values_are_checked_against_their_fields() {
        let mut n = field("port", FieldKind::Number);
        n.min = Some(1.0);
        n.max = Some(65535.0);
        let mut c = field("mode", FieldKind::Choice);
        c.choices = vec!["a".into(), "b".into()];
        let mut r = field("key", FieldKind::Text);
        r.required = true;
        r.secret = true;
        let mut d = field("level", FieldKind::Text);
        d.default = Some(json!("info"));
        let fields = [n, c, r, d, field("flag", FieldKind::Boolean)];
        let ok = read(
            &fields,
            json!({"port": "8080", "mode": "b", "key": "s3", "flag": true}),
        )
        .unwrap();
        assert_eq!(ok["port"], Given::Text("8080".into()));
        assert_eq!(ok["level"], Given::Text("info".into()), "the default");
        assert_eq!(ok["flag"], Given::Bool(true));
        for (bad, field) in [
            (json!({"port": "70000", "key": "k"}), "port"),
            (json!({"port": "x", "key": "k"}), "port"),
            (json!({"mode": "c", "key": "k"}), "mode"),
            (json!({}), "key"),
            (json!({"key": ""}), "key"),
            (json!({"key": {"secret": "keyring"}}), "key"),
            (json!({"key": "a\u{0}b"}), "key"),
            (json!({"key": "k", "flag": "maybe"}), "flag"),
            (json!({"key": "k", "nope": "1"}), ""),
        ] {
            let e = read(&fields, bad.clone()).unwrap_err();
            assert_eq!(e.field, field, "{bad}: {e}");
        }
    }

    #[test]
    fn paths_are_full_and_exist_and_lists_only_where_several_are_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let mut folders = field("dirs", FieldKind::Directory);
        folders.multiple = true;
        let file = field("db", FieldKind::File);
        let fields = [folders, file];
        let d = dir.path().display().to_string();
        let got = read(&fields, json!({"dirs": [d.clone(), d.clone()]})).unwrap();
        assert_eq!(got["dirs"], Given::List(vec![d.clone(), d.clone()]));
        assert_eq!(
            read(&fields, json!({"dirs": format!("{d},{d}")})).unwrap()["dirs"],
            Given::List(vec![d.clone(), d.clone()]),
            "a comma-separated list from the command line"
        );
        assert_eq!(
            read(&fields, json!({"dirs": "rel/x"})).unwrap_err().field,
            "dirs"
        );
        assert_eq!(
            read(&fields, json!({"dirs": format!("{d}/missing")}))
                .unwrap_err()
                .field,
            "dirs"
        );
        assert_eq!(
            read(&fields, json!({"db": d})).unwrap_err().field,
            "db",
            "a folder is no file"
        );
        // a file not made yet, in a folder that exists: its server may create it
        let new = format!("{d}/new.db");
        assert_eq!(
            read(&fields, json!({ "db": new })).unwrap()["db"],
            Given::Text(new.clone())
        );
        assert_eq!(
            read(&fields, json!({"db": format!("{d}/no/new.db")}))
                .unwrap_err()
                .field,
            "db",
            "its folder must exist"
        );
        assert_eq!(
            read(&fields, json!({"db": ["/a"]})).unwrap_err().field,
            "db"
        );
    }
}
