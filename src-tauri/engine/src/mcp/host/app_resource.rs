//! Reading an MCP App's page (`mcp::apps`): which page a tool's card shows (`tool_app`: none
//! while the tool's definition is not one the user accepted), the `ui://` resource, checked to be
//! an app page, with what it declares about itself; and what a shown app may ask of its own server
//! (`resources/read`, `resources/list`, `resources/templates/list`), answered as the server
//! answered.
//!
//! A page is read with `resources/read` (the app MIME type, text or base64, at most 8 MB); for the
//! server form, every page a server's tools show with the origins each declares (`app_pages`); what
//! a shown app asks of its own server: `app_read_resource` (at most 48 MB), `app_list`
//! (`resources/list`, `resources/templates/list`). `McpHost::note` adds a line to a server's log
//! (what the window saw its apps do).

use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams};
use serde_json::Value;

use super::{HostError, McpHost, RoutedTool};
use crate::mcp::apps::{
    AppDomains, AppPage, AppPermissions, AppResource, APP_MIME, MAX_APP_HTML, MAX_APP_READ,
};

/// The lists an app may ask its server for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppListing {
    /// `resources/list`
    Resources,
    /// `resources/templates/list`
    ResourceTemplates,
}

impl McpHost {
    /// The tool `tool` of `server` and the page (`ui://…`) its card shows. Refused while its
    /// definition is not one the user accepted (changed, new, unchecked): an app is shown only
    /// as accepted, like the tool itself is offered to the model.
    pub fn tool_app(&self, server: &str, tool: &str) -> Result<(RoutedTool, String), HostError> {
        let routed = self
            .route_server_tool(server, tool)
            .ok_or_else(|| HostError::NoTool {
                server: server.into(),
                tool: tool.into(),
            })?;
        if routed.changed {
            return Err(HostError::NotAccepted {
                server: server.into(),
                tool: tool.into(),
            });
        }
        let page = routed
            .ui
            .resource_uri
            .clone()
            .ok_or_else(|| HostError::Unusable(format!("\"{tool}\" of {server} has no app")))?;
        Ok((routed, page))
    }

    /// Reads `server`'s UI resource `uri` (`resources/read`): its HTML (text, or base64 in a
    /// blob), and what it declares in `_meta.ui`.
    pub async fn app_resource(&self, server: &str, uri: &str) -> Result<AppResource, HostError> {
        if !uri.starts_with("ui://") {
            return Err(HostError::Unusable(format!(
                "\"{uri}\" is not a ui:// resource"
            )));
        }
        let item = self.read_resource_item(server, uri).await?;
        let mime = item
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !mime.replace(' ', "").eq_ignore_ascii_case(APP_MIME) {
            return Err(HostError::Unusable(format!(
                "{uri} is \"{mime}\", not an app page ({APP_MIME})"
            )));
        }
        let html = String::from_utf8(resource_bytes(&item, uri)?)
            .map_err(|_| HostError::Unusable(format!("{uri}: its page is not UTF-8")))?;
        if html.len() > MAX_APP_HTML {
            return Err(HostError::Unusable(format!(
                "{uri} is {} MB, more than an app page may be ({} MB)",
                html.len() / (1024 * 1024),
                MAX_APP_HTML / (1024 * 1024)
            )));
        }
        // the content item's _meta.ui wins over the listing's
        let listed = self
            .resources()
            .into_iter()
            .find(|r| r.server == server && r.uri == uri)
            .and_then(|r| r.meta);
        let ui = item
            .get("_meta")
            .and_then(|m| m.get("ui"))
            .or(listed.as_ref().and_then(|m| m.get("ui")));
        Ok(AppResource {
            uri: uri.to_string(),
            html,
            domains: AppDomains::of(ui.and_then(|u| u.get("csp"))),
            permissions: AppPermissions::of(ui.and_then(|u| u.get("permissions"))),
            prefers_border: ui
                .and_then(|u| u.get("prefersBorder"))
                .and_then(Value::as_bool),
        })
    }

