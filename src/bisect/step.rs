//! The policy behind `perfbisect step` (for `git bisect run`): measure the commit under test
//! (position 1) and the old end (0), and the new end (2) when given, until [`classify`] can
//! tell, doubling the runs up to `max_repeats` and on up to the budget (the runs that take as
//! long as one build, or `--max-runs`); then [`decide`] places it on the nearer level, so a
//! commit that was measured is always 0 or 1 and only one that cannot be built or run is a
//! skip (125). A noisy test measures them side by side, in
//! one window of interleaved rounds of this step's own (what earlier steps measured was taken
//! at other times); a deterministic one uses stored runs as they are. It runs through the
//! same driver as `find`.

use super::classify::*;
use super::driver::*;
use super::types::*;

/// Positions of a step search.
pub const OLD: usize = 0;
/// The commit under test (HEAD during `git bisect`).
pub const PROBE: usize = 1;
/// The new end, when known.
pub const NEW: usize = 2;

/// What `step` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum StepVerdict {
    /// Old-like or new-like (unknown only when a side gave no number to compare).
    Class(Class),
    /// The commit under test cannot be built or measured: `git bisect` should skip it.
    Skip(String),
    /// An end cannot be built or measured: the bisect must stop rather than go astray.
    Fatal(String),
}

/// `step` as a [`Policy`].
#[derive(Debug, Clone)]
pub struct StepSearch {
    params: Params,
    with_new: bool,
    samples: [Vec<f64>; 3],
    /// Runs of this step's window, per position (noisy tests).
    win: [Vec<f64>; 3],
    window: Option<(u64, u32)>,
    unbuildable: [bool; 3],
    built: [bool; 3],
    /// The runs of each position that take as long as its build, once known.
    budgets: [Option<usize>; 3],
    /// The new side may be dropped ([`StepSearch::new_side_optional`]).
    new_optional: bool,
    /// Placed by the nearer level, every run of the budget spent: how, for the message.
    by_level: Option<String>,
    verdict: Option<StepVerdict>,
}

impl StepSearch {
    /// A step over the old end, the probe and, if `with_new`, the new end.
    pub fn new(params: Params, with_new: bool) -> StepSearch {
        StepSearch {
            params: params.sanitized(),
            with_new,
            samples: Default::default(),
            win: Default::default(),
            window: None,
            unbuildable: [false; 3],
            built: [false; 3],
            budgets: [None; 3],
            new_optional: false,
            by_level: None,
            verdict: None,
        }
    }

    /// The new side came from `git bisect` (its bad commit), not from `--new`: when it cannot
    /// be built or measured, the step goes on against the old side alone instead of failing.
    pub fn new_side_optional(&mut self) {
        self.new_optional = true;
    }

    /// When the runs of the whole budget could not tell and the answer is the nearer level:
    /// what it was placed by, for the message.
    pub fn placed_by_level(&self) -> Option<String> {
        self.by_level.clone()
    }

    /// Number of positions the driver works on.
    pub fn len(&self) -> usize {
        if self.with_new {
            3
        } else {
            2
        }
    }

    /// Never empty: the old end and the probe.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The answer, once the driver is done.
    pub fn verdict(&self) -> Option<&StepVerdict> {
        self.verdict.as_ref()
    }

    /// Every run of `pos` so far (NaN for failed ones).
    pub fn samples(&self, pos: usize) -> &[f64] {
        &self.samples[pos]
    }

    fn done(&mut self, v: StepVerdict) -> Action {
        self.verdict = Some(v);
        Action::Done(Outcome::Inconclusive {
            reason: "step".into(),
            best_guess: None,
        })
    }

    /// Failed runs in a row at the end of `pos`'s runs reach the limit.
    fn failing(&self, pos: usize) -> bool {
        let limit = self.params.repeats.max(2);
        self.samples[pos]
            .iter()
            .rev()
            .take_while(|v| !v.is_finite())
            .count()
            >= limit
    }

    /// Side by side: a noisy test with interleaving on.
    fn windowed(&self) -> bool {
        self.params.interleave && !self.params.deterministic
    }

    /// The positions of a window: the probe, then the ends.
    fn positions(&self) -> Vec<usize> {
        std::iter::once(PROBE).chain(self.ends()).collect()
    }

