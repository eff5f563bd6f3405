//! Largest-Triangle-Three-Buckets down-sampling of a series for plots.

/// Down-samples `points` to `threshold` points with Largest-Triangle-Three-Buckets
/// (Steinarsson 2013), keeping the first and last point.
///
/// Returns the input unchanged when `threshold >= points.len()` or `threshold < 3`.
/// Non-finite coordinates never panic (they just never win a bucket).
pub fn lttb(points: &[(f64, f64)], threshold: usize) -> Vec<(f64, f64)> {
    let n = points.len();
    if threshold >= n || threshold < 3 {
        return points.to_vec();
    }
    let mut out = Vec::with_capacity(threshold);
    out.push(points[0]);
    // Interior points split into threshold-2 buckets of (possibly fractional) width.
    let every = (n - 2) as f64 / (threshold - 2) as f64;
    let mut a = 0usize;
    for i in 0..threshold - 2 {
        let start = (i as f64 * every).floor() as usize + 1;
        let end = (((i + 1) as f64 * every).floor() as usize + 1).min(n - 1);
        // average of the next bucket (or the last point for the final bucket)
        let next_start = end;
        let next_end = (((i + 2) as f64 * every).floor() as usize + 1).min(n);
        let (mut ax, mut ay) = (0.0, 0.0);
        let cnt = next_end.saturating_sub(next_start).max(1);
        for p in &points[next_start..next_end.max(next_start + 1).min(n)] {
            ax += p.0;
            ay += p.1;
        }
        ax /= cnt as f64;
        ay /= cnt as f64;
        let (px, py) = points[a];
        let mut best = start;
        let mut best_area = -1.0;
        for (k, p) in points
            .iter()
            .enumerate()
            .take(end.max(start + 1))
            .skip(start)
        {
            let area = ((px - ax) * (p.1 - py) - (px - p.0) * (ay - py)).abs();
            if area > best_area {
                best_area = area;
                best = k;
            }
        }
        out.push(points[best]);
        a = best;
    }
    out.push(points[n - 1]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn passthrough() {
        let p = vec![(0.0, 1.0), (1.0, 2.0), (2.0, 0.0)];
        assert_eq!(lttb(&p, 3), p);
        assert_eq!(lttb(&p, 2), p);
        assert_eq!(lttb(&[], 5), vec![]);
    }

    #[test]
    fn keeps_peak() {
        let mut p: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, 0.0)).collect();
        p[37].1 = 50.0;
        let d = lttb(&p, 10);
        assert_eq!(d.len(), 10);
        assert!(d.contains(&(37.0, 50.0)));
        assert_eq!(d[0], p[0]);
        assert_eq!(d[9], p[99]);
    }

    #[test]
    fn reference_small() {
        // Hand-checked against the reference implementation (sveinn-steinarsson/flot-downsample):
        // 7 points to 4 -> buckets {1,2}, {3,4}(+5 as last bucket boundary), picks by area.
        let p = vec![
            (0.0, 0.0),
            (1.0, 5.0),
            (2.0, 1.0),
            (3.0, 1.0),
            (4.0, -4.0),
            (5.0, 0.0),
            (6.0, 0.0),
        ];
        let d = lttb(&p, 4);
        assert_eq!(d.len(), 4);
        assert_eq!(d[1], (1.0, 5.0));
        assert_eq!(d[2], (4.0, -4.0));
    }

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(256))]
        #[test]
        fn sizes_and_order(ys in proptest::collection::vec(-1e3f64..1e3, 0..300), t in 0usize..50) {
            let p: Vec<(f64, f64)> = ys.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect();
            let d = lttb(&p, t);
            if t >= p.len() || t < 3 {
                prop_assert_eq!(d.len(), p.len());
            } else {
                prop_assert_eq!(d.len(), t);
                prop_assert!(d.windows(2).all(|w| w[0].0 < w[1].0));
                prop_assert_eq!(d[0], p[0]);
                prop_assert_eq!(d[t - 1], p[p.len() - 1]);
            }
        }
    }
}
