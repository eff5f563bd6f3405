//! The real world behind a search: the [`bisect::Lab`](crate::bisect::Lab) that builds commits
//! in perfbisect's worktrees (in parallel, through the same build pool as `run --jobs`), runs
//! the test and stores every sample before the next run starts.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::bisect::{Culprit, Doing, Lab, Measured, Outcome, Search, Stored};
use crate::build::State;
use crate::config::Test;
use crate::git::CommitInfo;
use crate::pipeline::samples::Samples;
use crate::pipeline::workspace::{Bench, Workspace};

/// A search's positions mapped onto commits of the workspace's repository.
pub struct WorkspaceLab<'a, 'w> {
    pub(super) bench: &'a mut Bench<'w>,
    commits: &'a [CommitInfo],
    bar: indicatif::ProgressBar,
    /// The text of the last failed run of each position, for the report.
    pub last_error: HashMap<usize, String>,
    /// Imported samples (another machine's numbers) count as evidence. Right for a
    /// deterministic test; a noisy one measures here what it compares.
    trust_imported: bool,
    /// Values measured in this search, by commit, for commits built later whose build is
    /// byte-identical.
    fresh: HashMap<[u8; 20], Vec<f64>>,
    /// Positions already checked for an identical build with samples.
    twin_checked: std::collections::HashSet<usize>,
    /// Runs not made because an identical build's samples stood in.
    pub runs_saved: usize,
    /// Values handed to the search that were an identical build's samples, not runs made now
    /// (the search counts every value it gets; the report counts real runs).
    pub stood_in: usize,
    /// `(position, the commit whose identical build's samples it used)`, for the report.
    pub shared: Vec<(usize, gix::ObjectId)>,
    /// Windows of interleaved runs this search opened or extended, and the runs in them.
    pub windows: usize,
    pub window_runs: usize,
    /// Runs of a window that may go at once (other commits each): `jobs` for a metric the
    /// machine's load does not move, else 1.
    pub parallel: usize,
    /// Runs that went side by side with another (the most at once), for the report.
    pub overlapped: usize,
    /// Why runs may go side by side and builds beside them (the metric), for the messages.
    pub why_parallel: String,
    /// Builds asked to run beside the next measurement, with how many at once, and what the
    /// last such builds did.
    ahead: Vec<usize>,
    ahead_jobs: usize,
    beside: (Vec<(usize, bool)>, usize, std::time::Duration),
    /// Builds to check against pristine rebuilds beside the next measurement, those asked
    /// once already, and what the last such checks rebuilt and took.
    to_check: Vec<usize>,
    check_asked: std::collections::HashSet<usize>,
    checks: (usize, std::time::Duration),
    /// The wall time of the runs made and their number (what one run costs, beside a build).
    walls: (f64, usize),
}

impl<'a, 'w> WorkspaceLab<'a, 'w> {
    /// `commits[0]` is the old end; the samples stored on the bench are the search's starting
    /// point.
    pub fn new(
        bench: &'a mut Bench<'w>,
        commits: &'a [CommitInfo],
        label: &str,
    ) -> WorkspaceLab<'a, 'w> {
        let mut last_error = HashMap::new();
        for (pos, c) in commits.iter().enumerate() {
            if let Some(e) = bench
                .stored
                .records(&c.id)
                .iter()
                .rev()
                .find_map(|s| s.error.clone())
            {
                last_error.insert(pos, e);
            }
        }
        let bar = bench.ws.progress.bar(0, label);
        WorkspaceLab {
            bench,
            commits,
            bar,
            last_error,
            trust_imported: true,
            fresh: HashMap::new(),
            twin_checked: Default::default(),
            runs_saved: 0,
            stood_in: 0,
            shared: Vec::new(),
            windows: 0,
            window_runs: 0,
            parallel: 1,
            overlapped: 0,
            why_parallel: String::new(),
            ahead: Vec::new(),
            ahead_jobs: 1,
            beside: Default::default(),
            to_check: Vec::new(),
            check_asked: Default::default(),
            checks: Default::default(),
            walls: Default::default(),
        }
    }

