//! The segmentation: the exact optimal partition of the commit levels over every admissible
//! position (weighted squared error plus a penalty per boundary, functional pruning), and,
//! for a series whose windows tie no commits together, a linear drift fitted with it.

use super::prefix::Prefix;

/// Most candidate starts kept: functional pruning keeps a handful (about the logarithm of a
/// flat stretch's length), so this bounds only pathological series; the starts kept are the
/// cheapest ones, which is exact unless a segment longer than this beats them all.
const MAX_ACTIVE: usize = 4096;

/// A candidate start of the last segment: its position, the best cost up to it and the
/// prefix sums there (kept beside it: the starts are read in turn every step), and the
/// interval of (centred) levels for which it may still be the best start, now or later.
#[derive(Clone, Copy)]
struct Start {
    at: usize,
    f: f64,
    w: f64,
    s: f64,
    q: f64,
    lo: f64,
    hi: f64,
}

/// Optimal partitioning of `pre`'s commits into segments of constant level: boundaries at
/// positions `j` with `allowed(j)`, each paying `pen`. Returns the boundaries (first commit of
/// each new segment) and the penalised cost.
///
/// Functional pruning (FPOP, Maidstone et al. 2017, with one interval a start): the cost of
/// a last segment from start `s`, as a function of its level μ, grows by the same quadratic
/// for every start as commits are added, so once a new start `t` is cheaper at μ, `s` never
/// wins at μ again. Each start keeps the interval of μ where no later start has beaten it
/// yet, and is dropped when that interval is empty: on a flat stretch few survive, where
/// pruning by the minimum alone (PELT) keeps every start. The answer is PELT's
/// (`optimal_by_minimum` in the tests says so over random series), each step's cost linear
/// in the starts kept.
pub(super) fn optimal(pre: &Prefix, pen: f64, allowed: &[bool]) -> (Vec<usize>, f64) {
    let m = pre.len();
    if m == 0 {
        return (Vec::new(), 0.0);
    }
    // f[t]: best penalised cost of [0, t) with a boundary at t (t = m: the end).
    let mut f = vec![f64::INFINITY; m + 1];
    let mut back = vec![0usize; m + 1];
    f[0] = -pen;
    let start = |at: usize, f: f64| {
        let (w, s, q) = pre.at(at);
        Start {
            at,
            f,
            w,
            s,
            q,
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
        }
    };
    let mut alive: Vec<Start> = vec![start(0, f[0])];
    // Each start's cost of [start, t), in step.
    let mut costs: Vec<f64> = Vec::new();
    for t in 1..=m {
        if t < m && !allowed[t] {
            continue;
        }
        let (wt, st, qt) = pre.at(t);
        costs.clear();
        costs.extend(alive.iter().map(|c| {
            let (w, s) = (wt - c.w, st - c.s);
            if w <= 0.0 {
                0.0
            } else {
                (qt - c.q - s * s / w).max(0.0)
            }
        }));
        // The cheapest start (the earliest of equals, as the starts are in order).
        let (mut best, mut arg) = (f64::INFINITY, 0);
        for (c, cost) in alive.iter().zip(&costs) {
            let v = c.f + cost;
            if v < best {
                (best, arg) = (v, c.at);
            }
        }
        f[t] = best + pen;
        back[t] = arg;
        let ft = f[t];
        let mut k = 0;
        alive.retain_mut(|c| {
            let cost = costs[k];
            k += 1;
            // Where start c's segment, extended to t, costs no more than a new start at t
            // (f[t], whatever the level): an interval around the segment's mean.
            let room = ft - c.f - cost;
            if room < 0.0 {
                return false;
            }
            let w = wt - c.w;
            if w <= 0.0 {
                return true;
            }
            let (mean, r) = ((st - c.s) / w, (room / w).sqrt());
            c.lo = c.lo.max(mean - r);
            c.hi = c.hi.min(mean + r);
            // (A level met exactly, as in noiseless plateaus, is an interval of one point:
            // rounding must not empty it.)
            c.lo <= c.hi + 1e-9 * (1.0 + c.lo.abs().max(c.hi.abs()))
        });
        if alive.len() > MAX_ACTIVE {
            let mut scored: Vec<(f64, usize)> = alive
                .iter()
                .map(|c| {
                    let (w, s) = (wt - c.w, st - c.s);
                    let cost = if w <= 0.0 {
                        0.0
                    } else {
                        (qt - c.q - s * s / w).max(0.0)
                    };
                    (c.f + cost, c.at)
                })
                .collect();
            scored.select_nth_unstable_by(MAX_ACTIVE, |a, b| a.0.total_cmp(&b.0));
            scored.truncate(MAX_ACTIVE);
            let keep: std::collections::HashSet<usize> = scored.iter().map(|s| s.1).collect();
            alive.retain(|c| keep.contains(&c.at));
        }
        alive.push(start(t, ft));
    }
    let mut out = Vec::new();
    let mut t = back[m];
    while t > 0 {
        out.push(t);
        t = back[t];
    }
    out.reverse();
    (out, f[m])
}

