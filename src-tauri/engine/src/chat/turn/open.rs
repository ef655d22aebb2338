//! A turn's setup: the conversation (new, or a branch for an edit or a regeneration), what the
//! request changes in it (its settings over the app's, its model, its tool choice), the new
//! messages stored, and how the turn talks to its model; the history the model gets.

use std::collections::HashSet;

use super::super::events::{ChatEvent, Emit};
use super::super::families::FamilyId;
use super::super::stream::ToolsIn;
use super::super::{title_of, ChatEngine, ChatError, Resume, TurnRequest, WRAP_UP_PROMPT};
use super::Turn;
use crate::chat::context::{self, Meta};
use crate::llm::{GenOptions, Message, ModelDetails, Role};
use crate::settings::ToolMode;
use crate::store::{Conversation, ConversationSettings, MessageStatus, Notice, StoredMessage};

/// How a turn talks to its model (see `ChatEngine::model_setup`).
pub(super) struct ModelSetup {
    pub gen: GenOptions,
    /// The model's context, in tokens.
    pub window: usize,
    /// The server does not say it: `window` is `context::DEFAULT_CONTEXT`.
    pub assumed: bool,
    pub tools_in: ToolsIn,
    pub family: Option<FamilyId>,
}

/// The conversation's messages the model gets: not notices, nor replies that failed before they
/// said anything.
pub(super) fn history_for_model(conv: &Conversation) -> impl Iterator<Item = &StoredMessage> {
    conv.messages.iter().filter(|m| {
        m.status != MessageStatus::Notice
            && !(m.status == MessageStatus::Error && m.content.is_empty())
    })
}

/// What the plan needs to know of each of `history`'s messages.
pub(super) fn meta_of<'a>(history: impl Iterator<Item = &'a StoredMessage>) -> Vec<Meta> {
    history
        .map(|m| Meta {
            id: Some(m.id),
            pinned: m.pinned,
        })
        .collect()
}

impl ChatEngine {
    /// The conversation (new, or a branch of an old one), its settings and the messages the model
    /// gets; the user's message (or `late`: a task's late result, as a call and its result)
    /// stored and announced.
    pub(super) async fn open_turn(
        &self,
        req: &TurnRequest,
        late: Option<Vec<Message>>,
        emit: Emit<'_>,
    ) -> Result<Turn, ChatError> {
        let adds_message = req.regenerate.is_none() && req.resume.is_none();
        // checked before anything is stored: a model that does not see images gets none
        let images = if adds_message {
            self.user_images(req).await?
        } else {
            vec![]
        };
        let vision = self.sees_images(&req.model).await;
        // the user's own skills as their folder holds them now (their frontmatter only)
        self.tools.refresh_skills();
        let conversation_id = self.conversation_for(req, adds_message).await?;
        self.start_branch(conversation_id, req).await?;
        let mut conv = self.store.conversation(conversation_id).await?;
        self.update_conversation(conversation_id, req, &mut conv)
            .await?;
        let history = self
            .history_with_images(history_for_model(&conv), vision)
            .await;
        let history_meta = meta_of(history_for_model(&conv));
        let used_tools: HashSet<String> = conv.tool_calls.iter().map(|t| t.name.clone()).collect();
        let added = match late {
            Some(late) => late,
            None if adds_message => vec![Message {
                images,
                ..Message::new(Role::User, req.text.clone())
            }],
            None => vec![],
        };
        let user_message_id = self.store_added(conversation_id, &added).await?;
        // stored whole; the model gets a late result's images only when it sees images
        let mut added = added;
        super::super::vision::fit(&mut added, vision);
        emit(ChatEvent::TurnStarted {
            conversation_id,
            user_message_id,
            title: conv.summary.title.clone(),
            model: req.model.clone(),
        });

        let setup = self.model_setup(&req.model, &conv.settings).await;
        let (mut messages, mut meta) = self.system_prompt(&conv);
        messages.extend(history);
        meta.extend(history_meta);
        let added_meta = added.iter().map(|m| Meta {
            id: (m.role == Role::User).then_some(user_message_id).flatten(),
            pinned: false,
        });
        meta.extend(added_meta.collect::<Vec<_>>());
        messages.extend(added);
        // what the apps shown in this chat give the model (`ui/update-model-context`)
        let before = messages.len();
        self.add_app_context(conversation_id, &mut messages);
        if messages.len() > before {
            // (a system message of its own, first)
            meta.insert(0, Meta::default());
        }
        let wrap_up = req.resume == Some(Resume::WrapUp);
        if wrap_up {
            // not stored: an instruction for this one reply
            messages.push(Message::new(Role::System, WRAP_UP_PROMPT));
            meta.push(Meta::default());
        }
        let stubs_told = conv
            .messages
            .iter()
            .any(|m| matches!(m.notice, Some(Notice::ResultsStubbed { .. })));
        Ok(Turn {
            conversation_id,
            model: req.model.clone(),
            tool_choice: conv.tool_choice,
            skills: conv.settings.skills.clone(),
            messages,
            meta,
            gen: setup.gen,
            tools_in: setup.tools_in,
            wrap_up,
            names: vec![],
            used_tools,
            window: setup.window,
            window_assumed: setup.assumed,
            policy: req
                .context_policy
                .or(conv.settings.context_policy)
                .unwrap_or(self.options.context_policy),
            summary: conv.summarised,
            stubs_told,
            tools_tokens: 0,
            family: setup.family,
            last_estimate: 0,
            vision,
        })
    }

