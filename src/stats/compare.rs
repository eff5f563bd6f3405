//! Two-sample comparison: Mann-Whitney U, Welch's t, bootstrap CI of the median ratio,
//! the "do these two samples differ" rule, and power/sample-size estimates.

use super::summary::median_in_place;
use super::threshold::{rel_change, Threshold};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// A test statistic and its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TestResult {
    /// The statistic (U of the first sample for Mann-Whitney; t for Welch).
    pub statistic: f64,
    /// Two-sided p-value in [0, 1].
    pub p_value: f64,
}

fn clean(xs: &[f64]) -> Vec<f64> {
    xs.iter().copied().filter(|x| !x.is_nan()).collect()
}

pub(crate) fn std_normal() -> Normal {
    // Parameters are constants: construction cannot fail.
    Normal::new(0.0, 1.0).expect("valid normal")
}

/// Upper tail of the standard normal, accurate far into the tail.
pub(crate) fn norm_sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    std_normal().sf(z)
}

/// Quantile of the standard normal for p in (0, 1).
pub(crate) fn norm_quantile(p: f64) -> f64 {
    std_normal().inverse_cdf(p.clamp(1e-300, 1.0 - 1e-16))
}

/// Mid-ranks (1-based) of `a ++ b` plus the tie term sum(t^3 - t).
/// Returns (rank sum of `a`, tie term).
pub(crate) fn rank_sum(a: &[f64], b: &[f64]) -> (f64, f64) {
    rank_sum_owned(a.to_vec(), b.to_vec())
}

/// [`rank_sum`] of vectors it may reorder. Each side is sorted on its own, then the two are
/// merged: a stable sort finds runs already in order, so a side made of presorted runs costs a
/// merge of the runs, not a sort of every value again.
pub(crate) fn rank_sum_owned(mut a: Vec<f64>, mut b: Vec<f64>) -> (f64, f64) {
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j) = (0, 0);
    let merged = std::iter::from_fn(|| {
        let from_a = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.total_cmp(y).is_le(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        if from_a {
            i += 1;
            Some((a[i - 1], true, 1))
        } else {
            j += 1;
            Some((b[j - 1], false, 1))
        }
    });
    rank_sum_sorted(merged)
}

/// (rank sum of side `a`, tie term) of values that come in `total_cmp` order, each with how
/// many times it occurs and `true` when those belong to side `a`: mid-ranks (1-based) for each
/// run of equal values.
pub(crate) fn rank_sum_sorted(pooled: impl IntoIterator<Item = (f64, bool, usize)>) -> (f64, f64) {
    let mut below = 0usize;
    let mut r_a = 0.0;
    let mut ties = 0.0;
    // The open run of equal values: its first value, its length, how many are a's.
    let mut run: Option<(f64, usize, usize)> = None;
    let mut close = |t: usize, in_a: usize, below: &mut usize| {
        // average of ranks below+1 ..= below+t
        let rank = (2 * *below + 1 + t) as f64 / 2.0;
        r_a += rank * in_a as f64;
        if t > 1 {
            let t = t as f64;
            ties += t * t * t - t;
        }
        *below += t;
    };
    for (v, in_a, n) in pooled {
        let a = if in_a { n } else { 0 };
        match &mut run {
            // (NaN equals nothing, itself included: each is a run of its own.)
            Some((first, t, ta)) if *first == v => {
                *t += n;
                *ta += a;
            }
            _ => {
                if let Some((_, t, ta)) = run {
                    close(t, ta, &mut below);
                }
                run = Some((v, n, a));
            }
        }
    }
    if let Some((_, t, ta)) = run {
        close(t, ta, &mut below);
    }
    (r_a, ties)
}

/// Counts of the null distribution of U for sample sizes m, n (no ties): coefficients of the
/// Gaussian binomial [m+n choose m]_q. Exact in i128 as long as C(m+n, m) < 1e37.
fn u_counts(m: usize, n: usize) -> Vec<i128> {
    let (m, n) = if m <= n { (m, n) } else { (n, m) };
    let len = m * n + 1;
    let mut c = vec![0i128; len];
    c[0] = 1;
    // Multiply by (1 - q^(n+i)) then divide by (1 - q^i): each step leaves the Gaussian
    // binomial [n+i choose i], so the division is exact.
    for i in 1..=m {
        let s = n + i;
        for k in (s..len).rev() {
            c[k] -= c[k - s];
        }
        for k in i..len {
            c[k] += c[k - i];
        }
    }
    c
}

/// Whether the exact null distribution fits our integer arithmetic.
fn exact_feasible(m: usize, n: usize) -> bool {
    let (small, big) = (m.min(n), m.max(n));
    // log10 C(big+small, small) < 36
    let mut log = 0.0f64;
    for i in 1..=small {
        log += ((big + i) as f64 / i as f64).log10();
    }
    log < 36.0 && small * big <= 2_000_000
}

/// Mann-Whitney U test, two-sided; the statistic is U of `a`.
///
/// Follows `scipy.stats.mannwhitneyu(a, b, method="auto")`: the exact null distribution when
/// there are no ties and one side has at most 8 values, otherwise the normal approximation
/// with tie correction and continuity correction. (When the exact counts would not fit in
/// 128-bit integers the normal approximation is used.) NaN values are dropped; `None` if a
/// side is then empty. All values tied gives p = 1.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<TestResult> {
    let (a, b) = (clean(a), clean(b));
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (r1, ties) = rank_sum_owned(a, b);
    Some(mann_whitney_from_ranks(n1, n2, r1, ties, 8))
}

