//! Monotonic trend of a series: Mann-Kendall test with Sen's slope.

use super::compare::norm_sf;

/// Result of the Mann-Kendall trend test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Trend {
    /// Kendall's S: sum over pairs i < j of sign(x_j - x_i).
    pub s: f64,
    /// Kendall's tau-a: S / (n (n - 1) / 2).
    pub tau: f64,
    /// Continuity-corrected standard score of S (tie-corrected variance).
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Sen's slope: median of the pairwise slopes, per index step.
    pub sen_slope: f64,
    /// Direction when p < alpha, else `None`.
    pub direction: TrendDirection,
}

/// Direction of a significant trend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrendDirection {
    /// Significant upward trend.
    Increasing,
    /// Significant downward trend.
    Decreasing,
    /// No significant trend at the given alpha.
    None,
}

/// Up to this many points Sen's slope enumerates all pairs (n^2/2 slopes in memory);
/// above it the exact median is found by bisection on the slope with O(n log n) pair counts.
const SEN_ENUMERATE_MAX: usize = 2000;

/// Mann-Kendall trend test (two-sided, tie-corrected variance, continuity-corrected z, as
/// `pymannkendall.original_test`) and Sen's slope.
///
/// Non-finite values are dropped, keeping the positions of the rest (slopes are per index
/// step of the original slice). `None` with fewer than 2 finite values. S is computed exactly
/// in O(n log n). Sen's slope is exact up to 2000 points (all pairs enumerated); above, it is
/// found by bisection on the slope value with O(n log n) pair counting, to a relative 1e-10,
/// taking the upper middle slope for an even number of pairs; memory stays O(n)
/// (n = 100,000 takes about 0.3 s in release).
pub fn mann_kendall(xs: &[f64], alpha: f64) -> Option<Trend> {
    let pts: Vec<(f64, f64)> = xs
        .iter()
        .enumerate()
        .filter(|(_, x)| x.is_finite())
        .map(|(i, &x)| (i as f64, x))
        .collect();
    let n = pts.len();
    if n < 2 {
        return None;
    }
    let vals: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let (s, tie_term) = kendall_s(&vals);
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - tie_term) / 18.0;
    let s_f = s as f64;
    let z = if var <= 0.0 || s == 0 {
        0.0
    } else if s > 0 {
        (s_f - 1.0) / var.sqrt()
    } else {
        (s_f + 1.0) / var.sqrt()
    };
    let p_value = (2.0 * norm_sf(z.abs())).clamp(0.0, 1.0);
    let direction = if p_value < alpha && s > 0 {
        TrendDirection::Increasing
    } else if p_value < alpha && s < 0 {
        TrendDirection::Decreasing
    } else {
        TrendDirection::None
    };
    Some(Trend {
        s: s_f,
        tau: s_f / (nf * (nf - 1.0) / 2.0),
        z,
        p_value,
        sen_slope: sen_slope(&pts),
        direction,
    })
}

