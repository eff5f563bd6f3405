//! The TOML configuration: the build recipe and the tests, validated with the key and line of
//! every problem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::error::UsageError;
use crate::stats::Threshold;

/// Default number of measured runs per commit.
pub const DEFAULT_REPEATS: usize = 5;
/// Default cap on runs per commit during sequential testing.
pub const DEFAULT_MAX_REPEATS: usize = 30;
/// Default significance level of two-sample tests.
pub const DEFAULT_ALPHA: f64 = 0.01;

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it was read from.
    pub path: PathBuf,
    /// The folder holding the config file (`PERFBISECT_CONFIG_DIR`).
    pub dir: PathBuf,
    pub build: Build,
    /// Tests by name, sorted.
    pub tests: BTreeMap<String, Test>,
    /// `[fingerprint] commands`: what else every sample depends on (compiler versions, say);
    /// their outputs go into the fingerprint.
    pub fingerprint_commands: Vec<String>,
}

/// How to build a commit.
#[derive(Debug, Clone)]
pub struct Build {
    /// Run with `sh -c` in the worktree. `None`: nothing to build, artifacts are copied as checked out.
    pub command: Option<String>,
    /// Paths relative to the worktree, copied into the cache after a successful build.
    pub artifacts: Vec<String>,
    pub timeout: Duration,
    pub env: BTreeMap<String, String>,
}

impl Build {
    /// A stable hash of everything that changes what a build produces; artifacts are cached
    /// per (commit, recipe hash).
    pub fn recipe_hash(&self) -> u64 {
        let mut h = Fnv::new();
        h.add(self.command.as_deref().unwrap_or(""));
        for a in &self.artifacts {
            h.add(a);
        }
        for (k, v) in &self.env {
            h.add(k);
            h.add(v);
        }
        h.finish()
    }
}

/// How one number is read from a run.
#[derive(Debug, Clone)]
pub enum Metric {
    Wall,
    User,
    Sys,
    MaxRss,
    /// First match's capture group 1 in a line of stdout.
    Regex(regex::Regex),
    /// A JSON pointer into stdout parsed as JSON.
    Json(String),
}

impl Metric {
    /// A name for display and hashing.
    pub fn describe(&self) -> String {
        match self {
            Metric::Wall => "wall".into(),
            Metric::User => "user".into(),
            Metric::Sys => "sys".into(),
            Metric::MaxRss => "max-rss".into(),
            Metric::Regex(r) => format!("regex:{}", r.as_str()),
            Metric::Json(p) => format!("json:{p}"),
        }
    }
}

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Lower,
    Higher,
}

impl Direction {
    /// The lowercase name used in config and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Lower => "lower",
            Direction::Higher => "higher",
        }
    }
}

/// One configured test.
#[derive(Debug, Clone)]
pub struct Test {
    pub name: String,
    pub command: String,
    pub metric: Metric,
    pub unit: String,
    pub direction: Direction,
    pub repeats: usize,
    /// Declared zero-spread metric (struct size, allocation count, binary size): one run per
    /// commit and plain comparisons. Without it a test is noisy, whatever its `repeats`.
    pub deterministic: bool,
    pub warmup: usize,
    pub max_repeats: usize,
    pub threshold: Threshold,
    pub alpha: f64,
    pub stake: Option<f64>,
    pub description: Option<String>,
    pub setup: Option<String>,
    pub teardown: Option<String>,
    pub timeout: Duration,
}

impl Test {
    /// Whether commits with byte-identical builds may share this test's samples: not when its
    /// command or hooks read `PERFBISECT_COMMIT`, since they may then behave per commit
    /// whatever the artifacts.
    pub fn shares_identical_builds(&self) -> bool {
        let reads = |s: &str| s.contains("PERFBISECT_COMMIT");
        !(reads(&self.command)
            || self.setup.as_deref().is_some_and(reads)
            || self.teardown.as_deref().is_some_and(reads))
    }

    /// A stable hash of what changes the numbers a test produces; samples of another
    /// definition are not mixed with these.
    pub fn definition_hash(&self) -> u64 {
        let mut h = Fnv::new();
        h.add(&self.command);
        h.add(&self.metric.describe());
        h.add(self.setup.as_deref().unwrap_or(""));
        h.finish()
    }
}

