//! Classification of a probe against the old and new levels, for the search and for
//! `perfbisect step`: two-sample comparisons, the grey zone, equivalence.

use super::types::*;

#[derive(Debug, Clone, Copy)]
pub(super) struct Cmp {
    pub(super) before: f64,
    pub(super) after: f64,
    pub(super) rel: f64,
    pub(super) p: f64,
    pub(super) differs: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Old,
    New,
    /// Differs from both sides at α/10: a second step.
    Between,
    /// Differs from both sides at α only: more runs before believing it.
    MaybeBetween,
    Unknown,
}

/// What [`super::Search::beside_a_minor_step`] makes of a probe off both levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Minor {
    /// The smaller step is about the threshold: the probe goes beside the larger one.
    Place(Verdict),
    /// The smaller step measures over the limit by less than its noise: more runs first.
    InDoubt,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Classified {
    pub(super) verdict: Verdict,
    pub(super) leans_new: bool,
    /// The verdict without the grey zone, for when no more runs can be had.
    pub(super) fallback: Option<Verdict>,
}

/// Classify `probe` against the old side and, when known, the new side (`perfbisect step`).
///
/// With `new` (e.g. the samples of `refs/bisect/bad`), this is the rule the search uses (a level
/// between both counts as new-like, so `git bisect` finds the first step; with `max_repeats`
/// probe samples the grey zone is dropped). Without it, new-like needs a difference from `old`
/// (test at α and the threshold) and old-like needs the bootstrap (1−2α) interval of the median
/// ratio inside the threshold (an equivalence test), or, once the probe has `max_repeats`
/// samples, p ≥ 0.25 and medians within the threshold. Non-finite samples are ignored.
pub fn classify(old: &[f64], new: Option<&[f64]>, probe: &[f64], params: &Params) -> Class {
    let params = params.sanitized();
    let old = finite(old);
    let probe = finite(probe);
    let new = new.map(finite).filter(|n| !n.is_empty());
    if old.is_empty() || probe.is_empty() {
        return Class::Unknown;
    }
    let declared = params.deterministic
        && !has_spread(&old)
        && !has_spread(&probe)
        && !new.as_deref().is_some_and(has_spread);
    // A count (instructions) spreading far less than the threshold: exact comparisons, a
    // move counting only beyond a tenth of the threshold.
    let mut params = params;
    let limit = match params.threshold {
        Threshold::Relative(r) => r.abs() / 10.0,
        Threshold::Absolute(a) => stats::median(&old)
            .filter(|m| *m != 0.0)
            .map_or(0.0, |m| a.abs() / m.abs() / 10.0),
    };
    let counted = params.counted
        && limit > 0.0
        && old.len() >= 2
        && [Some(old.as_slice()), Some(probe.as_slice()), new.as_deref()]
            .into_iter()
            .flatten()
            .all(|xs| rel_spread(xs) <= limit);
    if counted {
        params.tolerance = limit;
    }
    let det = declared || counted || (zero_spread(&old) && new.as_deref().is_none_or(zero_spread));
    match new {
        Some(new) => match classify_against(&old, &new, &probe, &params, det) {
            Some(c) => {
                // Once the probe has all its runs, the answer without the grey zone stands.
                let verdict = match c.fallback {
                    Some(v) if probe.len() >= params.max_repeats => v,
                    _ => c.verdict,
                };
                // A level "between" both sides that lies beyond the old one, away from the
                // new: not the step `git bisect` looks for, most often an old-level commit's
                // unlucky runs (a false difference at α/10 on ten runs a side); more runs.
                let beyond_old = match (stats::median(&old), stats::median(&new)) {
                    (Some(mo), Some(mn)) => {
                        stats::median(&probe).is_some_and(|mx| (mx - mo) * (mn - mo) < 0.0)
                    }
                    _ => false,
                };
                let verdict = if verdict == Verdict::Between && beyond_old && !det {
                    Verdict::MaybeBetween
                } else {
                    verdict
                };
                match verdict {
                    Verdict::New | Verdict::Between => Class::NewLike,
                    Verdict::Old => Class::OldLike,
                    Verdict::MaybeBetween | Verdict::Unknown => Class::Unknown,
                }
            }
            None => Class::Unknown,
        },
        None => {
            // `git bisect` makes about log2 N such calls and trusts each for good: a commit
            // at the old level called new-like once sends it astray. Against the old side
            // alone (no new level to be nearer to), a move is new-like at α/10 only.
            let strict = Params {
                alpha: if det {
                    params.alpha
                } else {
                    params.alpha / STEP_STRICTNESS
                },
                ..params
            };
            let Some(c) = compare(&old, &probe, &strict, det) else {
                return Class::Unknown;
            };
            // And the move shown past the threshold: its (1−2α) interval beyond it (ten
            // runs a side of an old-level commit can differ by 1.5 % at α/10 now and then).
            let shown = det || moved_past(&old, &probe, &params);
            // At max_repeats, no hint of a change and medians within the threshold count as old:
            // otherwise a threshold below the noise would turn every old commit into a skip.
            let exhausted_same = probe.len() >= params.max_repeats
                && c.p >= PROMISING_P
                && !params.threshold.reached(c.before, c.after);
            if c.differs && shown {
                Class::NewLike
            } else if c.differs {
                Class::Unknown
            } else if det || exhausted_same || equivalent(&old, &probe, &params) {
                Class::OldLike
            } else {
                Class::Unknown
            }
        }
    }
}

