//! The window effects solved exactly: the least squares of the two-way model (a run is its
//! commit's level plus its window's effect plus noise) by conjugate gradients on the effects
//! alone (each level is the mean of its runs less their effects). Alternating means settle at
//! once where every window holds every commit (interleaved rounds), but crawl where windows
//! are bridged by one commit measured in both (a search's windows and a later `run`): there
//! the effects would be left half estimated, and a machine state taken for a step.

/// Most conjugate-gradient iterations (each one pass over the runs).
const MAX_ITER: usize = 500;

/// What bridged windows leave uncertain: each window effect's variance (in units of a run's
/// variance until [`Bridge::with_sigma`]) and each commit's share of each tied window.
pub(super) struct Bridge {
    /// Per window: the variance of its estimated effect.
    var: Vec<f64>,
    /// Per commit: (window, share of the commit's runs in it).
    share: Vec<Vec<(u32, f64)>>,
}

impl Bridge {
    /// The variances in the units of the analysis scale, `sigma` a run's sd.
    pub(super) fn with_sigma(mut self, sigma: f64) -> Bridge {
        self.var.iter_mut().for_each(|v| *v *= sigma * sigma);
        self
    }

    /// The variance the effects add to the difference of the weighted mean levels of [b, c)
    /// and [a, b) (weights `w`): Σ over windows of (the new side's share of it less the old
    /// side's)² times its variance (the windows' errors taken as independent: an upper
    /// bound where they are chained). Commits measured in the same windows alike cancel.
    pub(super) fn contrast(&self, w: &[f64], a: usize, b: usize, c: usize) -> f64 {
        let (wl, wr): (f64, f64) = (w[a..b].iter().sum(), w[b..c].iter().sum());
        if wl <= 0.0 || wr <= 0.0 {
            return 0.0;
        }
        let mut acc: std::collections::HashMap<u32, f64, foldhash::fast::RandomState> =
            Default::default();
        for (j, (wj, shares)) in w[a..c].iter().zip(&self.share[a..c]).enumerate() {
            let side = if a + j < b { -wj / wl } else { wj / wr };
            for &(win, f) in shares {
                *acc.entry(win).or_default() += side * f;
            }
        }
        // (Summed in window order: the same total whatever the map's order.)
        let mut terms: Vec<(u32, f64)> = acc.into_iter().collect();
        terms.sort_unstable_by_key(|t| t.0);
        terms
            .iter()
            .map(|&(win, d)| d * d * self.var[win as usize])
            .sum()
    }
}

/// The effects of windows bridged by few commits: solved exactly on the runs as they are (a
/// bridge's runs would be clipped as outliers around effects not yet known), then twice on
/// the runs `clip`ped around the fit so far; centred to average 0 over the runs. With them,
/// the [`Bridge`]: each effect's variance from the runs that tie its window to others (a
/// commit measured there and elsewhere informs it by n_in · n_out / n runs).
pub(super) fn bridged(
    runs: &[Vec<(f64, u32)>],
    start: &[f64],
    none: u32,
    clip: impl Fn(&[(f64, u32)], &[f64]) -> Vec<(f64, u32)>,
) -> (Vec<f64>, Bridge) {
    let mut effect = solve(runs, start, none);
    for _ in 0..2 {
        let clipped: Vec<Vec<(f64, u32)>> = runs.iter().map(|r| clip(r, &effect)).collect();
        effect = solve(&clipped, &effect, none);
    }
    let (mut sum, mut count) = (0.0, 0usize);
    for &(_, w) in runs.iter().flatten().filter(|x| x.1 != none) {
        sum += effect[w as usize];
        count += 1;
    }
    let mean = if count > 0 { sum / count as f64 } else { 0.0 };
    effect.iter_mut().for_each(|e| *e -= mean);
    let mut info = vec![0.0; start.len()];
    let share: Vec<Vec<(u32, f64)>> = runs
        .iter()
        .map(|r| {
            let n = r.len() as f64;
            let mut by: Vec<(u32, f64)> = Vec::new();
            for &(_, w) in r.iter().filter(|x| x.1 != none) {
                match by.iter_mut().find(|x| x.0 == w) {
                    Some(x) => x.1 += 1.0,
                    None => by.push((w, 1.0)),
                }
            }
            for &(w, k) in &by {
                info[w as usize] += k * (n - k) / n;
            }
            by.iter().map(|&(w, k)| (w, k / n)).collect()
        })
        .collect();
    // A window no commit ties to another is its stratum's own machine state: the strata say
    // what that leaves uncertain, not this.
    let var = info
        .iter()
        .map(|&i| if i > 0.0 { 1.0 / i } else { 0.0 })
        .collect();
    (effect, Bridge { var, share })
}

