//! Attached images: content-addressed files (named by the SHA-256 of their bytes, in
//! `attachments/` next to the database, two hex digits a folder, each file 0600), one row each in
//! `attachments` (type, size, thumbnail), and the messages that carry them in
//! `message_attachments`. The same screenshot attached twice is kept once. A file no message
//! refers to is removed when the store opens, once it is an hour old (a window's attachment not
//! yet sent, or another process's file being written, is younger).
//!
//! Links are made as a message is inserted. A store in memory keeps the images in memory. An image
//! file is kept once however many messages carry it, and removed only when none does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{named_params, params, OptionalExtension};
use serde::Serialize;

use super::schema::SHOWN_PATH;
use super::{now_ms, Store, StoreError, StoredMessage};
use crate::media::{self, PreparedImage};

/// An unreferenced file younger than this is kept (it may be about to be sent).
const GRACE_MS: i64 = 60 * 60 * 1000;

/// An image a message carries, as the window shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachedImage {
    /// Its name in the store.
    pub sha256: String,
    /// The file's name (as the user's file was called, or what a tool's image is called).
    pub name: String,
    pub mime: String,
    pub width: u32,
    pub height: u32,
    /// Bytes of the image as kept.
    pub bytes: u64,
    /// A small version, as a `data:` URL (built here, from what `media` wrote).
    pub thumbnail: String,
}

/// Where the files are: a folder, or memory (a store in memory, for tests).
#[derive(Clone)]
pub(super) enum Files {
    Dir(PathBuf),
    Memory(Arc<Mutex<HashMap<String, Vec<u8>>>>),
}

