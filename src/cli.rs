//! Command-line definitions (clap derive only; no logic lives here).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Find which commit moved a performance metric.
///
/// `perfbisect TEST RANGE` is the same as `perfbisect find TEST RANGE`.
#[derive(Debug, Parser)]
#[command(
    name = "perfbisect",
    version,
    about,
    arg_required_else_help = true,
    override_usage = "perfbisect [OPTIONS] <TEST> <RANGE>     (the same as `find TEST RANGE`)\n       perfbisect [OPTIONS] <COMMAND>",
    after_help = GUIDE,
    after_long_help = AFTER_HELP
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,

    /// The default command: a test from the config; `perfbisect TEST RANGE` is `perfbisect find
    /// TEST RANGE`.
    #[arg(value_name = "TEST", requires = "range")]
    pub test: Option<String>,
    /// Revision range `OLD..NEW` of the default command.
    #[arg(value_name = "RANGE")]
    pub range: Option<String>,
    /// Words after RANGE: refused after parsing, so that a mistyped subcommand with its
    /// arguments (`fnd t A..B`) gets clap's suggestion instead of "unexpected argument".
    #[arg(hide = true, value_name = "EXTRA")]
    pub extra: Vec<String>,
    #[command(flatten)]
    pub find: DefaultFind,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The end of `-h`: where the guide is.
const GUIDE: &str =
    "Guide: `perfbisect guide` lists its pages, offline; start with `perfbisect guide \
first-search` (src/guide/first-search.md).";

/// The end of `--help` and of the manual page: exit codes, environment, files, the guide.
const AFTER_HELP: &str = "\
Exit status: 0 done, whatever the verdict (it is in the output); 3 a `find` whose runs could \
not decide (inconclusive); 1 any other failure (a build recipe that builds nothing a command \
needs is one: the message says how the build ended); 2 bad usage, \
bad config, unknown revision or test (the message names the key and line, the revision or the \
test); 128 + the signal's number when stopped by one (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; \
everything measured is kept). `step` follows `git bisect run`: \
0 old, 1 new, 125 skip (does not build, or cannot tell), 128 fatal.

Environment: PERFBISECT_CACHE is the cache directory when --cache is not given. NO_COLOR turns \
colour off in messages (CLICOLOR_FORCE turns it on where stderr is not a terminal).

Files: perfbisect.toml, the config (`perfbisect config init` prints a starting one, `perfbisect \
config check` validates one; `perfbisect guide config` lists the keys). Results are \
printed on stdout, messages and errors on stderr; every JSON output carries \"schema\": 1.

Guide: `perfbisect guide` lists its pages, offline; start with `perfbisect guide first-search` \
(src/guide/first-search.md).";

/// Whether a search profiles its culprit and the culprit's parent (`compare`: its two
/// sides, when they differ) under Cachegrind: the flags `find`, `report`'s default command
/// and `compare` share.
#[derive(Debug, Args, Clone, Default)]
pub struct Profile {
    /// Profile the culprit and its parent (`compare`: both sides, when they differ) under
    /// Valgrind's Cachegrind and list the functions whose cost changed (the default for tests
    /// of a time or a count where Valgrind is, not for sizes or memory peaks).
    #[arg(long, conflicts_with = "no_why")]
    pub why: bool,
    /// Do not profile (a run under Valgrind is 10-50 times slower).
    #[arg(long)]
    pub no_why: bool,
}

/// The options of `find` for the default command (`perfbisect TEST RANGE --format json`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Options of the default command (find TEST RANGE)")]
pub struct DefaultFind {
    /// Stop at a merge commit instead of searching the branch it merged.
    #[arg(long)]
    pub no_descend: bool,
    /// Build up to N commits at once when the search needs builds.
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Output format.
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json, Format::Md]))]
    pub format: Option<Format>,
    /// Use samples measured with any fingerprint, not only this machine's.
    #[arg(long)]
    pub any_fingerprint: bool,
    /// Also draw the range into FILE.png or FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Post the Markdown report as a comment on issue N of OWNER/REPO with `gh`.
    #[arg(long, value_name = "OWNER/REPO#N")]
    pub attach: Option<String>,
    #[command(flatten)]
    pub profile: Profile,
    /// Most runs of one commit while the evidence still straddles the threshold (default:
    /// as many as take the time of one build of it).
    #[arg(long, value_name = "N")]
    pub max_runs: Option<usize>,
}

