//! Issue 48: nothing certain that isn't, nothing silent that is. The views people read every
//! day (`detect`, `detect RANGE`, `report`, the HTML site) on the data a nightly machine
//! gives: runs taken at two machine states (the state simulated by a factor the test command
//! reads from the environment), a noiseless count imported once a commit, one build measured
//! in windows of its own, a step between sparse rounds, the newest round alone, huge values.

use crate::common;

use common::{specs, with_build, Fixture};

/// `value` as the program prints it, times the machine's state `$FACTOR` (1 when unset).
const MACHINE: &str = r#"
[tests.value]
command = "./app | awk -v f=\"${FACTOR:-1}\" '/^value:/ { printf \"value: %.6f\\n\", $2 * f }'"
metric = { regex = "^value: ([0-9.]+)" }
direction = "lower"
threshold = "2%"
repeats = 5
"#;

/// 40 commits of 2 % noise at 1000, or +10 % from commit `step` (1-based) when given.
fn machine_fixture(step: Option<usize>) -> Fixture {
    Fixture::new(
        &specs(40, |i, c| {
            c.noise_pct = 2.0;
            c.work = 0;
            c.metric = match step {
                Some(s) if i >= s => 1100.0,
                _ => 1000.0,
            };
        }),
        &with_build(MACHINE),
    )
}

/// `find` with the machine at ×1.3, then every 4th commit by `run` at ×1.
fn two_machine_states(f: &Fixture) -> String {
    two_machine_states_over(f, &f.range())
}

/// [`two_machine_states`], the shard over `sharded` (`find` over the whole range); what the
/// shard said.
fn two_machine_states_over(f: &Fixture, sharded: &str) -> String {
    let out = f
        .cmd()
        .args(["find", "value", &f.range(), "--format", "json"])
        .env("FACTOR", "1.3")
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = f
        .cmd()
        .args(["run", "value", sharded, "--shard", "4/4"])
        .env("FACTOR", "1.0")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    said
}

