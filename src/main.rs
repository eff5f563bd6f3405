//! The `perfbisect` binary: everything lives in the library; this only maps the outcome to an exit code.

fn main() {
    // A launcher process for one run of a max-rss test does only that.
    perfbisect::process::launch::run_if_launcher();
    perfbisect::process::launch::enable();
    perfbisect::install_process_defaults();
    std::process::exit(perfbisect::main_with_args(std::env::args_os()));
}
