//! Each boundary of the segmentation confirmed by a local test of its two neighbouring
//! segments (a t test of their levels, with the model's variances) and by the threshold;
//! failures merged away one at a time until every survivor passes. What fails but reaches the
//! threshold is a step the runs cannot decide yet ([`Undecided`]).

use super::super::compare::norm_quantile;
use super::super::threshold::{rel_change, Threshold};
use super::model::Model;
use super::point::{ChangePoint, Reason, Undecided};
use super::prefix::Prefix;
use crate::stats::step::StepTest;

/// Commits on each side of a boundary whose levels give the levels a change point reports:
/// the same step is one size in every range that holds these commits.
pub(super) const LEVEL_SPAN: usize = 10;
/// A step fails at this p before any correction is no undecided step: noise, not few runs.
const UNDECIDED_P: f64 = 0.05;
/// Runs a side (each run once) at or below which a step between two builds has a p at least
/// Welch's.
const FEW_RUNS: f64 = 10.0;
/// Most undecided steps reported.
pub(super) const MAX_UNDECIDED: usize = 3;
/// Longest side of commits measured once each whose level is checked against the series'
/// own tails ([`Ctx::tail_p`]).
const LONE_SPAN: usize = 10;
/// The standard normal's 80 % quantile (the power asked of more runs).
const POWER_Z: f64 = 0.841_621_233_572_914_3;

/// What the tests need: the levels as segmented (drift removed), their weights and the model.
pub(super) struct Ctx<'a> {
    pub(super) model: &'a Model,
    pub(super) y: &'a [f64],
    /// The weights of `y` (inverse variances), as `pre` sums them.
    pub(super) w: Vec<f64>,
    /// The metric counts work (instructions): the machine's state does not move it, so levels
    /// of two strata are compared as they are, with the window effects' own variance.
    pub(super) counted: bool,
    pub(super) pre: Prefix,
    /// The same levels weighted by their moments only: the levels a step reports do not
    /// move with the noise estimated over the range asked.
    pub(super) sizes: Prefix,
    pub(super) alpha: f64,
    pub(super) threshold: Threshold,
    /// Drift per commit removed from `y`, added back at a boundary for its levels.
    pub(super) slope: f64,
    /// [`Model::local_deviations`], once.
    pub(super) deviation: Vec<f64>,
    /// The same, sorted (NaN last): how many stand at least so far, by a binary search.
    pub(super) sorted_deviation: Vec<f64>,
}

/// One boundary's test.
#[derive(Clone, Copy)]
pub(super) struct Tested {
    pub(super) p: f64,
    pub(super) before: f64,
    pub(super) after: f64,
    pub(super) reached: bool,
    /// A short side of commits measured once each is as likely a run of outliers as a level,
    /// by the series' own tails ([`Ctx::tail_p`] at least α).
    pub(super) lone: bool,
    /// Independent moments in the levels' span on each side.
    pub(super) runs: (usize, usize),
    /// The two sides were measured on different machine states only (no stratum holds both):
    /// the machine may explain the step, and no p-value can decide it.
    pub(super) apart: bool,
    /// The p-value of the runs alone, as if one machine state had measured every level.
    pub(super) p_runs: f64,
}

impl Tested {
    fn passes(&self, alpha: f64) -> bool {
        self.reached && !self.lone && !self.apart && self.p < alpha
    }
}

