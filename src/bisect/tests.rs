//! Unit and property tests of the bisection policy, on the simulated world of `sim`.

use super::sim::{Rng, World};
use super::types::*;
use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

struct Run {
    outcome: Outcome,
    builds: usize,
    runs: usize,
    probed: Vec<usize>,
}

fn drive(search: &mut Search, world: &mut World) -> Run {
    drive_jobs(search, world, 1).0
}

/// Through the real driver loop, `jobs` builds at once; also returns the driver's account.
fn drive_jobs(search: &mut Search, world: &mut World, jobs: usize) -> (Run, Driven) {
    let len = world.levels.len();
    let (outcome, d) = super::drive(search, world, len, jobs).expect("the simulation cannot fail");
    (
        Run {
            outcome,
            builds: d.builds,
            runs: d.runs,
            probed: search.probed().to_vec(),
        },
        d,
    )
}

fn step_levels(m: usize, steps: &[(usize, f64)]) -> Vec<f64> {
    (0..=m)
        .map(|p| {
            steps
                .iter()
                .filter(|(s, _)| p >= *s)
                .fold(1000.0, |l, (_, f)| l * (1.0 + f))
        })
        .collect()
}

fn noisy(repeats: usize) -> Params {
    Params {
        alpha: 0.01,
        threshold: Threshold::Relative(0.01),
        repeats,
        max_repeats: 30,
        deterministic: false,
        interleave: true,
        counted: false,
        tolerance: 0.0,
        max_runs: None,
    }
}

/// Stored samples of `pos` taken in `window` (as `run`'s interleaved rounds store them).
fn stored_in(search: &mut Search, window: u64, pos: usize, values: &[f64]) {
    let s: Vec<Stored> = values
        .iter()
        .enumerate()
        .map(|(i, &value)| Stored {
            value,
            window,
            moment: i as u32,
            shared: false,
        })
        .collect();
    search.add_stored(pos, &s);
}

/// Answer one action of `search` from `w` by hand (what the driver does, without builds).
fn answer(search: &mut Search, w: &mut World, a: &Action) {
    match a {
        Action::Measure { pos, runs } => {
            let v: Vec<f64> = (0..*runs).map(|_| w.sample(*pos)).collect();
            search.add_samples(*pos, &v);
        }
        Action::Window {
            positions,
            runs,
            window,
        } => {
            let got = w.measure_window(positions, *runs, *window).unwrap();
            let values: Vec<(usize, Vec<f64>)> =
                positions.iter().copied().zip(got.values).collect();
            search.add_window(got.window, got.first_moment, got.rounds, &values);
        }
        Action::Verify {
            parent,
            culprit,
            runs,
        } => {
            let got = w.measure_window(&[*parent, *culprit], *runs, None).unwrap();
            search.record_verify(got.window, &got.values[0], &got.values[1]);
        }
        Action::Done(_) => {}
    }
}

fn det() -> Params {
    Params {
        deterministic: true,
        ..noisy(1)
    }
}

fn ceil_log2(m: usize) -> usize {
    (usize::BITS - (m.max(1) - 1).leading_zeros()) as usize
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    Right,
    Wrong,
    Missed,
    Inconclusive,
}

/// Right: every named culprit sits on a true move and its candidates hold a true step.
fn judge(o: &Outcome, levels: &[f64]) -> Judged {
    let moved = |p: usize| p > 0 && levels[p] != levels[p - 1];
    let any_step = (1..levels.len()).any(moved);
    match o {
        Outcome::Culprits(cs) => {
            let ok = !cs.is_empty()
                && cs.iter().all(|c| {
                    levels[c.parent] != levels[c.pos] && c.candidates.iter().any(|&p| moved(p))
                });
            if ok {
                Judged::Right
            } else {
                Judged::Wrong
            }
        }
        Outcome::NoChange { .. } if any_step => Judged::Missed,
        Outcome::NoChange { .. } => Judged::Right,
        Outcome::Inconclusive { .. } => Judged::Inconclusive,
    }
}

