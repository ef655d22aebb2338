//! The headless CLI, as a script would use it: `switchboard chat`, `switchboard conversations`,
//! `switchboard mcp-server`, `switchboard mcp-call` (on the login shell's PATH),
//! `switchboard check-model`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::fake_ollama::{self, last_message, FakeOllama, Stream};
use serde_json::{json, Value};

fn cli(home: &Path, args: &[&str]) -> Output {
    Command::new(crate::support::switchboard_bin())
        .args(args)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("OLLAMA_HOST")
        // the research server it starts never reaches the real arXiv from a test
        .env("SWITCHBOARD_ARXIV_URL", "http://127.0.0.1:9/api/query")
        .output()
        .unwrap()
}

fn ndjson(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn write_settings(home: &Path, v: Value) {
    let dir = home
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), v.to_string()).unwrap();
}

#[test]
fn chat_prints_ndjson_events_and_conversations_lists_them() {
    let fake = FakeOllama::start_in_background();
    fake.set_responder(|req: &Value| {
        let last = last_message(req);
        if last["role"] == "tool" {
            Stream::new()
                .text("It is ")
                .text(last["content"].as_str().unwrap())
                .done()
                .reply()
        } else if last["content"].as_str().unwrap().contains("again") {
            let n = req["messages"].as_array().unwrap().len();
            Stream::new()
                .text(&format!("I see {n} messages"))
                .done()
                .reply()
        } else {
            Stream::new()
                .tool_call("c1", "calculator__square_root", json!({"x": 1764}))
                .done()
                .reply()
        }
    });
    let home = tempfile::tempdir().unwrap();
    write_settings(home.path(), json!({"llmUrl": fake.url}));

    let out = cli(home.path(), &["chat", "square root of 1764?"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = ndjson(&out.stdout);
    assert_eq!(events.first().unwrap()["type"], "turnStarted");
    assert_eq!(
        events.first().unwrap()["model"],
        fake_ollama::MODEL,
        "the first listed model by default"
    );
    let finished = events
        .iter()
        .find(|e| e["type"] == "toolCallFinished")
        .unwrap();
    assert_eq!(finished["result"], "42");
    assert_eq!(finished["isError"], false);
    let started = events
        .iter()
        .find(|e| e["type"] == "toolCallStarted")
        .unwrap();
    assert_eq!(
        (started["server"].as_str(), started["tool"].as_str()),
        (Some("calculator"), Some("square_root"))
    );
    assert_eq!(events.last().unwrap()["type"], "done");
    let conv_id = events[0]["conversationId"].as_i64().unwrap();
    // the fresh install wrote the default MCP config with the three built-in servers, research
    // with the network in its sandbox
    let cfg: Value = serde_json::from_str(
        &std::fs::read_to_string(
            home.path()
                .join("config")
                .join(switchboard_engine::paths::APP_IDENTIFIER)
                .join("mcp.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        cfg["mcpServers"]["calculator"]["args"],
        json!(["mcp-server", "calculator"])
    );
    assert_eq!(
        cfg["mcpServers"]["files"]["args"],
        json!(["mcp-server", "files"])
    );
    assert_eq!(
        cfg["mcpServers"]["research"],
        json!({"command": "switchboard", "args": ["mcp-server", "research"], "sandbox": {"network": true}})
    );
    assert_eq!(
        cfg["mcpServers"]["files"]["sandbox"],
        json!({"network": false})
    );

    // continue the same conversation, with an explicit model
    let out = cli(
        home.path(),
        &[
            "chat",
            "again",
            "--conversation",
            &conv_id.to_string(),
            "--model",
            fake_ollama::MODEL,
        ],
    );
    assert!(out.status.success());
    let events = ndjson(&out.stdout);
    assert_eq!(events[0]["conversationId"], conv_id);
    // system + user + assistant(tool call) + tool + assistant + user
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "textDelta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "I see 6 messages");

    let out = cli(home.path(), &["conversations"]);
    assert!(out.status.success());
    let list = ndjson(&out.stdout);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], conv_id);
    assert_eq!(list[0]["title"], "square root of 1764?");
    assert_eq!(list[0]["messageCount"], 6);
}

#[test]
fn chat_against_an_unreachable_llm_exits_1_with_an_error_event() {
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    write_settings(home.path(), json!({"llmUrl": url}));
    let out = cli(home.path(), &["chat", "hello", "--model", "m"]);
    assert_eq!(out.status.code(), Some(1));
    let events = ndjson(&out.stdout);
    let err = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(err["kind"], "unreachable");
    assert_eq!(err["url"], json!(url));
    // without --model it cannot even pick one, and says where it looked
    let out = cli(home.path(), &["chat", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&url));
    // bad usage is explained
    let out = cli(home.path(), &["chat"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no prompt given"));
}

#[test]
fn mcp_server_speaks_json_rpc_on_stdio_for_any_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(crate::support::switchboard_bin())
        .args([
            "mcp-server",
            "files",
            "--root",
            dir.path().to_str().unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |msg: Value| -> Value {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let init = ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "switchboard-files");
    let list = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["list_files", "read_file", "write_file", "delete_file"]
    );
    let w = ask(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}}),
    );
    assert_eq!(w["result"]["isError"], false);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "x"
    );
    let bad = ask(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "/etc/passwd"}}}),
    );
    assert_eq!(bad["result"]["isError"], true);
    let garbage = ask(json!("not a request"));
    assert_eq!(garbage["error"]["code"], -32600);
    let unparsable = {
        writeln!(stdin, "{{not json").unwrap();
        stdin.flush().unwrap();
        serde_json::from_str::<Value>(&lines.next().unwrap().unwrap()).unwrap()
    };
    assert_eq!(unparsable["error"]["code"], -32700);
    drop(stdin);
    assert!(
        child.wait().unwrap().success(),
        "exits cleanly when stdin closes"
    );

    let out = Command::new(crate::support::switchboard_bin())
        .args(["mcp-server", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("calculator, files"));
}

