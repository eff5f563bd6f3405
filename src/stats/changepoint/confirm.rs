//! Confirmation of a segmentation's boundaries: each refined to its best split, tested by
//! a rank test on the raw (detrended) samples of its neighbouring segments with Bonferroni
//! and scan corrections, failures merged away until every survivor passes; then the steps
//! near either end that the minimum segment length could not place.

use super::super::compare::{
    mann_whitney_from_ranks, mann_whitney_u, rank_sum_owned, rank_sum_sorted,
};
use super::super::summary::median_in_place;
use super::super::threshold::{rel_change, Threshold};
use super::kept::Kept;
use super::point::ChangePoint;
use super::prefix::Prefix;

/// Commits on each side of a boundary whose runs give the levels a change point reports.
pub(super) const LEVEL_SPAN: usize = 10;
/// What the confirmation step needs.
pub(super) struct Ctx<'a> {
    pub(super) kept: &'a Kept,
    /// detrended levels
    pub(super) y: &'a [f64],
    pub(super) w: &'a [f64],
    /// drift per series position, removed from raw samples before testing
    pub(super) slope: f64,
    pub(super) min_seg: usize,
    pub(super) alpha: f64,
    pub(super) threshold: Threshold,
    pub(super) window: usize,
    /// samples are logarithms of the metric
    pub(super) log: bool,
    /// exponent of the scan correction (0 = off)
    pub(super) scan_power: f64,
    /// test per-commit levels instead of raw runs (between-commit jitter dominates)
    pub(super) per_commit: bool,
}

/// A tested boundary.
pub(super) struct Tested {
    /// commits in the shorter of the two tested sides
    pub(super) shortest: usize,
    pub(super) p: f64,
    pub(super) before: f64,
    pub(super) after: f64,
    pub(super) reached: bool,
}

