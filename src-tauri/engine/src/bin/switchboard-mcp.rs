//! `switchboard-mcp mcp-server calculator|files|research [--root DIR] [--arxiv-url URL] [--cache DIR]`: the built-in MCP servers in a
//! small binary without the GUI libraries, so each starts in a millisecond or two instead of the
//! ~50 ms the app binary needs to load WebKitGTK. The host uses it when it sits next to the app
//! binary; `switchboard mcp-server …` does the same thing, slower.

use switchboard_engine::servers;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        eprintln!(
            "usage: switchboard-mcp mcp-server {} [--root DIR] [--arxiv-url URL] [--cache DIR]",
            servers::names().join("|")
        );
        std::process::exit(2);
    };
    if args.first().map(String::as_str) != Some("mcp-server") {
        usage();
    }
    let Some(name) = args.get(1) else { usage() };
    for flag in ["--root", "--cache", "--arxiv-url"] {
        if let Some(i) = args.iter().position(|a| a == flag) {
            if args.get(i + 1).is_none() {
                usage();
            }
        }
    }
    let Some(server) = servers::by_name(name, &args[2..]) else {
        eprintln!(
            "switchboard-mcp: unknown built-in server \"{name}\"; choose one of: {}",
            servers::names().join(", ")
        );
        std::process::exit(2);
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(e) = rt.block_on(servers::serve_stdio(server.as_ref())) {
        eprintln!("switchboard-mcp: {e}");
        std::process::exit(1);
    }
}
