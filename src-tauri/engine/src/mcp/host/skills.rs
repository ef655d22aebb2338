//! A server's skills (the Skills extension, `mcp/skills.rs`): listed with `skills/list` (every
//! page, kept for the `ttlMs` the server allows), one entry fetched with `skills/get`, a
//! directory skill's files with `resources/directory/read`, and every file read with
//! `resources/read` only when a skill is loaded or one of its files asked for, and verified
//! (size, digest, and a `SKILL.md`'s frontmatter against its entry) before it is returned.
//! rmcp 3.9's client has typed requests for the extension, but reads a page as one value (one
//! malformed entry fails the page): `skills/list` and `skills/get` go as custom requests and are
//! read as JSON, entry by entry (a bad one is refused with why, the others kept);
//! `resources/directory/read` uses rmcp's typed method.
//!
//! Every page is listed when the server starts (by the supervisor) and again when the listing's
//! `ttlMs` ran out. Entries are pinned under `mcp::skills::pin_scope(identity)`: a changed, new or
//! unchecked skill is `pending`, not offered, until `accept_skill` with the hash the user was
//! shown. Nothing of a skill is read before it is loaded.
//!
//! The listing is also read again when the server says its resources changed: the extension has no
//! `list_changed` of its own, so the supervisor lists the skills again after
//! `resources/list_changed`.

use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, CustomRequest, ReadResourceDirectoryRequestParams, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde::Serialize;
use serde_json::{json, Value};

use super::state::Session;
use super::{HostError, McpHost, Shared};
use crate::mcp::config::ServerConfig;
use crate::mcp::pins::{DiffLine, Unaccepted};
use crate::mcp::skills::{self, SkillEntry, SkillFiles};

/// A server's listing as last fetched.
#[derive(Debug, Clone, Default)]
pub(super) struct Listing {
    pub listing: SkillListing,
    /// Until when it may be used without asking again (`None`: ask every time).
    pub until: Option<Instant>,
}

/// What a server's skills are, for its row and the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillListing {
    /// The skills the model may be offered: verified entries the user accepted (those of a
    /// server's first sight count as accepted).
    pub skills: Vec<SkillEntry>,
    /// Skills that changed since they were pinned (or are new, or could not be checked): not
    /// offered until the user accepts them.
    pub pending: Vec<PendingSkill>,
    /// Entries refused, with why.
    pub refused: Vec<String>,
}

/// A skill that is not the one the user accepted.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSkill {
    pub entry: SkillEntry,
    pub unaccepted: Unaccepted,
    /// What changed, line by line (its frontmatter and each file's digest).
    pub changed: Vec<DiffLine>,
    /// The hash of what it presents now: accepting names it.
    pub hash: String,
}

/// A skill's `SKILL.md`, verified.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedSkill {
    pub server: String,
    pub entry: SkillEntry,
    /// The whole `SKILL.md` (frontmatter and body).
    pub text: String,
    /// Its other files, relative to its folder.
    pub files: Vec<String>,
}

impl McpHost {
    /// Whether `server` (running) declared the Skills extension.
    pub fn offers_skills(&self, server: &str) -> bool {
        self.session(server)
            .ok()
            .is_some_and(|(_, s)| declares_skills(&s))
    }

    /// `server`'s skills: every page of `skills/list` (kept as long as its `ttlMs` says), the
    /// entries that break the extension's rules refused with why, those not as pinned held back.
    /// Empty when it does not declare the extension. Nothing of a skill is read.
    pub async fn skills(&self, server: &str) -> Result<SkillListing, HostError> {
        let (slot, session) = self.session(server)?;
        if !declares_skills(&session) {
            return Ok(SkillListing::default());
        }
        if let Some(l) = self.shared.skills.lock().unwrap().get(server) {
            if l.until.is_some_and(|u| Instant::now() < u) {
                return Ok(l.listing.clone());
            }
        }
        let timeout = self.timeout_for(server);
        list(&self.shared, server, &slot.config, &session, timeout).await
    }

    /// The skills each running server listed last (its name, and them), without asking again:
    /// what the model is offered.
    pub fn listed_skills(&self) -> Vec<(String, SkillListing)> {
        let running: Vec<String> = self
            .slots()
            .into_iter()
            .filter(|(_, s)| s.snapshot().session().is_some())
            .map(|(n, _)| n)
            .collect();
        let cache = self.shared.skills.lock().unwrap();
        running
            .into_iter()
            .filter_map(|n| cache.get(&n).map(|l| (n, l.listing.clone())))
            .collect()
    }

