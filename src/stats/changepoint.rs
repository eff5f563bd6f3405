//! Change-point detection over a commit-ordered series of raw samples: robust per-commit
//! levels, a penalised optimal segmentation over multiscale candidates with a jointly fitted
//! linear drift, and confirmation of every boundary by a Mann-Whitney test on the raw samples
//! of the neighbouring segments (Bonferroni, scan-corrected) and by the threshold.
//!
//! Outline (see `detect_tuned`):
//! 1. positive metrics are analysed as logarithms (noise proportional to the level becomes
//!    homoscedastic, steps additive); unmeasured commits and non-finite samples are dropped;
//! 2. per-commit level = mean of the commit's samples winsorised at ±3σ around its median
//!    (σ from pairs of runs of the same commit), or the median without repeats;
//! 3. noise: σ within commits and the robust spread of first differences between commits
//!    (which also sees build-to-build jitter) give each commit a variance; isolated outliers
//!    are clipped to ±3 sd around a running median of 5 commits, and the variance is inflated
//!    by whatever spread heavy tails leave after clipping;
//! 4. candidates: local maxima of a two-window z statistic at scales min_segment·2^k;
//! 5. optimal partitioning (weighted L2, penalty 2.5·ln m per boundary, minimum segment
//!    length) restricted to the candidates, with PELT pruning, for a grid of drift slopes
//!    around the alternating (segment, pooled within-segment slope) estimate; the slope with
//!    the lowest penalised cost wins (half a penalty for a non-zero slope), is kept only if
//!    its within-segment z score is >= 2, and is chosen on block means above 4000 commits;
//! 6. each boundary moves to the best split between its neighbours, then must pass a
//!    Mann-Whitney U test of the raw, detrended samples within 300 commits on each side at
//!    p · K · (m / shorter side) < alpha (K boundaries; the last factor corrects for the
//!    search over positions, so short blips need more evidence) and the threshold; failures
//!    are merged away and the survivors re-refined and re-tested until stable. When
//!    between-commit jitter dominates the run-to-run noise, commit levels are tested instead
//!    of runs.
//!
//! Deterministic metrics (every commit's samples equal, and either declared deterministic by
//! [`Options::deterministic`] or, with at least two runs of every commit, changing value at no
//! more than 10 % of the consecutive commits, or one) skip the statistics: every change of value between consecutive measured
//! commits that reaches the threshold is a change point at its exact commit, with the two
//! measured values as before and after (not segment levels) and p = 0. Noisy series keep
//! robust segment levels.
//!
//! Cost, measured as whole `detect --input` processes (CSV parsing included) on the 2-core
//! development machine: 1,000,000 commits with a step every 2,000 take ~1.2 s. The
//! segmentation's pruning (PELT) drops a candidate start only once a later boundary beats
//! it, so a long series with no step keeps them all: 100,000 flat commits ~0.5 s, 300,000
//! ~6 s, 1,000,000 ~65 s.

mod confirm;
mod few;
mod kept;
mod point;
mod prefix;

use confirm::Ctx;
use kept::{keep, Kept};
pub use point::{ChangePoint, Detection, Undecided};
use prefix::Prefix;

use super::summary::median_in_place;
use super::threshold::{rel_change, Threshold};

/// Fewest measured commits for between-commit jitter to make commit levels the unit of test.
const PER_COMMIT_MIN: usize = 20;

/// Settings of [`detect`]. The defaults (alpha 0.001, no threshold, segments of at least 3
/// commits) were chosen on the cpd benchmark: pure noise fires in under 1 % of series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Family-wise error rate of the confirmation tests (Bonferroni over the boundaries, with
    /// a scan correction for short segments). Values outside (0, 1) mean the default.
    pub alpha: f64,
    /// Smallest change of the neighbouring levels that counts.
    pub threshold: Threshold,
    /// Fewest commits in a segment of the segmentation (deterministic metrics ignore it: one
    /// commit is enough). A step within `min_segment - 1` commits of either end is tested on
    /// its own afterwards and reported when those commits' runs make it certain.
    pub min_segment: usize,
    /// The metric is declared deterministic (a test's `deterministic = true`): when every
    /// commit's samples are equal, every change of value between consecutive measured commits
    /// that reaches the threshold is a change point at its exact commit, however often the
    /// value changes. Without it the exact path is taken only when values change rarely (see
    /// the module documentation). A series whose commits' samples differ is analysed as noisy
    /// either way.
    pub deterministic: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.001,
            threshold: Threshold::Relative(0.0),
            min_segment: 3,
            deterministic: false,
        }
    }
}

/// Internal constants of the detector, exposed only so the benchmark binary can tune them.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Penalty per boundary, in units of the per-commit variance, times ln(m).
    pub penalty_c: f64,
    /// Smallest two-window z score that makes a position a candidate.
    pub candidate_z: f64,
    /// Residuals beyond this many sd from the running median are clipped.
    pub clip_k: f64,
    /// Commits on each side of a boundary used by its confirmation test.
    pub test_window: usize,
    /// Rounds of segmentation and drift estimation.
    pub drift_rounds: usize,
    /// Smallest z score of the within-segment slope for a drift to be removed.
    pub slope_z: f64,
    /// Exponent of the scan correction m / (shorter side) applied to confirmation p-values.
    pub scan_power: f64,
    /// Penalty of a non-zero drift slope, as a fraction of a boundary's penalty.
    pub slope_pen: f64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            penalty_c: 2.5,
            candidate_z: 2.0,
            clip_k: 3.0,
            test_window: 300,
            drift_rounds: 4,
            slope_z: 2.0,
            scan_power: 1.0,
            slope_pen: 0.5,
        }
    }
}