/// [`mann_kendall`] within groups (the seasonal Kendall test, Hirsch et al. 1982): each
/// value is compared only with the later values of its own group (`group[i]`, e.g. the named
/// machine that measured it), S and its variance summed over the groups, Sen's slope the
/// median of the groups' own Sen slopes, each weighed by its pairs (per index step of the
/// whole slice). A move only between groups (a machine handed over) is no trend. One group
/// is [`mann_kendall`].
pub fn mann_kendall_by(xs: &[f64], group: &[u64], alpha: f64) -> Option<Trend> {
    let mut groups: Vec<u64> = group.to_vec();
    groups.sort_unstable();
    groups.dedup();
    if groups.len() <= 1 || group.len() != xs.len() {
        return mann_kendall(xs, alpha);
    }
    let (mut s, mut var, mut pairs) = (0i64, 0.0, 0.0);
    let mut slopes: Vec<(f64, f64)> = Vec::new();
    for g in groups {
        let pts: Vec<(f64, f64)> = xs
            .iter()
            .enumerate()
            .filter(|&(i, x)| group[i] == g && x.is_finite())
            .map(|(i, &x)| (i as f64, x))
            .collect();
        let n = pts.len() as f64;
        if pts.len() < 2 {
            continue;
        }
        let vals: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let (sg, tie_term) = kendall_s(&vals);
        s += sg;
        var += (n * (n - 1.0) * (2.0 * n + 5.0) - tie_term) / 18.0;
        pairs += n * (n - 1.0) / 2.0;
        slopes.push((sen_slope(&pts), n * (n - 1.0) / 2.0));
    }
    if pairs == 0.0 {
        return None;
    }
    let s_f = s as f64;
    let z = if var <= 0.0 || s == 0 {
        0.0
    } else {
        (s_f - s_f.signum()) / var.sqrt()
    };
    let p_value = (2.0 * norm_sf(z.abs())).clamp(0.0, 1.0);
    let direction = match (p_value < alpha, s.signum()) {
        (true, 1) => TrendDirection::Increasing,
        (true, -1) => TrendDirection::Decreasing,
        _ => TrendDirection::None,
    };
    slopes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = pairs / 2.0;
    let mut acc = 0.0;
    let sen_slope = slopes
        .iter()
        .find(|(_, w)| {
            acc += w;
            acc >= half
        })
        .map_or(0.0, |s| s.0);
    Some(Trend {
        s: s_f,
        tau: s_f / pairs,
        z,
        p_value,
        sen_slope,
        direction,
    })
}

/// Kendall's S and the tie term sum t (t-1) (2t+5), in O(n log n) with a Fenwick tree.
fn kendall_s(vals: &[f64]) -> (i64, f64) {
    let n = vals.len();
    let mut sorted: Vec<f64> = vals.to_vec();
    sorted.sort_unstable_by(|a, b| a.total_cmp(b));
    let mut uniq: Vec<f64> = Vec::with_capacity(n);
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && sorted[j] == sorted[i] {
            j += 1;
        }
        let t = (j - i) as f64;
        tie_term += t * (t - 1.0) * (2.0 * t + 5.0);
        uniq.push(sorted[i]);
        i = j;
    }
    let mut tree = vec![0i64; uniq.len() + 1];
    let mut s: i64 = 0;
    for (seen, &x) in vals.iter().enumerate() {
        // 1-based rank among distinct values
        let r = uniq.partition_point(|u| *u < x) + 1;
        let less = prefix(&tree, r - 1);
        let less_eq = prefix(&tree, r);
        let greater = seen as i64 - less_eq;
        s += less - greater;
        let mut k = r;
        while k < tree.len() {
            tree[k] += 1;
            k += k & k.wrapping_neg();
        }
    }
    (s, tie_term)
}

fn prefix(tree: &[i64], mut k: usize) -> i64 {
    let mut acc = 0;
    while k > 0 {
        acc += tree[k];
        k &= k - 1;
    }
    acc
}

/// Median of the pairwise slopes (x_j - x_i) / (i_j - i_i) over i < j.
fn sen_slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len();
    if n <= SEN_ENUMERATE_MAX {
        let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
        for i in 0..n {
            for j in i + 1..n {
                slopes.push((pts[j].1 - pts[i].1) / (pts[j].0 - pts[i].0));
            }
        }
        return super::summary::median_in_place(&mut slopes).unwrap_or(0.0);
    }
    // With millions of pairs the two middle slopes agree far below the bisection tolerance,
    // so the upper middle stands for both.
    let total = (n as u64) * (n as u64 - 1) / 2;
    kth_slope(pts, total / 2 + 1)
}

