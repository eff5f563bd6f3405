//! The one driver loop: it performs what a search policy asks for on a [`Lab`] (build, measure,
//! re-run interleaved), feeds the answers back, and stops on Ctrl-C. `find`, `step` and the
//! simulation of the tests all run through it, so failed runs, unbuildable commits and
//! interrupts are handled the same way everywhere.

use std::time::{Duration, Instant};

use super::types::{Action, Outcome, Stored};
use crate::base::interrupt::Interrupted;

/// The answer to a window of runs: its id, the moment its first round got, how many rounds
/// ran, and the runs of each position asked for (NaN for failed ones), in the order asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    pub window: u64,
    pub first_moment: u32,
    pub rounds: u32,
    pub values: Vec<Vec<f64>>,
}

/// What a search needs from the world, by position (0 = the old end).
pub trait Lab {
    /// Build every position of `set` that is not built yet, up to `jobs` at once; builds may
    /// run in parallel, but never while something is measured. Returns, in the order of `set`,
    /// whether each is built now, and how many builds ran (cached ones did not).
    fn build(&mut self, set: &[usize], jobs: usize) -> anyhow::Result<(Vec<bool>, usize)>;
    /// Whether `pos` is built already (a cost hint: probing it is cheap).
    fn cached(&self, pos: usize) -> bool;
    /// Whether `pos` is known not to build (an earlier build failed).
    fn unbuildable(&self, pos: usize) -> bool;
    /// Samples stored for `pos` before this search, with their windows; NaN for runs that
    /// gave no number.
    fn stored(&self, pos: usize) -> Vec<Stored>;
    /// Run the test `runs` times on built `pos`, back to back, each result stored before the
    /// next run; NaN for a run that gave no number.
    fn measure(&mut self, pos: usize, runs: usize) -> anyhow::Result<Vec<f64>>;
    /// Run built `positions` side by side: `runs` interleaved rounds, one run of each per
    /// round, in `window` (id, first moment) or a new one; a position whose test keeps
    /// failing gets no more runs.
    fn measure_window(
        &mut self,
        positions: &[usize],
        runs: usize,
        window: Option<(u64, u32)>,
    ) -> anyhow::Result<Measured>;
    /// Whether commits may build while this lab measures (a metric the machine's load does
    /// not move: Cachegrind counts, declared deterministic values). Default: no.
    fn builds_beside(&self) -> bool {
        false
    }
    /// Build `set` while the next measurement runs (only asked when [`Lab::builds_beside`]).
    fn build_beside(&mut self, _set: &[usize], _jobs: usize) {}
    /// The builds made beside the last measurement: each position and whether it is built
    /// now, how many builds ran, and their wall time.
    fn take_beside(&mut self) -> (Vec<(usize, bool)>, usize, Duration) {
        (Vec::new(), 0, Duration::ZERO)
    }
    /// Check `set` (built positions the verdict will likely stand on) against pristine
    /// rebuilds while the next measurement runs (only asked when [`Lab::builds_beside`] and
    /// nothing builds beside it).
    fn check_beside(&mut self, _set: &[usize]) {}
    /// The pristine checks made beside the last measurement: how many rebuilt, and their wall
    /// time.
    fn take_checks(&mut self) -> (usize, Duration) {
        (0, Duration::ZERO)
    }
    /// Seconds one build of `pos` took (this search's build, or the one the cache keeps),
    /// when known: the time budget of a decision still in doubt ([`Policy::set_run_budget`]).
    fn build_secs(&self, _pos: usize) -> Option<f64> {
        None
    }
    /// Seconds one run has taken so far, on average (what a run costs against a build).
    fn run_secs(&self) -> Option<f64> {
        None
    }
    /// Ctrl-C was pressed: the driver stops before the next step.
    fn interrupted(&self) -> bool;
    /// Progress: what the driver is about to do (for a progress bar or `-v`).
    fn status(&mut self, _what: Doing<'_>) {}
    /// Progress: what the search concluded about a probe (said after its runs' medians).
    fn decided(&mut self, _what: &Decision) {}
}

/// Where a search placed a probe once its runs were compared with the levels around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Placed {
    OldLike,
    NewLike,
    /// At neither level: a level between two steps, so both sides are searched.
    Between,
    /// Not placed: `more_runs` when more are being taken, else given up on (stepped around,
    /// or the sub-range ends inconclusive).
    Unknown {
        more_runs: bool,
    },
}

