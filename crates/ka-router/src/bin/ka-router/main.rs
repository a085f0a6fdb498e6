//! `ka-router`: not yet implemented (see issue 3).
fn main() {
    eprintln!("ka-router: the gateway binary is not built yet");
    std::process::exit(2);
}