/// FNV-1a, 64 bit: stable across Rust versions, unlike `DefaultHasher`.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, s: &str) {
        for b in s.bytes().chain([0xff]) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    build: Option<Spanned<RawBuild>>,
    #[serde(default)]
    tests: BTreeMap<Spanned<String>, Spanned<RawTest>>,
    fingerprint: Option<RawFingerprint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFingerprint {
    #[serde(default)]
    commands: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuild {
    command: Option<String>,
    #[serde(default)]
    artifacts: Vec<Spanned<String>>,
    timeout: Option<Spanned<toml::Value>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    command: Spanned<String>,
    metric: Option<Spanned<toml::Value>>,
    unit: Option<String>,
    direction: Option<Spanned<String>>,
    repeats: Option<Spanned<i64>>,
    deterministic: Option<bool>,
    warmup: Option<Spanned<i64>>,
    max_repeats: Option<Spanned<i64>>,
    threshold: Option<Spanned<toml::Value>>,
    alpha: Option<Spanned<f64>>,
    stake: Option<Spanned<f64>>,
    description: Option<String>,
    setup: Option<String>,
    teardown: Option<String>,
    timeout: Option<Spanned<toml::Value>>,
}

/// Where to look for the config when `--config` is not given.
pub fn locate(explicit: Option<&Path>, repo_dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            crate::usage!("config file {} does not exist", p.display());
        }
        return Ok(p.to_path_buf());
    }
    let here = PathBuf::from("perfbisect.toml");
    if here.is_file() {
        return Ok(here);
    }
    if let Some(repo) = repo_dir {
        let there = repo.join("perfbisect.toml");
        if there.is_file() {
            return Ok(there);
        }
    }
    // The two defaults are often one file (perfbisect started in the repository's top
    // directory): name it once. Directories are compared resolved (symlinks, `.`, `..`).
    let resolved = |d: &Path| {
        std::fs::canonicalize(d)
            .or_else(|_| std::path::absolute(d))
            .unwrap_or_else(|_| d.to_path_buf())
    };
    let other = repo_dir.filter(|r| resolved(r) != resolved(Path::new(".")));
    crate::usage!(
        "no config: ./perfbisect.toml does not exist{}; pass --config FILE",
        other
            .map(|r| format!(" and neither does {}", r.join("perfbisect.toml").display()))
            .unwrap_or_default()
    )
}

/// Read and validate a config file.
pub fn load(path: &Path) -> anyhow::Result<Config> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError::err(format!("cannot read config file {}: {e}", path.display())))?;
    let abs = crate::store::cache::normalize(path);
    parse(&text, &abs)
}

