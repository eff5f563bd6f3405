//! What every reader of another tool's history shares: the tools, the options an import was
//! given, a point of a series and where readers put points ([`Visit`]), the choice of a
//! configuration among several, and the small readings of files and dates.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::names;
use crate::config::Direction;
use crate::import::report::Why;
use crate::store::origin::Spread;

/// The tools whose histories `import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// github-action-benchmark's `data.js` (or its plain JSON).
    BenchmarkAction,
    /// airspeed velocity's `results/` directory (result formats 1 and 2).
    Asv,
    /// pytest-benchmark's saved runs (`.benchmarks/`).
    PytestBenchmark,
    /// Bencher Metric Format: one run per file, no commit in it.
    Bmf,
    /// hyperfine `--export-json`: one invocation per file, no commit in it.
    Hyperfine,
}

impl Tool {
    /// The name `--from` takes and an imported sample records.
    pub fn name(self) -> &'static str {
        match self {
            Tool::BenchmarkAction => "benchmark-action",
            Tool::Asv => "asv",
            Tool::PytestBenchmark => "pytest-benchmark",
            Tool::Bmf => "bmf",
            Tool::Hyperfine => "hyperfine",
        }
    }
}

/// What `import --from` was asked besides the path.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// asv and pytest-benchmark: the machine folder(s) to read (a glob). benchmark-action:
    /// the machine its rows are recorded on (default: the suite's name). BMF, hyperfine: the
    /// machine recorded.
    pub machine: Option<String>,
    /// asv: the environment(s) to read (a glob).
    pub env: Option<String>,
    /// benchmark-action: the suite(s) to read (a glob).
    pub suite: Option<String>,
    /// Import the raw samples where the history keeps them, as one measurement.
    pub samples: bool,
    /// pytest-benchmark: the statistic taken (`median`); hyperfine: likewise (`mean`).
    pub field: Option<String>,
    /// pytest-benchmark: take runs saved with uncommitted changes too.
    pub dirty: bool,
    /// BMF, hyperfine: the commit the file's numbers are of.
    pub commit: Option<String>,
    /// hyperfine: the parameter whose value names each result's commit.
    pub commit_param: Option<String>,
    /// BMF, hyperfine: when the file was measured.
    pub timestamp: Option<String>,
    /// benchmark-action: read every version of the file from this branch's log.
    pub git_history: Option<String>,
}

/// One number of a foreign series, or one measurement's raw samples.
pub(crate) struct Point<'a> {
    /// The series' foreign id (`end_to_end/http2_get`, `bench.time_x(10)`).
    pub id: &'a str,
    /// The benchmark's own name, which a harness metric's `name` matches (`http2_get`).
    pub bench: &'a str,
    /// The text whose sanitised form is the series' test name.
    pub plain: &'a str,
    pub commit: &'a str,
    pub value: f64,
    /// The raw samples the number summarises, where the history keeps them.
    pub samples: Option<&'a [f64]>,
    /// Each value a measurement of its own (hyperfine's `times`: one process run each).
    pub separate: bool,
    /// When it was measured, seconds since the epoch.
    pub time: Option<u64>,
    /// The foreign run it belongs to.
    pub round: &'a str,
    pub machine: Option<&'a str>,
    /// Where it is, for messages.
    pub at: &'a Arc<str>,
    pub unit: Option<&'a str>,
    /// Which way the tool says is better.
    pub direction: Option<Direction>,
    /// The benchmark code's version (asv).
    pub version: Option<&'a str>,
    pub spread: Vec<Spread>,
    /// What kind of benchmark it is, for the `[tests.X]` stub.
    pub kind: Kind<'a>,
}

