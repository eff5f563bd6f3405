//! The pure fits the model is built from: the scale of the analysis, a commit's clipped level,
//! the offsets of strata, the pooling of lone windows, a build's key. Plain functions on
//! slices, apart from [`Model`](super::model::Model) so that they can be read (and tested) alone.

use super::super::summary::median_in_place;

/// Residuals beyond this many sd from a commit's median are clipped (outlier runs).
pub(super) const CLIP_K: f64 = 3.0;

/// A run with no window (a moment of its own).
pub(super) const NONE: u32 = u32::MAX;

/// [`Model::align`](super::model::Model::align)'s offsets given boundaries: segment levels
/// and the free strata's offsets fitted together (Gauss-Seidel), the others' 0.
pub(super) fn fit_offsets(
    y: &[f64],
    w: &[f64],
    of: &[u32],
    free: &[bool],
    bounds: &[usize],
    o: &mut [f64],
) {
    let m = y.len();
    let mut seg = vec![0usize; m];
    let mut i = 0;
    for (j, x) in seg.iter_mut().enumerate() {
        while i < bounds.len() && bounds[i] <= j {
            i += 1;
        }
        *x = i;
    }
    let segments = bounds.len() + 1;
    let k = o.len();
    for _ in 0..50 {
        let (mut sw, mut ss) = (vec![0.0; segments], vec![0.0; segments]);
        for j in 0..m {
            sw[seg[j]] += w[j];
            ss[seg[j]] += w[j] * (y[j] - o[of[j] as usize]);
        }
        let mu: Vec<f64> = (0..segments)
            .map(|i| if sw[i] > 0.0 { ss[i] / sw[i] } else { 0.0 })
            .collect();
        let (mut num, mut den) = (vec![0.0; k], vec![0.0; k]);
        for j in 0..m {
            num[of[j] as usize] += w[j] * (y[j] - mu[seg[j]]);
            den[of[j] as usize] += w[j];
        }
        let mut moved = 0.0f64;
        for s in 0..k {
            let next = if free[s] && den[s] > 0.0 {
                num[s] / den[s]
            } else {
                0.0
            };
            moved = moved.max((next - o[s]).abs());
            o[s] = next;
        }
        if moved < 1e-9 {
            break;
        }
    }
}

/// [`Model::align`](super::model::Model::align)'s offsets without boundaries: each free
/// stratum against the other commits between its own first and last (`first`, `last`), taken
/// as they are aligned so far (Gauss-Seidel); a stratum no other commit interleaves stays.
pub(super) fn overlap_offsets(
    y: &[f64],
    w: &[f64],
    of: &[u32],
    free: &[bool],
    first: &[usize],
    last: &[usize],
    o: &mut [f64],
) {
    let k = o.len();
    for _ in 0..20 {
        let mut moved = 0.0f64;
        for s in (0..k).filter(|&s| free[s]) {
            let (mut mine, mut wm, mut other, mut wo) = (0.0, 0.0, 0.0, 0.0);
            for j in first[s]..=last[s] {
                let t = of[j] as usize;
                if t == s {
                    mine += w[j] * y[j];
                    wm += w[j];
                } else {
                    other += w[j] * (y[j] - o[t]);
                    wo += w[j];
                }
            }
            let next = if wm > 0.0 && wo > 0.0 {
                mine / wm - other / wo
            } else {
                0.0
            };
            moved = moved.max((next - o[s]).abs());
            o[s] = next;
        }
        if moved < 1e-9 {
            break;
        }
    }
}

