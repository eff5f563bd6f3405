//! The policy behind `perfbisect step` (for `git bisect run`): measure the commit under test
//! (position 1) and the old end (0), and the new end (2) when given, until [`classify`] can
//! tell, doubling the runs up to `max_repeats`. It runs through the same driver as `find`.

use super::classify::finite;
use super::*;

/// Positions of a step search.
pub const OLD: usize = 0;
/// The commit under test (HEAD during `git bisect`).
pub const PROBE: usize = 1;
/// The new end, when known.
pub const NEW: usize = 2;

/// What `step` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum StepVerdict {
    /// Old-like, new-like, or cannot tell after `max_repeats` runs.
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
    unbuildable: [bool; 3],
    built: [bool; 3],
    verdict: Option<StepVerdict>,
}

impl StepSearch {
    /// A step over the old end, the probe and, if `with_new`, the new end.
    pub fn new(params: Params, with_new: bool) -> StepSearch {
        StepSearch {
            params: params.sanitized(),
            with_new,
            samples: Default::default(),
            unbuildable: [false; 3],
            built: [false; 3],
            verdict: None,
        }
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
        let old = &self.samples[OLD];
        let new = self.with_new.then(|| self.samples[NEW].as_slice());
        let probe = &self.samples[PROBE];
        let class = classify(old, new, probe, &self.params);
        if class != Class::Unknown || probe.len() >= self.params.max_repeats {
            return self.done(StepVerdict::Class(class));
        }
        // Unknown: double the probe's runs (up to the cap), and keep the ends as large: first
        // finish a round begun, then start the next.
        let all: Vec<usize> = std::iter::once(PROBE).chain(self.ends()).collect();
        let top = all
            .iter()
            .map(|&p| self.samples[p].len())
            .max()
            .unwrap_or(0);
        let want = if all.iter().any(|&p| self.samples[p].len() < top) {
            top.min(self.params.max_repeats)
        } else {
            (probe.len() * 2).clamp(r, self.params.max_repeats)
        };
        for p in all {
            if let Some(a) = self.top_up(p, want) {
                return a;
            }
        }
        self.done(StepVerdict::Class(Class::Unknown))
    }

    fn add_samples(&mut self, pos: usize, samples: &[f64]) {
        if let Some(s) = self.samples.get_mut(pos) {
            s.extend_from_slice(samples);
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

    fn record_verify(&mut self, _old: &[f64], _new: &[f64]) {}

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