/// The effects of the `k` windows of `runs` (each commit's runs: value and window, `none` for
/// a run in no tied window, whose effect is 0) that minimise the squared residuals, starting
/// from `start`. Deterministic (sums in run order).
pub(super) fn solve(runs: &[Vec<(f64, u32)>], start: &[f64], none: u32) -> Vec<f64> {
    let k = start.len();
    // n_w: runs per window; b = A·e* where A e = n_w e_w - Σ_{r in w} (Σ_{r' in c(r)} e_w(r')) / n_c.
    let mut n_w = vec![0.0; k];
    let mut b = vec![0.0; k];
    for r in runs {
        if r.is_empty() {
            continue;
        }
        let mean = r.iter().map(|x| x.0).sum::<f64>() / r.len() as f64;
        for &(x, w) in r.iter().filter(|x| x.1 != none) {
            n_w[w as usize] += 1.0;
            b[w as usize] += x - mean;
        }
    }
    let apply = |e: &[f64], out: &mut [f64]| {
        for (o, (n, v)) in out.iter_mut().zip(n_w.iter().zip(e)) {
            *o = n * v;
        }
        for r in runs {
            if r.is_empty() {
                continue;
            }
            let s = r
                .iter()
                .filter(|x| x.1 != none)
                .map(|x| e[x.1 as usize])
                .sum::<f64>()
                / r.len() as f64;
            for &(_, w) in r.iter().filter(|x| x.1 != none) {
                out[w as usize] -= s;
            }
        }
    };
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut e = start.to_vec();
    let mut ae = vec![0.0; k];
    apply(&e, &mut ae);
    let mut res: Vec<f64> = b.iter().zip(&ae).map(|(x, y)| x - y).collect();
    let tol = 1e-24 * dot(&b, &b).max(1e-300);
    let mut p = res.clone();
    let mut rr = dot(&res, &res);
    let mut ap = vec![0.0; k];
    for _ in 0..MAX_ITER {
        if rr <= tol {
            break;
        }
        apply(&p, &mut ap);
        let pap = dot(&p, &ap);
        if pap.is_nan() || pap <= 0.0 {
            break;
        }
        let alpha = rr / pap;
        for i in 0..k {
            e[i] += alpha * p[i];
            res[i] -= alpha * ap[i];
        }
        let next = dot(&res, &res);
        let beta = next / rr;
        rr = next;
        for i in 0..k {
            p[i] = res[i] + beta * p[i];
        }
    }
    if e.iter().all(|v| v.is_finite()) {
        e
    } else {
        start.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::solve;

    /// Two windows bridged by one commit: the second window's machine runs 30 % low; the
    /// effects come out exactly, whatever the start.
    #[test]
    fn bridged_windows_are_solved_exactly() {
        const N: u32 = u32::MAX;
        let a = |v: f64| (v, 0u32);
        let b = |v: f64| (v, 1u32);
        let runs = vec![
            vec![a(1.0), a(1.0), a(1.0)],
            vec![a(2.0), a(2.0), b(1.7), (2.0, N)],
            vec![b(2.7), b(2.7)],
        ];
        let e = solve(&runs, &[0.0, 0.0], N);
        // The bridge's level is 2.0 (its untied run has no effect): window 0 adds 0, window 1
        // takes 0.3 off.
        assert!((e[0] - 0.0).abs() < 1e-9, "{e:?}");
        assert!((e[1] + 0.3).abs() < 1e-9, "{e:?}");
    }
}