    /// Accepts `server`'s skill `uri` as it is now (the one whose pin hash is `hash`, as the user
    /// was shown): it is pinned and offered from now on. False when it is not pending with that
    /// hash (it changed again meanwhile).
    pub async fn accept_skill(
        &self,
        server: &str,
        uri: &str,
        hash: &str,
    ) -> Result<bool, HostError> {
        let listing = self.skills(server).await?;
        let Some(p) = listing
            .pending
            .iter()
            .find(|p| p.entry.uri == uri && p.hash == hash)
        else {
            return Ok(false);
        };
        let (Some(pins), Some(slot)) = (self.shared.opts.pins.as_ref(), self.slot(server)) else {
            return Ok(false);
        };
        let scope = skills::pin_scope(&slot.config.identity());
        pins.0.accept(&scope, &skills::definition(&p.entry)).await;
        self.shared.skills.lock().unwrap().remove(server);
        let (slot, session) = self.session(server)?;
        let timeout = self.timeout_for(server);
        list(&self.shared, server, &slot.config, &session, timeout).await?;
        Ok(true)
    }

    /// One skill's entry, asked of the server (`skills/get`), checked like a listed one.
    pub async fn skill_entry(&self, server: &str, uri: &str) -> Result<SkillEntry, HostError> {
        let (_, session) = self.session(server)?;
        let timeout = self.timeout_for(server);
        let result = custom_request(&session, "skills/get", json!({"uri": uri}), timeout).await?;
        let skill = result
            .get("skill")
            .ok_or_else(|| HostError::Unusable(format!("{server}'s skills/get has no skill")))?;
        skills::parse_entry(skill)
            .map_err(|why| HostError::Unusable(format!("{server}'s skill is refused: {why}")))
    }

    /// The entry of `server`'s skill `name`, as listed (and accepted) now.
    async fn listed_skill(&self, server: &str, name: &str) -> Result<SkillEntry, HostError> {
        let listing = self.skills(server).await?;
        listing
            .skills
            .iter()
            .find(|s| s.name() == name)
            .cloned()
            .ok_or_else(|| unknown_skill(server, name, &listing))
    }

    /// Loads `server`'s skill `name`: its `SKILL.md` read and verified (size, digest, and its
    /// frontmatter against the entry's). Its other files are not read.
    pub async fn load_skill(&self, server: &str, name: &str) -> Result<LoadedSkill, HostError> {
        let entry = self.listed_skill(server, name).await?;
        let text = self.read_skill_uri(server, &entry, &entry.uri).await?;
        skills::check_frontmatter(&entry, &text).map_err(HostError::Unusable)?;
        let files = match &entry.files {
            SkillFiles::Listed(_) => entry
                .paths()
                .into_iter()
                .filter(|p| p != skills::SKILL_MD)
                .collect(),
            SkillFiles::Directory => self.directory_files(server, entry.root()).await?,
        };
        Ok(LoadedSkill {
            server: server.to_string(),
            entry,
            text,
            files,
        })
    }

    /// Reads the file at `path` of `server`'s skill `name` (relative to the skill's folder),
    /// verified against its entry. A file the entry does not list is refused (a directory skill's
    /// files have no digests: they are read as they are, inside its folder only).
    pub async fn read_skill_file(
        &self,
        server: &str,
        name: &str,
        path: &str,
    ) -> Result<String, HostError> {
        let entry = self.listed_skill(server, name).await?;
        let uri = entry.file_uri(path);
        if !uri.starts_with(&format!("{}/", entry.root())) || uri.contains("/../") {
            return Err(HostError::Unusable(format!(
                "{path} is not a file of the skill \"{name}\""
            )));
        }
        self.read_skill_uri(server, &entry, &uri).await
    }

    /// `resources/read` of one of a skill's files, verified against its entry.
    async fn read_skill_uri(
        &self,
        server: &str,
        entry: &SkillEntry,
        uri: &str,
    ) -> Result<String, HostError> {
        let listed = match &entry.files {
            SkillFiles::Listed(_) => Some(entry.file(uri).cloned().ok_or_else(|| {
                HostError::Unusable(format!(
                    "{uri} is not a file of the skill \"{}\"",
                    entry.name()
                ))
            })?),
            SkillFiles::Directory => None,
        };
        let item = self.read_resource_item(server, uri).await?;
        let bytes = super::app_resource::resource_bytes(&item, uri)?;
        if let Some(file) = &listed {
            skills::verify(file, &bytes)
                .map_err(|why| HostError::Unusable(format!("the skill is refused: {why}")))?;
        } else if bytes.len() as u64 > skills::MAX_TOTAL_SIZE {
            return Err(HostError::Unusable(format!(
                "{uri} is larger than a skill may be"
            )));
        }
        String::from_utf8(bytes)
            .map_err(|_| HostError::Unusable(format!("{uri} is not text (UTF-8)")))
    }

