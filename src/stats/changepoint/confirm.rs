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
    /// Each level's inflation by the series' tails (see `weighed`): a contrast of its runs
    /// carries it too.
    pub(super) tails: &'a super::spread::Tails,
    /// [`Ctx::side_by_side`]'s answers so far.
    pub(super) paired: std::cell::RefCell<Paired>,
    /// The machines' nights, read against each other.
    pub(super) nights: &'a super::nights::Nights,
}

/// Side-by-side estimates of steps (change, variance) by their segments (a, b, c).
pub(super) type Paired = std::collections::HashMap<(usize, usize, usize), Option<(f64, f64)>>;

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
    /// The two sides were measured on different named machines only.
    pub(super) machines: bool,
    /// The p-value of the runs alone, as if one machine state had measured every level.
    pub(super) p_runs: f64,
    /// The positions the segmentation could have put this boundary at (the commits of its two
    /// segments less one): the boundary is the best of them, so its p-value counts each.
    pub(super) positions: f64,
    /// The machines' nights beside the step contradict the runs taken side by side that
    /// show it ([`DISPUTE_CHI2`]): no statement of the commits either way.
    pub(super) disputed: bool,
    /// The sides lie in several strata, and the level after the boundary as the levels beside
    /// it show it (the machine states as aligned, not the evidence that judged it).
    pub(super) strata: Option<f64>,
    /// The segments' ends: the boundary stood between [a, b) and [b, c).
    pub(super) ends: (usize, usize),
    /// Undecided only as the levels show it ([`Ctx::undecided`]): placed by their span.
    pub(super) loose: bool,
}

/// What [`Ctx::across`] found: the p-value, the change the deciding evidence shows (analysis
/// scale; `None`: the levels beside the boundary say it), and whether the sides were measured
/// apart (on different machines only).
#[derive(Clone, Copy)]
struct Apart {
    p: f64,
    delta: Option<f64>,
    apart: bool,
    machines: bool,
}

impl Apart {
    fn judged(p: f64, delta: impl Into<Option<f64>>) -> Apart {
        Apart {
            p,
            delta: delta.into(),
            apart: false,
            machines: false,
        }
    }
}

impl Tested {
    fn passes(&self, alpha: f64) -> bool {
        self.reached
            && !self.lone
            && !self.apart
            && !self.disputed
            && self.p * self.positions < alpha
    }

    /// What the runs show of the step: the p-value, or for sides measured apart the runs'
    /// own (as if one machine state had measured every level).
    fn shown(&self) -> f64 {
        if self.apart {
            self.p_runs
        } else {
            self.p
        }
    }
}

/// What the best of `n` positions' tests is worth as one test's p-value would be: the tests of
/// neighbouring positions share most of their runs, so the maximum over `n` of them exceeds a
/// level about as often as 1 + 2 ln n independent ones would (a scan statistic's tail grows
/// with the logarithm of its length, not with the length).
fn selection(n: usize) -> f64 {
    1.0 + 2.0 * (n.max(1) as f64).ln()
}

/// How far (χ²₁, at 0.01) the step the machines' nights show may lie from the step the
/// runs taken side by side show before the two are said to disagree (one outlier pair of
/// runs against the nights beside it lies about there): the step is then judged on both
/// ([`nights_judged`]), and undecided unless both together decide it.
const DISPUTE_CHI2: f64 = 6.63;

/// The nights a machine's reading of a step takes on each side ([`super::nights::Nights::step`]):
/// one, the nights next to the step (a machine's state wanders, and where the step lies the
/// nearest nights tell: a session's outlier run one commit early is disputed by them), and up
/// to five (what the machine's nights say of the level around it: one session's chance step
/// of a run a commit beside forty nights that show none is disputed by their mean, which
/// one night's reading each side is too rough to do).
const NIGHTS_READ: [usize; 2] = [1, 5];

/// The step the runs taken side by side show (`d`, variance `v`) judged again beside the
/// machines' nights that dispute it (`dn`, `vn`; `chi` their disagreement on χ²₁): the runs'
/// variance widened by the disagreement (an outlier run, a session's state: they may be wrong
/// by that much, the nights' medians are not), the two combined by their variances. The
/// p-value of the combined step, `None` where it turns against the runs' own.
fn nights_judged((d, v): (f64, f64), (dn, vn): (f64, f64), chi: f64, df: f64) -> Option<f64> {
    let wide = v * chi;
    let (wa, wb) = (1.0 / wide, 1.0 / vn);
    let est = (d * wa + dn * wb) / (wa + wb);
    (est * d > 0.0).then(|| two_sided(est * (wa + wb).sqrt(), df))
}

