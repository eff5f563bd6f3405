//! `import --from TOOL PATH --list`: every foreign series of a history with its points,
//! commits, unit and the test name it takes, which test of the config takes it, and a
//! `[tests.X]` stub per series no test takes yet (for a cargo history, a libtest metric of
//! the same bench, so that the test can also measure the gaps by building). Nothing is
//! written; configurations are listed, not refused.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::names;
use super::point::{Kind, Options, Point, Tool, Visit};
use crate::config::{Config, Direction, Metric};
use crate::import::report::Why;

/// What `--list` found.
pub struct Listing {
    tool: Tool,
    series: BTreeMap<String, Info>,
    configurations: Vec<(&'static str, Vec<String>, Vec<String>)>,
    skipped: BTreeMap<Why, usize>,
    no_value: usize,
    notes: Vec<String>,
}

/// One series as listed.
struct Info {
    bench: String,
    plain: String,
    unit: Option<String>,
    /// Another unit seen after the first.
    other_unit: bool,
    direction: Option<Direction>,
    points: usize,
    commits: HashSet<u64>,
    machines: BTreeSet<String>,
    kind: StubKind,
    first: Option<u64>,
    last: Option<u64>,
}

/// [`Kind`], owned.
#[derive(Clone, PartialEq)]
enum StubKind {
    Libtest(String),
    Gbench,
    Bmf(String),
    Hyperfine,
    Other,
}

/// Read `path` as `tool`'s history and list it (`repo` names the commits of files that do
/// not).
pub fn list(
    tool: Tool,
    path: &Path,
    opts: &Options,
    repo: Option<&crate::git::Repo>,
) -> anyhow::Result<Listing> {
    let mut l = Listing {
        tool,
        series: BTreeMap::new(),
        configurations: Vec::new(),
        skipped: BTreeMap::new(),
        no_value: 0,
        notes: Vec::new(),
    };
    super::dispatch::read(tool, path, opts, repo, &mut l)?;
    Ok(l)
}

impl Visit for Listing {
    fn listing(&self) -> bool {
        true
    }

    fn point(&mut self, p: Point<'_>) -> anyhow::Result<()> {
        let info = self.series.entry(p.id.to_string()).or_insert_with(|| Info {
            bench: p.bench.to_string(),
            plain: p.plain.to_string(),
            unit: p.unit.map(str::to_string),
            other_unit: false,
            direction: p.direction,
            points: 0,
            commits: HashSet::new(),
            machines: BTreeSet::new(),
            kind: match p.kind {
                Kind::Libtest { target } => StubKind::Libtest(target.to_string()),
                Kind::Gbench => StubKind::Gbench,
                Kind::Bmf { measure } => StubKind::Bmf(measure.to_string()),
                Kind::Hyperfine => StubKind::Hyperfine,
                Kind::Other => StubKind::Other,
            },
            first: None,
            last: None,
        });
        info.points += 1;
        if info.unit.as_deref() != p.unit {
            info.other_unit = true;
        }
        use std::hash::BuildHasher;
        info.commits
            .insert(foldhash::fast::FixedState::with_seed(3).hash_one(p.commit));
        if let Some(m) = p.machine {
            if !info.machines.contains(m) {
                info.machines.insert(m.to_string());
            }
        }
        if let Some(t) = p.time {
            info.first = Some(info.first.map_or(t, |f| f.min(t)));
            info.last = Some(info.last.map_or(t, |l| l.max(t)));
        }
        Ok(())
    }

    fn no_value(&mut self) {
        self.no_value += 1;
    }

    fn skip(&mut self, _at: &Arc<str>, why: Why, _reason: String) {
        *self.skipped.entry(why).or_default() += 1;
    }

    fn note(&mut self, text: String) {
        self.notes.push(text);
    }

    fn configurations(&mut self, kind: &'static str, found: &[String], chosen: &[String]) {
        match self.configurations.iter_mut().find(|(k, _, _)| *k == kind) {
            Some((_, f, c)) => {
                for x in found {
                    if !f.contains(x) {
                        f.push(x.clone());
                    }
                }
                for x in chosen {
                    if !c.contains(x) {
                        c.push(x.clone());
                    }
                }
            }
            None => self
                .configurations
                .push((kind, found.to_vec(), chosen.to_vec())),
        }
    }
}

impl Listing {
    /// Series found.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// Whether nothing was found: no series, and nothing skipped.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty() && self.skipped.is_empty() && self.no_value == 0
    }

