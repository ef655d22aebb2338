//! Summaries of older turns, written by the model (or the one picked in Settings): in the
//! background after a turn whose next request would pass `context::COMPACT_AT` of the room (the
//! user reads and types meanwhile), or at once when a request would not fit without one (it
//! waits for one already being written rather than asking for another). One request per summary:
//! the instructions, the user's first message, the summary so far and the messages it now covers,
//! fitted to the model's context (`context::summary`). Each request is recorded for the debug view;
//! each summary is stored tied to the last message it covers, and announced (`Summarised`).
//!
//! One summary per conversation at a time; each is announced through the turn's channel or, in the
//! background, `EngineShared`'s background events.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::open::{history_for_model, meta_of};
use super::Turn;
use crate::chat::context::{self, summary};
use crate::chat::events::{ChatEvent, Emit};
use crate::chat::{ChatEngine, ChatError};
use crate::llm::{ChatRequest, Delta, GenOptions, Message, Role};
use crate::store::{ContextPolicy, EarlierSummary};

/// What a summary being written ends with, once it has: the summary, or nothing.
type Done = Option<Option<EarlierSummary>>;

/// The summaries being written in the background, by conversation.
#[derive(Default)]
pub(crate) struct Compactions(Mutex<HashMap<i64, watch::Receiver<Done>>>);

/// What a summary is written for: the conversation, the model it talks to and how (its context,
/// the tools its requests offer), and the message the summary should reach (`None`: as far as the
/// next request's plan says).
struct Job {
    conversation_id: i64,
    model: String,
    gen: GenOptions,
    window: usize,
    tools_tokens: usize,
    through: Option<i64>,
}

impl Job {
    fn of(turn: &Turn, through: Option<i64>, tools_tokens: usize) -> Job {
        Job {
            conversation_id: turn.conversation_id,
            model: turn.model.clone(),
            gen: turn.gen.clone(),
            window: turn.window,
            tools_tokens,
            through,
        }
    }
}