impl Ctx<'_> {
    fn back(&self, v: f64) -> f64 {
        self.model.back(v)
    }

    /// [`super::side::side_by_side`], once per pair of segments (the boundaries are tested
    /// again after every merge).
    fn side_by_side(&self, a: usize, b: usize, c: usize) -> Option<(f64, f64)> {
        *self
            .paired
            .borrow_mut()
            .entry((a, b, c))
            .or_insert_with(|| {
                super::side::side_by_side(self.model, (a, b, c), self.tails, true)
                    .filter(|x| x.1 > 0.0)
            })
    }

    /// Where the runs side by side (`d`) dispute the machines' nights: the weakest p-value
    /// of the runs without any one window, each showing the step the same way (an outlier
    /// run, a session's state, lies in one window: a step no one window makes is none of
    /// theirs, and the nights' one difference beside it is the outlier); `None` where fewer
    /// than two windows hold both sides.
    fn firm_against_nights(&self, (a, b, c): (usize, usize, usize), d: f64) -> Option<f64> {
        let views = super::side::without_each_window(self.model, (a, b, c), self.tails);
        if views.is_empty() {
            return None;
        }
        let mut worst: f64 = 0.0;
        for view in views {
            let (dk, vk) = view.filter(|x| x.1 > 0.0 && x.0 * d > 0.0)?;
            worst = worst.max(two_sided(dk / vk.sqrt(), self.model.df));
        }
        Some(worst)
    }

    /// The step at `b` between [a, b) and [b, c) whose sides lie in several strata. Two kinds
    /// of evidence:
    /// the runs taken side by side (the windows holding both sides, each window's state
    /// cancelling: [`super::side::side_by_side`], a t test), and the strata that lie wholly on one side as units (each one
    /// draw of the machine's state, compared by ranks within each machine: a lone slow night
    /// or session can never decide). Either may decide (each at α/2 where both speak), except
    /// that runs taken side by side which contradict the units (their 99 % interval of the
    /// change leaves the units' change out) decide alone. Neither: measured apart.
    fn across(&self, a: usize, b: usize, c: usize) -> Apart {
        let df = self.model.df;
        let strata = &self.model.strata;
        let within = self.side_by_side(a, b, c);
        let units = strata.units(self.y, &self.w, a, b, c);
        let across = units.test().filter(|u| u.best < self.alpha);
        let p_w = within.map(|(d, v)| two_sided(d / v.sqrt(), df));
        match (within, p_w, across) {
            (Some((d, v)), Some(pw), Some(u)) => {
                let contradicts = (u.delta - d).abs() > 2.576 * v.sqrt();
                let p = if contradicts {
                    pw
                } else {
                    (2.0 * pw.min(u.p)).min(1.0)
                };
                let delta = if contradicts || pw <= u.p { d } else { u.delta };
                Apart::judged(p, delta)
            }
            (Some((d, _)), Some(pw), None) => Apart::judged(pw, d),
            (_, _, Some(u)) => Apart::judged(u.p, u.delta),
            _ => Apart {
                p: 1.0,
                delta: None,
                apart: true,
                machines: units.machines_apart(),
            },
        }
    }

    /// The test of the step at `b` between segments [a, b) and [b, c): a t test of the two
    /// segments' weighted mean levels (each level's variance from the model), with the
    /// degrees of freedom the noise was estimated from; over several strata, [`Ctx::across`].
    pub(super) fn test(&self, a: usize, b: usize, c: usize) -> Tested {
        let mut z = self.pre.z(a, b, c);
        let single = self.model.strata.single(a, c);
        // Runs taken side by side: the windows holding both sides compare them, their
        // states cancelling (levels linked through other windows read those windows' effects).
        let paired = if single {
            self.side_by_side(a, b, c)
        } else {
            None
        };
        if let Some((d, v)) = paired {
            z = d / v.sqrt();
        } else if single && self.model.bridge.is_some() {
            // Windows bridged by few commits: their effects' uncertainty is part of the contrast.
            let (wl, wr) = (self.pre.weight(a, b), self.pre.weight(b, c));
            let coef: Vec<(usize, f64)> = (a..c)
                .filter(|&j| self.w[j] > 0.0)
                .map(|j| {
                    (
                        j,
                        if j < b {
                            -self.w[j] / wl
                        } else {
                            self.w[j] / wr
                        },
                    )
                })
                .collect();
            let v = 1.0 / wl + 1.0 / wr;
            z *= (v / (v + self.model.effects_var(&coef))).sqrt();
        }
        let p_runs = two_sided(z, self.model.df);
        let judged = if single {
            Apart::judged(p_runs, None)
        } else {
            self.across(a, b, c)
        };
        let mut p = judged.p;
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
        let level = self.sizes.mean(lo, b) + self.slope * b as f64;
        let before = self.back(level);
        // Over several strata the change is what the evidence that judged it shows: the
        // levels beside the boundary hold the strata's machine states too.
        let after = self.back(match judged.delta {
            Some(d) => level + d,
            None => self.sizes.mean(b, hi) + self.slope * b as f64,
        });
        // Each run once: a build's runs shown on k commits count 1/k on each.
        let count = |r: std::ops::Range<usize>| self.sizes.weight(r.start, r.end).round() as usize;
        let up = after > before;
        let lone = |side: std::ops::Range<usize>, level: f64, up: bool| {
            self.tail_p(side, level, up)
                .is_some_and(|q| q >= self.alpha)
        };
        // The runs side by side against the machines' nights beside them: one outlier run in
        // a session, or a session's state, is no step the nights (each commit's own level,
        // read against the machine's other nights) do not show; a step the runs show by far
        // more than the nights can doubt is one the nights' chance reading does not undo.
        let positions = selection((c - a).saturating_sub(1));
        let mut disputed = false;
        // The nights read two ways (see [`NIGHTS_READ`]): the one further from the runs
        // side by side is the dispute.
        let against = self.side_by_side(a, b, c).and_then(|(d, v)| {
            NIGHTS_READ
                .into_iter()
                .filter_map(|k| self.nights.step((a, b, c), LEVEL_SPAN, k))
                .map(|(dn, vn)| ((d - dn).powi(2) / (v + vn), (dn, vn)))
                .max_by(|x, y| x.0.total_cmp(&y.0))
                .map(|(chi, n)| (chi, n, (d, v)))
        });
        if let Some((chi, (dn, vn), (d, v))) = against {
            if chi > DISPUTE_CHI2 {
                let q = self
                    .firm_against_nights((a, b, c), d)
                    .or_else(|| nights_judged((d, v), (dn, vn), chi, self.model.df));
                match q {
                    Some(q) if q * positions < self.alpha => p = p.max(q),
                    _ => disputed = true,
                }
            }
        }
        Tested {
            disputed,
            lone: lone(a..b, self.pre.mean(b, hi), !up) || lone(b..c, self.pre.mean(lo, b), up),
            p,
            before,
            after,
            reached: self.threshold.reached(before, after) && before != after,
            runs: (count(lo..b), count(b..hi)),
            apart: judged.apart,
            machines: judged.machines,
            p_runs,
            positions,
            strata: (!single).then(|| self.back(self.sizes.mean(b, hi) + self.slope * b as f64)),
            ends: (a, c),
            loose: false,
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
        // Each boundary's clearest failing test that reached the threshold: once a neighbour
        // is merged away, its segments mix two levels (a regression beside its revert) and its
        // last test would hide the step its own segments showed.
        let mut clearest: std::collections::HashMap<usize, Tested> = Default::default();
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
            for (&b, t) in bounds.iter().zip(&tested) {
                if t.reached && !t.passes(self.alpha) {
                    let e = clearest.entry(b).or_insert(*t);
                    if t.shown() < e.shown() {
                        *e = *t;
                    }
                }
            }
            match worst {
                Some(i) => {
                    let b = bounds.remove(i);
                    dropped.push((b, clearest.get(&b).copied().unwrap_or(tested[i])));
                }
                None => {
                    let points = bounds
                        .iter()
                        .enumerate()
                        .zip(&tested)
                        .map(|((i, &b), t)| {
                            let a = if i == 0 { 0 } else { bounds[i - 1] };
                            let c = bounds.get(i + 1).copied().unwrap_or(m);
                            (b, self.span(a, b, c), t)
                        })
                        .map(|(_, (last, first), t)| ChangePoint {
                            index: self.model.pos[first],
                            last_before: self.model.pos[last],
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
    /// threshold at p < 5 % against the segments beside them (over several strata, the levels
    /// as aligned at p < 5 % where the evidence judging it is weaker: measured apart), each
    /// with the runs a side its test needs (80 % power at α). A series whose commits repeat
    /// one number each has none: more runs would say the same.
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
        // Each with its clearest test against the segments beside it while it stood (see
        // `confirm`): against the whole range any position would look like a step.
        // A step measured apart is one the runs alone would show (p < 5 %).
        // Over several strata, a step the levels as aligned show (p < 5 %) that the evidence
        // judging it does not: measured apart, with the levels' move (silence would hide a
        // step a machine's nights show that no session holds both sides of).
        let loose = |t: &Tested| -> Option<Tested> {
            let after = t.strata?;
            (!t.apart
                && !t.disputed
                && t.p >= UNDECIDED_P
                && t.p_runs < UNDECIDED_P
                && self.threshold.reached(t.before, after)
                && t.before != after)
                .then_some(Tested {
                    apart: true,
                    after,
                    reached: true,
                    loose: true,
                    ..*t
                })
        };
        let widened: Vec<(usize, Tested)> = dropped
            .iter()
            .map(|&(b, t)| (b, loose(&t).unwrap_or(t)))
            .collect();
        let mut cands: Vec<&(usize, Tested)> = widened
            .iter()
            .filter(|(_, t)| t.reached && t.shown() < UNDECIDED_P && !t.passes(self.alpha))
            .collect();
        cands.sort_by(|x, y| x.1.shown().total_cmp(&y.1.shown()));
        for &(b, t) in cands {
            if b == 0 || b >= m {
                continue;
            }
            // Beside a decided step, a boundary is that step's blur, and so beside another
            // undecided one of its kind, except where either was measured apart: a night at
            // neither level, then the step after it, and the runs cannot tell which commit
            // moved; or a step within a session beside the session's own edge, where another
            // machine state begins (silence would hide the step the session shows).
            let blur =
                |o: &(usize, Tested)| o.0 == b || (o.0.abs_diff(b) == 1 && !t.apart && !o.1.apart);
            if kept.iter().any(|&k| k.abs_diff(b) <= 1) || out.iter().any(blur) {
                continue;
            }
            out.push((b, t));
        }
        // Steps the runs taken on one machine state show come first: more runs of the same
        // kind decide them, and a move between states measured apart (which any run on one
        // state settles) must not crowd them out.
        out.sort_by(|x, y| {
            (x.1.apart, x.1.shown())
                .partial_cmp(&(y.1.apart, y.1.shown()))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        out.truncate(MAX_UNDECIDED);
        out.sort_by_key(|o| o.0);
        out.into_iter()
            .map(|(b, t)| {
                let z_need = norm_quantile(1.0 - self.alpha / (2.0 * t.positions)) + POWER_Z;
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
                // A step only the levels show is placed as the levels place it (every commit
                // they fit nearly as well), not at the one boundary.
                let (a, c) = t.ends;
                let placed = (t.loose && b - a > 1 && c - b > 1)
                    .then(|| self.span(a, b, c))
                    .filter(|&(l, f)| {
                        // A span of every position the levels could test is no placing: no
                        // stratum beside it tells where (rounds each of their own moment).
                        let lo = (a + 1).max(b.saturating_sub(LEVEL_SPAN));
                        let hi = c.min(b + LEVEL_SPAN + 1);
                        l + 1 > lo || f + 1 < hi
                    });
                let (last, first) = match placed {
                    // (Within three commits before the boundary and two after: levels on
                    // scales of their own fit far positions alike, and a span of many says
                    // nothing. A side of one commit places the step by itself.)
                    Some((l, f)) => (l.max(b.saturating_sub(3)), f.min(b + 2)),
                    None => (b - 1, b),
                };
                Undecided {
                    index: self.model.pos[first],
                    last_before: self.model.pos[last],
                    why: if t.apart && t.machines {
                        Reason::Machines
                    } else if t.apart {
                        Reason::MeasuredApart
                    } else if t.disputed {
                        Reason::Nights
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

impl Ctx<'_> {
    /// Whether a step found or listed lies within a commit of position `i`.
    fn beside(&self, found: &[ChangePoint], known: &[Undecided], i: usize) -> bool {
        found
            .iter()
            .map(|c| c.index)
            .chain(known.iter().map(|u| u.index))
            .any(|x| x.abs_diff(self.model.pos[i]) <= 1)
    }

    /// An undecided step at position `j` that no p-value judges (the machine may explain it):
    /// its move as measured, and the runs a side a rank test needs at least.
    fn moved(
        &self,
        j: usize,
        why: Reason,
        (before, after): (f64, f64),
        runs: (usize, usize),
    ) -> Undecided {
        Undecided {
            index: self.model.pos[j],
            last_before: self.model.pos[j - 1],
            why,
            before,
            after,
            rel_change: rel_change(before, after),
            p_value: 1.0,
            runs,
            runs_needed: crate::stats::step::RANK_RUNS,
            interval: None,
        }
    }

    /// Where the commits in order pass from one stratum to another that meets it at most
    /// twice (a session, a block of nights: nothing but the commits beside the switch tells
    /// their machine states apart) and the levels as measured move there by the threshold,
    /// while the levels put on one scale move by less than half as much (the states took the
    /// move): undecided,
    /// measured apart, with the move as measured. Silence there would hide a step no link
    /// can show; certainty would blame a commit for a machine state.
    pub(super) fn absorbed(&self, found: &[ChangePoint], known: &[Undecided]) -> Vec<Undecided> {
        let model = self.model;
        let of = &model.strata.of;
        let m = self.y.len();
        let mut meets: std::collections::HashMap<(u32, u32), usize> = Default::default();
        for j in 1..m {
            if of[j] != of[j - 1] {
                *meets
                    .entry((of[j].min(of[j - 1]), of[j].max(of[j - 1])))
                    .or_default() += 1;
            }
        }
        let near = |i: usize| self.beside(found, known, i);
        let mut out: Vec<Undecided> = Vec::new();
        for j in 1..m {
            let (s, t) = (of[j - 1], of[j]);
            if s == t || meets[&(s.min(t), s.max(t))] > 2 || near(j) {
                continue;
            }
            // Each side: the commits of its stratum next to the switch.
            let side = |range: &mut dyn Iterator<Item = usize>, k: u32, raw: bool| {
                let v: Vec<f64> = range
                    .take_while(|&i| of[i] == k)
                    .take(LEVEL_SPAN)
                    .map(|i| if raw { model.raw_level(i) } else { self.y[i] })
                    .collect();
                (v.iter().sum::<f64>() / v.len().max(1) as f64, v.len())
            };
            let (rb, nb) = side(&mut (0..j).rev(), s, true);
            let (ra, na) = side(&mut (j..m), t, true);
            let (yb, _) = side(&mut (0..j).rev(), s, false);
            let (ya, _) = side(&mut (j..m), t, false);
            let (before, after) = (self.back(rb), self.back(ra));
            // The states took most of the move.
            if !self.threshold.reached(before, after)
                || before == after
                || (ya - yb).abs() > (ra - rb).abs() / 2.0
            {
                continue;
            }
            let runs =
                |r: std::ops::Range<usize>| self.sizes.weight(r.start, r.end).round() as usize;
            out.push(self.moved(
                j,
                Reason::MeasuredApart,
                (before, after),
                (runs(j - nb..j), runs(j..j + na)),
            ));
        }
        largest_first(out)
    }

    /// Where two commits next to each other in the order were measured on machine states no
    /// window links (different strata), this machine's at least on one side, and their runs
    /// differ by the threshold at p < 5 % (Welch's test of the two commits' runs, each
    /// commit's states and all), with nothing found or undecided beside them: undecided,
    /// measured apart, with the move as measured. Nothing can tell such a move from the
    /// states' own, and silence would hide a step no link shows (issue 56: "at least
    /// undecided, never silent"); `run`'s top-up then measures the two side by side. Nights
    /// of named machines on both sides are left to their series ([`Ctx::test`]'s units) and
    /// to [`Ctx::machine_moves`]: a night's draw is no step of its own. The largest moves
    /// first, as many as the undecided steps a detection names.
    pub(super) fn neighbours_apart(
        &self,
        found: &[ChangePoint],
        known: &[Undecided],
    ) -> Vec<Undecided> {
        let model = self.model;
        let strata = &model.strata;
        let of = &strata.of;
        let near = |i: usize| self.beside(found, known, i);
        let named = |j: usize| strata.machine[of[j] as usize] != 0;
        // Each commit's runs, their mean and variance, and its independent moments.
        let side = |j: usize| {
            let v: Vec<f64> = model.runs_of(j).iter().map(|x| x.0).collect();
            let (mean, var) = crate::stats::compare::mean_var(&v);
            (mean, var, self.sizes.weight(j, j + 1).min(v.len() as f64))
        };
        let mut out: Vec<Undecided> = Vec::new();
        for j in 1..self.y.len() {
            if of[j] == of[j - 1] || (named(j) && named(j - 1)) || near(j) {
                continue;
            }
            let (l, r) = (side(j - 1), side(j));
            let (before, after) = (self.back(l.0), self.back(r.0));
            if !self.threshold.reached(before, after)
                || moments_welch(l, r).is_none_or(|p| p >= UNDECIDED_P)
            {
                continue;
            }
            let runs = (l.2.round() as usize, r.2.round() as usize);
            out.push(self.moved(j, Reason::MeasuredApart, (before, after), runs));
        }
        largest_first(out)
    }

    /// Where the commits in order pass between named machines whose offset only a handover
    /// shows (at most two crossings: nothing but the commits beside it tells the machines'
    /// difference from a step), and the levels there move by the threshold: undecided, the
    /// machines' difference ([`Reason::Machines`]), with the move as measured.
    pub(super) fn machine_moves(&self, found: &[ChangePoint]) -> Vec<Undecided> {
        let model = self.model;
        let m = self.y.len();
        let mut out = Vec::new();
        for o in model.machines.iter().filter(|o| o.crossings <= 2) {
            let on = |j: usize| model.strata.machine_of(j) == o.machine;
            // The levels as measured: the offset put back on this machine's commits.
            let raw = |j: usize| self.y[j] + if on(j) { o.offset } else { 0.0 };
            for j in 1..m {
                if on(j) == on(j - 1) || found.iter().any(|c| c.index == model.pos[j]) {
                    continue;
                }
                let side = |range: &mut dyn Iterator<Item = usize>, mine: bool| {
                    let v: Vec<f64> = range
                        .filter(|&i| on(i) == mine)
                        .take(LEVEL_SPAN)
                        .map(raw)
                        .collect();
                    v.iter().sum::<f64>() / v.len().max(1) as f64
                };
                let before = self.back(side(&mut (0..j).rev(), on(j - 1)));
                let after = self.back(side(&mut (j..m), on(j)));
                if !self.threshold.reached(before, after) || before == after {
                    continue;
                }
                let runs = (
                    self.sizes.weight(j.saturating_sub(LEVEL_SPAN), j).round() as usize,
                    self.sizes.weight(j, (j + LEVEL_SPAN).min(m)).round() as usize,
                );
                out.push(self.moved(j, Reason::Machines, (before, after), runs));
            }
        }
        out
    }
}

/// Welch's test of two sides given as (mean, variance of a run, independent moments): each
/// side's mean counts its moments, not its runs (runs taken back to back are one moment, and
/// their spread says nothing of the next moment's); `None` where a side has fewer than two.
fn moments_welch((ml, vl, nl): (f64, f64, f64), (mr, vr, nr): (f64, f64, f64)) -> Option<f64> {
    if nl < 2.0 || nr < 2.0 {
        return None;
    }
    let (sl, sr) = (vl / nl, vr / nr);
    let d = mr - ml;
    if sl + sr <= 0.0 {
        return Some(if d == 0.0 { 1.0 } else { 0.0 });
    }
    let df = (sl + sr).powi(2) / (sl * sl / (nl - 1.0) + sr * sr / (nr - 1.0));
    Some(two_sided(d / (sl + sr).sqrt(), df))
}

/// The largest moves first, as many as the undecided steps a detection names.
fn largest_first(mut out: Vec<Undecided>) -> Vec<Undecided> {
    out.sort_by(|x, y| y.rel_change.abs().total_cmp(&x.rel_change.abs()));
    out.truncate(MAX_UNDECIDED);
    out
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
