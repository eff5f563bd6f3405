//! The TOML configuration: reading and validating it, with the key and line of every problem
//! (what it is once valid: `model`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::error::UsageError;
use crate::stats::Threshold;

mod cpus;
pub mod harness;
use cpus::cpus;
pub use cpus::{available_cpus, cpu_list};
mod imports;
pub mod keys;
mod model;

pub use model::{
    Build, CargoBuild, Config, Direction, Metric, Test, ToolUnit, DEFAULT_ALPHA,
    DEFAULT_MAX_REPEATS, DEFAULT_REPEATS,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    build: Option<Spanned<RawBuild>>,
    #[serde(default)]
    tests: BTreeMap<Spanned<String>, Spanned<RawTest>>,
    fingerprint: Option<RawFingerprint>,
    measure: Option<RawMeasure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMeasure {
    cpus: Option<Spanned<toml::Value>>,
    aslr: Option<bool>,
    interleave: Option<bool>,
    counter: Option<Spanned<String>>,
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
    command: Option<Spanned<String>>,
    #[serde(default)]
    artifacts: Vec<Spanned<String>>,
    timeout: Option<Spanned<toml::Value>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cargo: Option<Spanned<RawCargo>>,
    incremental: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCargo {
    #[serde(default)]
    bins: Vec<Spanned<String>>,
    #[serde(default)]
    benches: Vec<Spanned<String>>,
    package: Option<Spanned<String>>,
    profile: Option<Spanned<String>>,
    #[serde(default)]
    features: Vec<Spanned<String>>,
    #[serde(default)]
    no_default_features: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    command: Spanned<String>,
    metric: Option<Spanned<toml::Value>>,
    unit: Option<Spanned<String>>,
    direction: Option<Spanned<String>>,
    repeats: Option<Spanned<i64>>,
    deterministic: Option<bool>,
    warmup: Option<Spanned<i64>>,
    max_repeats: Option<Spanned<i64>>,
    max_runs: Option<Spanned<i64>>,
    threshold: Option<Spanned<toml::Value>>,
    alpha: Option<Spanned<f64>>,
    stake: Option<Spanned<f64>>,
    description: Option<String>,
    setup: Option<Spanned<String>>,
    teardown: Option<Spanned<String>>,
    timeout: Option<Spanned<toml::Value>>,
    cpus: Option<Spanned<toml::Value>>,
    aslr: Option<bool>,
    import: Option<Spanned<String>>,
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
    let abs = crate::base::paths::normalize(path);
    parse(&text, &abs)
}

/// The folder holding the config file, absolute (`PERFBISECT_CONFIG_DIR` is read by commands
/// that run elsewhere: a worktree, an artifact directory).
fn config_dir(path: &Path) -> PathBuf {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::path::absolute(parent)
        .map(|p| crate::base::paths::normalize(&p))
        .unwrap_or_else(|_| parent.to_path_buf())
}

/// Parse config text; `path` is used for messages and `PERFBISECT_CONFIG_DIR`.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<Config> {
    let file = path.display().to_string();
    unknown_keys(text, &file)?;
    let raw = raw_config(text, &file)?;
    let at = |span: std::ops::Range<usize>| format!("{file}:{}", line_of(text, span.start));
    let mut lines = BTreeMap::new();

    let build = match raw.build {
        None => Build {
            config_dir: config_dir(path),
            command: None,
            artifacts: Vec::new(),
            timeout: Duration::from_secs(3600),
            env: BTreeMap::new(),
            cargo: None,
            incremental: true,
        },
        Some(b) => build(b, text, path, &at, &mut lines)?,
    };

    let measure = raw.measure.unwrap_or(RawMeasure {
        cpus: None,
        aslr: None,
        interleave: None,
        counter: None,
    });
    let measure_cpus = match &measure.cpus {
        Some(v) => Some(cpus(v, "measure.cpus", &at(v.span()))?),
        None => None,
    };
    let counter = match &measure.counter {
        None => crate::config::harness::Choice::Auto,
        Some(c) => crate::config::harness::Choice::parse(c.get_ref()).ok_or_else(|| {
            UsageError::err(format!(
                "{}: key `measure.counter`: `{}` is not \"auto\", \"perf\" or \"cachegrind\"",
                at(c.span()),
                c.get_ref()
            ))
        })?,
    };
    let shared = TestContext {
        text,
        at: &at,
        measure: &measure,
        measure_cpus,
        counter,
    };
    let mut tests = BTreeMap::new();
    for (name, t) in raw.tests {
        let test = test(name, t, &shared, &mut lines)?;
        tests.insert(test.name.clone(), test);
    }
    imports::apart(&tests, &lines, &file)?;
    let dir = config_dir(path);
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
        lines,
        fingerprint_commands,
        counter,
    })
}

