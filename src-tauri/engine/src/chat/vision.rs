//! Images to the model: the user's (read from the store, for the new message and for the
//! history), a tool's (decoded, fitted and kept like the user's, then on the tool message), a
//! server's sampling request's. What a request carries is fitted to what the model sees: a
//! model that does not see images is never sent one silently (a new message with images is
//! refused; older images become a note), and a tool's images go only to a model known to see
//! them (the others read the text note they always had).
//!
//! The new message's images are named in the request by SHA-256 (an edit keeps the edited
//! message's); the history's are read from the store (a missing file becomes a note); a tool's are
//! decoded, fitted and kept with the tool message; a sampling request's decoded, not kept. `fit`
//! shapes what a request carries by `ModelDetails::vision`: yes — everything; no — notes instead,
//! and a new message with images refused before anything is stored; not said (an OpenAI-compatible
//! server without `/props`) — the user's images, not tools'.

use base64::Engine as _;

use super::files::{clean_name, ImageRef};
use super::{ChatEngine, ChatError, TurnRequest};
use crate::llm::{Image, Message, Role};
use crate::mcp::ResultImage;
use crate::media;
use crate::store::{AttachedImage, KeptImage, StoredMessage};

fn to_image(kept: KeptImage, name: &str) -> Image {
    Image {
        sha256: kept.sha256,
        name: name.to_string(),
        mime: kept.mime,
        width: kept.width,
        height: kept.height,
        base64: base64::engine::general_purpose::STANDARD
            .encode(&kept.bytes)
            .into(),
    }
}

/// What a model that does not see an image reads in its place.
fn unseen(name: &str) -> String {
    format!("[image {name}: not shown, this model does not see images]")
}

/// `messages` fitted to what the model sees (`vision`: `None` when its server does not say):
/// a model that does not see images gets a note for each of the user's and no tool's; one
/// whose server does not say gets the user's images (they chose to send them; the server
/// answers if it cannot) and not the tools'.
pub(super) fn fit(messages: &mut [Message], vision: Option<bool>) {
    for m in messages.iter_mut().filter(|m| !m.images.is_empty()) {
        let keep = match vision {
            Some(true) => true,
            Some(false) => false,
            None => m.role != Role::Tool,
        };
        if keep {
            continue;
        }
        if m.role != Role::Tool {
            // a tool's result already names its images in its text
            let notes: Vec<String> = m.images.iter().map(|i| unseen(&i.name)).collect();
            if !m.content.is_empty() {
                m.content.push_str("\n\n");
            }
            m.content.push_str(&notes.join("\n"));
        }
        m.images.clear();
    }
}

impl ChatEngine {
    /// Whether `model` sees images (`None`: its server does not say).
    pub(super) async fn sees_images(&self, model: &str) -> Option<bool> {
        self.model_details(model).await.vision
    }

    /// The images of the user's new message: those the request names, or for an edit that
    /// names none, the edited message's (they stay, as its text attachments do). Refused, before
    /// anything is stored, when the model is known not to see images.
    pub(super) async fn user_images(&self, req: &TurnRequest) -> Result<Vec<Image>, ChatError> {
        let mut refs = req.images.clone();
        if refs.is_empty() {
            if let Some(edited) = req.edit_of {
                refs = self
                    .store
                    .message(edited)
                    .await?
                    .attachments
                    .into_iter()
                    .map(|a| ImageRef {
                        sha256: a.sha256,
                        name: a.name,
                    })
                    .collect();
            }
        }
        if refs.is_empty() {
            return Ok(vec![]);
        }
        if self.sees_images(&req.model).await == Some(false) {
            return Err(ChatError::Invalid(format!(
                "{} does not see images: choose a model that does (a vision model), or remove the images",
                req.model
            )));
        }
        let mut images = Vec::with_capacity(refs.len());
        for r in &refs {
            let kept = self.store.kept_image(&r.sha256).await.map_err(|e| {
                ChatError::Invalid(format!("{} cannot be sent: {e}", clean_name(&r.name)))
            })?;
            images.push(to_image(kept, &clean_name(&r.name)));
        }
        Ok(images)
    }