/// [`mann_whitney_u`] with the exact null distribution wherever it fits (not only where a
/// side has at most 8 values): in the far tail, where a few units of each side decide, the
/// normal approximation is many times too large (10 units against 10, all apart: 1.8e-4
/// instead of the exact 1.1e-5).
pub(crate) fn mann_whitney_exact(a: &[f64], b: &[f64]) -> Option<TestResult> {
    let (a, b) = (clean(a), clean(b));
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (r1, ties) = rank_sum_owned(a, b);
    Some(mann_whitney_from_ranks(n1, n2, r1, ties, usize::MAX))
}

/// [`mann_whitney_u`] of sides of `n1` and `n2` values (both at least one) whose rank sum
/// and tie term [`rank_sum`] gave; exact where a side has at most `exact_up_to` values.
fn mann_whitney_from_ranks(
    n1: usize,
    n2: usize,
    r1: f64,
    ties: f64,
    exact_up_to: usize,
) -> TestResult {
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let nn = (n1 * n2) as f64;
    let u2 = nn - u1;
    let u = u1.max(u2);
    let small_exact = n1.min(n2) <= exact_up_to && exact_feasible(n1, n2);
    let p = if small_exact && ties == 0.0 {
        let c = u_counts(n1, n2);
        let total: i128 = c.iter().sum();
        // U is an integer here (no ties); P(U' >= u)
        let k = u.round() as usize;
        let upper: i128 = c[k.min(c.len())..].iter().sum();
        2.0 * (upper as f64 / total as f64)
    } else if small_exact && u >= nn {
        // Complete separation with ties only inside the groups (a value tied across them
        // would give U < n1 n2): of the C(n1+n2, n1) splits of the pooled values exactly one
        // is as extreme each way, so the exact permutation p is 2 / C(n1+n2, n1). The normal
        // approximation below is far too large in this tail for small samples (6 equal-ish
        // commits against 16 others: 4.5e-4 instead of 2.7e-5).
        let total: i128 = u_counts(n1, n2).iter().sum();
        2.0 / total as f64
    } else {
        let n = (n1 + n2) as f64;
        let s = (nn / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)))).sqrt();
        if s.is_nan() || s <= 0.0 {
            1.0
        } else {
            2.0 * norm_sf((u - nn / 2.0 - 0.5) / s)
        }
    };
    TestResult {
        statistic: u1,
        p_value: p.clamp(0.0, 1.0),
    }
}

/// The mean and the sample variance of `x` (NaN variance for fewer than two).
pub(crate) fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0);
    (m, v)
}

/// Welch's unequal-variance t test, two-sided (`scipy.stats.ttest_ind(a, b, equal_var=False)`);
/// the statistic is mean(a) - mean(b) over its standard error.
///
/// `None` when a side has fewer than 2 values (NaN dropped). With no variance on either side
/// p is 1 for equal means and 0 otherwise.
pub fn welch_t(a: &[f64], b: &[f64]) -> Option<TestResult> {
    let (a, b) = (clean(a), clean(b));
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(&a);
    let (mb, vb) = mean_var(&b);
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let se2 = sa + sb;
    let d = ma - mb;
    if se2 == 0.0 {
        return Some(if d == 0.0 {
            TestResult {
                statistic: 0.0,
                p_value: 1.0,
            }
        } else {
            TestResult {
                statistic: f64::INFINITY.copysign(d),
                p_value: 0.0,
            }
        });
    }
    let t = d / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (a.len() - 1) as f64 + sb * sb / (b.len() - 1) as f64);
    if !t.is_finite() || !df.is_finite() || df <= 0.0 {
        return Some(TestResult {
            statistic: t,
            p_value: if t.is_infinite() { 0.0 } else { 1.0 },
        });
    }
    let p = match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => 2.0 * dist.sf(t.abs()),
        Err(_) => 1.0,
    };
    Some(TestResult {
        statistic: t,
        p_value: if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) },
    })
}

/// Within-sample spread pooled over many samples of one metric: the relative variance of a
/// run about its own sample's mean, and the degrees of freedom it was estimated with
/// ([`pooled_rel_var`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PooledNoise {
    /// Mean squared relative deviation of a run from its sample's mean (the squared CV).
    pub rel_var: f64,
    /// Σ (n_k - 1) over the samples that had two runs or more.
    pub df: usize,
}

/// The spread of runs within each sample pooled over all of them (one-way ANOVA's within-group
/// variance, relative to each sample's mean so commits at different levels pool): what a count
/// that varies alike on every commit (instructions of a network client's poll loops) spreads,
/// known from many runs where one commit has two. `None` without a sample of two finite runs
/// at a non-zero mean.
pub fn pooled_rel_var<'a>(samples: impl IntoIterator<Item = &'a [f64]>) -> Option<PooledNoise> {
    let (mut ss, mut df) = (0.0f64, 0usize);
    for s in samples {
        let x = clean(s);
        if x.len() < 2 {
            continue;
        }
        let (m, v) = mean_var(&x);
        if m == 0.0 || !v.is_finite() {
            continue;
        }
        ss += v / (m * m) * (x.len() - 1) as f64;
        df += x.len() - 1;
    }
    (df > 0).then(|| PooledNoise {
        rel_var: ss / df as f64,
        df,
    })
}

