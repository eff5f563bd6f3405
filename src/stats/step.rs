//! The size of one step, the one definition every view of a finding reads: the levels are
//! real medians of the runs named (every run of each side, pooled), and the change is
//! estimated window by window — each window of time in which both sides were measured side
//! by side gives its own ratio of medians, and the windows' ratios are combined — so a
//! machine whose speed moved between windows does not move the step. Its interval comes from
//! resampling each side within each window.

use super::compare::SplitMix64;
use super::summary::median_in_place;
use super::threshold::rel_change;

/// A rank test's fewest runs a side to reach α = 0.01 (and what `find`'s verification of a
/// culprit takes at least); below it a step is "too few runs".
pub const RANK_RUNS: usize = 5;

/// Confidence of [`Step::interval`].
pub const INTERVAL_LEVEL: f64 = 0.95;
/// Fixed so that the same runs always give the same interval.
const SEED: u64 = 0x7374_6570_2d63_6921;
/// Resamples of the interval, fewer for very large windows (the cost is resamples × runs).
const RESAMPLES: usize = 1000;
const MAX_WORK: usize = 4_000_000;

/// The test a step's p-value comes from, named wherever the p-value is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepTest {
    /// Values compared exactly (a deterministic metric): no p-value applies.
    Exact,
    /// The change-point detector's t test of the two neighbouring segments' levels.
    Levels,
    /// Welch's t test of a commit's runs against its parent's (counts).
    Welch,
    /// Van Elteren's rank test of a commit's runs against its parent's, stratified by window.
    VanElteren,
    /// The two-sided Mann-Whitney U test of a commit's runs against its parent's.
    MannWhitney,
}

impl StepTest {
    /// The test `find` applies to a culprit and its parent: Welch's for counts, else a rank
    /// test, stratified when the runs were taken in several windows.
    pub fn of_pair(counted: bool, windows: usize) -> StepTest {
        if counted {
            StepTest::Welch
        } else if windows > 1 {
            StepTest::VanElteren
        } else {
            StepTest::MannWhitney
        }
    }

    /// Its name in prose.
    pub fn name(self) -> &'static str {
        match self {
            StepTest::Exact => "values compared exactly",
            StepTest::Levels => "t test of the neighbouring segments' levels",
            StepTest::Welch => "Welch's t test",
            StepTest::VanElteren => "van Elteren's rank test, stratified by window",
            StepTest::MannWhitney => "two-sided Mann-Whitney U",
        }
    }
}

/// A step between two levels measured side by side.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Step {
    /// Median of every run of the old side in the windows used.
    pub before: f64,
    /// Median of every run of the new side in the windows used.
    pub after: f64,
    /// Runs behind `before` and `after`.
    pub n_before: usize,
    pub n_after: usize,
    /// Windows of time that held runs of both sides.
    pub windows: usize,
    /// The change, `after / before - 1`, estimated window by window (see the module): with one
    /// window exactly `rel_change(before, after)`.
    pub rel_change: f64,
    /// [`INTERVAL_LEVEL`] interval of `rel_change` (`None` unless asked for, or when a side
    /// holds too few runs to resample).
    pub interval: Option<(f64, f64)>,
}

impl Step {
    /// The levels every view prints: the old side's median and the level the change
    /// estimated window by window puts the new side at, so that the levels printed give the
    /// change printed (with several windows the new side's own median can differ: the
    /// machine's speed moved between them). With one window, `(before, after)`.
    pub fn levels(&self) -> (f64, f64) {
        if self.windows <= 1 || !self.rel_change.is_finite() {
            return (self.before, self.after);
        }
        (
            self.before,
            self.before + self.rel_change * self.before.abs(),
        )
    }

    /// Whether `rel` (another view's change) lies within this step's interval, or equals its
    /// estimate when it has none.
    pub fn agrees_with(&self, rel: f64) -> bool {
        match self.interval {
            Some((lo, hi)) => rel >= lo - 1e-12 && rel <= hi + 1e-12,
            None => (rel - self.rel_change).abs() <= 1e-12 * self.rel_change.abs().max(1.0),
        }
    }
}

