//! The detector's behaviour on series a user would recognise.

use super::*;
use crate::stats::compare::SplitMix64;
use proptest::prelude::*;

fn noisy(levels: &[f64], reps: usize, sd: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = SplitMix64::new(seed);
    levels
        .iter()
        .map(|&l| (0..reps).map(|_| l + sd * rng.normal()).collect())
        .collect()
}

/// The commits of `d`'s change points.
fn at(d: &[ChangePoint]) -> Vec<usize> {
    d.iter().map(|c| c.index).collect()
}

fn step(n: usize, at: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|i| if i < at { lo } else { hi }).collect()
}

#[test]
fn a_step_in_a_short_series_with_many_runs_is_placed_where_it_is() {
    // Five or seven commits of 12 runs (±20 %), levels 40 and 10, the step two commits
    // from an end: the segmentation cannot place it, the end test must, at its commit.
    let mut rng = 1u64;
    let mut noise = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % 10_000) as f64 / 10_000.0 * 0.4 - 0.2
    };
    for (levels, want) in [
        (vec![40.0, 40.0, 40.0, 10.0, 10.0], 3),
        (vec![40.0, 40.0, 10.0, 10.0, 10.0, 10.0, 10.0], 2),
        (vec![40.0, 40.0, 40.0, 40.0, 40.0, 10.0, 10.0], 5),
    ] {
        let series: Vec<Vec<f64>> = levels
            .iter()
            .map(|l| (0..12).map(|_| l * (1.0 + noise())).collect())
            .collect();
        let cps = detect(&series, &Options::default());
        assert_eq!(cps.len(), 1, "{levels:?}: {cps:?}");
        assert_eq!(cps[0].index, want, "{levels:?}: {cps:?}");
        assert!(cps[0].before > 30.0 && cps[0].after < 13.0, "{cps:?}");
    }
}

#[test]
fn a_step_with_two_commits_of_a_jittery_count_beside_it_is_found_and_jitter_alone_is_not() {
    // Commit levels jitter by ±0.2 %, far more than their 5 runs spread (0.05 %): the
    // levels are the units. Two commits 1.6 % below the ten before them are a step; the
    // same two at the jittery level are none.
    let jitter = [0.0, 0.002, -0.0015, 0.001, -0.002, 0.0005];
    let opts = Options {
        threshold: Threshold::Relative(0.01),
        ..Options::default()
    };
    for (last, want) in [(1063.0, vec![20, 30]), (1080.0, vec![20])] {
        let levels: Vec<f64> = (0..32)
            .map(|i| {
                let l = match i {
                    0..20 => 1000.0,
                    20..30 => 1080.0,
                    _ => last,
                };
                l * (1.0 + jitter[i % 6])
            })
            .collect();
        let mut rng = SplitMix64::new(5);
        let series: Vec<Vec<f64>> = levels
            .iter()
            .map(|l| (0..5).map(|_| l * (1.0 + 0.0005 * rng.normal())).collect())
            .collect();
        let cps = detect(&series, &opts);
        let at: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(at, want, "{cps:?}");
    }
}

#[test]
fn edges_do_not_panic() {
    let o = Options::default();
    assert!(detect(&[], &o).is_empty());
    assert!(detect(&[vec![]], &o).is_empty());
    assert!(detect(&[vec![1.0]], &o).is_empty());
    assert!(detect(&[vec![1.0], vec![2.0]], &o).len() <= 1);
    assert!(detect(&[vec![1.0], vec![], vec![2.0]], &o).len() <= 1);
    assert!(detect(&vec![vec![5.0]; 100], &o).is_empty());
    assert!(detect(&vec![vec![f64::NAN, f64::INFINITY]; 10], &o).is_empty());
    let weird = vec![vec![0.0], vec![1e308], vec![-1e308], vec![], vec![1.0, 2.0]];
    let _ = detect(&weird, &o);
    let bad = Options {
        alpha: f64::NAN,
        threshold: Threshold::Relative(f64::NAN),
        deterministic: true,
        counted: false,
    };
    let _ = detect(&noisy(&step(30, 15, 10.0, 20.0), 1, 1.0, 1), &bad);
}