    /// The files of a dynamic skill (`resources/directory/read`, every page, descending into
    /// subdirectories), relative to its folder; none when the server does not serve that method.
    async fn directory_files(&self, server: &str, root: &str) -> Result<Vec<String>, HostError> {
        let (_, session) = self.session(server)?;
        let serves = session
            .peer
            .peer_info()
            .is_some_and(|i| i.capabilities.supports_directory_read());
        if !serves {
            return Ok(vec![]);
        }
        let mut files = Vec::new();
        let mut dirs = vec![root.to_string()];
        while let Some(dir) = dirs.pop() {
            let mut cursor: Option<String> = None;
            for _ in 0..skills::MAX_PAGES {
                let mut params = ReadResourceDirectoryRequestParams::new(dir.clone());
                if let Some(c) = cursor.take() {
                    params = params.with_cursor(c);
                }
                let peer = session.peer.clone();
                let result = self
                    .bounded_request(server, "resources/directory/read", async move {
                        peer.read_resource_directory(params).await
                    })
                    .await?;
                for r in &result.resources {
                    if !r.uri.starts_with(&format!("{root}/")) {
                        continue;
                    }
                    if r.is_directory() {
                        if files.len() + dirs.len() < skills::MAX_FILES {
                            dirs.push(r.uri.trim_end_matches('/').to_string());
                        }
                    } else {
                        let rel = &r.uri[root.len() + 1..];
                        if rel != skills::SKILL_MD {
                            files.push(rel.to_string());
                        }
                    }
                }
                cursor = result.next_cursor.clone().filter(|c| !c.is_empty());
                if cursor.is_none() || files.len() >= skills::MAX_FILES {
                    break;
                }
            }
        }
        files.truncate(skills::MAX_FILES);
        Ok(files)
    }
}

/// Lists `server`'s skills (every page of `skills/list`), checks them against their pins (for
/// the server's identity), and keeps the listing for as long as its `ttlMs` allows; the host is
/// told its servers changed.
pub(super) async fn list(
    shared: &Shared,
    server: &str,
    config: &ServerConfig,
    session: &Session,
    timeout: Duration,
) -> Result<SkillListing, HostError> {
    let mut listing = SkillListing::default();
    let mut cursor: Option<String> = None;
    let mut ttl: Option<u64> = Some(u64::MAX);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..skills::MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let result = custom_request(session, "skills/list", params, timeout).await?;
        let page = skills::parse_page(&result);
        listing.skills.extend(page.skills);
        listing.refused.extend(page.refused);
        // the shortest ttl of the pages holds for the whole listing; a page without one means
        // it is not kept
        ttl = match (ttl, page.ttl_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        };
        match page.next_cursor {
            Some(c) if seen.insert(c.clone()) => cursor = Some(c),
            _ => break,
        }
    }
    check_pins(shared, config, &mut listing).await;
    let changed = {
        let mut cache = shared.skills.lock().unwrap();
        let changed = cache.get(server).map(|l| &l.listing) != Some(&listing);
        cache.insert(
            server.to_string(),
            Listing {
                listing: listing.clone(),
                until: ttl.map(|t| Instant::now() + Duration::from_millis(t)),
            },
        );
        changed
    };
    if changed {
        shared.changed();
    }
    Ok(listing)
}

/// Moves the skills that are not the ones pinned for the server's identity to `pending` (a
/// server's first listing is pinned as it is; the built-in servers have no skills to pin).
async fn check_pins(shared: &Shared, config: &ServerConfig, listing: &mut SkillListing) {
    let Some(pins) = shared.opts.pins.as_ref() else {
        return;
    };
    let defs: Vec<_> = listing.skills.iter().map(skills::definition).collect();
    let scope = skills::pin_scope(&config.identity());
    let unaccepted = pins.0.check(&scope, &defs).await;
    if unaccepted.is_empty() {
        return;
    }
    let (mut kept, mut pending) = (Vec::new(), Vec::new());
    for (entry, def) in listing.skills.drain(..).zip(defs) {
        match unaccepted.iter().find(|(uri, _)| *uri == entry.uri) {
            Some((_, pin)) => pending.push(PendingSkill {
                unaccepted: pin.code(),
                changed: pin.diff(&def),
                hash: def.hash(),
                entry,
            }),
            None => kept.push(entry),
        }
    }
    listing.skills = kept;
    listing.pending = pending;
}

/// A request rmcp's client has no method for, its result as JSON (rmcp reads a well-formed
/// answer into its own type: it is turned back into JSON, so one bad entry refuses that entry,
/// not the page).
async fn custom_request(
    session: &Session,
    method: &'static str,
    params: Value,
    timeout: Duration,
) -> Result<Value, HostError> {
    let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let handle = session
        .peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
        .map_err(|source| HostError::Request { method, source })?;
    let answer = handle
        .await_response()
        .await
        .map_err(|source| HostError::Request { method, source })?;
    Ok(match answer {
        ServerResult::CustomResult(c) => c.0,
        other => serde_json::to_value(&other).unwrap_or_default(),
    })
}

/// Whether the session's server declared the Skills extension in its capabilities.
pub(super) fn declares_skills(session: &Session) -> bool {
    session
        .peer
        .peer_info()
        .is_some_and(|i| i.capabilities.supports_skills())
}

/// Why `server`'s skill `name` cannot be used: it changed and waits for the user, or there is no
/// such skill (refused, or never listed).
fn unknown_skill(server: &str, name: &str, listing: &SkillListing) -> HostError {
    if listing.pending.iter().any(|p| p.entry.name() == name) {
        HostError::Unusable(format!(
            "{server}'s skill \"{name}\" changed since it was accepted: the user has to accept it \
             before it is used"
        ))
    } else {
        HostError::Unusable(format!("{server} has no skill \"{name}\""))
    }
}