/// The commits `detect`'s JSON decides a step at.
fn decided(j: &serde_json::Value) -> Vec<String> {
    j["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn no_step_measured_at_two_machine_states_is_decided_nowhere() {
    let f = machine_fixture(None);
    // `find` measures the range's ends at ×1.3; the shard, over the commits between, holds
    // neither (a shard tops up the steps its own commits show: one holding the ends would
    // measure them again beside their neighbours, and the runs would settle the states).
    two_machine_states_over(&f, &format!("{}..{}", f.ids[1], f.ids[38]));
    let range = f.range();
    for args in [
        vec!["detect", "value", "--format", "json"],
        vec!["detect", "value", &range, "--format", "json"],
    ] {
        let j = f.json(&args);
        assert!(decided(&j).is_empty(), "{args:?}: {j:#}");
        // What the machine may explain is said as such.
        let open = j["undecided"].as_array().unwrap();
        assert!(
            open.iter().any(|u| u["why"] == "measured-apart"),
            "{args:?}: {j:#}"
        );
        assert!(
            open.iter()
                .filter(|u| u["why"] == "measured-apart")
                .all(|u| u["p_value"] == 1.0),
            "{args:?}: {j:#}"
        );
    }
    let text = f.cmd().args(["detect", "value"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with("no change points decided"), "{text}");
    assert!(text.contains("measured apart"), "{text}");
    let j = f.json(&["report", "value", &range, "--format", "json"]);
    assert!(j["change_points"].as_array().unwrap().is_empty(), "{j:#}");
    let md = f.cmd().args(["report", "value", &range]).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("none decided."), "{md}");
    assert!(md.contains("Undecided:"), "{md}");
    // The site words and colours the test by decided steps: none.
    let site = f.dir.path().join("site");
    let out = f
        .cmd()
        .args(["report", "value", "--format", "html", "--out"])
        .arg(&site)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(
        index.contains("<b class=\"none\">no step decided,"),
        "{index}"
    );
    let page = std::fs::read_to_string(site.join("value.html")).unwrap();
    assert!(page.contains("<h2>Undecided</h2>"), "{page}");
    assert!(!page.contains("SIGNIFICANT"), "{page}");
}

#[test]
fn a_shard_holding_ends_another_state_measured_measures_them_again_beside_its_own() {
    // Issue 48's shape: the ends by `find` at ×1.3, every 4th commit and both ends by a shard
    // at ×1.0. The shard's runs show the ends apart from their neighbours; it measures both
    // sides again, side by side, and the runs then say what the states hid: nothing moved.
    let f = machine_fixture(None);
    let said = two_machine_states(&f);
    assert!(
        said.contains("its sides were measured apart; measuring"),
        "{said}"
    );
    for args in [
        vec!["detect", "value", "--format", "json"],
        vec!["detect", "value", &f.range(), "--format", "json"],
    ] {
        let j = f.json(&args);
        assert!(decided(&j).is_empty(), "{args:?}: {j:#}");
        assert!(
            j["undecided"].as_array().unwrap().is_empty(),
            "{args:?}: {j:#}"
        );
    }
}

#[test]
fn a_real_step_among_two_machine_states_is_the_only_one_decided() {
    let f = machine_fixture(Some(21));
    two_machine_states(&f);
    let j = f.json(&["detect", "value", "--format", "json"]);
    // find measured commit 21 and its parent side by side: the step is decided there, and
    // nowhere else.
    assert_eq!(decided(&j), vec![f.ids[20].clone()], "{j:#}");
    let c = &j["change_points"][0];
    assert!(
        (c["rel_change"].as_f64().unwrap() - 0.10).abs() < 0.03,
        "{j:#}"
    );
}

#[test]
fn a_noiseless_count_imported_once_a_commit_is_exact() {
    let f = Fixture::new(
        &specs(30, |_, c| c.work = 0),
        &with_build(
            r#"
[tests.allocs]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
"#,
        ),
    );
    let mut csv = String::from("commit,test,value\n");
    for (i, id) in f.ids.iter().enumerate() {
        let v = if (13..=20).contains(&i) { 1080 } else { 1000 };
        csv.push_str(&format!("{id},allocs,{v}\n"));
    }
    let file = f.dir.path().join("cron.csv");
    std::fs::write(&file, csv).unwrap();
    let o = f.cmd().arg("import").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = f.json(&["detect", "allocs", "--format", "json"]);
    assert_eq!(
        decided(&j),
        vec![f.ids[13].clone(), f.ids[21].clone()],
        "{j:#}"
    );
    assert!(
        j["change_points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["test"] == "exact"),
        "{j:#}"
    );
    // Over a range holding both levels of each step, the same.
    let range = format!("{}..{}", f.ids[8], f.ids[24]);
    let j = f.json(&["detect", "allocs", &range, "--format", "json"]);
    assert_eq!(
        decided(&j),
        vec![f.ids[13].clone(), f.ids[21].clone()],
        "{j:#}"
    );
}

#[test]
fn one_build_measured_in_windows_of_its_own_is_decided() {
    // Commits 2 and 3 build what 1 builds, 5 what 4 builds: two builds, each measured by
    // `run REV` and `run REV --again` at its own times; +5 % at commit 4, 1 % noise.
    let f = Fixture::new(
        &specs(5, |i, c| {
            c.work = 0;
            c.metric = if i >= 4 { 1050.0 } else { 1000.0 };
            c.docs_only = matches!(i, 2 | 3 | 5);
        }),
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 11
max_repeats = 100
"#,
        ),
    );
    // Every commit built (the identical builds known), each build measured once in one
    // window, then each again by itself: the first build twice more, the second once.
    f.run_json("value", &format!("{}..{}", f.ids[0], f.ids[4]), &[]);
    for (rev, again) in [(&f.ids[2], 2), (&f.ids[4], 1)] {
        for _ in 0..again {
            f.run_json("value", rev, &["--again"]);
        }
    }
    let j = f.json(&["detect", "value", "--format", "json"]);
    assert_eq!(decided(&j), vec![f.ids[3].clone()], "{j:#}");
    assert!(j["undecided"].as_array().unwrap().is_empty(), "{j:#}");
}

#[test]
fn a_step_between_sparse_rounds_names_its_span() {
    // Every 4th commit measured; +8 % from commit 14 (1-based): the last measured at the old
    // level is commit 13, the first at the new 17; 14, 15 and 16 were not measured.
    let f = Fixture::new(
        &specs(33, |i, c| {
            c.work = 0;
            c.metric = if i >= 14 { 1080.0 } else { 1000.0 };
            c.noise_pct = 0.5;
        }),
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#,
        ),
    );
    let range = format!("{}..{}", f.ids[0], f.ids[32]);
    f.run_json("value", &range, &["--shard", "4/4"]);
    let j = f.json(&["detect", "value", "--format", "json"]);
    let steps = j["change_points"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{j:#}");
    assert_eq!(steps[0]["commit"], f.ids[16], "{j:#}");
    assert_eq!(steps[0]["span"]["last_old_commit"], f.ids[12], "{j:#}");
    assert_eq!(steps[0]["span"]["unmeasured"], 3, "{j:#}");
    let text = f.cmd().args(["detect", "value"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!(
            "the step lies after {}, the last measured at the old level: 3 commits between not measured",
            &f.ids[12][..10]
        )),
        "{text}"
    );
    // The site's page of the test says the same (every commit with results).
    let site = f.dir.path().join("site");
    let out = f
        .cmd()
        .args(["report", "value", "--format", "html", "--out"])
        .arg(&site)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(site.join("value.html")).unwrap();
    assert!(
        page.contains(&format!(
            "after <span class=\"hash\">{}</span>; 3 between not measured",
            &f.ids[12][..10]
        )),
        "{page}"
    );
    // A search of the range names the commit inside the span, and the report says so.
    let md = f.cmd().args(["report", "value", &range]).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains(&format!("regression at `{}`", &f.ids[13][..10])),
        "{md}"
    );
}

#[test]
fn the_newest_round_alone_and_huge_values_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let csv = |name: &str, rows: Vec<(usize, f64)>| {
        let p = dir.path().join(name);
        let mut s = String::from("index,value\n");
        for (i, v) in rows {
            s.push_str(&format!("{i},{v:e}\n"));
        }
        std::fs::write(&p, s).unwrap();
        p
    };
    let detect = |p: &std::path::Path, json: bool| {
        let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
        c.args(["detect", "--input"]).arg(p);
        if json {
            c.args(["--format", "json"]);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // Noise of about 0.6 % from a fixed sequence, +10 % on the newest index alone.
    let wobble = |i: usize| {
        let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 32;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + 0.012 * (u - 0.5)
    };
    let newest = csv(
        "newest.csv",
        (0..40)
            .map(|i| (i, if i == 39 { 1100.0 } else { 1000.0 } * wobble(i)))
            .collect(),
    );
    let j: serde_json::Value = serde_json::from_str(&detect(&newest, true)).unwrap();
    let said: Vec<&serde_json::Value> = j["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .chain(j["undecided"].as_array().unwrap())
        .filter(|c| c["index"] == 39)
        .collect();
    assert_eq!(said.len(), 1, "{j:#}");
    assert!(
        (said[0]["rel_change"].as_f64().unwrap() - 0.10).abs() < 0.02,
        "{j:#}"
    );
    // Values near 1e200, one of them negative: found, and printed readably.
    let huge = csv(
        "huge.csv",
        (0..40)
            .map(|i| {
                let v = if i >= 20 { 1.1e200 } else { 1e200 } * wobble(i);
                (i, if i == 5 { -v } else { v })
            })
            .collect(),
    );
    let text = detect(&huge, false);
    assert!(text.starts_with("index 20: "), "{text}");
    assert!(
        text.contains("e199 -> ") || text.contains("e200 -> "),
        "{text}"
    );
    assert!(!text.contains("inf"), "{text}");
    assert!(text.len() < 400, "{text}");
}