#[test]
fn deterministic_steps_exact() {
    let mut lv = vec![3064.0; 20];
    lv.extend(vec![3072.0; 1]);
    lv.extend(vec![3080.0; 30]);
    let s: Vec<Vec<f64>> = lv.iter().map(|&v| vec![v]).collect();
    let declared = Options {
        deterministic: true,
        ..Options::default()
    };
    let cps = detect(&s, &declared);
    let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
    assert_eq!(idx, vec![20, 21]);
    assert_eq!(cps[0].p_value, 0.0);
    assert_eq!((cps[0].before, cps[0].after), (3064.0, 3072.0));
    // threshold filters a small step
    let o = Options {
        threshold: Threshold::Relative(0.005),
        ..declared
    };
    let cps = detect(&s, &o);
    assert!(cps.is_empty(), "{cps:?}");
    // The same runs twice each, undeclared: repeated equal runs are exact too.
    let twice: Vec<Vec<f64>> = lv.iter().map(|&v| vec![v, v]).collect();
    let cps = detect(&twice, &Options::default());
    assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), [20, 21]);
    assert!(cps.iter().all(|c| c.deterministic && c.p_value == 0.0));
}

#[test]
fn one_run_per_commit_is_never_an_exact_step_unless_declared() {
    let mut ten_then_six: Vec<Vec<f64>> = vec![vec![5.0]; 10];
    ten_then_six.push(vec![6.0]);
    for s in [ten_then_six, vec![vec![100.0], vec![101.0]]] {
        let cps = detect(&s, &Options::default());
        assert!(
            cps.iter().all(|c| !c.deterministic && c.p_value > 0.0),
            "{s:?}: {cps:?}"
        );
    }
}

#[test]
fn deterministic_small_and_repeated() {
    let o = Options::default();
    let s = vec![vec![3064.0], vec![3064.0], vec![3072.0]];
    let declared = Options {
        deterministic: true,
        ..Options::default()
    };
    let idx = at(&detect(&s, &declared));
    assert_eq!(idx, vec![2]);
    // Undeclared, one run each says too little.
    assert!(detect(&s, &o).is_empty());
    // three equal runs per commit, an unmeasured commit, a sub-threshold step, a blip
    let mut s: Vec<Vec<f64>> = Vec::new();
    for i in 0..40 {
        let v = match i {
            0..=9 => 100.0,
            10..=19 => 101.0,
            20 => 150.0,
            _ => 140.0,
        };
        s.push(if i == 5 { vec![] } else { vec![v; 3] });
    }
    let o = Options {
        threshold: Threshold::Absolute(5.0),
        ..Options::default()
    };
    let cps = detect(&s, &o);
    let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
    assert_eq!(idx, vec![20, 21]);
    assert_eq!((cps[0].before, cps[0].after), (101.0, 150.0));
    assert_eq!((cps[1].before, cps[1].after), (150.0, 140.0));
}

/// A change point as (index, before, after).
type Step = (usize, f64, f64);

/// A declared-deterministic series whose value changes at many commits (a binary size that
/// most merges move a little): thirteen equal values, a +0.65 % jump, small steps on and
/// below the 0.1 % threshold, an unmeasured commit, and runs repeated exactly.
fn small_steps() -> (Vec<Vec<f64>>, Vec<Step>) {
    let mut lv = vec![100_000.0; 13];
    lv.extend([100_650.0; 7]); // 13: +0.65 %
    lv.push(100_700.0); // 20: +0.05 %, below the threshold
    lv.extend([100_900.0; 3]); // 21: +0.2 % against 100_700
    lv.extend([100_500.0; 2]); // 24: -0.4 % (23 is unmeasured)
    lv.push(100_520.0); // 26: +0.02 %, below
    lv.extend([100_400.0; 4]); // 27: -0.12 % against 100_520
    lv.push(100_501.0); // 31: +0.1006 %, just above
    let mut s: Vec<Vec<f64>> = lv
        .iter()
        .enumerate()
        .map(|(i, &v)| vec![v; 1 + i % 3])
        .collect();
    s[23].clear();
    let want = vec![
        (13, 100_000.0, 100_650.0),
        (21, 100_700.0, 100_900.0),
        (24, 100_900.0, 100_500.0),
        (27, 100_520.0, 100_400.0),
        (31, 100_400.0, 100_501.0),
    ];
    (s, want)
}