    /// Whether imported samples are evidence in this search (default: yes).
    pub fn trust_imported(&mut self, yes: bool) {
        self.trust_imported = yes;
    }

    /// Done: clear the progress bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn artifacts(&self, pos: usize) -> Option<PathBuf> {
        self.bench.artifacts(&self.commits[pos].id)
    }

    fn ws(&self) -> &Workspace {
        self.bench.ws
    }

    fn test(&self) -> &Test {
        self.bench.test
    }
}

/// Every stored run of `id` as a search sees it (NaN for a failed one), the runs of its
/// byte-identical builds included and marked shared; imported rows only when `imported`.
pub fn stored_runs(samples: &Samples, id: &gix::ObjectId, imported: bool) -> Vec<Stored> {
    let key = crate::store::commit_key(id);
    samples
        .records(id)
        .into_iter()
        .filter(|s| imported || s.import.is_none())
        .map(|s| Stored {
            value: s.value.unwrap_or(f64::NAN),
            window: s.window,
            moment: s.moment,
            shared: s.commit != key,
        })
        .collect()
}

/// `outcome` with each culprit's (or the best guess's) numbers read again from the store
/// ([`Search::restate`]): every run of its parent and of itself kept there, the runs of
/// byte-identical builds included, so that `find` and a later `report` of the range give one
/// number for one step. With whether every culprit compares as exact values on those runs
/// ([`Search::restate_exact`]: then each is stated so, as `detect` and the report state it).
pub fn restated(
    load: &dyn Fn(&[gix::ObjectId]) -> anyhow::Result<Samples>,
    search: &Search,
    commits: &[CommitInfo],
    outcome: Outcome,
    imported: bool,
) -> anyhow::Result<(Outcome, bool)> {
    let ids: Vec<gix::ObjectId> = match &outcome {
        Outcome::Culprits(cs) => cs.iter().flat_map(|c| [c.parent, c.pos]).collect(),
        Outcome::Inconclusive {
            best_guess: Some(c),
            ..
        } => vec![c.parent, c.pos],
        _ => return Ok((outcome, false)),
    }
    .into_iter()
    .map(|p| commits[p].id)
    .collect();
    let stored = load(&ids)?;
    let again = |c: &Culprit| {
        search.restate(
            c,
            &stored_runs(&stored, &commits[c.parent].id, imported),
            &stored_runs(&stored, &commits[c.pos].id, imported),
        )
    };
    let exact = |c: &Culprit| {
        search.restate_exact(
            c,
            &stored_runs(&stored, &commits[c.parent].id, imported),
            &stored_runs(&stored, &commits[c.pos].id, imported),
        )
    };
    // Largest step first, as the search orders its culprits.
    let by_size = |mut cs: Vec<Culprit>| {
        cs.sort_by(|a, b| {
            b.rel_change
                .abs()
                .total_cmp(&a.rel_change.abs())
                .then(a.pos.cmp(&b.pos))
        });
        Outcome::Culprits(cs)
    };
    if let Outcome::Culprits(cs) = &outcome {
        if let Some(cs) = cs.iter().map(exact).collect::<Option<Vec<Culprit>>>() {
            return Ok((by_size(cs), true));
        }
    }
    Ok((
        match outcome {
            Outcome::Culprits(cs) => by_size(cs.iter().map(again).collect()),
            Outcome::Inconclusive {
                reason,
                best_guess: Some(c),
            } => Outcome::Inconclusive {
                reason,
                best_guess: Some(again(&c)),
            },
            o => o,
        },
        false,
    ))
}

/// NaN for the runs that gave no number.
fn values<'s>(samples: impl IntoIterator<Item = &'s crate::store::Sample>) -> Vec<f64> {
    samples
        .into_iter()
        .map(|s| s.value.unwrap_or(f64::NAN))
        .collect()
}

