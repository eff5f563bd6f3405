//! What a validated configuration is: the build recipe, the tests with their metric, direction
//! and knobs, and the hashes that tell one definition from another. Parsing is in `config`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

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
    /// The line of each command key (`build.command`, `tests.NAME.command`, `...setup`,
    /// `...teardown`), for messages about them after parsing (`config check`).
    pub lines: BTreeMap<String, usize>,
    /// `[fingerprint] commands`: what else every sample depends on (compiler versions, say);
    /// their outputs go into the fingerprint.
    pub fingerprint_commands: Vec<String>,
    /// `[measure] counter`: how `metric = "instructions"` is counted.
    pub counter: crate::config::harness::Choice,
}

/// How to build a commit.
#[derive(Debug, Clone)]
pub struct Build {
    /// The folder holding the config file, absolute: builds see it as `PERFBISECT_CONFIG_DIR`
    /// (a helper script beside the config). Not part of the recipe.
    pub config_dir: PathBuf,
    /// Run with `sh -c` in the worktree. `None`: nothing to build, artifacts are copied as checked out.
    pub command: Option<String>,
    /// Paths relative to the worktree, copied into the cache after a successful build.
    pub artifacts: Vec<String>,
    pub timeout: Duration,
    pub env: BTreeMap<String, String>,
    /// Build with cargo and keep the executables it reports (`[build] cargo = {...}`).
    pub cargo: Option<CargoBuild>,
    /// Build each commit over the outputs of the one built before in its worktree (default),
    /// checked against a pristine build wherever a build is the evidence for a step; `false`
    /// builds every commit in a clean worktree.
    pub incremental: bool,
}

/// `[build] cargo = { bins, benches, package, profile, features, no_default_features }`: a
/// Rust project built with cargo, whose executables are found through `cargo metadata` and
/// cargo's JSON messages and cached under their target names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CargoBuild {
    /// Binary targets to build (`cargo build --bin`); with `benches` also empty, every binary
    /// of the package (or of the workspace's default members).
    pub bins: Vec<String>,
    /// Bench targets to build (`cargo bench --no-run --bench`).
    pub benches: Vec<String>,
    /// The workspace member to build from (`-p`); needed only when a name is ambiguous.
    pub package: Option<String>,
    /// Cargo profile of the bins (default `release`); benches use `cargo bench`'s own profile
    /// unless this is set.
    pub profile: Option<String>,
    pub features: Vec<String>,
    pub no_default_features: bool,
}

impl CargoBuild {
    /// The profile the bins are built with.
    pub fn bin_profile(&self) -> &str {
        self.profile.as_deref().unwrap_or("release")
    }

    /// Every target name, bins first: each is an artifact file of that name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.bins.iter().chain(&self.benches).map(String::as_str)
    }
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
        // Only cargo builds hash these, so the hashes (and caches) of other builds stay.
        if let Some(c) = &self.cargo {
            h.add("cargo");
            for list in [&c.bins, &c.benches, &c.features] {
                h.add(&list.len().to_string());
                for x in list {
                    h.add(x);
                }
            }
            h.add(c.package.as_deref().unwrap_or(""));
            h.add(c.profile.as_deref().unwrap_or(""));
            h.add(if c.no_default_features { "1" } else { "0" });
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
    /// User-space instructions retired by the run's whole process tree (hardware counter, or
    /// Valgrind's Cachegrind where there is none).
    Instructions,
    /// One named benchmark of a harness's output (`{ format, name, field, file }`).
    Harness(crate::config::harness::Adapter),
}

