//! The search's state: positions and their samples, the windows of time they were measured
//! in, the phase, and the hunt over sub-ranges. The files beside it (`search`, `window`,
//! `verify`, `culprit`) each add their part of `impl Search`.

use std::collections::BTreeMap;

use super::types::*;

/// The bisection state machine. Create one per search with [`Search::new`], feed it stored
/// samples, then loop over [`Search::next_action`].
#[derive(Debug, Clone)]
pub struct Search {
    pub(super) params: Params,
    pub(super) build_cost: f64,
    pub(super) points: Vec<Point>,
    /// Every window of time samples of these positions were taken in, oldest first: a
    /// decision of a noisy search compares only samples of the same windows.
    pub(super) windows: Vec<Win>,
    pub(super) probed: Vec<usize>,
    pub(super) det: bool,
    pub(super) phase: Phase,
    pub(super) hunt: Hunt,
    pub(super) notes: Vec<String>,
    pub(super) stalls: usize,
    /// How reports name each position (short hash and subject); `position N` without them.
    pub(super) labels: Vec<String>,
    /// Runs of one commit were seen to differ: never exact comparisons again.
    pub(super) no_det: bool,
    /// The smallest change the ends' runs could have seen, once the ends were compared.
    pub(super) min_detectable: Option<f64>,
    /// Probes placed since the driver last asked ([`super::driver::Policy::take_decisions`]).
    pub(super) decisions: Vec<super::driver::Decision>,
    /// Windows answered so far ([`Win::touched`]).
    pub(super) answers: usize,
    /// The ends were looked at again beside the first probe (once a search).
    pub(super) ends_rechecked: bool,
    /// Set by the hunt when the ends must be decided again ([`Phase::Ends`]).
    pub(super) redo_ends: bool,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Point {
    /// Finite samples only; `attempts` also counts the runs that gave no number.
    pub(super) samples: Vec<f64>,
    pub(super) attempts: usize,
    /// Failed runs since the last one that gave a number.
    pub(super) fail_streak: usize,
    /// Its test failed `repeats` times in a row: stepped around like an unbuildable commit.
    pub(super) failing: bool,
    pub(super) unbuildable: bool,
    pub(super) built: bool,
    /// Stepped around: unbuildable, or gave no number, or cannot be topped up to a verdict.
    pub(super) skipped: bool,
    /// The runs of it that take as long as its build (0: not known yet): how far a
    /// decision still in doubt may go ([`Search::budget`]).
    pub(super) budget: usize,
}

impl Point {
    pub(super) fn measurable(&self) -> bool {
        !self.unbuildable && !self.skipped && !self.failing
    }

    /// Count runs (NaN = failed) towards the streak of failures; `limit` in a row and the
    /// commit is no longer measured.
    pub(super) fn record(&mut self, runs: &[f64], limit: usize) {
        self.attempts += runs.len();
        for &x in runs {
            if x.is_finite() {
                self.samples.push(x);
                self.fail_streak = 0;
            } else {
                self.fail_streak += 1;
            }
        }
        if self.fail_streak >= limit {
            self.failing = true;
        }
    }
    pub(super) fn usable(&self) -> bool {
        !self.skipped && (!self.unbuildable || !self.samples.is_empty())
    }

    /// It did not build and nothing stored stands in for it.
    fn unbuilt(&self) -> bool {
        self.unbuildable && self.samples.is_empty()
    }
}

impl Search {
    /// Why an inconclusive search never started: the end it had no numbers of because it does
    /// not build. The old end (0), when it has no stored samples; else the new end, when no
    /// commit after the old end builds. `None` for any other outcome: the runs decided, or
    /// could not. A caller says the build's error (exit 1), not an inconclusive verdict.
    pub fn unbuilt_end(&self) -> Option<usize> {
        if !matches!(self.phase, Phase::Done(Outcome::Inconclusive { .. })) {
            return None;
        }
        let (old, rest) = self.points.split_first()?;
        if old.unbuilt() {
            return Some(0);
        }
        (!rest.is_empty() && rest.iter().all(Point::unbuilt)).then(|| self.points.len() - 1)
    }
}

#[derive(Debug, Clone)]
pub(super) enum Phase {
    Ends,
    Hunt,
    Done(Outcome),
}

#[derive(Debug, Clone, Default)]
pub(super) struct Hunt {
    pub(super) active: Option<Segment>,
    /// Sub-ranges found by a between-level probe, searched after the active one.
    pub(super) pending: Vec<Segment>,
    pub(super) found: Vec<Culprit>,
    pub(super) failed: Vec<(String, Option<Culprit>)>,
}

/// A sub-range `(lo, hi]` whose bounds differ: `lo` is old-like, `hi` new-like.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) lo: usize,
    pub(super) hi: usize,
    /// Every commit classified at this sub-range's old (new) level: when a bound cannot be
    /// measured again, the nearest of them that can stands in for it in a probe's window.
    pub(super) olds: Vec<usize>,
    pub(super) news: Vec<usize>,
    /// Direction of the change, so a verification that flips sign does not count.
    pub(super) up: bool,
    /// Made by splitting at a between-level probe: a second step is a priori rare, so its
    /// verification uses the same α/10 as the split.
    pub(super) split: bool,
    /// Times this sub-range backed off ([`MAX_BACKOFFS`]): each probe of it is then
    /// classified on at least twice the first runs.
    pub(super) retries: u32,
    /// The first answer after the last back-off ([`Win::touched`]): a probe is placed again
    /// on windows measured from then on (the earlier runs misled it), 0 before any.
    pub(super) since: usize,
    pub(super) probe: Option<usize>,
    pub(super) stage: Stage,
}

#[derive(Debug, Clone)]
pub(super) enum Stage {
    Bisect,
    Check,
    Verify(Verification),
}

#[derive(Debug, Clone, Default)]
pub(super) struct Verification {
    pub(super) old: Vec<f64>,
    pub(super) new: Vec<f64>,
    pub(super) runs: usize,
    /// Rounds answered so far: each further look at the same data spends a halved α.
    pub(super) rounds: u32,
    pub(super) asked: Option<usize>,
}

pub(super) enum Flow {
    Act(Action),
    Again,
}

pub(super) enum SegFlow {
    Act(Action),
    Again,
    Found(Culprit),
    Failed(String, Option<Culprit>),
}

/// One window of time: a measuring session in which some positions were run side by side
/// (interleaved rounds), or one position's runs back to back.
#[derive(Debug, Clone, Default)]
pub(super) struct Win {
    pub(super) id: u64,
    /// Every run (NaN for a failed one) of each position in this window.
    pub(super) runs: BTreeMap<usize, Vec<f64>>,
    /// Rounds so far: a further pass over the window numbers its rounds from here.
    pub(super) moments: u32,
    /// Opened by this search (so it may be extended now), not found in the store.
    pub(super) fresh: bool,
    /// Positions measured in it themselves (not only through a byte-identical build's runs).
    pub(super) own: std::collections::BTreeSet<usize>,
    /// The answer (counted over this search's [`Search::add_window`] calls, from 1) that last
    /// added runs to it; 0 for a stored window never added to.
    pub(super) touched: usize,
}
