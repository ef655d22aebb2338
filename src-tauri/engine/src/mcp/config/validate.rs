//! Checking one server's settings before they are saved: each problem with the field to show it
//! next to.

use super::*;

/// The MCP log levels (`logging/setLevel`, `notifications/message`), least severe first.
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Why one server's settings cannot be saved, and which field to show it next to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

fn field(field: &'static str, message: impl Into<String>) -> Result<(), FieldError> {
    Err(FieldError {
        field,
        message: message.into(),
    })
}

/// Checks one server before it is saved under `name`; `others` are the other servers' names.
pub fn validate_server<'a>(
    name: &str,
    cfg: &ServerConfig,
    others: impl IntoIterator<Item = &'a String>,
) -> Result<(), FieldError> {
    check_name(name, others)?;
    check_common(cfg)?;
    if cfg.transport().is_remote() {
        check_remote(cfg)
    } else {
        check_program(cfg)
    }
}

fn check_name<'a>(
    name: &str,
    others: impl IntoIterator<Item = &'a String>,
) -> Result<(), FieldError> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return field("name", "A name is needed.");
    }
    if trimmed != name {
        return field("name", "The name cannot start or end with spaces.");
    }
    if name.chars().count() > 40 {
        return field("name", "Keep the name to 40 characters or fewer.");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '))
    {
        return field("name", "Use letters, digits, spaces, '_', '-' or '.' only.");
    }
    if others.into_iter().any(|o| o.eq_ignore_ascii_case(name)) {
        return field(
            "name",
            format!("There is already a server named \"{name}\"."),
        );
    }
    Ok(())
}

/// What every transport has: its `"type"`, log level and tool timeout.
fn check_common(cfg: &ServerConfig) -> Result<(), FieldError> {
    if let Some(t) = cfg.transport.as_deref() {
        if crate::mcp::transport::Transport::named(t).is_none() {
            let known: Vec<&str> = crate::mcp::transport::TRANSPORTS
                .iter()
                .map(|t| t.names[0])
                .collect();
            return field(
                "transport",
                format!(
                    "\"{t}\" servers are not supported: use {}.",
                    known.join(", ")
                ),
            );
        }
    }
    if let Some(l) = &cfg.log_level {
        if !LOG_LEVELS.contains(&l.as_str()) {
            return field(
                "logLevel",
                format!(
                    "\"{l}\" is not a log level: use one of {}.",
                    LOG_LEVELS.join(", ")
                ),
            );
        }
    }
    if let Some(t) = cfg.timeout {
        // the app's own bound for it (empty, the server's timeout is the app's)
        if let Err(message) = crate::limits::TOOL_TIMEOUT.check(t as f64) {
            return field("timeout", message);
        }
    }
    Ok(())
}

/// A server reached at a URL: the URL, its sign-in and its headers.
fn check_remote(cfg: &ServerConfig) -> Result<(), FieldError> {
    let url = cfg.url.as_deref().unwrap_or_default().trim();
    if url.is_empty() {
        return field(
            "url",
            "A URL is needed (for example http://127.0.0.1:3000/mcp).",
        );
    }
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        _ => {
            return field(
                "url",
                format!("\"{url}\" is not an http:// or https:// URL."),
            )
        }
    }
    if let Some(o) = &cfg.oauth {
        let id = o.client_id.as_deref().unwrap_or_default().trim();
        if id.is_empty() && o.client_secret.is_some() {
            return field(
                "oauth",
                "A client secret goes with a client id: enter both.",
            );
        }
        if let Some(doc) = o.client_metadata_url.as_deref() {
            match reqwest::Url::parse(doc) {
                Ok(u) if u.scheme() == "https" && u.path() != "/" => {}
                _ => {
                    return field(
                        "oauth",
                        format!(
                            "\"{doc}\" is not an https:// address of a client metadata document."
                        ),
                    )
                }
            }
        }
    }
    if let Some(why) = super::plain_http_headers_refusal(url, !cfg.headers.is_empty()) {
        return field("headers", why);
    }
    for (k, v) in &cfg.headers {
        if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
            return field("headers", format!("\"{k}\" is not a valid header name."));
        }
        if ["accept", "mcp-session-id", "last-event-id", "content-type"]
            .contains(&k.to_ascii_lowercase().as_str())
        {
            return field("headers", format!("{k} is set by Switchboard itself."));
        }
        if v.plain()
            .is_some_and(|v| http::HeaderValue::from_str(v).is_err())
        {
            return field(
                "headers",
                format!("The value of {k} is not a valid header value."),
            );
        }
    }
    Ok(())
}

/// A program the host starts: its command, environment, sandbox folders and working folder.
fn check_program(cfg: &ServerConfig) -> Result<(), FieldError> {
    if cfg.command.trim().is_empty() {
        return field(
            "command",
            "A command is needed (for example npx, uvx, node or a full path).",
        );
    }
    if cfg.command.trim() != cfg.command {
        return field(
            "command",
            "The command cannot start or end with spaces; put arguments in Arguments.",
        );
    }
    for key in cfg.env.keys() {
        let ok = key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return field(
                "env",
                format!("\"{key}\" is not a valid environment variable name."),
            );
        }
    }
    if let Some(SandboxSetting::On(sb)) = &cfg.sandbox {
        if let Some(l) = &sb.limits {
            if let Err(e) = l.check() {
                return field("sandbox", format!("The sandbox's {e}."));
            }
        }
        for h in &sb.hosts {
            if let Err(e) = super::HostRule::parse(h) {
                return field("sandbox", format!("{e}."));
            }
        }
        for p in sb.read.iter().chain(&sb.write) {
            check_sandbox_folder(p)?;
        }
    }
    if let Some(cwd) = &cfg.cwd {
        let p = Path::new(cwd);
        if !p.is_absolute() {
            return field("cwd", "The working folder must be an absolute path.");
        }
        if !p.is_dir() {
            return field("cwd", format!("{cwd} is not an existing folder."));
        }
    }
    Ok(())
}

fn check_sandbox_folder(p: &str) -> Result<(), FieldError> {
    let t = p.trim();
    if t.is_empty() {
        return field("sandbox", "A sandbox folder cannot be empty.");
    }
    if t != p {
        return field(
            "sandbox",
            format!("\"{p}\": a sandbox folder cannot start or end with spaces."),
        );
    }
    if !(Path::new(p).is_absolute() || p == "~" || p.starts_with("~/")) {
        return field(
            "sandbox",
            format!("\"{p}\" is not an absolute path (or one starting with ~/)."),
        );
    }
    Ok(())
}