/// The same partition with pruning by the minimum alone (PELT, no cap on the starts kept):
/// what [`optimal`] must equal.
#[cfg(test)]
pub(super) fn optimal_by_minimum(pre: &Prefix, pen: f64, allowed: &[bool]) -> (Vec<usize>, f64) {
    let m = pre.len();
    if m == 0 {
        return (Vec::new(), 0.0);
    }
    let mut f = vec![f64::INFINITY; m + 1];
    let mut back = vec![0usize; m + 1];
    f[0] = -pen;
    let mut active: Vec<usize> = vec![0];
    for t in 1..=m {
        if t < m && !allowed[t] {
            continue;
        }
        let (mut best, mut arg) = (f64::INFINITY, 0);
        for &s in &active {
            let v = f[s] + pre.cost(s, t);
            if v < best {
                (best, arg) = (v, s);
            }
        }
        f[t] = best + pen;
        back[t] = arg;
        active.retain(|&s| f[s] + pre.cost(s, t) <= f[t]);
        active.push(t);
    }
    let mut out = Vec::new();
    let mut t = back[m];
    while t > 0 {
        out.push(t);
        t = back[t];
    }
    out.reverse();
    (out, f[m])
}

/// The weighted least-squares slope shared by all segments (each its own intercept) and its
/// z score (weights are inverse variances, so the slope's sd is 1 / sqrt(Sxx)).
pub(super) fn pooled_slope(y: &[f64], w: &[f64], x: &[f64], bounds: &[usize]) -> (f64, f64) {
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

/// The segmentation of `y` once `slope` (per position in `x`) is removed.
pub(super) fn with_slope(
    y: &[f64],
    w: &[f64],
    x: &[f64],
    slope: f64,
    pen: f64,
    allowed: &[bool],
) -> (Vec<usize>, f64) {
    let yd: Vec<f64> = y.iter().zip(x).map(|(v, p)| v - slope * p).collect();
    optimal(&Prefix::new(&yd, w), pen, allowed)
}

/// Drift and steps fitted together, for series whose windows tie no commits (each commit
/// measured at its own time): the slope that minimises the penalised cost among the
/// alternating (segmentation, pooled within-segment slope) estimates, kept only when it pays
/// [`SLOPE_PEN`] of a boundary's penalty and is itself significant (|z| >= [`SLOPE_Z`]).
/// Returns the slope and the segmentation with it removed.
pub(super) fn drift(
    y: &[f64],
    w: &[f64],
    x: &[f64],
    pen: f64,
    allowed: &[bool],
) -> (f64, Vec<usize>) {
    // Long series: the slope is chosen on block means (steps stay steps, drift stays drift)
    // and confirmed at full resolution.
    const COARSE_ABOVE: usize = 4000;
    if y.len() > COARSE_ABOVE {
        let block = y.len().div_ceil(COARSE_ABOVE / 4);
        let (cy, cw, cx) = coarsen(y, w, x, block);
        let cpen = pen * (cy.len() as f64).ln() / (y.len() as f64).ln();
        let (s, _) = fit_drift(&cy, &cw, &cx, cpen, &vec![true; cy.len()]);
        if s == 0.0 {
            return (0.0, with_slope(y, w, x, 0.0, pen, allowed).0);
        }
        // The two segmentations are independent: on two cores at once.
        let ((b0, c0), (b, c)) = rayon::join(
            || with_slope(y, w, x, 0.0, pen, allowed),
            || with_slope(y, w, x, s, pen, allowed),
        );
        let z = pooled_slope(y, w, x, &b).1;
        return if c + SLOPE_PEN * pen < c0 && z.abs() >= SLOPE_Z {
            (s, b)
        } else {
            (0.0, b0)
        };
    }
    fit_drift(y, w, x, pen, allowed)
}

/// Smallest |z| of a drift's slope for it to be kept.
const SLOPE_Z: f64 = 3.0;

/// Means of consecutive blocks of `block` commits (weights summed).
fn coarsen(y: &[f64], w: &[f64], x: &[f64], block: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for ((yc, wc), xc) in y.chunks(block).zip(w.chunks(block)).zip(x.chunks(block)) {
        let sw: f64 = wc.iter().sum();
        out.0
            .push(yc.iter().zip(wc).map(|(a, b)| a * b).sum::<f64>() / sw);
        out.1.push(sw);
        out.2
            .push(xc.iter().zip(wc).map(|(a, b)| a * b).sum::<f64>() / sw);
    }
    out
}

/// A slope is one parameter where a boundary is two (its place and its level): half a penalty.
const SLOPE_PEN: f64 = 0.5;

fn fit_drift(y: &[f64], w: &[f64], x: &[f64], pen: f64, allowed: &[bool]) -> (f64, Vec<usize>) {
    let fit = |s: f64| with_slope(y, w, x, s, pen, allowed);
    let (b0, c0) = fit(0.0);
    // Alternating (segmentation, pooled slope) sticks in staircases that absorb part of a
    // drift: multiples of its estimate and of the plain regression slope are tried too.
    let mut s = pooled_slope(y, w, x, &b0).0;
    for _ in 0..3 {
        s = pooled_slope(y, w, x, &fit(s).0).0;
    }
    let global = pooled_slope(y, w, x, &[]).0;
    let mut best = (0.0, c0);
    for b in [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0]
        .iter()
        .map(|f| f * s)
        .chain([0.5, 1.0].iter().map(|f| f * global))
    {
        if b == 0.0 || !b.is_finite() {
            continue;
        }
        let c = fit(b).1 + SLOPE_PEN * pen;
        if c < best.1 {
            best = (b, c);
        }
    }
    if best.0 == 0.0 {
        return (0.0, b0);
    }
    let b = fit(best.0).0;
    if pooled_slope(y, w, x, &b).1.abs() >= SLOPE_Z {
        (best.0, b)
    } else {
        (0.0, b0)
    }
}

#[cfg(test)]
mod tests {
    use super::{optimal, optimal_by_minimum};
    use crate::stats::changepoint::prefix::Prefix;
    use crate::stats::compare::SplitMix64;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(256))]
        /// Functional pruning gives pruning by the minimum's answer: the same boundaries and
        /// cost on random series of steps, noise, outliers, plateaus, weights and commits
        /// that may not start a segment.
        #[test]
        fn functional_pruning_is_exact(
            seed in 0u64..1_000_000,
            n in 1usize..400,
            steps in 0usize..12,
            noise in prop_oneof![Just(0.0), 0.001f64..3.0],
            pen in 0.5f64..40.0,
            joined in 0.0f64..0.3,
        ) {
            let mut rng = SplitMix64::new(seed);
            let at: Vec<usize> = (0..steps).map(|_| (rng.next_u64() % n as u64) as usize).collect();
            let mut level = 0.0;
            let y: Vec<f64> = (0..n)
                .map(|i| {
                    if at.contains(&i) {
                        level += 10.0 * rng.normal();
                    }
                    let outlier = if rng.next_u64().is_multiple_of(50) { 20.0 } else { 0.0 };
                    level + noise * rng.normal() + outlier
                })
                .collect();
            let w: Vec<f64> = (0..n).map(|_| 0.5 + (rng.next_u64() % 4) as f64).collect();
            let allowed: Vec<bool> = (0..n)
                .map(|_| (rng.next_u64() % 1000) as f64 / 1000.0 >= joined)
                .collect();
            let pre = Prefix::new(&y, &w);
            let (fast, cost_fast) = optimal(&pre, pen, &allowed);
            let (exact, cost_exact) = optimal_by_minimum(&pre, pen, &allowed);
            prop_assert!((cost_fast - cost_exact).abs() <= 1e-9 * (1.0 + cost_exact.abs()));
            prop_assert_eq!(fast, exact);
        }
    }
}