impl ChatEngine {
    /// After a turn: when the next request of its conversation would be over
    /// `context::COMPACT_AT` of the room, the summary it will want is written in the background
    /// (unless one is being written already).
    pub(super) fn compact_when_due(&self, turn: &Turn) {
        if turn.policy != ContextPolicy::Summarise {
            return;
        }
        let ratio = self.token_ratio(&turn.model);
        let plan = context::plan(
            &turn.messages,
            &turn.meta,
            &turn.budget(ratio, turn.tools_tokens),
            turn.policy,
            turn.summary_in(),
        );
        let Some(through) = plan.summarise_through.and_then(|i| turn.meta[i].id) else {
            return;
        };
        let job = Job::of(turn, Some(through), turn.tools_tokens);
        let mut jobs = self.shared.compactions.0.lock().unwrap();
        if jobs.contains_key(&job.conversation_id) {
            return;
        }
        let (tx, rx) = watch::channel(None);
        // in the map before the job runs: it removes itself when done, under the same lock
        jobs.insert(job.conversation_id, rx);
        let engine = self.clone();
        tokio::spawn(async move {
            let id = job.conversation_id;
            let written = match engine.summarise(&job, &CancellationToken::new()).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::warn!("summarising older turns of conversation {id} failed: {e}");
                    None
                }
                Err(e) => {
                    tracing::warn!("summarising older turns of conversation {id}: {e}");
                    None
                }
            };
            if let Some(s) = &written {
                let emit = engine.shared.background_events.lock().unwrap().clone();
                if let Some(emit) = emit {
                    emit(ChatEvent::Summarised {
                        conversation_id: id,
                        summary: s.clone(),
                    });
                }
            }
            engine.shared.compactions.0.lock().unwrap().remove(&id);
            let _ = tx.send(Some(written));
        });
    }

    /// Waits until the summary being written in the background for `conversation_id` (if any)
    /// is done; what it wrote.
    pub async fn compaction_done(&self, conversation_id: i64) -> Option<EarlierSummary> {
        let rx = self
            .shared
            .compactions
            .0
            .lock()
            .unwrap()
            .get(&conversation_id)
            .cloned();
        let mut rx = rx?;
        let done = rx.wait_for(Option::is_some).await.ok()?.clone();
        done.flatten()
    }

    /// A summary reaching message `through` is needed before the next request of `turn` (and
    /// its tools of `tools_tokens`): the one being written in the background when it reaches as
    /// far, else one written now. The summary, or why there is none (the model failed, wrote
    /// nothing); only the store failing is an error.
    pub(super) async fn compact_now(
        &self,
        turn: &Turn,
        through: Option<i64>,
        tools_tokens: usize,
        emit: Emit<'_>,
        cancel: &CancellationToken,
    ) -> Result<Result<EarlierSummary, String>, ChatError> {
        let id = turn.conversation_id;
        emit(ChatEvent::Compacting {
            conversation_id: id,
        });
        if let Some(s) = self.compaction_done(id).await {
            let reaches = |x: i64| turn.meta.iter().position(|m| m.id == Some(x));
            if reaches(s.through_id) >= through.and_then(reaches) {
                emit(ChatEvent::Summarised {
                    conversation_id: id,
                    summary: s.clone(),
                });
                return Ok(Ok(s));
            }
        }
        let job = Job::of(turn, through, tools_tokens);
        Ok(match self.summarise(&job, cancel).await? {
            Ok(Some(s)) => {
                emit(ChatEvent::Summarised {
                    conversation_id: id,
                    summary: s.clone(),
                });
                Ok(s)
            }
            Ok(None) => Err("there was nothing more to summarise".into()),
            Err(e) => Err(e),
        })
    }

    /// Writes and stores the summary `job` asks for, from the conversation as the store has it:
    /// `Ok(None)` when there is nothing to write (the stored one reaches as far, or the plan
    /// wants none), `Err` with why the model did not write one.
    async fn summarise(
        &self,
        job: &Job,
        cancel: &CancellationToken,
    ) -> Result<Result<Option<EarlierSummary>, String>, ChatError> {
        let conv = self.store.conversation(job.conversation_id).await?;
        let (mut messages, mut meta) = self.system_prompt(&conv);
        messages.extend(history_for_model(&conv).map(|m| m.to_llm()));
        meta.extend(meta_of(history_for_model(&conv)));
        let at = |id: i64| meta.iter().position(|m| m.id == Some(id));
        let stored = conv
            .summarised
            .as_ref()
            .and_then(|s| at(s.through_id).map(|i| (s, i)));
        let through = match job.through {
            Some(id) => at(id),
            None => {
                let ratio = self.token_ratio(&job.model);
                let b = context::budget(job.window, ratio, job.tools_tokens);
                let summary = stored.map(|(s, through)| context::SummaryIn {
                    text: &s.text,
                    through,
                });
                context::plan(&messages, &meta, &b, ContextPolicy::Summarise, summary)
                    .summarise_through
            }
        };
        let Some(through) = through.filter(|&t| stored.is_none_or(|(_, s)| t > s)) else {
            return Ok(Ok(None));
        };
        let covered = context::plan::covered(&messages, &meta, through);
        let new: Vec<Message> = covered
            .iter()
            .filter(|&&i| stored.is_none_or(|(_, s)| i > s))
            .map(|&i| messages[i].clone())
            .collect();
        let first = messages.iter().find(|m| m.role == Role::User);
        let model = self
            .options
            .summary_model
            .clone()
            .unwrap_or_else(|| job.model.clone());
        let (gen, window) = if model == job.model {
            (job.gen.clone(), job.window)
        } else {
            let setup = self.model_setup(&model, &conv.settings).await;
            (setup.gen, setup.window)
        };
        let longest = context::summary_tokens(window);
        let ratio = self.token_ratio(&model);
        let room = (context::room(window) as f64 / ratio) as usize;
        let request = ChatRequest {
            model: model.clone(),
            messages: summary::request_messages(
                first,
                stored.map(|(s, _)| s.text.as_str()),
                &new,
                room,
                longest * 3 / 4,
            ),
            tools: vec![],
            options: GenOptions {
                temperature: gen.temperature,
                num_ctx: gen.num_ctx,
                // a thinking model answers at once
                think: gen.think.map(|_| false),
                format: None,
                max_tokens: Some(longest as u32),
            },
        };
        let text = match self
            .ask_for_summary(job.conversation_id, &request, cancel)
            .await?
        {
            Ok(text) => summary::cut(&text, longest),
            Err(e) => return Ok(Err(e)),
        };
        if text.is_empty() {
            return Ok(Err("the model wrote nothing".into()));
        }
        let through_id = meta[through]
            .id
            .expect("a summary ends at a stored message");
        let s = self
            .store
            .add_summary(
                job.conversation_id,
                through_id,
                covered.len(),
                &text,
                &model,
            )
            .await?;
        Ok(Ok(Some(s)))
    }

    /// Sends a summary request (recorded for the debug view); the reply's text without its
    /// thinking, or why there is none.
    async fn ask_for_summary(
        &self,
        conversation_id: i64,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<Result<String, String>, ChatError> {
        let body = crate::llm::without_image_data(self.llm.request_body(request));
        let _turn = self.llm_turn(|| {}, cancel).await;
        let started = Instant::now();
        let mut raw = Vec::new();
        let reply = self
            .llm
            .chat(
                request,
                &mut |d| {
                    if let Delta::Raw(v) = d {
                        raw.push(v)
                    }
                },
                cancel,
            )
            .await;
        let error = reply.as_ref().err().map(|e| e.to_string());
        self.store
            .record_llm_call(
                conversation_id,
                None,
                &request.model,
                &body,
                &raw,
                error.clone(),
                started.elapsed().as_millis() as i64,
            )
            .await?;
        Ok(match reply {
            Ok(r) if r.stopped => Err("it was stopped".into()),
            Ok(r) => Ok(without_thinking(&r.content)),
            Err(_) => Err(error.unwrap_or_default()),
        })
    }
}

/// A summary's text without the thinking the model wrote in it, as the markup crate reads every
/// family's (`<think>…</think>`, one the prompt opened, an analysis channel…), trimmed.
fn without_thinking(text: &str) -> String {
    let cx = crate::chat::families::Cx::names(&|_| false);
    match crate::chat::recover::recover_with(text, &cx) {
        Some(r) => r.text,
        None => text.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::without_thinking;

    #[test]
    fn a_summary_loses_the_thinking_of_any_family() {
        let said = "The user wants French answers.";
        assert_eq!(without_thinking(said), said);
        assert_eq!(without_thinking(&format!("  {said}\n")), said);
        // written whole, opened by the prompt, and gpt-oss's analysis channel
        assert_eq!(
            without_thinking(&format!("<think>what matters?</think>\n{said}")),
            said
        );
        assert_eq!(
            without_thinking(&format!("what matters?</think>{said}")),
            said
        );
        assert_eq!(
            without_thinking(&format!(
                "<|channel|>analysis<|message|>what matters?<|end|><|start|>assistant<|channel|>final<|message|>{said}"
            )),
            said
        );
    }
}
