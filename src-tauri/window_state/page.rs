//! What the page keeps in the window's state (theme, sidebar width, the open conversation and
//! its scroll, hints, the first run, the drafts, which notifications to show), and the changes it
//! sends: the types, and reading them back from the stored keys.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

/// The conversation that was open and how far it was scrolled (`atEnd`: at its end, where new
/// messages keep it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenChat {
    pub conversation_id: Option<i64>,
    #[serde(default)]
    pub scroll_top: f64,
    #[serde(default)]
    pub at_end: bool,
}

/// A message being written: its text and the resources attached to it, as the composer has them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    pub text: String,
    #[serde(default)]
    pub attachments: Vec<Value>,
}

/// Which kinds of desktop notification the user wants (Settings → This window); all on at first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NotifyPrefs {
    pub turn_finished: bool,
    pub question: bool,
    pub server_crashed: bool,
    pub task_completed: bool,
}

impl Default for NotifyPrefs {
    fn default() -> NotifyPrefs {
        NotifyPrefs {
            turn_finished: true,
            question: true,
            server_crashed: true,
            task_completed: true,
        }
    }
}

/// What the page keeps here. Drafts are keyed by conversation id, `new` for a chat not yet sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct PageState {
    pub theme: Theme,
    pub sidebar_width: Option<u32>,
    pub open: Option<OpenChat>,
    pub hints: Vec<String>,
    pub first_run_done: bool,
    pub drafts: BTreeMap<String, Draft>,
    pub notifications: NotifyPrefs,
}

/// A change from the page: what it names changes, the rest stays. `drafts` changes per key
/// (`null` removes that draft); `open: null` forgets the open conversation.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PagePatch {
    pub theme: Option<Theme>,
    pub sidebar_width: Option<u32>,
    #[serde(default, with = "nullable")]
    pub open: Option<Option<OpenChat>>,
    pub hints: Option<Vec<String>>,
    pub first_run_done: Option<bool>,
    pub drafts: Option<BTreeMap<String, Option<Draft>>>,
    pub notifications: Option<NotifyPrefs>,
}

mod nullable {
    use serde::{Deserialize, Deserializer};
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

pub(super) const PAGE_KEYS: &[&str] = &[
    "theme",
    "sidebarWidth",
    "open",
    "hints",
    "firstRunDone",
    "drafts",
    "notifications",
];

/// The page's state from the stored keys; a key whose value does not fit is left at its default
/// (one bad value loses only itself).
pub(super) fn page_from(doc: Map<String, Value>) -> PageState {
    let mut page = PageState::default();
    for (key, value) in doc {
        let one = Value::Object(Map::from_iter([(key.clone(), value)]));
        match serde_json::from_value::<PagePatch>(one) {
            Ok(p) => {
                if let Some(t) = p.theme {
                    page.theme = t;
                }
                if p.sidebar_width.is_some() {
                    page.sidebar_width = p.sidebar_width;
                }
                if let Some(o) = p.open {
                    page.open = o;
                }
                if let Some(h) = p.hints {
                    page.hints = h;
                }
                if let Some(f) = p.first_run_done {
                    page.first_run_done = f;
                }
                if let Some(d) = p.drafts {
                    page.drafts = d.into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
                }
                if let Some(n) = p.notifications {
                    page.notifications = n;
                }
            }
            Err(e) => tracing::warn!("window state: {key} left at its default: {e}"),
        }
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_value_loses_only_itself() {
        let doc = serde_json::json!({
            "theme": "purple",
            "sidebarWidth": 300,
            "drafts": {"7": {"text": "half a thought", "attachments": []}},
        });
        let page = page_from(doc.as_object().unwrap().clone());
        assert_eq!(page.theme, Theme::System);
        assert_eq!(page.sidebar_width, Some(300));
        assert_eq!(page.drafts["7"].text, "half a thought");
    }

    #[test]
    fn a_patch_names_only_known_keys() {
        assert!(serde_json::from_str::<PagePatch>(r#"{"model": "x"}"#).is_err());
        let p: PagePatch = serde_json::from_str(r#"{"open": null}"#).unwrap();
        assert_eq!(p.open, Some(None));
        let p: PagePatch = serde_json::from_str(r#"{"drafts": {"new": null}}"#).unwrap();
        assert_eq!(p.drafts.unwrap()["new"], None);
    }

    #[test]
    fn notification_kinds_are_on_until_turned_off_one_by_one() {
        let page = page_from(Map::new());
        assert_eq!(page.notifications, NotifyPrefs::default());
        assert!(page.notifications.turn_finished && page.notifications.task_completed);
        let doc = serde_json::json!({"notifications": {"turnFinished": false}});
        let page = page_from(doc.as_object().unwrap().clone());
        assert!(!page.notifications.turn_finished);
        assert!(page.notifications.question && page.notifications.server_crashed);
    }
}
