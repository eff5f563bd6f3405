//! Change-point detection over a commit-ordered series of raw samples: robust per-commit
//! levels, a penalised optimal segmentation over multiscale candidates, drift removal, and
//! confirmation of every boundary by a Mann-Whitney test on raw samples (Bonferroni) and the
//! threshold.
//!
//! Outline (see `detect`):
//! 1. per-commit level = mean of the commit's samples winsorised at ±3σ around its median
//!    (σ from pairs of samples of the same commit), or the median when there are no repeats;
//! 2. noise: σ within commits and the robust spread of first differences between commits,
//!    which also catches build-to-build jitter; each commit gets a variance;
//! 3. isolated outliers: levels clipped to ±3 sd around a running median of 5 commits;
//! 4. candidates: local maxima of a two-window z statistic at scales min_segment·2^k;
//! 5. optimal partitioning (weighted L2, penalty `PENALTY_C`·ln m per boundary, minimum
//!    segment length) restricted to the candidates, with PELT pruning;
//! 6. a global linear drift, estimated from the slopes inside the segments, is removed and
//!    steps 4-5 are repeated, so slow drift is not cut into steps;
//! 7. each boundary is moved to the best split between its neighbours, then confirmed by a
//!    Mann-Whitney U test on the raw (detrended) samples of the neighbouring segments (within
//!    `self.window` commits) at alpha / K and by the threshold; failures are merged away and
//!    the survivors re-tested until stable.
//!
//! Deterministic metrics (every commit's samples equal and most consecutive commits equal) skip
//! the statistics: every change of value is a candidate at its exact commit, kept when the
//! threshold is reached.

use super::compare::mann_whitney_u;
use super::summary::median_in_place;
use super::{rel_change, Threshold};

/// Settings of [`detect`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Family-wise error rate of the confirmation tests (Bonferroni over the boundaries).
    pub alpha: f64,
    /// Smallest change of the neighbouring levels that counts.
    pub threshold: Threshold,
    /// Fewest commits in a segment (deterministic metrics ignore it: one commit is enough).
    pub min_segment: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.001,
            threshold: Threshold::Relative(0.0),
            min_segment: 3,
        }
    }
}

/// One detected shift of the level.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ChangePoint {
    /// Position in `series` of the first (measured) commit of the new level.
    pub index: usize,
    /// Median level of the segment before (near the boundary, drift removed).
    pub before: f64,
    /// Median level of the segment after (near the boundary, drift removed).
    pub after: f64,
    /// after / before - 1.
    pub rel_change: f64,
    /// Two-sided Mann-Whitney p-value of the raw samples of the neighbouring segments (not
    /// multiplied by the number of boundaries; 0 for two different zero-spread segments).
    pub p_value: f64,
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
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            penalty_c: 2.5,
            candidate_z: 2.0,
            clip_k: 3.0,
            test_window: 2000,
            drift_rounds: 4,
        }
    }
}

/// Commits that have at least one finite sample.
struct Kept<'a> {
    /// position in `series`
    pos: Vec<usize>,
    /// finite samples of each kept commit
    samples: Vec<Vec<f64>>,
    _series: std::marker::PhantomData<&'a ()>,
}

/// Finds the positions where the level of `series` shifts.
///
/// `series[i]` are the raw samples of the i-th commit in commit order (may be empty: the commit
/// was not measured; counts may vary). Non-finite samples are ignored. The result is sorted by
/// index; each point is confirmed by a two-sample test at `opts.alpha` (family-wise) and reaches
/// `opts.threshold`. Deterministic: the same input gives the same output.
pub fn detect(series: &[Vec<f64>], opts: &Options) -> Vec<ChangePoint> {
    detect_tuned(series, opts, &Tuning::default())
}