impl WorkspaceLab<'_, '_> {
    /// A value of the test in its unit, as reports write it: "1.009 ms", "1008.6 units".
    fn quantity(&self, v: f64) -> String {
        crate::report::units::quantity(v, &self.test().unit())
    }

    /// Whether each step and each probe's result gets a line on stderr: with `-v`, or when no
    /// progress bar is drawn (a CI log, `--no-progress`) unless `--quiet`, so a long search
    /// is never silent.
    fn step_lines(&self) -> bool {
        let ws = self.ws();
        ws.verbosity.verbose > 0 || (!ws.progress.visible() && !ws.verbosity.quiet)
    }

    /// Once per position without samples of its own: the samples of a commit whose build
    /// (from its manifest) is byte-identical, stored before or measured in this search.
    fn identical_build_samples(&mut self, pos: usize) -> Option<(gix::ObjectId, Vec<f64>)> {
        if !self.twin_checked.insert(pos) || !self.test().shares_identical_builds() {
            return None;
        }
        let id = self.commits[pos].id;
        if !self.bench.stored.records(&id).is_empty() {
            return None; // the search was given them already
        }
        for tid in self.bench.identical_builds(&id) {
            let t = crate::store::commit_key(&tid);
            let mut vals: Vec<f64> = values(
                self.bench
                    .stored
                    .own(&tid)
                    .iter()
                    .filter(|s| self.trust_imported || s.import.is_none()),
            );
            vals.extend(self.fresh.get(&t).into_iter().flatten());
            if !vals.is_empty() {
                return Some((tid, vals));
            }
        }
        None
    }
}

impl Lab for WorkspaceLab<'_, '_> {
    fn build(&mut self, set: &[usize], jobs: usize) -> anyhow::Result<(Vec<bool>, usize)> {
        let ids: Vec<_> = set.iter().map(|&p| self.commits[p].id).collect();
        let outcomes = self.bench.build(&ids, jobs)?;
        let builds = outcomes.iter().filter(|o| !o.interrupted).count();
        let ok = set.iter().map(|&p| self.artifacts(p).is_some()).collect();
        Ok((ok, builds))
    }

    fn cached(&self, pos: usize) -> bool {
        self.artifacts(pos).is_some()
    }

    fn unbuildable(&self, pos: usize) -> bool {
        matches!(self.bench.state(&self.commits[pos].id), State::Failed(_))
    }

    fn stored(&self, pos: usize) -> Vec<Stored> {
        stored_runs(
            &self.bench.stored,
            &self.commits[pos].id,
            self.trust_imported,
        )
    }

    fn measure(&mut self, pos: usize, runs: usize) -> anyhow::Result<Vec<f64>> {
        self.with_beside(|lab| lab.measure_now(pos, runs))
    }

    fn measure_window(
        &mut self,
        positions: &[usize],
        runs: usize,
        window: Option<(u64, u32)>,
    ) -> anyhow::Result<Measured> {
        self.with_beside(|lab| lab.measure_window_now(positions, runs, window))
    }

    fn build_secs(&self, pos: usize) -> Option<f64> {
        self.bench.build_secs(&self.commits[pos].id)
    }

    /// A run's own wall time (its process tree's, as the store keeps it), on average: what
    /// the test costs, against what a build costs.
    fn run_secs(&self) -> Option<f64> {
        let (wall, runs) = self.walls;
        (runs > 0).then(|| wall / runs as f64)
    }

    fn builds_beside(&self) -> bool {
        self.parallel > 1
    }

    fn build_beside(&mut self, set: &[usize], jobs: usize) {
        self.ahead = set.to_vec();
        self.ahead_jobs = jobs.max(1);
    }

    fn take_beside(&mut self) -> (Vec<(usize, bool)>, usize, std::time::Duration) {
        std::mem::take(&mut self.beside)
    }

