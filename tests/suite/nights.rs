//! Issue 56: the machine in the model, proven on families of random nights. Histories of 40
//! commits measured by night-like schedules of perfbisect's commands, each command at a
//! machine speed of its own (×0.85 to ×1.30), some with cron rounds imported from named
//! machines (scripts/nights/sim.rs drives the real search and the real detector). Where nothing
//! moved, no view may state a certain step; where a real step is linked to its neighbours by
//! runs taken side by side, it must be found at its commit in most histories.

#[path = "../../scripts/nights/sim.rs"]
mod sim;

use sim::{family, Kind, Setup};

/// Histories a family: a rate, not a shape (about 4 s a family in a debug build).
const HISTORIES: usize = 200;

#[test]
fn no_night_schedule_makes_a_certain_step_where_nothing_moved() {
    for kind in [Kind::Commands, Kind::Imports] {
        let t = family(kind, None, HISTORIES, 7, Setup::default());
        assert_eq!(t.histories, HISTORIES);
        assert_eq!(
            t.false_certain, 0,
            "{kind:?}: {} false certain steps over {} histories, e.g. {:#?}",
            t.false_certain, t.histories, t.examples
        );
    }
}

#[test]
fn a_step_of_twice_the_threshold_is_never_joined_by_a_false_one() {
    let setup = Setup::default();
    for kind in [Kind::Commands, Kind::Imports] {
        let t = family(kind, Some(2.0 * setup.threshold), HISTORIES, 13, setup);
        assert_eq!(t.false_certain, 0, "{kind:?}: {:#?}", t.examples);
        // Measured on these seeds: 90 % (commands) and 91 % (imports); on the page's seeds
        // 92 % and 90 %, on 400 others 83 % and 86 %.
        assert!(
            t.linked_decided * 10 >= t.linked * 8,
            "{kind:?}: decided {} of {} linked steps at their commit",
            t.linked_decided,
            t.linked
        );
        // A step no window links, whose neighbouring commits' runs show the move, is said:
        // 15 of 15 command histories here (99.4 % of 312 on the page's seeds); the import
        // family's steps inside a machine's nights are placed by their series (17 of 22).
        if kind == Kind::Commands {
            assert!(
                t.shown_seen * 10 >= t.unlinked_shown * 9,
                "{kind:?}: {} of {} steps with no link whose runs show them seen; {:#?}",
                t.shown_seen,
                t.unlinked_shown,
                t.unseen
            );
        }
    }
}

/// Steps no window links to their neighbours that 97e9480 left silent though the runs beside
/// them showed the move (seed 1, commands, +4 %): #162, a shard's commit 13 and a `run 39
/// --again` on another night, both at ×1.15 (+4.5 %, five runs a side, nothing else measured);
/// #698, two sessions at one speed on either side of the step at 20, nothing between. Each is
/// now undecided, measured apart, with a span that holds the step; never certain.
#[test]
fn a_step_with_no_link_its_neighbours_runs_show_is_never_silent() {
    let setup = Setup::default();
    for k in [162, 698] {
        let (h, mut rng) = sim::history(Kind::Commands, Some(0.04), 1, k, setup);
        let v = sim::judge(&h, &mut rng);
        let log = h.log.join("; ");
        assert!(v.bracketed && !v.linked && v.shown, "#{k}: {log}");
        assert_eq!(v.false_certain, 0, "#{k}: {}\n{log}", v.note);
        assert!(v.seen, "#{k}: silent: {}\n{log}", v.note);
    }
}

#[test]
fn a_linked_step_of_five_thresholds_is_found_at_its_commit_whatever_the_nights() {
    let setup = Setup::default();
    for kind in [Kind::Commands, Kind::Imports] {
        let t = family(kind, Some(5.0 * setup.threshold), HISTORIES, 11, setup);
        assert_eq!(t.false_certain, 0, "{kind:?}: {:#?}", t.examples);
        assert!(t.linked >= HISTORIES / 2, "{kind:?}: {t:?}");
        // Measured on other seeds: 97 % (commands) and 100 % (imports).
        assert!(
            t.linked_decided * 10 >= t.linked * 8,
            "{kind:?}: decided {} of {} linked steps at their commit; misses {:#?}",
            t.linked_decided,
            t.linked,
            t.misses
        );
        // A step no window links to its neighbours is at least undecided (measured apart) in
        // most histories: silent only where a slow night stands beside it, whose move the
        // step's own cannot be told from.
        assert!(
            t.unlinked_seen * 4 >= t.unlinked * 3,
            "{kind:?}: {} of {} steps with no link seen; unseen {:#?}",
            t.unlinked_seen,
            t.unlinked,
            t.unseen
        );
    }
}

/// The histories of other seeds where a view stated a certain step on the wrong commits (found
/// with `NIGHTS_SEED0=7000` and `=1` over 1,000 histories a family): a pair measured side by
/// side took a step from a span whose commits before the pair were already at the new level
/// (commands #343, #728, #933 at +4 %), one outlier run in a session beside nights that showed
/// the commit at its neighbours' level (imports #893, no step; #650, +10 %), and an outlier
/// pair of runs on one commit whose night said otherwise (imports #422 of seed 1, no step).
#[test]
fn the_wrong_commits_of_other_seeds_are_blamed_no_more() {
    let setup = Setup::default();
    let cases = [
        (Kind::Commands, Some(0.04), 7000, 343),
        (Kind::Commands, Some(0.04), 7000, 728),
        (Kind::Commands, Some(0.04), 7000, 933),
        (Kind::Imports, None, 7000, 893),
        (Kind::Imports, Some(0.1), 7000, 650),
        (Kind::Imports, None, 1, 422),
    ];
    for (kind, step, seed0, k) in cases {
        let (h, mut rng) = sim::history(kind, step, seed0, k, setup);
        let v = sim::judge(&h, &mut rng);
        assert_eq!(
            v.false_certain,
            0,
            "{kind:?} {step:?} seed {seed0} #{k}: {}\n{}",
            v.note,
            h.log.join("; ")
        );
    }
}

/// A step no window links to its neighbours that eb902e8 left silent (seed 1, imports #11,
/// found over 1,000 histories a family): the levels as aligned showed the move (a machine's
/// nights, two runs a night, +4 % at 21) while the evidence judging it, a session that read the
/// step's commit low by chance, did not. It is now at least undecided (measured apart), with a
/// span the levels place it in that holds the step's commit.
#[test]
fn a_step_with_no_link_the_levels_show_is_never_silent() {
    let setup = Setup::default();
    let (h, mut rng) = sim::history(Kind::Imports, Some(0.04), 1, 11, setup);
    let v = sim::judge(&h, &mut rng);
    let log = h.log.join("; ");
    assert!(v.bracketed && !v.linked, "{log}");
    assert_eq!(v.false_certain, 0, "{}\n{log}", v.note);
    assert!(v.seen, "silent: {}\n{log}", v.note);
}
