//! The chat loop: messages → LLM (with tools) → tool calls routed to MCP → results appended →
//! repeat until a reply has no tool calls or the iteration limit is reached. Every step is stored
//! as it happens and reported as a [`ChatEvent`].
//!
//! One file per concern: `turn.rs` (a turn: its setup and its rounds), `stream.rs` (one reply
//! streamed into a stored message), `tool_call.rs` (one call: its checks, the run, sampling and
//! elicitation during it), `app_calls.rs` (an MCP App's calls), `approve.rs` (the one decision
//! every call goes through, the model's and an app's), `tasks.rs` (tasks that outlive their
//! turn), `broker.rs` (the questions waiting for the user), `approval.rs` (the rules),
//! `text_tools.rs` (tools for models without native tool calling; `answer.rs` streams a
//! constrained reply's answer), `events.rs`, `tools.rs` (what the loop needs from a tool host),
//! `view.rs` (what the window shows of a stored conversation), `attachments.rs` (text attached to
//! a message), `files.rs` (the user's files made ready to send), `vision.rs` (images to the
//! model). For models that mangle tool calls: `families/` (the registry of every model family's
//! tool-call markup), `recover.rs` (calls and markup read from a whole reply, over the registry),
//! `gate.rs` (the streaming hold-back, over the same registry), `lenient.rs` and `pylit.rs` (JSON
//! and Python literals as models write them), `resolve.rs` (names), `repair.rs` (arguments),
//! `budget.rs` (tokens), `rank.rs` (which tools to offer). `check/` is the model check (does a
//! model use tools, and how). `context/` plans each request of a long conversation to fit the
//! model's context (stubs, summaries; `turn/compact.rs` writes the summaries).

pub mod answer;
mod app_calls;
pub mod approval;
mod approve;
mod attachments;
pub mod broker;
pub mod budget;
pub mod check;
pub mod context;
mod events;
mod files;
mod llm_queue;
pub mod markup;
pub mod rank;
mod stream;
mod tasks;
pub mod text_tools;
mod tool_call;
mod tools;
mod turn;
pub mod view;
mod vision;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::llm::LlmClient;
use crate::settings::{LiveSettings, Settings};
use crate::store::{Store, StoreError, ToolChoice};

pub use app_calls::{AppCaller, MAX_APP_CONTEXT_CHARS};
pub use attachments::{with_attachments, Attachment, MAX_ATTACHMENT_CHARS};
pub use broker::{Answer, AnswerError, Broker, Question, QuestionId};
pub use events::{ChatEvent, Compacted, Emit, SamplingOutcome};
pub use files::{attach_file, clean_name, AttachError, AttachedFile, ImageRef};
pub use tools::ToolHost;

// the markup layer, a crate of its own (crates/markup), under the names the loop has always used
pub use switchboard_markup::{families, gate, lenient, pylit, recover, repair, resolve, template};

pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful assistant in Switchboard, a desktop chat app. \
You can call tools when they help; use them for arithmetic and file work instead of guessing. \
After using tools, answer the user plainly.";

/// Sent (not stored) for a "wrap up" reply.
pub const WRAP_UP_PROMPT: &str = "The limit of tool calls for this turn has been reached. \
Answer the user now with what you have found so far. Do not call any tools.";

#[derive(Debug, Clone)]
pub struct ChatOptions {
    pub max_iterations: usize,
    /// More tools than this on: offer the most relevant this many (and those used already).
    pub max_offered_tools: usize,
    /// For conversations without their own.
    pub system_prompt: String,
    /// For conversations without their own.
    pub temperature: Option<f64>,
    pub num_ctx: Option<u32>,
    /// By model, for conversations without their own (over `num_ctx`).
    pub model_contexts: BTreeMap<String, u32>,
    /// For conversations without their own: what a request does when the conversation outgrows
    /// the model's context.
    pub context_policy: crate::store::ContextPolicy,
    /// The model that writes summaries of older turns; `None`: the conversation's.
    pub summary_model: Option<String>,
    /// Send `think` to models whose capabilities include `thinking`.
    pub thinking: bool,
    /// How each model gets its tools; a model not listed: by its capabilities.
    pub tool_modes: BTreeMap<String, crate::settings::ToolMode>,
    /// What Switchboard does for models that mangle tool calls (all on; off only to measure).
    pub aids: Aids,
    /// The longest side of an image as sent (a tool's, a server's; the user's are fitted when
    /// attached).
    pub image_max_side: u32,
    /// Skills off by default (`origin/name`), for chats that do not turn them on.
    pub skills_off: std::collections::BTreeSet<String>,
}

