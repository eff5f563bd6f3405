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
//! 1. every commit's level: the mean of its runs, window effects removed (solved exactly where
//!    windows are bridged by few commits), runs clipped at ±3 σ around the commit's median (σ
//!    of a run from repeats of a commit);
//! 2. each level's variance: σ² over its independent moments plus τ², the commit-to-commit
//!    jitter of builds (from the differences of neighbouring levels of one stratum, robustly,
//!    within the segments of a first pass and of the boundaries the runs' noise alone places),
//!    inflated by what heavy tails leave; a commit measured once, but at an end, is clipped to
//!    ±3 sd of its neighbours;
//! 3. the exact optimal partition of the levels over every position (weighted squared error
//!    plus [`PENALTY`]·ln m per boundary, functional pruning: no candidates chosen beforehand,
//!    no minimum segment; over 20,000 commits one pass, not two, before the noise estimate). Where no window ties commits together and at least 10 commits were
//!    measured, a linear drift is fitted with it (kept only when it pays half a boundary's
//!    penalty and its z score is at least 3);
//! 4. each boundary confirmed by a t test of its two neighbouring segments' levels at α, and
//!    by the threshold on the levels of the 10 commits at most next to it (the same step is one
//!    size in every range that holds those commits); where the sides lie in several strata
//!    (windows of time connected by their commits: one machine state), on the contrasts
//!    within strata, or across them only with the variance the store shows strata move by; a
//!    step no stratum holds both sides of is measured apart and decides nothing. The worst
//!    failure is merged away and the rest tested again;
//! 5. boundaries merged away that reach the threshold at p < 5 % (the runs alone, for a step
//!    measured apart) are undecided steps, with what leaves each so and what decides it.
//!
//! Exact metrics (every commit's runs equal, and the test declared deterministic, or every
//! commit run twice or more, or values in plateaus far longer than noise makes them) skip the
//! statistics: every change of value that reaches the threshold is a change point at its
//! exact commit, with the two values as its levels (undecided where a side stands on one run).
//! Zero noise within the statistics' segments is the exact path too, never silence.
//!
//! The penalty was calibrated by simulation (`pure_noise_rarely_fires`): Gaussian noise with
//! 1, 3 or 5 runs a commit over 50 to 1,000 commits gives a false change point in under 1 % of
//! series at the default α.

mod confirm;
mod effects;
mod fit;
mod model;
mod nights;
mod place;
mod plateau;
mod point;
mod prefix;
mod segment;
mod side;
mod spread;
mod strata;

pub use point::{across_unmeasured, ChangePoint, Detection, Obs, Reason, Runs, Undecided};

use confirm::Ctx;
use model::Model;
use prefix::Prefix;

use super::threshold::Threshold;

