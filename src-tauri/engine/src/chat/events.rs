//! What a front end hears of a turn as it happens: [`ChatEvent`]s, serialized with a `type` tag
//! (the window gets them through a Channel, the CLI prints them as NDJSON). States are codes
//! (enums); the front end words them.
//!
//! The codes: `Approval`, `Notice`, `MessageStatus`, `SamplingOutcome`, `LlmErrorKind`, never
//! sentences.

use serde::Serialize;
use serde_json::Value;

use super::broker::QuestionId;
use crate::llm::LlmErrorKind;
use crate::mcp::{Elicitation, SamplingRequest};
use crate::store::{Approval, ContextPolicy, EarlierSummary, MessageStatus, Notice};

/// What a request left out or shortened to fit the model's context (`chat::context`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compacted {
    /// Older tool results sent as stubs.
    pub stubbed: usize,
    /// Messages the summary stood for.
    pub summarised: usize,
    /// Messages left out (`ContextPolicy::DropOldest`).
    pub dropped: usize,
}

/// How a server's sampling request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SamplingOutcome {
    /// The model answered; the server got the reply.
    Answered,
    /// The user said no (or stopped it).
    Declined,
    /// The model failed; the server was told why.
    Failed,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ChatEvent {
    /// `user_message_id` is `None` when the turn adds no message (regenerate, continue, wrap up).
    #[serde(rename_all = "camelCase")]
    TurnStarted {
        conversation_id: i64,
        user_message_id: Option<i64>,
        title: String,
        model: String,
    },
    #[serde(rename_all = "camelCase")]
    AssistantStarted { message_id: i64 },
    /// `html` is the whole reply so far, rendered; sent at most every 80 ms.
    #[serde(rename_all = "camelCase")]
    TextDelta {
        message_id: i64,
        text: String,
        html: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingDelta { message_id: i64, text: String },
    #[serde(rename_all = "camelCase")]
    AssistantDone {
        message_id: i64,
        status: MessageStatus,
        content: String,
        html: String,
    },
    /// Before each request to the model: about how many tokens it takes (system prompt, tools,
    /// history), of the context the model has (`limit`; `limit_assumed`: the server does not say,
    /// this is `chat::context::DEFAULT_CONTEXT`); how many tools it was offered of those on for
    /// this chat; what was compacted to make it fit, and when the next request is: over `room`
    /// tokens (the context less the reply's share) older results become stubs, then older turns
    /// are summarised, left out or the user is asked (`policy`); over `compact_at`, a summary is
    /// prepared in the background.
    #[serde(rename_all = "camelCase")]
    Context {
        used: usize,
        limit: Option<usize>,
        limit_assumed: bool,
        tools_offered: usize,
        tools_on: usize,
        compacted: Compacted,
        room: usize,
        compact_at: usize,
        policy: ContextPolicy,
    },
    /// The request waits while older turns of `conversation_id` are summarised (it would not fit
    /// without a summary reaching further).
    #[serde(rename_all = "camelCase")]
    Compacting { conversation_id: i64 },
    /// The request waits for the LLM server to finish another of the app's requests (a summary
    /// written in the background, another chat's reply): one at a time to each server.
    #[serde(rename_all = "camelCase")]
    LlmBusy { conversation_id: i64 },
    /// A summary of older turns of `conversation_id` was written: it stands for them in requests
    /// from now on (shown folded in the conversation after the last message it covers).
    #[serde(rename_all = "camelCase")]
    Summarised {
        conversation_id: i64,
        summary: EarlierSummary,
    },
    /// `name` is what runs; `written` what the model wrote, when that was resolved to `name`.
    #[serde(rename_all = "camelCase")]
    ToolCallStarted {
        id: i64,
        message_id: i64,
        name: String,
        written: Option<String>,
        server: String,
        tool: String,
        arguments: Value,
    },
    /// The model's arguments did not fit the tool's schema as they were; these do (each repair
    /// in words).
    #[serde(rename_all = "camelCase")]
    ToolCallArguments {
        id: i64,
        arguments: Value,
        repairs: Vec<String>,
    },
    /// A server asks the user for input during a call: answer question `question_id`.
    #[serde(rename_all = "camelCase")]
    ElicitationRequested {
        call_id: i64,
        question_id: QuestionId,
        elicitation: Elicitation,
    },
    /// A server asks for a completion from the model during a call: the user answers question
    /// `question_id`; the outcome follows as `samplingFinished`.
    #[serde(rename_all = "camelCase")]
    SamplingRequested {
        call_id: i64,
        question_id: QuestionId,
        request: SamplingRequest,
    },
    /// `text` is the model's answer when there is one; `error` why it failed.
    #[serde(rename_all = "camelCase")]
    SamplingFinished {
        call_id: i64,
        question_id: QuestionId,
        outcome: SamplingOutcome,
        model: String,
        text: Option<String>,
        error: Option<String>,
    },
    /// A running call reported progress (`total` when the server knows it).
    #[serde(rename_all = "camelCase")]
    ToolCallProgress {
        id: i64,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// Call `id` runs as a task on its server: where it is now (`working`, `input_required`,
    /// `completed`, `failed`, `cancelled`, `lost`), in the server's words when it gave some, and
    /// why a lost one is.
    #[serde(rename_all = "camelCase")]
    ToolCallTask {
        id: i64,
        status: String,
        message: Option<String>,
        /// Why it ended, when that was not its tool's doing (status `lost`).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<crate::mcp::TaskEnd>,
    },
    /// Call `id` of `conversation_id` runs as a task its server still runs from before the app
    /// started, and is followed again: what comes next about it arrives outside any turn.
    #[serde(rename_all = "camelCase")]
    TaskFollowed { id: i64, conversation_id: i64 },
    /// The task of call `id` ended after the turn that started it: its result waits for the user
    /// to send it to the model.
    #[serde(rename_all = "camelCase")]
    TaskResultWaiting { id: i64, conversation_id: i64 },
    /// Call `id` waits for the user: answer question `question_id`.
    #[serde(rename_all = "camelCase")]
    ApprovalRequested {
        id: i64,
        question_id: QuestionId,
        name: String,
        server: String,
        tool: String,
        arguments: Value,
        destructive: bool,
        /// The tool's definition is not one the user accepted: what changed (for a new or
        /// unchecked tool, all of it).
        changed: Option<Vec<crate::mcp::pins::DiffLine>>,
        /// Why it is not accepted: `changed`, `new` (or renamed), `unchecked`.
        unaccepted: Option<crate::mcp::pins::Unaccepted>,
    },
    /// The app shown on call `app_of`'s card (named `app`) wants to call `server`'s `tool`, and the
    /// user is asked there: answer question `question_id`. `waiting`: how many of its calls of
    /// that tool the answer decides (this one and those that came while it was being asked).
    #[serde(rename_all = "camelCase")]
    AppApprovalRequested {
        app_of: i64,
        question_id: QuestionId,
        app: String,
        server: String,
        tool: String,
        arguments: Value,
        destructive: bool,
        changed: Option<Vec<crate::mcp::pins::DiffLine>>,
        unaccepted: Option<crate::mcp::pins::Unaccepted>,
        waiting: usize,
    },
    /// Another call of the same app and tool (with `arguments`) waits for question
    /// `question_id`'s answer: `waiting` calls in all now.
    #[serde(rename_all = "camelCase")]
    AppApprovalWaiting {
        app_of: i64,
        question_id: QuestionId,
        waiting: usize,
        arguments: Value,
    },
    /// The question `question_id` on call `app_of`'s app is settled (`approval`: how).
    #[serde(rename_all = "camelCase")]
    AppApprovalResolved {
        app_of: i64,
        question_id: QuestionId,
        approval: Approval,
    },
    /// A call was for a tool of `server`, which waits for the user to sign in: the window offers it.
    SignInNeeded { server: String },
    /// How call `id` came to run or not; `edited`: with the user's arguments.
    #[serde(rename_all = "camelCase")]
    ApprovalResolved {
        id: i64,
        approval: Approval,
        edited: bool,
        arguments: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallFinished {
        id: i64,
        result: String,
        is_error: bool,
        duration_ms: i64,
        /// The server's whole result (content blocks, structuredContent), for the card.
        raw: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    Notice { message_id: i64, notice: Notice },
    #[serde(rename_all = "camelCase")]
    Error {
        message: String,
        kind: LlmErrorKind,
        url: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Done {
        conversation_id: i64,
        stopped: bool,
        limit_reached: bool,
    },
}

/// Where a turn's events go.
pub type Emit<'a> = &'a (dyn Fn(ChatEvent) + Send + Sync);