    /// The history with each message's images read from the store (an image whose file is
    /// gone becomes a note), fitted to what `model` sees.
    pub(super) async fn history_with_images<'a>(
        &self,
        stored: impl Iterator<Item = &'a StoredMessage>,
        vision: Option<bool>,
    ) -> Vec<Message> {
        let mut out = Vec::new();
        for m in stored {
            let mut msg = m.to_llm();
            for a in &m.attachments {
                match self.load(a).await {
                    Some(image) => msg.images.push(image),
                    None => {
                        msg.content
                            .push_str(&format!("\n\n[image {}: its file is missing]", a.name));
                    }
                }
            }
            out.push(msg);
        }
        fit(&mut out, vision);
        out
    }

    async fn load(&self, a: &AttachedImage) -> Option<Image> {
        match self.store.kept_image(&a.sha256).await {
            Ok(kept) => Some(to_image(kept, &a.name)),
            Err(e) => {
                tracing::warn!("an image of the conversation cannot be read: {e}");
                None
            }
        }
    }

    /// A server's images (a tool's result, a sampling request) made fit to send: decoded within
    /// limits off the async threads, downscaled, re-encoded; kept in the store when `keep` (a
    /// tool's, which the conversation carries). Named "`what` image N". One that cannot be read
    /// is left out, with a note saying why.
    pub(super) async fn server_images(
        &self,
        what: &str,
        images: &[ResultImage],
        keep: bool,
    ) -> (Vec<Image>, Vec<String>) {
        let mut out = Vec::new();
        let mut notes = Vec::new();
        let max_side = self.options.image_max_side;
        for (i, ri) in images.iter().enumerate() {
            let name = format!("{what} image {}", i + 1);
            let data: String = ri.data.chars().filter(|c| !c.is_whitespace()).collect();
            let prepared = match base64::engine::general_purpose::STANDARD.decode(data) {
                Err(e) => Err(format!("its data is not base64 ({e})")),
                Ok(bytes) if bytes.len() > media::MAX_FILE_BYTES => Err(format!(
                    "it is bigger than {} MB",
                    media::MAX_FILE_BYTES / (1024 * 1024)
                )),
                Ok(bytes) => tokio::task::spawn_blocking(move || {
                    media::guarded(|| media::prepare_image(&bytes, max_side))
                })
                .await
                .unwrap_or(Err(media::MediaError::Crashed))
                .map_err(|e| e.to_string()),
            };
            let img = match prepared {
                Ok(img) => img,
                Err(why) => {
                    notes.push(format!("[{name} was not passed on: {why}]"));
                    continue;
                }
            };
            if keep {
                if let Err(e) = self.store.keep_image(&img, &name).await {
                    notes.push(format!("[{name} was not passed on: {e}]"));
                    continue;
                }
            }
            out.push(Image {
                sha256: img.sha256,
                name,
                mime: img.mime.to_string(),
                width: img.width,
                height: img.height,
                base64: base64::engine::general_purpose::STANDARD
                    .encode(&img.bytes)
                    .into(),
            });
        }
        (out, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(name: &str) -> Image {
        Image {
            sha256: "0".repeat(64),
            name: name.into(),
            mime: "image/png".into(),
            width: 10,
            height: 10,
            base64: "AAAA".into(),
        }
    }

    fn conversation() -> Vec<Message> {
        let user = Message {
            images: vec![img("cat.png")],
            ..Message::new(Role::User, "what is this?")
        };
        let tool = Message {
            images: vec![img("shot image 1")],
            ..Message::new(Role::Tool, "[image image/png]")
        };
        vec![user, tool]
    }

    #[test]
    fn a_model_that_sees_gets_every_image() {
        let mut m = conversation();
        fit(&mut m, Some(true));
        assert_eq!(m, conversation());
    }

    #[test]
    fn a_model_that_does_not_see_gets_notes_and_no_image() {
        let mut m = conversation();
        fit(&mut m, Some(false));
        assert!(m.iter().all(|m| m.images.is_empty()));
        assert_eq!(
            m[0].content,
            "what is this?\n\n[image cat.png: not shown, this model does not see images]"
        );
        assert_eq!(m[1].content, "[image image/png]");
    }

    #[test]
    fn a_model_nobody_vouches_for_gets_the_users_images_only() {
        let mut m = conversation();
        fit(&mut m, None);
        assert_eq!(m[0].images.len(), 1);
        assert!(m[1].images.is_empty());
        assert_eq!(m[0].content, "what is this?");
    }
}