/// Two-sided t test of `a` against `b` with the noise known from many samples ([`PooledNoise`])
/// rather than from these runs alone: one or two runs a side can then tell a clear move, as a
/// t test with `noise.df` degrees of freedom. Where these two samples' own spread (when they
/// have one) is larger than the pool's, it is used with its own degrees of freedom: a pair
/// noisier than the rest is judged as Student's t test on its runs alone. `None` when a side is
/// empty or the level is 0.
pub fn pooled_t(a: &[f64], b: &[f64], noise: PooledNoise) -> Option<TestResult> {
    let (a, b) = (clean(a), clean(b));
    if a.is_empty() || b.is_empty() || noise.df == 0 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let ma = a.iter().sum::<f64>() / na;
    let mb = b.iter().sum::<f64>() / nb;
    let level = ma.abs().max(mb.abs());
    if level == 0.0 {
        return None;
    }
    let own_df = a.len() + b.len() - 2;
    let own = if own_df > 0 {
        let ss: f64 = a.iter().map(|x| (x - ma).powi(2)).sum::<f64>()
            + b.iter().map(|x| (x - mb).powi(2)).sum::<f64>();
        ss / own_df as f64 / (level * level)
    } else {
        0.0
    };
    let (rel_var, df) = if own > noise.rel_var {
        (own, own_df)
    } else {
        (noise.rel_var, noise.df)
    };
    let se = level * (rel_var * (1.0 / na + 1.0 / nb)).sqrt();
    let d = ma - mb;
    if se == 0.0 || !se.is_finite() {
        return Some(TestResult {
            statistic: if d == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(d)
            },
            p_value: if d == 0.0 { 1.0 } else { 0.0 },
        });
    }
    let t = d / se;
    let p = match StudentsT::new(0.0, 1.0, df as f64) {
        Ok(dist) => 2.0 * dist.sf(t.abs()),
        Err(_) => 1.0,
    };
    Some(TestResult {
        statistic: t,
        p_value: if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) },
    })
}

/// SplitMix64: tiny, seeded, good enough for resampling indices.
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform integer in 0..n (n > 0), by multiply-shift (bias < n / 2^64).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
    /// Standard normal by Box-Muller (for tests and simulations).
    #[allow(dead_code)]
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let u2 = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// Percentile-bootstrap confidence interval `(low, high)` of median(b) / median(a) at
/// confidence `level` (e.g. 0.95), from `resamples` resamples; deterministic for a `seed`.
///
/// `None` when a side is empty (NaN dropped), `level` is not in (0, 1), `resamples` is 0, or no
/// resample has a finite ratio (median of `a` always 0).
pub fn bootstrap_median_ratio(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    let (a, b) = (clean(a), clean(b));
    if a.is_empty() || b.is_empty() || resamples == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut buf_a = vec![0.0; a.len()];
    let mut buf_b = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for x in buf_a.iter_mut() {
            *x = a[rng.below(a.len())];
        }
        for x in buf_b.iter_mut() {
            *x = b[rng.below(b.len())];
        }
        let ma = median_in_place(&mut buf_a)?;
        let mb = median_in_place(&mut buf_b)?;
        let r = mb / ma;
        if r.is_finite() {
            ratios.push(r);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_unstable_by(|x, y| x.total_cmp(y));
    let lo = super::summary::percentile(&ratios, (1.0 - level) / 2.0);
    let hi = super::summary::percentile(&ratios, (1.0 + level) / 2.0);
    Some((lo, hi))
}

/// Outcome of comparing a "before" sample with an "after" sample.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Difference {
    /// Median of the first sample.
    pub before: f64,
    /// Median of the second sample.
    pub after: f64,
    /// Relative change of the medians, [`super::threshold::rel_change`]: `(after - before) / |before|`.
    pub rel_change: f64,
    /// Two-sided p-value (Mann-Whitney U; 0 or 1 for zero-spread samples).
    pub p_value: f64,
    /// Both samples have zero spread: the values were compared exactly and `p_value` (0 or 1)
    /// is no test's result; reports say "deterministic" instead of printing it.
    pub deterministic: bool,
    /// p < alpha.
    pub significant: bool,
    /// significant and the threshold is reached by the medians.
    pub differs: bool,
}

fn zero_spread(x: &[f64]) -> bool {
    x.iter().all(|v| *v == x[0])
}

/// The DESIGN rule: two samples differ when MWU rejects at alpha AND the threshold is reached by
/// the medians. For zero-spread data (every value in a equal, every value in b equal —
/// deterministic metrics like struct sizes) of at least two runs a side the p-value is 0 if
/// the values differ and 1 if equal; one run a side is compared exactly only for a test
/// declared deterministic ([`differ_declared`]). `None` if a side is empty (NaN dropped).
pub fn differ(a: &[f64], b: &[f64], alpha: f64, threshold: Threshold) -> Option<Difference> {
    differ_declared(a, b, alpha, threshold, false)
}

/// [`differ`] for a test that may be declared deterministic (`deterministic = true`): then one
/// run a side compares exactly. Without the declaration only repeated equal runs do: one run
/// is no evidence that the next would give the same number.
pub fn differ_declared(
    a: &[f64],
    b: &[f64],
    alpha: f64,
    threshold: Threshold,
    declared: bool,
) -> Option<Difference> {
    let (a, b) = (clean(a), clean(b));
    let exact_ok = declared || (a.len() >= 2 && b.len() >= 2);
    exact_or_test(a, b, alpha, threshold, exact_ok, &|a, b| {
        mann_whitney_u(a, b).map(|t| t.p_value)
    })
}