/// What Switchboard does for models that mangle tool calls. All are on; each can be switched off
/// to measure what it buys (`make eval-tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aids {
    /// Calls written in the reply's text, in any shape (off: only strict JSON, in text mode).
    pub recover: bool,
    /// Names as the model wrote them resolved to the tool it meant (off: exact names only).
    pub resolve: bool,
    /// Arguments repaired and checked against the schema before anything runs (off: sent as
    /// they came, for the server to judge).
    pub repair: bool,
    /// With many tools on, only the most relevant offered (off: all of them).
    pub rank: bool,
}

impl Default for Aids {
    fn default() -> Self {
        Aids {
            recover: true,
            resolve: true,
            repair: true,
            rank: true,
        }
    }
}

impl Default for ChatOptions {
    fn default() -> Self {
        ChatOptions::from_settings(&Settings::default())
    }
}

impl ChatOptions {
    pub fn from_settings(s: &Settings) -> ChatOptions {
        ChatOptions {
            max_iterations: s.max_iterations,
            max_offered_tools: s.max_offered_tools,
            system_prompt: s
                .system_prompt
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.into()),
            temperature: s.temperature,
            num_ctx: s.num_ctx,
            model_contexts: s.model_contexts.clone(),
            context_policy: s.context_policy,
            summary_model: s.summary_model.clone(),
            thinking: s.thinking,
            tool_modes: s.tool_modes.clone(),
            aids: Aids::default(),
            image_max_side: s.image_max_side,
            skills_off: s.skills_off.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request cannot be carried out as asked (e.g. editing a reply).
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Default)]
pub struct TurnRequest {
    /// `None` starts a new conversation.
    pub conversation_id: Option<i64>,
    pub model: String,
    pub text: String,
    /// When given, stored as the conversation's choice of servers and tools before the turn;
    /// otherwise the conversation's stored choice applies (a new one: everything).
    pub tool_choice: Option<ToolChoice>,
    /// Edit: `text` replaces this user message, as its sibling (a new branch).
    pub edit_of: Option<i64>,
    /// Regenerate: a new reply to this user message, a sibling of the old one; `text` is unused.
    pub regenerate: Option<i64>,
    /// After the iteration limit: go on with tools, or answer without them; `text` is unused.
    pub resume: Option<Resume>,
    /// The provider (its id in the settings) the engine's LLM client talks to; remembered by the
    /// conversation with the model.
    pub provider: Option<String>,
    /// When given, stored as the conversation's own settings before the turn (a new chat's).
    pub settings: Option<crate::store::ConversationSettings>,
    /// Send the model the result of this tool call, whose task ended after its turn; `text` is
    /// unused.
    pub late_result: Option<i64>,
    /// Images that go with `text` (kept in the store by [`attach_file`]). For an edit that names
    /// none, the edited message's stay.
    pub images: Vec<ImageRef>,
    /// For this turn only, what a request does when the conversation outgrows the context (the
    /// user's choice after a turn stopped to ask); `None`: the conversation's policy.
    pub context_policy: Option<crate::store::ContextPolicy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Resume {
    /// More rounds of tool calls.
    Continue,
    /// One last reply, without tools.
    WrapUp,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSummary {
    pub conversation_id: i64,
    pub stopped: bool,
    pub limit_reached: bool,
    pub llm_error: Option<String>,
    /// The loop guard stopped the turn: the model repeated this call.
    pub repeated_call: Option<String>,
    /// The turn stopped before a request that would not fit the model's context (a notice says
    /// why and what the user can do).
    pub context_full: bool,
}

/// What the engines of one app share between turns.
#[derive(Default)]
pub struct EngineShared {
    /// (conversation, tool's key) the user allowed for the rest of that conversation.
    pub allowed_in_conversation: Mutex<HashSet<approve::ChatToolKey>>,
    /// Calls under way, by tool-call id: cancelling one stops that call alone (the turn goes on).
    pub running_calls: Mutex<HashMap<i64, CancellationToken>>,
    /// What the LLM server said about each model (capabilities, context window), by model.
    pub models: Mutex<HashMap<String, crate::llm::ModelDetails>>,
    /// By LLM server and model: how many times bigger than estimated the server last said a
    /// request's prompt was (its tokenizer and chat template); estimates are multiplied by it.
    pub token_ratio: Mutex<HashMap<String, f64>>,
    /// The apps the user allowed a tool for the rest of a conversation ("Allow for this app").
    pub(crate) app_allowed: Mutex<HashSet<approve::AppToolKey>>,
    /// The question out about an app's calls of one tool: the calls that come meanwhile wait
    /// for its answer, which decides them all.
    pub(crate) app_questions: Mutex<HashMap<approve::AppToolKey, approve::AppQuestion>>,
    /// What the apps shown give the model, by conversation, then by shown app: (whose, what).
    pub(crate) app_context: Mutex<HashMap<i64, app_calls::AppContexts>>,
    /// The summaries being written in the background, by conversation (a request that needs
    /// one waits for it rather than asking for another).
    pub(crate) compactions: turn::Compactions,
    /// Where what happens outside a turn goes (a summary written in the background): the
    /// window's `watch_tasks`; nowhere when not set.
    pub background_events: Mutex<Option<BackgroundEvents>>,
    /// One request at a time to each LLM server (see `llm_queue`).
    pub(crate) llm_queues: llm_queue::LlmQueues,
}

/// Where the chat engine sends what happens outside a turn.
pub type BackgroundEvents = Arc<dyn Fn(ChatEvent) + Send + Sync>;

impl EngineShared {
    /// From now on, what happens outside a turn (a summary written in the background) goes to
    /// `emit`.
    pub fn set_background_events(&self, emit: BackgroundEvents) {
        *self.background_events.lock().unwrap() = Some(emit);
    }

    /// Stops one running tool call (the card's Stop); false when it is not running.
    pub fn cancel_call(&self, id: i64) -> bool {
        match self.running_calls.lock().unwrap().get(&id) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }
}

#[derive(Clone)]
pub struct ChatEngine {
    pub llm: Arc<dyn LlmClient>,
    pub tools: Arc<dyn ToolHost>,
    pub store: Store,
    pub options: ChatOptions,
    /// Where questions for the user go (approvals, elicitations, sampling).
    pub broker: Arc<Broker>,
    /// The app's settings: standing tool policies are read here, and "always allow" is
    /// remembered here.
    pub settings: Arc<LiveSettings>,
    pub shared: Arc<EngineShared>,
}

impl ChatEngine {
    /// Waits until this engine's LLM server has no other request of the app under way (a
    /// summary, another chat's reply); `waiting` is called first when it has. Every request to
    /// the LLM is sent while holding what this returns; `None`: cancelled while waiting.
    pub(crate) async fn llm_turn(
        &self,
        waiting: impl FnOnce(),
        cancel: &CancellationToken,
    ) -> Option<llm_queue::LlmTurn> {
        self.shared
            .llm_queues
            .turn(self.llm.base_url(), waiting, cancel)
            .await
    }
}

/// A new conversation's title: its first message's first line, else (a message that is only
/// attachments) the first attachment's name.
fn title_of(req: &TurnRequest) -> String {
    let typed = if req.text.starts_with("<attachment name=\"") {
        ""
    } else {
        match req.text.find("\n\n<attachment name=\"") {
            Some(at) => &req.text[..at],
            None => &req.text,
        }
    };
    if !typed.trim().is_empty() {
        return title_from(typed);
    }
    let attached = req
        .text
        .split("<attachment name=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|n| n.replace("&quot;", "\"").replace("&amp;", "&"))
        .or_else(|| req.images.first().map(|i| i.name.clone()));
    title_from(attached.as_deref().unwrap_or(""))
}

fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("New chat");
    let mut t: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        t.push('…');
    }
    t
}

