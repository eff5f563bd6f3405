//! `perfbisect-launch PROGRAM ARGS...`: the small process each run of a `max-rss` test is
//! forked from, so its peak RSS is its own (see `perfbisect::measure::launch`).

fn main() {
    std::process::exit(perfbisect::measure::launch::main());
}
