//! The `perfbisect` binary: everything lives in the library; this only maps the outcome to an exit code.

fn main() {
    perfbisect::install_process_defaults();
    std::process::exit(perfbisect::main_with_args(std::env::args_os()));
}