    /// The system prompt a conversation's requests start with (its own, else the app's; none
    /// when it is empty), with its meta.
    pub(super) fn system_prompt(&self, conv: &Conversation) -> (Vec<Message>, Vec<Meta>) {
        let prompt = conv
            .settings
            .system_prompt
            .clone()
            .unwrap_or_else(|| self.options.system_prompt.clone());
        if prompt.trim().is_empty() {
            return (vec![], vec![]);
        }
        (
            vec![Message::new(Role::System, prompt)],
            vec![Meta::default()],
        )
    }

    /// The turn's conversation: the one named (its new settings checked first), or a new one
    /// named after the user's words; only a turn that adds a message may start one.
    async fn conversation_for(
        &self,
        req: &TurnRequest,
        adds_message: bool,
    ) -> Result<i64, ChatError> {
        if let Some(s) = &req.settings {
            s.validate()
                .map_err(|e| ChatError::Invalid(e.to_string()))?;
        }
        Ok(match req.conversation_id {
            Some(id) => id,
            None if adds_message => {
                self.store
                    .create_conversation(&title_of(req), &req.model)
                    .await?
            }
            None => {
                return Err(ChatError::Invalid(
                    "only an existing conversation can be regenerated or continued".into(),
                ))
            }
        })
    }

    /// What the request changes in the conversation, stored and applied to `conv`: continued
    /// (when it was imported), its settings (with the provider), its model, its tool choice.
    async fn update_conversation(
        &self,
        conversation_id: i64,
        req: &TurnRequest,
        conv: &mut Conversation,
    ) -> Result<(), ChatError> {
        if conv.summary.imported {
            // from here on, the user has seen what the model is told
            self.store.mark_continued(conversation_id).await?;
        }
        // the conversation remembers its own settings, the provider and the model it talks to
        let mut settings = match &req.settings {
            Some(s) => ConversationSettings {
                provider: conv.settings.provider.clone(),
                ..s.clone()
            },
            None => conv.settings.clone(),
        };
        if req.provider.is_some() {
            settings.provider = req.provider.clone();
        }
        if settings != conv.settings {
            self.store.set_settings(conversation_id, &settings).await?;
            conv.settings = settings;
        }
        if req.model != conv.summary.model {
            self.store.set_model(conversation_id, &req.model).await?;
        }
        if let Some(choice) = &req.tool_choice {
            self.store.set_tool_choice(conversation_id, choice).await?;
            conv.tool_choice = choice.clone();
        }
        Ok(())
    }

