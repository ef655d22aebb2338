//! Every question waiting for the user, in one place with one id space: may this tool call run
//! (approval), what does a server want filled in (elicitation), may a server use the model
//! (sampling). The chat loop asks ([`Broker::ask`]); the window or the CLI answers
//! ([`Broker::answer`]), or a [`Broker::answering`] responder answers at once.
//!
//! Edited arguments in an approval's answer are checked against the tool's schema first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::approval::{validate_arguments, ApprovalRequest, Decision};
use crate::mcp::{Elicitation, ElicitationAnswer, SamplingRequest};

pub type QuestionId = u64;

/// Something only the user can decide.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Question {
    /// May this tool call run (perhaps with edited arguments)?
    Approval(ApprovalRequest),
    /// A server asks for input during tool call `call_id`.
    #[serde(rename_all = "camelCase")]
    Elicitation {
        call_id: i64,
        elicitation: Elicitation,
    },
    /// A server asks to use the model during tool call `call_id`.
    #[serde(rename_all = "camelCase")]
    Sampling {
        call_id: i64,
        request: SamplingRequest,
    },
}

/// The user's answer, of the same kind as the question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Answer {
    Approval(Decision),
    Elicitation(ElicitationAnswer),
    Sampling { approve: bool },
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AnswerError {
    #[error("That question is no longer waiting for an answer.")]
    NotWaiting,
    #[error("That answer does not fit the question.")]
    WrongKind,
    /// Edited arguments that do not fit the tool's schema; the question keeps waiting.
    #[error("The arguments do not fit the tool: {}", .0.join("; "))]
    InvalidArguments(Vec<String>),
}

type Responder = dyn Fn(&Question) -> Answer + Send + Sync;

struct Waiting {
    question: Question,
    reply: oneshot::Sender<Answer>,
}

#[derive(Default)]
pub struct Broker {
    next: AtomicU64,
    waiting: Mutex<HashMap<QuestionId, Waiting>>,
    responder: Option<Box<Responder>>,
}

/// Takes a question off the waiting list when its asker stops waiting (answered, cancelled, or
/// dropped).
struct Unlist<'a>(&'a Broker, QuestionId);

impl Drop for Unlist<'_> {
    fn drop(&mut self) {
        self.0.waiting.lock().unwrap().remove(&self.1);
    }
}

impl Broker {
    /// Questions wait for [`Broker::answer`].
    pub fn new() -> Arc<Broker> {
        Arc::new(Broker::default())
    }

    /// Every question is answered at once by `respond` (the CLI's `--approve-all` or refusal,
    /// tests).
    pub fn answering(respond: impl Fn(&Question) -> Answer + Send + Sync + 'static) -> Arc<Broker> {
        Arc::new(Broker {
            responder: Some(Box::new(respond)),
            ..Broker::default()
        })
    }

    /// Allows every tool call and sampling request (tests, the CLI's `--approve-all`); declines
    /// what only a person can fill in (elicitations).
    pub fn allowing_all() -> Arc<Broker> {
        Self::answering(|q| match q {
            Question::Approval(_) => {
                Answer::Approval(Decision::of(super::approval::Action::AllowOnce))
            }
            Question::Elicitation { .. } => Answer::Elicitation(ElicitationAnswer::of(
                crate::mcp::ElicitationAction::Decline,
            )),
            Question::Sampling { .. } => Answer::Sampling { approve: true },
        })
    }

    /// Refuses everything that needs the user (the CLI without `--approve-all`).
    pub fn refusing_all() -> Arc<Broker> {
        Self::answering(|q| match q {
            Question::Approval(_) => Answer::Approval(Decision::of(super::approval::Action::Deny)),
            Question::Elicitation { .. } => Answer::Elicitation(ElicitationAnswer::of(
                crate::mcp::ElicitationAction::Decline,
            )),
            Question::Sampling { .. } => Answer::Sampling { approve: false },
        })
    }

    /// Asks the user. `announce` gets the question's id as soon as it can be answered (that is
    /// when the front end is told about it). `None` when `cancel` fires first.
    pub async fn ask(
        &self,
        question: Question,
        announce: impl FnOnce(QuestionId),
        cancel: &CancellationToken,
    ) -> Option<Answer> {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(respond) = &self.responder {
            announce(id);
            return Some(respond(&question));
        }
        let (reply, answer) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap()
            .insert(id, Waiting { question, reply });
        let _unlist = Unlist(self, id);
        announce(id);
        tokio::select! {
            a = answer => a.ok(),
            _ = cancel.cancelled() => None,
        }
    }