/// [`detect`] with explicit internal constants (benchmarking only).
#[doc(hidden)]
pub fn detect_tuned(series: &[Vec<f64>], opts: &Options, tu: &Tuning) -> Vec<ChangePoint> {
    let kept = keep(series);
    let m = kept.pos.len();
    if m < 2 {
        return Vec::new();
    }
    let alpha = if opts.alpha > 0.0 && opts.alpha < 1.0 {
        opts.alpha
    } else {
        Options::default().alpha
    };
    let mut medians: Vec<f64> = kept
        .samples
        .iter()
        .map(|s| median_in_place(&mut s.clone()).unwrap_or(0.0))
        .collect();
    if is_deterministic(&kept, &medians) {
        let bounds: Vec<usize> = (1..m).filter(|&j| medians[j] != medians[j - 1]).collect();
        let ctx = Ctx {
            kept: &kept,
            y: &medians,
            w: &vec![1.0; m],
            slope: 0.0,
            min_seg: 1,
            alpha,
            threshold: opts.threshold,
            window: tu.test_window.max(1),
        };
        return ctx.confirm(bounds, false);
    }
    let min_seg = opts.min_segment.max(1);
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
    let Some(s_b) = between_sigma(&levels, &inv_r) else {
        return Vec::new();
    };
    // Variance of each commit's level: extra between-commit jitter tau^2 plus sampling noise.
    let var: Vec<f64> = match sigma_w {
        Some(sw) => {
            let mut ir = inv_r.clone();
            let typical = median_in_place(&mut ir).unwrap_or(1.0);
            let tau2 = (s_b * s_b - sw * sw * typical).max(0.0);
            inv_r.iter().map(|ir| tau2 + sw * sw * ir).collect()
        }
        None => vec![s_b * s_b; m],
    };
    let w: Vec<f64> = var.iter().map(|v| 1.0 / v).collect();
    let y = clip_outliers(&levels, &var, tu.clip_k);
    medians.clear();

    let posf: Vec<f64> = kept.pos.iter().map(|&p| p as f64).collect();
    let pen = tu.penalty_c * (m as f64).ln().max(1.0);
    // Penalised cost of the best segmentation once a drift `slope` is removed; a non-zero
    // slope pays half a penalty (one parameter; a boundary has two: place and level).
    let fit = |slope: f64| -> (Vec<usize>, f64) {
        let yd: Vec<f64> = y.iter().zip(&posf).map(|(v, p)| v - slope * p).collect();
        let pre = Prefix::new(&yd, &w);
        let cands = candidates(&pre, min_seg, tu.candidate_z);
        let (b, c) = segment(&pre, &cands, pen, min_seg);
        (b, if slope == 0.0 { c } else { c + pen / 2.0 })
    };
    // The drift and the steps are fitted jointly: alternating (segment, pooled within-segment
    // slope) gets stuck in staircases that absorb part of the drift, so the penalised cost is
    // also minimised over a grid of slopes around the alternating estimate.
    let mut best = fit(0.0);
    let mut slope = 0.0;
    let mut it_slope = 0.0;
    let mut it_bounds = best.0.clone();
    for _ in 0..tu.drift_rounds {
        it_slope = pooled_slope(&y, &w, &posf, &it_bounds);
        it_bounds = fit(it_slope).0;
    }
    let global = pooled_slope(&y, &w, &posf, &[]);
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
    let bounds = best.0;
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
    };
    ctx.confirm(bounds, true)
}

fn keep(series: &[Vec<f64>]) -> Kept<'_> {
    let mut pos = Vec::new();
    let mut samples = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let f: Vec<f64> = s.iter().copied().filter(|x| x.is_finite()).collect();
        if !f.is_empty() {
            pos.push(i);
            samples.push(f);
        }
    }
    Kept {
        pos,
        samples,
        _series: std::marker::PhantomData,
    }
}

/// Every commit's samples are equal and most consecutive commits have the same value:
/// a struct size, an allocation count.
fn is_deterministic(kept: &Kept, medians: &[f64]) -> bool {
    let flat = kept.samples.iter().all(|s| s.iter().all(|x| *x == s[0]));
    if !flat {
        return false;
    }
    let changes = medians.windows(2).filter(|w| w[0] != w[1]).count();
    2 * changes < medians.len().saturating_sub(1).max(1)
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
    let mut d: Vec<f64> = levels
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
    d.clear();
    (s > 0.0 && s.is_finite()).then_some(s)
}

/// Clips each level to ±CLIP_K sd around the running median of 5 commits; a running median
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

/// Weighted prefix sums for O(1) segment costs.
struct Prefix {
    w: Vec<f64>,
    s: Vec<f64>,
    q: Vec<f64>,
}