    /// Stores the turn's new messages (the user's, or a late result's call and result); the id
    /// of the user's.
    async fn store_added(
        &self,
        conversation_id: i64,
        added: &[Message],
    ) -> Result<Option<i64>, ChatError> {
        let mut user_message_id = None;
        for m in added {
            let id = self
                .store
                .append_message(conversation_id, m, MessageStatus::Complete)
                .await?;
            if m.role == Role::User {
                user_message_id = Some(id);
            }
        }
        Ok(user_message_id)
    }

    /// How the turn talks to `model`: its generation options (the conversation's settings, else
    /// the app's; thinking when the model can), the context it really has, how it gets its
    /// tools, and the family of markup it writes.
    pub(super) async fn model_setup(
        &self,
        model: &str,
        settings: &ConversationSettings,
    ) -> ModelSetup {
        let details = self.model_details(model).await;
        let capabilities = &details.capabilities;
        let can = |c: &str| capabilities.iter().any(|x| x == c);
        // the chat's context, else the model's, else the app's: sent (Ollama runs with it)
        let num_ctx = settings
            .num_ctx
            .or_else(|| self.options.model_contexts.get(model).copied())
            .or(self.options.num_ctx);
        let gen = GenOptions {
            temperature: settings.temperature.or(self.options.temperature),
            num_ctx,
            think: (self.options.thinking && can("thinking")).then_some(true),
            format: None,
            max_tokens: None,
        };
        // the context the model really has: what we ask for (a server that does not take it has
        // the one it started with: the smaller), else what the server gives it, else a default
        let server = details.default_context;
        let (window, assumed) = match (num_ctx, server) {
            (Some(n), Some(s)) if !self.llm.sets_context() => (n.min(s) as usize, false),
            (Some(n), _) => (n as usize, false),
            (None, Some(s)) => (s as usize, false),
            (None, None) => (context::DEFAULT_CONTEXT, true),
        };
        // models without native tool calling get their tools in the system prompt
        let tools_in = match self.options.tool_modes.get(model) {
            Some(ToolMode::Text) => ToolsIn::Text,
            Some(ToolMode::Json) => ToolsIn::Json,
            Some(ToolMode::Native) => ToolsIn::Native,
            None if !capabilities.is_empty() && !can("tools") => ToolsIn::Text,
            None => ToolsIn::Native,
        };
        ModelSetup {
            gen,
            window,
            assumed,
            tools_in,
            family: super::super::markup::of_model(model, &details),
        }
    }

    /// An edit or a regeneration starts a new branch: a sibling of the edited message, or of the
    /// reply being regenerated.
    async fn start_branch(&self, conversation_id: i64, req: &TurnRequest) -> Result<(), ChatError> {
        if let Some(edited) = req.edit_of {
            let m = self.store.message(edited).await?;
            if m.role != Role::User {
                return Err(ChatError::Invalid(
                    "only your own messages can be edited".into(),
                ));
            }
            self.store
                .branch_after(conversation_id, m.parent_id)
                .await?;
        }
        if let Some(asked) = req.regenerate {
            if self.store.message(asked).await?.role != Role::User {
                return Err(ChatError::Invalid(
                    "a reply is regenerated from the message it answers".into(),
                ));
            }
            self.store
                .branch_after(conversation_id, Some(asked))
                .await?;
        }
        Ok(())
    }

    /// What the server says about a model (capabilities, context), asked once per model; nothing
    /// when it does not say.
    pub(in crate::chat) async fn model_details(&self, model: &str) -> ModelDetails {
        if let Some(d) = self.shared.models.lock().unwrap().get(model) {
            return d.clone();
        }
        match self.llm.model_details(model).await {
            Ok(d) => {
                self.shared
                    .models
                    .lock()
                    .unwrap()
                    .insert(model.to_string(), d.clone());
                d
            }
            // not cached: the chat request will report what is wrong
            Err(_) => ModelDetails::default(),
        }
    }
}