    fn check_beside(&mut self, set: &[usize]) {
        self.to_check = set.to_vec();
    }

    fn take_checks(&mut self) -> (usize, std::time::Duration) {
        std::mem::take(&mut self.checks)
    }

    fn interrupted(&self) -> bool {
        crate::base::interrupt::requested()
    }

    /// With `-v`, or without a progress bar, where the search placed the probe just measured:
    /// "old-like", "new-like", between the levels, beyond one of them, or still unknown.
    fn decided(&mut self, d: &crate::bisect::Decision) {
        if !self.step_lines() {
            return;
        }
        let c = &self.commits[d.pos];
        let what = placed_words(d);
        self.ws().note(&format!(
            "perfbisect: {} is {what}: median {} against the old level {} and the new level {}",
            c.short(),
            self.quantity(d.probe),
            self.quantity(d.old),
            self.quantity(d.new)
        ));
    }

    /// With `-v`, or without a progress bar, a line per step of the search (what is built,
    /// measured side by side).
    fn status(&mut self, what: Doing<'_>) {
        if !self.step_lines() {
            return;
        }
        let name = |p: usize| self.commits[p].short();
        let names = |ps: &[usize]| ps.iter().map(|&p| name(p)).collect::<Vec<_>>().join(", ");
        let line = match what {
            Doing::Build(ps) => format!("build {}", names(ps)),
            Doing::Measure { pos, runs } => format!(
                "measure {} ({runs} run{})",
                name(pos),
                if runs == 1 { "" } else { "s" }
            ),
            Doing::Window { positions, runs } => format!(
                "measure {} side by side ({} each)",
                names(positions),
                crate::base::text::count(runs, "interleaved run")
            ),
            Doing::Verify {
                parent,
                culprit,
                runs,
            } => format!(
                "verify {} against its parent {} ({} each)",
                name(culprit),
                name(parent),
                crate::base::text::count(runs, "interleaved run")
            ),
        };
        self.ws().note(&format!("perfbisect: {line}"));
    }
}