/// A two-sample test's p-value, `None` when it cannot say.
type PValue<'a> = dyn Fn(&[f64], &[f64]) -> Option<f64> + 'a;

/// The shared rule of [`differ`], [`differ_t`] and [`differ_strata`]: `test` gives the p-value
/// of the (NaN-free) samples unless both have zero spread, which compare exactly (p 0 or 1).
fn difference(
    a: Vec<f64>,
    b: Vec<f64>,
    alpha: f64,
    threshold: Threshold,
    test: &PValue<'_>,
) -> Option<Difference> {
    let exact_ok = a.len() >= 2 && b.len() >= 2;
    exact_or_test(a, b, alpha, threshold, exact_ok, test)
}

/// [`difference`], comparing zero-spread samples exactly only when `exact_ok` (repeated runs
/// on both sides, or a test declared deterministic).
fn exact_or_test(
    mut a: Vec<f64>,
    mut b: Vec<f64>,
    alpha: f64,
    threshold: Threshold,
    exact_ok: bool,
    test: &PValue<'_>,
) -> Option<Difference> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let deterministic = exact_ok && zero_spread(&a) && zero_spread(&b);
    let p_value = if deterministic {
        if a[0] == b[0] {
            1.0
        } else {
            0.0
        }
    } else {
        test(&a, &b)?
    };
    let before = median_in_place(&mut a)?;
    let after = median_in_place(&mut b)?;
    let significant = p_value < alpha;
    Some(Difference {
        before,
        after,
        rel_change: rel_change(before, after),
        p_value,
        deterministic,
        significant,
        differs: significant && threshold.reached(before, after),
    })
}

/// Van Elteren's stratified rank test, two-sided: each stratum (a window of time in which both
/// samples were taken side by side) is ranked on its own, so a level that moved between
/// strata (drift of the machine) does not count as a difference; the strata's rank sums are
/// combined with weights 1 / (n + 1). One stratum is [`mann_whitney_u`] itself (exact for
/// small samples). Strata where a side is empty are left out; `None` when none is left.
pub fn stratified_rank_test(strata: &[(&[f64], &[f64])]) -> Option<TestResult> {
    let kept: Vec<(Vec<f64>, Vec<f64>)> = strata
        .iter()
        .map(|(a, b)| (clean(a), clean(b)))
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .collect();
    match kept.as_slice() {
        [] => None,
        [(a, b)] => mann_whitney_u(a, b),
        _ => {
            let (mut num, mut var) = (0.0, 0.0);
            for (a, b) in &kept {
                let (n1, n2) = (a.len() as f64, b.len() as f64);
                let n = n1 + n2;
                let (r1, ties) = rank_sum(a, b);
                let w = 1.0 / (n + 1.0);
                num += w * (r1 - n1 * (n + 1.0) / 2.0);
                var += w * w * n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
            }
            let p = if var > 0.0 && var.is_finite() {
                2.0 * norm_sf(num.abs() / var.sqrt())
            } else {
                1.0
            };
            let u1: f64 = kept
                .iter()
                .map(|(a, b)| rank_sum(a, b).0 - (a.len() * (a.len() + 1)) as f64 / 2.0)
                .sum();
            Some(TestResult {
                statistic: u1,
                p_value: p.clamp(0.0, 1.0),
            })
        }
    }
}

/// [`differ`] over strata (windows of time in which both sides were measured side by side):
/// the p-value of [`stratified_rank_test`], the medians of all the strata's values. The same
/// as [`differ`] for one stratum.
pub fn differ_strata(
    strata: &[(&[f64], &[f64])],
    alpha: f64,
    threshold: Threshold,
) -> Option<Difference> {
    let kept: Vec<(&[f64], &[f64])> = strata
        .iter()
        .copied()
        .filter(|(a, b)| a.iter().any(|x| !x.is_nan()) && b.iter().any(|x| !x.is_nan()))
        .collect();
    if kept.len() <= 1 {
        let (a, b) = kept.first().copied()?;
        return differ(a, b, alpha, threshold);
    }
    let a: Vec<f64> = kept.iter().flat_map(|(a, _)| clean(a)).collect();
    let b: Vec<f64> = kept.iter().flat_map(|(_, b)| clean(b)).collect();
    difference(a, b, alpha, threshold, &|_, _| {
        stratified_rank_test(&kept).map(|t| t.p_value)
    })
}

/// [`differ`] with Welch's t test instead of Mann-Whitney: for counts whose runs barely vary
/// (instructions of a program whose few timing-dependent loops move them by a fraction of a
/// percent), where a rank test's smallest p-value (2 / C(n1+n2, n1): 5 runs a side for
/// α = 0.01) and not the noise would set the runs needed. Zero-spread samples compare exactly.
pub fn differ_t(a: &[f64], b: &[f64], alpha: f64, threshold: Threshold) -> Option<Difference> {
    // One run on a side: no variance to test against, p 1.
    difference(clean(a), clean(b), alpha, threshold, &|a, b| {
        Some(welch_t(a, b).map_or(1.0, |t| t.p_value))
    })
}

