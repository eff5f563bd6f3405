//! The first commits of a nightly range (issue 60): a shard holds both ends of the range,
//! `triage RANGE` measures the old end before it trusts a step (or says which commits at the
//! start no round covers), the HTML site of a RANGE starts at its old end as `report` does,
//! and an exact change across commits not measured is stated as the span's, not as one
//! commit's exact step.

use crate::common;

use common::{specs, with_build, Fixture};

const CONFIG: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
deterministic = true
threshold = "1%"
"#;

/// 21 commits of an exact value: +5 % at the range's first commit (commit 2), +2 % at commit
/// 4, flat after.
fn fixture() -> Fixture {
    Fixture::new(
        &specs(21, |i, c| {
            c.metric = match i {
                1 => 1000.0,
                2 | 3 => 1050.0,
                _ => 1071.0,
            };
            c.noise_pct = 0.0;
            c.work = 0;
        }),
        &with_build(CONFIG),
    )
}

/// The commits of `show`'s JSON that have samples.
fn measured(f: &Fixture, show: &serde_json::Value) -> Vec<usize> {
    show["commits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["n"].as_u64().unwrap_or(0) > 0)
        .filter_map(|c| f.ids.iter().position(|id| c["commit"] == id.as_str()))
        .collect()
}

#[test]
fn a_shard_holds_both_ends_and_triage_sees_the_step_at_the_first_commit() {
    let f = fixture();
    let range = f.range();
    // The night's shard: every 10th commit from the 10th, and both ends.
    let out = f
        .cmd()
        .args([
            "run", "value", &range, "--shard", "10/10", "--format", "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("and both ends of the range: the old end"),
        "{err}"
    );
    let all = f.json(&["show", "value", &range, "--format", "json"]);
    assert_eq!(measured(&f, &all), vec![0, 10, 20], "{all}");

    // detect: one exact change across the 9 commits not measured, stated as the span's: this
    // commit's own share anything from none of it to all of it.
    let d = f.json(&["detect", "value", &range, "--format", "json"]);
    let p = &d["change_points"][0];
    assert_eq!(p["commit"], f.ids[10].as_str(), "{d}");
    assert_eq!(p["span"]["unmeasured"], 9, "{d}");
    assert_eq!(p["deterministic"], true, "{d}");
    let rel = p["rel_change"].as_f64().unwrap();
    assert!((rel - 0.071).abs() < 1e-9, "{d}");
    assert_eq!(p["interval"], serde_json::json!([0.0, rel]), "{d}");
    let out = f.cmd().args(["detect", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("exact between the measured commits around it, not this commit's own step: its share +0.00 % to +7.10 %"),
        "{text}"
    );

    // triage: the step at the first commit is searched from the old end and found.
    let out = f
        .cmd()
        .args(["triage", "value", &range, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let commits: Vec<&str> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["commit"].as_str())
        .collect();
    assert!(commits.contains(&f.ids[1].as_str()), "{j:#}\n{err}");
}

#[test]
fn triage_measures_the_old_end_a_round_never_measured() {
    let f = fixture();
    let range = f.range();
    // Two rounds, neither at the old end: the step at the first commit lies before both.
    f.run_json("value", &f.ids[10], &[]);
    f.run_json("value", &f.ids[20], &[]);
    let out = f
        .cmd()
        .args(["triage", "value", &range, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "measuring the range's old end, {}",
            &f.ids[0][..10]
        )),
        "{err}"
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["commit"] == f.ids[1].as_str()),
        "{j:#}\n{err}"
    );
    // Over budget, nothing is measured, and the commits no round covers are said.
    let g = fixture();
    g.run_json("value", &g.ids[10], &[]);
    let out = g
        .cmd()
        .args([
            "triage",
            "value",
            &g.range(),
            "--max-builds",
            "0",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).replace('\n', " ");
    assert!(
        err.contains("`value`: the first 10 commits of") && err.contains("have no numbers"),
        "{err}"
    );
}

#[test]
fn the_site_of_a_range_starts_at_its_old_end() {
    let f = fixture();
    let range = f.range();
    f.run_json("value", &range, &[]);
    // The old end, measured as `find` and `report` measure it.
    f.run_json("value", &f.ids[0], &[]);
    let out_dir = f.dir.path().join("site");
    let out = f
        .cmd()
        .args(["report", "value", &range, "--format", "html", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(out_dir.join("value.html")).unwrap();
    assert!(
        page.contains("20 commits of") && page.contains("and its old end"),
        "the scope says the old end"
    );
    // The change point at the range's first commit is on the page, as `report` has it.
    let first = &f.ids[1][..10];
    assert!(page.contains(&format!("href=\"#c-{first}\"")), "{first}");
    let md = f
        .cmd()
        .args(["report", "value", &range, "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains(first), "{md}");
}
