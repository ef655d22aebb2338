//! Hostile input in the real window: the XSS corpus (tests/e2e/xss_payloads.txt, ≥100 payloads)
//! fed through every channel a model, a server or a file can reach: the reply's text (Markdown)
//! and thinking, tool-call arguments, tool names and descriptions, results, error results and
//! JSON-RPC errors, a server's stderr and log messages, server names, conversation titles, an
//! elicitation, search hits and an imported conversation. After each, nothing ran (no payload set
//! `window.__xss`, no CSP violation but blocked images), the DOM holds no script, no handler
//! attribute, no javascript:/vbscript:/data: (but images) URL, no frame, object or embed, and
//! Markdown only the elements Markdown makes; and each payload's text is on screen where it was
//! fed, as text.
//!
//! Many payloads go in one turn and one screen at a time: one launch for all of it.

use std::path::Path;

use fantoccini::Client;
use serde_json::{json, Value};
use switchboard_engine::llm::Role;
use switchboard_engine::mcp::{McpConfig, ServerConfig};
use switchboard_engine::store::exchange::{
    ExportedConversation, ExportedMessage, ExportedToolCall, FORMAT, VERSION,
};
use switchboard_engine::store::{MessageStatus, Notice, ToolCallStatus};

use crate::app::*;
use crate::support::fake_ollama::{self, last_message, FakeOllama, Stream};
use crate::support::fixture;

fn corpus_file() -> std::path::PathBuf {
    crate::support::repo_dir().join("tests/e2e/xss_payloads.txt")
}

/// The payloads: § becomes the payload's number (what it would set `window.__xss` to), ⏎ a
/// line break (the fixture server reads the file the same way).
fn payloads() -> Vec<String> {
    std::fs::read_to_string(corpus_file())
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("%%"))
        .enumerate()
        .map(|(i, l)| l.replace('§', &(i + 1).to_string()).replace('⏎', "\n"))
        .collect()
}

/// Every payload in its own paragraph after its number (`⟦n⟧`), as one Markdown reply.
fn markdown_reply(payloads: &[String]) -> String {
    payloads
        .iter()
        .enumerate()
        .map(|(i, p)| format!("⟦{}⟧\n\n{p}\n\n", i + 1))
        .collect()
}

/// What a tool call's arguments are: every payload under its own key.
fn arguments(payloads: &[String]) -> Value {
    Value::Object(
        payloads
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("p{i}"), json!(p)))
            .collect(),
    )
}