/// A probe the search just placed (or could not place yet), with the medians it compared: of
/// the commits at the old level beside it, of its own runs, of those at the new level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub pos: usize,
    pub placed: Placed,
    pub old: f64,
    pub probe: f64,
    pub new: f64,
    /// The probe's runs compared.
    pub runs: usize,
}

/// What the driver is about to do, by position, for [`Lab::status`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Doing<'a> {
    Build(&'a [usize]),
    Measure {
        pos: usize,
        runs: usize,
    },
    Window {
        positions: &'a [usize],
        runs: usize,
    },
    Verify {
        parent: usize,
        culprit: usize,
        runs: usize,
    },
}

/// The search side of the loop: `Search` for `find`, `StepSearch` for `step`.
pub trait Policy {
    /// The next thing to do; [`Action::Done`] ends the loop.
    fn next_action(&mut self) -> Action;
    /// Samples of `pos` taken back to back (stored or new); NaN for failed runs.
    fn add_samples(&mut self, pos: usize, samples: &[f64]);
    /// Stored samples of `pos` with their windows.
    fn add_stored(&mut self, pos: usize, samples: &[Stored]) {
        let values: Vec<f64> = samples.iter().map(|s| s.value).collect();
        self.add_samples(pos, &values);
    }
    /// The answer to an [`Action::Window`].
    fn add_window(
        &mut self,
        window: u64,
        first_moment: u32,
        rounds: u32,
        values: &[(usize, Vec<f64>)],
    );
    /// `pos` cannot be built.
    fn mark_unbuildable(&mut self, pos: usize);
    /// `pos` is built (cached).
    fn mark_built(&mut self, pos: usize);
    /// The answer to an [`Action::Verify`], taken in `window`.
    fn record_verify(&mut self, window: u64, old: &[f64], new: &[f64]);
    /// When `pos` must be built: the positions worth building in the same round, `pos` first,
    /// at most `jobs` of them.
    fn build_set(&self, pos: usize, jobs: usize) -> Vec<usize> {
        let _ = jobs;
        vec![pos]
    }
    /// The positions worth building while the current probe is measured (see
    /// [`crate::bisect::Search::speculative`]); none by default.
    fn speculative(&self, _jobs: usize) -> Vec<usize> {
        Vec::new()
    }
    /// The built positions a verdict will likely stand on (see
    /// [`crate::bisect::Search::verdict_builds`]); none by default.
    fn verdict_builds(&self) -> Vec<usize> {
        Vec::new()
    }
    /// The probes placed (or found still unknown) since the last call, in order.
    fn take_decisions(&mut self) -> Vec<Decision> {
        Vec::new()
    }
    /// The runs of `pos` that take as long as one build of it: how far a decision whose
    /// evidence still straddles the threshold may go (the time budget). Ignored where the
    /// budget is fixed (`Params::max_runs`).
    fn set_run_budget(&mut self, _pos: usize, _runs: usize) {}
}

/// Tell `policy` the time budget of each of `positions` (the runs that take as long as its
/// build), once the lab knows what a run and the build cost.
fn budgets(policy: &mut dyn Policy, lab: &dyn Lab, positions: &[usize]) {
    let Some(run) = lab.run_secs().filter(|s| *s > 0.0 && s.is_finite()) else {
        return;
    };
    for &p in positions {
        if let Some(build) = lab.build_secs(p).filter(|s| *s > 0.0 && s.is_finite()) {
            let runs = (build / run).floor().min(super::types::MAX_BUDGET as f64);
            policy.set_run_budget(p, runs as usize);
        }
    }
}