#[test]
fn declared_deterministic_reports_every_step_at_its_commit() {
    let (s, want) = small_steps();
    let o = Options {
        threshold: Threshold::Relative(0.001),
        deterministic: true,
        ..Options::default()
    };
    let cps = detect(&s, &o);
    let got: Vec<Step> = cps.iter().map(|c| (c.index, c.before, c.after)).collect();
    assert_eq!(got, want);
    assert!(cps.iter().all(|c| c.deterministic && c.p_value == 0.0));
    assert!((cps[0].rel_change - 0.0065).abs() < 1e-12, "{cps:?}");
    assert!(
        (cps[3].rel_change + 0.0012 / 1.0052).abs() < 1e-4,
        "{cps:?}"
    );
    // The value changes at 7 of 30 pairs of commits, but in plateaus far longer than values
    // drawn at random would make (a runs test): without the declaration too, every change is
    // exact, each at its commit.
    let undeclared = detect(
        &s,
        &Options {
            deterministic: false,
            ..o
        },
    );
    assert_eq!(
        undeclared.iter().map(|c| c.index).collect::<Vec<_>>(),
        want.iter().map(|w| w.0).collect::<Vec<_>>()
    );
    assert!(undeclared.iter().all(|c| c.deterministic), "{undeclared:?}");
}

#[test]
fn declared_deterministic_thirteen_equal_then_a_jump() {
    // The series: thirteen identical values, then +0.65 % at a 0.1 % threshold,
    // reported with the values on either side, also as the newest commit.
    let o = Options {
        threshold: Threshold::Relative(0.001),
        deterministic: true,
        ..Options::default()
    };
    let mut s = vec![vec![66_625.0]; 13];
    s.push(vec![66_625.0 * 1.0065]);
    let cps = detect(&s, &o);
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0].index, 13);
    assert_eq!((cps[0].before, cps[0].after), (66_625.0, 66_625.0 * 1.0065));
    // A sub-threshold change is not one, a change to and from zero is.
    let s = vec![vec![1000.0], vec![1000.5], vec![0.0], vec![0.0], vec![7.0]];
    let idx = at(&detect(&s, &o));
    assert_eq!(idx, vec![2, 4]);
}

#[test]
fn declared_deterministic_with_differing_runs_is_analysed_as_noisy() {
    // Runs of one commit differ: the declaration does not hold, so robust segment levels
    // and a test decide, exactly as for an undeclared series.
    let s = noisy(&step(60, 30, 100.0, 110.0), 3, 1.0, 21);
    let declared = Options {
        deterministic: true,
        ..Options::default()
    };
    let cps = detect(&s, &declared);
    assert_eq!(cps, detect(&s, &Options::default()));
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0].index, 30);
    assert!(!cps[0].deterministic);
    assert!((cps[0].after / cps[0].before - 1.1).abs() < 0.02, "{cps:?}");
}

#[test]
fn heavy_tails_do_not_fire() {
    // Cauchy noise around 100: no change in at least 48 of 50 seeds, and a step of 10
    // scale units is still found at its commit.
    let mut fired = 0;
    for seed in 0..50u64 {
        let mut rng = SplitMix64::new(seed);
        let mut cauchy = || {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            (std::f64::consts::PI * (u - 0.5)).tan()
        };
        let s: Vec<Vec<f64>> = (0..300).map(|_| vec![100.0 + cauchy()]).collect();
        if !detect(&s, &Options::default()).is_empty() {
            fired += 1;
        }
        let s: Vec<Vec<f64>> = (0..300)
            .map(|i| vec![if i < 170 { 100.0 } else { 110.0 } + cauchy()])
            .collect();
        let cps = detect(&s, &Options::default());
        assert!(
            cps.iter().any(|c| c.index.abs_diff(170) <= 3),
            "{seed}: {cps:?}"
        );
    }
    assert!(fired <= 2, "{fired} of 50");
}

#[test]
fn varying_repeats_and_negative_values() {
    // levels around 0 (no log scale), repeats 1..5, every 7th commit unmeasured
    let mut rng = SplitMix64::new(77);
    let s: Vec<Vec<f64>> = (0..300)
        .map(|i| {
            if i % 7 == 3 {
                return vec![];
            }
            let lv = if i < 120 { -1.0 } else { 1.0 };
            (0..1 + i % 5).map(|_| lv + 0.3 * rng.normal()).collect()
        })
        .collect();
    let cps = detect(&s, &Options::default());
    let idx: Vec<usize> = cps.iter().map(|c| c.index).collect();
    assert_eq!(idx, vec![120]);
    assert!((cps[0].after - cps[0].before - 2.0).abs() < 0.2, "{cps:?}");
}