/// Installed once the page is up: a record of CSP violations, dialogs that would say they ran,
/// and the elements the page had before any payload arrived.
const WATCH: &str = r#"
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample || ''}`));
for (const f of ['alert', 'confirm', 'prompt', 'print']) {
  try { window[f] = () => { window.__xss = f; }; } catch (e) { /* frozen */ }
}
window.__baseline = new WeakSet(document.querySelectorAll('*'));
"#;

/// Everything active a payload could have put in the page, as a list of problems.
const SCAN: &str = r#"
const problems = [];
const where = (el) => {
  const c = el.closest('[class]');
  return `${el.localName} in ${c ? c.localName + '.' + [...c.classList].join('.') : 'the page'}`;
};
const RISKY = ['script', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'base', 'meta',
  'link', 'style', 'template', 'noscript', 'xmp', 'noembed', 'noframes', 'svg', 'math', 'marquee',
  'bgsound', 'isindex', 'keygen', 'video', 'audio', 'source', 'title', 'portal'];
const URLS = ['href', 'src', 'action', 'formaction', 'xlink:href', 'data', 'background', 'poster',
  'lowsrc', 'dynsrc', 'codebase', 'cite', 'ping', 'srcset'];
for (const el of document.querySelectorAll('*')) {
  const mine = window.__baseline.has(el) || window.__baseline.has(el.closest('svg'));
  if (RISKY.includes(el.localName) && !mine) problems.push(`a <${el.localName}>: ${where(el)}`);
  for (const a of el.attributes) {
    const name = a.name.toLowerCase();
    if (name.startsWith('on')) problems.push(`${name}= on ${where(el)}`);
    if (name === 'srcdoc') problems.push(`srcdoc= on ${where(el)}`);
    if (URLS.includes(name)) {
      const v = a.value.replace(/[\s\u0000-\u001f]/g, '').toLowerCase();
      if (/^(javascript|vbscript|livescript|ipc|tauri):/.test(v)
          || (v.startsWith('data:') && !/^data:image\/(png|jpeg|gif|webp);/.test(v))) {
        problems.push(`${name}="${a.value}" on ${where(el)}`);
      }
    }
  }
}
const MARKDOWN = ['p', 'a', 'img', 'code', 'pre', 'em', 'strong', 'del', 'h1', 'h2', 'h3', 'h4',
  'h5', 'h6', 'blockquote', 'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input',
  'br', 'hr'];
for (const body of document.querySelectorAll('.markdown')) {
  for (const el of body.querySelectorAll('*')) {
    if (!MARKDOWN.includes(el.localName)) problems.push(`a <${el.localName}> in a reply`);
    if (el.hasAttribute('style')) problems.push(`style= on a <${el.localName}> in a reply`);
  }
}
if (window.__xss !== undefined) problems.push(`payload ${window.__xss} ran`);
if (document.title !== 'Switchboard') problems.push(`the title became ${document.title}`);
for (const v of new Set(window.__csp)) if (!v.startsWith('img-src')) problems.push(`CSP: ${v}`);
return problems;
"#;

/// Asserts the page holds nothing active, after `what`.
async fn assert_inert(c: &Client, what: &str) {
    let problems: Vec<String> =
        serde_json::from_value(c.execute(SCAN, vec![]).await.unwrap()).unwrap();
    assert!(
        problems.is_empty(),
        "after {what}, {} problems: {:#?}",
        problems.len(),
        &problems[..problems.len().min(30)]
    );
}

/// The texts of `wanted` that are not in the text of the elements `css` finds.
async fn missing(c: &Client, css: &str, wanted: &[String]) -> Vec<String> {
    let v = c
        .execute(
            "const [css, wanted] = arguments;
             const shown = [...document.querySelectorAll(css)].map((n) => n.textContent).join('\\n');
             return wanted.filter((w) => !shown.includes(w));",
            vec![json!(css), json!(wanted)],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

async fn assert_shown(c: &Client, css: &str, wanted: &[String], what: &str) {
    let gone = missing(c, css, wanted).await;
    assert!(
        gone.is_empty(),
        "{} of {} {what} not shown in {css}: {gone:#?}",
        gone.len(),
        wanted.len()
    );
}

/// A reply's body shows exactly the text of the sanitized HTML the engine made of `markdown`
/// (the engine's own test checks that sanitizing keeps all the text), and each payload's number.
async fn assert_markdown_shown(c: &Client, body_css: &str, markdown: &str, n: usize) {
    let html = switchboard_engine::markdown::render(markdown);
    let same = c
        .execute(
            "const [css, html] = arguments;
             const expected = new DOMParser().parseFromString(html, 'text/html').body.textContent;
             const shown = document.querySelector(css).textContent;
             return shown === expected ? true : [shown.length, expected.length];",
            vec![json!(body_css), json!(html)],
        )
        .await
        .unwrap();
    assert_eq!(same, json!(true), "{body_css} shows the rendered reply");
    let markers: Vec<String> = (1..=n).map(|i| format!("⟦{i}⟧")).collect();
    assert_shown(c, body_css, &markers, "payload numbers").await;
}

/// The library as the app finds it: one conversation per payload, titled with it.
async fn library(home: &Path, payloads: &[String]) {
    let store = app_store(home).await;
    for (i, p) in payloads.iter().enumerate() {
        let m = |id: i64, role, content: &str| ExportedMessage {
            created_at: i as i64,
            ..ExportedMessage::text(id, (id > 1).then(|| id - 1), role, content)
        };
        let messages = vec![m(1, Role::User, p), m(2, Role::Assistant, p)];
        let doc = ExportedConversation {
            created_at: i as i64,
            updated_at: 1_700_000_000_000 + i as i64 * 1000,
            ..ExportedConversation::new(p, p, messages, vec![])
        };
        store.import_json(&doc, None).await.unwrap();
    }
}

/// A conversation file to import: every payload in its title, messages, thinking, a notice and
/// two tool calls (named, argued, answered and failed with payloads).
fn conversation_file(payloads: &[String]) -> ExportedConversation {
    let msg = |id: i64, role, content: String| ExportedMessage {
        created_at: 1_700_000_000_000 + id,
        ..ExportedMessage::text(id, (id > 1).then(|| id - 1), role, content)
    };
    let mut reply = msg(2, Role::Assistant, markdown_reply(payloads));
    reply.thinking = Some(payloads.join("\n"));
    let mut notice = msg(5, Role::Assistant, String::new());
    notice.status = MessageStatus::Notice;
    notice.notice = Some(Notice::Text {
        text: payloads.join(" ␞ "),
    });
    let call = |message, result_message, tool: &str, is_error| ExportedToolCall {
        message,
        result_message: Some(result_message),
        call_id: Some(format!("c{result_message}")),
        name: format!("x__{tool}"),
        server: payloads[5].clone(),
        tool: tool.into(),
        arguments: arguments(payloads),
        result: Some(payloads.join("\n")),
        result_raw: Some(json!({
            "content": payloads.iter().take(20).enumerate().map(|(i, p)| json!({
                "type": "resource_link", "uri": format!("javascript:window.__xss={}", i + 1),
                "name": p, "description": p})).collect::<Vec<_>>(),
            "structuredContent": {"payloads": payloads},
        })),
        is_error,
        status: ToolCallStatus::Done,
        started_at: 1_700_000_000_000,
        duration_ms: Some(12),
        approval: None,
        arguments_edited: false,
        written: Some(payloads[6].clone()),
    };
    let tool_result = |id| {
        let mut m = msg(id, Role::Tool, payloads.join("\n"));
        m.tool_name = Some("x__t".into());
        m
    };
    ExportedConversation {
        format: FORMAT.into(),
        version: VERSION,
        title: payloads[3].clone(),
        model: payloads[4].clone(),
        created_at: 1_800_000_000_000,
        updated_at: 1_800_000_000_000,
        pinned: false,
        tool_choice: Default::default(),
        settings: Default::default(),
        leaf: Some(5),
        messages: vec![
            msg(1, Role::User, payloads.join("\n\n")),
            reply,
            tool_result(3),
            tool_result(4),
            notice,
        ],
        tool_calls: vec![
            call(2, 3, &payloads[7], false),
            call(2, 4, &payloads[8], true),
        ],
        files: vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn the_xss_corpus_stays_inert_text_in_every_channel() {
    let payloads = payloads();
    assert!(payloads.len() >= 100, "{} payloads", payloads.len());
    let n = payloads.len();
    let reply = markdown_reply(&payloads);

    // the model thinks, writes and calls tools in payloads; once it has the results, it is done
    let fake = FakeOllama::start().await;
    {
        let (payloads, reply) = (payloads.clone(), reply.clone());
        fake.set_responder(move |req: &Value| {
            if last_message(req)["role"] == "tool" {
                return Stream::new().text("Done.").done().reply();
            }
            let mut s = Stream::new();
            for p in &payloads {
                s = s.thinking(&format!("{p}\n"));
            }
            s.text(&reply)
                .tool_calls(&[
                    ("c1", "hostile__echo", arguments(&payloads)),
                    ("c2", "hostile__fail", json!({})),
                    ("c3", "hostile__broken", json!({})),
                    ("c4", "hostile__ask", json!({})),
                ])
                .done()
                .reply()
        });
    }

    // the app's home: settings, servers named with payloads, a library titled with payloads
    let (home, config_dir) = app_home();
    let allow: serde_json::Map<String, Value> = ["echo", "fail", "broken", "ask"]
        .iter()
        .map(|t| (format!("hostile__{t}"), json!("allow")))
        .collect();
    std::fs::write(
        config_dir.join("settings.json"),
        // a context that holds the whole corpus: what is tested here is the window, not compaction
        json!({"llmUrl": fake.url, "model": fake_ollama::MODEL, "toolPolicies": allow, "numCtx": 262144}).to_string(),
    )
    .unwrap();
    let server = |mode: &str| {
        ServerConfig::new(
            "python3",
            &[
                fixture("xss_server.py").to_str().unwrap(),
                mode,
                corpus_file().to_str().unwrap(),
            ],
        )
    };
    let mut cfg = McpConfig::default();
    cfg.servers.insert("hostile".into(), server("serve"));
    let named: Vec<String> = payloads[..4].to_vec();
    cfg.servers.insert(named[0].clone(), server("quiet"));
    cfg.servers.insert(named[1].clone(), server("quiet"));
    cfg.servers.insert(named[2].clone(), server("crash"));
    cfg.servers.insert(named[3].clone(), server("crash"));
    cfg.save(&config_dir.join("mcp.json")).unwrap();
    library(home.path(), &payloads).await;
    let import = home.path().join("imported.json");
    std::fs::write(
        &import,
        serde_json::to_string_pretty(&conversation_file(&payloads)).unwrap(),
    )
    .unwrap();

    let App { c, driver: _driver } = App::launch(home.path()).await;
    c.execute(WATCH, vec![]).await.unwrap();
    wait_until(
        &c,
        "document.querySelector('#servers-summary').textContent.includes('3/5 servers')",
    )
    .await;

    // ---- server names on the empty chat, tool names and descriptions in the tools picker ----
    wait_until(
        &c,
        "document.querySelector('.empty-state')?.textContent.includes('hostile')",
    )
    .await;
    assert_shown(&c, ".empty-state", &named[..2], "server names").await;
    click(&c, "#tools-button").await;
    wait_css(&c, "#tools-panel:not([hidden]) .tool-option").await;
    assert_shown(&c, "#tools-panel", &payloads, "tool names").await;
    let titles = c
        .execute(
            "return [...document.querySelectorAll('#tools-panel .tool-option')].map((o) => o.title);",
            vec![],
        )
        .await
        .unwrap();
    for p in &payloads {
        assert!(
            titles.as_array().unwrap().iter().any(|t| t == p),
            "description {p:?} as a title"
        );
    }
    assert_inert(&c, "tool names in the tools picker").await;
    click(&c, "#tools-button").await;

    // ---- one turn: a payload as the first message (the title), the reply, thinking, calls ----
    // (titles are cut at 60 characters)
    let title = "<img src=x onerror=window.__xss=1><svg onload=alert(2)>";
    send(&c, title).await;
    // the server asks: its question, fields and choices are payloads
    wait_css(&c, ".tool-card .elicitation").await;
    assert_shown(&c, ".elicitation", &payloads[..21], "elicitation texts").await;
    let described: Vec<String> = payloads[..10].to_vec();
    let hints = c
        .execute(
            "return [...document.querySelectorAll('.elicitation .hint')].map((h) => h.textContent);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(hints, json!(described), "field descriptions");
    assert_inert(&c, "an elicitation").await;
    click(&c, ".elicitation [data-action=decline]").await;
    wait_until(
        &c,
        "document.querySelector('.msg.assistant.complete:last-of-type')?.textContent.includes('Done.') && !document.querySelector('#send').hidden",
    )
    .await;
    assert_eq!(text_content(&c, "#chat-title").await, title);
    assert_shown(
        &c,
        "#conversation-list .conv.active",
        &[title.to_string()],
        "title",
    )
    .await;
    assert_shown(&c, ".msg.user .body", &[title.to_string()], "message").await;
    assert_shown(&c, ".msg.assistant .thinking-text", &payloads, "thinking").await;
    assert_markdown_shown(&c, ".msg.assistant .body.markdown", &reply, n).await;
    let card = |tool: &str| format!(".tool-card[data-name='hostile__{tool}']");
    let escaped: Vec<String> = payloads
        .iter()
        .map(|p| serde_json::to_string(p).unwrap())
        .collect();
    assert_shown(
        &c,
        &format!("{} .args", card("echo")),
        &escaped,
        "arguments",
    )
    .await;
    assert_shown(
        &c,
        &format!("{} .result", card("echo")),
        &payloads,
        "results",
    )
    .await;
    assert_shown(
        &c,
        &format!("{} .result-link", card("echo")),
        &payloads[..20],
        "resource link names",
    )
    .await;
    assert_shown(
        &c,
        &format!("{} .structured", card("echo")),
        &escaped,
        "structured content",
    )
    .await;
    assert_shown(
        &c,
        &format!("{}.error .result", card("fail")),
        &payloads,
        "error results",
    )
    .await;
    assert_shown(
        &c,
        &format!("{}.error .result", card("broken")),
        &payloads,
        "JSON-RPC errors",
    )
    .await;
    assert!(text_content(&c, &card("ask"))
        .await
        .contains("the user chose: decline"));
    assert_inert(&c, "a turn in payloads").await;

    // ---- the servers: names, tools, stderr and log ----
    click(&c, "#servers-button").await;
    wait_css(&c, "#servers-dialog[open] .server").await;
    assert_shown(
        &c,
        "#servers-list .server-head strong",
        &named,
        "server names",
    )
    .await;
    let hostile = "#servers-list .server[data-name='hostile']";
    assert_shown(&c, &format!("{hostile} .chip"), &payloads, "tool names").await;
    let on_one_line: Vec<String> = payloads.iter().map(|p| p.replace('\n', "⏎")).collect();
    assert_shown(
        &c,
        &format!("{hostile} .stderr"),
        &on_one_line,
        "stderr lines",
    )
    .await;
    assert_shown(&c, &format!("{hostile} .stderr"), &payloads, "log messages").await;
    wait_until(
        &c,
        "document.querySelectorAll('#servers-list .server.failed .stderr').length === 2",
    )
    .await;
    assert_shown(
        &c,
        "#servers-list .server.failed .stderr",
        &on_one_line,
        "a crashed server's stderr",
    )
    .await;
    assert_inert(&c, "the servers dialog").await;
    click(&c, "#servers-close").await;

    // ---- the library: every title, scrolled through (only the rows in view are in the page) ----
    let mut seen = std::collections::HashSet::new();
    for _ in 0..100 {
        // a step down, painted at once (the list paints on its scroll event)
        let step = c
            .execute(
                "const l = document.querySelector('#conversation-list');
                 l.dispatchEvent(new Event('scroll'));
                 const titles = [...l.querySelectorAll('.conv-name')].map((t) => t.textContent);
                 const end = l.scrollTop + l.clientHeight >= l.scrollHeight - 2;
                 l.scrollTop += l.clientHeight / 2;
                 return [titles, end];",
                vec![],
            )
            .await
            .unwrap();
        seen.extend(
            step[0]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string()),
        );
        assert_inert(&c, "the library").await;
        if step[1] == json!(true) {
            break;
        }
    }
    let unseen: Vec<&String> = payloads.iter().filter(|p| !seen.contains(*p)).collect();
    assert!(unseen.is_empty(), "titles not shown: {unseen:#?}");
    // search hits: titles and snippets
    let search = wait_css(&c, "#search").await;
    search.send_keys("onerror").await.unwrap();
    wait_css(&c, "#conversation-list .hit").await;
    assert_inert(&c, "search hits").await;
    search.send_keys("\u{E00C}").await.unwrap(); // Escape

    // ---- an imported conversation ----
    click(&c, "#import-conversation").await;
    pick_in_file_dialog("Import a conversation", &import).await;
    wait_until(
        &c,
        &format!(
            "document.querySelector('#chat-title').textContent === {}",
            json!(payloads[3])
        ),
    )
    .await;
    wait_css(&c, ".tool-card").await;
    let user: Vec<String> = payloads.clone();
    assert_shown(&c, ".msg.user .body", &user, "your message").await;
    assert_shown(&c, ".msg.assistant .thinking-text", &payloads, "thinking").await;
    assert_markdown_shown(&c, ".msg.assistant .body.markdown", &reply, n).await;
    assert_shown(&c, ".tool-card .card-server", &payloads[5..6], "server").await;
    assert_shown(&c, ".tool-card .card-tool", &payloads[7..9], "tool names").await;
    assert_shown(
        &c,
        ".tool-card .card-written",
        &payloads[6..7],
        "written names",
    )
    .await;
    assert_shown(&c, ".tool-card .args", &escaped, "arguments").await;
    assert_shown(&c, ".tool-card.ok .result", &payloads, "results").await;
    assert_shown(&c, ".tool-card.error .result", &payloads, "errors").await;
    assert_shown(&c, ".tool-card .result-link", &payloads[..20], "links").await;
    assert_shown(&c, ".notice", &payloads, "a notice").await;
    assert_inert(&c, "an imported conversation").await;
    // clicking the links (but web ones, which would open the system browser) runs nothing
    c.execute(
        "for (const a of document.querySelectorAll('#messages a:not([href^=http])')) a.click();",
        vec![],
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_inert(&c, "clicking every link").await;
    c.close().await.unwrap();
}
