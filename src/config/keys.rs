//! Every key of the configuration, once: the parser refuses what is not here (with the line
//! and the closest key), and the guide's configuration reference is generated from it, so
//! the two cannot disagree.

/// What a key holds, as far as checking the keys below it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value (a string, a number, an array, or a table such as `metric` that its own
    /// validation reads).
    Value,
    /// A table whose keys are listed here, under its path.
    Table,
    /// A table whose keys are names of the user's (`tests.NAME`, `build.env`): each entry is
    /// checked as the path with `NAME` in place of the name.
    Named,
}

/// One key: its dotted path (`NAME` stands for a test's name), what it means, its default.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub path: &'static str,
    pub kind: Kind,
    /// What the key means, in Markdown (one line).
    pub meaning: &'static str,
    /// The default, in Markdown; empty for a table.
    pub default: &'static str,
}

const fn table(path: &'static str, meaning: &'static str) -> Key {
    Key {
        path,
        kind: Kind::Table,
        meaning,
        default: "",
    }
}

const fn value(path: &'static str, meaning: &'static str, default: &'static str) -> Key {
    Key {
        path,
        kind: Kind::Value,
        meaning,
        default,
    }
}

/// The keys, in the order the reference lists them.
pub const KEYS: &[Key] = &[
    table("build", "how a commit is built (leave it out to measure commands that need no build)"),
    value(
        "build.command",
        "build recipe, `sh -c` in perfbisect's worktree of the commit; leave out to copy `artifacts` as checked out",
        "none",
    ),
    table(
        "build.cargo",
        "a Rust project: built with cargo instead of `command` ([Rust projects](rust.md))",
    ),
    value(
        "build.cargo.bins",
        "bin targets, each cached as `./NAME`",
        "with `benches` also empty: every bin of `package`, or of the workspace's default members",
    ),
    value(
        "build.cargo.benches",
        "bench targets (`cargo bench --no-run`), each cached as `./NAME`; run them with `--bench`",
        "none",
    ),
    value(
        "build.cargo.package",
        "the workspace member to take the targets from (`-p`)",
        "the member that has each target",
    ),
    value(
        "build.cargo.profile",
        "cargo profile of the bins (and of the benches when set)",
        "`release` for bins, `cargo bench`'s own (`bench`) for benches",
    ),
    value("build.cargo.features", "`--features a,b`", "none"),
    value("build.cargo.no_default_features", "`--no-default-features`", "`false`"),
    value(
        "build.artifacts",
        "paths (files or directories) relative to the worktree that the tests need, kept per commit",
        "required with `command`",
    ),
    value(
        "build.timeout",
        "`\"90s\"`, `\"20m\"`, `\"1h\"` or seconds, at most 30 days",
        "`1h`",
    ),
    Key {
        path: "build.env",
        kind: Kind::Named,
        meaning: "extra environment of the build, `{ NAME = \"value\" }`",
        default: "`{}`",
    },
    value("build.env.NAME", "one variable of the build's environment", "none"),
    value(
        "build.incremental",
        "build each commit over the previous one's outputs in its worktree, checked against pristine builds where they are evidence; `false`: every build in a clean worktree",
        "`true`",
    ),
    Key {
        path: "tests",
        kind: Kind::Named,
        meaning: "the tests, one table `[tests.NAME]` each (names: letters, digits, `-`, `_`, `.`; not `all`)",
        default: "",
    },
    table("tests.NAME", "one test: a command and how to read its number"),
    value(
        "tests.NAME.command",
        "the test, `sh -c` in the commit's artifact directory; it must exit 0",
        "required",
    ),
    value(
        "tests.NAME.metric",
        "`\"wall\"`, `\"user\"`, `\"sys\"`, `\"max-rss\"`, `\"instructions\"` (user-space instructions of the process tree), `{ regex = \"...\" }` (one capture group, the first matching line of stdout), `{ json = \"/pointer\" }` into stdout (RFC 6901), or a benchmark harness's number `{ format, name, field, file }` ([harnesses](rust.md#benchmark-harnesses))",
        "`\"wall\"`",
    ),
    value(
        "tests.NAME.unit",
        "for display; values are never converted",
        "`s` for times, `bytes` for max-rss, `instructions`, a harness's own unit",
    ),
    value("tests.NAME.direction", "`lower` or `higher` is better", "`lower`"),
    value(
        "tests.NAME.repeats",
        "runs per commit per round",
        "5 (1 when deterministic, 2 for instructions)",
    ),
    value(
        "tests.NAME.deterministic",
        "the metric never varies for one build (struct size, allocation count): one run per commit, exact comparisons",
        "`false`",
    ),
    value("tests.NAME.warmup", "runs thrown away before the repeats", "0"),
    value(
        "tests.NAME.max_repeats",
        "cap on runs per commit when `find` needs more evidence",
        "30",
    ),
    value(
        "tests.NAME.max_runs",
        "budget of runs per commit while a decision still straddles the threshold after `max_repeats` (`find`, `step`, `compare`, and `run`'s top-up of an undecided step; `--max-runs` overrides it): more decides more, at the runs' cost",
        "as many as take the time of one build of the commit (at least `max_repeats`, at most 1000)",
    ),
    value(
        "tests.NAME.threshold",
        "smallest change that matters, `\"2%\"` or an absolute number",
        "`\"1%\"` (`\"0.5%\"` for instructions)",
    ),
    value("tests.NAME.alpha", "significance level of two-sample tests", "0.01"),
    value(
        "tests.NAME.stake",
        "reference value results are judged against (\"current results are BETTER\")",
        "none",
    ),
    value("tests.NAME.description", "text for reports", "none"),
    value(
        "tests.NAME.setup",
        "command run before a commit's runs: in a window of side-by-side runs (`run`'s rounds, `find`, `compare`, `step`) each commit's setup and warm-ups run before its first run, so the setups of the commits measured together are in effect at once (give each commit's server a port of its own, or share one)",
        "none",
    ),
    value(
        "tests.NAME.teardown",
        "command run once a window of runs is over, for each commit whose setup ran",
        "none",
    ),
    value("tests.NAME.timeout", "per run, at most 30 days", "`10m`"),
    value(
        "tests.NAME.cpus",
        "pin the runs and their children to these CPUs: `\"1\"`, `\"0-3\"`, `\"0,2\"`, `[0, 1]`",
        "`measure.cpus`",
    ),
    value(
        "tests.NAME.aslr",
        "`false` turns address-space randomisation off for the runs",
        "`measure.aslr`",
    ),
    value(
        "tests.NAME.import",
        "the series of another tool's history (benchmark-action, asv, pytest-benchmark, BMF, hyperfine) that `import --from` takes into this test, by its id (`\"end_to_end/http2_get\"`); without it a test takes the series whose sanitised name is its name, or whose benchmark its harness metric's `name` names ([history](history.md))",
        "none",
    ),
    table("measure", "how every test is measured"),
    value("measure.cpus", "as `tests.NAME.cpus`, for every test", "none"),
    value("measure.aslr", "as `tests.NAME.aslr`, for every test", "`true`"),
    value(
        "measure.interleave",
        "compare runs taken side by side, `run` in interleaved rounds; `false`: each commit's runs back to back, pooled",
        "`true`",
    ),
    value(
        "measure.counter",
        "what counts instructions: `\"auto\"`, `\"perf\"` (the hardware counter), `\"cachegrind\"` (Valgrind)",
        "`\"auto\"`",
    ),
    table("fingerprint", "what every sample's fingerprint includes besides the machine"),
    value(
        "fingerprint.commands",
        "commands (`sh -c` in the config's folder, 30 s at most) whose output every sample's fingerprint includes, e.g. `[\"cc --version\", \"uname -v\"]`",
        "`[]`",
    ),
];

/// The key at `path` (`tests.NAME.repeats`), if there is one.
pub fn get(path: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.path == path)
}

/// The keys directly below `parent` (`""` for the top level), by their last name.
pub fn children(parent: &str) -> impl Iterator<Item = &'static str> + '_ {
    KEYS.iter().filter_map(move |k| {
        let rest = if parent.is_empty() {
            k.path
        } else {
            k.path.strip_prefix(parent)?.strip_prefix('.')?
        };
        (!rest.contains('.')).then_some(rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_below_a_table_and_listed_once() {
        for (i, k) in KEYS.iter().enumerate() {
            assert!(
                KEYS[..i].iter().all(|o| o.path != k.path),
                "{} twice",
                k.path
            );
            if let Some((parent, _)) = k.path.rsplit_once('.') {
                let p = get(parent).unwrap_or_else(|| panic!("{}: no {parent}", k.path));
                assert_ne!(p.kind, Kind::Value, "{} is below a value", k.path);
            }
        }
        let top: Vec<&str> = children("").collect();
        assert_eq!(top, ["build", "tests", "measure", "fingerprint"]);
        assert!(children("build.cargo").any(|c| c == "bins"));
    }
}