/// The step from the first to the second side of each stratum (a window of time), NaN runs
/// left out, windows where a side is empty skipped; `None` when no window is left. No interval.
pub fn estimate(strata: &[(&[f64], &[f64])]) -> Option<Step> {
    estimate_kept(&clean(strata))
}

/// [`estimate`] of windows already cleaned and put in order.
fn estimate_kept(kept: &[Stratum]) -> Option<Step> {
    let (before, after, n_before, n_after) = pooled(kept)?;
    Some(Step {
        before,
        after,
        n_before,
        n_after,
        windows: kept.len(),
        rel_change: combined(kept)?,
        interval: None,
    })
}

/// [`estimate`] with its interval: each side of each window resampled with replacement, the
/// combined change of each resample, the central [`INTERVAL_LEVEL`] of them. Runs repeated
/// without any spread give the estimate itself as the interval; one run a side, none.
pub fn estimate_with_interval(strata: &[(&[f64], &[f64])]) -> Option<Step> {
    let kept = clean(strata);
    let mut step = estimate_kept(&kept)?;
    step.interval = interval(&kept, step.rel_change);
    Some(step)
}

type Stratum = (Vec<f64>, Vec<f64>);

fn clean(strata: &[(&[f64], &[f64])]) -> Vec<Stratum> {
    let mut kept = strata
        .iter()
        .map(|(a, b)| {
            let f = |x: &[f64]| {
                x.iter()
                    .copied()
                    .filter(|v| !v.is_nan())
                    .collect::<Vec<_>>()
            };
            (f(a), f(b))
        })
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .collect::<Vec<_>>();
    // In one order whatever order the windows and their runs came in (window ids are random,
    // and every view lists them its own way): the resampling walks them in turn, so the same
    // runs give the same interval, bit for bit, in `find`, `report` and `detect`.
    let cmp = |x: &[f64], y: &[f64]| {
        x.len().cmp(&y.len()).then_with(|| {
            x.iter()
                .zip(y)
                .map(|(a, b)| a.total_cmp(b))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    };
    for (a, b) in &mut kept {
        a.sort_unstable_by(f64::total_cmp);
        b.sort_unstable_by(f64::total_cmp);
    }
    kept.sort_by(|(a1, b1), (a2, b2)| cmp(a1, a2).then_with(|| cmp(b1, b2)));
    kept
}

fn pooled(kept: &[Stratum]) -> Option<(f64, f64, usize, usize)> {
    let mut a: Vec<f64> = kept.iter().flat_map(|(a, _)| a.iter().copied()).collect();
    let mut b: Vec<f64> = kept.iter().flat_map(|(_, b)| b.iter().copied()).collect();
    let (na, nb) = (a.len(), b.len());
    Some((median_in_place(&mut a)?, median_in_place(&mut b)?, na, nb))
}

/// Each window's ratio of medians, weighted by `na·nb / (na + nb)` (the information a
/// two-sample comparison of that window carries), combined as a geometric mean for positive
/// metrics and as a mean of relative changes otherwise.
fn combined(kept: &[Stratum]) -> Option<f64> {
    let mut scratch = Vec::new();
    let meds: Vec<(f64, f64, f64)> = kept
        .iter()
        .filter_map(|(a, b)| {
            scratch.clear();
            scratch.extend_from_slice(a);
            let ma = median_in_place(&mut scratch)?;
            scratch.clear();
            scratch.extend_from_slice(b);
            let mb = median_in_place(&mut scratch)?;
            let w = (a.len() * b.len()) as f64 / (a.len() + b.len()) as f64;
            Some((ma, mb, w))
        })
        .collect();
    combine_medians(&meds)
}

fn combine_medians(meds: &[(f64, f64, f64)]) -> Option<f64> {
    if let [(ma, mb, _)] = meds {
        return Some(rel_change(*ma, *mb));
    }
    let positive = meds.iter().all(|(a, b, _)| *a > 0.0 && *b > 0.0);
    let (mut num, mut den) = (0.0, 0.0);
    for &(a, b, w) in meds {
        let r = if positive {
            (b / a).ln()
        } else {
            rel_change(a, b)
        };
        if r.is_finite() {
            num += w * r;
            den += w;
        }
    }
    if den <= 0.0 {
        return meds.first().map(|(a, b, _)| rel_change(*a, *b));
    }
    let r = num / den;
    Some(if positive { r.exp_m1() } else { r })
}

fn interval(kept: &[Stratum], estimate: f64) -> Option<(f64, f64)> {
    // One run a side in every window: no spread to resample, nor any to call zero.
    if kept.iter().all(|(a, b)| a.len() < 2 && b.len() < 2) {
        return None;
    }
    let spread = |x: &[f64]| x.iter().any(|v| *v != x[0]);
    if !kept.iter().any(|(a, b)| spread(a) || spread(b)) {
        return Some((estimate, estimate));
    }
    let n: usize = kept.iter().map(|(a, b)| a.len() + b.len()).sum();
    let resamples = RESAMPLES.min((MAX_WORK / n.max(1)).max(200));
    let mut rng = SplitMix64::new(SEED);
    let mut buf = Vec::new();
    let mut draws = Vec::with_capacity(resamples);
    let mut meds = Vec::with_capacity(kept.len());
    for _ in 0..resamples {
        meds.clear();
        for (a, b) in kept {
            let mut side = |x: &[f64]| {
                buf.clear();
                buf.extend((0..x.len()).map(|_| x[rng.below(x.len())]));
                median_in_place(&mut buf)
            };
            let (Some(ma), Some(mb)) = (side(a), side(b)) else {
                continue;
            };
            let w = (a.len() * b.len()) as f64 / (a.len() + b.len()) as f64;
            meds.push((ma, mb, w));
        }
        if let Some(r) = combine_medians(&meds).filter(|r| r.is_finite()) {
            draws.push(r);
        }
    }
    if draws.is_empty() {
        return None;
    }
    draws.sort_unstable_by(f64::total_cmp);
    let lo = super::summary::percentile(&draws, (1.0 - INTERVAL_LEVEL) / 2.0);
    let hi = super::summary::percentile(&draws, (1.0 + INTERVAL_LEVEL) / 2.0);
    // The estimate itself always lies inside its interval (a median's resamples can all fall
    // on one side of it with very few runs).
    Some((lo.min(estimate), hi.max(estimate)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_window_is_the_ratio_of_its_medians() {
        let a = [10.0, 11.0, 9.0, 10.5, 9.5];
        let b = [12.0, 12.5, 11.5, 12.2, 11.8];
        let s = estimate_with_interval(&[(&a, &b)]).unwrap();
        assert_eq!((s.before, s.after), (10.0, 12.0));
        assert_eq!((s.n_before, s.n_after, s.windows), (5, 5, 1));
        assert!((s.rel_change - 0.2).abs() < 1e-12);
        let (lo, hi) = s.interval.unwrap();
        assert!(lo <= 0.2 && 0.2 <= hi && lo > 0.0, "{lo} {hi}");
    }

    #[test]
    fn drift_between_windows_does_not_move_the_step() {
        // The same +10 % step measured in two windows, the machine 30 % slower in the second.
        let (a1, b1) = ([100.0, 101.0, 99.0], [110.0, 111.1, 108.9]);
        let (a2, b2) = ([130.0, 131.3, 128.7], [143.0, 144.4, 141.6]);
        let s = estimate_with_interval(&[(&a1, &b1), (&a2, &b2)]).unwrap();
        assert!((s.rel_change - 0.1).abs() < 1e-3, "{}", s.rel_change);
        // The pooled medians are real medians of the runs, whatever their ratio says.
        assert_eq!(s.before, (101.0 + 128.7) / 2.0);
        assert_eq!((s.n_before, s.n_after, s.windows), (6, 6, 2));
        let (lo, hi) = s.interval.unwrap();
        assert!(lo > 0.07 && hi < 0.13, "{lo} {hi}");
        // The levels a view prints give the change it prints (the new side's pooled median,
        // 126.35 here, would say +10.2 %).
        let (before, after) = s.levels();
        assert_eq!(before, s.before);
        assert!(
            (after / before - 1.0 - s.rel_change).abs() < 1e-12,
            "{after}"
        );
        assert_ne!(after, s.after);
    }

    #[test]
    fn exact_runs_give_an_exact_interval_and_single_runs_none() {
        let s = estimate_with_interval(&[(&[5.0, 5.0], &[6.0, 6.0])]).unwrap();
        assert_eq!(s.interval, Some((0.2, 0.2)));
        let s = estimate_with_interval(&[(&[5.0], &[6.0])]).unwrap();
        assert_eq!(s.interval, None);
        let s = estimate_with_interval(&[(&[5.0], &[6.0]), (&[5.1], &[6.2])]).unwrap();
        assert_eq!(s.interval, None);
        assert!(estimate(&[(&[], &[1.0])]).is_none());
        assert!(estimate(&[(&[f64::NAN], &[1.0])]).is_none());
    }

    #[test]
    fn non_positive_metrics_combine_relative_changes() {
        let s = estimate(&[(&[-10.0, -10.0], &[-12.0, -12.0]), (&[-20.0], &[-24.0])]).unwrap();
        assert!((s.rel_change + 0.2).abs() < 1e-12, "{}", s.rel_change);
    }

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(64))]
        /// The headline's promises: its levels are the medians of the runs it names, it counts
        /// them, and its change lies within its own interval.
        #[test]
        fn levels_are_medians_of_the_runs_and_the_change_is_inside_its_interval(
            windows in proptest::collection::vec(
                (proptest::collection::vec(1.0f64..100.0, 1..8),
                 proptest::collection::vec(1.0f64..100.0, 1..8)),
                1..4,
            )
        ) {
            let strata: Vec<(&[f64], &[f64])> =
                windows.iter().map(|(a, b)| (a.as_slice(), b.as_slice())).collect();
            let s = estimate_with_interval(&strata).unwrap();
            let all_a: Vec<f64> = windows.iter().flat_map(|(a, _)| a.clone()).collect();
            let all_b: Vec<f64> = windows.iter().flat_map(|(_, b)| b.clone()).collect();
            prop_assert_eq!(s.before, crate::stats::median(&all_a).unwrap());
            prop_assert_eq!(s.after, crate::stats::median(&all_b).unwrap());
            prop_assert_eq!((s.n_before, s.n_after), (all_a.len(), all_b.len()));
            if let Some((lo, hi)) = s.interval {
                prop_assert!(lo <= s.rel_change && s.rel_change <= hi);
            }
            if windows.len() == 1 {
                prop_assert!((s.rel_change - rel_change(s.before, s.after)).abs() < 1e-9);
            }
        }

        /// One step, one number: the windows in another order (their ids are random) and each
        /// window's runs in another order give the same step, interval included, bit for bit.
        #[test]
        fn the_order_of_windows_and_runs_does_not_change_the_step(
            windows in proptest::collection::vec(
                (proptest::collection::vec(1.0f64..100.0, 1..8),
                 proptest::collection::vec(1.0f64..100.0, 1..8)),
                1..5,
            ),
            turn in 0usize..5,
        ) {
            let strata: Vec<(&[f64], &[f64])> =
                windows.iter().map(|(a, b)| (a.as_slice(), b.as_slice())).collect();
            let mut other: Vec<(Vec<f64>, Vec<f64>)> = windows
                .iter()
                .map(|(a, b)| {
                    let (mut a, mut b) = (a.clone(), b.clone());
                    a.reverse();
                    let k = turn % b.len();
                    b.rotate_left(k);
                    (a, b)
                })
                .collect();
            other.reverse();
            let l = other.len();
            other.rotate_left(turn % l);
            let moved: Vec<(&[f64], &[f64])> =
                other.iter().map(|(a, b)| (a.as_slice(), b.as_slice())).collect();
            prop_assert_eq!(estimate_with_interval(&strata), estimate_with_interval(&moved));
        }
    }
}
