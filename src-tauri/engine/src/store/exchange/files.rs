//! The images of an exported conversation: each message names its images by SHA-256 and name;
//! the document carries each image once (`files`, by SHA-256, the bytes in base64). An import
//! checks every file (the name is the hash of the bytes; it decodes within the limits) and keeps
//! it as it is when it is as Switchboard writes images (no metadata), else makes it again, so
//! an export of an import of an export is the same document, and nothing else gets in unread.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::{ExportedConversation, Store, StoreError};
use crate::media;

/// An image a message carries, in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedAttachment {
    pub name: String,
    pub sha256: String,
}

/// An image's bytes, once per document.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedFile {
    pub sha256: String,
    pub mime_type: String,
    /// Base64.
    pub data: String,
}

impl std::fmt::Debug for ExportedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ExportedFile({} {}, {} base64 chars)",
            self.sha256,
            self.mime_type,
            self.data.len()
        )
    }
}

/// The message attachments of conversation `id`, by message id (the database's), in order.
pub(super) fn attachments_of(
    c: &rusqlite::Connection,
    id: i64,
) -> rusqlite::Result<HashMap<i64, Vec<ExportedAttachment>>> {
    let mut st = c.prepare(
        "SELECT a.message_id, a.name, a.sha256 FROM message_attachments a
         JOIN messages m ON m.id = a.message_id
         WHERE m.conversation_id = ?1 ORDER BY a.message_id, a.position",
    )?;
    let mut out: HashMap<i64, Vec<ExportedAttachment>> = HashMap::new();
    let rows = st.query_map([id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            ExportedAttachment {
                name: r.get(1)?,
                sha256: r.get(2)?,
            },
        ))
    })?;
    for row in rows {
        let (m, a) = row?;
        out.entry(m).or_default().push(a);
    }
    Ok(out)
}

/// Every SHA-256 the document's messages name.
fn named(doc: &ExportedConversation) -> BTreeSet<String> {
    doc.messages
        .iter()
        .flat_map(|m| m.attachments.iter().map(|a| a.sha256.clone()))
        .collect()
}

/// Refuses a document whose messages name an image it does not carry.
pub(super) fn check(doc: &ExportedConversation) -> Result<(), StoreError> {
    let carried: BTreeSet<&str> = doc.files.iter().map(|f| f.sha256.as_str()).collect();
    if let Some(missing) = named(doc).iter().find(|s| !carried.contains(s.as_str())) {
        return Err(StoreError::Import(format!(
            "an attached image ({missing}) is not in the file"
        )));
    }
    Ok(())
}

impl Store {
    /// The images `doc`'s messages name, read from their files, in the order of their names.
    /// One whose file cannot be read (gone from the disk) is left out, and so are the messages'
    /// references to it: the rest of the conversation is still exported (as a turn still sends
    /// the rest of its history, with a note in the image's place).
    pub(super) async fn files_of(
        &self,
        doc: &mut ExportedConversation,
    ) -> Result<Vec<ExportedFile>, StoreError> {
        let mut files = Vec::new();
        let mut missing = BTreeSet::new();
        for sha in named(doc) {
            match self.kept_image(&sha).await {
                Ok(kept) => files.push(ExportedFile {
                    sha256: sha,
                    mime_type: kept.mime,
                    data: base64::engine::general_purpose::STANDARD.encode(&kept.bytes),
                }),
                Err(e) => {
                    tracing::warn!("an image is left out of the export: {e}");
                    missing.insert(sha);
                }
            }
        }
        for m in &mut doc.messages {
            m.attachments.retain(|a| !missing.contains(&a.sha256));
        }
        Ok(files)
    }

    /// Keeps the images a document to import carries (those its messages name): each is
    /// checked and kept as it is when clean, else made again; messages are made to name what was
    /// kept. Files no message names are dropped.
    pub(super) async fn keep_files(
        &self,
        doc: &mut ExportedConversation,
    ) -> Result<(), StoreError> {
        let wanted = named(doc);
        let mut renamed: BTreeMap<String, String> = BTreeMap::new();
        for f in std::mem::take(&mut doc.files) {
            if !wanted.contains(&f.sha256) || renamed.contains_key(&f.sha256) {
                continue;
            }
            let bad =
                |why: String| StoreError::Import(format!("the attached image {}: {why}", f.sha256));
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(f.data.as_bytes())
                .map_err(|e| bad(format!("its data is not base64 ({e})")))?;
            if bytes.len() > media::MAX_FILE_BYTES {
                return Err(bad("it is too big".into()));
            }
            let prepared = tokio::task::spawn_blocking(move || {
                let sha = media::sha256_hex(&bytes);
                media::guarded(|| media::import_image(&bytes)).map(|p| (sha, p))
            })
            .await
            .map_err(|e| bad(e.to_string()))?
            .map_err(|e| bad(e.to_string()))?;
            let (actual, image) = prepared;
            if actual != f.sha256 {
                return Err(bad("its bytes are not what its name says".into()));
            }
            self.keep_image(&image, "").await?;
            renamed.insert(f.sha256, image.sha256);
        }
        for m in &mut doc.messages {
            for a in &mut m.attachments {
                if let Some(kept) = renamed.get(&a.sha256) {
                    a.sha256 = kept.clone();
                }
            }
        }
        Ok(())
    }
}