impl WorkspaceLab<'_, '_> {
    /// Run `f` (a measurement), with the builds asked for by [`Lab::build_beside`] going on
    /// beside it on another thread (worktree builds need no part of the measurement), and keep
    /// what they built for [`Lab::take_beside`].
    fn with_beside<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let set = std::mem::take(&mut self.ahead);
        if set.is_empty() {
            return self.with_checks(f);
        }
        let ids: Vec<gix::ObjectId> = set.iter().map(|&p| self.commits[p].id).collect();
        let job = self
            .bench
            .builds_beside(ids, self.ahead_jobs, &self.why_parallel);
        let (res, built) = std::thread::scope(|scope| {
            let h = scope.spawn(move || job.run());
            let res = f(self);
            (res, h.join())
        });
        let (out, took) = built.map_err(|_| anyhow::anyhow!("a build thread panicked"))?;
        let outcomes = out?;
        let n = outcomes.iter().filter(|o| !o.interrupted).count();
        let done: Vec<(usize, bool)> = set
            .iter()
            .map(|&p| (p, self.artifacts(p).is_some()))
            .collect();
        self.beside = (done, n, took);
        res
    }

    /// Run `f` (a measurement), with the pristine checks asked for by [`Lab::check_beside`]
    /// going on beside it, one after another on another thread (each rebuilds in the
    /// worktree its build was made in; nothing else builds now): the builds the verdict will
    /// stand on are checked while the last probes and the verification run, not after.
    fn with_checks<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let asked = std::mem::take(&mut self.to_check);
        let mut ids = Vec::new();
        for p in asked {
            let id = self.commits[p].id;
            if self.bench.unchecked(&id) && self.check_asked.insert(p) {
                ids.push(id);
            }
        }
        if ids.is_empty() {
            return f(self);
        }
        let job = self.bench.checks_beside(ids, &self.why_parallel);
        let (res, checked) = std::thread::scope(|scope| {
            let h = scope.spawn(move || job.run());
            let res = f(self);
            (res, h.join())
        });
        let checked = checked.map_err(|_| anyhow::anyhow!("a pristine check thread panicked"))?;
        let (n, took) = self.bench.settle_checks(checked);
        self.checks.0 += n;
        self.checks.1 += took;
        res
    }

    /// Add the wall time of `runs` (each run's own process) to what a run costs.
    fn count_walls(&mut self, runs: &[crate::store::Sample]) {
        for r in runs.iter().filter(|r| r.wall > 0.0 && r.wall.is_finite()) {
            self.walls.0 += r.wall;
            self.walls.1 += 1;
        }
    }

    fn measure_now(&mut self, pos: usize, runs: usize) -> anyhow::Result<Vec<f64>> {
        let art = self
            .artifacts(pos)
            .ok_or_else(|| anyhow::anyhow!("{} is not built", self.commits[pos].short()))?;
        // Built just now and byte-identical to a commit with samples: those stand in for runs.
        if let Some((twin, vals)) = self.identical_build_samples(pos) {
            self.runs_saved += runs;
            self.stood_in += vals.len();
            self.shared.push((pos, twin));
            if self.ws().verbosity.verbose > 0 {
                self.ws().progress.println(&format!(
                    "{} {}: same build as {} (byte-identical artifacts): its {} samples are used",
                    self.commits[pos].short(),
                    self.commits[pos].subject,
                    crate::git::short(&twin),
                    vals.len()
                ));
            }
            return Ok(vals);
        }
        let c = &self.commits[pos];
        self.bar.set_message(format!(
            "{} {} ({runs} run{})",
            c.short(),
            c.subject,
            if runs == 1 { "" } else { "s" }
        ));
        self.bar.inc_length(runs as u64);
        let bar = self.bar.clone();
        let doing = |k: usize| format!("measuring {} (run {} of {runs})", c.short(), k + 1);
        let beat = self.ws().progress.heartbeat(doing(0));
        let mut k = 0;
        let got = self.bench.measure(c.id, &art, runs, &mut |_| {
            bar.inc(1);
            k += 1;
            beat.set(doing(k));
        })?;
        drop(beat);
        self.count_walls(&got);
        if let Some(e) = got.iter().rev().find_map(|s| s.error.clone()) {
            self.last_error.insert(pos, e);
        }
        let vals = values(&got);
        self.fresh
            .entry(crate::store::commit_key(&c.id))
            .or_default()
            .extend(&vals);
        if self.step_lines() {
            let fin: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
            let med = crate::stats::median(&fin).unwrap_or(f64::NAN);
            self.ws().progress.println(&format!(
                "perfbisect: probed {} {}: {}, median {}",
                c.short(),
                c.subject,
                crate::base::text::count(vals.len(), "run"),
                self.quantity(med)
            ));
        }
        Ok(vals)
    }

    fn measure_window_now(
        &mut self,
        positions: &[usize],
        runs: usize,
        window: Option<(u64, u32)>,
    ) -> anyhow::Result<Measured> {
        let mut arts = Vec::with_capacity(positions.len());
        for &p in positions {
            match self.artifacts(p) {
                Some(a) => arts.push((self.commits[p].id, a)),
                None => anyhow::bail!(
                    "{} is not built, but a window asked for it",
                    self.commits[p].short()
                ),
            }
        }
        let names: Vec<String> = positions
            .iter()
            .map(|&p| self.commits[p].short().to_string())
            .collect();
        self.bar.set_message(format!(
            "{} side by side ({} each)",
            names.join(", "),
            crate::base::text::count(runs, "interleaved run")
        ));
        self.bar.inc_length((positions.len() * runs) as u64);
        let bar = self.bar.clone();
        let first_moment = window.map_or(0, |(_, m)| m);
        let all = positions.len() * runs;
        let doing = |k: usize| {
            format!(
                "measuring {} side by side (run {} of {all})",
                crate::base::progress::listed(&names),
                k + 1
            )
        };
        let beat = self.ws().progress.heartbeat(doing(0));
        let mut k = 0;
        let (id, got, done) =
            self.bench
                .measure_window(&arts, runs, window, self.parallel, &mut |_| {
                    bar.inc(1);
                    k += 1;
                    beat.set(doing(k));
                })?;
        drop(beat);
        for g in &got {
            self.count_walls(g);
        }
        let mut values_out = Vec::with_capacity(positions.len());
        for (i, &p) in positions.iter().enumerate() {
            if let Some(e) = got[i].iter().rev().find_map(|s| s.error.clone()) {
                self.last_error.insert(p, e);
            }
            let vals = values(&got[i]);
            self.fresh
                .entry(crate::store::commit_key(&self.commits[p].id))
                .or_default()
                .extend(&vals);
            values_out.push(vals);
        }
        self.windows += 1;
        self.window_runs += done.runs;
        if self.parallel > 1 && positions.len() > 1 {
            self.overlapped += done.runs;
        }
        if self.step_lines() {
            let meds: Vec<String> = positions
                .iter()
                .zip(&values_out)
                .map(|(&p, v)| {
                    let fin: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
                    format!(
                        "{} {}",
                        self.commits[p].short(),
                        self.quantity(crate::stats::median(&fin).unwrap_or(f64::NAN))
                    )
                })
                .collect();
            self.ws().progress.println(&format!(
                "perfbisect: side by side, {} each: medians {}",
                crate::base::text::count(runs, "interleaved run"),
                meds.join(", ")
            ));
        }
        Ok(Measured {
            window: id,
            first_moment,
            rounds: done.rounds as u32,
            values: values_out,
        })
    }
}