/// A commit's level: the mean of its runs, window effects removed, each clipped to ±CLIP_K σ
/// around their median (the median alone while σ is unknown); and the variance of the clipped
/// runs about it.
pub(super) fn commit_level(r: &[(f64, u32)], effect: &[f64], sigma: Option<f64>) -> (f64, f64) {
    let adj = |&(x, w): &(f64, u32)| {
        if w == NONE {
            x
        } else {
            x - effect[w as usize]
        }
    };
    let mut v: Vec<f64> = r.iter().map(adj).collect();
    // (The median reorders `v`; nothing below depends on the order.)
    let med = median_in_place(&mut v).unwrap_or(0.0);
    let variance = |v: &[f64]| {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len().max(2) - 1) as f64
    };
    match sigma {
        Some(s) => {
            let (lo, hi) = (med - CLIP_K * s, med + CLIP_K * s);
            v.iter_mut().for_each(|x| *x = x.clamp(lo, hi));
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            (mean, variance(&v))
        }
        None => (med, 0.0),
    }
}

/// A commit's runs clipped as the levels clip them (window effects removed, then each
/// within ±CLIP_K σ of their median), the effects put back: the data the exact solve fits.
pub(super) fn clipped_runs(
    r: &[(f64, u32)],
    effect: &[f64],
    sigma: Option<f64>,
) -> Vec<(f64, u32)> {
    let eff = |w: u32| if w == NONE { 0.0 } else { effect[w as usize] };
    let Some(s) = sigma else {
        return r.to_vec();
    };
    let mut v: Vec<f64> = r.iter().map(|&(x, w)| x - eff(w)).collect();
    let med = median_in_place(&mut v).unwrap_or(0.0);
    let (lo, hi) = (med - CLIP_K * s, med + CLIP_K * s);
    r.iter()
        .map(|&(x, w)| ((x - eff(w)).clamp(lo, hi) + eff(w), w))
        .collect()
}

/// The 99 % point of a variance's ratio to its true value on `df` degrees of freedom
/// (χ²₀.₉₉ / df), looked up for the few runs a mean usually holds.
pub(super) fn wide_spread(df: f64) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    const KNOWN: usize = 64;
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    let quantile =
        |df: f64| ChiSquared::new(df).map_or(f64::INFINITY, |c| c.inverse_cdf(0.99) / df);
    let k = df.round() as usize;
    if (1..KNOWN).contains(&k) && df == k as f64 {
        TABLE.get_or_init(|| (0..KNOWN).map(|k| quantile(k.max(1) as f64)).collect())[k]
    } else {
        quantile(df)
    }
}

/// Windows that each hold one run of one build (entries of a CI benchmark history, CSV rows
/// with their rounds), two or more of one commit, are moments on their own, as runs without
/// a window are: they join their machine's pool. No effect of them could be told from the
/// build's level, and their spread is the machine's from one run to the next.
pub(super) fn lone_windows_pooled(
    kept: &mut [Vec<(f64, u32)>],
    seen: &mut Vec<(u64, bool)>,
    machine_of: &mut Vec<u64>,
    pool: &mut Vec<bool>,
    pools: &mut std::collections::HashMap<u64, u32, foldhash::fast::RandomState>,
) {
    // Runs of each window in one row (rows of one build show the same runs).
    let mut runs = vec![0usize; seen.len()];
    let mut count = Vec::new();
    for r in kept.iter() {
        count.clear();
        for x in r {
            match count.iter_mut().find(|c: &&mut (u32, usize)| c.0 == x.1) {
                Some(c) => c.1 += 1,
                None => count.push((x.1, 1)),
            }
        }
        for &(w, n) in &count {
            runs[w as usize] = runs[w as usize].max(n);
        }
    }
    let single: Vec<bool> = (0..seen.len())
        .map(|w| runs[w] == 1 && !pool[w] && !seen[w].1)
        .collect();
    if !single.iter().any(|s| *s) {
        return;
    }
    let mut moved = false;
    for r in kept.iter_mut() {
        // Only a commit that shows two such moments or more: their spread is the machine's
        // from one run to the next. One alone stays a state of its own (a night says nothing
        // of the next).
        if r.iter().filter(|x| single[x.1 as usize]).count() < 2 {
            continue;
        }
        for x in r.iter_mut().filter(|x| single[x.1 as usize]) {
            let machine = machine_of[x.1 as usize];
            x.1 = *pools.entry(machine).or_insert_with(|| {
                seen.push((0, true));
                machine_of.push(machine);
                pool.push(true);
                (seen.len() - 1) as u32
            });
            moved = true;
        }
    }
    if !moved {
        return;
    }
    // Windows no run is in any more are gone: the dense ids again, in order.
    let mut used = vec![false; seen.len()];
    for x in kept.iter().flatten() {
        used[x.1 as usize] = true;
    }
    let mut to = vec![u32::MAX; seen.len()];
    let mut next = 0u32;
    for (w, u) in used.iter().enumerate() {
        if *u {
            to[w] = next;
            next += 1;
        }
    }
    for x in kept.iter_mut().flatten() {
        x.1 = to[x.1 as usize];
    }
    fn keep<T>(v: &mut Vec<T>, used: &[bool]) {
        let mut i = 0;
        v.retain(|_| {
            i += 1;
            used[i - 1]
        });
    }
    keep(seen, &used);
    keep(machine_of, &used);
    keep(pool, &used);
    for v in pools.values_mut() {
        *v = to[*v as usize];
    }
}