/// [`min_detectable_change`] for Welch's t test ([`differ_t`]): (t_{1-alpha/2, df} + t_{0.8,
/// df}) cv sqrt(1/n_a + 1/n_b) with df = n_a + n_b - 2; infinite with fewer than two runs a side.
pub fn min_detectable_change_t(noise_cv: f64, n_a: usize, n_b: usize, alpha: f64) -> f64 {
    if n_a < 2 || n_b < 2 || !(alpha > 0.0 && alpha < 1.0) || noise_cv.is_nan() {
        return f64::INFINITY;
    }
    let cv = noise_cv.abs();
    if cv == 0.0 {
        return 0.0;
    }
    let df = (n_a + n_b - 2) as f64;
    let Ok(t) = StudentsT::new(0.0, 1.0, df) else {
        return f64::INFINITY;
    };
    let z = t.inverse_cdf(1.0 - alpha / 2.0) + t.inverse_cdf(0.8);
    z * cv * (1.0 / n_a as f64 + 1.0 / n_b as f64).sqrt()
}

/// Asymptotic relative efficiency of the Mann-Whitney test against the t test for normal data.
const MWU_ARE: f64 = 3.0 / std::f64::consts::PI;

/// The fewest runs a side with which a rank test can decide at `alpha` even with one run out
/// of order: the smallest n with 2 · 2 / C(2n, n) ≤ alpha (the two most extreme orderings,
/// both directions). 6 at α = 0.01; with 3 a side (p ≥ 0.1) no difference is ever decided.
pub fn runs_to_decide(alpha: f64) -> usize {
    (2..=60)
        .find(|&n| 2.0 * min_mwu_p(n, n) <= alpha)
        .unwrap_or(60)
}

/// Smallest two-sided exact MWU p-value reachable with these sizes: 2 / C(n_a + n_b, n_a).
pub fn min_mwu_p(n_a: usize, n_b: usize) -> f64 {
    let (small, big) = (n_a.min(n_b), n_a.max(n_b));
    let mut log_c = 0.0f64;
    for i in 1..=small {
        log_c += ((big + i) as f64 / i as f64).ln();
    }
    (2.0f64.ln() - log_c).exp().min(1.0)
}

/// Smallest relative change of medians that a Mann-Whitney test with these sample sizes
/// detects at two-sided `alpha` with **80 % power**, for normal noise with relative standard
/// deviation `noise_cv` (e.g. from [`robust_cv`]).
///
/// Normal approximation: (z_{1-alpha/2} + z_{0.8}) * cv * sqrt(1/n_a + 1/n_b) / sqrt(3/pi).
/// Infinite when a side is empty or the sizes cannot reach `alpha` at all (e.g. 2 vs 2 runs:
/// the smallest MWU p is 1/3); 0 for zero noise (deterministic metrics: any change shows).
pub fn min_detectable_change(noise_cv: f64, n_a: usize, n_b: usize, alpha: f64) -> f64 {
    if n_a == 0 || n_b == 0 || !(alpha > 0.0 && alpha < 1.0) || noise_cv.is_nan() {
        return f64::INFINITY;
    }
    let cv = noise_cv.abs();
    if cv == 0.0 {
        return 0.0;
    }
    if min_mwu_p(n_a, n_b) >= alpha {
        return f64::INFINITY;
    }
    let z = norm_quantile(1.0 - alpha / 2.0) + norm_quantile(0.8);
    z * cv * (1.0 / n_a as f64 + 1.0 / n_b as f64).sqrt() / MWU_ARE.sqrt()
}

/// Repeats per side needed to detect a relative change `rel` at two-sided `alpha` with
/// `power` (e.g. 0.9), for relative noise `noise_cv`, with a Mann-Whitney test.
///
/// Normal approximation 2 ((z_{1-alpha/2} + z_power) cv / rel)^2 / (3/pi), and at least as
/// many as MWU needs to reach `alpha` at all. 1 for zero noise; `usize::MAX` when `rel` is 0
/// or an input is invalid (no number of repeats is enough).
pub fn repeats_needed(noise_cv: f64, rel: f64, alpha: f64, power: f64) -> usize {
    if noise_cv.is_nan() || rel.is_nan() || !(alpha > 0.0 && alpha < 1.0) {
        return usize::MAX;
    }
    let cv = noise_cv.abs();
    if cv == 0.0 {
        return 1;
    }
    let rel = rel.abs();
    if rel == 0.0 || !cv.is_finite() {
        return usize::MAX;
    }
    let power = if power > 0.0 && power < 1.0 {
        power
    } else {
        0.8
    };
    let z = norm_quantile(1.0 - alpha / 2.0) + norm_quantile(power);
    let n = 2.0 * (z * cv / rel).powi(2) / MWU_ARE;
    let mut k = if n.is_finite() && n < 1e15 {
        (n.ceil() as usize).max(1)
    } else {
        return usize::MAX;
    };
    while min_mwu_p(k, k) >= alpha {
        k += 1;
    }
    k
}