impl DefaultFind {
    /// The option given on the command line, if any (to refuse it before a subcommand).
    pub fn given(&self) -> Option<&'static str> {
        if self.no_descend {
            Some("--no-descend")
        } else if self.jobs.is_some() {
            Some("--jobs")
        } else if self.format.is_some() {
            Some("--format")
        } else if self.any_fingerprint {
            Some("--any-fingerprint")
        } else if self.max_runs.is_some() {
            Some("--max-runs")
        } else if self.plot.is_some() {
            Some("--plot")
        } else if self.attach.is_some() {
            Some("--attach")
        } else if self.profile.why {
            Some("--why")
        } else if self.profile.no_why {
            Some("--no-why")
        } else {
            None
        }
    }
}

/// Options every subcommand understands.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The git repository (default: the one holding the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Configuration file (default: ./perfbisect.toml, else REPO/perfbisect.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Cache directory (default: $PERFBISECT_CACHE, else cache/ beside the config file).
    #[arg(long, global = true, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Print only results and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more: each build, every failed run, each probe of `find`, every skipped record.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Never draw progress bars.
    #[arg(long, global = true)]
    pub no_progress: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find the commit that moved TEST within RANGE (noisy bisection).
    ///
    /// The commit(s) that moved TEST, inside merged branches too: everything stored is used first,
    /// both ends are measured side by side and must differ, each probe is placed beside its
    /// neighbours, and the culprit is re-run beside its parent before it is named. Text and
    /// Markdown carry a sparkline of the medians; imported rounds narrow the search to one gap.
    /// `a,b` or `all` search each test over the same builds, a verdict each (JSON `{"tests": [...],
    /// "builds", "runs", "time_s"}`). Exit 0 with a verdict, 3 when the runs could not decide, 1
    /// when an end of the range does not build (with how its build ended).
    #[command(after_help = "Guide: `perfbisect guide finding` (src/guide/finding.md).")]
    Find(FindArgs),
    /// Build and measure TESTS on every commit of RANGE.
    ///
    /// Builds what is missing (up to --jobs at once), then tops every commit up to `repeats` runs,
    /// in interleaved rounds across the commits. A commit whose build is byte-identical to a
    /// measured one's uses its samples; steps too few runs left undecided are measured again
    /// beside each other until decided. `TESTS` is `name,name` or `all`.
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Run(RunArgs),
    /// Show stored results of TEST per commit, with a summary (default: every commit with
    /// results).
    ///
    /// Without RANGE: every commit with results of TEST, HEAD's first-parent chain in order, then the
    /// others by date (during a `git bisect` HEAD is old, and nothing is hidden); the first line says
    /// what is shown. Per commit: n, min, median, max (failed builds marked); then the range like
    /// curl's perf page: P0/P25/P50/P75/P100, mean, std dev (% of mean), span, trend and stake
    /// verdict.
    #[command(after_help = "Guide: `perfbisect guide reports` (src/guide/reports.md).")]
    Show(ShowArgs),
    /// Detect change points in stored results or in a CSV file.
    ///
    /// Each change point is the first commit of a new level, with the levels before and after
    /// (medians of the runs next to it), the relative change and a p-value; a step in the first or
    /// last two commits (the newest one included) too when their runs make it certain. One value
    /// per moment: runs taken back to back count once. For a `deterministic` test every change of at
    /// least the threshold is a change point at its exact commit; without the key a change is exact
    /// (p = 0) only between repeated equal runs, never from one run a side. Steps the runs show but
    /// are too few to decide are listed as undecided, with the `run` command that measures them.
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Detect(DetectArgs),
    /// Compare TEST between two revisions, runs interleaved.
    ///
    /// Medians of the metric, wall, user and sys time and max RSS per side, the ratio B/A with a
    /// 95 % bootstrap interval and the p-value. Without --runs the runs double while the sides are
    /// not told apart and could not have seen the threshold. A side whose test fails says why after
    /// its first failure and stops after `repeats` failures in a row; the wall, user and sys
    /// time and max RSS of the runs that ran are still shown.
    #[command(after_help = "Guide: `perfbisect guide noise` (src/guide/noise.md).")]
    Compare(CompareArgs),
    /// Measure the noise of TEST on this machine: A/A runs of one build of REV (default: HEAD).
    #[command(after_help = "Guide: `perfbisect guide noise` (src/guide/noise.md).")]
    Calibrate(CalibrateArgs),
    /// For `git bisect run`: classify the commit at HEAD as old (0) or new (1).
    #[command(after_help = "Guide: `perfbisect guide finding` (src/guide/finding.md).")]
    Step(StepArgs),
    /// List the commits of RANGE as perfbisect walks them (first parent, oldest first).
    #[command(after_help = "Guide: `perfbisect guide finding` (src/guide/finding.md).")]
    Log(LogArgs),
    /// Take in results measured elsewhere (a cron job's rounds): CSV or JSON rows of commit,
    /// test, value and optionally timestamp, round and machine; or another tool's history with
    /// --from (benchmark-action, asv, pytest-benchmark, bmf, hyperfine).
    ///
    /// What each optional column means for a row: `timestamp` (seconds since the epoch or
    /// ISO 8601) is when it was measured; `round` names the measuring pass it belongs to
    /// (`R31`, `31`); `machine` says where it was measured (kept and shown, it groups nothing).
    /// Rows of one commit that share round and timestamp were taken together: they are one
    /// measurement, their median, in every statistic. A row without either is a measurement
    /// of its own: sixty rows of a commit without a timestamp or round count as sixty
    /// independent runs, not one.
    ///
    /// Columns may come in any order; commits may be full or short hashes or tags. Rows with an
    /// unknown commit or test or an unreadable value are listed with their line and skipped, with
    /// counts at the end. Exit 0 when a row was imported or was there already, 1 when every row was
    /// skipped, 2 when the file cannot be read (missing, not text, no `commit`/`test`/`value`
    /// column, not JSON).
    ///
    /// With --from, PATH is another tool's history: a benchmark-action `data.js` (with
    /// --git-history, every version of it in a branch's log), an asv results directory, a
    /// pytest-benchmark `.benchmarks` directory, or BMF and hyperfine outputs (one file with
    /// --commit, or a folder of files named by commit). Each of its series goes into the test
    /// that takes it (its `import` key, or its name); --list prints every series with a
    /// [tests.X] stub. One series is one configuration: a history of several machines,
    /// environments or suites holding the same benchmarks needs --machine, --env or --suite
    /// (exit 2 lists them).
    #[command(
        after_help = "Guide: `perfbisect guide history` (src/guide/history.md), `perfbisect guide cron` (src/guide/cron.md)."
    )]
    Import(ImportArgs),
    /// Merge the result stores of other caches (shards of a CI matrix) into this cache.
    ///
    /// Brings their samples, their builds (content-addressed objects checked against their hashes,
    /// manifests), failed-build records, logs and fingerprints into this cache (--cache). Samples it
    /// holds already are not added again, so merging twice, or a store with itself, adds nothing.
    /// Warns when a machine-dependent test's samples now come from several fingerprints.
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Merge(MergeArgs),
    /// Inspect or trim the cache of built artifacts.
    ///
    /// `ls`: every cached build with its size, its stored samples and whether it is identical to
    /// others', failed builds with why, and bytes as copies against bytes on disk. `gc`: temp files
    /// and unlinked objects, and with --max-size the least recently used builds and worktrees until
    /// the cache fits (results are never removed). `rm REV`: one commit's build or failure record.
    /// `prune`: the stored samples of earlier test or build definitions.
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Cache(CacheArgs),
    /// Create a small demo repository with a known regression and find it.
    ///
    /// `demo` makes CACHE/demo/ (a git repository of a small C program, its config and its cache),
    /// builds and measures every commit, shows the results, detects the change points and bisects
    /// the regression, printing what it found next to what was planted; run again, it reuses all it
    /// built and measured. In a --dir of its own it refuses (exit 2) a folder holding a `repo/`,
    /// `perfbisect.toml` or `cache/` it did not make, and only ever rewrites what it made (marked by
    /// DIR/.perfbisect-demo). --create-only only writes DIR/repo and DIR/perfbisect.toml and prints
    /// the commits, oldest first (used by the benchmarks and the guide's examples; a seed makes the
    /// noise reproducible).
    #[command(after_help = "Guide: `perfbisect guide first-search` (src/guide/first-search.md).")]
    Demo(DemoArgs),
    /// Check the config (global --config) without building, or print a starting one.
    #[command(after_help = "Guide: `perfbisect guide config` (src/guide/config.md).")]
    Config(ConfigArgs),
    /// Print a completion script for SHELL on stdout (generated from these definitions).
    ///
    /// Each command completes only its own `--format` values.
    ///
    /// bash: `perfbisect completions bash > ~/.local/share/bash-completion/completions/perfbisect`;
    /// zsh: into a directory of $fpath as `_perfbisect`; fish:
    /// `~/.config/fish/completions/perfbisect.fish`.
    #[command(after_help = "Guide: `perfbisect guide commands` (src/guide/commands.md).")]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on stdout, or write one per command into a directory.
    ///
    /// `perfbisect man | man -l -` reads it; `perfbisect man --dir DIR` writes perfbisect.1,
    /// perfbisect-COMMAND.1 for every command, and perfbisect-guide-PAGE.7 for every page of
    /// the guide.
    #[command(after_help = "Guide: `perfbisect guide commands` (src/guide/commands.md).")]
    Man {
        /// Write the pages into DIR instead of printing perfbisect.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print a page of the user guide (offline), or list the pages.
    ///
    /// The pages are the Markdown files of src/guide/ built into perfbisect: `perfbisect guide
    /// noise | less` reads one; `perfbisect man --dir DIR` also writes each as
    /// perfbisect-guide-NAME.7.
    #[command(after_help = "Guide: `perfbisect guide first-search` is the place to start.")]
    Guide {
        /// The page to print (without it: the list of pages).
        page: Option<String>,
    },
    /// A finding to act on: Markdown for an issue (find's verdict, the commits around the
    /// culprit, change points, a sparkline, how it was measured, how to reproduce it), the
    /// same as JSON with every sample, or a static HTML site of every test.
    #[command(after_help = "Guide: `perfbisect guide reports` (src/guide/reports.md).")]
    Report(ReportArgs),
    /// The nightly perf sheriff: measure the newest commit, find every test's change points
    /// over its stored and imported history, search each new one (one search per gap for all
    /// the tests that moved there), confirm each culprit, keep the findings in the cache, and
    /// with --attach post one issue per culprit (a comment when tests join it or it is fixed).
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Triage(TriageArgs),
}

