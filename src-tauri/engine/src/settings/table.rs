//! The table of bounded settings ([`ROWS`]): each row is a bound of `crate::limits` (key, label,
//! range, step, default) and how it reads and writes its `Settings` field. `Settings::check`
//! refuses, and `Settings::load` repairs, by going through it; the window gets it as
//! [`schema`] (the `setting_limits` command) and sets its inputs' bounds and checks from it. To
//! add a bounded setting: its bound in `limits.rs`, its field in `Settings`, its row here.
//!
//! The settings that take one of a few values (an enum) are [`CHOICES`]: their values come from
//! the enum (serde refuses any other, and `load` keeps the default for it); the window's select
//! for one must offer exactly these (`tests/it/settings_form.rs`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::Settings;
use crate::limits::{self, Limit};

/// One bounded setting: its bound, and its field (read, and written by the repair).
pub struct Row {
    pub limit: Limit,
    read: fn(&Settings) -> &dyn Slot,
    write: fn(&mut Settings) -> &mut dyn Slot,
}

/// Every bounded setting of `Settings`.
pub const ROWS: &[Row] = &[
    Row {
        limit: limits::MAX_ITERATIONS,
        read: |s| &s.max_iterations,
        write: |s| &mut s.max_iterations,
    },
    Row {
        limit: limits::MAX_OFFERED_TOOLS,
        read: |s| &s.max_offered_tools,
        write: |s| &mut s.max_offered_tools,
    },
    Row {
        limit: limits::TOOL_TIMEOUT,
        read: |s| &s.tool_timeout_secs,
        write: |s| &mut s.tool_timeout_secs,
    },
    Row {
        limit: limits::IMAGE_MAX_SIDE,
        read: |s| &s.image_max_side,
        write: |s| &mut s.image_max_side,
    },
    Row {
        limit: limits::TEMPERATURE,
        read: |s| &s.temperature,
        write: |s| &mut s.temperature,
    },
    Row {
        limit: limits::NUM_CTX,
        read: |s| &s.num_ctx,
        write: |s| &mut s.num_ctx,
    },
    Row {
        limit: limits::MODEL_CONTEXT,
        read: |s| &s.model_contexts,
        write: |s| &mut s.model_contexts,
    },
];

/// A setting that takes one of a few values: its key, what the window calls it, its values (as
/// the settings file writes them).
pub struct Choice {
    pub key: &'static str,
    pub label: &'static str,
    pub values: fn() -> Vec<String>,
}

/// Every setting of `Settings` that takes one of a few values.
pub const CHOICES: &[Choice] = &[Choice {
    key: "contextPolicy",
    label: "When a chat outgrows the model's context",
    values: || names(&crate::store::ContextPolicy::ALL),
}];

/// Each value as serde writes it.
fn names<T: Serialize>(all: &[T]) -> Vec<String> {
    all.iter()
        .map(|v| match serde_json::to_value(v) {
            Ok(Value::String(s)) => s,
            other => unreachable!("a choice that is not a name: {other:?}"),
        })
        .collect()
}

impl Row {
    /// Its message when `s` holds a value it does not allow.
    pub fn check(&self, s: &Settings) -> Result<(), String> {
        for (name, v) in (self.read)(s).values() {
            if !self.limit.allows(v) {
                return Err(match name {
                    Some(name) => format!("{name}: {}", self.limit.message()),
                    None => self.limit.message(),
                });
            }
        }
        Ok(())
    }

    /// Every value of `s` it does not allow put back to its default (an optional one emptied, a
    /// per-model one dropped).
    pub fn repair(&self, s: &mut Settings) {
        (self.write)(s).repair(&self.limit);
    }

    /// Its values in `s`, each with the name it is kept under (a model's, for a per-model one).
    pub fn values<'a>(&self, s: &'a Settings) -> Vec<(Option<&'a str>, f64)> {
        (self.read)(s).values()
    }

    /// Whether it keeps one value per model.
    pub fn per_model(&self) -> bool {
        (self.read)(&Settings::default()).per_model()
    }
}

