//! `switchboard catalog search [TERM] [--registry URL] [--json]` and
//! `switchboard catalog install NAME|FILE.mcpb [--registry URL] [--set KEY=VALUE]…
//! [--allow-network] [--allow-host HOST]… [--read PATH]… [--write PATH]… [--leave-out PATH]…
//! [--confirm-write PATH]… [--dry-run]`:
//! the catalog headless, through the same engine calls as the window. Installing again an entry
//! installed before whose required secret was never set completes that server.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{anyhow, bail, Context};
use serde_json::Value;
use switchboard_engine::chat::Broker;
use switchboard_engine::registry::install::{Choices, InstallPreview, Note, Prepared};
use switchboard_engine::{CatalogError, CatalogPage, Runtime};

use super::{open_runtime, USAGE};

pub async fn catalog(rest: &[String]) -> anyhow::Result<i32> {
    super::init_cli_logging();
    match rest.first().map(String::as_str) {
        Some("search") => search(&rest[1..]).await,
        Some("install") => install(&rest[1..]).await,
        _ => bail!("catalog takes search or install\n\n{USAGE}"),
    }
}

/// The engine's refusal as it words it: its text already says the cause, so the chain of
/// sources is not printed after it again (`switchboard: {e:#}` would repeat it).
fn said(e: CatalogError) -> anyhow::Error {
    anyhow!("{e}")
}

async fn search(rest: &[String]) -> anyhow::Result<i32> {
    let mut term: Option<String> = None;
    let mut registry = None;
    let mut json = false;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--registry" => registry = Some(super::value_of(&mut it, a)?),
            "--json" => json = true,
            s if s.starts_with("--") => bail!("unknown option {s}\n\n{USAGE}"),
            s => {
                if term.replace(s.to_string()).is_some() {
                    bail!("give the search term as one argument (quote it)");
                }
            }
        }
    }
    let rt = open_runtime(Broker::refusing_all()).await?;
    let page = rt
        .catalog_all(registry.as_deref(), term.as_deref().unwrap_or_default())
        .await
        .map_err(said)?;
    say_offline_and_skipped(&page);
    let mut out = std::io::stdout().lock();
    for e in &page.entries {
        if json {
            serde_json::to_writer(&mut out, e)?;
            writeln!(out)?;
        } else {
            let mut title = one_line(e.title.as_deref().unwrap_or(&e.description));
            if e.deprecated {
                title.push_str(" (deprecated)");
            }
            writeln!(
                out,
                "{}\t{}\t{}\t{}",
                e.name,
                e.version,
                e.kinds.join(","),
                title
            )?;
        }
    }
    Ok(0)
}

/// Text from a registry on one line (a tab or a newline would break the columns).
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn say_offline_and_skipped(page: &CatalogPage) {
    if let Some(o) = &page.offline {
        eprintln!(
            "switchboard: {}; this is the list as it was fetched before (at {} UTC, Unix time {}).",
            o.reason.trim_end_matches('.'),
            when(o.fetched_at),
            o.fetched_at
        );
    }
    for s in &page.skipped {
        eprintln!(
            "switchboard: skipped an entry{} that cannot be read: {}",
            s.name
                .as_deref()
                .map(|n| format!(" ({})", one_line(n)))
                .unwrap_or_default(),
            one_line(&s.reason)
        );
    }
}

/// Unix seconds as `YYYY-MM-DD HH:MM`.
fn when(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}")
}