fn valid_name(sha256: &str) -> bool {
    sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

impl Files {
    fn path(dir: &Path, sha256: &str) -> PathBuf {
        dir.join(&sha256[..2]).join(sha256)
    }

    /// Keeps `bytes` as `sha256` (once: a file already there is left alone).
    fn write(&self, sha256: &str, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Files::Memory(m) => {
                m.lock()
                    .unwrap()
                    .entry(sha256.to_string())
                    .or_insert_with(|| bytes.to_vec());
                Ok(())
            }
            Files::Dir(dir) => {
                let path = Files::path(dir, sha256);
                if path.metadata().is_ok_and(|m| m.len() == bytes.len() as u64) {
                    return Ok(());
                }
                // its folders 0700, the file 0600, written whole or not at all
                crate::paths::write_private(&path, bytes)
            }
        }
    }

    fn read(&self, sha256: &str) -> std::io::Result<Vec<u8>> {
        match self {
            Files::Memory(m) => m
                .lock()
                .unwrap()
                .get(sha256)
                .cloned()
                .ok_or_else(|| std::io::ErrorKind::NotFound.into()),
            Files::Dir(dir) => std::fs::read(Files::path(dir, sha256)),
        }
    }

    /// Removes the files not in `keep` (and older than the grace period).
    fn sweep(&self, keep: &std::collections::HashSet<String>) {
        match self {
            Files::Memory(m) => m.lock().unwrap().retain(|k, _| keep.contains(k)),
            Files::Dir(dir) => {
                let Ok(folders) = std::fs::read_dir(dir) else {
                    return;
                };
                let old = std::time::SystemTime::now()
                    - std::time::Duration::from_millis(GRACE_MS as u64);
                for folder in folders.flatten() {
                    let Ok(files) = std::fs::read_dir(folder.path()) else {
                        continue;
                    };
                    for f in files.flatten() {
                        let name = f.file_name().to_string_lossy().into_owned();
                        let young = f
                            .metadata()
                            .and_then(|m| m.modified())
                            .is_ok_and(|t| t > old);
                        if !keep.contains(&name) && !young {
                            if let Err(e) = std::fs::remove_file(f.path()) {
                                tracing::warn!(
                                    "could not remove the unused attachment {name}: {e}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Drops the images no message refers to (rows older than the grace period), then their files.
pub(super) fn collect_garbage(c: &rusqlite::Connection, files: &Files) -> Result<(), StoreError> {
    c.execute(
        "DELETE FROM attachments WHERE created_at < ?1
            AND sha256 NOT IN (SELECT sha256 FROM message_attachments)",
        [now_ms() - GRACE_MS],
    )?;
    let mut st = c.prepare("SELECT sha256 FROM attachments")?;
    let keep = st
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    files.sweep(&keep);
    Ok(())
}

/// Links `images` (already kept) to message `message_id`, in order.
pub(super) fn link(
    tx: &rusqlite::Transaction,
    message_id: i64,
    images: impl Iterator<Item = (String, String)>,
) -> Result<(), StoreError> {
    let mut st = tx.prepare_cached(
        "INSERT INTO message_attachments (message_id, position, sha256, name) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (i, (sha256, name)) in images.enumerate() {
        st.execute(params![message_id, i as i64, sha256, name])?;
    }
    Ok(())
}

const COLUMNS: &str = "a.message_id, a.sha256, a.name, x.mime, x.width, x.height, x.bytes,
    x.thumbnail, x.thumbnail_mime";

fn read_row(r: &rusqlite::Row) -> rusqlite::Result<(i64, AttachedImage)> {
    let thumbnail: Vec<u8> = r.get(7)?;
    let thumbnail_mime: String = r.get(8)?;
    Ok((
        r.get(0)?,
        AttachedImage {
            sha256: r.get(1)?,
            name: r.get(2)?,
            mime: r.get(3)?,
            width: r.get(4)?,
            height: r.get(5)?,
            bytes: r.get::<_, i64>(6)?.max(0) as u64,
            thumbnail: media::data_url(&thumbnail_mime, &thumbnail),
        },
    ))
}

/// Gives each of `messages` (the last `limit` of conversation `id`'s shown branch, all: -1) the
/// images it carries.
pub(super) fn fill_branch(
    c: &rusqlite::Connection,
    id: i64,
    limit: i64,
    messages: &mut [StoredMessage],
) -> Result<(), StoreError> {
    let mut st = c.prepare_cached(&format!(
        "{SHOWN_PATH} SELECT {COLUMNS} FROM message_attachments a
         JOIN attachments x ON x.sha256 = a.sha256
         WHERE a.message_id IN path ORDER BY a.message_id, a.position"
    ))?;
    let rows = st
        .query_map(
            named_params! {":conversation": id, ":limit": limit},
            read_row,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    fill(messages, rows);
    Ok(())
}

/// Gives `m` the images it carries.
pub(super) fn fill_one(c: &rusqlite::Connection, m: &mut StoredMessage) -> Result<(), StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM message_attachments a JOIN attachments x ON x.sha256 = a.sha256
         WHERE a.message_id = ?1 ORDER BY a.position"
    ))?;
    let rows = st
        .query_map([m.id], read_row)?
        .collect::<Result<Vec<_>, _>>()?;
    fill(std::slice::from_mut(m), rows);
    Ok(())
}

fn fill(messages: &mut [StoredMessage], rows: Vec<(i64, AttachedImage)>) {
    if rows.is_empty() {
        return;
    }
    let mut by: HashMap<i64, Vec<AttachedImage>> = HashMap::new();
    for (id, a) in rows {
        by.entry(id).or_default().push(a);
    }
    for m in messages {
        if let Some(a) = by.remove(&m.id) {
            m.attachments = a;
        }
    }
}

/// What a kept image is, for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptImage {
    pub sha256: String,
    pub mime: String,
    pub width: u32,
    pub height: u32,
    pub bytes: Vec<u8>,
}

impl Store {
    /// Keeps a prepared image (its file, once, and its row) and returns it as a message will
    /// show it, named `name`.
    pub async fn keep_image(
        &self,
        image: &PreparedImage,
        name: &str,
    ) -> Result<AttachedImage, StoreError> {
        let row = image.clone();
        self.call(move |c| {
            // a row already there is young again: it is about to be used
            c.execute(
                "INSERT INTO attachments (sha256, mime, bytes, width, height, thumbnail, thumbnail_mime, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (sha256) DO UPDATE SET created_at = excluded.created_at",
                params![row.sha256, row.mime, row.bytes.len() as i64, row.width, row.height,
                    row.thumbnail, row.thumbnail_mime, now_ms()],
            )?;
            Ok(())
        })
        .await?;
        // the row first: a collection (in this process or another, such as the CLI) never takes
        // a file whose row was just made young, even when the file was already there
        let files = self.files.clone();
        let (sha, bytes) = (image.sha256.clone(), image.bytes.clone());
        tokio::task::spawn_blocking(move || files.write(&sha, &bytes))
            .await
            .map_err(|e| StoreError::File(e.to_string()))?
            .map_err(|e| StoreError::File(e.to_string()))?;
        Ok(AttachedImage {
            sha256: image.sha256.clone(),
            name: name.to_string(),
            mime: image.mime.to_string(),
            width: image.width,
            height: image.height,
            bytes: image.bytes.len() as u64,
            thumbnail: media::data_url(image.thumbnail_mime, &image.thumbnail),
        })
    }

    /// A kept image, whole.
    pub async fn kept_image(&self, sha256: &str) -> Result<KeptImage, StoreError> {
        if !valid_name(sha256) {
            return Err(StoreError::NoAttachment(sha256.to_string()));
        }
        let sha = sha256.to_string();
        let (mime, width, height) = self
            .call(move |c| {
                c.query_row(
                    "SELECT mime, width, height FROM attachments WHERE sha256 = ?1",
                    [&sha],
                    |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?
                .ok_or(StoreError::NoAttachment(sha))
            })
            .await?;
        let files = self.files.clone();
        let sha = sha256.to_string();
        let bytes = tokio::task::spawn_blocking(move || files.read(&sha))
            .await
            .map_err(|e| StoreError::File(e.to_string()))?
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => StoreError::NoAttachment(sha256.to_string()),
                _ => StoreError::File(e.to_string()),
            })?;
        Ok(KeptImage {
            sha256: sha256.to_string(),
            mime,
            width,
            height,
            bytes,
        })
    }
}

#[cfg(test)]
mod tests;
