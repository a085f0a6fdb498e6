//! `ka-endpoint`: not yet implemented (see issue 4).
fn main() {
    eprintln!("ka-endpoint: the endpoint binary is not built yet");
    std::process::exit(2);
}
