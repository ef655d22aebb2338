//! The window's own state, kept through tauri-plugin-store in `window-state.json` in the app's
//! config folder: the window's size, position and maximized state, and what the page asks to
//! keep (theme, sidebar width, the open conversation and its scroll, dismissed hints, the first
//! run, the drafts). The engine's settings are not here: they stay
//! in `settings.json`, through the engine.
//!
//! The plugin loads the file and holds the values; the file is written here, atomically
//! (`paths::write_private`: a temporary file, then a rename), after every change the page makes
//! and shortly after the window moves or is resized: the plugin's own save is a plain
//! `fs::write`, which a kill in the middle leaves cut short. So the store is taken out of the
//! plugin's table once built (the plugin would write it that way again at exit) and this module is
//! its one writer. A file that cannot be read as a JSON object is set aside
//! (`window-state.json.unreadable-<time>`) with a note for the window, and the app starts with
//! the defaults.
//!
//! The window's place is written 400 ms after it moved; one bad value loses only itself; the note
//! about a file set aside is shown once. `mod.rs` the store and its file, `geometry.rs` the size
//! and place (`clamp`), `page.rs` what the page keeps. Invariant: `window-state.json` never holds
//! an engine setting or a secret; the page reaches it only through `window_state` /
//! `change_window_state` (`commands/window.rs`; a `PagePatch`: named keys only, drafts per key),
//! never the plugin's own commands (the window has no store permission).

mod geometry;
mod page;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Map, Value};
use tauri::{Manager, Runtime, Wry};
use tauri_plugin_store::{Store, StoreBuilder};

use page::{page_from, Draft, PAGE_KEYS};
pub use page::{NotifyPrefs, PagePatch, PageState};

pub const FILE: &str = "window-state.json";

/// At most this many drafts are kept (the oldest changed go first), each at most this long.
const MAX_DRAFTS: usize = 200;
const MAX_DRAFT_CHARS: usize = 200_000;

/// The page's state and the window's geometry, in the plugin's store, written by [`Self::save`].
pub struct WindowState {
    store: Arc<Store<Wry>>,
    path: PathBuf,
    /// Why the file was set aside at start, for the window to say once.
    note: Mutex<Option<String>>,
    /// One write at a time, in the order of the changes.
    writing: Mutex<()>,
    /// A save after the window moved or was resized, waiting for it to settle.
    geometry_pending: Mutex<bool>,
    /// Draft keys, oldest change first (to drop the oldest past [`MAX_DRAFTS`]).
    draft_order: Mutex<Vec<String>>,
}

impl WindowState {
    /// Opens `window-state.json` in the config folder through the plugin's store.
    pub fn open(app: &tauri::AppHandle) -> WindowState {
        let path = switchboard_engine::paths::config_dir().join(FILE);
        let note = set_aside_if_unreadable(&path);
        let store = StoreBuilder::new(app, &path)
            .disable_auto_save()
            .build()
            .unwrap_or_else(|e| {
                // the plugin could not resolve the path: a store in memory, saved nowhere
                tracing::warn!("window state: {e}");
                StoreBuilder::new(app, path.with_extension("unused.json"))
                    .create_new()
                    .disable_auto_save()
                    .build()
                    .expect("an empty store")
            });
        // this module writes it (atomically); the plugin would write it again at exit, plainly
        store.close_resource();
        let order = store
            .get("drafts")
            .and_then(|v| v.as_object().map(|m| m.keys().cloned().collect()))
            .unwrap_or_default();
        WindowState {
            store,
            path,
            note: Mutex::new(note),
            writing: Mutex::new(()),
            geometry_pending: Mutex::new(false),
            draft_order: Mutex::new(order),
        }
    }

    /// The page's state (what could not be read of it is left at its default), and the note
    /// about a file set aside, given once.
    pub fn page(&self) -> (PageState, Option<String>) {
        let mut doc = Map::new();
        for key in PAGE_KEYS {
            if let Some(v) = self.store.get(key) {
                doc.insert((*key).into(), v);
            }
        }
        let page = page_from(doc);
        (page, self.note.lock().unwrap().take())
    }

    /// Which kinds of desktop notification the user wants.
    pub fn notify_prefs(&self) -> NotifyPrefs {
        self.store
            .get("notifications")
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }

