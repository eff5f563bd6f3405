//! Change-point detection over the runs of commits in commit order: one model, one detector.
//!
//! The model: a run's value (its logarithm, for a positive metric: noise proportional to the
//! level becomes even, steps additive) is its commit's level plus the effect of the window of
//! time it was taken in plus noise. Windows that hold runs of several commits (runs taken side
//! by side) are what separate steps from drift: within one, commits are compared on the same
//! machine state, so a window's effect is estimated from its runs and removed. Identical
//! builds share their runs (each run counted once over the commits that show it), and no step
//! can lie between two commits of one build.
//!
//! The detector (see [`detect_runs`]):
//! 1. every commit's level: the mean of its runs, window effects removed, runs clipped at
//!    ±3 σ around the commit's median (σ of a run from repeats of a commit);
//! 2. each level's variance: σ² over its independent moments plus τ², the commit-to-commit
//!    jitter of builds (from the differences of neighbouring levels, robustly), inflated by
//!    what heavy tails leave; a commit measured once is clipped to ±3 sd of its neighbours;
//! 3. the exact optimal partition of the levels over every position (weighted squared error
//!    plus [`PENALTY`]·ln m per boundary, PELT pruning: no candidates chosen beforehand, no
//!    minimum segment). Where no window ties commits together and at least 10 commits were
//!    measured, a linear drift is fitted with it (kept only when it pays half a boundary's
//!    penalty and its z score is at least 3);
//! 4. each boundary confirmed by a t test of its two neighbouring segments' levels at α, and
//!    by the threshold on the levels of the 10 commits at most next to it (the same step is one
//!    size in every range that holds those commits); the worst failure is merged away and the
//!    rest tested again;
//! 5. boundaries merged away that reach the threshold at p < 5 % are undecided steps, with the
//!    runs a side that would decide them.
//!
//! Exact metrics (every commit's runs equal, the test declared deterministic or values changing
//! rarely) skip the statistics: every change of value that reaches the threshold is a change
//! point at its exact commit, with the two values as its levels.
//!
//! The penalty was calibrated by simulation (`pure_noise_rarely_fires`): Gaussian noise with
//! 1, 3 or 5 runs a commit over 50 to 1,000 commits gives a false change point in under 1 % of
//! series at the default α.

mod confirm;
mod model;
mod point;
mod prefix;
mod segment;

pub use point::{ChangePoint, Detection, Obs, Runs, Undecided};

use confirm::Ctx;
use model::Model;
use prefix::Prefix;

use super::threshold::{rel_change, Threshold};

/// Penalty per boundary, in units of a commit level's variance, times ln(m).
pub const PENALTY: f64 = 2.5;
/// Fewest measured commits over which a linear drift is fitted.
const DRIFT_MIN: usize = 10;

/// Settings of [`detect`]. The defaults: α 0.001, no threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Level of each boundary's local test. Values outside (0, 1) mean the default.
    pub alpha: f64,
    /// Smallest change of the neighbouring levels that counts.
    pub threshold: Threshold,
    /// The metric is declared deterministic (a test's `deterministic = true`): when every
    /// commit's runs are equal, every change of value between consecutive measured commits
    /// that reaches the threshold is a change point at its exact commit, however often the
    /// value changes. Without it the exact path is taken only when values change rarely. A
    /// series whose commits' runs differ is analysed as noisy either way.
    pub deterministic: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.001,
            threshold: Threshold::Relative(0.0),
            deterministic: false,
        }
    }
}

/// Finds the positions where the level of `series` shifts.
///
/// `series[i]` are the values of the i-th commit in commit order, each an independent
/// measurement (may be empty: the commit was not measured). Non-finite values are ignored.
/// The result is sorted by index; each point passed its local test at `opts.alpha` and
/// reaches `opts.threshold`. A change after unmeasured commits is reported at the first
/// measured commit of the new level. Deterministic; never panics.
pub fn detect(series: &[Vec<f64>], opts: &Options) -> Vec<ChangePoint> {
    detect_all(series, opts).points
}

