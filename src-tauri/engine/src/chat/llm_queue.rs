//! One request at a time to each LLM server.
//!
//! A local server shares one context among the requests it serves at once: llama-server runs
//! four slots on one unified KV cache, so with `-c 2048` two requests together may not pass
//! 2,048 tokens, and a summary written in the background beside a turn's own request made both
//! fail mid-reply with "Context size has been exceeded", though each fitted alone (seen with
//! Gemma 3 270M). Ollama with more than one parallel request splits its memory the same way. So
//! every request of the engine — a turn's reply, a summary, a server's sampling request — waits
//! for the one before it on the same server; a turn that has to wait says so. (A local server
//! works through one request at a time anyway: nothing is slower for it.)
//!
//! Every request holds `ChatEngine::llm_turn` while it is sent; a reply that has to wait says so
//! (`ChatEvent::LlmBusy`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The queue of each LLM server, by its base URL.
#[derive(Default)]
pub struct LlmQueues(Mutex<HashMap<String, Arc<Semaphore>>>);

/// The server is this request's until this is dropped.
pub struct LlmTurn(#[allow(dead_code)] OwnedSemaphorePermit);

impl LlmQueues {
    /// Waits until no other request of the engine is under way on `server`; `waiting` is called
    /// first when one is. `None` when `cancel` fires while waiting.
    pub async fn turn(
        &self,
        server: &str,
        waiting: impl FnOnce(),
        cancel: &CancellationToken,
    ) -> Option<LlmTurn> {
        let queue = self
            .0
            .lock()
            .unwrap()
            .entry(server.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(1)))
            .clone();
        if let Ok(p) = queue.clone().try_acquire_owned() {
            return Some(LlmTurn(p));
        }
        waiting();
        tokio::select! {
            p = queue.acquire_owned() => p.ok().map(LlmTurn),
            _ = cancel.cancelled() => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn requests_to_one_server_go_one_at_a_time_and_others_do_not_wait() {
        let queues = Arc::new(LlmQueues::default());
        let cancel = CancellationToken::new();
        let waited = AtomicUsize::new(0);
        let first = queues
            .turn("http://a", || panic!("nothing is under way"), &cancel)
            .await
            .unwrap();
        // another server is free
        let other = queues
            .turn("http://b", || panic!("b is free"), &cancel)
            .await;
        assert!(other.is_some());
        // the second request to the first server waits until the first is done
        let q = queues.clone();
        let second = tokio::spawn(async move {
            let c = CancellationToken::new();
            q.turn("http://a", || {}, &c).await.is_some()
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !second.is_finished(),
            "it waits while the first is under way"
        );
        drop(first);
        assert!(second.await.unwrap());
        // waiting is said, and a cancelled wait gives up
        let held = queues.turn("http://a", || {}, &cancel).await.unwrap();
        let stop = CancellationToken::new();
        let s = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            s.cancel();
        });
        let gave_up = queues
            .turn(
                "http://a",
                || {
                    waited.fetch_add(1, Ordering::SeqCst);
                },
                &stop,
            )
            .await;
        assert!(gave_up.is_none());
        assert_eq!(waited.load(Ordering::SeqCst), 1);
        drop(held);
    }
}