    /// Applies a change from the page and writes the file.
    pub fn change(&self, patch: PagePatch) -> std::io::Result<()> {
        let s = &self.store;
        if let Some(t) = patch.theme {
            s.set("theme", json(&t));
        }
        if let Some(w) = patch.sidebar_width {
            s.set("sidebarWidth", w);
        }
        match patch.open {
            Some(Some(o)) => s.set("open", json(&o)),
            Some(None) => {
                s.delete("open");
            }
            None => {}
        }
        if let Some(h) = patch.hints {
            s.set("hints", json(&h));
        }
        if let Some(f) = patch.first_run_done {
            s.set("firstRunDone", f);
        }
        if let Some(changes) = patch.drafts {
            self.change_drafts(changes);
        }
        if let Some(n) = patch.notifications {
            s.set("notifications", json(&n));
        }
        self.save()
    }

    fn change_drafts(&self, changes: BTreeMap<String, Option<Draft>>) {
        let mut drafts = match self.store.get("drafts") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let mut order = self.draft_order.lock().unwrap();
        for (key, draft) in changes {
            order.retain(|k| k != &key);
            match draft {
                Some(mut d) if !d.text.is_empty() || !d.attachments.is_empty() => {
                    if let Some((cut, _)) = d.text.char_indices().nth(MAX_DRAFT_CHARS) {
                        d.text.truncate(cut);
                    }
                    // last changed last (serde_json keeps the order): the file lists them oldest first
                    drafts.shift_remove(&key);
                    drafts.insert(key.clone(), json(&d));
                    order.push(key);
                }
                _ => {
                    drafts.shift_remove(&key);
                }
            }
        }
        while order.len() > MAX_DRAFTS {
            let oldest = order.remove(0);
            drafts.shift_remove(&oldest);
        }
        self.store.set("drafts", Value::Object(drafts));
    }

    /// Writes the store's values to the file, atomically and private (0600).
    pub fn save(&self) -> std::io::Result<()> {
        let _one = self.writing.lock().unwrap();
        let doc: Map<String, Value> = self.store.entries().into_iter().collect();
        let text = serde_json::to_vec_pretty(&Value::Object(doc))?;
        switchboard_engine::paths::write_private(&self.path, &text)
    }
}

fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A store file that is not a JSON object (cut short, edited by hand, not readable) is renamed
/// out of the way, so the plugin starts empty and nothing overwrites what was there; the note
/// says where it went.
fn set_aside_if_unreadable(path: &Path) -> Option<String> {
    let problem = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => e.to_string(),
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(_)) => return None,
            Ok(_) => "it is not a JSON object".to_string(),
            Err(e) => e.to_string(),
        },
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let aside = path.with_file_name(format!("{FILE}.unreadable-{stamp}"));
    let note = match std::fs::rename(path, &aside) {
        Ok(()) => format!(
            "The window's saved state could not be read ({problem}). It was set aside as {} and the window starts afresh.",
            aside.display()
        ),
        Err(e) => format!(
            "The window's saved state could not be read ({problem}) nor set aside ({e}); the window starts afresh and will write {} anew.",
            path.display()
        ),
    };
    tracing::warn!("{note}");
    Some(note)
}

impl<R: Runtime> WindowStateExt for tauri::AppHandle<R> {
    fn window_state(&self) -> Option<Arc<WindowState>> {
        self.try_state::<Arc<WindowState>>().map(|s| Arc::clone(&s))
    }
}

pub trait WindowStateExt {
    fn window_state(&self) -> Option<Arc<WindowState>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_file_is_set_aside_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(
            set_aside_if_unreadable(&path),
            None,
            "no file: nothing to say"
        );
        std::fs::write(&path, br#"{"theme": "dark"}"#).unwrap();
        assert_eq!(set_aside_if_unreadable(&path), None);
        std::fs::write(&path, br#"{"theme": "da"#).unwrap();
        let note = set_aside_if_unreadable(&path).expect("a note");
        assert!(!path.exists(), "the cut-short file is out of the way");
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(aside.len(), 1);
        assert!(aside[0].starts_with("window-state.json.unreadable-"));
        assert!(note.contains(&aside[0]), "{note}");
        assert_eq!(
            std::fs::read(dir.path().join(&aside[0])).unwrap(),
            br#"{"theme": "da"#,
            "kept as it was"
        );
        std::fs::write(&path, b"[1, 2]").unwrap();
        assert!(set_aside_if_unreadable(&path)
            .unwrap()
            .contains("not a JSON object"));
    }
}