/// The k-th smallest pairwise slope (1-based), by bisection on the slope value.
/// Every pairwise slope is a weighted mean of the consecutive slopes, so those bound it.
fn kth_slope(pts: &[(f64, f64)], k: u64) -> f64 {
    let consecutive = pts
        .windows(2)
        .map(|w| (w[1].1 - w[0].1) / (w[1].0 - w[0].0));
    let (mut lo, mut hi) = consecutive.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), s| {
        (l.min(s), h.max(s))
    });
    if lo.is_nan() || hi.is_nan() || lo >= hi {
        return lo;
    }
    let mut buf = vec![0.0; pts.len()];
    let mut tmp = vec![0.0; pts.len()];
    // Stop at a relative width of 1e-10 of the slope (or of the consecutive-slope range when
    // the median is ~0): far below any noise in the data, and ~35 counts instead of ~60+.
    let range = hi - lo;
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi || hi - lo <= 1e-10 * mid.abs().max(1e-6 * range) {
            break;
        }
        if count_slopes_le(pts, mid, &mut buf, &mut tmp) >= k {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Number of pairs i < j whose slope is <= t: those with y_j <= y_i for y = x - t * index.
fn count_slopes_le(pts: &[(f64, f64)], t: f64, buf: &mut [f64], tmp: &mut [f64]) -> u64 {
    for (b, p) in buf.iter_mut().zip(pts) {
        *b = p.1 - t * p.0;
    }
    count_non_ascending_pairs(buf, tmp)
}

/// Merge sort counting pairs i < j with v_i >= v_j; sorts `v` ascending.
fn count_non_ascending_pairs(v: &mut [f64], tmp: &mut [f64]) -> u64 {
    let n = v.len();
    if n < 2 {
        return 0;
    }
    let m = n / 2;
    let mut c = {
        let (l, r) = v.split_at_mut(m);
        let (tl, tr) = tmp.split_at_mut(m);
        count_non_ascending_pairs(l, tl) + count_non_ascending_pairs(r, tr)
    };
    let (mut i, mut j, mut k) = (0, m, 0);
    while i < m && j < n {
        // v[i] >= v[j]: every remaining left element is >= v[j] too
        if v[i] >= v[j] {
            c += (m - i) as u64;
            tmp[k] = v[j];
            j += 1;
        } else {
            tmp[k] = v[i];
            i += 1;
        }
        k += 1;
    }
    while i < m {
        tmp[k] = v[i];
        i += 1;
        k += 1;
    }
    while j < n {
        tmp[k] = v[j];
        j += 1;
        k += 1;
    }
    v.copy_from_slice(&tmp[..n]);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_machine_handed_over_is_no_trend_within_machines() {
        // A measured the first 20 commits, B (10 % slower) the last 20; nothing moved.
        let xs: Vec<f64> = (0..40)
            .map(|i| if i < 20 { 1000.0 } else { 1100.0 } + ((i * 37) % 11) as f64)
            .collect();
        let group: Vec<u64> = (0..40).map(|i| u64::from(i >= 20)).collect();
        assert_eq!(
            mann_kendall(&xs, 0.05).unwrap().direction,
            TrendDirection::Increasing
        );
        let t = mann_kendall_by(&xs, &group, 0.05).unwrap();
        assert_eq!(t.direction, TrendDirection::None, "{t:?}");
        // One group: the plain test.
        assert_eq!(
            mann_kendall_by(&xs, &[7; 40], 0.05),
            mann_kendall(&xs, 0.05)
        );
        // A drift on both machines, alternating: seen within each.
        let ys: Vec<f64> = (0..40)
            .map(|i| 1000.0 + 2.0 * i as f64 + if i % 2 == 1 { 100.0 } else { 0.0 })
            .collect();
        let alt: Vec<u64> = (0..40).map(|i| i % 2).collect();
        let t = mann_kendall_by(&ys, &alt, 0.05).unwrap();
        assert_eq!(t.direction, TrendDirection::Increasing, "{t:?}");
        assert!((t.sen_slope - 2.0).abs() < 1e-9, "{t:?}");
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
    }

    #[test]
    fn reference_values() {
        // S, tau, z, p from the textbook formulas (as pymannkendall.original_test) evaluated with
        // numpy 2.2 / scipy 1.17.1 (p = 2 * scipy.stats.norm.sf(|z|)); Sen's slope from
        // scipy.stats.theilslopes(x).slope.
        let a = [5.2, 5.1, 5.6, 5.9, 5.4, 6.1, 6.3, 6.0, 6.6, 6.2, 6.9, 7.1];
        let t = mann_kendall(&a, 0.05).unwrap();
        assert_eq!(t.s, 52.0);
        assert!(close(t.tau, 0.787_878_787_878_787_8, 1e-12));
        assert!(close(t.z, 3.497_199_954_751_082_4, 1e-12));
        assert!(close(t.p_value, 0.000_470_169_279_313_969_3, 1e-8));
        assert!(close(t.sen_slope, 0.166_666_666_666_666_66, 1e-9));
        assert_eq!(t.direction, TrendDirection::Increasing);
        // with ties
        let b = [
            3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, 8.0, 9.0, 7.0, 9.0, 3.0, 2.0,
            3.0, 8.0, 4.0,
        ];
        let t = mann_kendall(&b, 0.05).unwrap();
        assert_eq!(t.s, 40.0);
        assert!(close(t.tau, 0.210_526_315_789_473_67, 1e-12));
        assert!(close(t.z, 1.278_860_379_778_708_1, 1e-12));
        assert!(close(t.p_value, 0.200_946_226_864_307_2, 1e-8));
        assert!(close(t.sen_slope, 0.166_666_666_666_666_66, 1e-9));
        assert_eq!(t.direction, TrendDirection::None);
    }

    #[test]
    fn edges() {
        assert!(mann_kendall(&[], 0.05).is_none());
        assert!(mann_kendall(&[1.0, f64::NAN], 0.05).is_none());
        let t = mann_kendall(&[3.0; 10], 0.05).unwrap();
        assert_eq!((t.s, t.p_value, t.sen_slope), (0.0, 1.0, 0.0));
        assert_eq!(t.direction, TrendDirection::None);
        let t = mann_kendall(&[1.0, 2.0], 0.05).unwrap();
        assert_eq!(t.s, 1.0);
        let up: Vec<f64> = (0..100).map(|i| i as f64 * 0.5).collect();
        let t = mann_kendall(&up, 0.05).unwrap();
        assert_eq!(t.direction, TrendDirection::Increasing);
        assert!(close(t.sen_slope, 0.5, 1e-12) && close(t.tau, 1.0, 1e-12));
        // gaps keep positions: slope per index step
        let t = mann_kendall(&[0.0, f64::NAN, 2.0, 3.0], 0.05).unwrap();
        assert!(close(t.sen_slope, 1.0, 1e-12));
    }

    #[test]
    fn large_n_bisection_matches_enumeration() {
        // deterministic pseudo-noise plus a slope
        let mut rng = crate::stats::compare::SplitMix64::new(3);
        let xs: Vec<f64> = (0..2600).map(|i| 0.01 * i as f64 + rng.normal()).collect();
        let pts: Vec<(f64, f64)> = xs.iter().enumerate().map(|(i, &x)| (i as f64, x)).collect();
        let mut slopes = Vec::new();
        for i in 0..pts.len() {
            for j in i + 1..pts.len() {
                slopes.push((pts[j].1 - pts[i].1) / (pts[j].0 - pts[i].0));
            }
        }
        let exact = crate::stats::summary::median_in_place(&mut slopes).unwrap();
        let t = mann_kendall(&xs, 0.05).unwrap();
        assert!(
            close(t.sen_slope, exact, 1e-9),
            "{} vs {exact}",
            t.sen_slope
        );
    }

    #[test]
    fn hundred_thousand_points() {
        let xs: Vec<f64> = (0..100_000)
            .map(|i| ((i * 7919) % 1000) as f64 + i as f64 * 1e-3)
            .collect();
        let t = mann_kendall(&xs, 0.05).unwrap();
        assert!(t.p_value.is_finite() && t.sen_slope.is_finite());
    }

    fn brute_s(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            for j in i + 1..x.len() {
                s += (x[j] - x[i]).signum() * f64::from(x[j] != x[i]);
            }
        }
        s
    }

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(256))]
        #[test]
        fn s_matches_brute_force(x in proptest::collection::vec(0u8..6, 2..40)) {
            let x: Vec<f64> = x.into_iter().map(f64::from).collect();
            let t = mann_kendall(&x, 0.05).unwrap();
            prop_assert_eq!(t.s, brute_s(&x));
            prop_assert!(t.p_value >= 0.0 && t.p_value <= 1.0);
        }
    }
}