/// How measured values map to the analysis scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Scale {
    /// Logarithms (every value positive): noise proportional to the level becomes even.
    Log,
    /// `(x - offset) / unit`: centred on the median and scaled by the typical distance from
    /// it, so that squared sums of huge magnitudes (1e200) neither overflow nor cancel digits.
    Linear { offset: f64, unit: f64 },
}

/// Scaled values beyond this are clipped: their squares must stay finite.
const SCALED_MAX: f64 = 1e150;

impl Scale {
    /// The scale of a series of finite `values`.
    pub(super) fn of(values: impl Iterator<Item = f64> + Clone) -> Scale {
        if values.clone().all(|v| v > 0.0) {
            return Scale::Log;
        }
        let mut v: Vec<f64> = values.collect();
        let offset = median_in_place(&mut v).unwrap_or(0.0);
        // Half the difference, halved first: a difference of two finite values may overflow.
        let mut d: Vec<f64> = v.iter().map(|x| (x / 2.0 - offset / 2.0).abs()).collect();
        let mut unit = 2.0 * median_in_place(&mut d).unwrap_or(0.0);
        if !(unit > 0.0 && unit.is_finite()) {
            unit = d.iter().fold(0.0f64, |a, &b| a.max(2.0 * b));
        }
        if !(unit > 0.0 && unit.is_finite()) {
            unit = offset.abs();
        }
        if !(unit > 0.0 && unit.is_finite()) {
            unit = 1.0;
        }
        Scale::Linear { offset, unit }
    }

    /// `x` on the analysis scale.
    pub(super) fn to(self, x: f64) -> f64 {
        match self {
            Scale::Log => x.ln(),
            Scale::Linear { offset, unit } => {
                let d = x - offset;
                let v = if d.is_finite() {
                    d / unit
                } else {
                    x / unit - offset / unit
                };
                v.clamp(-SCALED_MAX, SCALED_MAX)
            }
        }
    }

    /// A value of the analysis scale as measured.
    pub(super) fn back(self, v: f64) -> f64 {
        match self {
            Scale::Log => v.exp(),
            Scale::Linear { offset, unit } => v * unit + offset,
        }
    }
}

/// A key of one build's runs (value and window of each, in any order): rows that show the
/// same runs have the same key. (A sum of mixed bits, no hasher: millions of cron rows pass
/// here, and only two builds' keys of one window are ever compared.)
pub(super) fn build_key(runs: impl Iterator<Item = (f64, u64)>) -> u64 {
    let (sum, n) = runs.fold((0u64, 0u64), |(s, n), (v, w)| {
        let x = (v.to_bits() ^ w.rotate_left(29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (s.wrapping_add(x ^ (x >> 31)), n + 1)
    });
    sum.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}
