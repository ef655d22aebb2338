//! Desktop notifications through tauri-plugin-notification, while the window is not focused: a
//! reply finished, a question waits (an approval, a server's question), a server crashed, a
//! task completed. A click on one brings the window up on that notification's conversation (the
//! plugin reports it as the action `tap`: the Desktop Notifications `default` action). Which
//! kinds to show is the window's own preference, kept in the window state (`window_state/`).
//!
//! The page words the notification (wording lives in the front end); this side decides whether
//! it is shown at all, so a focused window is never notified whatever the page asks.
//!
//! Only from Rust: the window has no notification permission. A notification is clipped to a line.
//! notify-rust is held at 4.18 in Cargo.lock: 4.19 brings zbus 6 beside the zbus 5 the rest of the
//! app links.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use serde::Deserialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_notification::NotificationExt;

use crate::window_state::{NotifyPrefs, WindowStateExt};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NotifyKind {
    TurnFinished,
    Question,
    ServerCrashed,
    TaskCompleted,
}

impl NotifyKind {
    pub fn wanted(self, prefs: &NotifyPrefs) -> bool {
        match self {
            NotifyKind::TurnFinished => prefs.turn_finished,
            NotifyKind::Question => prefs.question,
            NotifyKind::ServerCrashed => prefs.server_crashed,
            NotifyKind::TaskCompleted => prefs.task_completed,
        }
    }
}

/// Who hears a click on a notification: the page, through the channel it gave
/// (`watch_notification_clicks`), with the conversation to open (null: none in particular).
#[derive(Default)]
pub struct Notifier {
    on_click: Mutex<Option<Channel<Option<i64>>>>,
    next_id: AtomicI32,
}

impl Notifier {
    pub fn watch(&self, channel: Channel<Option<i64>>) {
        *self.on_click.lock().unwrap() = Some(channel);
    }

    /// Registers the click handler with the plugin (once, at start).
    pub fn listen<R: Runtime>(app: &AppHandle<R>) {
        let handle = app.clone();
        let _ = app.notification().on_action(move |performed| {
            if performed.action_id() != "tap" {
                return;
            }
            let conversation = performed
                .notification()
                .and_then(|n| n.extra().get("conversationId"))
                .and_then(|v| v.as_i64());
            let handle = handle.clone();
            // the plugin calls this on its signal thread; the window is the main thread's
            let _ = handle.clone().run_on_main_thread(move || {
                if let Some(w) = handle.get_webview_window("main") {
                    let _ = w.unminimize();
                    let _ = w.show();
                    let _ = w.set_focus();
                }
                if let Some(ch) = handle.state::<Notifier>().on_click.lock().unwrap().as_ref() {
                    let _ = ch.send(conversation);
                }
            });
        });
    }

    /// Shows a notification of `kind` unless the window is focused or the user turned that kind
    /// off; true when it was sent to the desktop's notification server.
    pub fn notify<R: Runtime>(
        &self,
        app: &AppHandle<R>,
        kind: NotifyKind,
        title: &str,
        body: &str,
        conversation: Option<i64>,
    ) -> bool {
        let focused = app
            .get_webview_window("main")
            .and_then(|w| w.is_focused().ok())
            .unwrap_or(false);
        let prefs = app
            .window_state()
            .map(|s| s.notify_prefs())
            .unwrap_or_default();
        if focused || !kind.wanted(&prefs) {
            return false;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut builder = app
            .notification()
            .builder()
            .id(id)
            .title(clip(title, 120))
            .body(clip(body, 300));
        if let Some(c) = conversation {
            builder = builder.extra("conversationId", c);
        }
        match builder.show() {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("notification not shown: {e}");
                false
            }
        }
    }
}

/// `s`, at most `max` characters, on one line, with no markup: a notification server may read
/// the body as markup (the spec's `body-markup`: links, images), and the words can hold a server's
/// name or a chat's title, so `<` and `>` become look-alike angle quotes.
fn clip(s: &str, max: usize) -> String {
    let line: String = s
        .chars()
        .map(|c| match c {
            c if c.is_control() => ' ',
            '<' => '‹',
            '>' => '›',
            c => c,
        })
        .collect();
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_follows_its_own_preference() {
        let mut prefs = NotifyPrefs::default();
        assert!(NotifyKind::TurnFinished.wanted(&prefs));
        prefs.turn_finished = false;
        assert!(!NotifyKind::TurnFinished.wanted(&prefs));
        assert!(NotifyKind::Question.wanted(&prefs));
        prefs.server_crashed = false;
        assert!(!NotifyKind::ServerCrashed.wanted(&prefs));
        assert!(NotifyKind::TaskCompleted.wanted(&prefs));
    }

    #[test]
    fn long_or_multiline_text_is_clipped_to_a_line() {
        assert_eq!(clip("a\nb", 10), "a b");
        assert_eq!(clip("ééééé", 3), "ééé…");
    }

    #[test]
    fn markup_from_a_server_or_a_title_stays_text() {
        assert_eq!(
            clip("<a href=\"https://x\">x</a><img src=x>", 100),
            "‹a href=\"https://x\"›x‹/a›‹img src=x›"
        );
    }
}