    /// The app pages `server`'s tools show (each `ui://` page once), each read for the origins
    /// it declares: what the user is told before letting that server's apps reach the network.
    /// A page that cannot be read says why.
    pub async fn app_pages(&self, server: &str) -> Result<Vec<AppPage>, HostError> {
        let snapshot = self
            .slot(server)
            .ok_or_else(|| HostError::NotConfigured(server.to_string()))?
            .snapshot();
        let mut uris: Vec<String> = snapshot
            .catalog
            .tools
            .iter()
            .filter_map(|t| t.ui.resource_uri.clone())
            .collect();
        uris.sort();
        uris.dedup();
        let mut pages = Vec::with_capacity(uris.len());
        for uri in uris {
            pages.push(match self.app_resource(server, &uri).await {
                Ok(page) => AppPage {
                    uri,
                    domains: page.domains,
                    error: None,
                },
                Err(e) => AppPage {
                    uri,
                    domains: AppDomains::default(),
                    error: Some(e.to_string()),
                },
            });
        }
        Ok(pages)
    }
}

impl McpHost {
    /// `resources/read` of `server`'s resource `uri` for one of its apps: the result as the server
    /// gave it (text or base64 blobs), refused when bigger than [`MAX_APP_READ`].
    pub async fn app_read_resource(&self, server: &str, uri: &str) -> Result<Value, HostError> {
        let (_, session) = self.session(server)?;
        let read = session
            .peer
            .read_resource(ReadResourceRequestParams::new(uri));
        let result = self.bounded_request(server, "resources/read", read).await?;
        let value =
            serde_json::to_value(&result).map_err(|e| HostError::Unusable(e.to_string()))?;
        let size = value.to_string().len();
        if size > MAX_APP_READ {
            return Err(HostError::Unusable(format!(
                "{uri} is {} MB, more than an app may read at once ({} MB)",
                size / (1024 * 1024),
                MAX_APP_READ / (1024 * 1024)
            )));
        }
        Ok(value)
    }

    /// One page (from `cursor`) of `server`'s resources or resource templates, for one of its
    /// apps, as the server listed them.
    pub async fn app_list(
        &self,
        server: &str,
        listing: AppListing,
        cursor: Option<String>,
    ) -> Result<Value, HostError> {
        let (_, session) = self.session(server)?;
        let params = Some(PaginatedRequestParams::default().with_cursor(cursor));
        let peer = session.peer.clone();
        let value = match listing {
            AppListing::Resources => self
                .bounded_request(server, "resources/list", async move {
                    peer.list_resources(params).await
                })
                .await
                .and_then(|r| {
                    serde_json::to_value(r).map_err(|e| HostError::Unusable(e.to_string()))
                })?,
            AppListing::ResourceTemplates => self
                .bounded_request(server, "resources/templates/list", async move {
                    peer.list_resource_templates(params).await
                })
                .await
                .and_then(|r| {
                    serde_json::to_value(r).map_err(|e| HostError::Unusable(e.to_string()))
                })?,
        };
        Ok(value)
    }
}

impl McpHost {
    /// Reads resource `uri` of `server` (`resources/read`, within the request limits): the item
    /// of its contents for `uri` (else the first), as the server sent it.
    pub(crate) async fn read_resource_item(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<Value, HostError> {
        let (_, session) = self.session(server)?;
        let read = session
            .peer
            .read_resource(ReadResourceRequestParams::new(uri));
        let result = self.bounded_request(server, "resources/read", read).await?;
        let contents = serde_json::to_value(&result.contents).unwrap_or_default();
        contents
            .as_array()
            .and_then(|c| {
                c.iter()
                    .find(|i| i.get("uri").and_then(Value::as_str) == Some(uri))
                    .or(c.first())
            })
            .cloned()
            .ok_or_else(|| HostError::Unusable(format!("{server} returned nothing for {uri}")))
    }
}

/// The bytes of a resource's item: its `text`, or its `blob` decoded from base64.
pub(crate) fn resource_bytes(item: &Value, uri: &str) -> Result<Vec<u8>, HostError> {
    match (item.get("text"), item.get("blob")) {
        (Some(Value::String(t)), _) => Ok(t.as_bytes().to_vec()),
        (_, Some(Value::String(b))) => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .map_err(|e| HostError::Unusable(format!("{uri}: its blob is not base64: {e}")))
        }
        _ => Err(HostError::Unusable(format!("{uri} has no content"))),
    }
}