#[derive(Debug, Args)]
pub struct TriageArgs {
    /// Comma-separated test names, or `all`.
    pub tests: String,
    /// Revision range `A..B` to look at (default: the stored history of the tests, up to
    /// HEAD).
    pub range: Option<String>,
    /// Build up to N commits at once when a search needs builds.
    #[arg(short, long, default_value_t = 1)]
    pub jobs: usize,
    /// Start no new search once N builds were made; what is left is said and searched next
    /// time.
    #[arg(long, value_name = "N")]
    pub max_builds: Option<usize>,
    /// Start no new search once this much time went by (`90m`, `2h`); what is left is said
    /// and searched next time.
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Post to GitHub repository OWNER/REPO with `gh`: one issue per new culprit, a comment
    /// when more tests join it or when it is fixed. Never two issues for one culprit.
    #[arg(long, value_name = "OWNER/REPO")]
    pub attach: Option<String>,
    /// Label of the issues --attach opens.
    #[arg(long, default_value = "performance")]
    pub label: String,
    /// Print what --attach would post; post nothing, save no finding and mark no gap searched
    /// (the runs it measures are stored, as any run's).
    #[arg(long)]
    pub dry_run: bool,
    /// Output format: a summary for a CI log, JSON (a `findings` list, one object per culprit
    /// commit), or a Markdown digest for a job summary.
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json, Format::Md]), default_value = "text")]
    pub format: Format,
    /// Also write the JSON to FILE (whatever --format prints).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the Markdown digest to FILE (e.g. "$GITHUB_STEP_SUMMARY").
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: ConfigAction,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Validate the config without building anything: every key, regex, JSON pointer and
    /// harness metric (exit 2 naming the key and line); warn about commands whose first word
    /// is not on PATH.
    ///
    /// On stdout `FILE: ok; build: ...; N tests (...)`; problems on stderr with their line and key,
    /// exit 2 (a config without any test is one). Warnings, with key and line, exit 0: a command
    /// whose program is not on PATH, a helper under $PERFBISECT_CONFIG_DIR that is missing or not
    /// executable, a test program that is not among the build's artifacts.
    #[command(after_help = "Guide: `perfbisect guide config` (src/guide/config.md).")]
    Check,
    /// Print a commented starting config for the repository (--repo, else the one holding
    /// the current directory) on stdout: its build system (cargo, CMake, Meson, autotools,
    /// Makefile), a wall-time test and a max-RSS test.
    ///
    /// For a make-based build the program is the one a dry run of the build links: HEAD is
    /// copied into a temporary directory, its tracked `configure` run there, then `make -n`
    /// (your checkout is left alone; on stderr, what ran). A tracked `configure` is run as
    /// committed, without autoreconf. The project's own benchmark targets and scripts (named
    /// `speedtest*`, `bench*`, `perf*`) are offered as commented tests; a CMake one behind an
    /// option that is off by default, with the `-DOPTION=ON` that builds it. What it prints
    /// passes `config check` as it is.
    ///
    /// --at REV reads the project from REV's tree instead of the checkout (written by perfbisect
    /// into a temporary directory and removed after; your checkout, HEAD, index and refs are
    /// left alone): for a range from before the build system changed. Given a RANGE, it warns
    /// when an end of it builds with another build system than the revision read, naming both.
    #[command(after_help = "Guide: `perfbisect guide first-search` (src/guide/first-search.md).")]
    Init(InitArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Revision range `OLD..NEW` (or a single revision) the config is for: a warning when
    /// either end builds with another build system than the revision read.
    pub range: Option<String>,
    /// Read the project from the tree of revision REV (a hash, tag, branch, `HEAD~3`) instead
    /// of the checkout.
    #[arg(long, value_name = "REV")]
    pub at: Option<String>,
}