/// The text read as TOML into the raw tables, or a usage error at the line (and key) TOML
/// stopped at.
fn raw_config(text: &str, file: &str) -> anyhow::Result<RawConfig> {
    toml::from_str(text).map_err(|e| {
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
    })
}

/// A `[build]` table checked and made a [`Build`]; the lines of its commands go into `lines`.
fn build(
    b: Spanned<RawBuild>,
    text: &str,
    path: &Path,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
    lines: &mut BTreeMap<String, usize>,
) -> anyhow::Result<Build> {
    let span = b.span();
    let b = b.into_inner();
    let timeout = match b.timeout {
        None => Duration::from_secs(3600),
        Some(t) => duration(&t, "build.timeout", &at(t.span()))?,
    };
    if b.command.is_none() && b.artifacts.is_empty() && b.cargo.is_none() {
        crate::usage!(
            "{}: [build] needs `command`, `cargo` or `artifacts` (or leave [build] out)",
            at(span)
        );
    }
    if let (Some(c), Some(_)) = (&b.command, &b.cargo) {
        crate::usage!(
            "{}: key `build.command`: use `command` or `cargo`, not both (`cargo` runs the build itself)",
            at(c.span())
        );
    }
    if let Some(c) = &b.command {
        if c.get_ref().trim().is_empty() {
            crate::usage!("{}: key `build.command` is empty", at(c.span()));
        }
        lines.insert("build.command".to_string(), line_of(text, c.span().start));
    }
    if let Some(first) = b.artifacts.first() {
        lines.insert("build.artifacts".into(), line_of(text, first.span().start));
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
    let cargo = match b.cargo {
        None => None,
        Some(c) => {
            lines.insert("build.cargo".to_string(), line_of(text, c.span().start));
            Some(cargo_build(c, &b.artifacts, at)?)
        }
    };
    Ok(Build {
        config_dir: config_dir(path),
        command: b.command.map(Spanned::into_inner),
        artifacts: b.artifacts.into_iter().map(Spanned::into_inner).collect(),
        timeout,
        env: b.env,
        cargo,
        incremental: b.incremental.unwrap_or(true),
    })
}

/// What reading each test needs besides its own table: the text (for the line of a key) and
/// the `[measure]` settings a test starts from.
struct TestContext<'a> {
    text: &'a str,
    at: &'a dyn Fn(std::ops::Range<usize>) -> String,
    measure: &'a RawMeasure,
    measure_cpus: Option<Vec<usize>>,
    counter: crate::config::harness::Choice,
}