/// Parse config text; `path` is used for messages and `PERFBISECT_CONFIG_DIR`.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<Config> {
    let file = path.display().to_string();
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        let msg = e.message().trim().to_string();
        let hint = unknown_key_hint(&msg);
        UsageError::err(match line {
            Some(l) => match key_at(text, l) {
                Some(k) if !msg.contains("unknown field") => {
                    format!("{file}:{l}: key `{k}`: {msg}{hint}")
                }
                _ => format!("{file}:{l}: {msg}{hint}"),
            },
            None => format!("{file}: {msg}{hint}"),
        })
    })?;
    let at = |span: std::ops::Range<usize>| format!("{file}:{}", line_of(text, span.start));

    let build = match raw.build {
        None => Build {
            command: None,
            artifacts: Vec::new(),
            timeout: Duration::from_secs(3600),
            env: BTreeMap::new(),
        },
        Some(b) => {
            let span = b.span();
            let b = b.into_inner();
            let timeout = match b.timeout {
                None => Duration::from_secs(3600),
                Some(t) => duration(&t, "build.timeout", &at(t.span()))?,
            };
            if b.command.is_none() && b.artifacts.is_empty() {
                crate::usage!(
                    "{}: [build] needs `command` or `artifacts` (or leave [build] out)",
                    at(span)
                );
            }
            for sa in &b.artifacts {
                let a = sa.get_ref();
                if a.is_empty() || Path::new(a).is_absolute() || a.split('/').any(|c| c == "..") {
                    crate::usage!(
                        "{}: key `build.artifacts`: `{a}` must be a path relative to the worktree, without `..`",
                        at(sa.span())
                    );
                }
            }
            Build {
                command: b.command,
                artifacts: b.artifacts.into_iter().map(Spanned::into_inner).collect(),
                timeout,
                env: b.env,
            }
        }
    };

    let mut tests = BTreeMap::new();
    for (name, t) in raw.tests {
        let name_span = name.span();
        let name = name.into_inner();
        if name.is_empty()
            || name == "all"
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            || name.starts_with('.')
        {
            crate::usage!(
                "{}: test name `{name}` must be made of letters, digits, `-`, `_`, `.` (and not be `all`)",
                at(name_span)
            );
        }
        let t_span = t.span();
        let t = t.into_inner();
        let key = |k: &str| format!("tests.{name}.{k}");
        let command = t.command.get_ref().trim().to_string();
        if command.is_empty() {
            crate::usage!(
                "{}: key `{}` is empty",
                at(t.command.span()),
                key("command")
            );
        }
        let metric = match &t.metric {
            None => Metric::Wall,
            Some(m) => metric(m, &key("metric"), &at(m.span()))?,
        };
        let direction = match &t.direction {
            None => Direction::Lower,
            Some(d) => match d.get_ref().as_str() {
                "lower" => Direction::Lower,
                "higher" => Direction::Higher,
                other => crate::usage!(
                    "{}: key `{}`: `{other}` is not `lower` or `higher`",
                    at(d.span()),
                    key("direction")
                ),
            },
        };
        let count = |v: &Option<Spanned<i64>>, k: &str, min: i64, default: usize| match v {
            None => Ok(default),
            Some(v) if *v.get_ref() >= min && *v.get_ref() <= 100_000 => Ok(*v.get_ref() as usize),
            Some(v) => Err(UsageError::err(format!(
                "{}: key `{}`: {} is out of range ({min} to 100000)",
                at(v.span()),
                key(k),
                v.get_ref()
            ))),
        };
        let deterministic = t.deterministic.unwrap_or(false);
        let default_repeats = if deterministic { 1 } else { DEFAULT_REPEATS };
        let repeats = count(&t.repeats, "repeats", 1, default_repeats)?;
        let warmup = count(&t.warmup, "warmup", 0, 0)?;
        let max_repeats = count(
            &t.max_repeats,
            "max_repeats",
            1,
            DEFAULT_MAX_REPEATS.max(repeats),
        )?;
        if max_repeats < repeats {
            crate::usage!(
                "{}: key `{}` ({max_repeats}) is below `repeats` ({repeats})",
                at(t_span),
                key("max_repeats")
            );
        }
        let threshold = match &t.threshold {
            None => Threshold::Relative(0.01),
            Some(v) => threshold(v, &key("threshold"), &at(v.span()))?,
        };
        let alpha = match &t.alpha {
            None => DEFAULT_ALPHA,
            Some(a) if *a.get_ref() > 0.0 && *a.get_ref() < 0.5 => *a.get_ref(),
            Some(a) => crate::usage!(
                "{}: key `{}`: {} must be between 0 and 0.5",
                at(a.span()),
                key("alpha"),
                a.get_ref()
            ),
        };
        let timeout = match &t.timeout {
            None => Duration::from_secs(600),
            Some(v) => duration(v, &key("timeout"), &at(v.span()))?,
        };
        let stake = match t.stake {
            Some(v) if !v.get_ref().is_finite() => crate::usage!(
                "{}: key `{}`: {} is not a finite number",
                at(v.span()),
                key("stake"),
                v.get_ref()
            ),
            other => other.map(Spanned::into_inner),
        };
        let unit = t.unit.unwrap_or_else(|| {
            match metric {
                Metric::Wall | Metric::User | Metric::Sys => "s",
                Metric::MaxRss => "bytes",
                _ => "",
            }
            .to_string()
        });
        tests.insert(
            name.clone(),
            Test {
                name,
                command,
                metric,
                unit,
                direction,
                repeats,
                deterministic,
                warmup,
                max_repeats,
                threshold,
                alpha,
                stake,
                description: t.description,
                setup: t.setup.filter(|s| !s.trim().is_empty()),
                teardown: t.teardown.filter(|s| !s.trim().is_empty()),
                timeout,
            },
        );
    }
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut fingerprint_commands = Vec::new();
    for c in raw.fingerprint.map(|f| f.commands).unwrap_or_default() {
        if c.get_ref().trim().is_empty() {
            crate::usage!(
                "{}: key `fingerprint.commands`: a command is empty",
                at(c.span())
            );
        }
        fingerprint_commands.push(c.into_inner());
    }
    Ok(Config {
        path: path.to_path_buf(),
        dir,
        build,
        tests,
        fingerprint_commands,
    })
}

