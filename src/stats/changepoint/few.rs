//! Few runs never silently hide a step: a rank test whose sides hold so few runs that even a
//! complete separation cannot reach its α is helped by Welch's t test on a clean separation;
//! two steps closer than the minimum segment stay apart when their runs say so; and a step
//! the runs show but cannot yet decide is reported as undecided, with the runs it needs.

use super::super::compare::{norm_quantile, norm_sf, welch_t};
use super::super::threshold::rel_change;
use super::confirm::{Ctx, Tested};
use super::point::{ChangePoint, Undecided};
use super::prefix::Prefix;

/// Below this smallest two-sided p-value of a rank test (2 / C(n1 + n2, n1), reached only by
/// a complete separation), its sides are "few runs": 10 vs 10 runs or fewer.
const FEW_FLOOR: f64 = 1e-6;
/// A boundary with a p-value under this (before any correction) whose runs are few and
/// cleanly apart is worth more runs: undecided.
const UNDECIDED_P: f64 = 0.05;
/// Commits on the far side of a close second step that its test compares it with.
const CLOSE_SPAN: usize = 10;
/// Most undecided steps reported (the most certain first).
const MAX_UNDECIDED: usize = 3;
/// Power asked of the runs an undecided step needs.
const POWER_Z: f64 = 0.841_621_233_572_914_3; // the standard normal's 80 % quantile

/// The smallest two-sided p-value a rank test of `n1` vs `n2` runs can give.
pub(super) fn rank_floor(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let (small, big) = (n1.min(n2), n1.max(n2));
    let ln_c: f64 = (1..=small)
        .map(|i| ((big + i) as f64 / i as f64).ln())
        .sum();
    (2.0 * (-ln_c).exp()).min(1.0)
}

/// Every run of one side beyond every run of the other.
fn separated(a: &[f64], b: &[f64]) -> bool {
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    !a.is_empty() && !b.is_empty() && (max(a) < min(b) || max(b) < min(a))
}

