//! Prints what a chat template teaches: `cargo run -p switchboard-markup --example learn -- FILE`.
fn main() {
    for path in std::env::args().skip(1) {
        let src = std::fs::read_to_string(&path).expect("a template file");
        let started = std::time::Instant::now();
        let l = switchboard_markup::template::learn(&src);
        println!("{path} ({:?}):\n{l:#?}", started.elapsed());
    }
}
