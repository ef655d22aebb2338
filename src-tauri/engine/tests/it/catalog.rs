//! What servers offer: tools, prompts and resources, every page, refreshed on list_changed.

use std::time::Duration;

use serde_json::json;
use switchboard_engine::mcp::{McpConfig, McpHost};
use tokio_util::sync::CancellationToken;

use crate::support::*;

#[tokio::test]
async fn prompts_and_resources_come_from_every_page_and_refresh_on_list_changed() {
    let mut config = McpConfig::default();
    config
        .servers
        .insert("dynamic".into(), python("dynamic_server.py"));
    config
        .servers
        .insert("calculator".into(), builtin("calculator"));
    let host = McpHost::new(crate::support::host_options());
    host.start_all(&config).await;
    let prompts =
        |h: &McpHost| -> Vec<String> { h.prompts().into_iter().map(|p| p.name).collect() };
    let resources =
        |h: &McpHost| -> Vec<String> { h.resources().into_iter().map(|r| r.uri).collect() };
    // two pages each; the calculator offers neither (and is not asked: no capability)
    assert_eq!(prompts(&host), vec!["p1", "p2", "p3"]);
    assert_eq!(resources(&host), vec!["dyn://r1", "dyn://r2", "dyn://r3"]);
    let p = &host.prompts()[0];
    assert_eq!(p.server, "dynamic");
    assert_eq!(p.arguments[0].name, "topic");
    assert!(p.arguments[0].required);
    let got = host
        .get_prompt(
            "dynamic",
            "p2",
            json!({"topic": "otters"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(got[0].text, "p2 about otters");
    assert_eq!(got[0].role, "user");
    let read = host.read_resource("dynamic", "dyn://r3").await.unwrap();
    assert_eq!(read.text, "contents of dyn://r3");
    assert_eq!(read.mime_type.as_deref(), Some("text/plain"));
    assert!(host
        .read_resource("nope", "dyn://r1")
        .await
        .unwrap_err()
        .to_string()
        .contains("not configured"));

    host.call_tool(
        "dynamic__grow",
        Default::default(),
        &CancellationToken::new(),
        None,
    )
    .await;
    let t = std::time::Instant::now();
    while prompts(&host).len() < 4 || resources(&host).len() < 4 {
        assert!(
            t.elapsed() < crate::support::READY,
            "list_changed did not refresh: {:?} {:?}",
            prompts(&host),
            resources(&host)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(prompts(&host)[3], "p4");
    assert_eq!(resources(&host)[3], "dyn://r4");
    host.shutdown().await;
}

#[tokio::test]
async fn prompts_and_resources_of_server_everything() {
    let r = rig(vec![("everything", everything())]).await;
    let names: Vec<String> = r.host.prompts().into_iter().map(|p| p.name).collect();
    for n in ["simple-prompt", "args-prompt", "resource-prompt"] {
        assert!(names.contains(&n.to_string()), "{n} in {names:?}");
    }
    let args = r
        .host
        .prompts()
        .into_iter()
        .find(|p| p.name == "args-prompt")
        .unwrap();
    let required: Vec<(String, bool)> = args
        .arguments
        .iter()
        .map(|a| (a.name.clone(), a.required))
        .collect();
    assert_eq!(
        required,
        vec![("city".to_string(), true), ("state".to_string(), false)]
    );
    let got = r
        .host
        .get_prompt(
            "everything",
            "args-prompt",
            json!({"city": "Lisbon"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(got[0].text, "What's weather in Lisbon?");
    // a prompt with an embedded resource: its text comes along
    let embedded = r
        .host
        .get_prompt(
            "everything",
            "resource-prompt",
            json!({"resourceType": "Text", "resourceId": "2"})
                .as_object()
                .unwrap()
                .clone(),
        )
        .await
        .unwrap();
    assert_eq!(embedded.len(), 2, "{embedded:?}");
    assert!(!embedded[1].text.starts_with('['), "{embedded:?}");
    // a missing required argument is the server's error, passed on
    assert!(r
        .host
        .get_prompt("everything", "args-prompt", Default::default())
        .await
        .is_err());
    let resources = r.host.resources();
    let doc = resources
        .iter()
        .find(|r| r.name == "features.md")
        .unwrap_or_else(|| panic!("features.md in {resources:?}"));
    assert_eq!(doc.mime_type.as_deref(), Some("text/markdown"));
    let read = r.host.read_resource("everything", &doc.uri).await.unwrap();
    assert!(read.text.len() > 100, "{}", read.text);
    r.host.shutdown().await;
}

#[tokio::test]
async fn tools_come_from_every_page_refresh_on_list_changed_and_calls_time_out() {
    let mut config = McpConfig::default();
    // the server's own timeout (5 s: its other calls answer well within it, however busy the
    // machine) wins over the app's (30 s)
    let mut dynamic = python("dynamic_server.py");
    dynamic.timeout = Some(5);
    config.servers.insert("dynamic".into(), dynamic);
    let mut opts = crate::support::host_options();
    opts.call_timeout = Duration::from_secs(30);
    let host = McpHost::new(opts);
    host.start_all(&config).await;
    let names =
        |h: &McpHost| -> Vec<String> { h.tool_specs().into_iter().map(|t| t.name).collect() };
    assert_eq!(
        names(&host),
        vec![
            "dynamic__grow",
            "dynamic__hang",
            "dynamic__t1",
            "dynamic__log",
            "dynamic__level"
        ],
        "all three pages of tools/list"
    );

    let none = CancellationToken::new();
    let grown = host
        .call_tool("dynamic__grow", Default::default(), &none, None)
        .await;
    assert_eq!(grown.text, "now 6 tools");
    let t = std::time::Instant::now();
    while !names(&host).contains(&"dynamic__t2".to_string()) {
        assert!(
            t.elapsed() < crate::support::READY,
            "tools/list_changed did not refresh: {:?}",
            names(&host)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let hung = host
        .call_tool("dynamic__hang", Default::default(), &none, None)
        .await;
    assert!(hung.is_error);
    assert!(
        hung.text.contains("did not answer within 5 s"),
        "{}",
        hung.text
    );
    // the server is still usable after a timed-out call
    let ok = host
        .call_tool("dynamic__t1", Default::default(), &none, None)
        .await;
    assert_eq!((ok.text.as_str(), ok.is_error), ("t1", false));

    // a cancelled call returns at once with an error the model can read
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let cancelled = host
        .call_tool("dynamic__hang", Default::default(), &cancel, None)
        .await;
    assert!(
        cancelled.is_error && cancelled.text.contains("cancelled"),
        "{}",
        cancelled.text
    );
    host.shutdown().await;
}

/// MCP Apps servers from npm: a tool's app page (`_meta.ui.resourceUri`) is known and read as an
/// app page with nothing declared (so it reaches no network); a tool only its app may call
/// (`visibility: ["app"]`) is never the model's: not offered, and no name routes to it. What
/// each server's pages declare is read before any is shown (server-map's tile and CDN origins,
/// server-pdf's font origin), as the server form shows it.
#[tokio::test]
async fn app_pages_are_read_and_app_only_tools_are_not_the_models() {
    use switchboard_engine::mcp::apps::{content_security_policy, APP_MIME};
    let mut config = McpConfig::default();
    for name in ["basic-vanillajs", "system-monitor", "map", "pdf"] {
        config.servers.insert(
            name.into(),
            switchboard_engine::mcp::ServerConfig::new(
                "node",
                &[
                    crate::support::app_server(name).to_str().unwrap(),
                    "--stdio",
                ],
            ),
        );
    }
    let host = McpHost::new(crate::support::host_options());
    host.start_all(&config).await;
    let views = host.servers();
    let tools = |server: &str| {
        views
            .iter()
            .find(|s| s.name == server)
            .unwrap_or_else(|| panic!("{server} in {views:?}"))
            .tools
            .clone()
    };
    let get_time = tools("basic-vanillajs")
        .into_iter()
        .find(|t| t.name == "get-time")
        .unwrap();
    let uri = get_time.ui.resource_uri.clone().unwrap();
    assert!(uri.starts_with("ui://"), "{uri}");
    assert!(get_time.ui.model && get_time.ui.app);

    let page = host.app_resource("basic-vanillajs", &uri).await.unwrap();
    assert!(
        page.html.to_lowercase().starts_with("<!doctype html>"),
        "{}",
        &page.html[..80]
    );
    assert!(page.domains.is_empty(), "{:?}", page.domains);
    let csp = content_security_policy(&page.domains.within(&page.domains.all()));
    assert!(csp.contains("connect-src 'none'"), "{csp}");
    // a resource that is not an app page is refused as one
    assert!(host
        .app_resource("basic-vanillajs", "ui://nothing/here.html")
        .await
        .is_err());
    assert!(host
        .app_resource("basic-vanillajs", "https://example.com/")
        .await
        .is_err());
    assert_eq!(APP_MIME, "text/html;profile=mcp-app");

    // system-monitor's poller is for its app only
    let poll = tools("system-monitor")
        .into_iter()
        .find(|t| t.name == "poll-system-stats")
        .unwrap();
    assert!(!poll.ui.model && poll.ui.app);
    let offered: Vec<String> = host.tool_specs().into_iter().map(|t| t.name).collect();
    assert!(
        !offered.iter().any(|n| n.contains("poll-system-stats")),
        "{offered:?}"
    );
    assert!(
        offered.iter().any(|n| n.contains("get-system-info")),
        "{offered:?}"
    );
    assert!(host.route("system-monitor__poll-system-stats").is_none());
    let refused = host
        .call_tool(
            "system-monitor__poll-system-stats",
            Default::default(),
            &CancellationToken::new(),
            None,
        )
        .await;
    assert!(
        refused.is_error && refused.text.starts_with("Unknown tool"),
        "{refused:?}"
    );

    // what each server's pages declare, read before any was shown (the settings form says it)
    let pages = host.app_pages("map").await.unwrap();
    assert_eq!(pages.len(), 1, "{pages:?}");
    assert_eq!(pages[0].uri, "ui://cesium-map/mcp-app.html");
    assert_eq!(
        pages[0].domains.connect,
        vec![
            "https://*.openstreetmap.org",
            "https://cesium.com",
            "https://*.cesium.com"
        ]
    );
    assert_eq!(pages[0].domains.resource, pages[0].domains.connect);
    let pages = host.app_pages("pdf").await.unwrap();
    assert_eq!(pages.len(), 1, "{pages:?}");
    assert_eq!(pages[0].domains.connect, vec!["https://unpkg.com"]);
    let pages = host.app_pages("basic-vanillajs").await.unwrap();
    assert_eq!((pages.len(), pages[0].domains.is_empty()), (1, true));
    assert!(host.app_pages("nobody").await.is_err());
    // server-pdf: its viewer's helpers are its app's only
    let pdf = tools("pdf");
    for name in ["read_pdf_bytes", "poll_pdf_commands", "save_pdf"] {
        let t = pdf.iter().find(|t| t.name == name).unwrap();
        assert!(!t.ui.model && t.ui.app, "{name}");
        assert!(!offered.iter().any(|n| n.ends_with(name)), "{offered:?}");
    }
    host.shutdown().await;
}