impl Prefix {
    fn new(y: &[f64], w: &[f64]) -> Prefix {
        // Centre on the median so long segments of large levels do not cancel digits.
        let mut c = y.to_vec();
        let centre = median_in_place(&mut c).unwrap_or(0.0);
        let n = y.len();
        let (mut pw, mut ps, mut pq) = (vec![0.0; n + 1], vec![0.0; n + 1], vec![0.0; n + 1]);
        for i in 0..n {
            let v = y[i] - centre;
            pw[i + 1] = pw[i] + w[i];
            ps[i + 1] = ps[i] + w[i] * v;
            pq[i + 1] = pq[i] + w[i] * v * v;
        }
        Prefix {
            w: pw,
            s: ps,
            q: pq,
        }
    }
    fn len(&self) -> usize {
        self.w.len() - 1
    }
    /// Weighted sum of squares around the weighted mean of [a, b).
    fn cost(&self, a: usize, b: usize) -> f64 {
        let w = self.w[b] - self.w[a];
        if w <= 0.0 {
            return 0.0;
        }
        let s = self.s[b] - self.s[a];
        (self.q[b] - self.q[a] - s * s / w).max(0.0)
    }
    fn mean(&self, a: usize, b: usize) -> f64 {
        let w = self.w[b] - self.w[a];
        if w <= 0.0 {
            0.0
        } else {
            (self.s[b] - self.s[a]) / w
        }
    }
    /// z score of the difference of the weighted means of [a, t) and [t, b).
    fn z(&self, a: usize, t: usize, b: usize) -> f64 {
        let wl = self.w[t] - self.w[a];
        let wr = self.w[b] - self.w[t];
        if wl <= 0.0 || wr <= 0.0 {
            return 0.0;
        }
        (self.mean(t, b) - self.mean(a, t)) / (1.0 / wl + 1.0 / wr).sqrt()
    }
}