/// [`detect`], and the steps it could not yet decide because their runs are too few (see
/// [`Undecided`]).
pub fn detect_all(series: &[Vec<f64>], opts: &Options) -> Detection {
    detect_runs(Runs::plain(series), opts)
}

/// The detector on runs with their windows of time (see the module documentation).
/// (`runs` is consumed as the model is built: years of cron rows are millions of runs.)
pub fn detect_runs(runs: Runs, opts: &Options) -> Detection {
    let mut model = Model::new(runs);
    let m = model.len();
    if m < 2 {
        return Detection::default();
    }
    let alpha = if opts.alpha > 0.0 && opts.alpha < 1.0 {
        opts.alpha
    } else {
        Options::default().alpha
    };
    if let Some(points) = exact(&model, opts) {
        return Detection {
            points,
            undecided: Vec::new(),
        };
    }
    let Some(var) = model.fit() else {
        return Detection::default();
    };
    let allowed: Vec<bool> = model.joined.iter().map(|j| !j).collect();
    let pen = PENALTY * (m as f64).ln().max(1.0);
    let x: Vec<f64> = (0..m).map(|j| j as f64).collect();
    // Twice: the jitter of commit levels is estimated again within the first pass's segments
    // (differences across steps are no jitter).
    let first = weigh(&model, &var);
    let (cut, _) = segment::optimal(&Prefix::new(&first.0, &first.1), pen, &allowed);
    let Some(var) = model.variances(&cut) else {
        return Detection::default();
    };
    let (y, w) = weigh(&model, &var);
    // A drift is told from a step only over enough commits: two levels are a step, or
    // nothing, never a slope.
    let (slope, bounds) = if model.tied || m < DRIFT_MIN {
        (0.0, segment::optimal(&Prefix::new(&y, &w), pen, &allowed).0)
    } else {
        segment::drift(&y, &w, &x, pen, &allowed)
    };
    let yd: Vec<f64> = y.iter().zip(&x).map(|(v, p)| v - slope * p).collect();
    let pre = Prefix::new(&yd, &w);
    let ctx = Ctx {
        deviation: model.local_deviations(),
        sizes: Prefix::new(&yd, &model.moments()),
        model: &model,
        y: &yd,
        pre,
        alpha,
        threshold: opts.threshold,
        slope,
    };
    let (points, dropped) = ctx.confirm(bounds);
    Detection {
        undecided: ctx.undecided(&points, &dropped),
        points,
    }
}

/// The levels as segmented (a commit measured once clipped to its neighbours) and their
/// weights (inverse variances, inflated by what heavy tails leave).
fn weigh(model: &Model, var: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let y = model::clip_lone(&model.level, var, &model.n, 3.0);
    let inflate = model::tail_inflation(&y, var);
    let w = var.iter().map(|v| 1.0 / (v * inflate)).collect();
    (y, w)
}

/// The exact path: every commit's runs equal and the metric declared deterministic, or every
/// commit run at least twice and at most 10 % of neighbouring commits (or one) differing (a
/// struct size, an allocation count). Every change of value that reaches the threshold is a
/// change point at its exact commit, judged against the previous measured commit's value.
fn exact(model: &Model, opts: &Options) -> Option<Vec<ChangePoint>> {
    if !model.flat_runs() {
        return None;
    }
    let values = &model.medians;
    if !opts.deterministic {
        // Only repeated equal runs show a commit's number does not move: one run of a commit
        // (ten 5s, then one 6) is no exact step. Quantised noise (whole ms) also repeats
        // values, but changes value far more often than a struct size does.
        if !model.repeated() {
            return None;
        }
        let changes = values.windows(2).filter(|w| w[0] != w[1]).count();
        if changes > (values.len().saturating_sub(1) / 10).max(1) {
            return None;
        }
    }
    Some(
        (1..values.len())
            .filter(|&j| values[j] != values[j - 1])
            .filter(|&j| opts.threshold.reached(values[j - 1], values[j]))
            .map(|j| ChangePoint {
                index: model.pos[j],
                before: values[j - 1],
                after: values[j],
                rel_change: rel_change(values[j - 1], values[j]),
                p_value: 0.0,
                test: super::step::StepTest::Exact,
                deterministic: true,
                interval: None,
                windows: 0,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