/// Finds the positions where the level of `series` shifts.
///
/// `series[i]` are the raw samples of the i-th commit in commit order (may be empty: the commit
/// was not measured; counts may vary). Non-finite samples are ignored. The result is sorted by
/// index; each point is confirmed by a two-sample test at `opts.alpha` (family-wise) and reaches
/// `opts.threshold`. A change after unmeasured commits is reported at the first measured commit
/// of the new level. Deterministic: the same input gives the same output; never panics.
pub fn detect(series: &[Vec<f64>], opts: &Options) -> Vec<ChangePoint> {
    detect_tuned(series, opts, &Tuning::default())
}

/// [`detect`], and the steps it could not yet decide because their runs are too few (see
/// [`Undecided`]): what `detect` and `run` act on so that few runs never hide a step.
pub fn detect_all(series: &[Vec<f64>], opts: &Options) -> Detection {
    detect_all_tuned(series, opts, &Tuning::default())
}

/// [`detect`] with explicit internal constants (benchmarking only).
#[doc(hidden)]
pub fn detect_tuned(series: &[Vec<f64>], opts: &Options, tu: &Tuning) -> Vec<ChangePoint> {
    detect_all_tuned(series, opts, tu).points
}

/// [`detect_all`] with explicit internal constants.
#[doc(hidden)]
pub fn detect_all_tuned(series: &[Vec<f64>], opts: &Options, tu: &Tuning) -> Detection {
    let only = |points: Vec<ChangePoint>| Detection {
        points,
        undecided: Vec::new(),
    };
    let mut kept = keep(series);
    let m = kept.pos.len();
    if m < 2 {
        return Detection::default();
    }
    let alpha = if opts.alpha > 0.0 && opts.alpha < 1.0 {
        opts.alpha
    } else {
        Options::default().alpha
    };
    // (On every core: a cron history holds thousands of samples per commit.)
    use rayon::prelude::*;
    let mut medians: Vec<f64> = kept
        .samples
        .par_iter()
        .map(|s| median_in_place(&mut s.clone()).unwrap_or(0.0))
        .collect();
    if is_deterministic(&kept, &medians, opts.deterministic) {
        // No noise: every change of value that reaches the threshold is a change point at its
        // exact commit, judged against the value just before it (the previous measured
        // commit's), and reported with those two values rather than segment levels.
        return only(
            (1..m)
                .filter(|&j| medians[j] != medians[j - 1])
                .filter(|&j| opts.threshold.reached(medians[j - 1], medians[j]))
                .map(|j| ChangePoint {
                    index: kept.pos[j],
                    before: medians[j - 1],
                    after: medians[j],
                    rel_change: rel_change(medians[j - 1], medians[j]),
                    p_value: 0.0,
                    deterministic: true,
                    interval: None,
                    windows: 0,
                })
                .collect(),
        );
    }
    // Performance metrics are positive with noise proportional to the level (a cv): in log
    // space the noise is homoscedastic, steps are additive and drift is near-linear, so one
    // noise scale fits a series whose level moves by factors.
    let log = kept.samples.iter().flatten().all(|x| *x > 0.0);
    if log {
        kept.samples.par_iter_mut().for_each(|s| {
            for x in s.iter_mut() {
                *x = x.ln();
            }
        });
        for x in medians.iter_mut() {
            *x = x.ln();
        }
    }
    let min_seg = opts.min_segment.clamp(1, m);
    let sigma_w = within_sigma(&kept);
    // Per-commit level: winsorised mean when σ is known, else the median.
    let levels: Vec<f64> = match sigma_w {
        Some(sw) => kept
            .samples
            .iter()
            .zip(&medians)
            .map(|(s, &med)| {
                let lo = med - tu.clip_k * sw;
                let hi = med + tu.clip_k * sw;
                s.iter().map(|x| x.clamp(lo, hi)).sum::<f64>() / s.len() as f64
            })
            .collect(),
        None => medians.clone(),
    };
    let inv_r: Vec<f64> = kept.samples.iter().map(|s| 1.0 / s.len() as f64).collect();
    // From here on a commit's samples are used as a set (ranks, medians): sorted once, each
    // boundary's test merges the commits' sorted runs instead of sorting all of their samples
    // again (a cron history holds thousands per commit).
    kept.sort_runs();
    // Two or three levels give no spread of differences to estimate: a series that short is
    // decided by its splits' tests alone (`edges`), which need none.
    let short_series = m < 2 * opts.min_segment.clamp(1, m);
    let Some(s_b) = between_sigma(&levels, &inv_r).or(short_series.then_some(1.0)) else {
        return Detection::default();
    };
    // Variance of each commit's level: extra between-commit jitter tau^2 plus sampling noise.
    let mut per_commit = false;
    let var: Vec<f64> = match sigma_w {
        Some(sw) => {
            let mut ir = inv_r.clone();
            let typical = median_in_place(&mut ir).unwrap_or(1.0);
            let tau2 = (s_b * s_b - sw * sw * typical).max(0.0);
            // Between-commit jitter is estimated from the first differences: with few commits
            // that estimate is too noisy to overrule the runs (a short series with a big step
            // would be tested on a handful of commit levels, which cannot reach alpha).
            per_commit = m >= PER_COMMIT_MIN && tau2 > sw * sw * typical;
            inv_r.iter().map(|ir| tau2 + sw * sw * ir).collect()
        }
        None => vec![s_b * s_b; m],
    };
    let y = clip_outliers(&levels, &var, tu.clip_k);
    // Heavy tails leave more spread after clipping than the MAD promises; the penalty must
    // scale with the spread the segmentation actually sees.
    let inflate = tail_inflation(&y, &var);
    let var: Vec<f64> = var.iter().map(|v| v * inflate).collect();
    let w: Vec<f64> = var.iter().map(|v| 1.0 / v).collect();
    medians.clear();

    let posf: Vec<f64> = kept.pos.iter().map(|&p| p as f64).collect();
    let pen = tu.penalty_c * (m as f64).ln().max(1.0);
    // Long series: choose the drift on block means (steps stay steps, drift stays drift),
    // which keeps the slope search off the O(n log n) path of the full series.
    let slope = if m > COARSE_ABOVE {
        let block = m.div_ceil(COARSE_ABOVE / 4);
        let (cy, cw, cp) = coarsen(&y, &w, &posf, block);
        let cpen = tu.penalty_c * (cy.len() as f64).ln().max(1.0);
        search_slope(&cy, &cw, &cp, 1, cpen, tu)
    } else {
        search_slope(&y, &w, &posf, min_seg, pen, tu)
    };
    let (mut bounds, cost) = fit_with_slope(&y, &w, &posf, slope, min_seg, pen, tu);
    let mut slope = slope;
    if slope != 0.0 {
        // Keep a drift only if it is a real slope inside the segments it produced: a spurious
        // slope plus a spurious boundary can beat the honest fit by chance. Block means misfit
        // the blocks that straddle steps, so a coarse choice is also checked against no drift
        // at full resolution.
        let z = pooled_slope(&y, &w, &posf, &bounds).1;
        let (b0, c0) = fit_with_slope(&y, &w, &posf, 0.0, min_seg, pen, tu);
        if z.abs() < tu.slope_z || (m > COARSE_ABOVE && c0 <= cost) {
            bounds = b0;
            slope = 0.0;
        }
    }
    let yd: Vec<f64> = y.iter().zip(&posf).map(|(v, p)| v - slope * p).collect();

    let ctx = Ctx {
        kept: &kept,
        y: &yd,
        w: &w,
        slope,
        min_seg,
        alpha,
        threshold: opts.threshold,
        window: tu.test_window.max(1),
        log,
        scan_power: tu.scan_power,
        per_commit,
    };
    let proposed = bounds.clone();
    let found = ctx.confirm(bounds);
    let found = ctx.edges(found);
    // As the end tests do, these look at the samples as they are: a drift fitted over the
    // series would make steps of its own between close neighbours.
    let flat = Ctx { slope: 0.0, ..ctx };
    let found = flat.split_close(found);
    Detection {
        undecided: flat.undecided(&found, &proposed),
        points: found,
    }
}