/// What a driven search did, besides its outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Driven {
    /// Builds performed (cached commits not counted; unneeded speculative ones are).
    pub builds: usize,
    /// Rounds of builds, each waited for as a whole: the sequential cost of building.
    pub build_rounds: usize,
    /// Most builds asked for in one round (they run in parallel up to `jobs`).
    pub most_parallel: usize,
    /// Runs performed, verification re-runs included.
    pub runs: usize,
    /// Stored samples the search started from.
    pub reused: usize,
    /// Wall time in builds and in measurements.
    pub building: Duration,
    pub measuring: Duration,
    /// Of that, the time builds ran beside a measurement (counted in both).
    pub overlap: Duration,
    /// Positions built ahead, beside a measurement, for what the search might ask next.
    pub ahead: Vec<usize>,
    /// Positions this search built, in rounds it waited for (the probe and, with `jobs` above
    /// 1, the k-ary points beside it) or ahead: failed builds are not among them.
    pub built: Vec<usize>,
    /// Positions the search measured (probes, the commits beside them, the verification's).
    pub measured: Vec<usize>,
    /// Pristine rebuilds that checked the verdict's builds beside a measurement, and their
    /// wall time (counted in `overlap` too, up to the measurement's).
    pub checks: usize,
    pub checking: Duration,
}

impl Driven {
    /// Positions this search built (ahead or in a round) but never measured: builds it did
    /// not need, kept in the cache for the next search.
    pub fn unmeasured(&self) -> usize {
        let mut ps: Vec<usize> = self
            .built
            .iter()
            .copied()
            .filter(|p| !self.measured.contains(p))
            .collect();
        ps.sort_unstable();
        ps.dedup();
        ps.len()
    }
}

