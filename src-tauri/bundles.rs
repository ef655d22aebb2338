//! `.mcpb` files opened with the app: given on its command line (the desktop's handler for the
//! type: `switchboard FILE.mcpb`), passed on by another launch (single-instance), or dropped on
//! the window (its bytes, `commands/catalog.rs::open_dropped_bundle`: the window's own
//! drag-and-drop is off, so a drop reaches the page, where files go to the message). Each is read here (the window never names a path), opened and checked by the
//! engine (nothing written), and handed to the window's catalog as a prepared install, or as a
//! refusal in words; those that come before the window listens wait for it.
//!
//! The desktop entry passes files as `%F`; `packaging/` holds the .deb's desktop template with
//! `MimeType=application/x-mcpb` and the type's shared-mime-info. `bundles::open` reads and
//! prepares (`lib.rs` spawns it with the state); the queue is `watch_bundles`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use switchboard_engine::registry::install::Prepared;
use switchboard_engine::{CatalogError, Runtime};
use tauri::ipc::Channel;

/// A bundle opened with the app.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum BundleOpen {
    Prepared { prepared: Box<Prepared> },
    Refused { file: String, message: String },
}

/// The opens not yet given to the window, and the window's channel once it listens.
#[derive(Default)]
pub struct BundleOpens {
    inner: Mutex<(Vec<BundleOpen>, Option<Channel<BundleOpen>>)>,
}

impl BundleOpens {
    pub fn send(&self, open: BundleOpen) {
        let mut inner = self.inner.lock().unwrap();
        let sent = inner
            .1
            .as_ref()
            .is_some_and(|c| c.send(open.clone()).is_ok());
        if !sent {
            inner.0.push(open);
        }
    }

    /// The window listens (again): what waited first.
    pub fn listen(&self, channel: Channel<BundleOpen>) {
        let mut inner = self.inner.lock().unwrap();
        for open in std::mem::take(&mut inner.0) {
            let _ = channel.send(open);
        }
        inner.1 = Some(channel);
    }
}

/// Reads a bundle file (at most the engine's limit) and prepares its install.
pub async fn prepare(runtime: &Runtime, path: &Path) -> Result<Prepared, CatalogError> {
    let too_big = switchboard_engine::bundle::BundleError::TooBig;
    let size = std::fs::metadata(path)
        .map_err(switchboard_engine::bundle::BundleError::Io)?
        .len();
    if size > switchboard_engine::bundle::MAX_BUNDLE {
        return Err(too_big.into());
    }
    // the limit holds while reading too (a file that grew, a pipe)
    let owned = path.to_path_buf();
    let bytes = tokio::task::spawn_blocking(move || {
        switchboard_engine::paths::read_at_most(&owned, switchboard_engine::bundle::MAX_BUNDLE)
    })
    .await
    .map_err(|e| switchboard_engine::bundle::BundleError::Io(std::io::Error::other(e)))?
    .map_err(|e| match e {
        switchboard_engine::paths::ReadAtMost::TooBig { .. } => {
            switchboard_engine::bundle::BundleError::TooBig
        }
        switchboard_engine::paths::ReadAtMost::Io(e) => {
            switchboard_engine::bundle::BundleError::Io(e)
        }
    })?;
    runtime.bundle_prepare(bytes).await
}

/// The `.mcpb` files among a launch's arguments (relative ones from `cwd`).
pub fn bundle_args(args: &[String], cwd: &Path) -> Vec<PathBuf> {
    args.iter()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.to_ascii_lowercase().ends_with(".mcpb"))
        .map(|a| {
            let p = PathBuf::from(a.strip_prefix("file://").unwrap_or(a));
            if p.is_absolute() {
                p
            } else {
                cwd.join(p)
            }
        })
        .collect()
}

/// What opening `path` with the app comes to: a prepared install or a refusal in words; `None`
/// for a file that is not a bundle.
pub async fn open(runtime: &Runtime, path: &Path) -> Option<BundleOpen> {
    if !path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("mcpb"))
    {
        return None;
    }
    Some(match prepare(runtime, path).await {
        Ok(prepared) => BundleOpen::Prepared {
            prepared: Box::new(prepared),
        },
        Err(e) => BundleOpen::Refused {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            message: e.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_are_picked_from_a_launch_s_arguments() {
        let args: Vec<String> = [
            "switchboard",
            "--flag",
            "a.mcpb",
            "/x/B.MCPB",
            "notes.txt",
            "file:///y/c.mcpb",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            bundle_args(&args, Path::new("/home/u")),
            [
                PathBuf::from("/home/u/a.mcpb"),
                PathBuf::from("/x/B.MCPB"),
                PathBuf::from("/y/c.mcpb")
            ]
        );
    }
}