#[test]
fn step_on_drift() {
    let lv: Vec<f64> = (0..400)
        .map(|i| 1000.0 * (1.0 + 0.0002 * i as f64) * if i >= 250 { 1.03 } else { 1.0 })
        .collect();
    let s = noisy(&lv, 3, 10.0, 4);
    // A 3 % step in 1 % noise, three runs a commit (five sd of a level): decided, its commit
    // within the span the runs place it in.
    let cps = detect(&s, &Options::default());
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert!(cps[0].last_before < 250 && 250 <= cps[0].index, "{cps:?}");
    assert!(cps[0].index - cps[0].last_before <= 3, "{cps:?}");
}

#[test]
fn no_spurious_drift_with_one_step() {
    // proptest once found: a spurious slope plus a spurious boundary beat the honest fit
    let s = noisy(&step(54, 40, 100.0, 110.0), 2, 1.0, 347_673);
    let idx = at(&detect(&s, &Options::default()));
    assert_eq!(idx, vec![40]);
}

#[test]
fn change_at_the_newest_commits() {
    // the cron case: the last three commits regressed, five runs each
    let s = noisy(&step(100, 97, 100.0, 110.0), 5, 1.0, 3);
    let idx = at(&detect(&s, &Options::default()));
    assert_eq!(idx, vec![97]);
}