/// Run `policy` to its end on `lab` (positions `0..len`), building up to `jobs` commits at once.
/// Stored samples and cached builds are fed in first. Returns the outcome and what it cost;
/// Ctrl-C gives an [`Interrupted`] error (exit 128 + the signal, 130 for Ctrl-C; everything measured is stored).
pub fn drive(
    policy: &mut dyn Policy,
    lab: &mut dyn Lab,
    len: usize,
    jobs: usize,
) -> anyhow::Result<(Outcome, Driven)> {
    let jobs = jobs.max(1);
    let mut d = Driven::default();
    let mut ready = vec![false; len];
    for (pos, r) in ready.iter_mut().enumerate() {
        let stored = lab.stored(pos);
        if !stored.is_empty() {
            d.reused += stored.len();
            policy.add_stored(pos, &stored);
        }
        if lab.cached(pos) {
            *r = true;
            policy.mark_built(pos);
        } else if lab.unbuildable(pos) {
            policy.mark_unbuildable(pos);
        }
    }
    loop {
        if lab.interrupted() {
            return Err(Interrupted.into());
        }
        let action = policy.next_action();
        // Decided while choosing this action: said before it is performed.
        for decision in policy.take_decisions() {
            lab.decided(&decision);
        }
        match action {
            Action::Done(o) => return Ok((o, d)),
            Action::Measure { pos, runs } => {
                if !ready[pos] {
                    let set = policy.build_set(pos, jobs);
                    build_round(policy, lab, &set, jobs, &mut ready, &mut d)?;
                    if !ready[pos] {
                        continue;
                    }
                }
                if lab.interrupted() {
                    return Err(Interrupted.into());
                }
                lab.status(Doing::Measure { pos, runs });
                ahead(policy, lab, &ready, jobs);
                let t = Instant::now();
                d.measured.push(pos);
                let got = lab.measure(pos, runs)?;
                let took = t.elapsed();
                d.measuring += took;
                beside(policy, lab, &mut ready, &mut d, took);
                d.runs += got.len();
                policy.add_samples(pos, &got);
                budgets(policy, lab, &[pos]);
            }
            Action::Window {
                positions,
                runs,
                window,
            } => {
                let missing: Vec<usize> =
                    positions.iter().copied().filter(|&p| !ready[p]).collect();
                if let Some(&first) = missing.first() {
                    // The probe's round of builds, plus whatever else of the window lacks one.
                    let mut set = policy.build_set(first, jobs);
                    for p in missing {
                        if !set.contains(&p) {
                            set.push(p);
                        }
                    }
                    build_round(policy, lab, &set, jobs, &mut ready, &mut d)?;
                    if positions.iter().any(|&p| !ready[p]) {
                        continue;
                    }
                }
                if lab.interrupted() {
                    return Err(Interrupted.into());
                }
                lab.status(Doing::Window {
                    positions: &positions,
                    runs,
                });
                ahead(policy, lab, &ready, jobs);
                let t = Instant::now();
                d.measured.extend_from_slice(&positions);
                let got = lab.measure_window(&positions, runs, window)?;
                let took = t.elapsed();
                d.measuring += took;
                beside(policy, lab, &mut ready, &mut d, took);
                d.runs += got.values.iter().map(Vec::len).sum::<usize>();
                let values: Vec<(usize, Vec<f64>)> =
                    positions.iter().copied().zip(got.values).collect();
                policy.add_window(got.window, got.first_moment, got.rounds, &values);
                budgets(policy, lab, &positions);
            }
            Action::Verify {
                parent,
                culprit,
                runs,
            } => {
                let missing: Vec<usize> = [parent, culprit]
                    .into_iter()
                    .filter(|&p| !ready[p])
                    .collect();
                if !missing.is_empty() {
                    build_round(policy, lab, &missing, jobs, &mut ready, &mut d)?;
                }
                if !ready[parent] || !ready[culprit] {
                    // Asked to re-run a commit that does not build: tell the policy.
                    policy.record_verify(0, &[], &[]);
                    continue;
                }
                if lab.interrupted() {
                    return Err(Interrupted.into());
                }
                lab.status(Doing::Verify {
                    parent,
                    culprit,
                    runs,
                });
                ahead(policy, lab, &ready, jobs);
                let t = Instant::now();
                d.measured.extend([parent, culprit]);
                let got = lab.measure_window(&[parent, culprit], runs, None)?;
                let took = t.elapsed();
                d.measuring += took;
                beside(policy, lab, &mut ready, &mut d, took);
                d.runs += got.values.iter().map(Vec::len).sum::<usize>();
                let mut v = got.values.into_iter();
                let (a, b) = (v.next().unwrap_or_default(), v.next().unwrap_or_default());
                policy.record_verify(got.window, &a, &b);
                budgets(policy, lab, &[parent, culprit]);
            }
        }
    }
}

/// Ask the lab to build, beside the measurement about to start, what the search may probe
/// next (when it may: a metric the load does not move, more than one job).
fn ahead(policy: &dyn Policy, lab: &mut dyn Lab, ready: &[bool], jobs: usize) {
    if jobs < 2 || !lab.builds_beside() {
        return;
    }
    let set: Vec<usize> = policy
        .speculative(jobs)
        .into_iter()
        .filter(|&p| !ready[p] && !lab.unbuildable(p))
        .collect();
    if !set.is_empty() {
        lab.build_beside(&set, jobs);
        return;
    }
    // Nothing to build ahead: the other core checks the builds the verdict will stand on.
    let check = policy.verdict_builds();
    if !check.is_empty() {
        lab.check_beside(&check);
    }
}

/// What was built beside the measurement that took `took`: ready for the search, counted.
fn beside(
    policy: &mut dyn Policy,
    lab: &mut dyn Lab,
    ready: &mut [bool],
    d: &mut Driven,
    took: Duration,
) {
    let (checks, checking) = lab.take_checks();
    d.checks += checks;
    d.checking += checking;
    d.overlap += checking.min(took);
    let (built, n, secs) = lab.take_beside();
    if built.is_empty() {
        return;
    }
    d.builds += n;
    d.building += secs;
    d.overlap += secs.min(took);
    for (p, ok) in built {
        d.ahead.push(p);
        if ok {
            d.built.push(p);
            ready[p] = true;
            policy.mark_built(p);
        } else {
            policy.mark_unbuildable(p);
        }
    }
}

