//! The import of another tool's history: which test takes each foreign series (its `import`
//! key, else the test whose name is the series' sanitised name, else the test whose harness
//! metric names the benchmark), the checks that keep a series one test's and a test one
//! series', the unit, and the rows each point becomes in the store ([`super::super::sink`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use super::names;
use super::point::{Kind, Options, Point, Tool, Visit};
use crate::config::{Metric, Test};
use crate::import::report::{Outcome, Place, Why};
use crate::import::row::{Field, Row, Rows};
use crate::import::sink::{self, Sink};
use crate::pipeline::workspace::Workspace;
use crate::store::origin::{shared, Origin};

/// What an import of another tool's history did, besides the rows it stored.
#[derive(Default)]
pub struct Taken {
    pub outcome: Outcome,
    /// Each series a test took: (foreign id, test, points read).
    pub series: Vec<(String, String, usize)>,
    /// Series no test takes, and their points.
    pub untaken: usize,
    pub untaken_points: usize,
    /// Things said once: units, directions, versions read, import keys that named nothing.
    pub notes: Vec<String>,
    /// Configurations found and read, by kind (`machine`, `environment`, `suite`).
    pub configurations: Vec<(&'static str, Vec<String>, Vec<String>)>,
}

/// Import `path`, `tool`'s history, into the workspace's store: all of it, or nothing.
pub fn import(
    ws: &Workspace,
    tool: Tool,
    path: &Path,
    opts: &Options,
    keep_all: bool,
) -> anyhow::Result<Taken> {
    let file = match &opts.git_history {
        Some(branch) => format!("{branch}:{}", path.display()),
        None => crate::base::paths::display_path(path),
    };
    let mut taken = Taken::default();
    let outcome = sink::run(ws, &file, keep_all, |sink| {
        let mut imp = Importer {
            tool,
            opts,
            tests: &ws.config.tests,
            sink,
            series: HashMap::new(),
            test_series: HashMap::new(),
            taken: &mut taken,
        };
        super::dispatch::read(tool, path, opts, Some(&ws.repo), &mut imp)?;
        imp.finish(&file, ws)
    })?;
    taken.outcome = outcome;
    Ok(taken)
}

/// What the importer knows of one series.
struct SeriesState {
    /// The test taking it, or why none does (counted, not listed per point).
    test: Result<String, Option<Why>>,
    /// The unit of its first point: later points in another are not the same numbers.
    unit: Option<String>,
    points: usize,
    /// Its origin as last stored (a new one only when the version moves).
    origin: Option<Arc<Origin>>,
    /// Why its points are skipped, when a test takes it and they cannot be stored.
    refusal: Option<String>,
}

struct Importer<'a, 's, 'w> {
    tool: Tool,
    opts: &'a Options,
    tests: &'a BTreeMap<String, Test>,
    sink: &'s mut Sink<'w>,
    series: HashMap<String, SeriesState>,
    /// The series each test took (a test takes one).
    test_series: HashMap<String, String>,
    taken: &'a mut Taken,
}