    /// The noisy step: one window of the probe and the ends, doubled while unknown.
    fn windowed_action(&mut self) -> Action {
        let r = self.params.repeats;
        let max = self.params.max_repeats;
        if self.unbuildable[PROBE] {
            return self.done(StepVerdict::Skip("does not build".into()));
        }
        self.drop_new_if_unusable();
        for e in self.ends() {
            if self.unbuildable[e] {
                let which = if e == OLD { "--old" } else { "--new" };
                return self.done(StepVerdict::Fatal(format!(
                    "the {which} commit does not build"
                )));
            }
        }
        if self.failing(PROBE) {
            return self.done(StepVerdict::Skip(format!(
                "the test failed {} runs in a row",
                self.params.repeats.max(2)
            )));
        }
        for e in self.ends() {
            let which = if e == OLD { "--old" } else { "--new" };
            if self.failing(e) {
                return self.done(StepVerdict::Fatal(format!(
                    "the test fails on every run of the {which} commit"
                )));
            }
        }
        let ps = self.positions();
        let have = ps.iter().map(|&p| self.win[p].len()).min().unwrap_or(0);
        let budget = self.budget();
        let want = if have == 0 {
            r
        } else {
            let (old, new, probe) = self.sides(true);
            let class = classify(&old, new.as_deref(), &probe, &self.params);
            if class != Class::Unknown {
                return self.done(StepVerdict::Class(class));
            }
            // Unknown: doubling up to `max_repeats`, then on up to the budget (runs are cheap
            // next to a build); with every run spent, the nearer level.
            if finite(&probe).len() >= budget || have >= budget {
                return self.placed(true);
            }
            if have < max {
                (2 * have).clamp(r, max)
            } else {
                (2 * have).min(budget)
            }
        };
        if have >= want {
            return self.placed(true);
        }
        Action::Window {
            positions: ps,
            runs: want - have,
            window: self.window,
        }
    }

    /// The most runs a commit of this step gets while it cannot tell: `--max-runs` when
    /// given, else as many as take the time of one build of the commit under test (or of an
    /// end, when its build time is the one known), twice `max_repeats` at least.
    pub fn budget(&self) -> usize {
        let max = self.params.max_repeats;
        if let Some(n) = self.params.max_runs {
            return n.max(max);
        }
        let known = |p: usize| self.budgets[p].filter(|&b| b > 0);
        let timed = known(PROBE).or_else(|| self.ends().into_iter().filter_map(known).min());
        super::window::budget_of(max, timed)
    }

    /// The runs compared: of this step's window (`windowed`), else every run; the old
    /// side's, the new side's when there is one, the probe's.
    fn sides(&self, windowed: bool) -> (Vec<f64>, Option<Vec<f64>>, Vec<f64>) {
        let runs = if windowed { &self.win } else { &self.samples };
        (
            runs[OLD].clone(),
            self.with_new.then(|| runs[NEW].clone()),
            runs[PROBE].clone(),
        )
    }

    /// Every run of the budget spent and the runs still cannot tell: the nearer level
    /// ([`decide`]), said as such.
    fn placed(&mut self, windowed: bool) -> Action {
        let (old, new, probe) = self.sides(windowed);
        let class = decide(&old, new.as_deref(), &probe, &self.params);
        if classify(&old, new.as_deref(), &probe, &self.params) == Class::Unknown {
            let against = if self.with_new {
                "the nearer of the old and new levels"
            } else {
                "nearer no change than a change of the threshold, or not"
            };
            self.by_level = Some(format!(
                "placed by its median after {} runs (the budget) could not tell: {against}",
                probe.len()
            ));
        }
        self.done(StepVerdict::Class(class))
    }

    /// A new side taken from `git bisect` that does not build or keeps failing is left out:
    /// the step goes on against the old side alone.
    fn drop_new_if_unusable(&mut self) {
        if self.with_new && self.new_optional && (self.unbuildable[NEW] || self.failing(NEW)) {
            self.with_new = false;
        }
    }

    fn ends(&self) -> Vec<usize> {
        if self.with_new {
            vec![OLD, NEW]
        } else {
            vec![OLD]
        }
    }

    /// Measure `pos` up to `want` runs; `None` when it has them.
    fn top_up(&self, pos: usize, want: usize) -> Option<Action> {
        let have = self.samples[pos].len();
        (have < want).then(|| Action::Measure {
            pos,
            runs: want - have,
        })
    }
}