impl Ctx<'_> {
    /// Runs (or commit levels) on each side of the boundary at `b` tested on [lo, hi).
    fn sides(&self, lo: usize, b: usize, hi: usize) -> (Vec<f64>, Vec<f64>) {
        if self.per_commit {
            (self.y[lo..b].to_vec(), self.y[b..hi].to_vec())
        } else {
            (self.raw(lo, b, b), self.raw(b, hi, b))
        }
    }

    /// The rank test's `p` of the boundary at `b` on [lo, hi), or Welch's when its sides are
    /// few runs, cleanly apart, and Welch's is smaller: a separation of 3 vs 3 runs ranks the
    /// same whether they are 0.1 % or 50 % apart, Welch's t tells them apart.
    pub(super) fn few_runs_p(&self, lo: usize, b: usize, hi: usize, p: f64) -> f64 {
        if lo >= b || b >= hi {
            return p;
        }
        let (n1, n2) = if self.per_commit {
            (b - lo, hi - b)
        } else {
            (self.kept.count(lo, b), self.kept.count(b, hi))
        };
        if rank_floor(n1, n2) < FEW_FLOOR {
            return p;
        }
        let (l, r) = self.sides(lo, b, hi);
        if !separated(&l, &r) {
            return p;
        }
        let welch = welch_t(&l, &r).map_or(p, |t| t.p_value.min(p));
        if !self.per_commit {
            return welch;
        }
        // Commit levels, few of them on a side: each level's variance is known from the series
        // (the jitter between commits plus its own runs' noise, as the segmentation weighs
        // it), so the sides' weighted means are compared with it (the segmentation's own z).
        // Two commits 1.6 % below ten that jitter by 0.2 % are a step however few commits
        // stand on that side; Welch's t on two levels can hardly say so.
        let z = Prefix::new(&self.y[lo..hi], &self.w[lo..hi]).z(0, b - lo, hi - lo);
        if z == 0.0 || !z.is_finite() {
            return welch;
        }
        welch.min((2.0 * norm_sf(z.abs())).min(1.0))
    }

    /// Whether a boundary tested as `t` passes among `k` boundaries (Bonferroni and scan).
    fn passes(&self, t: &Tested, k: f64) -> bool {
        t.reached && t.p * k * self.scan_factor(t.shortest) < self.alpha
    }

    /// Kept index of each point.
    fn kept_of(&self, found: &[ChangePoint]) -> Vec<usize> {
        found
            .iter()
            .filter_map(|c| self.kept.pos.iter().position(|&p| p == c.index))
            .collect()
    }

    /// Two steps closer than the minimum segment (a level that lasted one or two commits):
    /// next to each point, a second boundary within `min_seg - 1` commits is tried, tested
    /// against its own neighbours with the scan factor its short segment earns and the
    /// number of places tried; it is kept only when both it and the point still pass beside
    /// each other, and each keeps the levels of its own segments.
    pub(super) fn split_close(&self, found: Vec<ChangePoint>) -> Vec<ChangePoint> {
        let m = self.y.len();
        if self.min_seg <= 1 || found.is_empty() || found.iter().any(|c| c.deterministic) {
            return found;
        }
        let mut bs = self.kept_of(&found);
        if bs.len() != found.len() {
            return found;
        }
        // (A minimum segment longer than the series reaches no further than it.)
        let reach = (self.min_seg - 1).min(m);
        let tries = 2.0 * reach as f64 * bs.len() as f64;
        let mut i = 0;
        while i < bs.len() {
            let b = bs[i];
            let a = if i == 0 { 0 } else { bs[i - 1] };
            let c = bs.get(i + 1).copied().unwrap_or(m);
            let mut best: Option<(usize, f64)> = None;
            for d in 1..=reach {
                for b2 in [b.checked_add(d), b.checked_sub(d)].into_iter().flatten() {
                    if b2 <= a || b2 >= c || b2 == 0 {
                        continue;
                    }
                    // Against the commits next to it only: beside a drift, a long stretch
                    // differs from a short one without any step.
                    let t = if b2 > b {
                        self.test(b, b2, c.min(b2 + CLOSE_SPAN))
                    } else {
                        self.test(a.max(b2.saturating_sub(CLOSE_SPAN)), b2, b)
                    };
                    if self.passes(&t, tries) && best.is_none_or(|(_, p)| t.p < p) {
                        best = Some((b2, t.p));
                    }
                }
            }
            if let Some((b2, _)) = best {
                let mut with: Vec<usize> = bs.clone();
                with.push(b2);
                with.sort_unstable();
                let k = with.len() as f64;
                let j = with.iter().position(|&x| x == b2).unwrap_or(0);
                // Both the new boundary and its neighbours must still pass beside it.
                let ok = (j.saturating_sub(1)..(j + 2).min(with.len())).all(|q| {
                    let a = if q == 0 { 0 } else { with[q - 1] };
                    let c = with.get(q + 1).copied().unwrap_or(m);
                    self.passes(&self.test(a, with[q], c), k)
                });
                if ok {
                    bs = with;
                    i = j.max(i) + 1;
                    continue;
                }
            }
            i += 1;
        }
        if bs.len() == found.len() {
            return found;
        }
        // Every point's levels again, each between its own neighbours.
        (0..bs.len())
            .map(|q| {
                let a = if q == 0 { 0 } else { bs[q - 1] };
                let c = bs.get(q + 1).copied().unwrap_or(m);
                self.point(bs[q], &self.test(a, bs[q], c))
            })
            .collect()
    }

    /// Steps the runs show but are too few to decide: boundaries the segmentation proposed
    /// (or, in a series too short for it, every split) that did not pass, whose sides are few
    /// runs cleanly apart, reach the threshold and give p < 5 % before any correction. Each
    /// says how many runs a side its test needs (80 % power at the corrected α).
    pub(super) fn undecided(&self, found: &[ChangePoint], proposed: &[usize]) -> Vec<Undecided> {
        let m = self.y.len();
        if m < 2 || found.iter().any(|c| c.deterministic) {
            return Vec::new();
        }
        // Every commit's runs repeat one number: more of them would say the same.
        let exact = |s: &Vec<f64>| s.len() >= 2 && s.iter().all(|x| *x == s[0]);
        if self.kept.samples.iter().all(exact) {
            return Vec::new();
        }
        let bs = self.kept_of(found);
        let mut cands: Vec<usize> = proposed.to_vec();
        let short = self.min_seg.saturating_sub(1).max(1);
        if m < 2 * self.min_seg {
            cands.extend(1..m);
        } else {
            cands.extend(1..=short.min(m - 1));
            cands.extend(m.saturating_sub(short).max(1)..m);
        }
        cands.sort_unstable();
        cands.dedup();
        let k = (bs.len() + 1) as f64;
        let mut out: Vec<(usize, Tested, usize, usize)> = Vec::new();
        for b in cands {
            if b == 0 || b >= m || bs.iter().any(|&x| x.abs_diff(b) <= 1) {
                continue;
            }
            let a = bs.iter().copied().filter(|&x| x < b).max().unwrap_or(0);
            let c = bs.iter().copied().filter(|&x| x > b).min().unwrap_or(m);
            let t = self.test(a, b, c);
            if !t.reached || t.p >= UNDECIDED_P || self.passes(&t, k) {
                continue;
            }
            let lo = a.max(b.saturating_sub(self.window));
            let hi = c.min(b.saturating_add(self.window));
            let (n1, n2) = (self.kept.count(lo, b), self.kept.count(b, hi));
            if rank_floor(n1, n2) < FEW_FLOOR {
                continue;
            }
            let (l, r) = self.sides(lo, b, hi);
            if !separated(&l, &r) {
                continue;
            }
            out.push((b, t, n1, n2));
        }
        out.sort_by(|x, y| x.1.p.total_cmp(&y.1.p));
        // One per stretch: neighbouring splits of one step are the same step.
        let mut kept: Vec<(usize, Tested, usize, usize)> = Vec::new();
        for o in out {
            if kept
                .iter()
                .all(|q| q.0.abs_diff(o.0) >= self.min_seg.max(2))
            {
                kept.push(o);
            }
        }
        kept.truncate(MAX_UNDECIDED);
        kept.sort_by_key(|o| o.0);
        kept.into_iter()
            .map(|(b, t, n1, n2)| {
                let level = self.alpha / (k * self.scan_factor(t.shortest));
                let z_obs = norm_quantile(1.0 - t.p.max(1e-300) / 2.0).max(0.1);
                let z_need = norm_quantile(1.0 - level / 2.0) + POWER_Z;
                let n = n1.min(n2).max(1);
                let need = (n as f64 * (z_need / z_obs).powi(2)).ceil() as usize;
                Undecided {
                    index: self.kept.pos[b],
                    before: t.before,
                    after: t.after,
                    rel_change: rel_change(t.before, t.after),
                    p_value: t.p,
                    runs: (n1, n2),
                    runs_needed: need.clamp(n + 1, 1000),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_floor_is_two_over_the_arrangements() {
        assert!((rank_floor(3, 3) - 0.1).abs() < 1e-12);
        assert!((rank_floor(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(rank_floor(0, 4), 1.0);
        assert!(rank_floor(10, 10) < 1.1e-5 && rank_floor(12, 12) < FEW_FLOOR);
    }
}