impl Ctx<'_> {
    /// Refines, tests and prunes `bounds` until every survivor passes; returns change points.
    pub(super) fn confirm(&self, mut bounds: Vec<usize>) -> Vec<ChangePoint> {
        let m = self.y.len();
        let pre = Prefix::new(self.y, self.w);
        const MAX_ROUNDS: usize = 200;
        for round in 0..MAX_ROUNDS {
            if bounds.is_empty() {
                return Vec::new();
            }
            self.refine(&pre, &mut bounds);
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
                .map(|t| t.reached && t.p * k * self.scan_factor(t.shortest) < self.alpha)
                .collect();
            // Out of rounds: keep what passed against its current neighbours.
            if round + 1 == MAX_ROUNDS || pass.iter().all(|&p| p) {
                return bounds
                    .iter()
                    .zip(&tested)
                    .zip(&pass)
                    .filter(|(_, &ok)| ok)
                    .map(|((&b, t), _)| ChangePoint {
                        index: self.kept.pos[b],
                        before: t.before,
                        after: t.after,
                        rel_change: rel_change(t.before, t.after),
                        p_value: t.p,
                        deterministic: false,
                        interval: None,
                        windows: 0,
                    })
                    .collect();
            }
            // Drop the weakest failure of every run of neighbouring failures, not all of them:
            // a spurious boundary next to a real one shortens the real one's test segment, and
            // once the spurious one is gone the real one passes (as Otava drops the weakest
            // point first).
            let adj: Vec<f64> = tested
                .iter()
                .map(|t| {
                    if t.reached {
                        t.p * k * self.scan_factor(t.shortest)
                    } else {
                        f64::INFINITY
                    }
                })
                .collect();
            let drop: Vec<bool> = (0..bounds.len())
                .map(|i| {
                    !pass[i]
                        && (i == 0 || pass[i - 1] || adj[i - 1] <= adj[i])
                        && (i + 1 == bounds.len() || pass[i + 1] || adj[i + 1] < adj[i])
                })
                .collect();
            bounds = bounds
                .iter()
                .zip(&drop)
                .filter(|(_, &d)| !d)
                .map(|(&b, _)| b)
                .collect();
        }
        Vec::new()
    }

    /// Steps within `min_seg - 1` commits of either end (the newest commit included: "did the
    /// latest round regress?"), which the segmentation's minimum length cannot place: each
    /// short end segment is tested against its neighbouring segment like any boundary, with
    /// its scan factor and the number of such candidates on top, so a step there is reported
    /// only when the end commits' runs make it certain. One per end, the most certain.
    pub(super) fn edges(&self, mut found: Vec<ChangePoint>) -> Vec<ChangePoint> {
        // A drift fitted over a short series absorbs a step near an end: the end tests look at
        // the samples as they are.
        let flat = Ctx {
            slope: 0.0,
            ..*self
        };
        flat.edges_flat(std::mem::take(&mut found))
    }

    fn edges_flat(&self, mut found: Vec<ChangePoint>) -> Vec<ChangePoint> {
        let m = self.y.len();
        if self.min_seg <= 1 || m < 2 {
            return found;
        }
        // Kept indices of the boundaries found.
        let bounds: Vec<usize> = found
            .iter()
            .filter_map(|c| self.kept.pos.iter().position(|&p| p == c.index))
            .collect();
        // A series too short for the segmentation to place any boundary (fewer than two
        // minimum segments): its two end zones meet, so every split is one candidate of one
        // zone, and the most certain split that passes is the step.
        if bounds.is_empty() && m < 2 * self.min_seg {
            let candidates = (m - 1) as f64;
            let best = (1..m)
                .map(|b| (b, self.test(0, b, m)))
                .filter(|(_, t)| {
                    t.reached && t.p * candidates * self.scan_factor(t.shortest) < self.alpha
                })
                .min_by(|(_, a), (_, b)| a.p.total_cmp(&b.p));
            return best
                .map(|(b, t)| vec![self.point(b, &t)])
                .unwrap_or_default();
        }
        // (An end zone reaches at most a quarter of the series in: a huge `min_seg` does not
        // turn every commit into an end.)
        let short = (self.min_seg - 1).min((m / 4).max(((m - 1) / 3).max(1)));
        let candidates = (2 * short) as f64;
        // A boundary the segmentation put `min_seg` from an end may belong closer to it: the
        // most certain split between the end and it wins.
        let mut found_b: Vec<usize> = bounds.clone();
        let pre = Prefix::new(self.y, self.w);
        let k = found_b.len().max(1) as f64;
        for left in [true, false] {
            let n = found_b.len();
            if n == 0 {
                break;
            }
            let i = if left { 0 } else { n - 1 };
            let b0 = found_b[i];
            let near = if left {
                b0 <= self.min_seg.min(short + 1)
            } else {
                m - b0 <= self.min_seg.min(short + 1)
            };
            let zone = if left { 1..b0 } else { b0 + 1..m };
            if !near || zone.is_empty() {
                continue;
            }
            let a = if i > 0 { found_b[i - 1] } else { 0 };
            let c = found_b.get(i + 1).copied().unwrap_or(m);
            // The best split by the segmentation's own cost, the end zone allowed (what
            // `refine` does within `min_seg`), if it still passes its test there.
            let total = pre.cost(a, c);
            let gain = |t: usize| total - pre.cost(a, t) - pre.cost(t, c);
            let best = zone
                .chain(std::iter::once(b0))
                .max_by(|&x, &y| {
                    gain(x)
                        .total_cmp(&gain(y))
                        .then(y.abs_diff(b0).cmp(&x.abs_diff(b0)))
                })
                .unwrap_or(b0);
            let better = (best != b0)
                .then(|| (best, self.test(a, best, c)))
                .filter(|(_, t)| t.reached && t.p * k * self.scan_factor(t.shortest) < self.alpha);
            if let Some((b, t)) = better {
                if let Some(cp) = found.iter_mut().find(|c| c.index == self.kept.pos[b0]) {
                    *cp = self.point(b, &t);
                    found_b[i] = b;
                }
            }
        }
        let bounds = found_b;
        let mut add = Vec::new();
        for left in [true, false] {
            let cands: Vec<usize> = if left {
                (1..=short.min(m - 1)).collect()
            } else {
                (m.saturating_sub(short).max(1)..m).collect()
            };
            let mut best: Option<(usize, Tested)> = None;
            for b in cands {
                if bounds.iter().any(|&x| x.abs_diff(b) < self.min_seg) {
                    continue;
                }
                let a = bounds.iter().copied().filter(|&x| x < b).max().unwrap_or(0);
                let c = bounds.iter().copied().filter(|&x| x > b).min().unwrap_or(m);
                let t = self.test(a, b, c);
                let adj = t.p * candidates * self.scan_factor(t.shortest);
                if t.reached && adj < self.alpha && best.as_ref().is_none_or(|(_, o)| t.p < o.p) {
                    best = Some((b, t));
                }
            }
            if let Some((b, t)) = best {
                add.push(self.point(b, &t));
            }
        }
        if add.is_empty() {
            return found;
        }
        found.extend(add);
        found.sort_by_key(|c| c.index);
        found.dedup_by_key(|c| c.index);
        // A step near an end that the segmentation missed made it fit a drift or a boundary
        // elsewhere to explain that end: the other points are tested again beside it, as the
        // samples are, and dropped when they no longer pass.
        for _ in 0..8 {
            let bs: Vec<usize> = found
                .iter()
                .filter_map(|c| self.kept.pos.iter().position(|&p| p == c.index))
                .collect();
            let k = bs.len() as f64;
            let keep: Vec<bool> = (0..bs.len())
                .map(|i| {
                    // An end point too: beside another end point it may no longer stand (one
                    // step near the start makes the far end look different from the rest).
                    let a = if i == 0 { 0 } else { bs[i - 1] };
                    let c = bs.get(i + 1).copied().unwrap_or(m);
                    let t = self.test(a, bs[i], c);
                    t.reached && t.p * k * self.scan_factor(t.shortest) < self.alpha
                })
                .collect();
            if keep.iter().all(|&x| x) {
                break;
            }
            let mut it = keep.iter();
            found.retain(|_| *it.next().unwrap_or(&true));
        }
        found
    }

    /// The change point of kept commit `b`, tested as `t`.
    pub(super) fn point(&self, b: usize, t: &Tested) -> ChangePoint {
        ChangePoint {
            index: self.kept.pos[b],
            before: t.before,
            after: t.after,
            rel_change: rel_change(t.before, t.after),
            p_value: t.p,
            deterministic: false,
            interval: None,
            windows: 0,
        }
    }

    /// The segmentation searched every position, so a short segment that looks different was
    /// picked among about m / length others like it: scan-statistic style correction.
    pub(super) fn scan_factor(&self, shortest: usize) -> f64 {
        if self.scan_power <= 0.0 {
            return 1.0;
        }
        let m = self.y.len() as f64;
        (m / shortest.max(1) as f64).max(1.0).powf(self.scan_power)
    }

    /// Moves each boundary to the best single split between its neighbours.
    fn refine(&self, pre: &Prefix, bounds: &mut [usize]) {
        let m = self.y.len();
        for i in 0..bounds.len() {
            let a = if i == 0 { 0 } else { bounds[i - 1] };
            let c = bounds.get(i + 1).copied().unwrap_or(m);
            let lo = a
                .saturating_add(self.min_seg)
                .max(bounds[i].saturating_sub(self.window));
            let hi = (c.saturating_sub(self.min_seg)).min(bounds[i].saturating_add(self.window));
            if lo > hi {
                continue;
            }
            let (wa, wc) = (
                a.max(lo.saturating_sub(self.window)),
                c.min(hi.saturating_add(self.window)),
            );
            let total = pre.cost(wa, wc);
            // A neighbour may have moved closer than min_seg: start inside the allowed range.
            let mut best = bounds[i].clamp(lo, hi);
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

    /// The p-value of the boundary at `b` tested on kept commits [lo, hi) as measured (no
    /// drift to remove): what [`Ctx::raw`]'s samples would give, ranked in one pass over
    /// [`Kept::pooled`].
    fn p_as_is(&self, lo: usize, b: usize, hi: usize) -> f64 {
        if lo >= b || b >= hi {
            return 1.0;
        }
        // Two flat sides compare exactly, but only when each holds repeated runs: a side of
        // one run is no evidence that it would give the same number again.
        let repeated = self.kept.count(lo, b) >= 2 && self.kept.count(b, hi) >= 2;
        if let (true, Some(x), Some(y)) = (repeated, self.kept.flat(lo, b), self.kept.flat(b, hi)) {
            return if x == y { 1.0 } else { 0.0 };
        }
        if self.per_commit {
            return mann_whitney_u(&self.y[lo..b], &self.y[b..hi]).map_or(1.0, |r| r.p_value);
        }
        let (n1, n2) = (self.kept.count(lo, b), self.kept.count(b, hi));
        // One pass over every commit's distinct values pays off when the tested commits
        // hold many samples next to them (thousands of runs per commit, values repeated); a
        // narrow test (a long series of few runs each) merges its own commits' sorted runs
        // instead. The same ranks either way.
        let (r1, ties) = if 4 * (n1 + n2) >= self.kept.distinct {
            let (lo32, b32, hi32) = (lo as u32, b as u32, hi as u32);
            rank_sum_sorted(
                self.kept
                    .pooled()
                    .iter()
                    .filter(|(_, j, _)| (lo32..hi32).contains(j))
                    .map(|&(x, j, n)| (x, j < b32, n as usize)),
            )
        } else {
            rank_sum_owned(
                self.kept.samples[lo..b].concat(),
                self.kept.samples[b..hi].concat(),
            )
        };
        mann_whitney_from_ranks(n1, n2, r1, ties).p_value
    }

    /// Raw samples of kept commits [a, b), drift removed relative to position `at`.
    pub(super) fn raw(&self, a: usize, b: usize, at: usize) -> Vec<f64> {
        let at = self.kept.pos[at] as f64;
        let mut v = Vec::new();
        for j in a..b {
            let adj = self.slope * (self.kept.pos[j] as f64 - at);
            v.extend(self.kept.samples[j].iter().map(|x| x - adj));
        }
        v
    }

    pub(super) fn test(&self, a: usize, b: usize, c: usize) -> Tested {
        let lo = a.max(b.saturating_sub(self.window));
        let hi = c.min(b.saturating_add(self.window));
        let (p, detrended_up) = if self.slope == 0.0 {
            (self.p_as_is(lo, b, hi), None)
        } else {
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
            } else if self.per_commit {
                mann_whitney_u(&self.y[lo..b], &self.y[b..hi]).map_or(1.0, |r| r.p_value)
            } else {
                mann_whitney_u(&left, &right).map_or(1.0, |r| r.p_value)
            };
            let up = median_in_place(&mut right).unwrap_or(0.0)
                > median_in_place(&mut left).unwrap_or(0.0);
            (p, Some(up))
        };
        // A rank test of few runs cannot reach its α however far apart they are: a clean
        // separation is then weighed by Welch's t test too (see `few`).
        let p = self.few_runs_p(lo, b, hi, p);
        // The levels said are the data's own, next to the boundary (up to LEVEL_SPAN commits
        // a side, drift not removed): a fitted drift extrapolated over a long segment would
        // give levels no run ever had.
        let level = |from: usize, to: usize| {
            let mut v: Vec<f64> = self.kept.samples[from..to]
                .iter()
                .flatten()
                .copied()
                .collect();
            if self.log {
                v.iter_mut().for_each(|x| *x = x.exp());
            }
            median_in_place(&mut v).unwrap_or(f64::NAN)
        };
        let (la, rc) = (a.max(b.saturating_sub(LEVEL_SPAN)), c.min(b + LEVEL_SPAN));
        let (before, after) = (level(la, b), level(b, rc));
        // With a drift removed, a boundary must also show in the data as it is, next to it, the
        // same way: a slope fitted by mistake makes steps of its own.
        let shows = detrended_up.is_none_or(|detrended_up| {
            let near = |from: usize, to: usize| -> Vec<f64> {
                self.kept.samples[from..to]
                    .iter()
                    .flatten()
                    .copied()
                    .collect()
            };
            (after > before) == detrended_up
                && mann_whitney_u(&near(la, b), &near(b, rc)).is_some_and(|r| r.p_value < 0.05)
        });
        Tested {
            shortest: (b - lo).min(hi - b),
            p,
            before,
            after,
            reached: shows && self.threshold.reached(before, after),
        }
    }
}