/// Penalty per boundary, in units of a commit level's variance, times ln(m).
pub const PENALTY: f64 = 2.5;
/// Most commits segmented twice (see [`detect_runs`]).
const ONE_PASS_ABOVE: usize = 20_000;
/// Fewest measured commits over which a linear drift is fitted.
const DRIFT_MIN: usize = 10;
/// How many times [`noise_cut`] doubles the penalty before it gives up the boundaries the
/// runs' noise alone places (×8: a step of 4 % among commits of one session that spread as
/// outlier runs make them still stands out).
const NOISE_CUT_DOUBLINGS: usize = 3;

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
    /// The metric counts work (instructions, a counter or Cachegrind): the machine's state
    /// does not move it, so levels measured on different machine states (no window holds
    /// both) are compared as they are, with the variance the window effects show. Any other
    /// metric's step seen only across machine states is undecided.
    pub counted: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.001,
            threshold: Threshold::Relative(0.0),
            deterministic: false,
            counted: false,
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
pub fn detect_runs(mut runs: Runs, opts: &Options) -> Detection {
    // A count moves with no machine state: its windows of time hold no effect to fit, and
    // a probe measured in a window of its own (counted runs go on every core at once) would
    // leave its runs nothing to show the noise by. Its runs are independent measurements.
    // Nor does the machine: every count is one pool.
    if opts.counted || machine_free(&runs) {
        for o in runs.commits.iter_mut().flatten() {
            o.window = 0;
            o.machine = 0;
        }
    }
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
    if let Some(d) = plateau::exact(&model, opts.deterministic, opts.threshold, false) {
        return d;
    }
    // Nothing shows the noise: a series of plateaus (one run a commit) is exact, else silent.
    let fallback = |model: &Model| {
        plateau::exact(model, opts.deterministic, opts.threshold, true).unwrap_or_default()
    };
    let Some(var) = model.fit() else {
        return fallback(&model);
    };
    let allowed: Vec<bool> = model.joined.iter().map(|j| !j).collect();
    let pen = PENALTY * (m as f64).ln().max(1.0);
    let x: Vec<f64> = (0..m).map(|j| j as f64).collect();
    // Twice: the jitter of commit levels is estimated again within the first pass's segments
    // (differences across steps are no jitter). Over many commits the robust estimates
    // hardly see the few differences across steps: one pass.
    let cut = if m <= ONE_PASS_ABOVE {
        let first = weigh(&model, &var);
        let cut = segment::optimal(&Prefix::new(&first.0, &first.1), pen, &allowed).0;
        noise_cut(&model, cut, pen, &allowed)
    } else {
        Vec::new()
    };
    let Some(mut var) = model.variances(&cut) else {
        return fallback(&model);
    };
    let (mut y, mut w, mut tails) = weighed(&model, &var);
    // Strata measured at other machine states: their levels put on one scale by what the
    // segmentation shows (twice: the boundaries move once the scale does).
    let passes = if model.alignable() { 0..3 } else { 0..0 };
    for pass in passes {
        // First where strata interleave only: the strata's own segments would hold their
        // states.
        let bounds = (pass > 0).then(|| segment::optimal(&Prefix::new(&y, &w), pen, &allowed).0);
        if !model.align(&y, &w, bounds.as_deref()) {
            if pass == 0 {
                continue;
            }
            break;
        }
        let Some(v) = model.variances(bounds.as_deref().unwrap_or(&cut)) else {
            return fallback(&model);
        };
        var = v;
        (y, w, tails) = weighed(&model, &var);
    }
    // A drift is told from a step only over enough commits: two levels are a step, or
    // nothing, never a slope.
    let (slope, bounds) = if model.tied || m < DRIFT_MIN {
        (0.0, segment::optimal(&Prefix::new(&y, &w), pen, &allowed).0)
    } else {
        segment::drift(&y, &w, &x, pen, &allowed)
    };
    let yd: Vec<f64> = y.iter().zip(&x).map(|(v, p)| v - slope * p).collect();
    let deviation = model.local_deviations();
    let mut sorted_deviation = deviation.clone();
    sorted_deviation.sort_unstable_by(f64::total_cmp);
    let moments = model.moments();
    let nights = nights::Nights::new(&model);
    let ctx = |w: &'_ [f64], moments: &[f64]| Ctx {
        nights: &nights,
        deviation: deviation.clone(),
        sorted_deviation: sorted_deviation.clone(),
        sizes: Prefix::new(&yd, moments),
        model: &model,
        y: &yd,
        w: w.to_vec(),
        pre: Prefix::new(&yd, w),
        alpha,
        threshold: opts.threshold,
        slope,
        tails: &tails,
        paired: Default::default(),
    };
    let first = ctx(&w, &moments);
    // Interior runs of outlier runs (two in a row, each of a commit measured once) are no
    // level: weighed by nothing, their boundaries gone, before any step is judged.
    let blips = first.blips(&bounds);
    let (ctx, bounds) = if blips.is_empty() {
        (first, bounds)
    } else {
        let (mut w, mut moments) = (w, moments);
        for j in blips.iter().flat_map(|r| r.clone()) {
            (w[j], moments[j]) = (0.0, 0.0);
        }
        let bounds = bounds
            .into_iter()
            .filter(|b| !blips.iter().any(|r| r.start == *b || r.end == *b))
            .collect();
        (ctx(&w, &moments), bounds)
    };
    let (points, dropped) = ctx.confirm(bounds);
    let mut undecided = ctx.undecided(&points, &dropped);
    undecided.extend(ctx.machine_moves(&points));
    undecided.extend(ctx.absorbed(&points, &undecided));
    let apart = ctx.neighbours_apart(&points, &undecided);
    undecided.extend(apart);
    undecided.sort_by_key(|u| u.index);
    undecided.dedup_by_key(|u| u.index);
    Detection { undecided, points }
}