/// What people do today: `git bisect run` with a one-shot script, one run per commit, "new if
/// value > old_value * (1 + threshold / 2)" with the threshold set to the step they are chasing.
fn git_bisect_run(world: &mut World, step: f64) -> (usize, usize) {
    let m = world.levels.len() - 1;
    let old_value = world.sample(0);
    let cut = old_value * (1.0 + step / 2.0);
    let (mut lo, mut hi, mut runs) = (0, m, 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        runs += 1;
        if world.sample(mid) > cut {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (hi, runs)
}

/// `git bisect run perfbisect step`: the ends measured `repeats` times, each probe classified
/// with [`classify`] (old and new samples known, as from the store and `refs/bisect/bad`);
/// while unknown, the probe's runs double up to `max_repeats` and the ends are topped up to
/// as many runs as the probe (kept for later probes); then exit 125 (skip: git bisect moves
/// to the untested commit nearest the middle). Returns the named commit (None when only
/// skipped commits are left) and the runs.
fn git_bisect_step(world: &mut World, params: &Params) -> (Option<usize>, usize) {
    let m = world.levels.len() - 1;
    let r = params.repeats;
    let mut old: Vec<f64> = (0..r).map(|_| world.sample(0)).collect();
    let mut new: Vec<f64> = (0..r).map(|_| world.sample(m)).collect();
    let (mut lo, mut hi, mut runs) = (0, m, 2 * r);
    let mut skipped = vec![false; m + 1];
    loop {
        let mid = lo + (hi - lo) / 2;
        let Some(x) = (lo + 1..hi)
            .filter(|&p| !skipped[p])
            .min_by_key(|&p| (p.abs_diff(mid), p))
        else {
            break;
        };
        let mut xs: Vec<f64> = (0..r).map(|_| world.sample(x)).collect();
        runs += r;
        let class = loop {
            let c = classify(&old, Some(&new), &xs, params);
            if c != Class::Unknown || xs.len() >= params.max_repeats {
                break c;
            }
            let more = xs.len().min(params.max_repeats - xs.len());
            xs.extend((0..more).map(|_| world.sample(x)));
            runs += more;
            while old.len() < xs.len() {
                old.push(world.sample(0));
                runs += 1;
            }
            while new.len() < xs.len() {
                new.push(world.sample(m));
                runs += 1;
            }
        };
        match class {
            Class::NewLike => hi = x,
            Class::OldLike => lo = x,
            Class::Unknown => skipped[x] = true,
        }
    }
    ((hi - lo == 1).then_some(hi), runs)
}

#[test]
fn deterministic_takes_git_bisect_probes_and_finds_every_step_position() {
    for m in [1usize, 2, 3, 5, 16, 17, 100, 1024] {
        let positions: Vec<usize> = if m <= 20 {
            (1..=m).collect()
        } else {
            vec![1, 2, m / 3, m / 2, m - 1, m]
        };
        for s in positions {
            let levels = step_levels(m, &[(s, 0.05)]);
            let mut w = World::new(levels.clone(), 0.0, 1);
            let mut search = Search::new(m + 1, det());
            let r = drive(&mut search, &mut w);
            match &r.outcome {
                Outcome::Culprits(cs) => {
                    assert_eq!(cs.len(), 1);
                    assert_eq!(cs[0].pos, s, "m={m}");
                    assert_eq!(cs[0].parent, s - 1);
                    assert_eq!(cs[0].candidates, vec![s]);
                    assert!(cs[0].verified);
                }
                o => panic!("m={m} s={s}: {o:?}"),
            }
            // Exactly `git bisect`'s probes: its midpoint rule, plus the two ends.
            let (mut lo, mut hi, mut probes) = (0, m, 0);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                probes += 1;
                if mid >= s {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            assert_eq!(r.builds, probes + 2, "m={m} s={s}");
            assert!(r.builds <= ceil_log2(m) + 2);
            assert_eq!(r.builds, r.probed.len());
        }
    }
}

#[test]
fn zero_spread_ends_switch_to_one_run_per_commit() {
    let m = 64;
    let levels = step_levels(m, &[(40, 0.02)]);
    let mut w = World::new(levels, 0.0, 1);
    let mut search = Search::new(m + 1, noisy(5));
    let r = drive(&mut search, &mut w);
    assert!(search.is_deterministic());
    assert!(matches!(&r.outcome, Outcome::Culprits(c) if c[0].pos == 40));
    // 5 runs on each end, then one per probe, one each for the verification.
    assert_eq!(r.runs, 10 + ceil_log2(m) + 2);
}

#[test]
fn deterministic_change_below_threshold_is_no_change() {
    let levels = step_levels(32, &[(10, 0.001)]);
    let mut w = World::new(levels, 0.0, 1);
    let mut search = Search::new(33, det());
    let r = drive(&mut search, &mut w);
    assert!(
        matches!(r.outcome, Outcome::NoChange { .. }),
        "{:?}",
        r.outcome
    );
    assert_eq!(r.outcome.verdict(), "no-change");
}

#[test]
fn creep_of_small_steps_is_inconclusive_not_a_culprit() {
    // Eight +0.3 % steps: together past the 1 % threshold, none alone.
    let steps: Vec<(usize, f64)> = (1..=8).map(|i| (i * 4, 0.003)).collect();
    let levels = step_levels(32, &steps);
    let mut w = World::new(levels, 0.0, 1);
    let mut search = Search::new(33, det());
    let r = drive(&mut search, &mut w);
    match r.outcome {
        Outcome::Inconclusive { best_guess, .. } => assert!(best_guess.is_some()),
        o => panic!("{o:?}"),
    }
}

#[test]
fn unbuildable_neighbours_give_all_candidates() {
    let m = 32;
    let levels = step_levels(m, &[(17, 0.05)]);
    let mut w = World::new(levels, 0.0, 1);
    w.unbuildable[16] = true;
    w.unbuildable[17] = true;
    let mut search = Search::new(m + 1, det());
    let r = drive(&mut search, &mut w);
    match &r.outcome {
        Outcome::Culprits(cs) => {
            assert_eq!(cs[0].pos, 18);
            assert_eq!(cs[0].parent, 15);
            assert_eq!(cs[0].candidates, vec![16, 17, 18]);
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn unbuildable_new_end_is_nudged_down() {
    let m = 16;
    let levels = step_levels(m, &[(5, 0.05)]);
    let mut w = World::new(levels, 0.0, 1);
    w.unbuildable[16] = true;
    w.unbuildable[15] = true;
    let mut search = Search::new(m + 1, det());
    let r = drive(&mut search, &mut w);
    assert!(matches!(&r.outcome, Outcome::Culprits(c) if c[0].pos == 5));
    assert!(!search.notes().is_empty());
}

/// A search that never started because an end does not build names that end (its caller
/// fails with the build's error); one the runs decided, or that steps around unbuildable
/// commits, names none.
#[test]
fn an_unbuilt_end_is_named_only_when_the_search_could_not_start() {
    let m = 8;
    let levels = step_levels(m, &[(5, 0.05)]);
    // The old end does not build (and the new end neither).
    let mut w = World::new(levels.clone(), 0.0, 1);
    w.unbuildable = vec![true; m + 1];
    let mut search = Search::new(m + 1, det());
    let r = drive(&mut search, &mut w);
    assert!(matches!(r.outcome, Outcome::Inconclusive { .. }));
    assert_eq!(search.unbuilt_end(), Some(0));
    // Only the old end does not build.
    let mut w = World::new(levels.clone(), 0.0, 1);
    w.unbuildable[0] = true;
    let mut search = Search::new(m + 1, det());
    drive(&mut search, &mut w);
    assert_eq!(search.unbuilt_end(), Some(0));
    // The old end is stored; nothing after it builds: the new end is named.
    let mut search = Search::new(m + 1, det());
    stored_in(&mut search, 3, 0, &[100.0]);
    for p in 0..=m {
        search.mark_unbuildable(p);
    }
    assert!(matches!(search.next_action(), Action::Done(_)));
    assert_eq!(search.unbuilt_end(), Some(m));
    // An unbuildable new end is stepped around: the search decides, nothing is named.
    let mut w = World::new(levels, 0.0, 1);
    w.unbuildable[m] = true;
    let mut search = Search::new(m + 1, det());
    let r = drive(&mut search, &mut w);
    assert!(matches!(r.outcome, Outcome::Culprits(_)), "{:?}", r.outcome);
    assert_eq!(search.unbuilt_end(), None);
}

#[test]
fn two_steps_are_both_reported_largest_first() {
    let m = 64;
    let levels = step_levels(m, &[(20, 0.03), (45, 0.06)]);
    let mut w = World::new(levels.clone(), 0.0, 1);
    let mut search = Search::new(m + 1, det());
    let r = drive(&mut search, &mut w);
    match &r.outcome {
        Outcome::Culprits(cs) => {
            let pos: Vec<usize> = cs.iter().map(|c| c.pos).collect();
            assert_eq!(pos, vec![45, 20]);
        }
        o => panic!("{o:?}"),
    }
    // The same with noise: steps of 10× the noise each.
    let levels = step_levels(m, &[(20, 0.2), (45, 0.1)]);
    let mut right = 0;
    for seed in 0..20 {
        let mut w = World::new(levels.clone(), 0.01, seed);
        let mut search = Search::new(m + 1, noisy(5));
        let r = drive(&mut search, &mut w);
        assert_ne!(judge(&r.outcome, &levels), Judged::Wrong, "{:?}", r.outcome);
        if let Outcome::Culprits(cs) = &r.outcome {
            if cs.len() == 2 && cs[0].pos == 20 && cs[1].pos == 45 {
                right += 1;
            }
        }
    }
    assert!(right >= 16, "both steps found in {right}/20");
}

#[test]
fn noisy_single_step_is_found_within_budget() {
    for m in [16usize, 128, 1024] {
        let mut good = 0;
        let n = 40;
        for seed in 0..n {
            let mut rng = Rng(seed ^ 0xABCD);
            let s = 1 + rng.below(m);
            let levels = step_levels(m, &[(s, 0.06)]);
            let mut w = World::new(levels.clone(), 0.02, seed);
            let mut search = Search::new(m + 1, noisy(5));
            let r = drive(&mut search, &mut w);
            let j = judge(&r.outcome, &levels);
            assert_ne!(j, Judged::Wrong, "m={m} seed={seed}: {:?}", r.outcome);
            if j == Judged::Right && r.builds <= ceil_log2(m) + 2 {
                good += 1;
            }
        }
        assert!(good * 100 >= 95 * n, "m={m}: {good}/{n}");
    }
}

#[test]
fn no_step_says_no_change() {
    let levels = step_levels(128, &[]);
    let mut no_change = 0;
    // 2 % noise, a 3 % threshold: 30 runs each can see it.
    let params = Params {
        threshold: Threshold::Relative(0.03),
        ..noisy(5)
    };
    for seed in 0..20 {
        let mut w = World::new(levels.clone(), 0.02, seed);
        let mut search = Search::new(129, params);
        let r = drive(&mut search, &mut w);
        assert_ne!(judge(&r.outcome, &levels), Judged::Wrong);
        if let Outcome::NoChange { min_detectable, .. } = r.outcome {
            assert!(min_detectable > 0.0 && min_detectable <= 0.03);
            no_change += 1;
        }
    }
    assert!(no_change >= 17, "{no_change}/20");
}

#[test]
fn no_change_is_only_said_when_the_runs_could_have_seen_the_threshold() {
    // 2 % noise against a 1 % threshold: even 30 runs each could only see about 1.8 %, so
    // the honest answer is "inconclusive", with that number, never "no change".
    let levels = step_levels(128, &[]);
    for seed in 0..10 {
        let mut w = World::new(levels.clone(), 0.02, seed);
        let mut search = Search::new(129, noisy(5));
        let r = drive(&mut search, &mut w);
        match &r.outcome {
            Outcome::Inconclusive { reason, .. } => {
                assert!(
                    reason.contains("show one reliably (80 % of the time) only from"),
                    "{reason}"
                );
                let mdc = search.min_detectable().unwrap();
                assert!(mdc > 0.01, "{mdc}");
            }
            Outcome::NoChange { min_detectable, .. } => {
                assert!(*min_detectable <= 0.01, "{min_detectable}")
            }
            o => panic!("{o:?}"),
        }
        // It measured more before saying so: up to max_repeats each.
        assert!(r.runs >= 2 * 30, "{} runs", r.runs);
    }
}

#[test]
fn stored_samples_are_used_before_building() {
    let m = 64;
    let levels = step_levels(m, &[(30, 0.1)]);
    let mut w = World::new(levels.clone(), 0.01, 3);
    let mut search = Search::new(m + 1, noisy(5));
    // `run` measured every 8th commit, in interleaved rounds (one window).
    for p in (0..=m).step_by(8) {
        let s: Vec<f64> = (0..5).map(|_| w.sample(p)).collect();
        stored_in(&mut search, 42, p, &s);
    }
    let r = drive(&mut search, &mut w);
    assert!(matches!(&r.outcome, Outcome::Culprits(c) if c[0].pos == 30));
    // Only commits between the stored 24 and 32 need building (24 and 32 themselves as the
    // new windows' anchors, and a stored commit whose window must be topped up).
    assert!(r
        .probed
        .iter()
        .all(|&p| p % 8 == 0 || (25..32).contains(&p)));
    assert!(r.builds <= 7, "{} builds", r.builds);
}

#[test]
fn unbuildable_culprit_with_stored_samples_is_only_a_guess() {
    // Cron samples exist for every commit, but nothing can be built any more.
    let m = 8;
    let mut search = Search::new(m + 1, noisy(5));
    for p in 0..=m {
        let v = if p >= 6 { 110.0 } else { 100.0 };
        stored_in(&mut search, 3, p, &[v, v + 0.5, v - 0.5, v + 0.2, v - 0.3]);
        search.mark_unbuildable(p);
    }
    match search.next_action() {
        Action::Done(Outcome::Inconclusive {
            best_guess: Some(c),
            ..
        }) => {
            assert_eq!((c.pos, c.parent), (6, 5));
            assert!(!c.verified);
        }
        a => panic!("{a:?}"),
    }
}

#[test]
fn failed_runs_as_nan_are_tolerated() {
    let m = 32;
    let levels = step_levels(m, &[(20, 0.1)]);
    let mut w = World::new(levels, 0.01, 9);
    let mut search = Search::new(m + 1, noisy(5));
    let mut i = 0;
    let outcome = loop {
        match search.next_action() {
            Action::Measure { pos, runs } => {
                let v: Vec<f64> = (0..runs)
                    .map(|_| {
                        i += 1;
                        if i % 4 == 0 {
                            f64::NAN
                        } else {
                            w.sample(pos)
                        }
                    })
                    .collect();
                search.add_samples(pos, &v);
            }
            Action::Done(o) => break o,
            a => answer(&mut search, &mut w, &a),
        }
    };
    assert!(
        matches!(&outcome, Outcome::Culprits(c) if c[0].pos == 20),
        "{outcome:?}"
    );
}

#[test]
fn interval_narrows_as_the_search_goes() {
    let m = 64;
    let mut search = Search::new(m + 1, det());
    assert_eq!(search.interval(), None);
    search.add_samples(0, &[100.0]);
    search.add_samples(m, &[110.0]);
    assert_eq!(search.next_action(), Action::Measure { pos: 32, runs: 1 });
    assert_eq!(search.interval(), Some((0, 64)));
    search.add_samples(32, &[110.0]);
    assert_eq!(search.next_action(), Action::Measure { pos: 16, runs: 1 });
    assert_eq!(search.interval(), Some((0, 32)));
}

#[test]
fn cached_builds_are_preferred() {
    let m = 64;
    let mut search = Search::new(m + 1, det());
    search.add_samples(0, &[100.0]);
    search.add_samples(m, &[110.0]);
    search.mark_built(28);
    assert_eq!(search.next_action(), Action::Measure { pos: 28, runs: 1 });
    let mut search = Search::new(m + 1, det());
    search.add_samples(0, &[100.0]);
    search.add_samples(m, &[110.0]);
    assert_eq!(search.next_action(), Action::Measure { pos: 32, runs: 1 });
}

#[test]
fn never_re_measures_what_it_has() {
    let m = 8;
    let mut search = Search::new(m + 1, noisy(5));
    for p in 0..=m {
        let v = if p >= 3 { 110.0 } else { 100.0 };
        stored_in(&mut search, 7, p, &[v, v + 0.5, v - 0.5, v + 0.2, v - 0.3]);
    }
    // Everything is stored, side by side in one window (`run`'s interleaved rounds): the only
    // thing left to run is the verification.
    match search.next_action() {
        Action::Verify {
            parent: 2,
            culprit: 3,
            ..
        } => {}
        a => panic!("{a:?}"),
    }
}

#[test]
fn failed_verification_is_inconclusive() {
    let m = 16;
    let mut search = Search::new(m + 1, noisy(5));
    for p in 0..=m {
        let v = if p >= 9 { 110.0 } else { 100.0 };
        stored_in(&mut search, 7, p, &[v, v + 0.5, v - 0.5, v + 0.2, v - 0.3]);
    }
    let (mut asked, mut window) = (0, 100);
    loop {
        match search.next_action() {
            Action::Verify { runs, .. } => {
                asked += 1;
                window += 1;
                // The re-runs show no difference (the stored samples were misleading).
                let same: Vec<f64> = (0..runs).map(|i| 100.0 + (i % 3) as f64).collect();
                search.record_verify(window, &same, &same);
            }
            // The probes placed again after each back-off: measured as they were stored.
            Action::Window {
                positions, runs, ..
            } => {
                window += 1;
                let values: Vec<(usize, Vec<f64>)> = positions
                    .iter()
                    .map(|&p| {
                        let v = if p >= 9 { 110.0 } else { 100.0 };
                        (p, (0..runs).map(|i| v + 0.1 * (i % 3) as f64).collect())
                    })
                    .collect();
                search.add_window(window, 0, runs as u32, &values);
            }
            Action::Done(Outcome::Inconclusive { best_guess, .. }) => {
                assert_eq!(best_guess.map(|c| c.pos), Some(9));
                break;
            }
            a => panic!("{a:?}"),
        }
    }
    // Each back-off searched the pair's surroundings again and re-ran it again.
    let again = search
        .notes()
        .iter()
        .filter(|n| n.contains("again"))
        .count();
    assert_eq!(again, MAX_BACKOFFS as usize, "{:?}", search.notes());
    assert!(asked > again);
}

#[test]
fn small_steps_are_never_wrong() {
    // 1× the noise: inconclusive or missed is fine, a wrong commit is not.
    let m = 128;
    for seed in 0..20 {
        let mut rng = Rng(seed);
        let s = 1 + rng.below(m);
        let levels = step_levels(m, &[(s, 0.02)]);
        let mut w = World::new(levels.clone(), 0.02, seed);
        let mut search = Search::new(m + 1, noisy(5));
        let r = drive(&mut search, &mut w);
        assert_ne!(judge(&r.outcome, &levels), Judged::Wrong, "{:?}", r.outcome);
    }
}

#[test]
fn degenerate_inputs_do_not_panic() {
    for len in 0..4 {
        let mut s = Search::new(len, noisy(5));
        let mut steps = 0;
        while !matches!(s.next_action(), Action::Done(_)) {
            steps += 1;
            assert!(steps < 1000);
        }
    }
    // All unbuildable.
    let mut s = Search::new(5, noisy(5));
    for p in 0..5 {
        s.mark_unbuildable(p);
    }
    assert!(matches!(
        s.next_action(),
        Action::Done(Outcome::Inconclusive { .. })
    ));
    // Only NaN from every run.
    let mut s = Search::new(5, noisy(3));
    let mut n = 0;
    loop {
        match s.next_action() {
            Action::Measure { pos, runs } => s.add_samples(pos, &vec![f64::NAN; runs]),
            Action::Window {
                positions, runs, ..
            } => {
                let v: Vec<(usize, Vec<f64>)> = positions
                    .iter()
                    .map(|&p| (p, vec![f64::NAN; runs]))
                    .collect();
                s.add_window(5, 0, runs as u32, &v)
            }
            Action::Verify { runs, .. } => s.record_verify(6, &vec![f64::NAN; runs], &[]),
            Action::Done(o) => {
                assert!(matches!(o, Outcome::Inconclusive { .. }));
                break;
            }
        }
        n += 1;
        assert!(n < 1000);
    }
    // A caller that never answers.
    let mut s = Search::new(5, noisy(3));
    let mut n = 0;
    while !matches!(s.next_action(), Action::Done(_)) {
        n += 1;
        assert!(n < 1000);
    }
    // Silly parameters.
    let p = Params {
        alpha: f64::NAN,
        threshold: Threshold::Absolute(f64::NAN),
        repeats: 0,
        max_repeats: 0,
        deterministic: false,
        interleave: true,
        counted: false,
        tolerance: 0.0,
        max_runs: Some(0),
    };
    let levels = step_levels(8, &[(3, 0.5)]);
    let mut w = World::new(levels, 0.01, 1);
    let mut s = Search::new(9, p);
    drive(&mut s, &mut w);
}

#[test]
fn classify_for_git_bisect_run() {
    let p = noisy(5);
    let old = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1];
    let new = [110.0, 111.0, 109.0, 110.5, 109.5, 110.2, 109.8, 110.1];
    assert_eq!(classify(&old, Some(&new), &new, &p), Class::NewLike);
    assert_eq!(classify(&old, Some(&new), &old, &p), Class::OldLike);
    assert_eq!(classify(&old, None, &new, &p), Class::NewLike);
    let p2 = Params {
        threshold: Threshold::Relative(0.05),
        ..p
    };
    assert_eq!(classify(&old, None, &old, &p2), Class::OldLike);
    // A threshold below the noise: unknown until max_repeats, then old-like if nothing shows.
    let noisy_old: Vec<f64> = (0..30)
        .map(|i| 100.0 + ((i * 7) % 11) as f64 - 5.0)
        .collect();
    let noisy_probe: Vec<f64> = (0..30)
        .map(|i| 100.0 + ((i * 5) % 11) as f64 - 5.0)
        .collect();
    assert_eq!(
        classify(&noisy_old, None, &noisy_probe[..10], &p),
        Class::Unknown
    );
    assert_eq!(classify(&noisy_old, None, &noisy_probe, &p), Class::OldLike);
    // Too few runs to tell: unknown, not a guess.
    assert_eq!(classify(&old, Some(&new), &[105.0], &p), Class::Unknown);
    assert_eq!(classify(&[], None, &[1.0], &p), Class::Unknown);
    assert_eq!(classify(&[f64::NAN], None, &[1.0], &p), Class::Unknown);
    assert_eq!(Class::OldLike.exit_code(), 0);
    assert_eq!(Class::NewLike.exit_code(), 1);
    assert_eq!(Class::Unknown.exit_code(), 125);
    // Deterministic: plain comparisons.
    assert_eq!(classify(&[3064.0], None, &[3104.0], &det()), Class::NewLike);
    assert_eq!(classify(&[3064.0], None, &[3064.0], &det()), Class::OldLike);
    assert_eq!(
        classify(&[3064.0, 3064.0], None, &[3064.0], &noisy(5)),
        Class::OldLike
    );
}

/// Fixed seed so that CI runs are reproducible; `BISECT_PROPTEST_CASES` and
/// `BISECT_PROPTEST_SEED` widen the search by hand.
fn fixed(cases: u32) -> ProptestConfig {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    ProptestConfig {
        cases: env("BISECT_PROPTEST_CASES").map_or(cases, |c| c as u32),
        rng_seed: RngSeed::Fixed(env("BISECT_PROPTEST_SEED").unwrap_or(0x5EED)),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(fixed(48))]

    /// Deterministic metric with arbitrary steps and unbuildable commits: every named
    /// culprit moved the metric and its candidates hold the true step.
    #[test]
    fn prop_deterministic_never_names_an_innocent_commit(
        m in 1usize..200,
        steps in proptest::collection::vec((1usize..200, -0.2f64..0.2), 0..4),
        broken in proptest::collection::vec(1usize..200, 0..20),
    ) {
        let steps: Vec<(usize, f64)> =
            steps.into_iter().filter(|(s, _)| *s <= m).collect();
        let levels = step_levels(m, &steps);
        let mut w = World::new(levels.clone(), 0.0, 1);
        for b in broken.into_iter().filter(|&b| b <= m) {
            w.unbuildable[b] = true;
        }
        let mut search = Search::new(m + 1, det());
        let r = drive(&mut search, &mut w);
        if let Outcome::Culprits(cs) = &r.outcome {
            for c in cs {
                prop_assert!(levels[c.parent] != levels[c.pos]);
                prop_assert!(c.candidates.iter().any(|&p| levels[p] != levels[p - 1]));
                prop_assert!(c.parent < c.pos);
            }
        }
    }

    /// Noisy metric, steps of 3–10× the noise, sparse unbuildable commits, outliers: never a
    /// culprit that did not move, and the same seed gives the same answer.
    #[test]
    fn prop_noisy_is_sound_and_deterministic(
        m in 1usize..300,
        k in 3.0f64..10.0,
        seed in any::<u64>(),
        broken in proptest::collection::vec(1usize..300, 0..5),
        stored in proptest::collection::vec(0usize..300, 0..10),
        cached in proptest::collection::vec(0usize..300, 0..10),
    ) {
        let mut rng = Rng(seed);
        let s = 1 + rng.below(m);
        let levels = step_levels(m, &[(s, k * 0.02)]);
        let run = || {
            let mut w = World::new(levels.clone(), 0.02, seed);
            let mut search = Search::new(m + 1, noisy(5));
            for &b in broken.iter().filter(|&&b| b <= m) {
                w.unbuildable[b] = true;
            }
            for &p in stored.iter().filter(|&&p| p <= m) {
                let v: Vec<f64> = (0..5).map(|_| w.sample(p)).collect();
                search.add_samples(p, &v);
            }
            for &p in &cached {
                search.mark_built(p);
            }
            drive(&mut search, &mut w)
        };
        let r1 = run();
        let r2 = run();
        prop_assert_eq!(&r1.outcome, &r2.outcome);
        prop_assert_eq!(&r1.probed, &r2.probed);
        prop_assert_ne!(judge(&r1.outcome, &levels), Judged::Wrong);
    }

    /// Arbitrary samples (NaN, infinities, zeros, huge values) never panic or hang.
    #[test]
    fn prop_no_panics_on_any_samples(
        len in 0usize..12,
        values in proptest::collection::vec(
            prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(0.0), -1e9f64..1e9],
            0..40),
        broken in proptest::collection::vec(0usize..12, 0..6),
        deterministic in any::<bool>(),
    ) {
        let params = Params { deterministic, ..noisy(3) };
        let mut s = Search::new(len, params);
        for &b in &broken {
            s.mark_unbuildable(b);
        }
        let mut i = 0;
        let mut next = |n: usize| -> Vec<f64> {
            (0..n).map(|_| { i += 1; values.get(i % values.len().max(1)).copied().unwrap_or(1.0) }).collect()
        };
        for _ in 0..2000 {
            match s.next_action() {
                Action::Measure { pos, runs } => { let v = next(runs); s.add_samples(pos, &v) }
                Action::Window { positions, runs, window } => {
                    let v: Vec<(usize, Vec<f64>)> = positions.iter().map(|&p| (p, next(runs))).collect();
                    s.add_window(window.map_or(9, |w| w.0), window.map_or(0, |w| w.1), runs as u32, &v)
                }
                Action::Verify { runs, .. } => { let a = next(runs); let b = next(runs); s.record_verify(11, &a, &b) }
                Action::Done(_) => return Ok(()),
            }
        }
        prop_assert!(false, "no termination");
    }
}

/// A number from the environment (to tune the simulations by hand), else `default`.
fn env_num(key: &str, default: f64) -> f64 {
    std::env::var(key)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `x` of `n` as a percentage, for the tables.
fn pct(x: usize, n: u64) -> String {
    format!("{:.0} %", 100.0 * x as f64 / n as f64)
}

/// At least `share` of `n`.
fn at_least(x: usize, n: u64, share: f64) -> bool {
    x as f64 >= share * n as f64
}

/// Simulated ranges (noise CV 2 %, 2 % outliers ×1.3, threshold 1 %, repeats 5, one step of
/// k× the noise at a seeded random position, m = 16, 128, 1024), then the harder scenarios of
/// [`scenario_table`]. Asserted for every row: no wrong culprit ever; with no step, a
/// no-change verdict in at least 80 % of the seeds; a step of 2× the noise found in at least
/// 80 %, of 3× or more in at least 90 %, within ⌈log2 m⌉ + 2 builds in at least 90 %. The
/// columns of the one-shot `git bisect run` and of `git bisect run perfbisect step` are for
/// comparison and not asserted. `SIM_SEEDS` (default 50), `SIM_CV`, `SIM_THRESHOLD` and
/// `SIM_REPEATS` change the setting (the shares are chosen for the defaults); every row is
/// computed before the assertion fails, and `--nocapture` prints the table:
/// `SIM_SEEDS=1000 cargo test --release --lib bisect::tests::simulation_table -- --nocapture`
#[test]
fn simulation_table() {
    let seeds = env_num("SIM_SEEDS", 50.0).max(1.0) as u64;
    let cv = env_num("SIM_CV", 0.02);
    let params = Params {
        threshold: Threshold::Relative(env_num("SIM_THRESHOLD", 0.01)),
        ..noisy(env_num("SIM_REPEATS", 5.0) as usize)
    };
    println!(
        "noise CV {cv}, {params:?}, outliers 2 % x1.3, {seeds} seeds per row, step at a random position"
    );
    println!("| m | step | perfbisect right | wrong | missed (no-change) | inconclusive | within ⌈log2 m⌉+2 builds | mean builds | mean runs | one-shot git bisect run: right | wrong | runs | git bisect run + `step`: right | wrong | runs |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut failures = Vec::new();
    for m in [16usize, 128, 1024] {
        for k in [0.0, 1.0, 2.0, 3.0, 5.0, 10.0] {
            let (mut right, mut wrong, mut missed, mut inc, mut budget) = (0, 0, 0, 0, 0);
            let (mut builds, mut runs) = (0usize, 0usize);
            let (mut g_right, mut g_runs) = (0, 0);
            let (mut s_right, mut s_wrong, mut s_runs) = (0, 0, 0);
            for seed in 0..seeds {
                let mut rng = Rng(seed.wrapping_mul(7919) ^ m as u64);
                let s = 1 + rng.below(m);
                let steps = if k > 0.0 { vec![(s, k * cv)] } else { vec![] };
                let levels = step_levels(m, &steps);
                let mut w = World::new(levels.clone(), cv, seed);
                let mut search = Search::new(m + 1, params);
                let r = drive(&mut search, &mut w);
                let judged = judge(&r.outcome, &levels);
                match judged {
                    Judged::Right => right += 1,
                    Judged::Wrong => wrong += 1,
                    Judged::Missed => missed += 1,
                    Judged::Inconclusive => inc += 1,
                }
                if judged == Judged::Wrong {
                    failures.push(format!(
                        "m {m}, step {k}× CV at {s}, seed {seed}: wrong culprit {:?} (probed {:?}, notes {:?})",
                        r.outcome,
                        r.probed,
                        search.notes()
                    ));
                }
                if r.builds <= ceil_log2(m) + 2 {
                    budget += 1;
                }
                builds += r.builds;
                runs += r.runs;
                if k > 0.0 {
                    let mut w = World::new(levels.clone(), cv, seed ^ 0xFFFF);
                    let (named, gr) = git_bisect_run(&mut w, k * cv);
                    if named == s {
                        g_right += 1;
                    }
                    g_runs += gr;
                    let mut w = World::new(levels.clone(), cv, seed ^ 0xF0F0);
                    let (named, sr) = git_bisect_step(&mut w, &params);
                    match named {
                        Some(n) if n == s => s_right += 1,
                        Some(_) => s_wrong += 1,
                        None => {}
                    }
                    s_runs += sr;
                }
            }
            let row = if k > 0.0 {
                format!("m {m}, step {k}× CV")
            } else {
                format!("m {m}, no step")
            };
            let (share, what) = if k == 0.0 {
                // 2 % noise against a 1 % threshold cannot show "no change" honestly: the
                // rows without a step only must never name a culprit (checked above).
                (0.0, "no-change verdicts")
            } else if k < 2.0 {
                (0.0, "right")
            } else if k < 3.0 {
                (0.8, "right")
            } else {
                (0.9, "right")
            };
            if !at_least(right, seeds, share) {
                failures.push(format!(
                    "{row}: {what} in {} of the seeds, expected at least {:.0} %",
                    pct(right, seeds),
                    share * 100.0
                ));
            }
            if k >= 3.0 && !at_least(budget, seeds, 0.9) {
                failures.push(format!(
                    "{row}: within ⌈log2 m⌉+2 builds in {} of the seeds, expected at least 90 %",
                    pct(budget, seeds)
                ));
            }
            let git = if k > 0.0 {
                format!(
                    "{} | {} | {:.1} | {} | {} | {:.1}",
                    pct(g_right, seeds),
                    pct(seeds as usize - g_right, seeds),
                    g_runs as f64 / seeds as f64,
                    pct(s_right, seeds),
                    pct(s_wrong, seeds),
                    s_runs as f64 / seeds as f64
                )
            } else {
                "n/a | n/a | n/a | n/a | n/a | n/a".to_string()
            };
            println!(
                "| {m} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {git} |",
                if k > 0.0 {
                    format!("{k}× CV")
                } else {
                    "none".into()
                },
                pct(right, seeds),
                pct(wrong, seeds),
                pct(missed, seeds),
                pct(inc, seeds),
                pct(budget, seeds),
                builds as f64 / seeds as f64,
                runs as f64 / seeds as f64,
            );
        }
    }
    failures.extend(scenario_table(seeds));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Harder ranges at m = 128 (noise CV 2 %, threshold 1 %): unbuildable commits, two steps, a
/// deterministic metric. Prints a table; returns what falls short: any wrong culprit, or a
/// scenario whose steps are not all found in at least 90 % of the seeds.
fn scenario_table(seeds: u64) -> Vec<String> {
    let m = 128;
    println!();
    println!("| m = 128 scenario | right | all steps found | wrong | missed | inconclusive | mean builds | mean runs |");
    println!("|---|---|---|---|---|---|---|---|");
    type Setup = fn(&mut Rng) -> (Vec<(usize, f64)>, Vec<usize>, f64);
    let scenarios: [(&str, Setup); 5] = [
        ("3× CV, 10 % unbuildable", |r| {
            (
                vec![(1 + r.below(128), 0.06)],
                (0..13).map(|_| 1 + r.below(128)).collect(),
                0.02,
            )
        }),
        ("5× CV, 10 % unbuildable", |r| {
            (
                vec![(1 + r.below(128), 0.10)],
                (0..13).map(|_| 1 + r.below(128)).collect(),
                0.02,
            )
        }),
        ("two steps, 5× CV each", |r| {
            let a = 1 + r.below(60);
            (vec![(a, 0.10), (a + 20 + r.below(40), 0.10)], vec![], 0.02)
        }),
        ("two steps, 10× + 4× CV", |r| {
            let a = 1 + r.below(60);
            (vec![(a, 0.20), (a + 20 + r.below(40), 0.08)], vec![], 0.02)
        }),
        ("deterministic, +0.3 % (repeats 5, auto)", |r| {
            (vec![(1 + r.below(128), 0.003)], vec![], 0.0)
        }),
    ];
    let mut failures = Vec::new();
    for (name, setup) in scenarios {
        let (mut right, mut all, mut wrong, mut missed, mut inc) = (0, 0, 0, 0, 0);
        let (mut builds, mut runs) = (0, 0);
        for seed in 0..seeds {
            let mut rng = Rng(seed ^ 0x51AB);
            let (steps, broken, noise) = setup(&mut rng);
            let levels = step_levels(m, &steps);
            let mut w = World::new(levels.clone(), noise, seed);
            for b in broken {
                w.unbuildable[b] = true;
            }
            let params = Params {
                threshold: Threshold::Relative(if noise > 0.0 { 0.01 } else { 0.001 }),
                ..noisy(5)
            };
            let mut search = Search::new(m + 1, params);
            let r = drive(&mut search, &mut w);
            builds += r.builds;
            runs += r.runs;
            match judge(&r.outcome, &levels) {
                Judged::Right => right += 1,
                Judged::Wrong => {
                    wrong += 1;
                    failures.push(format!(
                        "{name}, seed {seed}, steps {steps:?}: wrong culprit {:?} (probed {:?}, notes {:?})",
                        r.outcome,
                        r.probed,
                        search.notes()
                    ));
                }
                Judged::Missed => missed += 1,
                Judged::Inconclusive => inc += 1,
            }
            if let Outcome::Culprits(cs) = &r.outcome {
                if steps
                    .iter()
                    .all(|(s, _)| cs.iter().any(|c| c.candidates.contains(s)))
                {
                    all += 1;
                }
            }
        }
        if !at_least(all, seeds, 0.9) {
            failures.push(format!(
                "{name}: every step found in {} of the seeds, expected at least 90 %",
                pct(all, seeds)
            ));
        }
        println!(
            "| {name} | {} | {} | {} | {} | {} | {:.1} | {:.1} |",
            pct(right, seeds),
            pct(all, seeds),
            pct(wrong, seeds),
            pct(missed, seeds),
            pct(inc, seeds),
            builds as f64 / seeds as f64,
            runs as f64 / seeds as f64
        );
    }
    failures
}

/// Random ranges (m 2–301, 0–2 steps of 0.5–4.5× the noise either way, repeats 3–8, up to
/// 10 % unbuildable, up to 20 % with stored samples): never a wrong culprit. `SWEEP_SEEDS`
/// (default 1000) and `SWEEP_BASE` (default 0) sweep more by hand:
/// `SWEEP_SEEDS=3000 SWEEP_BASE=0 cargo test --release --lib bisect::tests::random_sweep -- --nocapture`
#[test]
fn random_sweep() {
    let base = env_num("SWEEP_BASE", 0.0) as u64;
    let seeds = env_num("SWEEP_SEEDS", 1000.0) as u64;
    let mut wrong = Vec::new();
    let mut outcomes = [0usize; 4];
    for seed in base..base + seeds {
        let mut rng = Rng(seed ^ 0x77);
        let m = 2 + rng.below(300);
        let nsteps = rng.below(3);
        let steps: Vec<(usize, f64)> = (0..nsteps)
            .map(|_| {
                (
                    1 + rng.below(m),
                    (0.5 + 4.0 * rng.unit()) * 0.02 * if rng.below(2) == 0 { 1.0 } else { -1.0 },
                )
            })
            .collect();
        let levels = step_levels(m, &steps);
        let mut w = World::new(levels.clone(), 0.02, seed);
        let mut search = Search::new(m + 1, noisy(3 + rng.below(6)));
        for _ in 0..rng.below(m / 10 + 1) {
            let b = 1 + rng.below(m);
            w.unbuildable[b] = true;
        }
        for _ in 0..rng.below(m / 5 + 1) {
            let p = rng.below(m + 1);
            let v: Vec<f64> = (0..1 + rng.below(6)).map(|_| w.sample(p)).collect();
            search.add_samples(p, &v);
        }
        let r = drive(&mut search, &mut w);
        let j = judge(&r.outcome, &levels);
        outcomes[j as usize] += 1;
        if j == Judged::Wrong {
            wrong.push(format!(
                "seed {seed}, m {m}, steps {steps:?}: {:?}",
                r.outcome
            ));
        }
    }
    println!("{seeds} ranges: right / wrong / missed / inconclusive {outcomes:?}");
    assert!(
        wrong.is_empty(),
        "{} wrong culprits in {seeds} ranges:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // The sweep is not vacuous: most ranges with a step get a culprit.
    assert!(
        outcomes[Judged::Right as usize] * 2 > seeds as usize,
        "{outcomes:?}"
    );
}

/// ⌈log_base(m)⌉ for integers.
fn ceil_log(m: usize, base: usize) -> usize {
    let mut k = 0;
    let mut reach = 1usize;
    while reach < m {
        reach = reach.saturating_mul(base);
        k += 1;
    }
    k
}

/// `find --jobs N` in the simulation: k-ary rounds of N builds keep every guarantee (no wrong
/// culprit, verification first), find a 3×-noise step as often, and need fewer rounds of
/// builds: about ⌈log_(N+1) m⌉ plus the ends and the verification.
#[test]
fn parallel_builds_keep_the_answers_and_cut_the_build_rounds() {
    let seeds = 40u64;
    for m in [128usize, 1024] {
        let mut mean_rounds = Vec::new();
        for jobs in [1usize, 2, 4, 8] {
            let (mut right, mut rounds, mut builds) = (0u64, 0usize, 0usize);
            for seed in 0..seeds {
                let mut rng = Rng(seed ^ 0x05EE_D0B5);
                let s = 1 + rng.below(m);
                let levels = step_levels(m, &[(s, 0.03)]);
                let mut w = World::new(levels.clone(), 0.01, seed);
                let mut search = Search::new(m + 1, noisy(5));
                let (r, d) = drive_jobs(&mut search, &mut w, jobs);
                let j = judge(&r.outcome, &levels);
                assert_ne!(
                    j,
                    Judged::Wrong,
                    "m={m} jobs={jobs} seed={seed}: {:?}",
                    r.outcome
                );
                right += u64::from(j == Judged::Right);
                rounds += d.build_rounds;
                builds += d.builds;
                assert!(d.most_parallel <= jobs);
            }
            assert!(
                right * 100 >= 95 * seeds,
                "m={m} jobs={jobs}: right {right}/{seeds}"
            );
            let mean = rounds as f64 / seeds as f64;
            let bound = ceil_log(m, jobs + 1) + if jobs == 1 { 3 } else { 2 };
            assert!(
                mean <= bound as f64,
                "m={m} jobs={jobs}: {mean:.1} build rounds on average, more than {bound}"
            );
            eprintln!(
                "m={m} jobs={jobs}: right {right}/{seeds}, build rounds {mean:.1} (bound {bound}), builds {:.1}",
                builds as f64 / seeds as f64
            );
            mean_rounds.push(mean);
        }
        assert!(
            mean_rounds.windows(2).all(|w| w[1] <= w[0]),
            "m={m}: more jobs, fewer rounds: {mean_rounds:?}"
        );
    }
}

/// `step`'s policy through the same driver: old-like and new-like probes, a probe that does
/// not build or whose test always fails (skip, cheaply), an old end that fails (fatal).
#[test]
fn step_policy_classifies_and_steps_around_through_the_driver() {
    use super::step::{NEW, OLD, PROBE};
    let run = |levels: Vec<f64>, with_new: bool, tweak: &dyn Fn(&mut World)| {
        let mut w = World::new(levels, 0.01, 7);
        tweak(&mut w);
        // A threshold the noise lets an equivalence test reach.
        let params = Params {
            threshold: Threshold::Relative(0.04),
            ..noisy(5)
        };
        let mut p = StepSearch::new(params, with_new);
        let len = p.len();
        let (_, d) = super::drive(&mut p, &mut w, len, 3).unwrap();
        (p.verdict().cloned().unwrap(), d)
    };
    // Positions: OLD, PROBE, NEW.
    assert_eq!((OLD, PROBE, NEW), (0, 1, 2));
    let (v, d) = run(vec![1000.0, 1100.0, 1100.0], true, &|_| {});
    assert_eq!(v, StepVerdict::Class(Class::NewLike));
    assert_eq!(
        d.build_rounds, 1,
        "all three built in one round with jobs 3"
    );
    let (v, _) = run(vec![1000.0, 1000.0], false, &|_| {});
    assert_eq!(v, StepVerdict::Class(Class::OldLike));
    let (v, d) = run(vec![1000.0, 1100.0], false, &|w| w.unbuildable[1] = true);
    assert!(matches!(v, StepVerdict::Skip(_)), "{v:?}");
    assert_eq!(d.runs, 0);
    let (v, d) = run(vec![1000.0, 1100.0], false, &|w| w.failing[1] = true);
    assert!(
        matches!(&v, StepVerdict::Skip(why) if why.contains("failed")),
        "{v:?}"
    );
    assert!(d.runs <= 10, "at most 2 x repeats runs: {d:?}");
    let (v, _) = run(vec![1000.0, 1100.0], false, &|w| w.failing[0] = true);
    assert!(matches!(v, StepVerdict::Fatal(_)), "{v:?}");
}

/// The stored windows a search leaves behind, as a second search reads them from the store.
fn replay_into(first: &Search, second: &mut Search) {
    for w in &first.windows {
        for (&pos, runs) in &w.runs {
            stored_in(second, w.id, pos, runs);
        }
    }
}

/// A machine whose speed drifts by 6 % and more (periods of tens of seconds, builds of 3 s,
/// runs of 50 ms), a +4 % step, 1 % noise: every decision compares runs taken side by side, so
/// the step is found every time, where pooling runs taken seconds apart goes astray.
#[test]
fn drift_of_the_machine_cannot_fool_the_search() {
    let m = 48;
    let seeds = 20u64;
    for amp in [0.06, 0.10] {
        for period in [20.0, 40.0] {
            let (mut right, mut wrong, mut pooled_right) = (0, 0, 0);
            for seed in 0..seeds {
                let s = 1 + Rng(seed ^ 0xD81F).below(m);
                let levels = step_levels(m, &[(s, 0.04)]);
                let world =
                    || World::new(levels.clone(), 0.01, seed).drifting(amp, period, 0.05, 3.0);
                let mut w = world();
                let mut search = Search::new(m + 1, noisy(5));
                let r = drive(&mut search, &mut w);
                match judge(&r.outcome, &levels) {
                    Judged::Right => right += 1,
                    Judged::Wrong => wrong += 1,
                    _ => {}
                }
                let mut w = world();
                let pooled = Params {
                    interleave: false,
                    ..noisy(5)
                };
                let mut search = Search::new(m + 1, pooled);
                let r = drive(&mut search, &mut w);
                if judge(&r.outcome, &levels) == Judged::Right {
                    pooled_right += 1;
                }
            }
            eprintln!(
                "drift {amp} period {period}: interleaved right {right}/{seeds}, pooled right {pooled_right}/{seeds}"
            );
            assert_eq!(wrong, 0, "drift {amp} period {period}");
            assert_eq!(right, seeds as usize, "drift {amp} period {period}");
        }
    }
}

/// Drift is measured: the same build in different windows, and said when it is more than the
/// noise could make.
#[test]
fn drift_is_measured_from_the_same_build_at_different_times() {
    let m = 32;
    let levels = step_levels(m, &[(20, 0.05)]);
    let mut w = World::new(levels.clone(), 0.005, 1).drifting(0.06, 30.0, 0.05, 3.0);
    let mut search = Search::new(m + 1, noisy(5));
    drive(&mut search, &mut w);
    let d = search.drift().expect("the old end is in several windows");
    assert!(d.rel > 0.02 && d.rel < 0.15, "{d:?}");
    assert!(d.p_value < 0.01, "{d:?}");
    let mut w = World::new(levels, 0.005, 1);
    let mut search = Search::new(m + 1, noisy(5));
    drive(&mut search, &mut w);
    let d = search.drift().unwrap();
    assert!(d.rel < 0.02, "no drift, only noise: {d:?}");
}

/// A second search over what the first one stored (its windows) takes the same path and says
/// the same, without a run: decisions are recomputed from the same windows.
#[test]
fn a_second_search_on_the_stored_windows_gives_the_same_verdict_without_runs() {
    let m = 100;
    for seed in 0..10u64 {
        let s = 1 + Rng(seed ^ 0x2D).below(m);
        let levels = step_levels(m, &[(s, 0.05)]);
        let mut w = World::new(levels.clone(), 0.01, seed).drifting(0.06, 30.0, 0.05, 3.0);
        let mut first = Search::new(m + 1, noisy(5));
        let r1 = drive(&mut first, &mut w);
        let mut second = Search::new(m + 1, noisy(5));
        replay_into(&first, &mut second);
        // Everything it built is cached now.
        for p in 0..=m {
            if w.built[p] {
                second.mark_built(p);
            }
        }
        let r2 = drive(&mut second, &mut w);
        assert_eq!(r1.outcome.verdict(), r2.outcome.verdict(), "seed {seed}");
        if let (Outcome::Culprits(a), Outcome::Culprits(b)) = (&r1.outcome, &r2.outcome) {
            assert_eq!(a[0].pos, b[0].pos, "seed {seed}");
        }
        assert_eq!(r2.runs, 0, "seed {seed}: {} runs again", r2.runs);
    }
}

/// Property of the interleaved windows: every window the search asks for holds the probe
/// and both of its anchors (or the two ends, or parent and culprit), never a commit twice,
/// and every comparison it makes is of positions that share a window.
#[test]
fn windows_hold_what_each_decision_compares() {
    for seed in 0..30u64 {
        let m = 2 + Rng(seed).below(200);
        let s = 1 + Rng(seed ^ 9).below(m);
        let levels = step_levels(m, &[(s, 0.04)]);
        let mut w = World::new(levels.clone(), 0.01, seed).drifting(0.05, 25.0, 0.05, 3.0);
        let mut search = Search::new(m + 1, noisy(5));
        let mut n = 0;
        loop {
            let a = search.next_action();
            match &a {
                Action::Done(_) => break,
                Action::Window {
                    positions, runs, ..
                } => {
                    assert!(*runs > 0);
                    let mut sorted = positions.clone();
                    sorted.sort();
                    sorted.dedup();
                    assert_eq!(sorted.len(), positions.len(), "{positions:?}");
                    assert!((2..=3).contains(&positions.len()), "{positions:?}");
                    if positions.len() == 3 {
                        // anchor, probe, anchor: the probe strictly between.
                        assert!(positions[0] < positions[1] && positions[1] < positions[2]);
                    }
                }
                Action::Measure { .. } => panic!("a noisy search measures in windows: {a:?}"),
                Action::Verify {
                    parent, culprit, ..
                } => assert!(parent < culprit),
            }
            answer(&mut search, &mut w, &a);
            n += 1;
            assert!(n < 10_000);
        }
        let Action::Done(o) = search.next_action() else {
            unreachable!()
        };
        assert_ne!(judge(&o, &levels), Judged::Wrong);
    }
}

/// Instruction counts: a CPU-bound program whose work grows 1 % at one commit, counts that
/// spread by a few parts in a million run to run: exact comparisons after the ends' two runs
/// show the spread, so `git bisect`'s probes (⌈log2 m⌉ + 2 builds) and at most 3 runs a build.
#[test]
fn instruction_counts_take_git_bisect_probes_and_few_runs() {
    for m in [16usize, 100, 1024] {
        for seed in 0..10u64 {
            let s = 1 + Rng(seed ^ 0x1C).below(m);
            let levels = step_levels(m, &[(s, 0.01)]);
            let mut w = World::new(levels.clone(), 2e-6, seed);
            w.outliers = 0.0;
            let params = Params {
                threshold: Threshold::Relative(0.005),
                counted: true,
                ..noisy(2)
            };
            let mut search = Search::new(m + 1, params);
            let r = drive(&mut search, &mut w);
            assert!(
                matches!(&r.outcome, Outcome::Culprits(c) if c[0].pos == s),
                "m={m} seed={seed}: {:?}",
                r.outcome
            );
            assert!(r.builds <= ceil_log2(m) + 2, "m={m}: {} builds", r.builds);
            assert!(
                r.runs <= 3 * r.builds,
                "m={m}: {} runs for {} builds",
                r.runs,
                r.builds
            );
        }
    }
    // A count that spreads more than a tenth of the threshold is searched as a noisy one.
    let levels = step_levels(64, &[(20, 0.05)]);
    let mut w = World::new(levels, 0.01, 1);
    let params = Params {
        threshold: Threshold::Relative(0.005),
        counted: true,
        ..noisy(2)
    };
    let mut search = Search::new(65, params);
    drive(&mut search, &mut w);
    assert!(!search.is_deterministic());
}

/// A counted metric (instructions) with a 1 % threshold, two runs a commit at first, over
/// `levels` with Gaussian noise of `cv` (and the simulator's outliers, or none): the search
/// and its run.
fn search_counts(levels: &[f64], cv: f64, seed: u64, outliers: bool) -> (Search, Run) {
    let mut w = World::new(levels.to_vec(), cv, seed);
    if outliers {
        assert!(w.outliers > 0.0);
    } else {
        w.outliers = 0.0;
    }
    let params = Params {
        threshold: Threshold::Relative(0.01),
        counted: true,
        ..noisy(2)
    };
    let mut search = Search::new(levels.len(), params);
    let r = drive(&mut search, &mut w);
    (search, r)
}

/// Counts whose runs vary by a fraction of a percent (a network client's poll loops): more than
/// a tenth of the threshold, so not exact, but two runs a side tell a clear step (Welch's t
/// test), where a rank test would need five a side; and never a wrong culprit.
#[test]
fn slightly_noisy_counts_are_searched_with_few_runs() {
    let m = 128;
    let mut per_build = Vec::new();
    for seed in 0..20u64 {
        let s = 1 + Rng(seed ^ 0xC0).below(m);
        let levels = step_levels(m, &[(s, 0.10)]);
        let (_, r) = search_counts(&levels, 0.003, seed, false);
        assert_eq!(
            judge(&r.outcome, &levels),
            Judged::Right,
            "seed {seed}: {:?}",
            r.outcome
        );
        assert!(r.builds <= ceil_log2(m) + 2, "{} builds", r.builds);
        per_build.push(r.runs as f64 / r.builds as f64);
    }
    // Each commit's runs alone (Welch's t on two a side) needed 7.7 a build; the noise pooled
    // over the search's commits places a probe on one run: 4.3.
    let mean = per_build.iter().sum::<f64>() / per_build.len() as f64;
    assert!(mean < 5.0, "{mean:.1} runs per build");
}

/// curl's instruction search (issue 32): a count spreading 0.4 %, an 8 % step and, 20 commits
/// before it, a -1.1 % one. The pooled noise places probes on one run each, and a probe that
/// lands on the small step's level is placed beside the large one (the small one within 1.5
/// times the threshold, said in a note): the large step named every time, ⌈log2 m⌉ + 2 builds,
/// under a third of the runs of each commit judged alone.
#[test]
fn counts_with_a_small_second_step_are_placed_on_one_run_a_probe() {
    let m = 128;
    let (mut runs, mut noted) = (0, 0);
    for seed in 0..20u64 {
        let s = 30 + Rng(seed ^ 0xC0).below(m - 40);
        let levels = step_levels(m, &[(s - 20, -0.011), (s, 0.08)]);
        let (search, r) = search_counts(&levels, 0.004, seed, false);
        assert!(
            matches!(&r.outcome, Outcome::Culprits(c) if c.len() == 1 && c[0].pos == s),
            "seed {seed}: {:?}",
            r.outcome
        );
        assert!(
            r.builds <= ceil_log2(m) + 2,
            "seed {seed}: {} builds",
            r.builds
        );
        let note = search
            .notes()
            .iter()
            .find(|n| n.contains("second, smaller step"));
        if let Some(n) = note {
            noted += 1;
            assert!(n.contains("-1."), "{n}");
        }
        runs += r.runs;
    }
    // Each commit judged on its own runs: 132.8 runs a search, 10.2 builds. Now 40.6, and the
    // small step noted in 1 of 20 (a probe landed on its level and differed from both sides at
    // α/10; elsewhere it was placed without a note, or never landed there).
    assert!(
        runs as f64 / 20.0 < 45.0,
        "{} runs a search",
        runs as f64 / 20.0
    );
    assert!(noted >= 1, "the small step noted in {noted} of 20");
}

/// One run a probe against the simulator's ×1.3 outliers on 2 % of runs (far worse than any
/// count spreads): a search may then end inconclusive, and never names a wrong commit. Steps
/// of 8 % with a -1.1 % one before it, and a lone 2.5 % step.
#[test]
fn counts_with_outliers_never_name_a_wrong_commit() {
    let m = 128;
    for seed in 0..20u64 {
        let s = 30 + Rng(seed ^ 0xC0).below(m - 40);
        for steps in [vec![(s - 20, -0.011), (s, 0.08)], vec![(s, 0.025)]] {
            let levels = step_levels(m, &steps);
            let (_, r) = search_counts(&levels, 0.004, seed, true);
            assert_ne!(
                judge(&r.outcome, &levels),
                Judged::Wrong,
                "seed {seed}, steps {steps:?}: {:?}",
                r.outcome
            );
        }
    }
}

proptest! {
    #![proptest_config(fixed(40))]

    /// "No change" only when the runs could have seen the threshold: whatever the noise, the
    /// threshold and the repeats, a no-change verdict carries a smallest detectable change at or
    /// below the threshold, and otherwise the verdict is inconclusive (never a culprit for a
    /// range without a step).
    #[test]
    fn prop_no_change_only_when_the_threshold_could_have_been_seen(
        cv in 0.001f64..0.05,
        thr in 0.002f64..0.05,
        repeats in 2usize..8,
        seed in any::<u64>(),
    ) {
        let levels = step_levels(40, &[]);
        let mut w = World::new(levels.clone(), cv, seed);
        let params = Params {
            threshold: Threshold::Relative(thr),
            ..noisy(repeats)
        };
        let mut search = Search::new(41, params);
        let r = drive(&mut search, &mut w);
        match r.outcome {
            Outcome::NoChange { min_detectable, .. } => prop_assert!(min_detectable <= thr),
            Outcome::Inconclusive { .. } => {}
            o => prop_assert!(false, "a culprit without a step: {o:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: RngSeed::Fixed(29), ..ProptestConfig::default() })]
    /// Issue 29: a verdict cannot contradict itself. A ramp of small steps under noise leaves
    /// probes unclassified; a best guess then names as its parent only a commit classified at
    /// the old level (never one the reason says stayed unclassified), and moves the way the
    /// range's ends do.
    #[test]
    fn a_best_guess_never_contradicts_its_own_evidence(
        seed in 0u64..1000,
        n_steps in 2usize..7,
        size in 0.002f64..0.006,
    ) {
        let m = 32;
        let steps: Vec<(usize, f64)> = (1..=n_steps).map(|i| (i * m / (n_steps + 1), size)).collect();
        let levels = step_levels(m, &steps);
        let mut w = World::new(levels, 0.004, seed);
        let mut search = Search::new(m + 1, noisy(5));
        search.set_labels((0..=m).map(|p| format!("c{p}")).collect());
        let r = drive(&mut search, &mut w);
        if let Outcome::Inconclusive { reason, best_guess: Some(c) } = &r.outcome {
            let parent = format!("c{} stayed unclassified", c.parent);
            prop_assert!(!reason.contains(&parent), "{reason} / parent {}", c.parent);
            prop_assert!(c.parent < c.pos);
            prop_assert!(c.rel_change > 0.0, "the ends go up, the guess {:+}", c.rel_change);
        }
    }
}

/// What the searches of [`step_above_threshold`] said, over their seeds.
#[derive(Debug, Default)]
struct Tally {
    right: usize,
    inconclusive: usize,
    wrong: usize,
    missed: usize,
    /// A second search over the first one's stored windows said otherwise.
    flips: usize,
    runs: usize,
}

/// Issue 42's scenario: 96 commits (positions 0..=95), one step of `step` at a seeded
/// position, Gaussian noise of `cv` and the simulator's 2 % of ×1.3 outliers, threshold
/// `thr`, the default repeats (5, up to 30); then a second search over the first one's
/// windows (as `find` again on the same cache). `verbose` prints every search that failed.
fn step_above_threshold(
    cv: f64,
    step: f64,
    thr: f64,
    seeds: std::ops::Range<u64>,
    verbose: bool,
) -> Tally {
    let m = 95;
    let mut t = Tally::default();
    let params = Params {
        threshold: Threshold::Relative(thr),
        ..noisy(5)
    };
    for seed in seeds {
        let s = 1 + Rng(seed ^ 0x42).below(m);
        let levels = step_levels(m, &[(s, step)]);
        let mut w = World::new(levels.clone(), cv, seed);
        let mut first = Search::new(m + 1, params);
        let r1 = drive(&mut first, &mut w);
        t.runs += r1.runs;
        let j = judge(&r1.outcome, &levels);
        match j {
            Judged::Right => t.right += 1,
            Judged::Wrong => t.wrong += 1,
            Judged::Missed => t.missed += 1,
            Judged::Inconclusive => t.inconclusive += 1,
        }
        let mut second = Search::new(m + 1, params);
        replay_into(&first, &mut second);
        for p in 0..=m {
            if w.built[p] {
                second.mark_built(p);
            }
        }
        let r2 = drive(&mut second, &mut w);
        let j2 = judge(&r2.outcome, &levels);
        if j2 != j {
            t.flips += 1;
        }
        if verbose && (j != Judged::Right || j2 != j) {
            let why = |o: &Outcome| match o {
                Outcome::Inconclusive { reason, .. } => reason.clone(),
                o => format!("{:?}", o.verdict()),
            };
            let why = format!("{}; then {}", why(&r1.outcome), why(&r2.outcome));
            eprintln!(
                "seed {seed}, step at {s}: {j:?}, then {j2:?} ({} runs): {why}",
                r1.runs
            );
        }
    }
    t
}

/// Issue 42: a step 1.4 times the threshold (+7 % at 5 %) at 3, 4 and 6 % run-to-run noise
/// is named, not given up on, and named again by a second search over the same cache. Each
/// decision used to need the medians past the threshold (the ends, the parent against the
/// culprit, the re-runs), so one look in several of a +7 % step measuring under 5 % ended the
/// search inconclusive, or said "no change"; a probe misplaced early left a parent and culprit
/// on one level, which ended it too; and a second search tested the first one's re-runs at the
/// full α. Over 400 seeds ([`issue42_runs`]): 94, 82 and 34 % right at first, 98, 96 and 68 %
/// once the interval decides, 100, 100 and 94 % with the back-off (4 %: 1,000 of 1,000, no
/// flip). Never a wrong commit, either way.
#[test]
fn a_step_above_the_threshold_is_named_at_its_noise() {
    for (cv, least) in [(0.03, 1.0), (0.04, 1.0), (0.06, 0.85)] {
        let seeds = 100;
        let t = step_above_threshold(cv, 0.07, 0.05, 0..seeds, false);
        eprintln!("noise {cv}: {t:?}");
        assert_eq!(t.wrong, 0, "noise {cv}: {t:?}");
        assert!(at_least(t.right, seeds, least), "noise {cv}: {t:?}");
        if cv < 0.05 {
            assert_eq!(t.missed, 0, "noise {cv}: {t:?}");
            assert_eq!(t.flips, 0, "noise {cv}: {t:?}");
        }
    }
}

/// The runs a search of issue 42's scenario spends, and what it says, printed once:
/// `X_CV=0.04 X_SEEDS=400 cargo test --lib bisect::tests::issue42_runs -- --ignored --nocapture`
/// (`X_STEP`, `X_THR` change the step and the threshold, `X_FROM` the first seed; `X_VERBOSE=1`
/// lists the failures).
#[test]
#[ignore]
fn issue42_runs() {
    let seeds = env_num("X_SEEDS", 400.0) as u64;
    let from = env_num("X_FROM", 0.0) as u64;
    let t = step_above_threshold(
        env_num("X_CV", 0.04),
        env_num("X_STEP", 0.07),
        env_num("X_THR", 0.05),
        from..from + seeds,
        env_num("X_VERBOSE", 0.0) > 0.0,
    );
    eprintln!("{t:?}: {:.1} runs a search", t.runs as f64 / seeds as f64);
}

#[test]
fn a_culprit_of_counts_a_few_instructions_apart_is_restated_exact() {
    let counted = Params {
        counted: true,
        ..noisy(1)
    };
    let runs = |values: &[f64]| -> Vec<Stored> {
        values
            .iter()
            .enumerate()
            .map(|(i, &value)| Stored {
                value,
                window: 3,
                moment: i as u32,
                shared: false,
            })
            .collect()
    };
    // The search began on one run a commit: not exact as a whole.
    let search = Search::new(8, counted);
    assert!(!search.is_deterministic());
    let c = Search::pair(
        counted,
        &runs(&[297_014_016.0, 297_014_030.0]),
        &runs(&[224_599_913.0, 224_599_906.0]),
    )
    .unwrap()
    .0;
    let c = Culprit {
        pos: 5,
        parent: 4,
        verified: true,
        ..c
    };
    let exact = search
        .restate_exact(
            &c,
            &runs(&[297_014_016.0, 297_014_030.0, 297_014_023.0]),
            &runs(&[224_599_913.0, 224_599_906.0]),
        )
        .expect("a count's jitter is far below the threshold");
    assert_eq!((exact.pos, exact.parent), (5, 4));
    assert!(exact.verified);
    assert_eq!(exact.p_value, 0.0);
    assert!((exact.rel_change + 0.2438).abs() < 1e-3, "{exact:?}");
    // A time's spread is no count's: not exact.
    let time = Params {
        counted: false,
        ..counted
    };
    let search = Search::new(8, time);
    assert!(search
        .restate_exact(&c, &runs(&[1.00, 1.01, 0.99]), &runs(&[0.76, 0.75, 0.77]))
        .is_none());
}

/// Issue 60: a count whose runs are exact but for a jitter far below the threshold (33
/// instructions in 2.17 billion, as Cachegrind's counts of a program that reads the clock)
/// is no noisy metric: the search stays exact, compares within a tenth of the threshold, and
/// never says the test is "not deterministic".
#[test]
fn a_counts_jitter_far_below_the_threshold_keeps_the_search_exact() {
    for seed in 0..20u64 {
        let m = 64;
        let s = 1 + Rng(seed ^ 0x60).below(m);
        let levels = step_levels(m, &[(s, 0.05)]);
        let mut w = World::new(levels.clone(), 0.0, seed);
        w.outliers = 0.0;
        let params = Params {
            threshold: Threshold::Relative(0.005),
            counted: true,
            ..noisy(1)
        };
        let mut search = Search::new(m + 1, params);
        // One commit inside was measured twice before, 33 instructions apart.
        let p = 1 + Rng(seed ^ 0x61).below(m - 1);
        let jitter = 33.0 / 2.17e9 * levels[p];
        stored_in(&mut search, 7, p, &[levels[p], levels[p] + jitter]);
        let r = drive(&mut search, &mut w);
        assert_eq!(judge(&r.outcome, &levels), Judged::Right, "seed {seed}");
        assert!(
            search
                .notes()
                .iter()
                .all(|n| !n.contains("not deterministic")),
            "seed {seed}: {:?}",
            search.notes()
        );
        assert!(search.is_deterministic(), "seed {seed}");
    }
}
