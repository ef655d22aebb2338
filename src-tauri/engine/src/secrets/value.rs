//! What a config holds in a secret's place ([`SecretValue`]), and references to stored ones.

use super::*;

/// A value in a config that may be a secret.
///
/// In a file: a plain string, or `{"secret": "<store>:<id>"}`. From the window: a plain string
/// (a value typed), `{"newSecret": "…"}` (a value typed to be kept secret), or `{"secret": …}`
/// meaning "keep this field's current value" — whatever the string: the window never names a
/// stored secret, it can only keep the one a field has (see [`adopt`]).
#[derive(Clone, PartialEq, Eq)]
pub enum SecretValue {
    /// A value as it was typed. Secret for headers and API keys (moved into the store on the
    /// next save); for an environment variable, a value that is not secret.
    Plain(String),
    /// In the secret store; the reference (`keyring:<id>`, `file:<id>`).
    Stored(String),
    /// A value to store, from the window. Never written: saving stores it and writes a
    /// reference (and were it ever serialized, it would be written without its value).
    New(String),
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Repr {
    Plain(String),
    Stored {
        secret: String,
    },
    New {
        #[serde(rename = "newSecret")]
        new_secret: String,
    },
}

impl Serialize for SecretValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SecretValue::Plain(v) => Repr::Plain(v.clone()),
            SecretValue::Stored(r) => Repr::Stored { secret: r.clone() },
            // never the value
            SecretValue::New(_) => Repr::Stored {
                secret: "unsaved".into(),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SecretValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Plain(v) => SecretValue::Plain(v),
            Repr::Stored { secret } => SecretValue::Stored(secret),
            Repr::New { new_secret } => SecretValue::New(new_secret),
        })
    }
}

/// Never a value, so a config can be logged or shown in a test failure.
impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretValue::Plain(v) => write!(f, "Plain(<{} chars>)", v.chars().count()),
            SecretValue::Stored(r) => write!(f, "Stored({r})"),
            SecretValue::New(v) => write!(f, "New(<{} chars>)", v.chars().count()),
        }
    }
}

impl From<&str> for SecretValue {
    fn from(v: &str) -> Self {
        SecretValue::Plain(v.to_string())
    }
}

impl From<String> for SecretValue {
    fn from(v: String) -> Self {
        SecretValue::Plain(v)
    }
}

impl SecretValue {
    /// The value itself, when it is written in the config (not in the store).
    pub fn plain(&self) -> Option<&str> {
        match self {
            SecretValue::Plain(v) | SecretValue::New(v) => Some(v),
            SecretValue::Stored(_) => None,
        }
    }

    /// The reference, when it is in the store.
    pub fn reference(&self) -> Option<&str> {
        match self {
            SecretValue::Stored(r) => Some(r),
            _ => None,
        }
    }

    /// As a view for the window shows it: where a secret is, never what it is. `always`: the
    /// field is always secret (a header, an API key), so a plain value there is hidden too.
    /// `{"secret": "keyring" | "file" | "config"}` ("config": typed into the config file by
    /// hand, moved into the store on the next save); a plain value that is not secret as is.
    pub fn redacted(&self, always: bool) -> SecretValue {
        match self {
            SecretValue::Plain(v) if !always => SecretValue::Plain(v.clone()),
            SecretValue::Plain(_) => SecretValue::Stored("config".into()),
            SecretValue::Stored(r) => SecretValue::Stored(
                match parse_reference(r) {
                    Some((place, _)) => place.as_str(),
                    None => "unknown",
                }
                .into(),
            ),
            SecretValue::New(_) => SecretValue::Stored("unsaved".into()),
        }
    }

    /// As an export writes it: a plain value that is not secret as is, else [`EXPORT_PLACEHOLDER`].
    pub fn exported(&self, always: bool) -> String {
        match self {
            SecretValue::Plain(v) if !always => v.clone(),
            _ => EXPORT_PLACEHOLDER.into(),
        }
    }

    /// A value that came from a file someone else wrote (an import): plain text only. A reference
    /// (it could name one of this user's secrets) or the export placeholder is no value.
    pub fn from_import(v: &serde_json::Value) -> Option<SecretValue> {
        match v {
            serde_json::Value::String(s) if s == EXPORT_PLACEHOLDER => None,
            serde_json::Value::String(s) => Some(SecretValue::Plain(s.clone())),
            serde_json::Value::Null
            | serde_json::Value::Object(_)
            | serde_json::Value::Array(_) => None,
            other => Some(SecretValue::Plain(other.to_string())),
        }
    }
}

/// Where a stored secret is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    Keyring,
    File,
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Keyring => "keyring",
            Place::File => "file",
        }
    }
}

/// `keyring:<id>` / `file:<id>`; ids are letters, digits, `-` and `_`.
pub fn parse_reference(r: &str) -> Option<(Place, &str)> {
    let (place, id) = r.split_once(':')?;
    let place = match place {
        "keyring" => Place::Keyring,
        "file" => Place::File,
        _ => return None,
    };
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then_some((place, id))
}

/// Environment variable names that usually hold a secret (an imported server's are kept as
/// secrets; the window ticks "secret" for them as they are typed).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "CREDENTIAL",
        "AUTH",
        "PAT",
    ]
    .iter()
    .any(|w| upper.split('_').any(|part| part == *w) || upper.ends_with(w) && *w != "PAT")
}