impl Config {
    /// Look up a test by name; an unknown name is a usage error listing the known ones.
    pub fn test(&self, name: &str) -> anyhow::Result<&Test> {
        self.tests.get(name).ok_or_else(|| {
            UsageError::err(format!(
                "unknown test `{name}`{} (tests in {}: {})",
                crate::error::did_you_mean(name, self.tests.keys().map(String::as_str)),
                crate::pipeline::display_path(&self.path),
                self.known_tests()
            ))
        })
    }

    /// Resolve `name,name` or `all`.
    pub fn select(&self, spec: &str) -> anyhow::Result<Vec<&Test>> {
        if spec.trim() == "all" {
            if self.tests.is_empty() {
                crate::usage!("no tests defined in {}", self.path.display());
            }
            return Ok(self.tests.values().collect());
        }
        let mut out: Vec<&Test> = Vec::new();
        for name in spec.split(',') {
            let name = name.trim();
            if name.is_empty() {
                crate::usage!("empty test name in `{spec}`");
            }
            let t = self.test(name)?;
            if !out.iter().any(|o| o.name == t.name) {
                out.push(t);
            }
        }
        Ok(out)
    }

    fn known_tests(&self) -> String {
        if self.tests.is_empty() {
            "none".into()
        } else {
            self.tests.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key assigned on `line` (1-based), from the nearest table header above it.
fn key_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?.trim();
    let (key, _) = here.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('[') {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').replace('"', ""));
    Some(match table {
        Some(t) => format!("{t}.{key}"),
        None => key.to_string(),
    })
}

/// For toml's "unknown field `x`, expected one of `a`, `b`": the closest expected key, and
/// where the keys are documented.
fn unknown_key_hint(msg: &str) -> String {
    if !msg.contains("unknown field") {
        return String::new();
    }
    let quoted: Vec<&str> = msg.split('`').skip(1).step_by(2).collect();
    let suggestion = match quoted.split_first() {
        Some((field, expected)) => crate::error::did_you_mean(field, expected.iter().copied()),
        None => String::new(),
    };
    format!("{suggestion} (see README.md, section Configuration, for the keys)")
}

fn metric(v: &Spanned<toml::Value>, key: &str, at: &str) -> anyhow::Result<Metric> {
    match v.get_ref() {
        toml::Value::String(s) => match s.as_str() {
            "wall" => Ok(Metric::Wall),
            "user" => Ok(Metric::User),
            "sys" => Ok(Metric::Sys),
            "max-rss" => Ok(Metric::MaxRss),
            other => crate::usage!(
                "{at}: key `{key}`: `{other}` is not one of \"wall\", \"user\", \"sys\", \"max-rss\", {{ regex = \"...\" }}, {{ json = \"/pointer\" }}"
            ),
        },
        toml::Value::Table(t) if t.len() == 1 => {
            let (k, val) = t.iter().next().expect("one entry");
            let Some(s) = val.as_str() else {
                crate::usage!("{at}: key `{key}.{k}` must be a string");
            };
            match k.as_str() {
                "regex" => {
                    let re = regex::Regex::new(s).map_err(|e| {
                        UsageError::err(format!("{at}: key `{key}.regex`: invalid regex: {e}"))
                    })?;
                    if re.captures_len() < 2 {
                        crate::usage!(
                            "{at}: key `{key}.regex`: `{s}` has no capture group; wrap the number in ( )"
                        );
                    }
                    Ok(Metric::Regex(re))
                }
                "json" => {
                    if !(s.is_empty() || s.starts_with('/')) {
                        crate::usage!(
                            "{at}: key `{key}.json`: `{s}` is not a JSON pointer (it starts with `/`)"
                        );
                    }
                    Ok(Metric::Json(s.to_string()))
                }
                other => crate::usage!(
                    "{at}: key `{key}.{other}` is unknown; use {{ regex = \"...\" }} or {{ json = \"/pointer\" }}"
                ),
            }
        }
        _ => crate::usage!(
            "{at}: key `{key}` must be \"wall\", \"user\", \"sys\", \"max-rss\", {{ regex = \"...\" }} or {{ json = \"/pointer\" }}"
        ),
    }
}

fn threshold(v: &Spanned<toml::Value>, key: &str, at: &str) -> anyhow::Result<Threshold> {
    let bad = || {
        UsageError::err(format!(
            "{at}: key `{key}` must be a percentage like \"2%\" or a non-negative number"
        ))
    };
    match v.get_ref() {
        toml::Value::String(s) => {
            let num = s.trim().strip_suffix('%').ok_or_else(bad)?;
            let p: f64 = num.trim().parse().map_err(|_| bad())?;
            if !(p.is_finite() && p >= 0.0) {
                return Err(bad());
            }
            Ok(Threshold::Relative(p / 100.0))
        }
        toml::Value::Integer(i) if *i >= 0 => Ok(Threshold::Absolute(*i as f64)),
        toml::Value::Float(f) if f.is_finite() && *f >= 0.0 => Ok(Threshold::Absolute(*f)),
        _ => Err(bad()),
    }
}

/// The longest build or run timeout accepted: longer ones are typos (and would overflow the
/// clock arithmetic of a deadline).
const MAX_TIMEOUT: Duration = Duration::from_secs(30 * 24 * 3600);

fn duration(v: &Spanned<toml::Value>, key: &str, at: &str) -> anyhow::Result<Duration> {
    let too_long = || {
        UsageError::err(format!(
            "{at}: key `{key}`: {} is longer than the most accepted, 30 days",
            v.get_ref()
        ))
    };
    let d = match v.get_ref() {
        toml::Value::String(s) => humantime::parse_duration(s.trim()).map_err(|e| {
            UsageError::err(format!(
                "{at}: key `{key}`: `{s}` is not a duration like \"90s\", \"20m\", \"1h\" ({e})"
            ))
        })?,
        toml::Value::Integer(i) if *i > 0 => {
            if *i as u64 > MAX_TIMEOUT.as_secs() {
                return Err(too_long());
            }
            Duration::from_secs(*i as u64)
        }
        toml::Value::Float(f) if f.is_finite() && *f > 0.0 => {
            if *f > MAX_TIMEOUT.as_secs_f64() {
                return Err(too_long());
            }
            Duration::from_secs_f64(*f)
        }
        _ => crate::usage!(
            "{at}: key `{key}` must be a duration like \"90s\" or a number of seconds"
        ),
    };
    if d.is_zero() {
        crate::usage!("{at}: key `{key}` must be longer than zero");
    }
    if d > MAX_TIMEOUT {
        return Err(too_long());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let e = parse(text, Path::new("/x/perfbisect.toml")).unwrap_err();
        assert!(crate::error::is_usage(&e), "{e:#}");
        format!("{e:#}")
    }

    #[test]
    fn unknown_keys_and_tests_suggest_the_closest_valid_one() {
        let e = err("[tests.value]\ncommand = \"x\"\nrepeat = 3\n");
        assert!(e.contains("unknown field `repeat`"), "{e}");
        assert!(e.contains("did you mean `repeats`?"), "{e}");
        let e = err("[test.value]\ncommand = \"x\"\n");
        assert!(e.contains("did you mean `tests`?"), "{e}");
        let e = err("[tests.value]\ncommand = \"x\"\nfrobnicate = 3\n");
        assert!(!e.contains("did you mean"), "{e}");
        let c = parse(
            "[tests.h2-req-mem]\ncommand = \"x\"\n[tests.easy-handle]\ncommand = \"x\"\n",
            Path::new("/x/perfbisect.toml"),
        )
        .unwrap();
        let e = format!("{:#}", c.test("h2-req-men").unwrap_err());
        assert!(e.contains("did you mean `h2-req-mem`?"), "{e}");
        let e = format!("{:#}", c.test("zzz").unwrap_err());
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn full_config_parses() {
        let c = parse(
            r#"
[build]
command = "make"
artifacts = ["app"]
timeout = "20m"
env = { CC = "gcc" }

[tests.size]
command = "./size.sh"
metric = { regex = "size: ([0-9]+)" }
unit = "bytes"
direction = "lower"
repeats = 1
threshold = "0.5%"
stake = 3064
description = "Size"

[tests.rss]
command = "app"
metric = "max-rss"
direction = "higher"
repeats = 5
warmup = 1
threshold = 1000
setup = "start"
teardown = "stop"
timeout = 30
"#,
            Path::new("/x/perfbisect.toml"),
        )
        .unwrap();
        assert_eq!(c.build.timeout, Duration::from_secs(1200));
        let s = &c.tests["size"];
        assert_eq!(s.threshold, Threshold::Relative(0.005));
        assert_eq!(s.repeats, 1);
        let r = &c.tests["rss"];
        assert_eq!(r.threshold, Threshold::Absolute(1000.0));
        assert_eq!(r.direction, Direction::Higher);
        assert_eq!(r.unit, "bytes");
        assert_eq!(c.dir, Path::new("/x"));
    }

    #[test]
    fn errors_name_key_and_line() {
        let e = err("[build]\ncommand = \"make\"\nartifact = [\"a\"]\n");
        assert!(e.contains(":3:") && e.contains("artifact"), "{e}");
        let e = err("[tests.a]\ncommand = \"x\"\nmetric = { regex = \"size: [0-9]+\" }\n");
        assert!(e.contains(":3:") && e.contains("capture group"), "{e}");
        let e = err("[tests.a]\ncommand = \"x\"\nrepeats = \"five\"\n");
        assert!(e.contains(":3:"), "{e}");
        let e = err("[tests.a]\ncommand = \"x\"\n\nthreshold = \"2 percent\"\n");
        assert!(e.contains(":4:") && e.contains("tests.a.threshold"), "{e}");
        let e = err("[tests.a]\ncommand = \"x\"\ndirection = \"up\"\n");
        assert!(e.contains("tests.a.direction"), "{e}");
        let e = err("[tests.a]\ncommand = \"x\"\nmetric = \"cycles\"\n");
        assert!(e.contains("tests.a.metric") && e.contains("cycles"), "{e}");
        let e = err("[tests.\"a b\"]\ncommand = \"x\"\n");
        assert!(e.contains("a b"), "{e}");
        let e = err("[build]\ncommand = \"make\"\ntimeout = \"soon\"\n");
        assert!(e.contains("build.timeout") && e.contains(":3:"), "{e}");
    }

    #[test]
    fn locate_names_each_missing_default_once() {
        // Unit tests run in the package's directory, which holds no perfbisect.toml.
        assert!(!Path::new("perfbisect.toml").exists());
        let here = std::env::current_dir().unwrap();
        for repo in [here.clone(), PathBuf::from("."), here.join("src/..")] {
            let e = locate(None, Some(&repo)).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            let e = format!("{e:#}");
            assert_eq!(e.matches("perfbisect.toml").count(), 1, "{repo:?}: {e}");
            assert!(e.contains("pass --config FILE"), "{e}");
        }
        let other = tempfile::tempdir().unwrap();
        let e = format!("{:#}", locate(None, Some(other.path())).unwrap_err());
        let there = other.path().join("perfbisect.toml");
        assert!(
            e.contains(&format!("and neither does {}", there.display())),
            "{e}"
        );
    }
}