/// Which test of `tests` takes the series of `p`, by the rules in the module's text; two are
/// refused.
fn taker<'t>(
    tests: &'t BTreeMap<String, Test>,
    p: &Point<'_>,
) -> anyhow::Result<Option<(&'t Test, &'static str)>> {
    let sane = names::sanitise(p.plain);
    let mut takers: Vec<(&Test, &'static str)> = Vec::new();
    for t in tests.values() {
        let how = match &t.import {
            Some(key) if key == p.id => Some("its `import` key"),
            Some(_) => None,
            None if t.name == sane => Some("its name"),
            None if harness_takes(t, p) => Some("its harness metric's `name`"),
            None => None,
        };
        if let Some(how) = how {
            takers.push((t, how));
        }
    }
    if let [(a, how_a), (b, how_b), ..] = takers[..] {
        crate::usage!(
            "series `{}` is taken by test `{}` ({how_a}) and by test `{}` ({how_b}); a series \
                 is one test's history: give one of them `import = \"...\"` naming another series",
            p.id,
            a.name,
            b.name
        );
    }
    Ok(takers.first().copied())
}

impl Importer<'_, '_, '_> {
    /// The state of a series seen for the first time.
    fn open(&mut self, p: &Point<'_>) -> anyhow::Result<SeriesState> {
        let mut st = SeriesState {
            test: Err(None),
            unit: p.unit.map(str::to_string),
            points: 0,
            origin: None,
            refusal: None,
        };
        let tests = self.tests;
        let Some((t, how)) = taker(tests, p)? else {
            self.taken.untaken += 1;
            return Ok(st);
        };
        if let Some(prev) = self.test_series.get(&t.name) {
            crate::usage!(
                "test `{}` takes two series, `{prev}` and `{}` (by {how}): their names are one \
                 name once made a test's. Say which with `import = \"<series>\"` in \
                 [tests.{}] (`--list` prints every series)",
                t.name,
                p.id,
                t.name
            );
        }
        self.test_series.insert(t.name.clone(), p.id.to_string());
        let ours = t.unit();
        if let Some(u) = p.unit {
            if !ours.is_empty() && !names::same_unit(u, &ours) {
                let why = format!(
                    "series `{}` is in {u}, test `{}` in {ours}: values are never converted, so \
                     none of it is imported (set the test's `unit`, or take another series)",
                    p.id, t.name
                );
                self.taken.notes.push(why.clone());
                st.refusal = Some(why);
            }
        }
        if let Some(d) = p.direction.filter(|d| *d != t.direction) {
            self.taken.notes.push(format!(
                "series `{}` is {} is better ({}), test `{}` says {} is better: check its `direction`",
                p.id,
                d.as_str(),
                self.tool.name(),
                t.name,
                t.direction.as_str()
            ));
        }
        st.test = Ok(t.name.clone());
        Ok(st)
    }

    /// After the last point: what the import keys named, and the configurations.
    fn finish(&mut self, file: &str, ws: &Workspace) -> anyhow::Result<()> {
        let ids: BTreeSet<&str> = self.series.keys().map(String::as_str).collect();
        for t in self.tests.values() {
            let Some(key) = &t.import else {
                continue;
            };
            if ids.contains(key.as_str()) {
                continue;
            }
            // A key one or two letters off a series of this history is a typo, not a series
            // of another file: nothing is imported until it is fixed.
            let near = ids
                .iter()
                .map(|id| (strsim::levenshtein(key, id), id))
                .filter(|(d, _)| *d <= 2 && key.chars().count() > 3)
                .min();
            if let Some((_, near)) = near {
                crate::usage!(
                    "{}: key `tests.{}.import`: `{key}` names no series of {file}; did you mean `{near}`? (nothing was imported)",
                    crate::base::paths::display_path(&ws.config.path),
                    t.name
                );
            }
            self.taken.notes.push(format!(
                "test `{}` takes `{key}` (its `import` key), which {file} does not hold",
                t.name
            ));
        }
        let mut series: Vec<(String, String, usize)> = self
            .series
            .iter()
            .filter_map(|(id, s)| Some((id.clone(), s.test.clone().ok()?, s.points)))
            .collect();
        series.sort();
        self.taken.untaken_points = self
            .series
            .values()
            .filter(|s| s.test.is_err())
            .map(|s| s.points)
            .sum();
        self.taken.series = series;
        if self.taken.series.is_empty() && self.taken.untaken == 0 {
            // Nothing came through the reader: say why its points were skipped.
            let report = self.sink.report();
            let why = report
                .problems
                .first()
                .map(|(place, _, why)| format!(": {}: {why}", place.after(file)))
                .unwrap_or_default();
            crate::usage!(
                "nothing of {file} could be read as {} series ({} skipped){why}",
                self.tool.name(),
                report.skipped_rows()
            );
        }
        if self.taken.series.is_empty() {
            crate::usage!(
                "no test of {} takes a series of {file} ({} series): a test takes the series whose \
                 sanitised name is its name, or the one its `import` key names; `perfbisect import \
                 --from {} {} --list` prints every series with a [tests.X] stub that takes it",
                crate::base::paths::display_path(&ws.config.path),
                self.taken.untaken,
                self.tool.name(),
                file
            );
        }
        Ok(())
    }
}

