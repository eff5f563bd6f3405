//! `perfbisect-launch PROGRAM ARGS...`: the small process each run of a `max-rss` test is
//! forked from, so its peak RSS is its own (see `perfbisect::process::launch`).

fn main() {
    std::process::exit(perfbisect::process::launch::main());
}