/// A step is found wherever it sits, down to one commit on a side (the newest commit
/// included: "did the latest round regress?"), with levels of the data; a flat series
/// with the same noise gets none.
#[test]
fn a_step_at_any_position_is_found_with_levels_of_the_data() {
    let mut missed = Vec::new();
    let mut wrong = Vec::new();
    for (n, cv, factor) in [(10usize, 0.03, 0.28), (40, 0.01, 1.05), (20, 0.02, 1.10)] {
        for at in 1..n {
            for seed in 0..3u64 {
                let levels: Vec<f64> = (0..n)
                    .map(|i| if i >= at { 1000.0 * factor } else { 1000.0 })
                    .collect();
                let mut rng = SplitMix64::new(seed * 7919 + at as u64 + n as u64);
                let s: Vec<Vec<f64>> = levels
                    .iter()
                    .map(|&l| (0..5).map(|_| l * (1.0 + cv * rng.normal())).collect())
                    .collect();
                let (lo, hi) = s
                    .iter()
                    .flatten()
                    .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                let cps = detect(&s, &Options::default());
                for c in &cps {
                    assert!(c.before >= lo && c.before <= hi, "{c:?} outside {lo}..{hi}");
                    assert!(c.after >= lo && c.after <= hi, "{c:?} outside {lo}..{hi}");
                    if c.index.abs_diff(at) > 1 {
                        wrong.push((n, at, seed, c.index));
                    }
                }
                if !cps.iter().any(|c| c.index == at) {
                    missed.push((n, at, seed));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "change points far from the step: {wrong:?}"
    );
    // 207 series; a few of the 5x-noise steps sit one commit off or are missed.
    assert!(missed.len() <= 8, "missed {}: {missed:?}", missed.len());
    for n in [10usize, 40] {
        for seed in 0..20u64 {
            let s = noisy(&vec![1000.0; n], 5, 20.0, seed);
            let cps = detect(&s, &Options::default());
            assert!(cps.is_empty(), "n {n} seed {seed}: {cps:?}");
        }
    }
}

#[test]
fn build_jitter_is_not_a_change() {
    // each commit's level jitters by 3 sd of a run, five runs per commit
    let mut fired = 0;
    for seed in 0..100u64 {
        let mut rng = SplitMix64::new(seed);
        let s: Vec<Vec<f64>> = (0..200)
            .map(|_| {
                let lv = 100.0 + 3.0 * rng.normal();
                (0..5).map(|_| lv + rng.normal()).collect()
            })
            .collect();
        if !detect(&s, &Options::default()).is_empty() {
            fired += 1;
        }
    }
    assert!(fired <= 2, "{fired} of 100");
}

#[test]
fn quantised_noise_is_not_deterministic() {
    // whole-millisecond timings, one run per commit: values repeat but change often
    let mut rng = SplitMix64::new(8);
    let s: Vec<Vec<f64>> = (0..300)
        .map(|_| vec![(100.0 + 0.7 * rng.normal()).round()])
        .collect();
    assert!(detect(&s, &Options::default()).is_empty());
}

#[test]
fn gaps_map_to_series_positions() {
    let mut s = noisy(&step(60, 30, 100.0, 120.0), 3, 1.0, 5);
    for i in (0..60).step_by(4) {
        s[i].clear();
    }
    let cps = detect(&s, &Options::default());
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0].index, 30);
    assert!((cps[0].rel_change - 0.2).abs() < 0.02);
}

#[test]
fn drift_is_not_a_change() {
    let lv: Vec<f64> = (0..500).map(|i| 100.0 + 0.02 * i as f64).collect();
    let s = noisy(&lv, 1, 1.0, 9);
    assert!(detect(&s, &Options::default()).is_empty());
}

#[test]
fn big_series_runs() {
    let mut lv = step(200_000, 120_000, 1000.0, 1010.0);
    for v in lv.iter_mut().skip(50_000).take(10_000) {
        *v *= 1.05;
    }
    let s = noisy(&lv, 1, 5.0, 11);
    let cps = detect(&s, &Options::default());
    // Each step within the span the runs place it in (a 1 % step in 0.5 % noise, one run a
    // commit, cannot name one commit among its neighbours).
    assert_eq!(cps.len(), 3, "{cps:?}");
    for (c, at) in cps.iter().zip([50_000, 60_000, 120_000]) {
        assert!(c.last_before < at && at <= c.index, "{cps:?}");
        assert!(c.index - c.last_before <= 12, "{cps:?}");
    }
}

#[test]
fn pure_noise_rarely_fires() {
    // at most 1 % of 200 seeds per length
    for n in [50, 200, 1000] {
        let mut fired = 0;
        for seed in 0..200u64 {
            let reps = [1, 3, 5][seed as usize % 3];
            let s = noisy(&vec![100.0; n], reps, 1.0, seed + 1000 * n as u64);
            if !detect(&s, &Options::default()).is_empty() {
                fired += 1;
            }
        }
        assert!(
            fired <= 2,
            "n = {n}: {fired} of 200 noise series had a change point"
        );
    }
}

proptest! {
    #![proptest_config(crate::stats::testing::proptest_config(64))]
    #[test]
    fn clean_step_found_exactly(n in 20usize..400, frac in 0.2f64..0.8, reps in 1usize..6,
                                up in proptest::bool::ANY, seed in 0u64..1_000_000) {
        let at = ((n as f64 * frac) as usize).clamp(10, n - 10);
        let hi = if up { 110.0 } else { 90.0 };
        let s = noisy(&step(n, at, 100.0, hi), reps, 1.0, seed);
        // Found at its exact commit, once. (A false alarm elsewhere stays possible: pure
        // noise fires in under 1 % of series, see pure_noise_rarely_fires.)
        let cps = detect(&s, &Options::default());
        let near: Vec<usize> = cps.iter().map(|c| c.index).filter(|i| i.abs_diff(at) <= 5).collect();
        prop_assert_eq!(near, vec![at], "{:?}", cps);
    }

    #[test]
    fn never_panics(series in proptest::collection::vec(
        proptest::collection::vec(prop_oneof![
            -1e3f64..1e3,
            Just(0.0), Just(f64::NAN), Just(f64::INFINITY), Just(-1e300), Just(1e300),
        ], 0..4), 0..60), deterministic in proptest::bool::ANY) {
        let o = Options { deterministic, ..Options::default() };
        let cps = detect(&series, &o);
        prop_assert!(cps.windows(2).all(|w| w[0].index < w[1].index));
        prop_assert!(cps.iter().all(|c| c.index < series.len() && (0.0..=1.0).contains(&c.p_value)));
    }
}

mod regressions {
    use super::super::*;
    use super::at;
    use crate::stats::compare::SplitMix64;

    /// proptest found: a small blip just before a 10 sigma step made the segmentation put a
    /// boundary there too; dropping both failing boundaries at once lost the real step.
    #[test]
    fn blip_next_to_a_big_step_does_not_hide_it() {
        let mut rng = SplitMix64::new(215215);
        let s: Vec<Vec<f64>> = (0..67)
            .map(|i| vec![if i < 48 { 100.0 } else { 90.0 } + rng.normal()])
            .collect();
        let idx = at(&detect(&s, &Options::default()));
        assert_eq!(idx, vec![48]);
    }
}

/// The close steps: 24 commits of 5 runs at cv 0.5 %, +4 % then +3 % 2, 3, 5 or 8
/// commits later (as `../shared/bench/cpd/close_steps.py` makes them).
fn close_steps(seed: u64) -> (Vec<Vec<f64>>, [usize; 2]) {
    let mut rng = SplitMix64::new(seed);
    let gap = [2, 3, 5, 8][seed as usize % 4];
    let p1 = 4 + (rng.next_u64() % (24 - gap - 8 + 1) as u64) as usize;
    let p2 = p1 + gap;
    let s = (0..24)
        .map(|i| {
            let b = 1000.0 * if i >= p1 { 1.04 } else { 1.0 } * if i >= p2 { 1.03 } else { 1.0 };
            (0..5).map(|_| b * (1.0 + 0.005 * rng.normal())).collect()
        })
        .collect();
    (s, [p1, p2])
}

mod model {
    use super::super::*;
    use super::{at, close_steps, noisy};
    use crate::stats::compare::SplitMix64;
    use proptest::prelude::*;

    #[test]
    fn close_steps_are_both_found_at_their_commits() {
        let mut missed = Vec::new();
        let mut false_points = 0;
        for seed in 0..80 {
            let (s, truth) = close_steps(seed);
            let found = at(&detect(&s, &Options::default()));
            false_points += found.iter().filter(|i| !truth.contains(i)).count();
            if found != truth {
                missed.push((seed, truth, found));
            }
        }
        assert!(missed.len() <= 1, "{missed:?}");
        assert!(false_points <= 1, "{false_points} false change points");
    }

    /// A step's commit and size do not depend on the range asked, as long as it holds the
    /// step's two neighbouring levels; a commit added at the new end never moves a step.
    #[test]
    fn the_same_step_in_every_range_that_holds_its_levels() {
        for seed in 0..20u64 {
            let mut rng = SplitMix64::new(seed);
            let s: Vec<Vec<f64>> = (0..23)
                .map(|i| {
                    let b =
                        1000.0 * if i >= 9 { 1.04 } else { 1.0 } * if i >= 12 { 1.03 } else { 1.0 };
                    (0..5).map(|_| b * (1.0 + 0.005 * rng.normal())).collect()
                })
                .collect();
            let whole = detect(&s, &Options::default());
            assert_eq!(at(&whole), vec![9, 12], "seed {seed}: {whole:?}");
            for n in 13..=23 {
                let part = detect(&s[..n], &Options::default());
                assert_eq!(at(&part), vec![9, 12], "seed {seed}, first {n}: {part:?}");
                // (Runs beyond 3 σ of their commit's median are clipped, σ of the range asked:
                // a size moves by under 0.01 percentage points.)
                let same = |a: f64, b: f64| (a - b).abs() < 1e-4;
                assert!(
                    same(part[0].rel_change, whole[0].rel_change),
                    "seed {seed}, first {n}"
                );
                if n >= 22 {
                    assert!(
                        same(part[1].rel_change, whole[1].rel_change),
                        "seed {seed}, first {n}"
                    );
                }
            }
            for a in 0..=8 {
                let part = detect(&s[a..], &Options::default());
                assert_eq!(
                    at(&part),
                    vec![9 - a, 12 - a],
                    "seed {seed}, from {a}: {part:?}"
                );
                assert!(
                    (part[1].rel_change - whole[1].rel_change).abs() < 1e-4,
                    "seed {seed}, from {a}: {part:?} {whole:?}"
                );
            }
        }
    }

    fn with_windows(s: &[Vec<f64>], window: impl Fn(usize, usize) -> u64) -> Runs {
        Runs {
            commits: s
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    r.iter()
                        .enumerate()
                        .map(|(k, &value)| Obs {
                            value,
                            window: window(i, k),
                            machine: 0,
                        })
                        .collect()
                })
                .collect(),
            ..Runs::default()
        }
    }

    /// Interleaved rounds on a drifting machine: each round (window) moves every commit's run
    /// by its own amount, up to 6 % where the steps are 3 %. With the windows the drift is
    /// removed and the steps found at their commits; without them, the drift hides them.
    #[test]
    fn windows_tell_steps_from_drift() {
        for seed in 0..20u64 {
            let mut rng = SplitMix64::new(seed);
            let effect: Vec<f64> = (0..5)
                .map(|r| 0.015 * r as f64 + 0.01 * rng.normal())
                .collect();
            let s: Vec<Vec<f64>> = (0..30)
                .map(|i| {
                    let b = 1000.0
                        * if i >= 11 { 1.03 } else { 1.0 }
                        * if i >= 14 { 1.03 } else { 1.0 };
                    (0..5)
                        .map(|r| b * (1.0 + effect[r]) * (1.0 + 0.002 * rng.normal()))
                        .collect()
                })
                .collect();
            let d = detect_runs(with_windows(&s, |_, r| 100 + r as u64), &Options::default());
            assert_eq!(at(&d.points), vec![11, 14], "seed {seed}: {d:?}");
            for c in &d.points {
                assert!((c.rel_change - 0.03).abs() < 0.005, "seed {seed}: {c:?}");
            }
            // No step, the same drift: nothing.
            let flat: Vec<Vec<f64>> = (0..30)
                .map(|_| {
                    (0..5)
                        .map(|r| 1000.0 * (1.0 + effect[r]) * (1.0 + 0.002 * rng.normal()))
                        .collect()
                })
                .collect();
            let d = detect_runs(
                with_windows(&flat, |_, r| 100 + r as u64),
                &Options::default(),
            );
            assert!(d.points.is_empty(), "seed {seed}: {d:?}");
        }
    }

    /// Three builds, each shown on the 7 or 8 commits it was built for (the demo's history
    /// with every commit measured): the two differences of neighbouring levels are the steps
    /// themselves, no measure of jitter between commits. The step is found from the runs'
    /// noise, with or without a commit of no runs (a broken build) among the first build's.
    #[test]
    fn three_builds_over_many_commits_show_their_step() {
        let mut rng = SplitMix64::new(11);
        let builds = [(1000.0, 10, 7), (1000.0, 30, 8), (1085.0, 35, 8)];
        for gap in [false, true] {
            let (mut commits, mut share, mut joined) = (Vec::new(), Vec::new(), Vec::new());
            for (b, &(level, runs, k)) in builds.iter().enumerate() {
                let r = noisy(&[level], runs, 10.0, rng.next_u64())[0].clone();
                for j in 0..k {
                    if gap && b == 0 && j == 4 {
                        commits.push(Vec::new());
                        share.push(1.0);
                        joined.push(false);
                    }
                    commits.push(r.clone());
                    share.push(1.0 / k as f64);
                    joined.push(j > 0 && !(gap && b == 0 && j == 4));
                }
            }
            let runs = Runs {
                share,
                joined,
                ..Runs::plain(&commits)
            };
            let d = detect_runs(runs, &Options::default());
            let first_c = 15 + usize::from(gap);
            assert_eq!(at(&d.points), vec![first_c], "gap {gap}: {d:?}");
            assert!((d.points[0].rel_change - 0.085).abs() < 0.01, "{d:?}");
        }
    }

    /// A regression reverted to the same build: the commits after the revert show the first
    /// build's runs (their share of them halved, as the first build's commits'), and the
    /// return is a step of its own. No step lies between two commits of one build.
    #[test]
    fn a_revert_to_an_identical_build_is_a_step_back() {
        let mut rng = SplitMix64::new(7);
        let first: Vec<Vec<f64>> = (0..8)
            .map(|_| noisy(&[1000.0], 5, 2.0, rng.next_u64())[0].clone())
            .collect();
        let mut commits: Vec<Vec<f64>> = first.clone();
        commits.extend((0..8).map(|_| noisy(&[1080.0], 5, 2.0, rng.next_u64())[0].clone()));
        // The revert's commits: the first build's runs again (no runs of their own).
        commits.extend(first.iter().take(6).cloned());
        let n = commits.len();
        let mut runs = Runs::plain(&commits);
        runs.share = (0..n)
            .map(|i| if !(6..16).contains(&i) { 0.5 } else { 1.0 })
            .collect();
        let d = detect_runs(runs.clone(), &Options::default());
        assert_eq!(at(&d.points), vec![8, 16], "{d:?}");
        assert!(d.points[1].rel_change < -0.06, "{d:?}");
        // Commits 7 and 8 one build: the step cannot lie between them; it is at 7 or 9.
        runs.joined = (0..n).map(|i| i == 8).collect();
        let d = detect_runs(runs, &Options::default());
        assert!(!at(&d.points).contains(&8), "{d:?}");
    }

    /// Cron rounds each at its own moment, one run each, two rounds a level: the levels cannot
    /// be told from outliers or drift by the rounds alone, but a move beyond the threshold is
    /// never silent: an undecided step, for `run` or `triage` to measure.
    #[test]
    fn sparse_rounds_are_never_silent() {
        let opts = Options {
            threshold: Threshold::Relative(0.05),
            ..Options::default()
        };
        for levels in [
            vec![22.6, 22.9, 42.9, 42.7, 73.7, 73.4],
            vec![100.0, 100.8, 99.6, 100.3, 110.4, 109.9],
        ] {
            let s: Vec<Vec<f64>> = levels.iter().map(|&v| vec![v]).collect();
            let d = detect_all(&s, &opts);
            let mut seen: Vec<usize> = at(&d.points);
            seen.extend(d.undecided.iter().map(|u| u.index));
            seen.sort_unstable();
            let want: Vec<usize> = (1..levels.len())
                .filter(|&j| (levels[j] / levels[j - 1] - 1.0).abs() > 0.05)
                .collect();
            assert_eq!(seen, want, "{levels:?}: {d:?}");
        }
    }

    /// A C library's counts under Cachegrind: nearly exact (runs within a few hundred of
    /// 10^8), commits move a little each, and a +78.6 % step is undone by −38.1 % two commits
    /// later, with a −9.9 % step further on. Every large step at its commit, nothing else.
    #[test]
    fn nearly_exact_counts_show_every_large_step() {
        let mut rng = SplitMix64::new(3);
        let mut level = 1.0e8;
        let mut s = Vec::new();
        for i in 0..54 {
            level *= match i {
                20 => 1.786,
                22 => 0.619,
                40 => 0.901,
                _ => 1.0 + 0.001 * rng.normal(),
            };
            s.push(
                (0..3)
                    .map(|_| level + 200.0 * rng.normal())
                    .collect::<Vec<f64>>(),
            );
        }
        let opts = Options {
            threshold: Threshold::Relative(0.02),
            ..Options::default()
        };
        let d = detect_all(&s, &opts);
        assert_eq!(at(&d.points), vec![20, 22, 40], "{d:?}");
        assert!(d.undecided.is_empty(), "{d:?}");
    }

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(48))]
        /// Permuting the runs of a commit, or renaming the windows, changes nothing; the same
        /// input gives the same output.
        #[test]
        fn order_of_runs_and_names_of_windows_change_nothing(seed in 0u64..1_000_000, shift in 1u64..1000) {
            let (s, _) = close_steps(seed);
            let runs = with_windows(&s, |_, r| 10 + r as u64);
            let d = detect_runs(runs.clone(), &Options::default());
            prop_assert_eq!(&d, &detect_runs(runs.clone(), &Options::default()));
            let mut rng = SplitMix64::new(seed ^ 0x5eed);
            let mut shuffled = runs.clone();
            for c in &mut shuffled.commits {
                for i in (1..c.len()).rev() {
                    c.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
                }
                for o in c.iter_mut() {
                    o.window = o.window * 7919 + shift;
                }
            }
            let e = detect_runs(shuffled, &Options::default());
            prop_assert_eq!(at(&d.points), at(&e.points));
            for (a, b) in d.points.iter().zip(&e.points) {
                prop_assert!((a.rel_change - b.rel_change).abs() < 1e-12);
            }
        }

        /// A commit added at the new end never moves a step found before it.
        #[test]
        fn a_new_commit_never_moves_an_earlier_step(seed in 0u64..1_000_000, up in proptest::bool::ANY) {
            let (mut s, truth) = close_steps(seed);
            let before = at(&detect(&s, &Options::default()));
            let mut rng = SplitMix64::new(seed);
            let last = s.last().map(|r| r[0]).unwrap_or(1000.0) * if up { 1.05 } else { 1.0 };
            s.push((0..5).map(|_| last * (1.0 + 0.005 * rng.normal())).collect());
            let after = at(&detect(&s, &Options::default()));
            prop_assert_eq!(&before, &truth.to_vec());
            prop_assert_eq!(&after[..2], &before[..]);
        }
    }
}