/// What a series' benchmark is, for the stub of a test that measures it here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind<'a> {
    /// A libtest `#[bench]` of the bench target named (benchmark-action's `cargo`).
    Libtest { target: &'a str },
    /// A Google Benchmark (benchmark-action's `googlecpp`).
    Gbench,
    /// A BMF benchmark's measure.
    Bmf { measure: &'a str },
    /// A hyperfine command.
    Hyperfine,
    /// Nothing perfbisect reads itself.
    Other,
}

/// Where a reader puts what it reads.
pub(crate) trait Visit {
    /// Whether this is `--list` (every configuration is listed, none is refused).
    fn listing(&self) -> bool;
    fn point(&mut self, p: Point<'_>) -> anyhow::Result<()>;
    /// A result the tool recorded without a number (asv's `null` or `NaN`).
    fn no_value(&mut self);
    /// A result not taken (`why`), at `at`.
    fn skip(&mut self, at: &Arc<str>, why: Why, reason: String);
    /// Something said once about the whole history (versions read, entries seen again).
    fn note(&mut self, text: String);
    /// The configurations (machines, environments, suites) found, whichever were selected.
    fn configurations(&mut self, kind: &'static str, found: &[String], chosen: &[String]);
}

/// The configurations of `kind` (`machine`, `env`, `suite`) to read among those `found`:
/// those the glob `asked` (`flag`) matches, or all when it is not given; several are
/// refused (exit 2, listing them) unless `several_ok` (`--list`). A glob matching none is
/// refused, listing what there is.
pub(crate) fn select(
    kind: &str,
    flag: &str,
    found: &[String],
    asked: Option<&str>,
    several_ok: bool,
) -> anyhow::Result<Vec<String>> {
    let chosen: Vec<String> = match asked {
        Some(p) => found
            .iter()
            .filter(|f| names::glob(p, f))
            .cloned()
            .collect(),
        None => found.to_vec(),
    };
    if chosen.is_empty() {
        match asked {
            Some(p) => crate::usage!(
                "{flag} `{p}` matches no {kind} of the history; it has: {}",
                found.join(", ")
            ),
            None => return Ok(chosen),
        }
    }
    if chosen.len() > 1 && !several_ok {
        crate::usage!(
            "the history holds {} {kind}s{}: {}. One series is one configuration, never a mix \
             of {kind}s; choose one with {flag} NAME (a glob), and import each into tests of \
             its own",
            chosen.len(),
            match asked {
                Some(p) => format!(" that {flag} `{p}` matches"),
                None => String::new(),
            },
            chosen.join(", ")
        );
    }
    Ok(chosen)
}

/// The files of a directory, sorted by name (`ext`: those ending so).
pub(crate) fn files(dir: &Path, ext: &str) -> anyhow::Result<Vec<PathBuf>> {
    let shown = crate::base::paths::display_path(dir);
    let rd = std::fs::read_dir(dir)
        .map_err(|e| crate::error::UsageError::err(format!("cannot read {shown}: {e}")))?;
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(ext))
        .collect();
    out.sort();
    Ok(out)
}

/// The subdirectories of a directory, sorted by name.
pub(crate) fn dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let shown = crate::base::paths::display_path(dir);
    let rd = std::fs::read_dir(dir)
        .map_err(|e| crate::error::UsageError::err(format!("cannot read {shown}: {e}")))?;
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}

/// The last component of a path, as text.
pub(crate) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Milliseconds since the epoch as whole seconds, when they are a time (negative, not finite
/// or past the year 9999 are none).
pub(crate) fn ms_to_secs(ms: f64) -> Option<u64> {
    (ms.is_finite() && ms >= 0.0 && ms / 1000.0 <= 253_402_300_799.0).then(|| (ms / 1000.0) as u64)
}

/// An ISO 8601 date (`2015-08-15T03:04:02.123456`, with or without a zone: UTC then) as
/// seconds since the epoch.
pub(crate) fn iso_to_secs(t: &str) -> Option<u64> {
    let t = t.trim();
    let parsed = humantime::parse_rfc3339_weak(t).ok().or_else(|| {
        // A zone offset humantime does not take: read the local time and apply it.
        let (base, sign, off) = match t.rfind(['+', '-']) {
            Some(i) if i > 10 && t[i + 1..].contains(':') => (
                &t[..i],
                if &t[i..=i] == "+" { -1i64 } else { 1 },
                &t[i + 1..],
            ),
            _ => return None,
        };
        let (h, m) = off.split_once(':')?;
        let secs = h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60;
        let st = humantime::parse_rfc3339_weak(base).ok()?;
        let d = st.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs() as i64;
        Some(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs((d + sign * secs).max(0) as u64),
        )
    })?;
    parsed
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_of_the_tools_read_as_seconds() {
        assert_eq!(
            iso_to_secs("2015-08-15T03:04:02.123456"),
            Some(1_439_607_842)
        );
        assert_eq!(iso_to_secs("2015-08-15T03:04:02Z"), Some(1_439_607_842));
        assert_eq!(
            iso_to_secs("2020-11-16T16:00:07-08:00"),
            iso_to_secs("2020-11-17T00:00:07Z")
        );
        assert_eq!(ms_to_secs(1_605_571_384_450.0), Some(1_605_571_384));
        assert_eq!(ms_to_secs(-1.0), None);
    }

    #[test]
    fn several_configurations_are_refused_unless_one_is_chosen() {
        let found = vec![
            "gha-aws-graviton".to_string(),
            "gha-aws-skylake".to_string(),
        ];
        let e = select("machine", "--machine", &found, None, false).unwrap_err();
        assert!(
            format!("{e:#}").contains("gha-aws-graviton, gha-aws-skylake"),
            "{e:#}"
        );
        assert!(e.downcast_ref::<crate::error::UsageError>().is_some());
        assert_eq!(
            select("machine", "--machine", &found, Some("*skylake"), false).unwrap(),
            ["gha-aws-skylake"]
        );
        assert!(select("machine", "--machine", &found, Some("x"), false).is_err());
        assert_eq!(
            select("machine", "--machine", &found, None, true)
                .unwrap()
                .len(),
            2
        );
    }
}