async fn install(rest: &[String]) -> anyhow::Result<i32> {
    let mut what: Option<String> = None;
    let mut registry = None;
    let mut dry_run = false;
    let mut values = BTreeMap::new();
    let mut confirm_write = Vec::new();
    let (mut network, mut hosts, mut read, mut write, mut declined) =
        (false, Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--registry" => registry = Some(super::value_of(&mut it, a)?),
            "--dry-run" => dry_run = true,
            "--confirm-write" => confirm_write.push(super::value_of(&mut it, a)?),
            "--allow-network" => network = true,
            "--allow-host" => hosts.push(super::value_of(&mut it, a)?),
            "--read" => read.push(super::value_of(&mut it, a)?),
            "--write" => write.push(super::value_of(&mut it, a)?),
            "--leave-out" => declined.push(super::value_of(&mut it, a)?),
            "--set" => {
                let kv = super::value_of(&mut it, a)?;
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| anyhow!("--set takes KEY=VALUE, not \"{kv}\""))?;
                values.insert(k.to_string(), Value::String(v.to_string()));
            }
            s if s.starts_with("--") => bail!("unknown option {s}\n\n{USAGE}"),
            s => {
                if what.replace(s.to_string()).is_some() {
                    bail!("give one server name or one .mcpb file");
                }
            }
        }
    }
    let what =
        what.ok_or_else(|| anyhow!("install what? a registry name or a .mcpb file\n\n{USAGE}"))?;
    let rt = open_runtime(Broker::refusing_all()).await?;
    let prepared = prepare(&rt, &what, registry.as_deref()).await?;
    let completes = prepared
        .update
        .as_ref()
        .filter(|u| u.completes)
        .map(|u| u.server.clone());
    if let Some(server) = &completes {
        println!(
            "\"{server}\" was installed from it before without a secret it needs: this completes it."
        );
    }
    // what it was installed with (a completion's), then what is given now
    let mut given = prepared.values.clone();
    given.extend(values);
    let choices = Choices {
        name: prepared.default_name.clone(),
        values: given,
        defer_secrets: true,
        confirm_write,
        network,
        hosts,
        folders: read,
        write,
        declined,
    };
    let preview = rt
        .catalog_preview(&prepared.token, &choices)
        .map_err(said)?;
    print_preview(&prepared, &preview)?;
    if dry_run {
        rt.catalog_cancel(&prepared.token);
        println!("(dry run: nothing was added)");
        return Ok(0);
    }
    let (name, _) = rt
        .catalog_install(&prepared.token, &choices)
        .await
        .map_err(said)?;
    let did = if completes.is_some() {
        "Completed"
    } else {
        "Added"
    };
    if preview.missing.is_empty() {
        rt.set_server_enabled(&name, true).await?;
        println!("{did} \"{name}\". It starts with the app; its tools are pinned the first time it connects.");
    } else {
        println!(
            "{did} \"{name}\", turned off until these are set: {}. Install it again with --set KEY=VALUE (or set them in its settings in the window), then it is turned on.",
            preview.missing.join(", ")
        );
    }
    Ok(0)
}

async fn prepare(rt: &Runtime, what: &str, registry: Option<&str>) -> anyhow::Result<Prepared> {
    let path = std::path::Path::new(what);
    if what.ends_with(".mcpb") || path.is_file() {
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read {what}"))?
            .len();
        if size > switchboard_engine::bundle::MAX_BUNDLE {
            bail!(
                "{what} is larger than {} MB: it is not installed",
                switchboard_engine::bundle::MAX_BUNDLE / (1024 * 1024)
            );
        }
        // the limit holds while reading too (a file that grew, a pipe)
        let bytes =
            switchboard_engine::paths::read_at_most(path, switchboard_engine::bundle::MAX_BUNDLE)
                .with_context(|| format!("cannot read {what}"))?;
        return rt.bundle_prepare(bytes).await.map_err(said);
    }
    rt.catalog_prepare(registry, what, None).await.map_err(said)
}