/// Output formats for results. Each command accepts (and its `--help` lists) only its own
/// subset, through [`formats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Csv,
    Md,
    // Plain comments, not doc comments: clap would turn those into per-value help and print
    // the values as a long list instead of `[possible values: ...]`.
    // A static HTML site (`report --out DIR`).
    Html,
    // Apache Otava's CSV: one row per commit, a time and a commit column, a column per test.
    Otava,
}

/// The `--format` parser of a command that writes `allowed`: clap lists only these in
/// `--help` and rejects any other value with a usage error (exit 2).
pub fn formats(allowed: &'static [Format]) -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(allowed.iter().filter_map(|f| f.to_possible_value()))
        .map(|s: String| {
            Format::from_str(&s, false).expect("clap accepted one of the listed formats")
        })
}

#[derive(Debug, Args)]
pub struct FindArgs {
    /// Test name from the config; `a,b` or `all` searches each over the same builds, a
    /// verdict per test (JSON: `{"tests": [...]}`).
    pub test: String,
    /// Revision range `OLD..NEW`.
    pub range: String,
    /// Stop at a merge commit instead of searching the branch it merged.
    #[arg(long)]
    pub no_descend: bool,
    /// Build up to N commits at once when the search needs builds (k-ary search: the range
    /// in doubt is cut into N+1 parts). A time or a memory peak is never measured beside a
    /// build or another run; a value the load does not move (instructions under Cachegrind, a
    /// deterministic value) runs N at once, and the next probes build while it is measured.
    #[arg(long, short = 'j', default_value_t = 1, value_name = "N")]
    pub jobs: usize,
    /// Output format.
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json, Format::Md]), default_value = "text")]
    pub format: Format,
    /// Use samples measured with any fingerprint (other machines, compilers), not only this
    /// machine's.
    #[arg(long)]
    pub any_fingerprint: bool,
    /// Also draw the range (medians, min–max band, the culprits) into FILE.png or FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Post the Markdown report as a comment on issue N of OWNER/REPO with `gh`, and print the
    /// comment's URL instead of the report.
    #[arg(long, value_name = "OWNER/REPO#N")]
    pub attach: Option<String>,
    #[command(flatten)]
    pub profile: Profile,
    /// Most runs of one commit a decision may take while its evidence still straddles the
    /// threshold, once `max_repeats` is spent (the budget; the test's `max_runs`). Default:
    /// as many as take the time of one build of the commit (at least `max_repeats`, at most
    /// 1000). More decides more ranges, at the runs' cost; fewer gives up sooner.
    #[arg(long, value_name = "N")]
    pub max_runs: Option<usize>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Comma-separated test names, or `all`.
    pub tests: String,
    /// Revision range `A..B`, or a single revision.
    pub range: String,
    /// Only measure commits that have no sample of the test yet (measured or imported).
    #[arg(long)]
    pub gaps: bool,
    /// Add a new round of `repeats` runs to every commit.
    #[arg(long, conflicts_with = "gaps")]
    pub again: bool,
    /// Build again commits whose build failed before.
    #[arg(long)]
    pub retry_failed: bool,
    /// Build up to N commits at once (never while measuring).
    #[arg(short, long, default_value_t = 1)]
    pub jobs: usize,
    /// Only handle shard I of N (1-based), e.g. `--shard 2/4`: every N-th commit of the range,
    /// starting with the I-th, so N machines split the range without overlap.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Build what the commits need and measure nothing: a CI runner that builds for the
    /// machine that measures (`merge` brings the builds there, `run --gaps` measures them); a
    /// commit any machine measured counts as measured.
    #[arg(long, conflicts_with = "again")]
    pub build_only: bool,
    /// Output format.
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json]), default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Test name from the config.
    pub test: String,
    /// Revision range `A..B` or a single revision (default: every commit with results of
    /// TEST, also those not reachable from HEAD, oldest first).
    pub range: Option<String>,
    /// Output format: `csv` and `json` carry every sample; `otava` is Apache Otava's CSV
    /// (TEST may then be `all` or `name,name`: a column per test).
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json, Format::Csv, Format::Otava]), default_value = "text")]
    pub format: Format,
    /// Use samples measured with any fingerprint (other machines, compilers), not only this
    /// machine's.
    #[arg(long)]
    pub any_fingerprint: bool,
    /// Also draw the commits (medians, min–max band, detect's change points) into FILE.png or
    /// FILE.svg.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Test name from the config; `all` for every test (HTML only).
    pub test: String,
    /// Revision range `OLD..NEW` (md and json: required, `find` runs over it; html: default
    /// every commit with results, as `show` lists them).
    pub range: Option<String>,
    /// md: Markdown for an issue; json: the same with every sample; html: a static site
    /// (index of all tests, a page per test) written into --out DIR.
    #[arg(long, value_parser = formats(&[Format::Md, Format::Json, Format::Html]), default_value = "md")]
    pub format: Format,
    /// Also draw the range into FILE.png or FILE.svg (md: referenced from the report by a
    /// relative path).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Directory to write into: the site (html), or DIR/TEST.md with its plot (md).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Post the Markdown as a comment on issue N of OWNER/REPO with `gh`, and print the
    /// comment's URL.
    #[arg(long, value_name = "OWNER/REPO#N")]
    pub attach: Option<String>,
    /// Build up to N commits at once when `find` needs builds.
    #[arg(long, short = 'j', default_value_t = 1, value_name = "N")]
    pub jobs: usize,
    /// Stop at a merge commit instead of searching the branch it merged.
    #[arg(long)]
    pub no_descend: bool,
}

