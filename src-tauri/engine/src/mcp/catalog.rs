//! A server's prompts and resources: listed (every page) when it starts and again on
//! `notifications/prompts/list_changed` / `resources/list_changed`; fetched on demand
//! (`prompts/get`, `resources/read`) as plain text the chat can use.

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::{Peer, RoleClient, ServiceError};
use serde::Serialize;
use serde_json::{Map, Value};

/// One prompt a server offers (typing `/` lists them).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptView {
    pub server: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<PromptArg>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArg {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
}

/// One resource a server offers (the composer's attach menu lists them).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceView {
    pub server: String,
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    /// Its `_meta` (an app page may declare its needs there), not sent to the window.
    #[serde(skip)]
    pub meta: Option<Value>,
}

/// A prompt's messages, as text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptText {
    pub role: String,
    pub text: String,
}

/// A resource's contents, as text (binary parts are named, not decoded).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceText {
    pub uri: String,
    pub mime_type: Option<String>,
    pub text: String,
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(String::from)
}

/// Lists every page of the server's prompts, if it says it has any.
pub(crate) async fn list_prompts(
    server: &str,
    peer: &Peer<RoleClient>,
) -> Result<Vec<PromptView>, ServiceError> {
    let has = peer
        .peer_info()
        .is_some_and(|i| i.capabilities.prompts.is_some());
    if !has {
        return Ok(vec![]);
    }
    let prompts = peer.list_all_prompts().await?;
    Ok(prompts
        .iter()
        .map(|p| {
            let v = serde_json::to_value(p).unwrap_or_default();
            PromptView {
                server: server.into(),
                name: p.name.clone(),
                title: s(&v, "title"),
                description: s(&v, "description"),
                arguments: v
                    .get("arguments")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|a| PromptArg {
                                name: s(a, "name").unwrap_or_default(),
                                title: s(a, "title"),
                                description: s(a, "description"),
                                required: a
                                    .get("required")
                                    .and_then(Value::as_bool)
                                    .unwrap_or(false),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect())
}

/// Lists every page of the server's resources, if it says it has any.
pub(crate) async fn list_resources(
    server: &str,
    peer: &Peer<RoleClient>,
) -> Result<Vec<ResourceView>, ServiceError> {
    let has = peer
        .peer_info()
        .is_some_and(|i| i.capabilities.resources.is_some());
    if !has {
        return Ok(vec![]);
    }
    let resources = peer.list_all_resources().await?;
    Ok(resources
        .iter()
        .map(|r| {
            let v = serde_json::to_value(r).unwrap_or_default();
            ResourceView {
                server: server.into(),
                uri: s(&v, "uri").unwrap_or_default(),
                name: s(&v, "name").unwrap_or_default(),
                title: s(&v, "title"),
                description: s(&v, "description"),
                mime_type: s(&v, "mimeType"),
                meta: v.get("_meta").cloned(),
            }
        })
        .collect())
}

/// Text of one content block: text as it is, an embedded text resource as its text, anything
/// else named in brackets.
fn block_text(c: &Value) -> String {
    match c.get("type").and_then(Value::as_str) {
        Some("text") => s(c, "text").unwrap_or_default(),
        Some("resource") => {
            let r = &c["resource"];
            match s(r, "text") {
                Some(t) => t,
                None => format!("[binary resource {}]", s(r, "uri").unwrap_or_default()),
            }
        }
        Some("resource_link") => format!("[resource {}]", s(c, "uri").unwrap_or_default()),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    }
}

/// `prompts/get` with the user's arguments; the messages as text.
pub(crate) async fn get_prompt(
    peer: &Peer<RoleClient>,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<Vec<PromptText>, ServiceError> {
    let mut params = GetPromptRequestParams::new(name);
    if !arguments.is_empty() {
        params = params.with_arguments(arguments);
    }
    let result = peer.get_prompt(params).await?;
    let v = serde_json::to_value(&result).unwrap_or_default();
    Ok(v["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| PromptText {
                    role: s(m, "role").unwrap_or_else(|| "user".into()),
                    text: block_text(&m["content"]),
                })
                .collect()
        })
        .unwrap_or_default())
}

/// `resources/read`; every part of the contents as text.
pub(crate) async fn read_resource(
    peer: &Peer<RoleClient>,
    uri: &str,
) -> Result<ResourceText, ServiceError> {
    let result = peer
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    let v = serde_json::to_value(&result).unwrap_or_default();
    let parts = v["contents"].as_array().cloned().unwrap_or_default();
    let mime_type = parts.first().and_then(|p| s(p, "mimeType"));
    let text = parts
        .iter()
        .map(|p| match s(p, "text") {
            Some(t) => t,
            None => format!(
                "[binary content, {}, {} bytes base64]",
                s(p, "mimeType").unwrap_or_else(|| "unknown type".into()),
                p["blob"].as_str().map(str::len).unwrap_or(0)
            ),
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok(ResourceText {
        uri: uri.into(),
        mime_type,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_blocks_become_text() {
        assert_eq!(block_text(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            block_text(&json!({"type": "resource", "resource": {"uri": "a://b", "text": "body"}})),
            "body"
        );
        assert_eq!(
            block_text(&json!({"type": "resource", "resource": {"uri": "a://b", "blob": "AAAA"}})),
            "[binary resource a://b]"
        );
        assert_eq!(
            block_text(&json!({"type": "image", "data": "x"})),
            "[image]"
        );
    }
}