impl Ctx<'_> {
    fn back(&self, v: f64) -> f64 {
        self.model.back(v)
    }

    /// The p-value of the step at `b` between [a, b) and [b, c) whose sides lie in several
    /// strata (its t statistic on the levels alone `z`), and whether the sides were measured
    /// apart. Where the store shows how far strata move ([`Model::machine`], or a counted
    /// metric, which the machine does not move), the levels are compared as they are with
    /// that variance added for each stratum one side leans on more than the other; the
    /// contrasts within strata alone may say more. Else only those contrasts count, and a
    /// step no stratum holds both sides of is measured apart.
    fn across(&self, a: usize, b: usize, c: usize, z: f64, bridge: f64) -> (f64, bool) {
        let df = self.model.df;
        let within = self
            .model
            .strata
            .within(self.y, &self.w, a, b, c)
            .map(|(d, v)| (d, v + bridge))
            .filter(|(_, v)| *v > 0.0);
        let machine = match self.model.machine {
            Some(m) => Some(m),
            None if self.counted => Some((0.0, df)),
            None => None,
        };
        let levels = machine.map(|(m, df_m)| {
            let v = 1.0 / self.pre.weight(a, b) + 1.0 / self.pre.weight(b, c) + bridge;
            let vm = m * self.model.strata.exposure(&self.w, a, b, c);
            let total = v + vm;
            // Satterthwaite's degrees of freedom for the sum of the two variances.
            let df_eff = if vm > 0.0 {
                total * total / (v * v / df + vm * vm / df_m)
            } else {
                df
            };
            (z * (v / total).sqrt(), total, df_eff)
        });
        match (levels, within) {
            (Some((_, v, _)), Some((d, vw))) if vw < v => (two_sided(d / vw.sqrt(), df), false),
            (Some((z, _, df_eff)), _) => (two_sided(z, df_eff), false),
            (None, Some((d, vw))) => (two_sided(d / vw.sqrt(), df), false),
            (None, None) => (1.0, true),
        }
    }

    /// The test of the step at `b` between segments [a, b) and [b, c): a t test of the two
    /// segments' weighted mean levels (each level's variance from the model), with the
    /// degrees of freedom the noise was estimated from.
    pub(super) fn test(&self, a: usize, b: usize, c: usize) -> Tested {
        let mut z = self.pre.z(a, b, c);
        // Windows bridged by few commits: their effects' uncertainty is part of the contrast.
        let mut bridge = 0.0;
        if let Some(br) = &self.model.bridge {
            bridge = br.contrast(&self.w, a, b, c);
            let v = 1.0 / self.pre.weight(a, b) + 1.0 / self.pre.weight(b, c);
            z *= (v / (v + bridge)).sqrt();
        }
        let p_runs = two_sided(z, self.model.df);
        let (mut p, apart) = if self.model.strata.single(a, c) {
            (p_runs, false)
        } else {
            self.across(a, b, c, z, bridge)
        };
        // Two builds of few runs each (every commit on a side shows one build's runs): the
        // model's noise (pooled, window effects removed) rests on too few of them to be more
        // certain than Welch's test on those runs themselves.
        if self.sizes.weight(a, b).max(self.sizes.weight(b, c)) <= FEW_RUNS {
            if let (Some(l), Some(r)) = (self.model.one_build(a, b), self.model.one_build(b, c)) {
                if let Some(w) = super::super::compare::welch_t(&l, &r) {
                    p = p.max(w.p_value);
                }
            }
        }
        let lo = a.max(b.saturating_sub(LEVEL_SPAN));
        let hi = c.min(b + LEVEL_SPAN);
        let before = self.back(self.sizes.mean(lo, b) + self.slope * b as f64);
        let after = self.back(self.sizes.mean(b, hi) + self.slope * b as f64);
        // Each run once: a build's runs shown on k commits count 1/k on each.
        let count = |r: std::ops::Range<usize>| self.sizes.weight(r.start, r.end).round() as usize;
        let up = after > before;
        let lone = |side: std::ops::Range<usize>, level: f64, up: bool| {
            self.tail_p(side, level, up)
                .is_some_and(|q| q >= self.alpha)
        };
        Tested {
            lone: lone(a..b, self.pre.mean(b, hi), !up) || lone(b..c, self.pre.mean(lo, b), up),
            p,
            before,
            after,
            reached: self.threshold.reached(before, after) && before != after,
            runs: (count(lo..b), count(b..hi)),
            apart,
            p_runs,
        }
    }

    /// For a side of at most [`LONE_SPAN`] commits each measured once, the chance that so many
    /// commits in a row stand this far from `level` (the other side's, towards `up`) by the
    /// tails of the rest of the series: m q^k, q the share of the other commits at least as
    /// far from their neighbourhood's median (one run a commit cannot tell outliers in a row
    /// from a level; heavy tails make them common). `None` for any other side.
    fn tail_p(&self, side: std::ops::Range<usize>, level: f64, up: bool) -> Option<f64> {
        let k = side.len();
        if k == 0 || k > LONE_SPAN || side.clone().any(|j| self.model.n[j] != 1) {
            return None;
        }
        let sign = if up { 1.0 } else { -1.0 };
        let y = &self.model.level;
        let d = side
            .clone()
            .map(|j| sign * (y[j] - self.slope * j as f64 - level))
            .fold(f64::INFINITY, f64::min);
        if d.is_nan() || d <= 0.0 {
            return Some(1.0);
        }
        let m = y.len();
        let far = |v: f64| sign * v >= d;
        // Commits at least `d` from their neighbourhood's median that way, over the series
        // (sorted deviations, NaN last), less those of the side itself.
        let sorted = &self.sorted_deviation;
        let all = if up {
            let finite = sorted.partition_point(|v| !v.is_nan());
            finite - sorted[..finite].partition_point(|&v| v < d)
        } else {
            sorted.partition_point(|&v| v <= -d)
        };
        let own = side.clone().filter(|&j| far(self.deviation[j])).count();
        let beyond = all - own;
        let q = (beyond + 1) as f64 / (m + 1) as f64;
        Some((m as f64 * q.powi(k as i32)).min(1.0))
    }

    /// The interior segments of `bounds` that are runs of outlier runs, no level: at most
    /// [`LONE_SPAN`] commits measured once each, standing out the same way (each at α) from
    /// the segments on both sides, which stand at one level, and as likely outliers in a row
    /// as a level by the series' own tails ([`Ctx::tail_p`] at least α against each
    /// neighbour), or each run several times with a run at the neighbours' level (two outlier
    /// runs of three). Left in, a pair of outlier runs next to a step's boundary would make the
    /// boundary's test, or move a side's level.
    pub(super) fn blips(&self, bounds: &[usize]) -> Vec<std::ops::Range<usize>> {
        let m = self.y.len();
        let mut out = Vec::new();
        for i in 0..bounds.len().saturating_sub(1) {
            let (b, c) = (bounds[i], bounds[i + 1]);
            let a = if i == 0 { 0 } else { bounds[i - 1] };
            let d = bounds.get(i + 2).copied().unwrap_or(m);
            let (left, mid, right) = (
                self.pre.mean(a, b),
                self.pre.mean(b, c),
                self.pre.mean(c, d),
            );
            let up = mid > left;
            // An excursion from one level and back to it (a step beside it is no blip).
            let apart = (mid - left).abs().min((mid - right).abs());
            if (mid > right) != up || (right - left).abs() > apart / 2.0 {
                continue;
            }
            // It stands out from each neighbour beyond their noise, yet as outliers would.
            let stands = |z: f64| two_sided(z, self.model.df) < self.alpha;
            let lone = |level: f64| {
                self.tail_p(b..c, level, up)
                    .is_some_and(|q| q >= self.alpha)
            };
            // Commits run several times whose own runs hold the neighbours' level too, though
            // the excursion is far beyond what a run's noise reaches (bimodal commits).
            let held = self.model.far(apart)
                && (b..c).all(|j| {
                    self.model.n[j] > 1 && self.model.reaches(j, left + self.slope * j as f64)
                });
            if stands(self.pre.z(a, b, c))
                && stands(self.pre.z(b, c, d))
                && ((lone(left) && lone(right)) || held)
            {
                out.push(b..c);
            }
        }
        out
    }

    /// Tests every boundary against its neighbours; the worst failure (below the threshold
    /// first, then the largest p) is merged away and the rest tested again, until all pass.
    /// Returns the change points and the boundaries merged away with their last test.
    pub(super) fn confirm(
        &self,
        mut bounds: Vec<usize>,
    ) -> (Vec<ChangePoint>, Vec<(usize, Tested)>) {
        let m = self.y.len();
        let mut dropped = Vec::new();
        loop {
            let tested: Vec<Tested> = (0..bounds.len())
                .map(|i| {
                    let a = if i == 0 { 0 } else { bounds[i - 1] };
                    let c = bounds.get(i + 1).copied().unwrap_or(m);
                    self.test(a, bounds[i], c)
                })
                .collect();
            let worst = tested
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.passes(self.alpha))
                .max_by(|x, y| {
                    (!x.1.reached, x.1.p)
                        .partial_cmp(&(!y.1.reached, y.1.p))
                        .unwrap_or(std::cmp::Ordering::Equal)
                })
                .map(|(i, _)| i);
            match worst {
                Some(i) => dropped.push((bounds.remove(i), tested[i])),
                None => {
                    let points = bounds
                        .iter()
                        .zip(&tested)
                        .map(|(&b, t)| ChangePoint {
                            index: self.model.pos[b],
                            last_before: self.model.pos[b - 1],
                            before: t.before,
                            after: t.after,
                            rel_change: rel_change(t.before, t.after),
                            p_value: t.p,
                            test: StepTest::Levels,
                            deterministic: false,
                            interval: None,
                            windows: 0,
                        })
                        .collect();
                    return (points, dropped);
                }
            }
        }
    }

    /// Steps the runs show but cannot decide yet: boundaries merged away that reached the
    /// threshold at p < 5 % against the segments beside them, each with the runs a side its test needs (80 % power at α). A series whose
    /// commits repeat one number each has none: more runs would say the same.
    pub(super) fn undecided(
        &self,
        found: &[ChangePoint],
        dropped: &[(usize, Tested)],
    ) -> Vec<Undecided> {
        if self.model.repeated() && self.model.flat_runs() {
            return Vec::new();
        }
        let m = self.y.len();
        let kept: Vec<usize> = found
            .iter()
            .filter_map(|c| self.model.pos.binary_search(&c.index).ok())
            .collect();
        let mut out: Vec<(usize, Tested)> = Vec::new();
        // Each as tested against the segments beside it when it was merged away: against the
        // whole range any position would look like a step.
        // A step measured apart is one the runs alone would show (p < 5 %).
        let shown = |t: &Tested| if t.apart { t.p_runs } else { t.p };
        let mut cands: Vec<&(usize, Tested)> = dropped
            .iter()
            .filter(|(_, t)| t.reached && shown(t) < UNDECIDED_P && !t.passes(self.alpha))
            .collect();
        cands.sort_by(|x, y| shown(&x.1).total_cmp(&shown(&y.1)));
        for &(b, t) in cands {
            if b == 0 || b >= m {
                continue;
            }
            if kept.iter().any(|&k| k.abs_diff(b) <= 1) || out.iter().any(|o| o.0.abs_diff(b) <= 1)
            {
                continue;
            }
            out.push((b, t));
        }
        out.sort_by(|x, y| shown(&x.1).total_cmp(&shown(&y.1)));
        out.truncate(MAX_UNDECIDED);
        out.sort_by_key(|o| o.0);
        out.into_iter()
            .map(|(b, t)| {
                let z_need = norm_quantile(1.0 - self.alpha / 2.0) + POWER_Z;
                let n = t.runs.0.min(t.runs.1).max(1);
                let need = if t.apart {
                    // Side by side, the runs' own noise decides: a two-sample test's runs a
                    // side, and a rank test's fewest at least.
                    let d = self.model.distance(t.before, t.after);
                    let sd = self.model.sigma.unwrap_or(d);
                    let k = 2.0 * (z_need * sd / d.max(1e-300)).powi(2);
                    (k.ceil() as usize).clamp(crate::stats::step::RANK_RUNS, 1000)
                } else {
                    let z_obs = norm_quantile(1.0 - t.p.max(1e-300) / 2.0).max(0.1);
                    ((n as f64 * (z_need / z_obs).powi(2)).ceil() as usize).clamp(n + 1, 1000)
                };
                Undecided {
                    index: self.model.pos[b],
                    last_before: self.model.pos[b - 1],
                    why: if t.apart {
                        Reason::MeasuredApart
                    } else if t.lone {
                        Reason::OneRun
                    } else {
                        Reason::FewRuns
                    },
                    before: t.before,
                    after: t.after,
                    rel_change: rel_change(t.before, t.after),
                    p_value: if t.apart { 1.0 } else { t.p },
                    runs: t.runs,
                    runs_needed: need,
                    interval: None,
                }
            })
            .collect()
    }
}

/// Two-sided p of a t statistic with `df` degrees of freedom (the normal from 1000 on).
pub(super) fn two_sided(z: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if !z.is_finite() {
        return if z.is_nan() { 1.0 } else { 0.0 };
    }
    let p = if df >= 1000.0 {
        2.0 * super::super::compare::norm_sf(z.abs())
    } else {
        match StudentsT::new(0.0, 1.0, df.max(1.0)) {
            Ok(t) => 2.0 * t.sf(z.abs()),
            Err(_) => 1.0,
        }
    };
    p.clamp(0.0, 1.0)
}
