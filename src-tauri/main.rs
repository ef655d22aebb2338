// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(code) = switchboard_lib::cli::run(&args) {
        std::process::exit(code);
    }
    switchboard_lib::run();
}