/// The table as the window gets it: by key, `{min, max, step, whole, unit, label, default,
/// optional, perModel, message}` for a bounded setting, `{label, choices, default, optional}`
/// for one of a few values.
pub fn schema() -> Value {
    let defaults = serde_json::to_value(Settings::default()).expect("settings serialize");
    let mut rows: Map<String, Value> = ROWS
        .iter()
        .map(|r| {
            let l = &r.limit;
            let row = json!({
                "label": l.label,
                "min": num(l.min),
                "max": num(l.max),
                "step": num(l.step),
                "whole": l.whole,
                "unit": l.unit,
                "default": l.default.map(num),
                "optional": l.default.is_none(),
                "perModel": r.per_model(),
                "message": l.message(),
            });
            (l.key.to_string(), row)
        })
        .collect();
    for c in CHOICES {
        let row = json!({
            "label": c.label,
            "choices": (c.values)(),
            "default": defaults[c.key],
            "optional": false,
        });
        rows.insert(c.key.to_string(), row);
    }
    Value::Object(rows)
}

/// A number as JSON: a whole one as an integer (`5`, not `5.0`; an integer setting reads only that).
fn num(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// A field a row reads and repairs: a number always set, one that may be empty, or one per model.
trait Slot {
    fn values(&self) -> Vec<(Option<&str>, f64)>;
    fn repair(&mut self, limit: &Limit);
    fn per_model(&self) -> bool {
        false
    }
}

macro_rules! whole_slot {
    ($($t:ty),*) => {$(
        impl Slot for $t {
            fn values(&self) -> Vec<(Option<&str>, f64)> {
                vec![(None, *self as f64)]
            }
            fn repair(&mut self, limit: &Limit) {
                if !limit.allows(*self as f64) {
                    *self = limit.default_value() as $t;
                }
            }
        }
    )*};
}
whole_slot!(usize, u64, u32);

impl<T: Copy + Into<f64>> Slot for Option<T> {
    fn values(&self) -> Vec<(Option<&str>, f64)> {
        self.map(|v| (None, v.into())).into_iter().collect()
    }
    fn repair(&mut self, limit: &Limit) {
        if self.is_some_and(|v| !limit.allows(v.into())) {
            *self = None;
        }
    }
}

impl Slot for BTreeMap<String, u32> {
    fn values(&self) -> Vec<(Option<&str>, f64)> {
        self.iter()
            .map(|(name, v)| (Some(name.as_str()), f64::from(*v)))
            .collect()
    }
    fn repair(&mut self, limit: &Limit) {
        self.retain(|_, v| limit.allows(f64::from(*v)));
    }
    fn per_model(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A setting's value just outside its range, as its field's JSON holds it.
    fn outside(l: &Limit) -> Value {
        num(l.max + l.step)
    }

    /// Every row at once: its default allowed; a value outside refused by `validate` with the
    /// row's message and put back to its default by `load`, the other settings kept. A new row is
    /// covered without a new test.
    #[test]
    fn every_row_refuses_and_repairs_a_value_outside_its_range() {
        let d = Settings::default();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        assert!(ROWS.len() >= 7);
        let mut conversation_rows = 0;
        for row in ROWS {
            let l = &row.limit;
            let key = l.key;
            match l.default {
                Some(v) => {
                    assert!(l.allows(v), "{key}: its default {v} is outside its range");
                    assert_eq!(row.values(&d), [(None, v)], "{key}: Settings::default");
                }
                None => assert!(row.values(&d).is_empty(), "{key}: empty by default"),
            }
            assert!(l.allows(l.min) && l.allows(l.max), "{key}");
            assert!(!l.allows(l.min - l.step), "{key}");
            // the field, as the settings file holds it, just outside the range
            let bad = if row.per_model() {
                json!({"m": outside(l)})
            } else {
                outside(l)
            };
            let mut v = serde_json::to_value(&d).unwrap();
            v[key] = bad.clone();
            v["model"] = json!("kept");
            let s: Settings = serde_json::from_value(v.clone()).unwrap();
            let err = s.validate().unwrap_err().to_string();
            assert!(err.contains(&l.message()), "{key}: {err}");
            assert_eq!(row.check(&s).unwrap_err(), err, "{key}");
            std::fs::write(&file, v.to_string()).unwrap();
            let loaded = Settings::load(&file);
            assert_eq!(
                row.values(&loaded),
                row.values(&d),
                "{key}: repaired to its default"
            );
            assert_eq!(loaded.model.as_deref(), Some("kept"), "{key}");
            assert!(loaded.validate().is_ok(), "{key}");
            // a conversation's own value of it (where a conversation has one): the same message
            let mut own =
                serde_json::to_value(crate::store::ConversationSettings::default()).unwrap();
            if own.get(key).is_some() {
                own[key] = bad;
                let own: crate::store::ConversationSettings = serde_json::from_value(own).unwrap();
                let e = own.validate().unwrap_err();
                assert_eq!((e.field, e.message), (key, l.message()), "{key}");
                conversation_rows += 1;
            }
            // inside: kept
            let mut v = serde_json::to_value(&d).unwrap();
            v[key] = if row.per_model() {
                json!({"m": num(l.max)})
            } else {
                num(l.max)
            };
            std::fs::write(&file, v.to_string()).unwrap();
            let loaded = Settings::load(&file);
            assert_eq!(
                row.values(&loaded).last().map(|x| x.1),
                Some(l.max),
                "{key}"
            );
            assert!(loaded.validate().is_ok(), "{key}");
        }
        assert_eq!(conversation_rows, 2, "temperature and numCtx");
    }

    /// Every setting of a few values: its default is one of them, each loads as itself, another
    /// is its default on load and refused in a change. A new one is covered without a new test.
    #[test]
    fn every_choice_keeps_to_its_values() {
        // a new policy is a compile error here: add it to ContextPolicy::ALL (the window's choices)
        for p in crate::store::ContextPolicy::ALL {
            match p {
                crate::store::ContextPolicy::Summarise
                | crate::store::ContextPolicy::DropOldest
                | crate::store::ContextPolicy::Ask => {}
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        let defaults = serde_json::to_value(Settings::default()).unwrap();
        for c in CHOICES {
            let key = c.key;
            let values = (c.values)();
            let default = defaults[key].as_str().unwrap();
            assert!(values.iter().any(|v| v == default), "{key}: {default}");
            for v in values.iter().chain(["nonsense".to_string()].iter()) {
                std::fs::write(&file, json!({ key: v, "model": "kept" }).to_string()).unwrap();
                let loaded = serde_json::to_value(Settings::load(&file)).unwrap();
                let want = if values.contains(v) {
                    v.as_str()
                } else {
                    default
                };
                assert_eq!(loaded[key], json!(want), "{key}: {v}");
                assert_eq!(loaded["model"], json!("kept"));
                let patch =
                    serde_json::from_value::<super::super::SettingsPatch>(json!({ key: v }));
                assert_eq!(patch.is_ok(), values.contains(v), "{key}: {v}");
            }
        }
    }

    /// The exported table: one entry per row, with the bounds, the default and the message.
    #[test]
    fn the_schema_is_the_table() {
        let s = schema();
        let obj = s.as_object().unwrap();
        assert_eq!(
            obj.len(),
            ROWS.len() + CHOICES.len(),
            "one entry per row, keys unique"
        );
        assert_eq!(
            s["maxIterations"],
            json!({"label": "Max tool rounds", "min": 1, "max": 100, "step": 1, "whole": true,
                   "unit": "", "default": 5, "optional": false, "perModel": false,
                   "message": "Max tool rounds must be a whole number from 1 to 100"})
        );
        assert_eq!(s["temperature"]["step"], json!(0.1));
        assert_eq!(s["temperature"]["optional"], json!(true));
        assert_eq!(s["modelContexts"]["perModel"], json!(true));
        assert_eq!(
            s["contextPolicy"]["choices"],
            json!(["summarise", "dropOldest", "ask"])
        );
        assert_eq!(s["contextPolicy"]["default"], json!("summarise"));
        // every key is a key of the settings as they are written
        let written = serde_json::to_value(Settings::default()).unwrap();
        for key in obj.keys() {
            assert!(written.get(key).is_some(), "{key} is no setting");
        }
    }
}