/// [`classify`] once every run of the budget is spent: old-like or new-like, never unknown
/// (`git bisect run` skips only what cannot be tested). Where the runs still cannot tell,
/// the probe goes to the level its median lies nearer: with `new`, the old side's or the
/// new side's; without it, no change or a change of the threshold (new-like from half the
/// threshold on, either way). `Unknown` only when a side has no number.
pub fn decide(old: &[f64], new: Option<&[f64]>, probe: &[f64], params: &Params) -> Class {
    let class = classify(old, new, probe, params);
    if class != Class::Unknown {
        return class;
    }
    let (Some(mo), Some(mx)) = (stats::median(&finite(old)), stats::median(&finite(probe))) else {
        return Class::Unknown;
    };
    let nearer_new = match new.map(finite).and_then(|n| stats::median(&n)) {
        Some(mn) => (mx - mn).abs() < (mx - mo).abs(),
        None => {
            let half = match params.threshold {
                Threshold::Relative(r) => Threshold::Relative(r / 2.0),
                Threshold::Absolute(a) => Threshold::Absolute(a / 2.0),
            };
            mx != mo && half.reached(mo, mx)
        }
    };
    if nearer_new {
        Class::NewLike
    } else {
        Class::OldLike
    }
}

pub(super) fn finite(xs: &[f64]) -> Vec<f64> {
    xs.iter().copied().filter(|x| x.is_finite()).collect()
}