/// Every commit's samples are equal and either the metric is declared deterministic or every
/// commit was run at least twice and at most 10 % of consecutive commits (or one) differ: a
/// struct size, an allocation count.
fn is_deterministic(kept: &Kept, medians: &[f64], declared: bool) -> bool {
    let flat = kept.samples.iter().all(|s| s.iter().all(|x| *x == s[0]));
    if !flat {
        return false;
    }
    if declared {
        return true;
    }
    // Without the declaration only repeated equal runs show a commit's number does not
    // move: one run of a commit (ten 5s, then one 6) is no exact step.
    if kept.samples.iter().any(|s| s.len() < 2) {
        return false;
    }
    // Quantised noise (timings in whole ms, one run per commit) also repeats values, but it
    // changes value far more often than a struct size does.
    let changes = medians.windows(2).filter(|w| w[0] != w[1]).count();
    changes <= (medians.len().saturating_sub(1) / 10).max(1)
}

/// σ of one sample from pairs of samples of the same commit: median |x_a - x_b| / (0.6745 √2).
/// `None` without at least 10 such pairs or when they are all equal.
fn within_sigma(kept: &Kept) -> Option<f64> {
    let mut d = Vec::new();
    for s in &kept.samples {
        // Cap the pairs per commit so a commit with many runs does not dominate.
        let s = &s[..s.len().min(10)];
        for i in 0..s.len() {
            for j in i + 1..s.len() {
                d.push((s[i] - s[j]).abs());
            }
        }
    }
    if d.len() < 10 {
        return None;
    }
    let med = median_in_place(&mut d)?;
    let s = med / (0.674_489_75 * std::f64::consts::SQRT_2);
    (s > 0.0 && s.is_finite()).then_some(s)
}

/// Robust sd of a commit level from first differences, each scaled to a one-sample commit:
/// 1.4826 MAD(d) / √2 with d standardised by sqrt(1/r_j + 1/r_{j+1}) times the typical
/// sqrt(2/r). Falls back to the mean absolute deviation when more than half the differences
/// are equal; `None` when every level is equal.
fn between_sigma(levels: &[f64], inv_r: &[f64]) -> Option<f64> {
    if levels.len() < 2 {
        return None;
    }
    let mut ir = inv_r.to_vec();
    let typical = median_in_place(&mut ir).unwrap_or(1.0);
    let d: Vec<f64> = levels
        .windows(2)
        .zip(inv_r.windows(2))
        .map(|(l, r)| (l[1] - l[0]) * (2.0 * typical / (r[0] + r[1])).sqrt())
        .collect();
    let med = median_in_place(&mut d.clone())?;
    let mut dev: Vec<f64> = d.iter().map(|x| (x - med).abs()).collect();
    let mad = median_in_place(&mut dev)?;
    let mut s = 1.4826 * mad / std::f64::consts::SQRT_2;
    if s.is_nan() || s <= 0.0 {
        let mean_abs = d.iter().map(|x| (x - med).abs()).sum::<f64>() / d.len() as f64;
        s = 1.2533 * mean_abs / std::f64::consts::SQRT_2;
    }
    (s > 0.0 && s.is_finite()).then_some(s)
}

/// Mean square of the standardised first differences of the clipped levels, winsorised at ±3
/// so steps count little; at least 1 (Gaussian noise gives about 1).
fn tail_inflation(y: &[f64], var: &[f64]) -> f64 {
    if y.len() < 3 {
        return 1.0;
    }
    let ms = y
        .windows(2)
        .zip(var.windows(2))
        .map(|(a, v)| {
            let e = (a[1] - a[0]) / (v[0] + v[1]).sqrt();
            e.clamp(-3.0, 3.0).powi(2)
        })
        .sum::<f64>()
        / (y.len() - 1) as f64;
    if ms.is_finite() {
        ms.max(1.0)
    } else {
        1.0
    }
}