/// Robust relative noise of one sample: 1.4826 * MAD / |median|.
///
/// `None` if fewer than 2 values (NaN dropped). 0 when there is no spread; infinite when the
/// median is 0 but the values spread.
pub fn robust_cv(xs: &[f64]) -> Option<f64> {
    let mut v = clean(xs);
    if v.len() < 2 {
        return None;
    }
    let med = median_in_place(&mut v)?;
    let mut dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
    let mad = median_in_place(&mut dev)?;
    if mad == 0.0 {
        return Some(0.0);
    }
    if med == 0.0 {
        return Some(f64::INFINITY);
    }
    let cv = 1.4826 * mad / med.abs();
    Some(if cv.is_nan() { f64::INFINITY } else { cv })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
    }

    #[test]
    fn the_exact_rank_test_reads_the_far_tail_exactly() {
        // Ten against ten, all apart: 2 / C(20, 10), where the normal approximation says 1.8e-4.
        let a: Vec<f64> = (0..10).map(f64::from).collect();
        let b: Vec<f64> = (10..20).map(f64::from).collect();
        let exact = mann_whitney_exact(&a, &b).unwrap().p_value;
        assert!(close(exact, 2.0 / 184_756.0, 1e-12), "{exact}");
        assert!(mann_whitney_u(&a, &b).unwrap().p_value > 1e-4);
        // Interleaved, both agree closely (the approximation is good in the middle).
        let c: Vec<f64> = (0..10).map(|i| f64::from(2 * i)).collect();
        let d: Vec<f64> = (0..10).map(|i| f64::from(2 * i + 1)).collect();
        let (e, n) = (
            mann_whitney_exact(&c, &d).unwrap().p_value,
            mann_whitney_u(&c, &d).unwrap().p_value,
        );
        assert!((e - n).abs() < 0.05, "{e} {n}");
    }

    #[test]
    fn runs_to_decide_leave_room_for_one_run_out_of_order() {
        assert!(close(min_mwu_p(3, 3), 0.1, 1e-12));
        assert_eq!(runs_to_decide(0.01), 6);
        assert_eq!(runs_to_decide(0.05), 5);
        // 6 against 6 with one pair swapped still decides at 0.01; 5 against 5 does not.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 7.0];
        let b = [6.0, 8.0, 9.0, 10.0, 11.0, 12.0];
        assert!(mann_whitney_u(&a, &b).unwrap().p_value < 0.01);
        assert!(mann_whitney_u(&a[1..], &b[..5]).unwrap().p_value > 0.01);
    }

    #[test]
    fn pooled_noise_is_the_within_sample_relative_variance() {
        // Two commits at 100 and 200, each ±1 %: squared CV 1e-4 whatever the level; a
        // single run and a NaN add nothing.
        let a = [99.0, 101.0];
        let b = [198.0, 202.0, f64::NAN];
        let n = pooled_rel_var([&a[..], &b[..], &[150.0][..]]).unwrap();
        assert_eq!(n.df, 2);
        assert!(close(n.rel_var, 2e-4, 1e-9), "{}", n.rel_var);
        assert!(pooled_rel_var([&[5.0][..]]).is_none());
    }

    #[test]
    fn pooled_t_tests_one_run_a_side_against_the_known_noise() {
        // t_{0.975, 10} = 2.2281389: a move of that many standard errors has p = 0.05.
        let noise = PooledNoise {
            rel_var: 1e-4,
            df: 10,
        };
        let d = 2.228_138_9 * 100.0 * (2e-4f64).sqrt();
        let r = pooled_t(&[100.0 - d], &[100.0], noise).unwrap();
        assert!(close(r.p_value, 0.05, 1e-4), "{}", r.p_value);
        assert!(r.statistic < 0.0);
        // Equal runs: p 1; a step of 8 % against 0.4 % noise: decided on one run a side.
        assert_eq!(pooled_t(&[100.0], &[100.0], noise).unwrap().p_value, 1.0);
        let calm = PooledNoise {
            rel_var: 0.004f64.powi(2),
            df: 6,
        };
        assert!(pooled_t(&[500.0], &[540.0], calm).unwrap().p_value < 1e-4);
        // A pair noisier than the pool is judged on its own spread and degrees of freedom:
        // Student's t on its 2 + 2 runs (sd 14.14, t = 25 / 14.14, df 2: p = 0.219).
        let wide = pooled_t(&[490.0, 510.0], &[515.0, 535.0], calm).unwrap();
        assert!((wide.p_value - 0.219).abs() < 0.002, "{}", wide.p_value);
        assert!(pooled_t(&[], &[1.0], noise).is_none());
    }

    fn ref_cases() -> Vec<(Vec<f64>, Vec<f64>)> {
        vec![
            (vec![1.1, 2.2, 3.3, 4.4], vec![0.5, 5.5, 6.6, 7.7, 8.8]),
            (
                vec![19.0, 22.0, 16.0, 29.0, 24.0, 13.0, 27.0, 11.0],
                vec![20.0, 11.5, 17.0, 12.0, 10.0, 14.0, 9.0, 15.0, 8.0, 7.0, 3.0],
            ),
            (
                vec![1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                vec![3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 7.0, 8.0, 9.0, 9.0, 10.0],
            ),
            // np.linspace(0, 1, 25)**2 and np.linspace(0, 1, 30) + 0.2
            (
                (0..25).map(|i| (i as f64 / 24.0).powi(2)).collect(),
                (0..30).map(|i| i as f64 / 29.0 + 0.2).collect(),
            ),
        ]
    }

    #[test]
    fn mwu_complete_separation_with_ties_inside_the_groups_is_exact() {
        // 6 vs 16 commit levels, a clean step, repeated values within each side:
        // the exact permutation p is 2 / C(22, 6) = 2.68e-5.
        let a = [1.0, 1.0, 1.0, 1.1, 1.0, 1.1];
        let b: Vec<f64> = (0..16).map(|i| 3.0 + f64::from(i % 4) * 0.01).collect();
        let r = mann_whitney_u(&a, &b).unwrap();
        assert!((r.p_value - 2.0 / 74_613.0).abs() < 1e-12, "{}", r.p_value);
        // A value tied across the groups is no complete separation: the approximation stays.
        let mut c = b.clone();
        c[0] = 1.1;
        assert!(mann_whitney_u(&a, &c).unwrap().p_value > 1e-4);
    }

    #[test]
    fn mwu_reference() {
        // scipy 1.17.1: scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method="auto")
        let cases = ref_cases();
        let want = [
            (4.0, 0.190_476_190_476_190_47),       // exact
            (75.0, 0.009_102_696_409_197_957),     // exact, n = 8 vs 11
            (18.5, 0.010_669_300_560_314_204),     // ties: normal, tie + continuity corrected
            (154.0, 0.000_193_672_374_032_377_16), // 25 vs 30: normal
        ];
        for ((a, b), (u, p)) in cases.iter().zip(want) {
            let r = mann_whitney_u(a, b).unwrap();
            assert!(close(r.statistic, u, 1e-12), "{} vs {u}", r.statistic);
            assert!(close(r.p_value, p, 1e-9), "{} vs {p}", r.p_value);
        }
    }

    #[test]
    fn welch_reference() {
        // scipy 1.17.1: scipy.stats.ttest_ind(a, b, equal_var=False)
        let cases = ref_cases();
        let want = [
            (-1.912_942_771_215_224_3, 0.106_554_337_346_060_2),
            (3.163_533_495_605_593_6, 0.007_899_749_672_237_21),
            (-3.082_582_201_672_712_2, 0.006_188_754_563_579_472_5),
            (-4.268_012_261_193_432, 8.711_940_393_711_686e-5),
        ];
        for ((a, b), (t, p)) in cases.iter().zip(want) {
            let r = welch_t(a, b).unwrap();
            assert!(close(r.statistic, t, 1e-9), "{} vs {t}", r.statistic);
            assert!(close(r.p_value, p, 1e-7), "{} vs {p}", r.p_value);
        }
    }

    #[test]
    fn mwu_edges() {
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
        assert!(mann_whitney_u(&[f64::NAN], &[1.0]).is_none());
        let r = mann_whitney_u(&[1.0, 1.0], &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!(r.p_value, 1.0);
        let r = mann_whitney_u(&[1.0], &[2.0]).unwrap();
        assert_eq!(r.p_value, 1.0);
        let r = mann_whitney_u(&[f64::INFINITY, 1.0], &[f64::NEG_INFINITY, 0.0]).unwrap();
        assert!(r.p_value > 0.0 && r.p_value <= 1.0);
        // large samples take the normal path and stay in range
        let a: Vec<f64> = (0..5000).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..5000).map(|i| i as f64 + 2500.0).collect();
        let r = mann_whitney_u(&a, &b).unwrap();
        assert!(r.p_value < 1e-100);
        // exact with a tiny side and a big one
        let r = mann_whitney_u(&[1e9], &a).unwrap();
        assert!((r.p_value - 2.0 / 5001.0).abs() < 1e-12);
    }

    #[test]
    fn welch_edges() {
        assert!(welch_t(&[1.0], &[1.0, 2.0]).is_none());
        assert_eq!(welch_t(&[2.0, 2.0], &[2.0, 2.0]).unwrap().p_value, 1.0);
        assert_eq!(welch_t(&[2.0, 2.0], &[3.0, 3.0]).unwrap().p_value, 0.0);
    }

    #[test]
    fn differ_rule() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1];
        let b = [103.0, 104.0, 102.0, 103.5, 102.5, 103.2, 102.8, 103.1];
        let d = differ(&a, &b, 0.05, Threshold::Relative(0.02)).unwrap();
        assert!(d.significant && d.differs);
        assert!((d.rel_change - (103.05 / 100.05 - 1.0)).abs() < 1e-12);
        assert!(!d.deterministic);
        let d = differ(&a, &b, 0.05, Threshold::Relative(0.05)).unwrap();
        assert!(d.significant && !d.differs);
        // a negative metric that drops: the change is negative
        let neg = |x: &[f64]| x.iter().map(|v| -v).collect::<Vec<_>>();
        let d = differ(&neg(&a), &neg(&b), 0.05, Threshold::Relative(0.02)).unwrap();
        assert!(d.differs && d.rel_change < 0.0, "{d:?}");
        assert!((d.rel_change + (103.05 / 100.05 - 1.0)).abs() < 1e-12);
        // a test declared deterministic: one run each is enough
        let d =
            differ_declared(&[3064.0], &[3072.0], 0.001, Threshold::Relative(0.0), true).unwrap();
        assert_eq!((d.p_value, d.differs), (0.0, true));
        assert!(d.deterministic);
        // without the declaration one run a side is never exact; repeated equal runs are
        let d = differ(&[100.0], &[101.0], 0.05, Threshold::Relative(0.0)).unwrap();
        assert!(!d.deterministic && !d.differs && d.p_value > 0.05, "{d:?}");
        let d = differ(&[5.0, 5.0], &[6.0, 6.0], 0.05, Threshold::Relative(0.0)).unwrap();
        assert!(d.deterministic && d.differs && d.p_value == 0.0, "{d:?}");
        let d = differ(
            &[3064.0],
            &[3064.0, 3064.0],
            0.001,
            Threshold::Relative(0.0),
        )
        .unwrap();
        assert_eq!((d.p_value, d.differs), (1.0, false));
        assert!(differ(&[], &[1.0], 0.05, Threshold::Absolute(0.0)).is_none());
        let d = differ(&[0.0, 0.0], &[1.0, 1.0], 0.05, Threshold::Relative(0.1)).unwrap();
        assert!(d.differs && d.rel_change.is_infinite());
    }

    #[test]
    fn bootstrap_ci() {
        let a: Vec<f64> = (0..50).map(|i| 100.0 + (i % 7) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.1).collect();
        let (lo, hi) = bootstrap_median_ratio(&a, &b, 0.95, 2000, 42).unwrap();
        assert!(
            lo <= 1.1 + 1e-9 && hi >= 1.1 - 1e-9 && lo > 1.0 && hi < 1.2,
            "{lo} {hi}"
        );
        assert_eq!(
            bootstrap_median_ratio(&a, &b, 0.95, 500, 7),
            bootstrap_median_ratio(&a, &b, 0.95, 500, 7)
        );
        assert!(bootstrap_median_ratio(&[], &b, 0.95, 10, 1).is_none());
        assert!(bootstrap_median_ratio(&[0.0], &[1.0], 0.95, 10, 1).is_none());
        assert!(bootstrap_median_ratio(&a, &b, 1.5, 10, 1).is_none());
    }

    #[test]
    fn power_helpers() {
        // 1% noise, 10 vs 10 runs, alpha 0.05: (1.959964 + 0.841621) * 0.01 * sqrt(0.2) / sqrt(3/pi)
        let m = min_detectable_change(0.01, 10, 10, 0.05);
        assert!((m - 0.012_821_3).abs() < 1e-6, "{m}");
        assert_eq!(min_detectable_change(0.0, 1, 1, 0.05), 0.0);
        assert!(min_detectable_change(0.01, 2, 2, 0.05).is_infinite());
        assert!(min_detectable_change(0.01, 0, 5, 0.05).is_infinite());
        let n = repeats_needed(0.01, 0.01, 0.05, 0.8);
        assert!((16..=18).contains(&n), "{n}");
        assert_eq!(repeats_needed(0.0, 0.01, 0.05, 0.8), 1);
        assert_eq!(repeats_needed(0.01, 0.0, 0.05, 0.8), usize::MAX);
        // huge effect still needs enough runs for MWU to reach alpha=0.001: 2/C(2k,k) < 0.001 first at k = 7
        assert_eq!(repeats_needed(0.001, 1.0, 0.001, 0.9), 7);
    }

    #[test]
    fn robust_cv_values() {
        assert!(robust_cv(&[1.0]).is_none());
        assert_eq!(robust_cv(&[5.0, 5.0, 5.0]), Some(0.0));
        // median 100, MAD 1 -> 1.4826 %
        let cv = robust_cv(&[99.0, 100.0, 101.0, 100.0, 98.0, 102.0, 100.0]).unwrap();
        assert!((cv - 0.014826).abs() < 1e-12, "{cv}");
    }

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(256))]
        #[test]
        fn mwu_in_range(a in proptest::collection::vec(-100f64..100.0, 1..30),
                        b in proptest::collection::vec(-100f64..100.0, 1..30)) {
            let r = mann_whitney_u(&a, &b).unwrap();
            prop_assert!(r.p_value >= 0.0 && r.p_value <= 1.0);
            prop_assert!(r.statistic >= 0.0 && r.statistic <= (a.len() * b.len()) as f64);
            // symmetric p-value
            let s = mann_whitney_u(&b, &a).unwrap();
            prop_assert!(close(r.p_value, s.p_value, 1e-9));
        }

        /// The merge of two sorted sides gives exactly the ranks of one pooled sort: ties
        /// (values drawn from a few, signed zeros among them) and infinities included.
        #[test]
        fn rank_sum_is_the_pooled_sorts(
            a in proptest::collection::vec(pick(), 0..40),
            b in proptest::collection::vec(pick(), 0..40),
        ) {
            // NaN equals nothing: each is a rank of its own (the merge ends, the sum is one
            // of ranks).
            let (na, n) = (a.len(), a.len() + b.len());
            let (ra, _) = rank_sum(&a, &b);
            prop_assert!(ra >= (na * (na + 1)) as f64 / 2.0 && ra <= (n * (n + 1)) as f64 / 2.0);
            // Without NaN (whose pooled order among equal bits is arbitrary), exactly the
            // pooled sort's numbers.
            let (a, b): (Vec<f64>, Vec<f64>) = (clean(&a), clean(&b));
            let (r, t) = rank_sum(&a, &b);
            let (r0, t0) = pooled_rank_sum(&a, &b);
            prop_assert_eq!(r.to_bits(), r0.to_bits());
            prop_assert_eq!(t.to_bits(), t0.to_bits());
        }
    }

    fn pick() -> impl Strategy<Value = f64> {
        prop_oneof![
            (0u8..6).prop_map(f64::from),
            Just(-0.0),
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(f64::INFINITY),
            -10f64..10.0,
        ]
    }

    /// The plain definition: sort the pooled values, give each group of equal ones its mean
    /// rank.
    fn pooled_rank_sum(a: &[f64], b: &[f64]) -> (f64, f64) {
        let mut all: Vec<(f64, bool)> = a
            .iter()
            .map(|&x| (x, true))
            .chain(b.iter().map(|&x| (x, false)))
            .collect();
        all.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
        let (mut r_a, mut ties, mut i) = (0.0, 0.0, 0);
        while i < all.len() {
            let mut j = i + 1;
            while j < all.len() && all[j].0 == all[i].0 {
                j += 1;
            }
            let t = (j - i) as f64;
            r_a += (i + 1 + j) as f64 / 2.0 * all[i..j].iter().filter(|e| e.1).count() as f64;
            if j - i > 1 {
                ties += t * t * t - t;
            }
            i = j;
        }
        (r_a, ties)
    }
}