fn print_preview(p: &Prepared, v: &InstallPreview) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "server:    {}", v.name)?;
    writeln!(
        out,
        "from:      {} {} ({})",
        one_line(&p.name),
        p.version,
        v.kind
    )?;
    if let Some(c) = &v.command {
        writeln!(out, "command:   {c}")?;
        // as JSON: the exact arguments, each as it is passed (no shell ever splits them)
        writeln!(out, "args:      {}", serde_json::to_string(&v.args)?)?;
    }
    if let Some(cwd) = &v.cwd {
        writeln!(out, "folder:    {cwd}")?;
    }
    if let Some(u) = &v.url {
        writeln!(out, "url:       {u}")?;
    }
    for e in &v.env {
        match &e.value {
            Some(value) => writeln!(
                out,
                "env:       {}={}",
                e.name,
                serde_json::to_string(value)?
            )?,
            None => writeln!(
                out,
                "env:       {}=•••• (secret, kept in the secret store)",
                e.name
            )?,
        }
    }
    for h in &v.headers {
        writeln!(
            out,
            "header:    {}: •••• (secret, kept in the secret store)",
            h.name
        )?;
    }
    match &v.sandbox {
        Some(s) => writeln!(
            out,
            "sandbox:   on; network: {}; read: {}; write: {}",
            if s.network {
                "yes".to_string()
            } else if s.hosts.is_empty() {
                "no".to_string()
            } else {
                format!("only {}", s.hosts.join(", "))
            },
            serde_json::to_string(&s.read)?,
            serde_json::to_string(&s.write)?
        )?,
        None => writeln!(
            out,
            "sandbox:   none (a server elsewhere: it gets what you send it)"
        )?,
    }
    for g in &v.grants {
        use switchboard_engine::registry::install::GrantReason;
        let why = match &g.why {
            GrantReason::BundleFolder => "its own folder: the bundle's files".to_string(),
            GrantReason::Field { key, .. } => format!("you gave it as {key}"),
            GrantReason::FileFolder {
                key,
                file,
                database,
                ..
            } => {
                if *database {
                    format!("the folder of {file} ({key}), which holds nothing else: SQLite writes its journal beside it")
                } else {
                    format!("the folder of {file} ({key}), which holds nothing else: the file does not exist yet")
                }
            }
            GrantReason::Picked => "you listed it (--read)".to_string(),
            GrantReason::Written => "you listed it (--write)".to_string(),
            GrantReason::Proposed { tool } => {
                format!(
                    "{tool} reads its settings there; --leave-out {} leaves it out",
                    g.path
                )
            }
        };
        let means = g
            .means
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        writeln!(
            out,
            "grant:     {} {} ({why}){means}",
            if g.write { "read and write" } else { "read" },
            g.path
        )?;
    }
    if let switchboard_engine::registry::install::NetworkView::Container { allowed } = v.network {
        writeln!(
            out,
            "network:   {}",
            if allowed {
                "Docker's own network for the container"
            } else {
                "none: the container runs with --network=none"
            }
        )?;
    }
    if let Some(sig) = &v.signature {
        let text = match sig {
            switchboard_engine::bundle::Signature::Unsigned => "unsigned".to_string(),
            switchboard_engine::bundle::Signature::Signed {
                publisher, issuer, ..
            } => {
                format!("signed by {publisher} (certified by {issuer})")
            }
            switchboard_engine::bundle::Signature::Untrusted {
                publisher,
                not_for_code: true,
                ..
            } => format!(
                "signed by a certificate that is not for signing code (it says \"{publisher}\", which proves nothing)"
            ),
            switchboard_engine::bundle::Signature::Untrusted { publisher, .. } => format!(
                "signed by a certificate this system does not trust (it says \"{publisher}\")"
            ),
        };
        writeln!(out, "signature: {text}")?;
    }
    for n in &v.notes {
        writeln!(out, "note:      {}", note_text(n))?;
    }
    for m in &v.missing {
        writeln!(
            out,
            "missing:   {m} (a secret: the server stays off until it is set)"
        )?;
    }
    Ok(())
}

fn note_text(n: &Note) -> String {
    match n {
        Note::DownloadsOnStart { launcher, package } => format!(
            "{launcher} downloads {package} when the server first starts: it needs the network then, unless the package is already on this computer"
        ),
        Note::ProgramMissing { program } => format!("{program} is not on the PATH: install it first"),
        Note::Deprecated { message } => format!(
            "the registry marks it deprecated{}",
            message.as_deref().map(|m| format!(": {}", one_line(m))).unwrap_or_default()
        ),
        Note::Container => "it runs in a container, which is its sandbox: the docker command runs outside Switchboard's sandbox (it must reach Docker) with only the options checked before each start, the container has no network (--network=none) unless you allow it, and mounts only the folders you gave it".into(),
        Note::ImageByTag { image, tag } => format!(
            "its image is named by the tag {tag}, not pinned: the publisher of {image} can point that tag at another image later (only a digest, @sha256:..., names one image)"
        ),
        Note::Remote { host } => format!("a server at {host}: what it gets is what you send it"),
        Note::FileNeedsFolder(n) => {
            let what = if n.database {
                format!("{} is a database: SQLite writes its journal (-journal, -wal, -shm) beside it", n.file)
            } else {
                format!("{} does not exist yet, and the sandbox can let it write only what exists", n.file)
            };
            let then = if n.exists {
                "it may only change the file itself"
            } else {
                "it cannot make it"
            };
            format!(
                "{what}, and {} holds other files, so {then}. Give it a file in a folder of its own, or let it write that folder: --write {}",
                n.folder, n.folder
            )
        }
    }
}