/// Arguments as a value to compare: a JSON string is parsed, so `{"a":1}` and `"{\"a\": 1}"` match.
fn normalized_arguments(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_of_attachments_is_titled_by_the_first() {
        let req = |text: &str, images: &[&str]| TurnRequest {
            text: text.into(),
            images: images
                .iter()
                .map(|n| ImageRef {
                    sha256: String::new(),
                    name: n.to_string(),
                })
                .collect(),
            ..Default::default()
        };
        let doc =
            "<attachment name=\"a &amp; b.pdf\" type=\"application/pdf\">\ntext\n</attachment>";
        assert_eq!(title_of(&req(doc, &[])), "a & b.pdf");
        let two =
            format!("{doc}\n\n<attachment name=\"b.md\" type=\"text/plain\">\nb\n</attachment>");
        assert_eq!(title_of(&req(&two, &[])), "a & b.pdf");
        assert_eq!(
            title_of(&req(&format!("summarise\n\n{doc}"), &[])),
            "summarise"
        );
        assert_eq!(title_of(&req("", &["shot.png"])), "shot.png");
        assert_eq!(title_of(&req("", &[])), "New chat");
    }

    #[test]
    fn titles_and_arguments_to_compare() {
        assert_eq!(title_from("\n  what is 2+40?\nmore"), "what is 2+40?");
        assert_eq!(title_from(&"x".repeat(70)).chars().count(), 61);
        assert_eq!(
            normalized_arguments(&json!("{\"a\": 1}")),
            normalized_arguments(&json!({"a": 1}))
        );
    }
}
