//! The engine's integration tests: one binary, one module per feature. They run headless on the
//! engine's small `switchboard-mcp` binary (the built-in servers), the real npm and PyPI MCP
//! servers, fixture servers that misbehave, and a scripted fake LLM speaking Ollama's and
//! llama-server's wire formats byte for byte. Nothing here links the window.
//!
//! Modules of note: `tasks` (FastMCP with fastmcp-tasks from PyPI: follow, ask, cancel, outlive the
//! app, lost, end inside the turn, Stop from the card), `legacy_tasks` (server-everything, the
//! 2025-11-25 form), `task_restarts` (the app killed mid-task, through `Runtime`: server-everything
//! over Streamable HTTP rejoined in its session, and with the server restarted; on stdio; a
//! stateless 2026-07-28 server), `sandbox` (the probe, the network, the fetch, folders, containers
//! with a stand-in docker, and `real.rs`: PyPI's mcp-server-fetch kept off the network then allowed
//! one loopback host, mcp-server-git with the `~/.gitconfig` its install proposes, a SQLite file
//! grant, a busy and a silent first start), `secrets` (a real gnome-keyring in a private
//! `dbus-run-session`, and no bus), `families` (every family's samples through the loop, both
//! wires, calls run on `tests/fixtures/echo_tools_server.py`), `llm_faults` (refused, HTTP 500,
//! cut, malformed, stalled: through the loop), `registry` (the catalog against
//! `support/registry.rs`, a registry stand-in of our own: pages, ETag, faults), `bundles` (bundles
//! built by `support/bundles.rs` around a tiny Node MCP server: installed and run, the hostile ones
//! refused, signatures), `attachments` (images in each provider's shape, their bytes the re-encoded
//! ones; a tool's image to a vision model and not to another, `tests/fixtures/image_server.py`;
//! sampling; a task's late result; export/import; collection), `eval_tools` and `real_llm`
//! (opt-in). `support/`: the scripted fake LLM, where the real servers are, a rig of host + store +
//! fake, the arXiv stand-in (`support/arxiv.rs`).
//!
//! Waiting: servers are waited for until they have started (`support::host_options`, whose start
//! timeout is `support::READY`, 120 s, a bound against a hang only), polls wait up to `READY`; a
//! test about a server that never answers gives that server a host of its own with a short start
//! timeout; a test that something is not waited out (a cancel, a timeout, a retry) gives that thing
//! a duration far past `READY` (a 300 s operation, a 60 s slow answer), so only the behaviour,
//! never the machine's speed, decides it.
//!
//! Ports: no test hands a server a port it found free (another process could take it first). A
//! server process binds port 0 and `support::serve` reads its port back from /proc; one that must
//! know its port beforehand is handed the test's bound listeners (`support::pass_listeners`); an
//! address where nothing listens is a `support::DeadPort` (bound, never listening).

mod support;

mod approval;
mod apps;
mod attachments;
mod bundles;
mod catalog;
mod compaction;
mod context;
mod conversation;
mod eval_tools;
mod families;
mod host;
mod layers;
mod legacy_tasks;
mod llm_faults;
mod llm_ollama;
mod llm_openai;
mod model_check;
mod pins;
mod real_llm;
mod recovery;
mod registry;
mod research;
mod sandbox;
mod secrets;
mod server_requests;
mod settings_form;
mod sign_in;
mod skills;
mod startup;
mod task_restarts;
mod tasks;
mod transports;
mod turn;
mod window_layers;
