use super::*;
use serde_json::json;

fn listed(server: serde_json::Value) -> Listed {
    server_json::parse_one(json!({"server": server}).to_string().as_bytes()).unwrap()
}

#[test]
fn an_entry_shows_an_https_image_icon_and_what_it_runs() {
    let l = listed(json!({
        "name": "io.github.a/b", "description": "d", "version": "1.0.0",
        "repository": {"url": "javascript:alert(1)", "source": "github"},
        "websiteUrl": "https://example.com",
        "icons": [
            {"src": "http://example.com/a.png"},
            {"src": "https://example.com/a.svg", "mimeType": "image/svg+xml"},
            {"src": "https://example.com/dark.png", "theme": "dark"},
            {"src": "https://example.com/b.png"}
        ],
        "packages": [{"registryType": "npm", "identifier": "b", "version": "1.0.0"}],
        "remotes": [{"type": "websocket", "url": "wss://example.com"}]
    }));
    let v = EntryView::of(&l);
    assert_eq!(v.icon.as_deref(), Some("https://example.com/b.png"));
    assert_eq!(v.repository, None, "only http(s) links");
    assert_eq!(v.website.as_deref(), Some("https://example.com"));
    assert_eq!(v.kinds, ["npm", "websocket"]);
    assert!(v.installable);
    let ways = ways(&l.server);
    assert_eq!(ways[0].label, "b@1.0.0");
    assert!(ways[0].refused.is_none());
    assert!(ways[1].refused.as_deref().unwrap().contains("websocket"));
}

#[test]
fn a_malformed_entry_in_a_page_is_skipped_the_others_kept() {
    let page = server_json::parse_page(
        json!({"servers": [
            {"server": {"name": "a/b", "description": "d", "version": "1.0.0"}},
            {"server": {"name": "a/c", "description": "d"}},
            {"server": {"name": "a/d", "description": "d", "version": "^1.0"}},
            {"server": {"name": "a/e", "description": "", "version": "1.0.0"}},
            {"nothing": true},
            {"server": {"name": "a/f", "description": "d", "version": "1.0.0", "packages": [{"registryType": "npm"}]}}
        ], "metadata": {"nextCursor": ""}})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.skipped.len(), 5);
    assert_eq!(page.next_cursor, None, "an empty cursor is the end");
    assert!(
        page.skipped[1].reason.contains("version"),
        "{:?}",
        page.skipped
    );
    assert!(server_json::parse_page(b"[]").is_err());
}

#[test]
fn versions_compare_as_versions() {
    assert!(crate::newer("1.10.0", "1.9.0"));
    assert!(!crate::newer("1.9.0", "1.10.0"));
    assert!(!crate::newer("2.0.0", "2.0.0"));
    assert!(crate::newer("2024-06", "2024-05"), "not semver: any other");
}