#[derive(Debug, Args)]
pub struct DetectArgs {
    /// Test name from the config (not with --input).
    #[arg(required_unless_present = "input", conflicts_with = "input")]
    pub test: Option<String>,
    /// Revision range `A..B` or a single revision (default: every commit with results of
    /// TEST, as `show` lists them).
    pub range: Option<String>,
    /// Read a CSV with header `index,value` instead of the store.
    #[arg(long, value_name = "FILE.csv")]
    pub input: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json]), default_value = "text")]
    pub format: Format,
    /// Family-wise significance level for confirming change points.
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Use samples measured with any fingerprint (other machines, compilers), not only this
    /// machine's.
    #[arg(long, conflicts_with = "input")]
    pub any_fingerprint: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    pub test: String,
    pub rev_a: String,
    pub rev_b: String,
    /// Runs per side, exactly (default: the test's repeats, at least 5, doubled while the
    /// sides are not told apart, up to max_repeats).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Output format.
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub profile: Profile,
    /// Without --runs: most runs a side while the sides are not told apart and the runs
    /// could not yet show the change short of the threshold or past it (default: as many as
    /// take the time of one build of B, at least max_repeats).
    #[arg(long, value_name = "N", conflicts_with = "runs")]
    pub max_runs: Option<usize>,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Test name from the config.
    pub test: String,
    /// Revision to build and measure (default: HEAD, the commit checked out in the repository).
    pub rev: Option<String>,
    /// Runs (default 30).
    #[arg(long, default_value_t = 30)]
    pub runs: usize,
    /// Output format.
    #[arg(long, value_parser = formats(&[Format::Text, Format::Json]), default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct StepArgs {
    pub test: String,
    /// A commit known to have the old behaviour.
    #[arg(long)]
    pub old: String,
    /// A commit known to have the new behaviour.
    #[arg(long)]
    pub new: Option<String>,
    /// Build HEAD and the old (and new) commit at once when more than one needs a build.
    #[arg(long, short = 'j', default_value_t = 1, value_name = "N")]
    pub jobs: usize,
    /// When HEAD is new-like, profile it and the old commit under Valgrind's Cachegrind and
    /// print the functions whose cost changed (on stderr, as every line of `step`).
    #[arg(long)]
    pub why: bool,
    /// Most runs of each commit before `step` answers by the nearer level (default: as many
    /// as take the time of one build of HEAD, at least max_repeats). Fewer answers sooner,
    /// and a commit its runs leave in doubt is then placed on a closer call.
    #[arg(long, value_name = "N")]
    pub max_runs: Option<usize>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Revision range `A..B`, or a single revision.
    pub range: String,
    /// Print only the number of commits.
    #[arg(long)]
    pub count: bool,
}