impl Policy for StepSearch {
    fn next_action(&mut self) -> Action {
        if let Some(v) = self.verdict.clone() {
            let _ = v;
            return Action::Done(Outcome::Inconclusive {
                reason: "step".into(),
                best_guess: None,
            });
        }
        if self.windowed() {
            return self.windowed_action();
        }
        let r = self.params.repeats;
        if self.unbuildable[PROBE] {
            return self.done(StepVerdict::Skip("does not build".into()));
        }
        if let Some(a) = self.top_up(PROBE, r) {
            return a;
        }
        if self.failing(PROBE) {
            return self.done(StepVerdict::Skip(format!(
                "the test failed {} runs in a row",
                self.params.repeats.max(2)
            )));
        }
        self.drop_new_if_unusable();
        for e in self.ends() {
            let which = if e == OLD { "--old" } else { "--new" };
            if self.unbuildable[e] {
                return self.done(StepVerdict::Fatal(format!(
                    "the {which} commit does not build"
                )));
            }
            if let Some(a) = self.top_up(e, r) {
                return a;
            }
            if finite(&self.samples[e]).is_empty() || self.failing(e) {
                return self.done(StepVerdict::Fatal(format!(
                    "the test fails on every run of the {which} commit"
                )));
            }
        }
        let (old, new, probe) = self.sides(false);
        let class = classify(&old, new.as_deref(), &probe, &self.params);
        // A deterministic test's runs say all they can at once; a noisy one goes on up to
        // the budget.
        let cap = if self.params.deterministic {
            self.params.max_repeats
        } else {
            self.budget()
        };
        if class != Class::Unknown {
            return self.done(StepVerdict::Class(class));
        }
        if probe.len() >= cap {
            return self.placed(false);
        }
        // Unknown: double the probe's runs (up to the cap), and keep the ends as large: first
        // finish a round begun, then start the next.
        let all: Vec<usize> = std::iter::once(PROBE).chain(self.ends()).collect();
        let top = all
            .iter()
            .map(|&p| self.samples[p].len())
            .max()
            .unwrap_or(0);
        let max = self.params.max_repeats;
        let want = if all.iter().any(|&p| self.samples[p].len() < top) {
            top.min(cap)
        } else if probe.len() < max {
            (probe.len() * 2).clamp(r, max)
        } else {
            (probe.len() * 2).min(cap)
        };
        for p in all {
            if let Some(a) = self.top_up(p, want) {
                return a;
            }
        }
        self.placed(false)
    }

    fn add_samples(&mut self, pos: usize, samples: &[f64]) {
        if let Some(s) = self.samples.get_mut(pos) {
            s.extend_from_slice(samples);
        }
    }

    fn add_stored(&mut self, pos: usize, samples: &[Stored]) {
        // Taken at other times: a noisy step measures its own window; a deterministic one
        // uses them as they are.
        if !self.windowed() {
            let values: Vec<f64> = samples.iter().map(|s| s.value).collect();
            self.add_samples(pos, &values);
        }
    }

    fn add_window(
        &mut self,
        window: u64,
        first_moment: u32,
        rounds: u32,
        values: &[(usize, Vec<f64>)],
    ) {
        self.window = Some((window, first_moment.saturating_add(rounds)));
        for (pos, v) in values {
            if let Some(w) = self.win.get_mut(*pos) {
                w.extend_from_slice(v);
            }
            self.add_samples(*pos, v);
        }
    }

    fn mark_unbuildable(&mut self, pos: usize) {
        if let Some(u) = self.unbuildable.get_mut(pos) {
            *u = true;
        }
    }

    fn mark_built(&mut self, pos: usize) {
        if let Some(b) = self.built.get_mut(pos) {
            *b = true;
        }
    }

    fn record_verify(&mut self, _window: u64, _old: &[f64], _new: &[f64]) {}

    fn set_run_budget(&mut self, pos: usize, runs: usize) {
        if let Some(b) = self.budgets.get_mut(pos) {
            *b = Some(runs);
        }
    }

    /// Everything a step will need, built in one round.
    fn build_set(&self, pos: usize, jobs: usize) -> Vec<usize> {
        let mut out = vec![pos];
        for p in [PROBE, OLD, NEW] {
            if p < self.len() && !out.contains(&p) && !self.built[p] && !self.unbuildable[p] {
                out.push(p);
            }
        }
        out.truncate(jobs.max(1));
        out
    }
}