/// At least two samples, all equal: one sample alone says nothing about spread.
/// A p-value as reports print it: three decimals, or two significant digits when small.
pub(super) fn fmt_p(p: f64) -> String {
    if p < crate::base::text::P_FLOOR {
        format!("< {:.0e}", crate::base::text::P_FLOOR)
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// `5 %` or `12 units` (the metric's own unit is the caller's to add).
pub(super) fn threshold_text(t: &Threshold) -> String {
    match *t {
        Threshold::Relative(r) => format!("{} %", fmt_num(r * 100.0)),
        Threshold::Absolute(a) => fmt_num(a),
    }
}

/// Runs of one commit that differ: a metric declared deterministic is not.
pub(super) fn has_spread(xs: &[f64]) -> bool {
    xs.iter().any(|&x| x != xs[0])
}

pub(super) fn zero_spread(xs: &[f64]) -> bool {
    xs.len() >= 2 && xs.iter().all(|&x| x == xs[0])
}

/// Relative spread of runs: (max - min) / |median|; 0 for fewer than two.
pub(super) fn rel_spread(xs: &[f64]) -> f64 {
    let fin: Vec<f64> = finite(xs);
    if fin.len() < 2 {
        return 0.0;
    }
    let lo = fin.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = fin.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match stats::median(&fin) {
        Some(m) if m != 0.0 => (hi - lo) / m.abs(),
        _ if hi == lo => 0.0,
        _ => f64::INFINITY,
    }
}

pub(super) fn compare(a: &[f64], b: &[f64], params: &Params, det: bool) -> Option<Cmp> {
    if det {
        let before = stats::median(a)?;
        let after = stats::median(b)?;
        // A counted metric's values move only beyond the spread its runs showed.
        let moved = if params.tolerance > 0.0 {
            (after - before).abs() > params.tolerance * before.abs()
        } else {
            before != after
        };
        return Some(Cmp {
            before,
            after,
            rel: stats::rel_change(before, after),
            p: if moved { 0.0 } else { 1.0 },
            differs: moved && params.threshold.reached(before, after),
        });
    }
    // Counts that barely vary: Welch's t test, so two runs a side can tell a clear move.
    let d = if params.counted {
        stats::differ_t(a, b, params.alpha, params.threshold)?
    } else {
        stats::differ(a, b, params.alpha, params.threshold)?
    };
    Some(Cmp {
        before: d.before,
        after: d.after,
        rel: d.rel_change,
        p: d.p_value,
        differs: d.differs,
    })
}

/// New-like needs a difference from the old side plus the absence of one from the new side, and
/// the probe's median nearer the new level; old-like mirrors it. Requiring both the test and the
/// position keeps a single false rejection at α from steering the search.
pub(super) fn classify_against(
    old: &[f64],
    new: &[f64],
    probe: &[f64],
    params: &Params,
    det: bool,
) -> Option<Classified> {
    let mo = stats::median(old)?;
    let mn = stats::median(new)?;
    let mx = stats::median(probe)?;
    let co = compare(old, probe, params, det)?;
    let cn = compare(probe, new, params, det)?;
    // `step` is handed its old and new sides: they are a step only if they differ.
    let within_step = compare(old, new, params, det).is_some_and(|c| c.differs);
    Some(classify_cmp(co, cn, mo, mn, mx, params, det, within_step))
}

/// [`classify_against`] from the two comparisons (old vs probe, probe vs new) and the three
/// medians (old, new, probe), however they were made (one window, or several).
/// `within_step`: the old and new sides are known to differ (a search's segment), so a probe
/// may be placed by significance alone ([`placed_within`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn classify_cmp(
    co: Cmp,
    cn: Cmp,
    mo: f64,
    mn: f64,
    mx: f64,
    params: &Params,
    det: bool,
    within_step: bool,
) -> Classified {
    let leans_new = (mx - mn).abs() < (mx - mo).abs();
    let strict = params.alpha / 10.0;
    // Pinpoint's three-way answer: a p-value between α and the grey limit, with medians already
    // past the threshold and a sizeable part of the whole step apart, is neither "differs" nor
    // "same". Calling such a probe new-like is how a level between two steps gets lost; smaller
    // gaps are noise far more often than a second step, and not worth the runs.
    let span = (mn - mo).abs();
    let grey = |c: &Cmp| {
        !det && !c.differs
            && c.p < PROMISING_P
            && params.threshold.reached(c.before, c.after)
            && (c.after - c.before).abs() >= GREY_SHARE * span
    };
    // Without more runs, a probe that differs from one side at least bounds a real step on
    // that side: settling towards its lean can lose a second step, never invent one.
    let lean = if leans_new {
        Verdict::New
    } else {
        Verdict::Old
    };
    let fallback = match (co.differs, cn.differs) {
        (true, true) => Some(lean),
        (true, false) if leans_new => Some(Verdict::New),
        (false, true) if !leans_new => Some(Verdict::Old),
        // Within a step known to differ, a probe that differs from one side only goes to the
        // other even where its median lies a little nearer the first (a +7 % step at 4 %
        // noise: +4.8 % from the old side, significant, -4.5 % from the new, not): it bounds
        // a real step on the side it differs from either way.
        (true, false) if within_step && !det => Some(Verdict::New),
        (false, true) if within_step && !det => Some(Verdict::Old),
        // Within a step known to differ, neither side's move reaching the threshold (no second
        // step that matters lies here): once no more runs can be had, a probe that differs
        // significantly from one side only goes to the other, any other to the nearer level.
        // A better bet than ending the search there: a misplaced probe leaves a parent and
        // culprit that do not differ, and the check and the re-runs say so.
        (false, false) if within_step && !det => match (co.p < params.alpha, cn.p < params.alpha) {
            (true, false) => Some(Verdict::New),
            (false, true) => Some(Verdict::Old),
            _ => Some(lean),
        },
        _ => None,
    };
    let verdict = match (co.differs, cn.differs) {
        (true, true) if co.p < strict && cn.p < strict => Verdict::Between,
        (true, true) => Verdict::MaybeBetween,
        (true, false) if leans_new && grey(&cn) => Verdict::Unknown,
        (false, true) if !leans_new && grey(&co) => Verdict::Unknown,
        (true, false) if leans_new => Verdict::New,
        (false, true) if !leans_new => Verdict::Old,
        // Deterministic values cannot get more runs: a creep of sub-threshold steps is split at
        // its midpoint, and the parent/culprit check then reports it as spread out.
        _ if det => {
            if leans_new {
                Verdict::New
            } else {
                Verdict::Old
            }
        }
        _ if within_step => placed_within(co, cn, leans_new, params),
        _ => Verdict::Unknown,
    };
    Classified {
        verdict,
        leans_new,
        fallback,
    }
}

/// A probe that differs from neither side by the threshold, within a step that does: the
/// threshold says which steps matter, not where a probe lies between two levels already known
/// to differ. So a probe whose runs differ significantly from one side only, and whose median
/// lies nearer the other, is placed there. Without this, a step barely over the threshold
/// (curl's -1.1 % at 1 %) leaves every probe of its sub-range unplaced until it has all its runs,
/// its two sides measuring 0.9 % or 1.1 % apart by turns.
fn placed_within(co: Cmp, cn: Cmp, leans_new: bool, params: &Params) -> Verdict {
    let (so, sn) = (co.p < params.alpha, cn.p < params.alpha);
    match (so, sn) {
        (false, true) if !leans_new => Verdict::Old,
        (true, false) if leans_new => Verdict::New,
        _ => Verdict::Unknown,
    }
}

/// The mirror of [`equivalent`]: the whole (1−2α) interval of the median ratio lies past
/// the threshold, on one side.
pub(super) fn moved_past(old: &[f64], probe: &[f64], params: &Params) -> bool {
    let Some(m) = stats::median(old) else {
        return false;
    };
    let level = 1.0 - 2.0 * params.alpha;
    match stats::bootstrap_median_ratio(old, probe, level, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED) {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() => {
            let past = |r: f64| params.threshold.reached(m, m * r);
            past(lo) && past(hi) && (lo - 1.0) * (hi - 1.0) > 0.0
        }
        _ => false,
    }
}

/// Equivalence (two one-sided tests via the bootstrap interval): the whole (1−2α) interval of the
/// median ratio stays inside the threshold.
pub(super) fn equivalent(old: &[f64], probe: &[f64], params: &Params) -> bool {
    let Some(m) = stats::median(old) else {
        return false;
    };
    let level = 1.0 - 2.0 * params.alpha;
    match stats::bootstrap_median_ratio(old, probe, level, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED) {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() => {
            !params.threshold.reached(m, m * lo) && !params.threshold.reached(m, m * hi)
        }
        _ => false,
    }
}