/// Whether the runs themselves show the machine does not move the metric: every commit run
/// more than once repeated one number, and some commit did so on two machine states (two
/// windows, or a window and the pool of runs taken alone). A count printed by the program
/// (allocations, a struct's size) is such a metric: its windows hold no effect to fit, and a
/// probe measured in a window of its own is as good as one measured beside its neighbours.
fn machine_free(runs: &Runs) -> bool {
    let mut across = false;
    for r in runs.commits.iter().filter(|r| r.len() > 1) {
        if r.iter()
            .any(|o| o.value != r[0].value || !o.value.is_finite())
        {
            return false;
        }
        across |= r
            .iter()
            .any(|o| o.window != r[0].window || o.machine != r[0].machine);
    }
    across
}

/// The first pass's boundaries, with those the runs' noise alone places (tails inflated as
/// [`weigh`] does): a jitter estimated across a step blurs the step in the first pass, and
/// the jitter read again over its segments would hold the step still. Where the noise alone
/// places many boundaries (a tenth of the commits), the strongest of them at a penalty
/// doubled up to [`NOISE_CUT_DOUBLINGS`] times: a few commits that spread as outlier runs make
/// them must not hide the step beside them (the jitter read across it blurs it); where even
/// those are many, the builds jitter: the first pass's alone.
fn noise_cut(model: &Model, cut: Vec<usize>, pen: f64, allowed: &[bool]) -> Vec<usize> {
    let Some(noise) = model.noise_variances() else {
        return cut;
    };
    let (y, w) = weigh(model, &noise);
    let pre = Prefix::new(&y, &w);
    let few = cut.len() + (model.len() / 10).max(1);
    let mut pen = pen;
    let mut more = segment::optimal(&pre, pen, allowed).0;
    for _ in 0..NOISE_CUT_DOUBLINGS {
        if more.len() <= few {
            break;
        }
        pen *= 2.0;
        more = segment::optimal(&pre, pen, allowed).0;
    }
    if more.len() > few {
        return cut;
    }
    let mut all = cut;
    all.extend(more);
    all.sort_unstable();
    all.dedup();
    all
}

/// The levels as segmented (a commit measured once clipped to its neighbours) and their
/// weights (inverse variances, inflated by what heavy tails leave).
fn weigh(model: &Model, var: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (y, w, _) = weighed(model, var);
    (y, w)
}

/// [`weigh`], and each level's inflation: how much wider than its variance the series' tails
/// show it (a contrast of its runs carries it too).
fn weighed(model: &Model, var: &[f64]) -> (Vec<f64>, Vec<f64>, spread::Tails) {
    let y = spread::clip_lone(&model.level, var, &model.n, 3.0);
    // Commits of one build differ by nothing: no difference to read tails from.
    let mut skip = model.joined.clone();
    skip.resize(y.len(), false);
    let mut own = skip.clone();
    let within = model.within_strata(&mut skip);
    let all = spread::tails(&y, var, &skip);
    let tails = if within {
        spread::Tails {
            inner: vec![false; y.len()],
            own: (all.0, Vec::new()),
            all,
        }
    } else {
        // Too few neighbours share a stratum: the tails read across strata hold their
        // machine states. Commits of a stratum holding several are compared within it, by
        // the tails their own differences show (none where too few: the runs' noise alone,
        // as their variances are); a commit alone in its stratum is compared across states,
        // by all.
        for (j, s) in own.iter_mut().enumerate() {
            *s |= model.strata.switch(j);
        }
        let size = model.strata.sizes();
        spread::Tails {
            inner: model
                .strata
                .of
                .iter()
                .map(|&k| size[k as usize] > 1)
                .collect(),
            own: spread::tails(&y, var, &own),
            all,
        }
    };
    let inflation: Vec<f64> = (0..y.len()).map(|j| tails.at(j, None)).collect();
    let w = var
        .iter()
        .zip(&inflation)
        .map(|(v, f)| 1.0 / (v * f))
        .collect();
    (y, w, tails)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_apart;
#[cfg(test)]
mod tests_evidence;