    /// Answers question `id`. Edited approval arguments are checked against the tool's schema
    /// first: when they do not fit, the question keeps waiting and the error says why.
    pub fn answer(&self, id: QuestionId, answer: Answer) -> Result<(), AnswerError> {
        let mut waiting = self.waiting.lock().unwrap();
        let w = waiting.get(&id).ok_or(AnswerError::NotWaiting)?;
        match (&w.question, &answer) {
            (Question::Approval(q), Answer::Approval(d)) => {
                if let (Some(args), Some(schema)) = (&d.arguments, &q.schema) {
                    validate_arguments(schema, &serde_json::Value::Object(args.clone()))
                        .map_err(AnswerError::InvalidArguments)?;
                }
            }
            (Question::Elicitation { .. }, Answer::Elicitation(_))
            | (Question::Sampling { .. }, Answer::Sampling { .. }) => {}
            _ => return Err(AnswerError::WrongKind),
        }
        let w = waiting.remove(&id).expect("looked up above");
        w.reply.send(answer).map_err(|_| AnswerError::NotWaiting)
    }

    /// The questions waiting now, oldest first.
    pub fn pending(&self) -> Vec<(QuestionId, Question)> {
        let waiting = self.waiting.lock().unwrap();
        let mut out: Vec<_> = waiting
            .iter()
            .map(|(id, w)| (*id, w.question.clone()))
            .collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::approval::Action;
    use crate::mcp::ElicitationAction;
    use serde_json::json;

    fn approval(schema: Option<serde_json::Value>) -> Question {
        Question::Approval(ApprovalRequest {
            id: 7,
            conversation_id: 1,
            name: "files__write_file".into(),
            server: "files".into(),
            tool: "write_file".into(),
            arguments: json!({"path": "a.txt"}),
            destructive: true,
            changed: None,
            unaccepted: None,
            schema,
            app: None,
        })
    }

    #[tokio::test]
    async fn a_question_waits_for_its_answer_of_the_right_kind() {
        let broker = Broker::new();
        let b = broker.clone();
        let asked = tokio::spawn(async move {
            b.ask(approval(None), |_| {}, &CancellationToken::new())
                .await
        });
        while broker.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        let (id, _) = broker.pending()[0].clone();
        assert_eq!(
            broker.answer(id, Answer::Sampling { approve: true }),
            Err(AnswerError::WrongKind)
        );
        broker
            .answer(id, Answer::Approval(Decision::of(Action::AllowOnce)))
            .unwrap();
        assert_eq!(
            asked.await.unwrap(),
            Some(Answer::Approval(Decision::of(Action::AllowOnce)))
        );
        assert!(broker.pending().is_empty());
        assert_eq!(
            broker.answer(id, Answer::Sampling { approve: true }),
            Err(AnswerError::NotWaiting)
        );
    }

    #[tokio::test]
    async fn edited_arguments_that_do_not_fit_keep_the_question_waiting() {
        let broker = Broker::new();
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}},
            "required": ["path"], "additionalProperties": false});
        let b = broker.clone();
        let asked = tokio::spawn(async move {
            b.ask(approval(Some(schema)), |_| {}, &CancellationToken::new())
                .await
        });
        while broker.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        let id = broker.pending()[0].0;
        let edited = |args: serde_json::Value| {
            Answer::Approval(Decision {
                action: Action::AllowOnce,
                arguments: Some(args.as_object().unwrap().clone()),
            })
        };
        let err = broker.answer(id, edited(json!({"path": 3}))).unwrap_err();
        assert!(
            matches!(err, AnswerError::InvalidArguments(ref e) if e[0].starts_with("/path")),
            "{err:?}"
        );
        assert_eq!(broker.pending().len(), 1, "still waiting");
        broker.answer(id, edited(json!({"path": "b.txt"}))).unwrap();
        assert!(asked.await.unwrap().is_some());
    }

    #[tokio::test]
    async fn cancelling_or_dropping_the_asker_takes_the_question_away() {
        let broker = Broker::new();
        let cancel = CancellationToken::new();
        let mut announced = None;
        let ask = broker.ask(approval(None), |id| announced = Some(id), &cancel);
        cancel.cancel();
        assert_eq!(ask.await, None);
        assert!(broker.pending().is_empty());
        assert_eq!(
            broker.answer(announced.unwrap(), Answer::Sampling { approve: false }),
            Err(AnswerError::NotWaiting)
        );
    }

    #[tokio::test]
    async fn a_responder_answers_at_once_and_ids_are_one_space() {
        let broker = Broker::answering(|q| match q {
            Question::Elicitation { .. } => {
                Answer::Elicitation(ElicitationAnswer::of(ElicitationAction::Decline))
            }
            _ => Answer::Sampling { approve: false },
        });
        let mut ids = vec![];
        let e = Question::Elicitation {
            call_id: 1,
            elicitation: Elicitation {
                server: "s".into(),
                message: "name?".into(),
                schema: None,
                url: None,
            },
        };
        let a = broker
            .ask(e, |id| ids.push(id), &CancellationToken::new())
            .await;
        assert_eq!(
            a,
            Some(Answer::Elicitation(ElicitationAnswer::of(
                ElicitationAction::Decline
            )))
        );
        broker
            .ask(approval(None), |id| ids.push(id), &CancellationToken::new())
            .await;
        assert_eq!(ids, vec![1, 2]);
    }
}