    /// The text `--list` prints: the configurations, a table of the series, then a stub per
    /// series no test of `config` takes.
    pub fn render(&self, file: &str, config: Option<&Config>) -> String {
        let mut o = String::new();
        let points: usize = self.series.values().map(|s| s.points).sum();
        let _ = writeln!(
            o,
            "{file}: {} history, {} series, {points} points",
            self.tool.name(),
            self.series.len()
        );
        for (kind, found, chosen) in &self.configurations {
            let flag = match *kind {
                "environment" => "--env",
                "suite" => "--suite",
                _ => "--machine",
            };
            let _ = write!(o, "{kind}s: {}", found.join(", "));
            if chosen.len() < found.len() {
                let _ = write!(o, " (listed: {})", chosen.join(", "));
            }
            let several = if *kind == "suite" {
                self.suites_overlap()
            } else {
                chosen.len() > 1
            };
            if several {
                let _ = write!(
                    o,
                    "; one series is one {kind}: an import takes one, chosen with {flag}"
                );
            }
            o.push('\n');
        }
        for n in &self.notes {
            let _ = writeln!(o, "{n}");
        }
        let skipped: usize = self.skipped.values().sum();
        if skipped + self.no_value > 0 {
            let mut parts: Vec<String> = self
                .skipped
                .iter()
                .map(|(w, n)| format!("{n} {}", w.label()))
                .collect();
            if self.no_value > 0 {
                parts.push(format!(
                    "{} without a value (failed or skipped)",
                    self.no_value
                ));
            }
            let _ = writeln!(o, "not listed: {}", parts.join(", "));
            if self.skipped.contains_key(&Why::Uncommitted) {
                let _ = writeln!(
                    o,
                    "(runs saved with uncommitted changes measured something else than the commit they name: --dirty takes them)"
                );
            }
        }
        let names = self.names();
        let takers = self.takers(config);
        let rows: Vec<[String; 5]> = self
            .series
            .iter()
            .map(|(id, s)| {
                let name = &names[id];
                let mut test = match takers.get(id.as_str()) {
                    Some(t) => format!("{name} (taken by tests.{t})"),
                    None => name.clone(),
                };
                if s.machines.len() > 1 {
                    test += &format!(
                        " [on {} machines: one chosen when imported]",
                        s.machines.len()
                    );
                }
                [
                    id.clone(),
                    s.points.to_string(),
                    s.commits.len().to_string(),
                    match (&s.unit, s.other_unit) {
                        (Some(u), false) => u.clone(),
                        (Some(u), true) => format!("{u} and others"),
                        (None, _) => "-".into(),
                    },
                    test,
                ]
            })
            .collect();
        let head = ["series", "points", "commits", "unit", "test"];
        let widths: Vec<usize> = (0..5)
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([head[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: [&str; 5]| -> String {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i == 4 {
                    l += c;
                } else if i == 1 || i == 2 {
                    l += &format!("{c:>w$}  ", w = widths[i]);
                } else {
                    l += &format!("{c:<w$}  ", w = widths[i]);
                }
            }
            l.trim_end().to_string() + "\n"
        };
        if rows.is_empty() {
            return o;
        }
        o.push('\n');
        o += &line(head);
        for r in &rows {
            o += &line([&r[0], &r[1], &r[2], &r[3], &r[4]]);
        }
        let stubs: Vec<String> = self
            .series
            .iter()
            .filter(|(id, _)| !takers.contains_key(id.as_str()))
            .map(|(id, s)| self.stub(id, s, &names[id]))
            .collect();
        if !stubs.is_empty() {
            let _ = writeln!(
                o,
                "\n# A test per series, to paste into the config (`perfbisect import` then takes \
                 each series into its test):"
            );
            for s in stubs {
                o.push('\n');
                o += &s;
            }
        }
        o
    }

    /// Whether two suites hold a bench of one name (then one must be chosen).
    fn suites_overlap(&self) -> bool {
        let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
        self.series.iter().any(|(id, s)| {
            let suite = id.strip_suffix(&format!("/{}", s.bench)).unwrap_or(id);
            matches!(seen.insert(&s.bench, suite), Some(prev) if prev != suite)
        })
    }

    /// The test name of each series: its sanitised name; where several series share one, each
    /// gets `-2`, `-3` after it (and its stub an `import` key), and a name that is no name
    /// becomes `series-N`.
    fn names(&self) -> BTreeMap<String, String> {
        let mut by_name: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (id, s) in &self.series {
            by_name
                .entry(names::sanitise(&s.plain))
                .or_default()
                .push(id);
        }
        let mut out = BTreeMap::new();
        let mut k = 0;
        for (name, ids) in by_name {
            for (i, id) in ids.iter().enumerate() {
                let n = if name.is_empty() {
                    k += 1;
                    format!("series-{k}")
                } else if i == 0 {
                    name.clone()
                } else {
                    format!("{name}-{}", i + 1)
                };
                out.insert(id.to_string(), n);
            }
        }
        out
    }

    /// The test of `config` that takes each series, by the import's rules.
    fn takers(&self, config: Option<&Config>) -> BTreeMap<&str, String> {
        let mut out = BTreeMap::new();
        let Some(config) = config else {
            return out;
        };
        for (id, s) in &self.series {
            let sane = names::sanitise(&s.plain);
            let t = config.tests.values().find(|t| match &t.import {
                Some(key) => key == id,
                None => {
                    t.name == sane
                        || matches!(&t.metric, Metric::Harness(a)
                            if a.name.as_deref().is_some_and(|n| n == s.bench || n == id))
                }
            });
            if let Some(t) = t {
                out.insert(id.as_str(), t.name.clone());
            }
        }
        out
    }

    /// The `[tests.X]` that takes series `id`.
    fn stub(&self, id: &str, s: &Info, name: &str) -> String {
        let q = |t: &str| toml::Value::String(t.to_string()).to_string();
        // A dotted name is one key only quoted (`[tests."bench.time_x"]`).
        let key = if name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            name.to_string()
        } else {
            q(name)
        };
        let mut o = format!("[tests.{key}]\n");
        let when = match (s.first, s.last) {
            (Some(a), Some(b)) => format!(
                ", {}..{}",
                &crate::base::text::iso8601(a as i64)[..10],
                &crate::base::text::iso8601(b as i64)[..10]
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "# {} series {id}: {} on {}{when}",
            self.tool.name(),
            crate::base::text::count(s.points, "point"),
            crate::base::text::count(s.commits.len(), "commit")
        );
        if names::sanitise(&s.plain) != name {
            let _ = writeln!(o, "import = {}", q(id));
        }
        match &s.kind {
            StubKind::Libtest(target) => {
                let _ = writeln!(
                    o,
                    "command = {}  # with [build] cargo = {{ benches = [{}] }}",
                    q(&format!(
                        "./{target} --bench --exact {}",
                        shell_quote(&s.bench)
                    )),
                    q(target)
                );
                let _ = writeln!(
                    o,
                    "metric = {{ format = \"libtest\", name = {} }}",
                    q(&s.bench)
                );
            }
            StubKind::Gbench => {
                let _ = writeln!(
                    o,
                    "command = {}  # the Google Benchmark binary",
                    q(&format!(
                        "./BENCHMARK --benchmark_filter='^{}$' --benchmark_format=json",
                        s.bench
                    ))
                );
                let _ = writeln!(
                    o,
                    "metric = {{ format = \"gbench\", name = {} }}",
                    q(&s.bench)
                );
            }
            StubKind::Bmf(measure) => {
                let _ = writeln!(
                    o,
                    "command = \"exit 1\"  # replace: the command that prints this BMF"
                );
                let _ = writeln!(
                    o,
                    "metric = {{ format = \"bmf\", name = {}, field = {} }}",
                    q(&s.bench),
                    q(measure)
                );
            }
            StubKind::Hyperfine => {
                let _ = writeln!(
                    o,
                    "command = {}",
                    q(&format!(
                        "hyperfine --runs 5 --style none --export-json \"$PERFBISECT_OUT/h.json\" {}",
                        shell_quote(&s.bench)
                    ))
                );
                let _ = writeln!(
                    o,
                    "metric = {{ format = \"hyperfine\", name = {}, file = \"h.json\" }}",
                    q(&s.bench)
                );
            }
            StubKind::Other => {
                let _ = writeln!(
                    o,
                    "command = \"exit 1\"  # replace: a command that measures it here (until then the test holds the imported numbers)"
                );
            }
        }
        if let (Some(u), false) = (&s.unit, matches!(s.kind, StubKind::Libtest(_))) {
            let _ = writeln!(o, "unit = {}", q(u));
        }
        if s.direction == Some(Direction::Higher) {
            o += "direction = \"higher\"\n";
        }
        o
    }
}

/// `text` quoted for `sh` when it needs it.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