/// Whether test `t`'s harness metric names the benchmark of `p` (a BMF metric its measure too).
fn harness_takes(t: &Test, p: &Point<'_>) -> bool {
    let Metric::Harness(a) = &t.metric else {
        return false;
    };
    let Some(name) = a.name.as_deref() else {
        return false;
    };
    if name != p.bench && name != p.id {
        return false;
    }
    match p.kind {
        Kind::Bmf { measure } => a.field.as_deref().is_none_or(|f| f == measure),
        _ => true,
    }
}

impl Visit for Importer<'_, '_, '_> {
    fn listing(&self) -> bool {
        false
    }

    fn point(&mut self, p: Point<'_>) -> anyhow::Result<()> {
        if !self.series.contains_key(p.id) {
            let st = self.open(&p)?;
            self.series.insert(p.id.to_string(), st);
        }
        let st = self.series.get_mut(p.id).expect("just inserted");
        st.points += 1;
        let values: Vec<(f64, Option<String>)> =
            match p.samples.filter(|s| self.opts.samples && !s.is_empty()) {
                // Each a measurement of its own: a round each.
                Some(s) if p.separate => s
                    .iter()
                    .enumerate()
                    .map(|(k, &v)| (v, Some(format!("{}#{}", p.round, k + 1))))
                    .collect(),
                // One measurement: its samples share the round and the time.
                Some(s) => s.iter().map(|&v| (v, None)).collect(),
                None => vec![(p.value, None)],
            };
        let test = match &st.test {
            Ok(t) => t.clone(),
            Err(_) => return Ok(()),
        };
        let place = Place::At(p.at.clone());
        let report = self.sink.report();
        if let Some(why) = &st.refusal {
            for _ in &values {
                report.skip(place.clone(), Why::OtherUnit, why.clone());
            }
            return Ok(());
        }
        if let (Some(first), Some(u)) = (&st.unit, p.unit) {
            if first != u && !names::same_unit(first, u) {
                let why = format!("series `{}` is in {u} here, in {first} before", p.id);
                for _ in &values {
                    report.skip(place.clone(), Why::OtherUnit, why.clone());
                }
                return Ok(());
            }
        }
        let origin = match &st.origin {
            Some(o) if o.version.as_deref() == p.version => o.clone(),
            _ => {
                let o = shared(&Origin {
                    source: self.tool.name().into(),
                    series: p.id.into(),
                    unit: p.unit.map(Into::into),
                    version: p.version.map(Into::into),
                });
                st.origin = Some(o.clone());
                o
            }
        };
        if p.id.len() > sink::MAX_TEXT {
            report.skip(
                place,
                Why::BadRow,
                format!("series id of {} bytes", p.id.len()),
            );
            return Ok(());
        }
        for (value, round) in values {
            self.sink.row(
                Row {
                    commit: p.commit.into(),
                    test: test.as_str().into(),
                    value: Field::Number(value),
                    timestamp: p.time.map(|t| Field::Number(t as f64)),
                    time_column: "timestamp",
                    round: Some(round.map_or(p.round.into(), Into::into)),
                    machine: p.machine.map(Into::into),
                    at: Some(p.at.clone()),
                    origin: Some(origin.clone()),
                    spread: p.spread.clone(),
                    ..Row::default()
                },
                false,
            )?;
        }
        Ok(())
    }

    fn no_value(&mut self) {
        self.sink.report().failed_runs += 1;
    }

    fn skip(&mut self, at: &Arc<str>, why: Why, reason: String) {
        self.sink.report().skip(Place::At(at.clone()), why, reason);
    }

    fn note(&mut self, text: String) {
        self.taken.notes.push(text);
    }

    fn configurations(&mut self, kind: &'static str, found: &[String], chosen: &[String]) {
        match self
            .taken
            .configurations
            .iter_mut()
            .find(|(k, _, _)| *k == kind)
        {
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
                .taken
                .configurations
                .push((kind, found.to_vec(), chosen.to_vec())),
        }
    }
}