/// Formats `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    Csv,
    Json,
}

/// Other tools whose histories `import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFrom {
    /// github-action-benchmark's `data.js` (or its JSON)
    BenchmarkAction,
    /// an asv results directory
    Asv,
    /// a pytest-benchmark `.benchmarks` directory (or one machine's folder of it)
    PytestBenchmark,
    /// Bencher Metric Format files (no commit in them)
    Bmf,
    /// hyperfine `--export-json` files (no commit in them)
    Hyperfine,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file: CSV with header `commit,test,value[,timestamp,round,machine]`, a JSON array
    /// of such objects, or the output of `show --format json`. With --from, the other tool's
    /// history (a file or a directory; with --git-history, the file's path in the branch).
    #[arg(value_name = "PATH")]
    pub file: PathBuf,
    /// Format of FILE (default: by its extension, `.json` or else CSV).
    #[arg(long, conflicts_with = "from")]
    pub format: Option<ImportFormat>,
    /// Read PATH as this tool's history.
    #[arg(long, value_name = "TOOL")]
    pub from: Option<ImportFrom>,
    /// Print every series of the history (points, commits, unit, the test that takes it) and a
    /// [tests.X] stub per series no test takes; import nothing.
    #[arg(long, requires = "from")]
    pub list: bool,
    /// asv, pytest-benchmark: the machine folder to read (a glob). benchmark-action, bmf,
    /// hyperfine: the machine its rows are recorded on (default: the suite's name; none).
    #[arg(long, value_name = "NAME", requires = "from")]
    pub machine: Option<String>,
    /// asv: the environment to read (a glob, `conda-py3.12`).
    #[arg(long, value_name = "NAME", requires = "from")]
    pub env: Option<String>,
    /// benchmark-action: the suite to read (a glob), when suites hold the same benches.
    #[arg(long, value_name = "NAME", requires = "from")]
    pub suite: Option<String>,
    /// Import the raw samples where the history keeps them (asv `samples`, pytest-benchmark
    /// `data`: one measurement, their median; hyperfine `times`: one measurement each).
    #[arg(long, requires = "from")]
    pub samples: bool,
    /// pytest-benchmark: the statistic taken (default median; `ops` is higher-is-better);
    /// hyperfine: likewise (default mean).
    #[arg(long, value_name = "STAT", requires = "from")]
    pub field: Option<String>,
    /// pytest-benchmark: take runs saved with uncommitted changes too.
    #[arg(long, requires = "from")]
    pub dirty: bool,
    /// bmf, hyperfine: the commit the numbers of the file PATH are of.
    #[arg(long, value_name = "REV", requires = "from")]
    pub commit: Option<String>,
    /// hyperfine: take each result's commit from this parameter (`hyperfine -L rev a,b`).
    #[arg(long, value_name = "NAME", requires = "from")]
    pub commit_param: Option<String>,
    /// bmf, hyperfine: when the file was measured (seconds since 1970 or ISO 8601).
    #[arg(long, value_name = "TIME", requires = "from")]
    pub timestamp: Option<String>,
    /// benchmark-action: read every version of PATH in the log of BRANCH (default gh-pages) of
    /// the repository, entries that a `max-items-in-chart` or an edit removed included.
    #[arg(long, value_name = "BRANCH", num_args = 0..=1, default_missing_value = "gh-pages", requires = "from")]
    pub git_history: Option<String>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Cache directories (or their `results/` folders) whose samples to add to this cache.
    #[arg(required = true, value_name = "CACHE")]
    pub caches: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// List cached builds (size, samples stored), failed builds, and what the cache takes.
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Ls {
        /// Output format.
        #[arg(long, value_parser = formats(&[Format::Text, Format::Json]), default_value = "text")]
        format: Format,
    },
    /// Evict the least recently used builds and worktrees until the cache is under SIZE
    /// (stored results are never removed).
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Gc {
        /// e.g. 10G, 500M (default: remove only temp files and unused objects)
        #[arg(long)]
        max_size: Option<String>,
    },
    /// Remove the cached build (or failure record) of REV; its stored results stay.
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Rm { rev: String },
    /// Delete stored samples of earlier test or build definitions (they are never used).
    #[command(after_help = "Guide: `perfbisect guide cron` (src/guide/cron.md).")]
    Prune,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the demo repository (default: CACHE/demo).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Only create a repository (DIR/repo) and its config (DIR/perfbisect.toml) with the
    /// shape below, for experiments and benchmarks; measure nothing.
    #[arg(long)]
    pub create_only: bool,
    /// With --create-only: number of commits.
    #[arg(long, default_value_t = 24, requires = "create_only")]
    pub commits: usize,
    /// With --create-only: 1-based commit where the printed value steps.
    #[arg(long, requires = "create_only")]
    pub step_at: Option<usize>,
    /// With --create-only: size of the step, % of the value (negative: down).
    #[arg(
        long,
        default_value_t = 5.0,
        requires = "create_only",
        allow_negative_numbers = true
    )]
    pub step_pct: f64,
    /// With --create-only: Gaussian noise of the value, % (0: deterministic).
    #[arg(long, default_value_t = 1.0, requires = "create_only")]
    pub noise_pct: f64,
    /// With --create-only: share of runs whose value is too high (1.3 times, or by
    /// --outlier-pct).
    #[arg(long, default_value_t = 0.0, requires = "create_only")]
    pub outlier_rate: f64,
    /// With --create-only: how much too high an outlier is, % (`30`, or a range `5-10` each
    /// outlier draws from).
    #[arg(
        long,
        default_value = "30",
        requires = "create_only",
        value_name = "P[-Q]"
    )]
    pub outlier_pct: String,
    /// With --create-only: seed of reproducible noise (0: fresh noise from /dev/urandom).
    #[arg(long, default_value_t = 0, requires = "create_only")]
    pub noise_seed: u64,
    /// With --create-only: every K-th commit changes only documentation (its build is
    /// byte-identical to its parent's); 0: none.
    #[arg(long, default_value_t = 0, requires = "create_only", value_name = "K")]
    pub docs_every: usize,
    /// With --create-only: the printed value drifts with the wall clock by this % (a shared
    /// machine's load coming and going): times 1 + P/100 sin(2 pi t / --drift-period).
    #[arg(
        long,
        default_value_t = 0.0,
        requires = "create_only",
        value_name = "P"
    )]
    pub drift_pct: f64,
    /// With --create-only: the drift's period, seconds.
    #[arg(
        long,
        default_value_t = 30.0,
        requires = "create_only",
        value_name = "S"
    )]
    pub drift_period: f64,
    /// With --create-only: iterations of the program's busy loop (its CPU work).
    #[arg(
        long,
        default_value_t = 1000,
        requires = "create_only",
        value_name = "N"
    )]
    pub work: u64,
    /// With --create-only: at --step-at the busy loop also grows by this % (the CPU work, so
    /// its time and its instructions move; 0: only the printed value steps).
    #[arg(
        long,
        default_value_t = 0.0,
        requires = "create_only",
        allow_negative_numbers = true,
        value_name = "P"
    )]
    pub work_step_pct: f64,
}