/// One `[tests.NAME]` table checked and made a [`Test`]; the lines of its keys go into `lines`.
fn test(
    name: Spanned<String>,
    t: Spanned<RawTest>,
    cx: &TestContext<'_>,
    lines: &mut BTreeMap<String, usize>,
) -> anyhow::Result<Test> {
    let (text, at) = (cx.text, cx.at);
    let name = test_name(name, at)?;
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
    lines.insert(key("command"), line_of(text, t.command.span().start));
    for (k, v) in [("setup", &t.setup), ("teardown", &t.teardown)] {
        if let Some(v) = v {
            lines.insert(key(k), line_of(text, v.span().start));
        }
    }
    let metric = match &t.metric {
        None => Metric::Wall,
        Some(m) => {
            lines.insert(key("metric"), line_of(text, m.span().start));
            metric(m, &key("metric"), &at(m.span()))?
        }
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
    let deterministic = t.deterministic.unwrap_or(false);
    let (repeats, warmup, max_repeats) = run_counts(&t, t_span, deterministic, &metric, &key, at)?;
    let threshold = match &t.threshold {
        // Counts see far smaller changes than times: half a percent matters there.
        None if matches!(metric, Metric::Instructions) => Threshold::Relative(0.005),
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
    if let Some(u) = &t.unit {
        if u.get_ref().contains(['\n', '\r']) {
            crate::usage!(
                "{}: key `{}` is more than one line",
                at(u.span()),
                key("unit")
            );
        }
    }
    let test_cpus = match &t.cpus {
        Some(v) => Some(cpus(v, &key("cpus"), &at(v.span()))?),
        None => cx.measure_cpus.clone(),
    };
    let import = match t.import {
        Some(i) => {
            lines.insert(key("import"), line_of(text, i.span().start));
            Some(imports::key(&at(i.span()), &key("import"), i.into_inner())?)
        }
        None => None,
    };
    let unit_default = match &metric {
        Metric::Wall | Metric::User | Metric::Sys => "s",
        Metric::MaxRss => "bytes",
        Metric::Instructions => "instructions",
        Metric::Harness(a) => a.static_unit().unwrap_or(""),
        _ => "",
    }
    .to_string();
    Ok(Test {
        name,
        command,
        metric,
        unit_configured: t.unit.map(Spanned::into_inner),
        unit_default,
        tool_unit: ToolUnit::default(),
        direction,
        repeats,
        deterministic,
        warmup,
        max_repeats,
        max_runs: t.max_runs.as_ref().map(|v| {
            usize::try_from(*v.get_ref())
                .unwrap_or(usize::MAX)
                .min(100_000)
        }),
        threshold,
        alpha,
        stake,
        description: t.description,
        setup: t
            .setup
            .map(Spanned::into_inner)
            .filter(|s| !s.trim().is_empty()),
        teardown: t
            .teardown
            .map(Spanned::into_inner)
            .filter(|s| !s.trim().is_empty()),
        timeout,
        cpus: test_cpus,
        aslr: t.aslr.or(cx.measure.aslr).unwrap_or(true),
        import,
        interleave: cx.measure.interleave.unwrap_or(true),
        counter: cx.counter,
    })
}

/// A test's name, refused unless it is made of the characters a name may hold.
fn test_name(
    name: Spanned<String>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> anyhow::Result<String> {
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
    Ok(name)
}

/// A test's `repeats`, `warmup` and `max_repeats`, each in range, with the defaults its
/// metric calls for.
fn run_counts(
    t: &RawTest,
    t_span: std::ops::Range<usize>,
    deterministic: bool,
    metric: &Metric,
    key: &dyn Fn(&str) -> String,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> anyhow::Result<(usize, usize, usize)> {
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
    // Instruction counts barely vary: two runs show their spread, and a search then takes
    // one or two per commit.
    let default_repeats = if deterministic {
        1
    } else if matches!(metric, Metric::Instructions) {
        2
    } else {
        DEFAULT_REPEATS
    };
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
    if let Some(v) = &t.max_runs {
        count(&t.max_runs, "max_runs", 1, 0)?;
        if (*v.get_ref() as i128) < max_repeats as i128 {
            crate::usage!(
                "{}: key `{}` ({}) is below `max_repeats` ({max_repeats}): the budget goes on from there",
                at(v.span()),
                key("max_runs"),
                v.get_ref()
            );
        }
    }
    Ok((repeats, warmup, max_repeats))
}

/// Names cargo accepts for targets and packages (and that are safe as file names).
fn cargo_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

/// Validate `[build] cargo = {...}`: target names usable as file names, no name twice (each
/// becomes the artifact `./NAME`), no artifact path taking a target's name.
fn cargo_build(
    c: Spanned<RawCargo>,
    artifacts: &[Spanned<String>],
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> anyhow::Result<CargoBuild> {
    let c = c.into_inner();
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for (k, list) in [("bins", &c.bins), ("benches", &c.benches)] {
        for n in list {
            let name = n.get_ref();
            if !cargo_name(name) {
                crate::usage!(
                    "{}: key `build.cargo.{k}`: `{name}` is not a cargo target name (letters, digits, `-`, `_`)",
                    at(n.span())
                );
            }
            if let Some(other) = seen.insert(name.clone(), k) {
                crate::usage!(
                    "{}: key `build.cargo.{k}`: `{name}` is also in `build.cargo.{other}`; each target becomes the artifact `./{name}`, so names must differ",
                    at(n.span())
                );
            }
            if let Some(a) = artifacts
                .iter()
                .find(|a| a.get_ref().trim_start_matches("./").trim_end_matches('/') == name)
            {
                crate::usage!(
                    "{}: key `build.artifacts`: `{}` is the name cargo's target `{name}` is cached under",
                    at(a.span()),
                    a.get_ref()
                );
            }
        }
    }
    for (k, v) in [("package", &c.package), ("profile", &c.profile)] {
        if let Some(v) = v {
            if !cargo_name(v.get_ref()) {
                crate::usage!(
                    "{}: key `build.cargo.{k}`: `{}` is not a cargo {k} name",
                    at(v.span()),
                    v.get_ref()
                );
            }
        }
    }
    for f in &c.features {
        let v = f.get_ref();
        if v.is_empty()
            || !v
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '/' | '+' | '.'))
        {
            crate::usage!(
                "{}: key `build.cargo.features`: `{v}` is not a feature name",
                at(f.span())
            );
        }
    }
    let plain = |l: Vec<Spanned<String>>| l.into_iter().map(Spanned::into_inner).collect();
    Ok(CargoBuild {
        bins: plain(c.bins),
        benches: plain(c.benches),
        package: c.package.map(Spanned::into_inner),
        profile: c.profile.map(Spanned::into_inner),
        features: plain(c.features),
        no_default_features: c.no_default_features,
    })
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

/// For toml's "unknown field `x`, expected one of `a`, `b`" (a key the table in `keys`
/// lists but the serde structs below do not: a test keeps them equal): the closest expected
/// key, and where the keys are listed.
fn unknown_key_hint(msg: &str) -> String {
    if !msg.contains("unknown field") {
        return String::new();
    }
    let quoted: Vec<&str> = msg.split('`').skip(1).step_by(2).collect();
    let suggestion = match quoted.split_first() {
        Some((field, expected)) => crate::error::did_you_mean(field, expected.iter().copied()),
        None => String::new(),
    };
    format!("{suggestion}{WHERE_KEYS_ARE}")
}

/// Where a message about an unknown key sends the reader.
const WHERE_KEYS_ARE: &str = " (`perfbisect guide config` lists every key)";

/// Refuse a key that [`keys::KEYS`] does not list, naming its line, the keys expected there
/// and the closest of them. A document that is not TOML is left to the parser, which says
/// where.
fn unknown_keys(text: &str, file: &str) -> anyhow::Result<()> {
    let Ok(doc) = toml::de::DeTable::parse(text) else {
        return Ok(());
    };
    walk_keys(doc.get_ref(), "", keys::Kind::Table, text, file)
}

fn walk_keys(
    table: &toml::de::DeTable<'_>,
    path: &str,
    kind: keys::Kind,
    text: &str,
    file: &str,
) -> anyhow::Result<()> {
    for (k, v) in table.iter() {
        let name: &str = k.get_ref();
        let child = match (kind, path) {
            (keys::Kind::Named, _) => format!("{path}.NAME"),
            (_, "") => name.to_string(),
            _ => format!("{path}.{name}"),
        };
        let Some(key) = keys::get(&child) else {
            let expected: Vec<&str> = keys::children(path).collect();
            crate::usage!(
                "{file}:{}: unknown field `{name}`, expected {}{}{WHERE_KEYS_ARE}",
                line_of(text, k.span().start),
                match expected.as_slice() {
                    [one] => format!("`{one}`"),
                    _ => format!(
                        "one of {}",
                        expected
                            .iter()
                            .map(|e| format!("`{e}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                crate::error::did_you_mean(name, expected.iter().copied())
            );
        };
        if let (keys::Kind::Table | keys::Kind::Named, Some(sub)) =
            (key.kind, v.get_ref().as_table())
        {
            walk_keys(sub, &child, key.kind, text, file)?;
        }
    }
    Ok(())
}

fn metric(v: &Spanned<toml::Value>, key: &str, at: &str) -> anyhow::Result<Metric> {
    match v.get_ref() {
        toml::Value::String(s) => match s.as_str() {
            "wall" => Ok(Metric::Wall),
            "user" => Ok(Metric::User),
            "sys" => Ok(Metric::Sys),
            "max-rss" => Ok(Metric::MaxRss),
            "instructions" => Ok(Metric::Instructions),
            other => crate::usage!(
                "{at}: key `{key}`: `{other}` is not one of \"wall\", \"user\", \"sys\", \"max-rss\", \"instructions\", {{ regex = \"...\" }}, {{ json = \"/pointer\" }}, {{ format = \"gbench\", name = \"...\" }}"
            ),
        },
        toml::Value::Table(t) if t.contains_key("format") => harness_metric(t, key, at),
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
                    // RFC 6901: `~` only as `~0` (a `~`) or `~1` (a `/`).
                    let mut chars = s.chars().peekable();
                    while let Some(c) = chars.next() {
                        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                            crate::usage!(
                                "{at}: key `{key}.json`: `{s}` has a `~` that is not `~0` or `~1` (write `~0` for `~`, `~1` for `/`)"
                            );
                        }
                    }
                    Ok(Metric::Json(s.to_string()))
                }
                other => crate::usage!(
                    "{at}: key `{key}.{other}` is unknown; use {{ regex = \"...\" }} or {{ json = \"/pointer\" }}"
                ),
            }
        }
        _ => crate::usage!(
            "{at}: key `{key}` must be \"wall\", \"user\", \"sys\", \"max-rss\", \"instructions\", {{ regex = \"...\" }}, {{ json = \"/pointer\" }} or {{ format = \"...\", name = \"...\", field = \"...\" }}"
        ),
    }
}

/// `{ format = "gbench" | "criterion" | "hyperfine" | "bmf" | "libtest", name, field, file }`.
fn harness_metric(
    t: &toml::map::Map<String, toml::Value>,
    key: &str,
    at: &str,
) -> anyhow::Result<Metric> {
    use harness::{Adapter, Harness};
    const KEYS: [&str; 4] = ["format", "name", "field", "file"];
    let get = |k: &str| -> anyhow::Result<Option<String>> {
        match t.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => crate::usage!(
                "{at}: key `{key}.{k}` must be a string, not {}",
                other.type_str()
            ),
        }
    };
    for k in t.keys() {
        if !KEYS.contains(&k.as_str()) {
            crate::usage!(
                "{at}: key `{key}.{k}` is unknown{}; a harness metric has `format`, `name`, `field` and `file`",
                crate::error::did_you_mean(k, KEYS)
            );
        }
    }
    let format = get("format")?.unwrap_or_default();
    let names: Vec<&str> = Harness::ALL.iter().map(|h| h.name()).collect();
    let Some(harness) = Harness::parse(&format) else {
        crate::usage!(
            "{at}: key `{key}.format`: `{format}` is not a harness perfbisect reads{}; use one of: {}",
            crate::error::did_you_mean(&format, names.iter().copied()),
            names.join(", ")
        );
    };
    let adapter = Adapter {
        harness,
        name: get("name")?,
        field: get("field")?,
        file: get("file")?,
    };
    if let Err((sub, msg)) = adapter.validate() {
        crate::usage!("{at}: key `{key}.{sub}`: {msg}");
    }
    Ok(Metric::Harness(adapter))
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
            match v.get_ref() {
                toml::Value::Float(f) => format!("{f:e} seconds"),
                other => other.to_string(),
            }
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

    /// The fields serde's derive gives a struct (it names them to the deserializer).
    fn fields_of<'de, T: Deserialize<'de>>() -> Vec<&'static str> {
        struct Fields(Vec<&'static str>);
        #[derive(Debug)]
        struct Stop;
        impl std::fmt::Display for Stop {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("stop")
            }
        }
        impl std::error::Error for Stop {}
        impl serde::de::Error for Stop {
            fn custom<M: std::fmt::Display>(_: M) -> Self {
                Stop
            }
        }
        impl<'de> serde::Deserializer<'de> for &mut Fields {
            type Error = Stop;
            fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
                Err(Stop)
            }
            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Stop> {
                self.0.extend(fields);
                Err(Stop)
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        let mut f = Fields(Vec::new());
        let _ = T::deserialize(&mut f);
        let mut v = f.0;
        v.sort_unstable();
        v
    }

    #[test]
    fn the_key_table_lists_exactly_the_fields_the_parser_reads() {
        let listed = |parent: &str| {
            let mut v: Vec<&str> = keys::children(parent).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(fields_of::<RawConfig>(), listed(""));
        assert_eq!(fields_of::<RawBuild>(), listed("build"));
        assert_eq!(fields_of::<RawCargo>(), listed("build.cargo"));
        assert_eq!(fields_of::<RawTest>(), listed("tests.NAME"));
        assert_eq!(fields_of::<RawMeasure>(), listed("measure"));
        assert_eq!(fields_of::<RawFingerprint>(), listed("fingerprint"));
        // A key the table lists is accepted, one it does not is refused with its line.
        let e = err("[measure]\ninterleave = true\nquiet = true\n");
        assert!(e.contains(":3: unknown field `quiet`"), "{e}");
        assert!(e.contains("perfbisect guide config"), "{e}");
        let e = err("[build.env]\nCC = \"gcc\"\n[tests.a]\ncommand = \"x\"\nrepeat = 1\n");
        assert!(
            e.contains(":5:") && e.contains("did you mean `repeats`?"),
            "{e}"
        );
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
        assert_eq!(r.unit(), "bytes");
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
    fn only_tests_of_one_commands_output_share_runs() {
        let c = parse(
            r#"
[tests.a]
command = "./bench --json"
metric = { json = "/a" }
[tests.b]
command = "./bench --json"
metric = { format = "bmf", name = "b" }
[tests.time]
command = "./bench --json"
[tests.named]
command = "./bench --only $PERFBISECT_TEST"
metric = { regex = "(1)" }
"#,
            Path::new("/x/perfbisect.toml"),
        )
        .unwrap();
        let key = |n: &str| c.tests[n].share_key();
        assert!(key("a").is_some());
        assert_eq!(key("a"), key("b"));
        assert_eq!(
            key("time"),
            None,
            "a run's own time is measured in runs of its own"
        );
        assert_eq!(key("named"), None);
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