fn build_round(
    policy: &mut dyn Policy,
    lab: &mut dyn Lab,
    set: &[usize],
    jobs: usize,
    ready: &mut [bool],
    d: &mut Driven,
) -> anyhow::Result<()> {
    let set: Vec<usize> = set.iter().copied().filter(|&p| !ready[p]).collect();
    if set.is_empty() {
        return Ok(());
    }
    lab.status(Doing::Build(&set));
    let t = Instant::now();
    let (ok, builds) = lab.build(&set, jobs)?;
    d.building += t.elapsed();
    d.builds += builds;
    d.build_rounds += 1;
    d.most_parallel = d.most_parallel.max(set.len().min(jobs));
    if lab.interrupted() {
        return Err(Interrupted.into());
    }
    for (&p, &built) in set.iter().zip(&ok) {
        if built {
            d.built.push(p);
            ready[p] = true;
            policy.mark_built(p);
        } else {
            policy.mark_unbuildable(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::sim::World;
    use super::super::{Params, Search};
    use super::*;

    #[test]
    fn the_lab_hears_where_each_probe_was_placed() {
        // A 5 % step at position 6 of 0..=12, 0.5 % noise.
        let levels: Vec<f64> = (0..=12)
            .map(|p| if p >= 6 { 1050.0 } else { 1000.0 })
            .collect();
        let mut world = World::new(levels, 0.005, 7);
        let mut search = Search::new(13, Params::default());
        let (outcome, _) = drive(&mut search, &mut world, 13, 1).unwrap();
        assert!(
            matches!(outcome, Outcome::Culprits(ref cs) if cs[0].pos == 6),
            "{outcome:?}"
        );
        assert!(!world.decided.is_empty());
        for d in &world.decided {
            match d.placed {
                Placed::OldLike => assert!(d.pos < 6, "{d:?}"),
                Placed::NewLike => assert!(d.pos >= 6, "{d:?}"),
                _ => {}
            }
            assert!(
                (d.old - 1000.0).abs() < 20.0 && (d.new - 1050.0).abs() < 20.0,
                "{d:?}"
            );
            assert!(d.runs >= 5, "{d:?}");
        }
        // Every probe but the culprit's neighbours was placed once, each on its side.
        let placed: Vec<usize> = world
            .decided
            .iter()
            .filter(|d| matches!(d.placed, Placed::OldLike | Placed::NewLike))
            .map(|d| d.pos)
            .collect();
        let mut unique = placed.clone();
        unique.dedup();
        assert_eq!(placed, unique, "{:?}", world.decided);
        assert!(placed.contains(&5) || placed.contains(&6), "{placed:?}");
    }

    #[test]
    fn the_builds_a_verdict_stands_on_are_checked_beside_the_last_measurements() {
        // An exact step at position 9 of 0..=16: before the verdict, the lab is asked to
        // check the parent's and the culprit's builds beside a measurement.
        let levels: Vec<f64> = (0..=16)
            .map(|p| if p >= 9 { 120.0 } else { 100.0 })
            .collect();
        let mut lab = World::new(levels, 0.0, 3);
        lab.counted = true;
        let params = Params {
            deterministic: true,
            ..Params::default()
        };
        let mut search = Search::new(17, params);
        let (outcome, _) = drive(&mut search, &mut lab, 17, 2).unwrap();
        assert!(
            matches!(outcome, Outcome::Culprits(ref cs) if cs[0].pos == 9),
            "{outcome:?}"
        );
        assert!(
            lab.checked.iter().any(|s| s.contains(&8) && s.contains(&9)),
            "{:?}",
            lab.checked
        );
        // Only builds the verdict is sure to stand on: never a commit it then passes over.
        for set in &lab.checked {
            assert!(set.iter().all(|&p| p == 8 || p == 9), "{set:?}");
        }
    }
}
