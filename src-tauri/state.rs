//! What the window's commands share: the engine's [`Runtime`] (settings, MCP config, servers,
//! store, the questions waiting for the user), and what only the window has: the turns it is
//! running (so Stop can end one), the model downloads and model checks under way.
//!
//! Also the events of tasks followed outside a turn (`TaskEvents`: followed from the start, so a
//! window that listens late gets what it missed first, in order). On exit it tells the host first
//! (`begin_shutdown`), so tasks on servers survive the quit.

use std::collections::HashMap;
use std::sync::Mutex;

use switchboard_engine::chat::Broker;
use switchboard_engine::{ChatEvent, Runtime};
use tokio_util::sync::CancellationToken;

pub struct AppState {
    pub runtime: Runtime,
    /// Running turns by the id the window gave them, so Stop can cancel one.
    pub turns: Mutex<HashMap<String, CancellationToken>>,
    /// Model downloads under way, by model name.
    pub pulls: Mutex<HashMap<String, CancellationToken>>,
    /// Model checks under way, by provider and model.
    pub checks: Mutex<HashMap<String, CancellationToken>>,
    /// Server sign-ins waiting for the browser, by server name (Cancel ends one).
    pub sign_ins: Mutex<HashMap<String, CancellationToken>>,
    /// What happens to tasks followed outside a turn (after a restart), for the window
    /// (`watch_tasks`).
    pub task_events: TaskEvents,
    /// The MCP App pages shown on cards, served from the `mcpapp` scheme.
    pub apps: crate::apps::AppViews,
    /// Bundles opened with the app (its command line, another launch, a drop), for the window.
    pub bundle_opens: crate::bundles::BundleOpens,
}

impl AppState {
    pub async fn open() -> anyhow::Result<AppState> {
        let exe = std::env::current_exe()?;
        // questions wait for the window's answers (`answer_question`)
        let runtime = Runtime::open(exe, Broker::new()).await?;
        Ok(AppState {
            runtime,
            turns: Mutex::new(HashMap::new()),
            pulls: Mutex::new(HashMap::new()),
            checks: Mutex::new(HashMap::new()),
            sign_ins: Mutex::new(HashMap::new()),
            task_events: TaskEvents::default(),
            apps: Default::default(),
            bundle_opens: Default::default(),
        })
    }

    pub async fn shutdown(&self) {
        // calls that run as tasks on their servers go on there; the next run follows them
        self.runtime.host.begin_shutdown();
        for t in self.turns.lock().unwrap().values() {
            t.cancel();
        }
        self.runtime.host.shutdown().await;
    }
}

/// Cancels the token registered under `key`, if any; false when there is none.
pub fn cancel_in<K: std::hash::Hash + Eq + ?Sized>(
    map: &Mutex<HashMap<String, CancellationToken>>,
    key: &K,
) -> bool
where
    String: std::borrow::Borrow<K>,
{
    match map.lock().unwrap().get(key) {
        Some(t) => {
            t.cancel();
            true
        }
        None => false,
    }
}

/// What happens to tasks followed outside a turn. They are followed from the app's start, before
/// the window may be listening: a window that starts listening late gets what it missed first,
/// then each new event as it happens, in order, none twice.
pub struct TaskEvents {
    inner: Mutex<(Vec<ChatEvent>, tokio::sync::broadcast::Sender<ChatEvent>)>,
}

/// How many past events a late listener can get (the oldest go first).
const TASK_EVENTS_KEPT: usize = 2048;

impl Default for TaskEvents {
    fn default() -> TaskEvents {
        TaskEvents {
            inner: Mutex::new((Vec::new(), tokio::sync::broadcast::channel(256).0)),
        }
    }
}

impl TaskEvents {
    pub fn send(&self, ev: ChatEvent) {
        let mut inner = self.inner.lock().unwrap();
        if inner.0.len() == TASK_EVENTS_KEPT {
            inner.0.remove(0);
        }
        inner.0.push(ev.clone());
        let _ = inner.1.send(ev);
    }

    /// The events so far, and a receiver of those that come after them.
    pub fn subscribe(&self) -> (Vec<ChatEvent>, tokio::sync::broadcast::Receiver<ChatEvent>) {
        let inner = self.inner.lock().unwrap();
        (inner.0.clone(), inner.1.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn followed(id: i64) -> ChatEvent {
        ChatEvent::TaskFollowed {
            id,
            conversation_id: 7,
        }
    }

    fn ids(evs: &[ChatEvent]) -> Vec<i64> {
        evs.iter()
            .map(|ev| match ev {
                ChatEvent::TaskFollowed { id, .. } => *id,
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_late_listener_gets_what_it_missed_then_what_comes() {
        let events = TaskEvents::default();
        events.send(followed(1));
        events.send(followed(2));
        let (past, mut rx) = events.subscribe();
        events.send(followed(3));
        assert_eq!(ids(&past), [1, 2]);
        assert_eq!(ids(&[rx.recv().await.unwrap()]), [3]);
        assert!(rx.try_recv().is_err());
        // a second listener (the window loaded again) gets all of it
        assert_eq!(ids(&events.subscribe().0), [1, 2, 3]);
    }
}