/// Where the search placed a probe, in one vocabulary: at a level ("old-like", "new-like"),
/// between the levels, beyond one of them (a median past both is not between them), or
/// still unknown.
fn placed_words(d: &crate::bisect::Decision) -> String {
    use crate::bisect::Placed;
    match d.placed {
        Placed::OldLike => "old-like".to_string(),
        Placed::NewLike => "new-like".to_string(),
        Placed::Between if d.probe < d.old.min(d.new) || d.probe > d.old.max(d.new) => {
            format!(
                "beyond the {} level (a second step: both sides are searched)",
                if (d.probe - d.new).abs() < (d.probe - d.old).abs() {
                    "new"
                } else {
                    "old"
                }
            )
        }
        Placed::Between => {
            "between the levels (a second step: both sides are searched)".to_string()
        }
        Placed::Unknown { more_runs: true } => "still unknown; more runs".to_string(),
        Placed::Unknown { more_runs: false } => {
            format!(
                "still unknown after {}; given up",
                crate::base::text::count(d.runs, "run")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::placed_words;
    use crate::bisect::{Decision, Placed};

    fn words(placed: Placed, old: f64, probe: f64, new: f64) -> String {
        placed_words(&Decision {
            pos: 1,
            placed,
            old,
            probe,
            new,
            runs: 5,
        })
    }

    #[test]
    fn a_probe_is_between_the_levels_only_when_it_lies_between_them() {
        assert!(words(Placed::Between, 100.0, 104.0, 110.0).starts_with("between the levels"));
        // Past the new level, up or down: beyond it.
        assert!(words(Placed::Between, 100.0, 125.0, 110.0).starts_with("beyond the new level"));
        assert!(words(Placed::Between, 110.0, 90.0, 100.0).starts_with("beyond the new level"));
        assert!(words(Placed::Between, 100.0, 95.0, 110.0).starts_with("beyond the old level"));
        assert_eq!(words(Placed::OldLike, 100.0, 100.5, 110.0), "old-like");
        assert_eq!(words(Placed::NewLike, 100.0, 109.0, 110.0), "new-like");
    }
}