/// Positions where a two-window z score at some scale h = min_seg·2^k is a local maximum
/// within ±h and at least `CANDIDATE_Z`.
fn candidates(pre: &Prefix, min_seg: usize, zmin: f64) -> Vec<usize> {
    let m = pre.len();
    let mut out = Vec::new();
    let mut h = min_seg.max(1);
    let mut z = vec![0.0; m + 1];
    while 2 * h <= m {
        for (t, zt) in z.iter_mut().enumerate() {
            *zt = if t >= h && t + h <= m {
                pre.z(t - h, t, t + h).abs()
            } else {
                0.0
            };
        }
        let wmax = window_max(&z, h);
        for t in h..=m - h {
            if z[t] >= zmin && z[t] >= wmax[t] {
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

/// Weighted least-squares slope shared by all segments (each with its own intercept).
fn pooled_slope(y: &[f64], w: &[f64], x: &[f64], bounds: &[usize]) -> f64 {
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
    if sxx > 0.0 {
        sxy / sxx
    } else {
        0.0
    }
}

/// What the confirmation step needs.
struct Ctx<'a> {
    kept: &'a Kept<'a>,
    /// detrended levels
    y: &'a [f64],
    w: &'a [f64],
    /// drift per series position, removed from raw samples before testing
    slope: f64,
    min_seg: usize,
    alpha: f64,
    threshold: Threshold,
    window: usize,
}

/// A tested boundary.
struct Tested {
    p: f64,
    before: f64,
    after: f64,
    reached: bool,
}

impl Ctx<'_> {
    /// Refines, tests and prunes `bounds` until every survivor passes; returns change points.
    fn confirm(&self, mut bounds: Vec<usize>, refine: bool) -> Vec<ChangePoint> {
        let m = self.y.len();
        let pre = Prefix::new(self.y, self.w);
        for _round in 0..50 {
            if bounds.is_empty() {
                return Vec::new();
            }
            if refine {
                self.refine(&pre, &mut bounds);
            }
            let k = bounds.len() as f64;
            let tested: Vec<Tested> = (0..bounds.len())
                .map(|i| {
                    let a = if i == 0 { 0 } else { bounds[i - 1] };
                    let c = bounds.get(i + 1).copied().unwrap_or(m);
                    self.test(a, bounds[i], c)
                })
                .collect();
            let pass: Vec<bool> = tested
                .iter()
                .map(|t| t.reached && t.p * k < self.alpha)
                .collect();
            if pass.iter().all(|&p| p) {
                return bounds
                    .iter()
                    .zip(&tested)
                    .map(|(&b, t)| ChangePoint {
                        index: self.kept.pos[b],
                        before: t.before,
                        after: t.after,
                        rel_change: rel_change(t.before, t.after),
                        p_value: t.p,
                    })
                    .collect();
            }
            bounds = bounds
                .iter()
                .zip(&pass)
                .filter(|(_, &ok)| ok)
                .map(|(&b, _)| b)
                .collect();
        }
        Vec::new()
    }

    /// Moves each boundary to the best single split between its neighbours.
    fn refine(&self, pre: &Prefix, bounds: &mut [usize]) {
        let m = self.y.len();
        for i in 0..bounds.len() {
            let a = if i == 0 { 0 } else { bounds[i - 1] };
            let c = bounds.get(i + 1).copied().unwrap_or(m);
            let lo = (a + self.min_seg).max(bounds[i].saturating_sub(self.window));
            let hi = (c.saturating_sub(self.min_seg)).min(bounds[i] + self.window);
            if lo > hi {
                continue;
            }
            let (wa, wc) = (
                a.max(lo.saturating_sub(self.window)),
                c.min(hi + self.window),
            );
            let total = pre.cost(wa, wc);
            let mut best = bounds[i];
            let mut best_gain = total - pre.cost(wa, best) - pre.cost(best, wc);
            for t in lo..=hi {
                let g = total - pre.cost(wa, t) - pre.cost(t, wc);
                if g > best_gain {
                    best_gain = g;
                    best = t;
                }
            }
            bounds[i] = best;
        }
    }

    /// Raw samples of kept commits [a, b), drift removed relative to position `at`.
    fn raw(&self, a: usize, b: usize, at: usize) -> Vec<f64> {
        let at = self.kept.pos[at] as f64;
        let mut v = Vec::new();
        for j in a..b {
            let adj = self.slope * (self.kept.pos[j] as f64 - at);
            v.extend(self.kept.samples[j].iter().map(|x| x - adj));
        }
        v
    }

    fn test(&self, a: usize, b: usize, c: usize) -> Tested {
        let lo = a.max(b.saturating_sub(self.window));
        let hi = c.min(b + self.window);
        let mut left = self.raw(lo, b, b);
        let mut right = self.raw(b, hi, b);
        let flat = |v: &[f64]| v.iter().all(|x| *x == v[0]);
        let p = if left.is_empty() || right.is_empty() {
            1.0
        } else if flat(&left) && flat(&right) {
            if left[0] == right[0] {
                1.0
            } else {
                0.0
            }
        } else {
            mann_whitney_u(&left, &right).map_or(1.0, |r| r.p_value)
        };
        let before = median_in_place(&mut left).unwrap_or(f64::NAN);
        let after = median_in_place(&mut right).unwrap_or(f64::NAN);
        Tested {
            p,
            before,
            after,
            reached: self.threshold.reached(before, after),
        }
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
        };
        let _ = detect(&noisy(&step(30, 15, 10.0, 20.0), 1, 1.0, 1), &bad);
    }

    #[test]
    fn deterministic_steps_exact() {
        let mut lv = vec![3064.0; 20];
        lv.extend(vec![3072.0; 1]);
        lv.extend(vec![3080.0; 30]);
        let s: Vec<Vec<f64>> = lv.iter().map(|&v| vec![v]).collect();
        let cps = detect(&s, &Options::default());
        let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(idx, vec![20, 21]);
        assert_eq!(cps[0].p_value, 0.0);
        assert_eq!((cps[0].before, cps[0].after), (3064.0, 3072.0));
        // threshold filters a small step
        let o = Options {
            threshold: Threshold::Relative(0.005),
            ..Options::default()
        };
        let cps = detect(&s, &o);
        assert!(cps.is_empty(), "{cps:?}");
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
        let mut fired = 0;
        for seed in 0..200u64 {
            let n = [50, 200, 1000][seed as usize % 3];
            let reps = [1, 3, 5][(seed / 3) as usize % 3];
            let s = noisy(&vec![100.0; n], reps, 1.0, seed);
            if !detect(&s, &Options::default()).is_empty() {
                fired += 1;
            }
        }
        assert!(fired <= 2, "{fired} of 200 noise series had a change point");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn clean_step_found_exactly(n in 20usize..400, frac in 0.2f64..0.8, reps in 1usize..6,
                                    up in proptest::bool::ANY, seed in 0u64..1_000_000) {
            let at = ((n as f64 * frac) as usize).clamp(10, n - 10);
            let hi = if up { 110.0 } else { 90.0 };
            let s = noisy(&step(n, at, 100.0, hi), reps, 1.0, seed);
            let cps = detect(&s, &Options::default());
            prop_assert_eq!(cps.len(), 1, "{:?}", cps);
            prop_assert_eq!(cps[0].index, at);
        }

        #[test]
        fn deterministic_output(n in 3usize..200, seed in 0u64..1000) {
            let s = noisy(&step(n, n / 2, 10.0, 11.0), 2, 0.3, seed);
            let o = Options::default();
            prop_assert_eq!(detect(&s, &o), detect(&s, &o));
        }
    }
}
