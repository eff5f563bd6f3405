//! What a test's config says about how its number is read, and which counter counts its
//! instructions: the harness adapters ([`Harness`], [`Adapter`]: which tool's output, which
//! benchmark and field, checked as the config is read) and the counter asked for
//! ([`Choice`]). `measure` reads and counts by them.

use std::path::Path;

/// What the config asks for (`[measure] counter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// The hardware counter where there is one, else Cachegrind.
    #[default]
    Auto,
    Perf,
    Cachegrind,
}

impl Choice {
    /// Parse the config's value.
    pub fn parse(s: &str) -> Option<Choice> {
        match s {
            "auto" => Some(Choice::Auto),
            "perf" => Some(Choice::Perf),
            "cachegrind" => Some(Choice::Cachegrind),
            _ => None,
        }
    }
}

/// A benchmark harness whose output perfbisect reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    /// Google Benchmark, `--benchmark_format=json` (or `--benchmark_out`).
    Gbench,
    /// criterion.rs: `estimates.json`, or `cargo criterion --message-format=json` lines.
    Criterion,
    /// hyperfine `--export-json`.
    Hyperfine,
    /// Bencher Metric Format: `{"bench": {"measure": {"value": ...}}}`.
    Bmf,
    /// libtest `cargo bench` lines: `test name ... bench: 1,234 ns/iter (+/- 5)`.
    Libtest,
}

/// The criterion statistics a `field` may name (`typical` only in cargo-criterion's lines).
const CRITERION_FIELDS: &[&str] = &[
    "median",
    "mean",
    "slope",
    "std_dev",
    "median_abs_dev",
    "typical",
];
/// The statistics of one command in hyperfine's export.
const HYPERFINE_FIELDS: &[&str] = &["mean", "stddev", "median", "user", "system", "min", "max"];
/// What a libtest bench line holds: the median time per iteration, its spread (max - min of
/// the samples) and, with `b.bytes` set, the throughput.
const LIBTEST_FIELDS: &[&str] = &["ns/iter", "deviation", "MB/s"];

impl Harness {
    /// Every harness, in the order messages list them.
    pub const ALL: [Harness; 5] = [
        Harness::Gbench,
        Harness::Criterion,
        Harness::Hyperfine,
        Harness::Bmf,
        Harness::Libtest,
    ];

    /// The name used in the config (`format = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            Harness::Gbench => "gbench",
            Harness::Criterion => "criterion",
            Harness::Hyperfine => "hyperfine",
            Harness::Bmf => "bmf",
            Harness::Libtest => "libtest",
        }
    }

    /// The harness of a config name.
    pub fn parse(s: &str) -> Option<Harness> {
        Harness::ALL.into_iter().find(|h| h.name() == s)
    }

    /// The field read when the config names none (`None`: BMF's only measure).
    pub fn default_field(self) -> Option<&'static str> {
        match self {
            Harness::Gbench => Some("real_time"),
            Harness::Criterion => Some("median"),
            Harness::Hyperfine => Some("mean"),
            Harness::Bmf => None,
            Harness::Libtest => Some("ns/iter"),
        }
    }

    /// The fields the harness's output can hold, when they are a fixed set (Google Benchmark
    /// has user counters and BMF any measure, so those are checked against the output only).
    pub fn fields(self) -> Option<&'static [&'static str]> {
        match self {
            Harness::Criterion => Some(CRITERION_FIELDS),
            Harness::Hyperfine => Some(HYPERFINE_FIELDS),
            Harness::Libtest => Some(LIBTEST_FIELDS),
            Harness::Gbench | Harness::Bmf => None,
        }
    }

    /// Whether the harness writes files that perfbisect finds by itself (criterion's
    /// `estimates.json` under `CRITERION_HOME`), so each run needs a scratch directory.
    pub fn writes_files(self) -> bool {
        self == Harness::Criterion
    }
}

/// How a test's number is read from a harness's output (`metric = { format, name, field,
/// file }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapter {
    pub harness: Harness,
    /// The benchmark; may be left out when the output holds exactly one.
    pub name: Option<String>,
    /// The statistic or measure; the harness's default when left out.
    pub field: Option<String>,
    /// Read this file (relative to the run's `PERFBISECT_OUT` directory) instead of stdout.
    pub file: Option<String>,
}

impl Adapter {
    /// A stable text for display and for the test's definition hash.
    pub fn describe(&self) -> String {
        let mut s = format!("format:{}", self.harness.name());
        for (k, v) in [
            ("name", &self.name),
            ("field", &self.field),
            ("file", &self.file),
        ] {
            if let Some(v) = v {
                s += &format!(" {k}:{v}");
            }
        }
        s
    }

    /// The unit known before any run (`None`: only the output says, as with Google
    /// Benchmark's `time_unit`, or there is none).
    pub fn static_unit(&self) -> Option<&'static str> {
        let field = self.field.as_deref().or(self.harness.default_field());
        match self.harness {
            Harness::Gbench => None,
            Harness::Criterion => Some("ns"),
            Harness::Hyperfine => Some("s"),
            Harness::Bmf => field.and_then(bmf_unit),
            Harness::Libtest => Some(if field == Some("MB/s") { "MB/s" } else { "ns" }),
        }
    }

    /// Whether each run needs a scratch directory (`PERFBISECT_OUT`).
    pub fn needs_out_dir(&self) -> bool {
        self.file.is_some() || self.harness.writes_files()
    }

    /// Check what can be checked without output: the field against the harness's fixed set,
    /// and `file` as a relative path. The message names the sub-key at fault.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let (Some(f), Some(allowed)) = (&self.field, self.harness.fields()) {
            if !allowed.contains(&f.as_str()) {
                return Err((
                    "field",
                    format!(
                        "`{f}` is not a field of {} output{}; use one of: {}",
                        self.harness.name(),
                        crate::error::did_you_mean(f, allowed.iter().copied()),
                        allowed.join(", ")
                    ),
                ));
            }
        }
        for (key, v) in [("name", &self.name), ("field", &self.field)] {
            if v.as_deref().is_some_and(|s| s.trim().is_empty()) {
                return Err((key, "is empty".into()));
            }
        }
        if let Some(f) = &self.file {
            if f.is_empty() || Path::new(f).is_absolute() || f.split('/').any(|c| c == "..") {
                return Err((
                    "file",
                    format!(
                        "`{f}` must be a path relative to the run's $PERFBISECT_OUT directory, without `..`"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The units of Bencher's built-in measures.
pub fn bmf_unit(measure: &str) -> Option<&'static str> {
    match measure {
        "latency" => Some("ns"),
        "throughput" => Some("ops/s"),
        "file-size" => Some("bytes"),
        "build-time" => Some("s"),
        "instructions" => Some("instructions"),
        "cycles" => Some("cycles"),
        _ => None,
    }
}
