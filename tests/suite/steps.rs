//! Issue 29, "one step, one number": every view of a step agrees — `find`'s headline, the
//! report's change points, `detect` on the same range — adjacent steps stay apart, and few runs
//! never silently hide a step (`detect` says it is undecided, `run` measures until it is not).

use crate::common;

use common::{specs, with_build, Fixture};

const CONFIG: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3

[tests.rss]
command = "./app"
metric = "max-rss"
threshold = "5%"
repeats = 3
"#;

/// The shared build and one test, `value`, read from the program's output with a 1 %
/// threshold and `repeats` runs a commit.
fn value_config(repeats: usize) -> String {
    with_build(&format!(
        r#"
[tests.value]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
threshold = "1%"
repeats = {repeats}
"#
    ))
}

/// `detect TEST RANGE --format json`'s points as (commit index in `f.ids`, rel_change).
fn points(f: &Fixture, test: &str, range: &str) -> Vec<(usize, f64)> {
    let j = f.json(&["detect", test, range, "--format", "json"]);
    j["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let c = p["commit"].as_str().unwrap();
            (
                f.ids.iter().position(|i| i == c).unwrap(),
                p["rel_change"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn few_runs_of_identical_builds_never_hide_a_clear_step() {
    // 40 commits, two builds (the commits before the step are byte-identical, and those after):
    // each level is 3 runs, too few for a rank test to reach α. A 6 % step at 1 % noise, and
    // a step of peak memory.
    let f = Fixture::new(
        &specs(40, |i, c| {
            c.metric = if i >= 21 { 1060.0 } else { 1000.0 };
            c.megabytes = if i >= 21 { 3 } else { 1 };
            c.docs_only = i != 1 && i != 21;
        }),
        &with_build(CONFIG),
    );
    let range = f.range();
    let out = f.run_json("value,rss", &range, &[]);
    assert!(out["runs"].as_u64().unwrap() > 6, "{out}");
    for test in ["value", "rss"] {
        let got = points(&f, test, &range);
        assert_eq!(got.len(), 1, "{test}: {got:?}");
        assert_eq!(got[0].0, 20, "{test}: the step is at commit 21: {got:?}");
        assert!(got[0].1 > 0.04, "{test}: {got:?}");
    }
}

#[test]
fn a_shard_tops_up_a_step_between_its_own_commits() {
    // 8 commits, a +2 % step at commit 5 at 1 % noise, 3 runs a commit. Shard 1/2 holds
    // commits 1, 3, 5 and 7 of the range and its old end: the step lies between 3 and 5,
    // and nine runs against six are too few to decide it. The shard's runner measures both
    // more, side by side, as an unsharded `run` does, and the step is decided there.
    let f = Fixture::new(
        &specs(8, |i, c| {
            c.metric = if i >= 5 { 1020.0 } else { 1000.0 };
            c.noise_seed = 3;
        }),
        &value_config(3),
    );
    let range = f.range();
    let out = f.run_json("value", &range, &["--shard", "1/2"]);
    assert!(out["topped_up"].as_u64().unwrap() > 0, "{out}");
    let j = f.json(&["detect", "value", &range, "--format", "json"]);
    let steps = j["change_points"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{j:#}");
    assert_eq!(steps[0]["commit"], f.ids[5].as_str(), "{j:#}");
    assert_eq!(
        steps[0]["span"]["last_old_commit"],
        f.ids[3].as_str(),
        "{j:#}"
    );
}

#[test]
fn run_tops_up_an_undecided_step_past_max_repeats_up_to_the_budget() {
    // The shard above (a +2 % step at commit 5 at 1 % noise, three runs a commit, shard 1/2
    // holding commits 3 and 5 beside it), with `max_repeats = 4`: that caps a commit's runs
    // in a search's first pass, but an open decision goes on to `max_runs` (the budget `find`
    // and `compare` spend), and so does `run`'s top-up: the two builds beside the step get
    // the runs it needs, side by side, and the step is decided at its commit. With a budget of
    // four, the same shard leaves it undecided.
    let outcome = |max_runs: usize| {
        let config = value_config(3).replace(
            "repeats = 3",
            &format!("repeats = 3\nmax_repeats = 4\nmax_runs = {max_runs}"),
        );
        let f = Fixture::new(
            &specs(8, |i, c| {
                c.metric = if i >= 5 { 1020.0 } else { 1000.0 };
                c.noise_seed = 3;
            }),
            &config,
        );
        let range = f.range();
        let out = f.run_json("value", &range, &["--shard", "1/2"]);
        assert!(out["topped_up"].as_u64().unwrap() > 0, "{out}");
        let j = f.json(&["detect", "value", &range, "--format", "json"]);
        let steps = j["change_points"].as_array().unwrap().clone();
        let undecided = j["undecided"].as_array().map_or(0, |u| u.len());
        (f, steps, undecided, j)
    };
    let (f, steps, _, j) = outcome(40);
    assert_eq!(steps.len(), 1, "{j:#}");
    assert_eq!(steps[0]["commit"], f.ids[5].as_str(), "{j:#}");
    let (_, steps, undecided, j) = outcome(4);
    assert!(
        steps.is_empty() && undecided == 1,
        "four runs a side decide nothing: {j:#}"
    );
}

#[test]
fn detect_says_a_step_is_undecided_when_its_runs_are_too_few_and_how_to_decide_it() {
    let f = Fixture::new(
        &specs(40, |i, c| c.metric = if i >= 21 { 1060.0 } else { 1000.0 }),
        &with_build(CONFIG),
    );
    let range = f.range();
    // Three runs of each end, each measured alone (a single revision): nothing between them
    // is measured, so nothing tops the two up.
    f.run_json("value", &f.ids[0], &[]);
    f.run_json("value", &f.ids[39], &[]);
    let out = f.cmd().args(["detect", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&f.ids[39][..10]),
        "the step is named, decided or not: {text}"
    );
    let j = f.json(&["detect", "value", &range, "--format", "json"]);
    let decided = !j["change_points"].as_array().unwrap().is_empty();
    let undecided = j["undecided"].as_array().map_or(0, |u| u.len());
    assert!(decided || undecided == 1, "{j}");
    if !decided {
        assert!(text.contains("undecided"), "{text}");
        let measure = j["undecided"][0]["measure"].as_str().unwrap();
        assert!(measure.contains(" run value "), "{measure}");
        // What it says measures them does: the range between the two builds, then both
        // topped up until the step is decided.
        let between = measure.rsplit(' ').next().unwrap();
        f.run_json("value", between, &[]);
        let got = points(&f, "value", &range);
        assert_eq!(
            got.iter().map(|p| p.0).collect::<Vec<_>>(),
            vec![20],
            "{got:?}"
        );
    }
}

#[test]
fn detect_on_a_range_and_report_on_it_list_the_same_change_points() {
    // The step at the range's first commit: its level before is the old end's runs.
    let f = Fixture::new(
        &specs(16, |i, c| c.metric = if i >= 9 { 1100.0 } else { 1000.0 }),
        &with_build(CONFIG),
    );
    let all = f.range();
    f.run_json("value", &all, &[]);
    let range = format!("{}..{}", f.ids[7], f.ids[15]);
    // (report first: its search measures more, and detect then sees what report saw.)
    let r = f.json(&["report", "value", &range, "--format", "json"]);
    let d = points(&f, "value", &range);
    let cps: Vec<(usize, f64)> = r["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let c = p["commit"].as_str().unwrap();
            (
                f.ids.iter().position(|i| i == c).unwrap(),
                p["rel_change"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(d, cps, "detect {range} and report {range} agree");
    assert_eq!(d.iter().map(|p| p.0).collect::<Vec<_>>(), vec![8], "{d:?}");
    // find's headline and the change point at its culprit are one number, within its interval.
    let c = &r["find"]["culprit"];
    assert_eq!(c["commit"], f.ids[8].as_str(), "{c}");
    let [lo, hi] = [0, 1].map(|i| c["rel_change_interval"][i].as_f64().unwrap());
    assert!(lo <= d[0].1 && d[0].1 <= hi, "{lo} {hi} {d:?}");
}

#[test]
fn adjacent_steps_are_separate_change_points_with_their_own_levels() {
    let f = Fixture::new(
        &specs(30, |i, c| {
            c.metric = match i {
                1..=14 => 1000.0,
                15..=16 => 1050.0,
                _ => 1110.0,
            };
            c.noise_pct = 0.3;
        }),
        &with_build(CONFIG),
    );
    let range = f.range();
    f.run_json("value", &range, &[]);
    let got = points(&f, "value", &range);
    let at: Vec<usize> = got.iter().map(|p| p.0).collect();
    assert_eq!(at, vec![14, 16], "{got:?}");
    // Each with its own size, not the two folded into one.
    assert!((got[0].1 - 0.05).abs() < 0.01, "{got:?}");
    assert!((got[1].1 - 0.057).abs() < 0.01, "{got:?}");
}

/// Each culprit of `find`'s JSON (or of `report`'s `find`) by commit: its before and after
/// medians with their run counts, change, interval and p-value.
fn culprit_numbers(find: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    find["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let keep = serde_json::json!({
                "before": c["before"], "after": c["after"], "rel_change": c["rel_change"],
                "rel_change_interval": c["rel_change_interval"], "windows": c["windows"],
                "p_value": c["p_value"],
            });
            (c["commit"].as_str().unwrap().to_string(), keep)
        })
        .collect()
}

#[test]
fn find_and_report_give_a_culprit_one_number_when_its_parent_shares_a_build() {
    // curl's b41c28e70a: the culprit's parent changed only documentation, so its build is
    // byte-identical to earlier commits', whose runs (taken side by side with the culprit
    // while the search probed) stand for it. find's numbers and report's must be the same,
    // and the report's change points must list the step find named.
    let f = Fixture::new(
        &specs(24, |i, c| {
            c.metric = match i {
                1..=6 => 1000.0,
                7..=17 => 1080.0,
                _ => 1060.0,
            };
            c.noise_pct = 0.3;
            c.docs_only = (12..=17).contains(&i) || i >= 19;
        }),
        &value_config(5),
    );
    let range = f.range();
    let find = f.json(&["find", "value", &range, "--format", "json", "--no-why"]);
    let named: Vec<String> = culprit_numbers(&find).into_iter().map(|c| c.0).collect();
    assert_eq!(
        named,
        vec![f.ids[6].clone(), f.ids[17].clone()],
        "both steps, the largest first: {find}"
    );
    let report = f.json(&["report", "value", &range, "--format", "json"]);
    assert_eq!(
        culprit_numbers(&find),
        culprit_numbers(&report["find"]),
        "find and report say the same of each culprit"
    );
    let cps: Vec<&str> = report["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["commit"].as_str().unwrap())
        .collect();
    assert_eq!(cps, vec![f.ids[6].as_str(), f.ids[17].as_str()], "{report}");
    // Each change point at a culprit is the culprit's step: its parent's and its runs taken
    // side by side, the same levels, change, p-value and test, and the levels give the change.
    let detect = f.json(&["detect", "value", &range, "--format", "json"]);
    let same = |p: &serde_json::Value| {
        [
            "commit",
            "before",
            "after",
            "rel_change",
            "p_value",
            "test",
            "interval",
        ]
        .map(|k| p[k].clone())
    };
    let all = |j: &serde_json::Value| j.as_array().unwrap().iter().map(same).collect::<Vec<_>>();
    assert_eq!(
        all(&detect["change_points"]),
        all(&report["change_points"]),
        "{detect}"
    );
    for c in report["find"]["culprits"].as_array().unwrap() {
        let cp = report["change_points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["commit"] == c["commit"])
            .unwrap();
        for (a, b) in [
            (&cp["before"], &c["before"]["median"]),
            (&cp["after"], &c["after"]["median"]),
            (&cp["rel_change"], &c["rel_change"]),
            (&cp["p_value"], &c["p_value"]),
        ] {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((a - b).abs() <= 1e-9 * b.abs(), "{cp} vs {c}");
        }
        assert_eq!(cp["test"], "van-elteren", "{cp}");
        let [before, after, rel] =
            ["before", "after", "rel_change"].map(|k| cp[k].as_f64().unwrap());
        assert!((after / before - 1.0 - rel).abs() < 1e-9, "{cp}");
    }
    let md = f.cmd().args(["report", "value", &range]).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(!md.contains("too few"), "{md}");
}

#[test]
fn a_step_beside_few_measured_commits_of_a_jittery_count_is_still_found() {
    // Commits differ among themselves (±0.2 %) by more than their runs spread (0.05 %), so
    // detect weighs commit levels; after the second step (-1.6 % at commit 31) only two
    // commits are measured, with 5 runs each.
    let jitter = |i: usize| [0.0, 0.002, -0.0015, 0.001, -0.002, 0.0005][i % 6];
    let f = Fixture::new(
        &specs(40, |i, c| {
            let level = match i {
                1..=11 => 1000.0,
                12..=30 => 1080.0,
                _ => 1063.0,
            };
            c.metric = level * (1.0 + jitter(i));
            c.noise_pct = 0.05;
        }),
        &value_config(5),
    );
    f.run_json("value", &format!("{}..{}", f.ids[0], f.ids[29]), &[]);
    f.run_json("value", &f.ids[30], &[]);
    f.run_json("value", &f.ids[39], &[]);
    let got = points(&f, "value", &f.range());
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, 11, "{got:?}");
    assert!((got[1].1 + 0.016).abs() < 0.003, "its own size: {got:?}");
    // Commits 31 and 40 were each measured at a time of their own (issue 56), but `run` took
    // each one's parent again beside it: the runs of 30 and 31 side by side place the step
    // at 31 itself, whatever 31's night did to its level.
    let j = f.json(&["detect", "value", &f.range(), "--format", "json"]);
    let second = &j["change_points"][1];
    assert_eq!(
        second["span"]["last_old_commit"],
        f.ids[29].as_str(),
        "{j:#}"
    );
    assert_eq!(second["commit"], f.ids[30].as_str(), "{j:#}");
    assert_eq!(second["windows"], 1, "{j:#}");
}

#[test]
fn a_second_step_about_the_threshold_is_noted_with_its_span_not_searched() {
    // -1.4 % at commit 10 (within 1.5 times the 1 % threshold), +8 % at commit 24: the first
    // probe (17) lies on the small step's level. Telling 1.4 % from 1 % would take many times
    // the runs of the search; the large step is named, the small one noted with its span
    // (10 runs a commit: a rank test of 5 against 5 cannot reach α/10, which the note needs).
    let f = Fixture::new(
        &specs(33, |i, c| {
            c.metric = match i {
                ..=9 => 1000.0,
                10..=23 => 986.0,
                _ => 1065.0,
            };
            c.noise_pct = 0.2;
        }),
        &value_config(10),
    );
    let find = f.json(&["find", "value", &f.range(), "--format", "json", "--no-why"]);
    let named: Vec<String> = culprit_numbers(&find).into_iter().map(|c| c.0).collect();
    assert_eq!(named, vec![f.ids[23].clone()], "{find:#}");
    let note = find["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.contains("second, smaller step"))
        .unwrap_or_else(|| panic!("no note of the small step: {find:#}"));
    let size: f64 = note["a second, smaller step of ".len()..]
        .split(' ')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    assert!((-1.5..=-1.2).contains(&size), "{note}");
    // Its span holds commit 10: from the old end (commit 1) to the probe placed old-like.
    let short = |i: usize| f.ids[i][..10].to_string();
    assert!(
        note.contains(&format!(
            "between {} (Commit 1) and {}",
            short(0),
            short(16)
        )),
        "{note}"
    );
    assert!(note.contains("1.5 times the threshold (1 %)"), "{note}");
}

/// Issue 37: two steps three commits apart (+4 %, then +3 %), every commit measured by `run`
/// in 5 interleaved rounds at 0.5 % noise: `detect` names both at their commits, and the same
/// two with the same sizes over every range of the store that holds both levels of each.
#[test]
fn close_steps_in_the_store_at_their_commits_in_every_range() {
    let f = Fixture::new(
        &specs(24, |i, c| {
            let at = i - 1;
            c.metric =
                1000.0 * if at >= 9 { 1.04 } else { 1.0 } * if at >= 12 { 1.03 } else { 1.0 };
            c.noise_pct = 0.5;
            c.noise_seed = 37;
        }),
        &value_config(5),
    );
    f.run_json("value", &f.range(), &[]);
    let whole = points(&f, "value", &f.range());
    assert_eq!(
        whole.iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![9, 12],
        "{whole:?}"
    );
    for end in 13..23 {
        let range = format!("{}..{}", f.ids[0], f.ids[end]);
        let part = points(&f, "value", &range);
        assert_eq!(
            part.iter().map(|p| p.0).collect::<Vec<_>>(),
            vec![9, 12],
            "..{end}: {part:?}"
        );
        assert!(
            (part[0].1 - whole[0].1).abs() < 1e-3,
            "..{end}: {part:?} {whole:?}"
        );
    }
}

#[test]
fn a_culprit_behind_a_broken_build_is_one_step_in_find_and_detect() {
    // Commit 11 does not build: find's culprit 12 is compared with commit 10, and detect's
    // change point at 12 must state the same step from the same runs.
    let f = Fixture::new(
        &specs(20, |i, c| {
            c.metric = if i < 12 { 1000.0 } else { 1080.0 };
            c.noise_pct = 0.5;
            c.broken = i == 11;
        }),
        &value_config(5),
    );
    let range = f.range();
    let find = f.json(&["find", "value", &range, "--format", "json", "--no-why"]);
    let c = &find["culprits"][0];
    assert_eq!(c["commit"], f.ids[11].as_str(), "{find}");
    let d = f.json(&["detect", "value", &range, "--format", "json"]);
    let cp = &d["change_points"][0];
    assert_eq!(cp["commit"], c["commit"], "{d}");
    for (a, b) in [
        (&cp["rel_change"], &c["rel_change"]),
        (&cp["p_value"], &c["p_value"]),
        (&cp["before"], &c["before"]["median"]),
    ] {
        let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
        assert!((a - b).abs() <= 1e-9 * b.abs(), "{cp} vs {c}");
    }
}

/// Where a probe lies, in one vocabulary: a probe whose median is past both levels is said
/// "beyond" one of them, never "between the levels", and one said between lies between them.
#[test]
fn a_probe_past_both_levels_is_said_beyond_not_between() {
    // 1000 up to 1300 at commit 6, back down to 1100 at commit 12: the ends differ by +10 %,
    // and every probe of commits 6..11 reads 1300, beyond the new end's level.
    let f = Fixture::new(
        &specs(17, |i, c| {
            c.metric = match i {
                6..=11 => 1300.0,
                12.. => 1100.0,
                _ => 1000.0,
            }
        }),
        &value_config(3),
    );
    let out = f
        .cmd()
        .args(["find", "value", &f.range(), "--no-progress"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let placed: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(": median ") && l.contains(" against the old level "))
        .collect();
    let number = |l: &str, after: &str| -> f64 {
        let rest = &l[l.find(after).unwrap() + after.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let mut beyond = 0;
    for l in &placed {
        let (m, old, new) = (
            number(l, ": median "),
            number(l, "against the old level "),
            number(l, "and the new level "),
        );
        let inside = m >= old.min(new) && m <= old.max(new);
        if l.contains(" is between the levels") {
            assert!(inside, "said between, lies outside: {l}\n{err}");
        }
        if l.contains(" is beyond the ") {
            assert!(!inside, "said beyond, lies inside: {l}\n{err}");
            beyond += 1;
        }
    }
    assert!(
        beyond > 0,
        "a probe of 6..11 reads past both levels:\n{err}"
    );
}