/// The fake's answer to a model-check probe: the right native calls for `native-model`, prose
/// for any other model (and for the question that needs no tool).
fn probe_answer(req: &Value) -> fake_ollama::Reply {
    let prompt = last_message(req)["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let calls: Vec<(&str, &str, Value)> = if prompt.contains("17 + 25") {
        vec![("c", "calculator__add", json!({"a": 17, "b": 25}))]
    } else if prompt.contains("6 times 7") {
        vec![
            ("c", "calculator__multiply", json!({"a": 6, "b": 7})),
            ("d", "calculator__add", json!({"a": 100, "b": 23})),
        ]
    } else if prompt.contains("Team lunch") {
        vec![(
            "c",
            "calendar__create_event",
            json!({"title": "Team lunch", "when": {"date": "2025-03-14", "time": "12:30"},
                   "attendees": ["Ada", "Grace"]}),
        )]
    } else if prompt.contains("twelve and thirty") {
        vec![("c", "calculator__add", json!({"a": 12, "b": 30}))]
    } else {
        vec![]
    };
    if req["model"] == "native-model" && !calls.is_empty() {
        Stream::new().tool_calls(&calls).done().reply()
    } else {
        Stream::new().text("Paris").done().reply()
    }
}

#[test]
fn check_model_prints_the_table_and_exits_by_whether_tool_use_works() {
    let fake = FakeOllama::start_in_background();
    fake.set_models(&["native-model", "mute-model"]);
    fake.set_template("{{ '<tool_call>' }}");
    fake.set_responder(probe_answer);
    let home = tempfile::tempdir().unwrap();
    write_settings(home.path(), json!({"llmUrl": fake.url}));

    let out = cli(home.path(), &["check-model", "native-model"]);
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{table}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "Hermes / Qwen 2.5 (<tool_call>), from its template",
        "One call",
        "Two calls at once",
        "Nested arguments",
        "A number written in words",
        "No tool needed",
        "native call",
        "Proposed tool mode: native (tool use works)",
    ] {
        assert!(table.contains(want), "{want:?} missing:\n{table}");
    }
    assert_eq!(table.matches(" ok ").count(), 5, "{table}");

    // a model that never calls: both ways tried, proposed off, and the exit code says so
    let out = cli(home.path(), &["check-model", "mute-model"]);
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert!(
        table.contains("Proposed tool mode: off (tool use does not work)"),
        "{table}"
    );
    assert!(
        table.contains("text"),
        "the text mode was tried too:\n{table}"
    );

    // an OpenAI-compatible server by URL; an unknown option is refused
    fake.set_openai_responder(|_: &Value| {
        fake_ollama::Sse::new()
            .text("Paris")
            .finish("stop")
            .done()
            .reply()
    });
    let url = format!("{}/v1", fake.url);
    let out = cli(
        home.path(),
        &["check-model", "mute-model", "--provider", &url],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("on {url}")));
    let out = cli(home.path(), &["check-model", "x", "--nope"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `mcp-call` runs a configured server on the login shell's PATH, as the window does: a command
/// found only on the PATH the user's profile builds (here a shell that adds a folder) starts;
/// with a shell that adds nothing it is not found, so the test can fail.
#[test]
fn mcp_call_finds_a_configured_servers_command_on_the_login_shells_path() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("profile-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exec = |p: &Path, text: String| {
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let fixture = crate::support::repo_dir().join("tests/fixtures/net_server.py");
    exec(
        &bin.join("net-mcp"),
        format!("#!/bin/sh\nexec python3 '{}'\n", fixture.display()),
    );
    let shell = home.path().join("login-shell");
    exec(
        &shell,
        format!(
            "#!/bin/sh\nexport PATH=\"{}:$PATH\"\nexec /bin/sh -c \"$4\"\n",
            bin.display()
        ),
    );
    let dir = home
        .path()
        .join("config")
        .join(switchboard_engine::paths::APP_IDENTIFIER);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        json!({"mcpServers": {"net": {"command": "net-mcp"}}}).to_string(),
    )
    .unwrap();
    let run = |shell: &Path| {
        Command::new(crate::support::switchboard_bin())
            .args([
                "mcp-call",
                "--call",
                "env",
                "--args",
                r#"{"name": "HOME"}"#,
                "net",
            ])
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("SHELL", shell)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    let out = run(&shell);
    let lines = ndjson(&out.stdout);
    assert!(
        out.status.success(),
        "{lines:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lines[0]["server"]["status"], "running", "{lines:?}");
    assert_eq!(lines[1]["isError"], false, "{lines:?}");
    // a login shell that adds nothing: not found
    let out = run(Path::new("/bin/sh"));
    assert_eq!(out.status.code(), Some(1));
    let lines = ndjson(&out.stdout);
    assert!(
        lines[0]["server"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("\"net-mcp\" was not found on PATH"),
        "{lines:?}"
    );
}
