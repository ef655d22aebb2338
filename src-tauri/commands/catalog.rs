//! The catalog: searching the registry, preparing an install (an entry, a bundle the user picks,
//! drops on the window or opens with the app), its preview, installing it, updates. Each command
//! adapts and calls the engine's `Runtime`.
//!
//! Also cancel, the registry setting, "Install bundle…" (the Open dialog here), a folder or file
//! for a setting; an install is followed by the config applied.

use switchboard_engine::registry::install::{Choices, InstallPreview, Prepared};
use switchboard_engine::settings::SettingsPatch;
use switchboard_engine::{CatalogError, CatalogPage, UpdateAvailable};
use tauri::ipc::Channel;
use tauri::{AppHandle, State};

use super::files::{pick_path, Dialog};
use super::{CmdResult, ErrorKind, UiError};
use crate::bundles::BundleOpen;
use crate::state::AppState;

impl From<CatalogError> for UiError {
    fn from(e: CatalogError) -> Self {
        use switchboard_engine::registry::install::InstallError;
        use switchboard_engine::registry::FetchError;
        match e {
            CatalogError::Config(c) => c.into(),
            CatalogError::Install(InstallError::Field(f)) => {
                let field = f.field.clone();
                UiError::invalid(f).on_field(field)
            }
            CatalogError::Fetch(FetchError::NotFound(_)) => UiError::new(ErrorKind::NotFound, e),
            CatalogError::Fetch(
                FetchError::Unreachable { ref url, .. } | FetchError::TimedOut { ref url },
            ) => UiError {
                url: Some(url.clone()),
                ..UiError::new(ErrorKind::Unreachable, &e)
            },
            CatalogError::Fetch(_) => UiError::new(ErrorKind::Http, e),
            other => UiError::invalid(other),
        }
    }
}

/// A page of the registry's entries whose name has `term` (after `cursor`).
#[tauri::command]
pub async fn catalog_search(
    state: State<'_, AppState>,
    term: String,
    cursor: Option<String>,
) -> CmdResult<CatalogPage> {
    Ok(state
        .runtime
        .catalog_page(None, &term, cursor.as_deref())
        .await?)
}

/// An entry's icon as a `data:` URL, fetched here (https only, images only), or null.
#[tauri::command]
pub async fn catalog_icon(state: State<'_, AppState>, url: String) -> CmdResult<Option<String>> {
    Ok(state.runtime.catalog_icon(&url).await)
}

/// Prepares installing entry `name` by its way `way` (null: the first this computer can run).
#[tauri::command]
pub async fn catalog_prepare(
    state: State<'_, AppState>,
    name: String,
    way: Option<usize>,
) -> CmdResult<Prepared> {
    Ok(state.runtime.catalog_prepare(None, &name, way).await?)
}

/// Prepares updating an installed server to its registry's latest version.
#[tauri::command]
pub async fn catalog_prepare_update(
    state: State<'_, AppState>,
    server: String,
) -> CmdResult<Prepared> {
    Ok(state.runtime.catalog_prepare_update(&server).await?)
}

/// The exact server the choices would add (nothing saved).
#[tauri::command]
pub fn catalog_preview(
    state: State<'_, AppState>,
    token: String,
    choices: Choices,
) -> CmdResult<InstallPreview> {
    Ok(state.runtime.catalog_preview(&token, &choices)?)
}

/// Installs (a new server turned off and not trusted: the window asks before it starts; an update
/// as the user had it); returns the server's name.
#[tauri::command]
pub async fn catalog_install(
    state: State<'_, AppState>,
    token: String,
    choices: Choices,
) -> CmdResult<String> {
    let (name, _) = state.runtime.catalog_install(&token, &choices).await?;
    Ok(name)
}

#[tauri::command]
pub fn catalog_cancel(state: State<'_, AppState>, token: String) {
    state.runtime.catalog_cancel(&token);
}

/// The installed servers whose registry has a newer version.
#[tauri::command]
pub async fn catalog_updates(state: State<'_, AppState>) -> CmdResult<Vec<UpdateAvailable>> {
    Ok(state.runtime.catalog_updates().await)
}

/// Changes the registry the catalog searches (empty: the official one), through the one writer of
/// the settings; returns the one in use.
#[tauri::command]
pub async fn set_catalog_registry(state: State<'_, AppState>, url: String) -> CmdResult<String> {
    let patch = SettingsPatch {
        catalog_registry: Some(Some(url)),
        ..SettingsPatch::default()
    };
    state.runtime.change_settings(patch).await?;
    Ok(state.runtime.catalog_registry())
}

/// "Install bundle…": the system's Open dialog for a `.mcpb`, then the bundle opened and checked
/// (nothing written). Null when the dialog was closed.
#[tauri::command]
pub async fn pick_bundle(
    app: AppHandle,
    state: State<'_, AppState>,
) -> CmdResult<Option<Prepared>> {
    let dialog = Dialog {
        title: "Install an MCP Bundle",
        filter: "MCP Bundle",
        ext: "mcpb",
        start: switchboard_engine::paths::documents_dir(),
    };
    let Some(path) = pick_path(&app, dialog, false).await? else {
        return Ok(None);
    };
    Ok(Some(
        crate::bundles::prepare(&state.runtime, &path)
            .await
            .map_err(UiError::from)?,
    ))
}

/// A `.mcpb` dropped on the window: its bytes are the request's body (its name in
/// `x-file-name`); opened and checked (nothing written), then handed to the catalog like one
/// opened with the app (`watch_bundles`), refused in words when it is not a bundle.
#[tauri::command]
pub async fn open_dropped_bundle(
    state: State<'_, AppState>,
    request: tauri::ipc::Request<'_>,
) -> CmdResult<()> {
    let file = switchboard_engine::media::clean_name(&super::attach::file_name(&request));
    let tauri::ipc::InvokeBody::Raw(bytes) = request.body() else {
        return Err(UiError::invalid("A bundle is sent as its bytes"));
    };
    // refused before it is copied
    if bytes.len() as u64 > switchboard_engine::bundle::MAX_BUNDLE {
        state.bundle_opens.send(BundleOpen::Refused {
            file,
            message: switchboard_engine::bundle::BundleError::TooBig.to_string(),
        });
        return Ok(());
    }
    let open = match state.runtime.bundle_prepare(bytes.clone()).await {
        Ok(prepared) => BundleOpen::Prepared {
            prepared: Box::new(prepared),
        },
        Err(e) => BundleOpen::Refused {
            file,
            message: e.to_string(),
        },
    };
    state.bundle_opens.send(open);
    Ok(())
}

/// A folder or file for a setting (the Open dialog); its path, or null when closed.
#[tauri::command]
pub async fn pick_setting_path(app: AppHandle, folder: bool) -> CmdResult<Option<String>> {
    let dialog = Dialog {
        title: if folder {
            "Choose a folder"
        } else {
            "Choose a file"
        },
        filter: "",
        ext: "",
        start: dirs_home(),
    };
    Ok(pick_path(&app, dialog, folder)
        .await?
        .map(|p| p.display().to_string()))
}

fn dirs_home() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(std::path::PathBuf::from)
}

/// Bundles opened with the app (its command line, another launch, a drop on the window): each
/// prepared or refused, through `on_open`; those opened before the window listened come first.
#[tauri::command]
pub fn watch_bundles(state: State<'_, AppState>, on_open: Channel<BundleOpen>) -> CmdResult<()> {
    state.bundle_opens.listen(on_open);
    Ok(())
}
