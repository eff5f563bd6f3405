//! The window effects solved exactly: the least squares of the two-way model (a run is its
//! commit's level plus its window's effect plus noise) by conjugate gradients on the effects
//! alone (each level is the mean of its runs less their effects). Alternating means settle at
//! once where every window holds every commit (interleaved rounds), but crawl where windows
//! are bridged by one commit measured in both (a search's windows and a later `run`): there
//! the effects would be left half estimated, and a machine state taken for a step.

/// Most conjugate-gradient iterations (each one pass over the runs).
const MAX_ITER: usize = 500;

/// What bridged windows leave uncertain: the effects' estimates are correlated along the
/// chains of commits that link their windows, so a contrast of levels measured in different
/// windows carries σ² d'A⁺d, A the effects' normal matrix within the stratum and d what the
/// contrast reads of each effect (see [`Bridge::var`]).
pub(super) struct Bridge {
    /// Per stratum: its windows (global ids) and, per its commit, the commit's runs and its
    /// runs per window (local window index, count).
    strata: Vec<Stratum>,
    /// Each window's stratum and index within it.
    local: Vec<(u32, u32)>,
    /// The variance of one run (analysis scale).
    sigma2: f64,
}

struct Stratum {
    windows: Vec<u32>,
    runs: Vec<f64>,
    commits: Vec<(f64, Vec<(u32, f64)>)>,
}

impl Bridge {
    /// The variances in the units of the analysis scale, `sigma` a run's sd.
    pub(super) fn with_sigma(mut self, sigma: f64) -> Bridge {
        self.sigma2 = sigma * sigma;
        self
    }

    /// The variance the window effects' estimates add to `Σ coef_j level_j` over commits of
    /// one stratum (`coef`: commit, coefficient; summing to 0): σ² d'A⁺d, d_w = Σ_j coef_j
    /// k_jw / n_j, solved by conjugate gradients within the stratum. Commits measured in the
    /// same windows alike cancel; a chain of links adds up.
    pub(super) fn var(&self, coef: &[(usize, f64)], runs: &[Vec<(f64, u32)>]) -> f64 {
        let Some(&(j0, _)) = coef.first() else {
            return 0.0;
        };
        let Some(&(_, w0)) = runs[j0].first() else {
            return 0.0;
        };
        let s = self.local[w0 as usize].0 as usize;
        let st = &self.strata[s];
        let k = st.windows.len();
        if k < 2 {
            return 0.0;
        }
        let mut d = vec![0.0; k];
        for &(j, a) in coef {
            let n = runs[j].len() as f64;
            for &(_, w) in &runs[j] {
                let (sj, l) = self.local[w as usize];
                if sj as usize == s {
                    d[l as usize] += a / n;
                }
            }
        }
        let apply = |e: &[f64], out: &mut [f64]| {
            for ((o, n), v) in out.iter_mut().zip(&st.runs).zip(e) {
                *o = n * v;
            }
            for (n, by) in &st.commits {
                let m = by.iter().map(|&(w, c)| c * e[w as usize]).sum::<f64>() / n;
                for &(w, c) in by {
                    out[w as usize] -= c * m;
                }
            }
        };
        let x = conjugate_gradients(&d, &vec![0.0; d.len()], apply, 200, 1e-20)
            .unwrap_or_else(|| vec![0.0; d.len()]);
        let q: f64 = d.iter().zip(&x).map(|(a, b)| a * b).sum();
        (self.sigma2 * q).max(0.0)
    }
}

/// Solves `A x = b` for a symmetric positive semi-definite `A` (given by `apply`) from
/// `start`, at most `max` iterations, until the residual's square is `rel` of `b`'s; the answer
/// in A's range where `b` is. `None` where rounding left it non-finite.
fn conjugate_gradients(
    b: &[f64],
    start: &[f64],
    apply: impl Fn(&[f64], &mut [f64]),
    max: usize,
    rel: f64,
) -> Option<Vec<f64>> {
    let k = b.len();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut x = start.to_vec();
    let mut ap = vec![0.0; k];
    apply(&x, &mut ap);
    let mut res: Vec<f64> = b.iter().zip(&ap).map(|(x, y)| x - y).collect();
    let tol = rel * dot(b, b).max(1e-300);
    let mut p = res.clone();
    let mut rr = dot(&res, &res);
    for _ in 0..max {
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
            x[i] += alpha * p[i];
            res[i] -= alpha * ap[i];
        }
        let next = dot(&res, &res);
        let beta = next / rr;
        rr = next;
        for i in 0..k {
            p[i] = res[i] + beta * p[i];
        }
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
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
    stratum: &[u32],
    centre: &[bool],
    clip: impl Fn(&[(f64, u32)], &[f64]) -> Vec<(f64, u32)>,
) -> (Vec<f64>, Bridge) {
    let mut effect = solve(runs, start, none);
    for _ in 0..2 {
        let clipped: Vec<Vec<(f64, u32)>> = runs.iter().map(|r| clip(r, &effect)).collect();
        effect = solve(&clipped, &effect, none);
    }
    // Centred within each stratum (`stratum[w]`: window w's) on its scale's windows
    // (`centre`): nothing ties one stratum's machine state to another's.
    let k = stratum.iter().map(|&s| s as usize + 1).max().unwrap_or(0);
    let (mut sum, mut count) = (vec![0.0; k], vec![0usize; k]);
    for &(_, w) in runs
        .iter()
        .flatten()
        .filter(|x| x.1 != none && centre[x.1 as usize])
    {
        sum[stratum[w as usize] as usize] += effect[w as usize];
        count[stratum[w as usize] as usize] += 1;
    }
    for (w, e) in effect.iter_mut().enumerate() {
        let s = stratum[w] as usize;
        if count[s] > 0 {
            *e -= sum[s] / count[s] as f64;
        }
    }
    (effect, bridge_of(runs, stratum, start.len()))
}

/// The [`Bridge`] of `runs` (every run in a window) over `windows` windows, `stratum[w]`
/// each window's stratum.
fn bridge_of(runs: &[Vec<(f64, u32)>], stratum: &[u32], windows: usize) -> Bridge {
    let count = stratum.iter().map(|&s| s as usize + 1).max().unwrap_or(0);
    let mut strata: Vec<Stratum> = (0..count)
        .map(|_| Stratum {
            windows: Vec::new(),
            runs: Vec::new(),
            commits: Vec::new(),
        })
        .collect();
    let mut local = vec![(0u32, 0u32); windows];
    for (w, &s) in stratum.iter().enumerate().take(windows) {
        let st = &mut strata[s as usize];
        local[w] = (s, st.windows.len() as u32);
        st.windows.push(w as u32);
        st.runs.push(0.0);
    }
    for r in runs {
        let Some(&(_, w0)) = r.first() else {
            continue;
        };
        let s = local[w0 as usize].0 as usize;
        let mut by: Vec<(u32, f64)> = Vec::new();
        for &(_, w) in r {
            let l = local[w as usize].1;
            strata[s].runs[l as usize] += 1.0;
            match by.iter_mut().find(|x| x.0 == l) {
                Some(x) => x.1 += 1.0,
                None => by.push((l, 1.0)),
            }
        }
        // A commit measured in one window ties nothing: its runs fix only that effect's
        // share of its level, which its own level's variance holds.
        strata[s].commits.push((r.len() as f64, by));
    }
    Bridge {
        strata,
        local,
        sigma2: 0.0,
    }
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
    conjugate_gradients(&b, start, apply, MAX_ITER, 1e-24).unwrap_or_else(|| start.to_vec())
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
