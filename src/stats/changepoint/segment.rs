//! The segmentation: the exact optimal partition of the commit levels over every admissible
//! position (weighted squared error plus a penalty per boundary, PELT pruning), and, for a
//! series whose windows tie no commits together, a linear drift fitted with it.

use super::prefix::Prefix;

/// Most candidate starts PELT keeps: a flat stretch prunes none, so a series of millions of
/// flat commits would cost their square; the starts kept are the cheapest ones, which is
/// exact unless a segment longer than this beats them all (then it is off by a little cost).
const MAX_ACTIVE: usize = 4096;

/// Optimal partitioning of `pre`'s commits into segments of constant level: boundaries at
/// positions `j` with `allowed(j)`, each paying `pen`. Returns the boundaries (first commit of
/// each new segment) and the penalised cost.
pub(super) fn optimal(pre: &Prefix, pen: f64, allowed: &[bool]) -> (Vec<usize>, f64) {
    let m = pre.len();
    if m == 0 {
        return (Vec::new(), 0.0);
    }
    // f[t]: best penalised cost of [0, t) with a boundary at t (t = m: the end).
    let mut f = vec![f64::INFINITY; m + 1];
    let mut back = vec![0usize; m + 1];
    f[0] = -pen;
    let mut active: Vec<usize> = vec![0];
    let mut scored: Vec<(f64, usize)> = Vec::new();
    for t in 1..=m {
        if t < m && !allowed[t] {
            continue;
        }
        scored.clear();
        scored.extend(active.iter().map(|&s| (f[s] + pre.cost(s, t), s)));
        let (best, arg) = scored
            .iter()
            .copied()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("0 is always active");
        f[t] = best + pen;
        back[t] = arg;
        // PELT: a start that is worse than the best by more than a penalty never wins later.
        scored.retain(|&(v, _)| v <= best + pen);
        if scored.len() > MAX_ACTIVE {
            scored.select_nth_unstable_by(MAX_ACTIVE, |a, b| a.0.total_cmp(&b.0));
            scored.truncate(MAX_ACTIVE);
        }
        active.clear();
        active.extend(scored.iter().map(|&(_, s)| s));
        active.sort_unstable();
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
        let (b0, c0) = with_slope(y, w, x, 0.0, pen, allowed);
        if s == 0.0 {
            return (0.0, b0);
        }
        let (b, c) = with_slope(y, w, x, s, pen, allowed);
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