impl Metric {
    /// A name for display and hashing.
    pub fn describe(&self) -> String {
        match self {
            Metric::Wall => "wall".into(),
            Metric::User => "user".into(),
            Metric::Sys => "sys".into(),
            Metric::MaxRss => "max-rss".into(),
            Metric::Instructions => "instructions".into(),
            Metric::Regex(r) => format!("regex:{}", r.as_str()),
            Metric::Json(p) => format!("json:{p}"),
            Metric::Harness(a) => a.describe(),
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
    /// The `unit` key, when given: it wins over what a harness reports.
    pub unit_configured: Option<String>,
    /// The unit when neither the config nor the tool says (`s` for times, `bytes` for
    /// max-rss, a harness's fixed unit).
    pub unit_default: String,
    /// The unit the harness reported (Google Benchmark's `time_unit`), shared by every copy
    /// of the test; the pipeline keeps it in the cache between invocations.
    pub tool_unit: ToolUnit,
    pub direction: Direction,
    pub repeats: usize,
    /// Declared zero-spread metric (struct size, allocation count, binary size): one run per
    /// commit and plain comparisons. Without it a test is noisy, whatever its `repeats`.
    pub deterministic: bool,
    pub warmup: usize,
    pub max_repeats: usize,
    /// Most runs of one commit while a decision still straddles the threshold (the key, or
    /// `--max-runs`, which sets it); `None`: the runs that take as long as one build.
    pub max_runs: Option<usize>,
    pub threshold: Threshold,
    pub alpha: f64,
    pub stake: Option<f64>,
    pub description: Option<String>,
    pub setup: Option<String>,
    pub teardown: Option<String>,
    pub timeout: Duration,
    /// Pin each run and its children to these CPUs (`cpus`, here or in `[measure]`).
    pub cpus: Option<Vec<usize>>,
    /// Address-space randomisation (`aslr = false` turns it off for the runs).
    pub aslr: bool,
    /// Comparisons and `run` measure commits side by side, in interleaved rounds
    /// (`[measure] interleave`, default true).
    pub interleave: bool,
    /// How instructions are counted (`[measure] counter`).
    pub counter: crate::config::harness::Choice,
    /// The series of another tool's history this test takes (`import = "<foreign id>"`).
    pub import: Option<String>,
}

/// The unit a harness reported for a test's values, learned from its first run (or from
/// the cache) and shared by every clone of the test.
#[derive(Debug, Clone, Default)]
pub struct ToolUnit(std::sync::Arc<std::sync::Mutex<Option<String>>>);

impl ToolUnit {
    /// The unit reported so far.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Record `unit`, or refuse it when an earlier run reported another one (values in
    /// different units cannot be compared): returns the earlier unit then.
    pub fn learn(&self, unit: &str) -> Result<(), String> {
        let mut u = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match u.as_deref() {
            Some(old) if old != unit => Err(old.to_string()),
            Some(_) => Ok(()),
            None => {
                *u = Some(unit.to_string());
                Ok(())
            }
        }
    }

    /// Forget what was learned and start from `unit` (read from the cache).
    pub fn set(&self, unit: Option<String>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = unit;
    }
}

impl Test {
    /// The unit the test's values are in: the `unit` key, else what the harness reported,
    /// else the metric's default.
    pub fn unit(&self) -> String {
        self.unit_configured
            .clone()
            .or_else(|| self.tool_unit.get())
            .unwrap_or_else(|| self.unit_default.clone())
    }

    /// Whether runs need a fresh scratch directory (`PERFBISECT_OUT`): the metric reads a
    /// file there, or a command refers to it.
    pub fn needs_out_dir(&self) -> bool {
        matches!(&self.metric, Metric::Harness(a) if a.needs_out_dir())
            || [
                Some(&self.command),
                self.setup.as_ref(),
                self.teardown.as_ref(),
            ]
            .into_iter()
            .flatten()
            .any(|c| c.contains("PERFBISECT_OUT"))
    }

    /// Tests with equal keys can share runs: one execution of the command per repeat, its
    /// output read by each. `None` for a test that reads no output (wall, user, sys, max-rss:
    /// the run itself is what it measures, so its runs stay its own and do not move when an
    /// output test is added beside it) and for one whose commands tell tests apart through
    /// `PERFBISECT_TEST`.
    pub fn share_key(&self) -> Option<(String, String, String, Duration, usize)> {
        if matches!(
            self.metric,
            Metric::Wall | Metric::User | Metric::Sys | Metric::MaxRss | Metric::Instructions
        ) {
            return None;
        }
        let cmds = [
            Some(&self.command),
            self.setup.as_ref(),
            self.teardown.as_ref(),
        ];
        if cmds
            .into_iter()
            .flatten()
            .any(|c| c.contains("PERFBISECT_TEST"))
        {
            return None;
        }
        Some((
            self.command.clone(),
            self.setup.clone().unwrap_or_default(),
            self.teardown.clone().unwrap_or_default(),
            self.timeout,
            self.warmup,
        ))
    }

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

impl Config {
    /// Look up a test by name; an unknown name is a usage error listing the known ones.
    pub fn test(&self, name: &str) -> anyhow::Result<&Test> {
        self.tests.get(name).ok_or_else(|| {
            UsageError::err(format!(
                "unknown test `{name}`{} (tests in {}: {})",
                crate::error::did_you_mean(name, self.tests.keys().map(String::as_str)),
                crate::base::paths::display_path(&self.path),
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