/// Clips each level to ±k sd around the running median of 5 commits; a running median
/// keeps steps sharp, so only isolated outliers move.
fn clip_outliers(y: &[f64], var: &[f64], k: f64) -> Vec<f64> {
    let m = y.len();
    let mut out = Vec::with_capacity(m);
    let mut buf = [0.0f64; 5];
    for j in 0..m {
        let lo = j.saturating_sub(2);
        let hi = (j + 3).min(m);
        let len = hi - lo;
        buf[..len].copy_from_slice(&y[lo..hi]);
        let rm = median_in_place(&mut buf[..len]).unwrap_or(y[j]);
        let sd = var[j].sqrt();
        out.push(y[j].clamp(rm - k * sd, rm + k * sd));
    }
    out
}

/// Positions where a two-window z score at some scale h = min_seg·2^k is a local maximum
/// within ±h and at least `zmin`.
fn candidates(pre: &Prefix, min_seg: usize, zmin: f64) -> Vec<usize> {
    let m = pre.len();
    let mut out = Vec::new();
    let mut h = min_seg.max(1);
    let mut z = Vec::with_capacity(m + 1);
    while 2 * h <= m {
        // Wide windows change slowly along t: evaluating every h/16-th position finds their
        // peaks to within h/32, which the refinement step fixes, at a fraction of the cost.
        let stride = (h / 16).max(1);
        let idx: Vec<usize> = (h..=m - h).step_by(stride).collect();
        z.clear();
        z.extend(idx.iter().map(|&t| pre.z(t - h, t, t + h).abs()));
        let wmax = window_max(&z, h / stride);
        for (k, &t) in idx.iter().enumerate() {
            if z[k] >= zmin && z[k] >= wmax[k] {
                out.push(t);
            }
        }
        h *= 2;
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Maximum of `a` over [t - r, t + r] for every t (monotonic deque, O(n)).
fn window_max(a: &[f64], r: usize) -> Vec<f64> {
    let n = a.len();
    let mut out = vec![0.0; n];
    let mut dq: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    let mut next = 0;
    for (t, o) in out.iter_mut().enumerate() {
        let hi = (t + r).min(n - 1);
        while next <= hi {
            while dq.back().is_some_and(|&b| a[b] <= a[next]) {
                dq.pop_back();
            }
            dq.push_back(next);
            next += 1;
        }
        while dq.front().is_some_and(|&f| f + r < t) {
            dq.pop_front();
        }
        *o = dq.front().map_or(0.0, |&f| a[f]);
    }
    out
}

/// Optimal partitioning of [0, m) with boundaries among `cands`, each segment at least
/// `min_seg` long, minimising cost + pen per boundary (PELT pruning). Returns the boundaries.
fn segment(pre: &Prefix, cands: &[usize], pen: f64, min_seg: usize) -> (Vec<usize>, f64) {
    let m = pre.len();
    let mut pts: Vec<usize> = Vec::with_capacity(cands.len() + 2);
    pts.push(0);
    pts.extend(
        cands
            .iter()
            .copied()
            .filter(|&c| c >= min_seg && c + min_seg <= m),
    );
    pts.push(m);
    let k = pts.len();
    let mut f = vec![f64::INFINITY; k];
    let mut back = vec![0usize; k];
    f[0] = -pen;
    let mut active: Vec<usize> = vec![0];
    for j in 1..k {
        let b = pts[j];
        let mut best = f64::INFINITY;
        let mut arg = usize::MAX;
        for &i in &active {
            if pts[i] + min_seg > b || !f[i].is_finite() {
                continue;
            }
            let v = f[i] + pre.cost(pts[i], b) + pen;
            if v < best {
                best = v;
                arg = i;
            }
        }
        if arg == usize::MAX {
            // No admissible start: this point cannot end a segment.
            continue;
        }
        f[j] = best;
        back[j] = arg;
        // PELT: a start that is already worse than the best by more than the penalty never wins.
        active.retain(|&i| pts[i] + min_seg > b || f[i] + pre.cost(pts[i], b) <= best);
        active.push(j);
    }
    let mut out = Vec::new();
    let mut j = k - 1;
    if !f[j].is_finite() {
        return (out, pre.cost(0, m));
    }
    let total = f[j];
    while j != 0 {
        j = back[j];
        if j != 0 {
            out.push(pts[j]);
        }
    }
    out.reverse();
    (out, total)
}

/// Above this many commits the drift is chosen on block means.
const COARSE_ABOVE: usize = 4000;

/// Block means (weighted) of `block` consecutive commits: levels, weights, positions.
fn coarsen(y: &[f64], w: &[f64], x: &[f64], block: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for ((yc, wc), xc) in y.chunks(block).zip(w.chunks(block)).zip(x.chunks(block)) {
        let sw: f64 = wc.iter().sum();
        let my = yc.iter().zip(wc).map(|(a, b)| a * b).sum::<f64>() / sw;
        let mx = xc.iter().zip(wc).map(|(a, b)| a * b).sum::<f64>() / sw;
        out.0.push(my);
        out.1.push(sw);
        out.2.push(mx);
    }
    out
}

/// Best segmentation once a drift `slope` (per series position) is removed, and its
/// penalised cost; a non-zero slope pays half a penalty (one parameter; a boundary has two:
/// place and level).
fn fit_with_slope(
    y: &[f64],
    w: &[f64],
    x: &[f64],
    slope: f64,
    min_seg: usize,
    pen: f64,
    tu: &Tuning,
) -> (Vec<usize>, f64) {
    let yd: Vec<f64> = y.iter().zip(x).map(|(v, p)| v - slope * p).collect();
    let pre = Prefix::new(&yd, w);
    let cands = candidates(&pre, min_seg, tu.candidate_z);
    let (b, c) = segment(&pre, &cands, pen, min_seg);
    (
        b,
        if slope == 0.0 {
            c
        } else {
            c + pen * tu.slope_pen
        },
    )
}

/// The drift and the steps are fitted jointly. Alternating (segment, pooled within-segment
/// slope) gets stuck in staircases that absorb part of the drift, so the penalised cost is
/// also minimised over a grid of slopes around the alternating estimate and the plain
/// regression slope.
fn search_slope(y: &[f64], w: &[f64], x: &[f64], min_seg: usize, pen: f64, tu: &Tuning) -> f64 {
    let fit = |s: f64| fit_with_slope(y, w, x, s, min_seg, pen, tu);
    let mut best = fit(0.0);
    let mut slope = 0.0;
    let mut it_slope = 0.0;
    let mut it_bounds = best.0.clone();
    for _ in 0..tu.drift_rounds {
        it_slope = pooled_slope(y, w, x, &it_bounds).0;
        it_bounds = fit(it_slope).0;
    }
    let global = pooled_slope(y, w, x, &[]).0;
    let mut grid: Vec<f64> = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0]
        .iter()
        .map(|f| f * it_slope)
        .chain([0.5, 1.0].iter().map(|f| f * global))
        .filter(|b| *b != 0.0 && b.is_finite())
        .collect();
    grid.dedup();
    for b in grid {
        let r = fit(b);
        if r.1 < best.1 {
            best = r;
            slope = b;
        }
    }
    slope
}

/// Weighted least-squares slope shared by all segments (each with its own intercept) and its
/// z score (the weights are inverse variances, so the slope's sd is 1 / sqrt(Sxx)).
fn pooled_slope(y: &[f64], w: &[f64], x: &[f64], bounds: &[usize]) -> (f64, f64) {
    let mut edges = vec![0];
    edges.extend_from_slice(bounds);
    edges.push(y.len());
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for e in edges.windows(2) {
        let (a, b) = (e[0], e[1]);
        let sw: f64 = w[a..b].iter().sum();
        if b - a < 2 || sw <= 0.0 {
            continue;
        }
        let mx = (a..b).map(|i| w[i] * x[i]).sum::<f64>() / sw;
        let my = (a..b).map(|i| w[i] * y[i]).sum::<f64>() / sw;
        for i in a..b {
            sxy += w[i] * (x[i] - mx) * (y[i] - my);
            sxx += w[i] * (x[i] - mx) * (x[i] - mx);
        }
    }
    if sxx > 0.0 && sxy.is_finite() {
        (sxy / sxx, sxy / sxx.sqrt())
    } else {
        (0.0, 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::compare::SplitMix64;
    use proptest::prelude::*;

    fn noisy(levels: &[f64], reps: usize, sd: f64, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = SplitMix64::new(seed);
        levels
            .iter()
            .map(|&l| (0..reps).map(|_| l + sd * rng.normal()).collect())
            .collect()
    }

    fn step(n: usize, at: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|i| if i < at { lo } else { hi }).collect()
    }

    #[test]
    fn a_step_in_a_short_series_with_many_runs_is_placed_where_it_is() {
        // Five or seven commits of 12 runs (±20 %), levels 40 and 10, the step two commits
        // from an end: the segmentation cannot place it, the end test must, at its commit.
        let mut rng = 1u64;
        let mut noise = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % 10_000) as f64 / 10_000.0 * 0.4 - 0.2
        };
        for (levels, want) in [
            (vec![40.0, 40.0, 40.0, 10.0, 10.0], 3),
            (vec![40.0, 40.0, 10.0, 10.0, 10.0, 10.0, 10.0], 2),
            (vec![40.0, 40.0, 40.0, 40.0, 40.0, 10.0, 10.0], 5),
        ] {
            let series: Vec<Vec<f64>> = levels
                .iter()
                .map(|l| (0..12).map(|_| l * (1.0 + noise())).collect())
                .collect();
            let cps = detect(&series, &Options::default());
            assert_eq!(cps.len(), 1, "{levels:?}: {cps:?}");
            assert_eq!(cps[0].index, want, "{levels:?}: {cps:?}");
            assert!(cps[0].before > 30.0 && cps[0].after < 13.0, "{cps:?}");
        }
    }

    #[test]
    fn a_step_with_two_commits_of_a_jittery_count_beside_it_is_found_and_jitter_alone_is_not() {
        // Commit levels jitter by ±0.2 %, far more than their 5 runs spread (0.05 %): the
        // levels are the units. Two commits 1.6 % below the ten before them are a step; the
        // same two at the jittery level are none.
        let jitter = [0.0, 0.002, -0.0015, 0.001, -0.002, 0.0005];
        let opts = Options {
            threshold: Threshold::Relative(0.01),
            ..Options::default()
        };
        for (last, want) in [(1063.0, vec![20, 30]), (1080.0, vec![20])] {
            let levels: Vec<f64> = (0..32)
                .map(|i| {
                    let l = match i {
                        0..20 => 1000.0,
                        20..30 => 1080.0,
                        _ => last,
                    };
                    l * (1.0 + jitter[i % 6])
                })
                .collect();
            let mut rng = SplitMix64::new(5);
            let series: Vec<Vec<f64>> = levels
                .iter()
                .map(|l| (0..5).map(|_| l * (1.0 + 0.0005 * rng.normal())).collect())
                .collect();
            let cps = detect(&series, &opts);
            let at: Vec<usize> = cps.iter().map(|c| c.index).collect();
            assert_eq!(at, want, "{cps:?}");
        }
    }

    #[test]
    fn edges_do_not_panic() {
        let o = Options::default();
        assert!(detect(&[], &o).is_empty());
        assert!(detect(&[vec![]], &o).is_empty());
        assert!(detect(&[vec![1.0]], &o).is_empty());
        assert!(detect(&[vec![1.0], vec![2.0]], &o).len() <= 1);
        assert!(detect(&[vec![1.0], vec![], vec![2.0]], &o).len() <= 1);
        assert!(detect(&vec![vec![5.0]; 100], &o).is_empty());
        assert!(detect(&vec![vec![f64::NAN, f64::INFINITY]; 10], &o).is_empty());
        let weird = vec![vec![0.0], vec![1e308], vec![-1e308], vec![], vec![1.0, 2.0]];
        let _ = detect(&weird, &o);
        let bad = Options {
            alpha: f64::NAN,
            threshold: Threshold::Relative(f64::NAN),
            min_segment: 0,
            deterministic: true,
        };
        let _ = detect(&noisy(&step(30, 15, 10.0, 20.0), 1, 1.0, 1), &bad);
    }

    #[test]
    fn deterministic_steps_exact() {
        let mut lv = vec![3064.0; 20];
        lv.extend(vec![3072.0; 1]);
        lv.extend(vec![3080.0; 30]);
        let s: Vec<Vec<f64>> = lv.iter().map(|&v| vec![v]).collect();
        let declared = Options {
            deterministic: true,
            ..Options::default()
        };
        let cps = detect(&s, &declared);
        let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![20, 21]);
        assert_eq!(cps[0].p_value, 0.0);
        assert_eq!((cps[0].before, cps[0].after), (3064.0, 3072.0));
        // threshold filters a small step
        let o = Options {
            threshold: Threshold::Relative(0.005),
            ..declared
        };
        let cps = detect(&s, &o);
        assert!(cps.is_empty(), "{cps:?}");
        // The same runs twice each, undeclared: repeated equal runs are exact too.
        let twice: Vec<Vec<f64>> = lv.iter().map(|&v| vec![v, v]).collect();
        let cps = detect(&twice, &Options::default());
        assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), [20, 21]);
        assert!(cps.iter().all(|c| c.deterministic && c.p_value == 0.0));
    }

    #[test]
    fn one_run_per_commit_is_never_an_exact_step_unless_declared() {
        let mut ten_then_six: Vec<Vec<f64>> = vec![vec![5.0]; 10];
        ten_then_six.push(vec![6.0]);
        for s in [ten_then_six, vec![vec![100.0], vec![101.0]]] {
            let cps = detect(&s, &Options::default());
            assert!(
                cps.iter().all(|c| !c.deterministic && c.p_value > 0.0),
                "{s:?}: {cps:?}"
            );
        }
    }

    #[test]
    fn deterministic_small_and_repeated() {
        let o = Options::default();
        let s = vec![vec![3064.0], vec![3064.0], vec![3072.0]];
        let declared = Options {
            deterministic: true,
            ..Options::default()
        };
        let idx: Vec<usize> = detect(&s, &declared).iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![2]);
        // Undeclared, one run each says too little.
        assert!(detect(&s, &o).is_empty());
        // three equal runs per commit, an unmeasured commit, a sub-threshold step, a blip
        let mut s: Vec<Vec<f64>> = Vec::new();
        for i in 0..40 {
            let v = match i {
                0..=9 => 100.0,
                10..=19 => 101.0,
                20 => 150.0,
                _ => 140.0,
            };
            s.push(if i == 5 { vec![] } else { vec![v; 3] });
        }
        let o = Options {
            threshold: Threshold::Absolute(5.0),
            ..Options::default()
        };
        let cps = detect(&s, &o);
        let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![20, 21]);
        assert_eq!((cps[0].before, cps[0].after), (101.0, 150.0));
        assert_eq!((cps[1].before, cps[1].after), (150.0, 140.0));
    }

    /// A change point as (index, before, after).
    type Step = (usize, f64, f64);

    /// A declared-deterministic series whose value changes at many commits (a binary size that
    /// most merges move a little): thirteen equal values, a +0.65 % jump, small steps on and
    /// below the 0.1 % threshold, an unmeasured commit, and runs repeated exactly.
    fn small_steps() -> (Vec<Vec<f64>>, Vec<Step>) {
        let mut lv = vec![100_000.0; 13];
        lv.extend([100_650.0; 7]); // 13: +0.65 %
        lv.push(100_700.0); // 20: +0.05 %, below the threshold
        lv.extend([100_900.0; 3]); // 21: +0.2 % against 100_700
        lv.extend([100_500.0; 2]); // 24: -0.4 % (23 is unmeasured)
        lv.push(100_520.0); // 26: +0.02 %, below
        lv.extend([100_400.0; 4]); // 27: -0.12 % against 100_520
        lv.push(100_501.0); // 31: +0.1006 %, just above
        let mut s: Vec<Vec<f64>> = lv
            .iter()
            .enumerate()
            .map(|(i, &v)| vec![v; 1 + i % 3])
            .collect();
        s[23].clear();
        let want = vec![
            (13, 100_000.0, 100_650.0),
            (21, 100_700.0, 100_900.0),
            (24, 100_900.0, 100_500.0),
            (27, 100_520.0, 100_400.0),
            (31, 100_400.0, 100_501.0),
        ];
        (s, want)
    }

    #[test]
    fn declared_deterministic_reports_every_step_at_its_commit() {
        let (s, want) = small_steps();
        let o = Options {
            threshold: Threshold::Relative(0.001),
            deterministic: true,
            ..Options::default()
        };
        let cps = detect(&s, &o);
        let got: Vec<Step> = cps.iter().map(|c| (c.index, c.before, c.after)).collect();
        assert_eq!(got, want);
        assert!(cps.iter().all(|c| c.deterministic && c.p_value == 0.0));
        assert!((cps[0].rel_change - 0.0065).abs() < 1e-12, "{cps:?}");
        assert!(
            (cps[3].rel_change + 0.0012 / 1.0052).abs() < 1e-4,
            "{cps:?}"
        );
        // The value changes at 7 of 30 pairs of commits: without the declaration it does not
        // look like a struct size, and no step is clear of the noise it seems to have.
        let undeclared = detect(
            &s,
            &Options {
                deterministic: false,
                ..o
            },
        );
        assert_ne!(
            undeclared.iter().map(|c| c.index).collect::<Vec<_>>(),
            want.iter().map(|w| w.0).collect::<Vec<_>>()
        );
    }

    #[test]
    fn declared_deterministic_thirteen_equal_then_a_jump() {
        // The series: thirteen identical values, then +0.65 % at a 0.1 % threshold,
        // reported with the values on either side, also as the newest commit.
        let o = Options {
            threshold: Threshold::Relative(0.001),
            deterministic: true,
            ..Options::default()
        };
        let mut s = vec![vec![66_625.0]; 13];
        s.push(vec![66_625.0 * 1.0065]);
        let cps = detect(&s, &o);
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 13);
        assert_eq!((cps[0].before, cps[0].after), (66_625.0, 66_625.0 * 1.0065));
        // A sub-threshold change is not one, a change to and from zero is.
        let s = vec![vec![1000.0], vec![1000.5], vec![0.0], vec![0.0], vec![7.0]];
        let idx: Vec<usize> = detect(&s, &o).iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![2, 4]);
    }

    #[test]
    fn declared_deterministic_with_differing_runs_is_analysed_as_noisy() {
        // Runs of one commit differ: the declaration does not hold, so robust segment levels
        // and a test decide, exactly as for an undeclared series.
        let s = noisy(&step(60, 30, 100.0, 110.0), 3, 1.0, 21);
        let declared = Options {
            deterministic: true,
            ..Options::default()
        };
        let cps = detect(&s, &declared);
        assert_eq!(cps, detect(&s, &Options::default()));
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 30);
        assert!(!cps[0].deterministic);
        assert!((cps[0].after / cps[0].before - 1.1).abs() < 0.02, "{cps:?}");
    }

    #[test]
    fn heavy_tails_do_not_fire() {
        // Cauchy noise around 100: no change in at least 48 of 50 seeds, and a step of 10
        // scale units is still found at its commit.
        let mut fired = 0;
        for seed in 0..50u64 {
            let mut rng = SplitMix64::new(seed);
            let mut cauchy = || {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                (std::f64::consts::PI * (u - 0.5)).tan()
            };
            let s: Vec<Vec<f64>> = (0..300).map(|_| vec![100.0 + cauchy()]).collect();
            if !detect(&s, &Options::default()).is_empty() {
                fired += 1;
            }
            let s: Vec<Vec<f64>> = (0..300)
                .map(|i| vec![if i < 170 { 100.0 } else { 110.0 } + cauchy()])
                .collect();
            let cps = detect(&s, &Options::default());
            assert!(
                cps.iter().any(|c| c.index.abs_diff(170) <= 3),
                "{seed}: {cps:?}"
            );
        }
        assert!(fired <= 2, "{fired} of 50");
    }

    #[test]
    fn varying_repeats_and_negative_values() {
        // levels around 0 (no log scale), repeats 1..5, every 7th commit unmeasured
        let mut rng = SplitMix64::new(77);
        let s: Vec<Vec<f64>> = (0..300)
            .map(|i| {
                if i % 7 == 3 {
                    return vec![];
                }
                let lv = if i < 120 { -1.0 } else { 1.0 };
                (0..1 + i % 5).map(|_| lv + 0.3 * rng.normal()).collect()
            })
            .collect();
        let cps = detect(&s, &Options::default());
        let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![120]);
        assert!((cps[0].after - cps[0].before - 2.0).abs() < 0.2, "{cps:?}");
    }

    #[test]
    fn step_on_drift() {
        let lv: Vec<f64> = (0..400)
            .map(|i| 1000.0 * (1.0 + 0.0002 * i as f64) * if i >= 250 { 1.03 } else { 1.0 })
            .collect();
        let s = noisy(&lv, 3, 10.0, 4);
        let idx: Vec<usize> = detect(&s, &Options::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx, vec![250]);
    }

    #[test]
    fn no_spurious_drift_with_one_step() {
        // proptest once found: a spurious slope plus a spurious boundary beat the honest fit
        let s = noisy(&step(54, 40, 100.0, 110.0), 2, 1.0, 347_673);
        let idx: Vec<usize> = detect(&s, &Options::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx, vec![40]);
    }

    #[test]
    fn change_at_the_newest_commits() {
        // the cron case: the last three commits regressed, five runs each
        let s = noisy(&step(100, 97, 100.0, 110.0), 5, 1.0, 3);
        let idx: Vec<usize> = detect(&s, &Options::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx, vec![97]);
        // extreme options do not overflow (segments as long as the series: only the end test
        // of the last quarter can see the step)
        let o = Options {
            min_segment: usize::MAX,
            ..Options::default()
        };
        assert!(detect(&s, &o).len() <= 1);
        let tu = Tuning {
            test_window: usize::MAX,
            ..Tuning::default()
        };
        assert_eq!(detect_tuned(&s, &Options::default(), &tu).len(), 1);
    }

    /// A step is found wherever it sits, down to one commit on a side (the newest commit
    /// included: "did the latest round regress?"), with levels of the data; a flat series
    /// with the same noise gets none.
    #[test]
    fn a_step_at_any_position_is_found_with_levels_of_the_data() {
        let mut missed = Vec::new();
        let mut wrong = Vec::new();
        for (n, cv, factor) in [(10usize, 0.03, 0.28), (40, 0.01, 1.05), (20, 0.02, 1.10)] {
            for at in 1..n {
                for seed in 0..3u64 {
                    let levels: Vec<f64> = (0..n)
                        .map(|i| if i >= at { 1000.0 * factor } else { 1000.0 })
                        .collect();
                    let mut rng = SplitMix64::new(seed * 7919 + at as u64 + n as u64);
                    let s: Vec<Vec<f64>> = levels
                        .iter()
                        .map(|&l| (0..5).map(|_| l * (1.0 + cv * rng.normal())).collect())
                        .collect();
                    let (lo, hi) = s
                        .iter()
                        .flatten()
                        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                    let cps = detect(&s, &Options::default());
                    for c in &cps {
                        assert!(c.before >= lo && c.before <= hi, "{c:?} outside {lo}..{hi}");
                        assert!(c.after >= lo && c.after <= hi, "{c:?} outside {lo}..{hi}");
                        if c.index.abs_diff(at) > 1 {
                            wrong.push((n, at, seed, c.index));
                        }
                    }
                    if !cps.iter().any(|c| c.index == at) {
                        missed.push((n, at, seed));
                    }
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "change points far from the step: {wrong:?}"
        );
        // 207 series; a few of the 5x-noise steps sit one commit off or are missed.
        assert!(missed.len() <= 8, "missed {}: {missed:?}", missed.len());
        for n in [10usize, 40] {
            for seed in 0..20u64 {
                let s = noisy(&vec![1000.0; n], 5, 20.0, seed);
                let cps = detect(&s, &Options::default());
                assert!(cps.is_empty(), "n {n} seed {seed}: {cps:?}");
            }
        }
    }

    #[test]
    fn build_jitter_is_not_a_change() {
        // each commit's level jitters by 3 sd of a run, five runs per commit
        let mut fired = 0;
        for seed in 0..100u64 {
            let mut rng = SplitMix64::new(seed);
            let s: Vec<Vec<f64>> = (0..200)
                .map(|_| {
                    let lv = 100.0 + 3.0 * rng.normal();
                    (0..5).map(|_| lv + rng.normal()).collect()
                })
                .collect();
            if !detect(&s, &Options::default()).is_empty() {
                fired += 1;
            }
        }
        assert!(fired <= 2, "{fired} of 100");
    }

    #[test]
    fn quantised_noise_is_not_deterministic() {
        // whole-millisecond timings, one run per commit: values repeat but change often
        let mut rng = SplitMix64::new(8);
        let s: Vec<Vec<f64>> = (0..300)
            .map(|_| vec![(100.0 + 0.7 * rng.normal()).round()])
            .collect();
        assert!(detect(&s, &Options::default()).is_empty());
    }

    #[test]
    fn gaps_map_to_series_positions() {
        let mut s = noisy(&step(60, 30, 100.0, 120.0), 3, 1.0, 5);
        for i in (0..60).step_by(4) {
            s[i].clear();
        }
        let cps = detect(&s, &Options::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 30);
        assert!((cps[0].rel_change - 0.2).abs() < 0.02);
    }

    #[test]
    fn drift_is_not_a_change() {
        let lv: Vec<f64> = (0..500).map(|i| 100.0 + 0.02 * i as f64).collect();
        let s = noisy(&lv, 1, 1.0, 9);
        assert!(detect(&s, &Options::default()).is_empty());
    }

    #[test]
    fn big_series_runs() {
        let mut lv = step(200_000, 120_000, 1000.0, 1010.0);
        for v in lv.iter_mut().skip(50_000).take(10_000) {
            *v *= 1.05;
        }
        let s = noisy(&lv, 1, 5.0, 11);
        let cps = detect(&s, &Options::default());
        let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![50_000, 60_000, 120_000]);
    }

    #[test]
    fn pure_noise_rarely_fires() {
        // at most 1 % of 200 seeds per length
        for n in [50, 200, 1000] {
            let mut fired = 0;
            for seed in 0..200u64 {
                let reps = [1, 3, 5][seed as usize % 3];
                let s = noisy(&vec![100.0; n], reps, 1.0, seed + 1000 * n as u64);
                if !detect(&s, &Options::default()).is_empty() {
                    fired += 1;
                }
            }
            assert!(
                fired <= 2,
                "n = {n}: {fired} of 200 noise series had a change point"
            );
        }
    }

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(64))]
        #[test]
        fn clean_step_found_exactly(n in 20usize..400, frac in 0.2f64..0.8, reps in 1usize..6,
                                    up in proptest::bool::ANY, seed in 0u64..1_000_000) {
            let at = ((n as f64 * frac) as usize).clamp(10, n - 10);
            let hi = if up { 110.0 } else { 90.0 };
            let s = noisy(&step(n, at, 100.0, hi), reps, 1.0, seed);
            // Found at its exact commit, once. (A false alarm elsewhere stays possible: pure
            // noise fires in under 1 % of series, see pure_noise_rarely_fires.)
            let cps = detect(&s, &Options::default());
            let near: Vec<usize> = cps.iter().map(|c| c.index).filter(|i| i.abs_diff(at) <= 5).collect();
            prop_assert_eq!(near, vec![at], "{:?}", cps);
        }

        #[test]
        fn never_panics(series in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![
                -1e3f64..1e3,
                Just(0.0), Just(f64::NAN), Just(f64::INFINITY), Just(-1e300), Just(1e300),
            ], 0..4), 0..60), min_segment in 0usize..8) {
            let o = Options { min_segment, ..Options::default() };
            let cps = detect(&series, &o);
            prop_assert!(cps.windows(2).all(|w| w[0].index < w[1].index));
            prop_assert!(cps.iter().all(|c| c.index < series.len() && (0.0..=1.0).contains(&c.p_value)));
        }
    }
}

#[cfg(test)]
mod regressions {
    use super::*;
    use crate::stats::compare::SplitMix64;

    /// proptest found: a small blip just before a 10 sigma step made the segmentation put a
    /// boundary there too; dropping both failing boundaries at once lost the real step.
    #[test]
    fn blip_next_to_a_big_step_does_not_hide_it() {
        let mut rng = SplitMix64::new(215215);
        let s: Vec<Vec<f64>> = (0..67)
            .map(|i| vec![if i < 48 { 100.0 } else { 90.0 } + rng.normal()])
            .collect();
        let idx: Vec<usize> = detect(&s, &Options::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx, vec![48]);
    }
}
