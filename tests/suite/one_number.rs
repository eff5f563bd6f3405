//! Issue 50: one step, one number. A count that every commit's own code moves a little (as
//! instruction counts under Cachegrind move), measured exactly (two equal runs a commit, not
//! declared deterministic), with one real step: `find`, `detect RANGE`, `detect` over the
//! whole store and the report's change-point table give the step the same two levels, the
//! same size and the same evidence (exact), the levels being the runs `show` lists.

use crate::common;

use common::{specs, with_build, Fixture};

const COUNT: &str = r#"
[tests.count]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
direction = "lower"
threshold = "1%"
repeats = 2
"#;

/// `report all --format html` into the fixture's `site/`, and the page of `test`.
fn site_page(f: &Fixture, test: &str) -> String {
    let site = f.dir.path().join("site");
    let out = f
        .cmd()
        .args(["report", "all", "--format", "html", "--out"])
        .arg(&site)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(site.join(format!("{test}.html"))).unwrap()
}

/// `import` of the cron rows `csv` (header included).
fn import(f: &Fixture, csv: &str) {
    let file = f.dir.path().join("cron.csv");
    std::fs::write(&file, csv).unwrap();
    let o = f.cmd().arg("import").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// 30 commits: 90,000,000 plus a few hundred a commit, −3 % from commit 19 (1-based).
fn fixture() -> Fixture {
    Fixture::new(
        &specs(30, |i, c| {
            c.noise_pct = 0.0;
            c.work = 0;
            let drift = 37.0 * i as f64 + if i % 3 == 0 { 211.0 } else { 0.0 };
            c.metric = if i >= 19 { 87_300_000.0 } else { 90_000_000.0 } + drift;
        }),
        &with_build(COUNT),
    )
}

#[test]
fn an_exact_step_has_one_size_and_one_evidence_in_every_view() {
    let f = fixture();
    let range = f.range();
    f.run_json("count", &range, &[]);
    // Two runs a commit, no search yet: the step between two exact values is exact already.
    let d = f.json(&["detect", "count", &range, "--format", "json"]);
    let first = &d["change_points"].as_array().unwrap()[0];
    assert_eq!(first["commit"].as_str(), Some(f.ids[18].as_str()), "{d:#}");
    assert_eq!(first["test"].as_str(), Some("exact"), "{d:#}");
    views_agree(&f, &range, 18);
    // One trend: `show` over every stored commit and the test's page of the site say the same.
    let show = f.json(&["show", "count", "--format", "json"]);
    let trend = &show["summary"]["trend"];
    let page = site_page(&f, "count");
    let said = format!(
        "over the medians of {} measured commits",
        trend["commits"].as_u64().unwrap()
    );
    assert!(page.contains(&said), "{said}: {page}");
    let p = format!("(p = {:.3};", trend["p_value"].as_f64().unwrap());
    assert!(page.contains(&p), "{p}: {page}");
}

/// `find`, `detect RANGE`, `detect` and `report` give the step at commit `step` (0-based) one
/// size and one evidence, from the levels `show` lists.
fn views_agree(f: &Fixture, range: &str, step: usize) {
    let found = f.json(&["find", "count", range, "--format", "json"]);
    let culprit = &found["culprits"][0];
    let at = culprit["commit"].as_str().unwrap().to_string();
    assert_eq!(at, f.ids[step], "{found:#}");
    let show = f.show("count", range);
    let median = |id: &str| {
        show["commits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["commit"].as_str() == Some(id))
            .and_then(|c| c["median"].as_f64())
            .unwrap()
    };
    let (before, after) = (median(&f.ids[step - 1]), median(&f.ids[step]));
    let size = format!("{:.2}", 100.0 * (after / before - 1.0));
    let pct = |v: &serde_json::Value| format!("{:.2}", 100.0 * v.as_f64().unwrap());
    assert_eq!(pct(&culprit["rel_change"]), size, "{found:#}");
    for args in [
        vec!["detect", "count", range, "--format", "json"],
        vec!["detect", "count", "--format", "json"],
    ] {
        let d = f.json(&args);
        let points = d["change_points"].as_array().unwrap();
        let p = points
            .iter()
            .find(|p| p["commit"].as_str() == Some(at.as_str()))
            .unwrap_or_else(|| panic!("{args:?}: no change point at the culprit: {d:#}"));
        assert_eq!(pct(&p["rel_change"]), size, "{args:?}: {d:#}");
        assert_eq!(p["before"].as_f64(), Some(before), "{args:?}: {d:#}");
        assert_eq!(p["after"].as_f64(), Some(after), "{args:?}: {d:#}");
        assert_eq!(p["test"].as_str(), Some("exact"), "{args:?}: {d:#}");
    }
    let text = f.cmd().args(["detect", "count", range]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains(&format!("({size} %), exact")), "{text}");
    let report = f.cmd().args(["report", "count", range]).output().unwrap();
    let md = String::from_utf8_lossy(&report.stdout).to_string();
    let row = md
        .lines()
        .find(|l| l.starts_with('|') && l.contains(&at[..10]) && l.contains(" % "))
        .unwrap_or_else(|| panic!("no change-point row names {at}: {md}"));
    assert!(row.contains(&format!("{size} %")), "{row}\n{md}");
    assert!(!row.contains("t test"), "{row}");
}

#[test]
fn a_count_imported_every_fourth_commit_then_searched_has_one_size() {
    let f = fixture();
    let mut csv = String::from("commit,test,value\n");
    for (i, id) in f.ids.iter().enumerate().step_by(4) {
        let n = i + 1;
        let drift = 37.0 * n as f64 + if n % 3 == 0 { 211.0 } else { 0.0 };
        let v = if n >= 19 { 87_300_000.0 } else { 90_000_000.0 } + drift;
        csv.push_str(&format!("{id},count,{v}\n"));
    }
    import(&f, &csv);
    let range = f.range();
    views_agree(&f, &range, 18);
}

const VALUE: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#;

#[test]
fn a_report_states_every_culprit_triage_confirmed_over_its_range() {
    // +2.6 % at commit 10 (within 1.5 times the threshold: a search stops before it) and
    // +10 % at commit 20, 1 % noise; cron rounds on every 4th commit.
    let f = Fixture::new(
        &specs(30, |i, c| {
            c.work = 0;
            c.metric =
                1000.0 * if i >= 10 { 1.026 } else { 1.0 } * if i >= 20 { 1.10 } else { 1.0 };
        }),
        &with_build(VALUE),
    );
    for n in (1..=30).step_by(4).chain([30]) {
        f.run_json("value", &f.ids[n - 1], &[]);
    }
    let range = f.range();
    let t = f.json(&["triage", "value", &range, "--format", "json"]);
    let confirmed: Vec<String> = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["state"] != "unconfirmed")
        .map(|x| x["commit"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(confirmed.len(), 2, "{t:#}");
    let report = f.cmd().args(["report", "value", &range]).output().unwrap();
    let md = String::from_utf8_lossy(&report.stdout).to_string();
    let j = f.json(&["report", "value", &range, "--format", "json"]);
    let named: Vec<&str> = j["find"]["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    let stated: Vec<&str> = j["triage_confirmed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    for c in &confirmed {
        // Named by the report's own search, or stated as triage confirmed it: never dropped.
        assert!(
            named.contains(&c.as_str()) != stated.contains(&c.as_str()),
            "{c}: named {named:?}, stated {stated:?}"
        );
        let short = &c[..10];
        assert!(
            md.contains(&format!("- `{short}`")) || named.contains(&c.as_str()),
            "{md}"
        );
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| `{short}`")))
            .unwrap_or_else(|| panic!("no change-point row for {short}:\n{md}"));
        assert!(!row.ends_with("| not named |"), "{row}");
        // One size: the change-point row's is triage's.
        if let Some(k) = j["triage_confirmed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["commit"] == c.as_str())
        {
            let size = format!("{:+.2} %", 100.0 * k["rel_change"].as_f64().unwrap());
            assert!(row.contains(&size), "{size}: {row}");
        }
    }
    // The step the search stopped before is one of them.
    assert_eq!(stated, [f.ids[9].as_str()], "{md}");
    // A step in a printed number is not in the code's work: the report and the site say
    // the instructions did not move, and the site draws no functions' bars for it.
    if md.contains("the instructions did not move") {
        let page = site_page(&f, "value");
        assert!(page.contains("The instructions did not move"), "{page}");
        assert!(!page.contains("<table class=\"bars\">"), "{page}");
    }
}

#[test]
fn a_search_narrowed_to_an_imported_gap_is_labelled_as_the_gap_and_the_views_cover_the_range() {
    let f = Fixture::new(
        &specs(30, |i, c| {
            c.work = 0;
            c.metric = if i >= 19 { 1100.0 } else { 1000.0 };
        }),
        &with_build(VALUE),
    );
    // Three cron rounds on every 6th commit (commits 1, 7, 13, 19, 25).
    let mut csv = String::from("commit,test,value,round\n");
    for round in 0..3 {
        for (i, id) in f.ids.iter().enumerate().step_by(6) {
            let level = if i + 1 >= 19 { 1100.0 } else { 1000.0 };
            let v = level * (1.0 + 0.005 * ((i * 7 + round * 3) % 5) as f64);
            csv.push_str(&format!("{id},value,{v},{round}\n"));
        }
    }
    import(&f, &csv);
    let range = f.range();
    let md = f.cmd().args(["report", "value", &range]).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    let gap = format!(
        "searched only 6 commits after {} up to {}, the gap the imported rounds show",
        &f.ids[12][..10],
        &f.ids[18][..10]
    );
    assert!(
        md.contains(&format!("29 commits on the first-parent chain; {gap}")),
        "{md}"
    );
    assert!(
        md.contains("over every stored run of the 30 commits of"),
        "{md}"
    );
    assert!(
        md.contains("of the old end and the range's 29 commits"),
        "{md}"
    );
    assert!(md.contains(&format!("`{}`", &f.ids[18][..10])), "{md}");
    // JSON: the range asked, every commit of it.
    let j = f.json(&["report", "value", &range, "--format", "json"]);
    assert_eq!(j["commits"].as_array().unwrap().len(), 30, "{j:#}");
    assert_eq!(j["change_points"][0]["commit"], f.ids[18].as_str(), "{j:#}");
    // `find` names the gap it searched too.
    let text = f.cmd().args(["find", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(
        text.contains(&format!("searched {range}, only 6 commits after")),
        "{text}"
    );
}

/// SplitMix64: the generated cases are the same on every run.
fn mix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The change points of `detect`'s (or the report's) JSON as (commit, size to two decimals).
fn sizes(points: &serde_json::Value) -> Vec<(String, String)> {
    points
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["commit"].as_str().unwrap().to_string(),
                format!("{:+.2}", 100.0 * p["rel_change"].as_f64().unwrap()),
            )
        })
        .collect()
}

#[test]
fn generated_histories_give_every_step_one_size_in_every_view_of_one_store() {
    let mut seed = 50;
    for case in 0..3 {
        let step = 8 + (mix(&mut seed) % 14) as usize;
        let size = 1.04 + (mix(&mut seed) % 80) as f64 / 1000.0;
        let noisy = case != 1;
        let f = Fixture::new(
            &specs(26, |i, c| {
                c.work = 0;
                c.noise_pct = if noisy { 1.0 } else { 0.0 };
                c.noise_seed = 1 + case as u64;
                c.metric = 1000.0 * if i >= step { size } else { 1.0 };
            }),
            &with_build(VALUE),
        );
        let range = f.range();
        // Rounds on every 3rd commit, then the sheriff: its findings, then every view of the
        // same store.
        f.run_json("value", &range, &["--shard", "3/3"]);
        let t = f.json(&["triage", "value", &range, "--format", "json"]);
        let found: Vec<(String, String)> = t["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["state"] != "unconfirmed")
            .map(|x| {
                (
                    x["commit"].as_str().unwrap().to_string(),
                    format!(
                        "{:+.2}",
                        100.0 * x["tests"][0]["rel_change"].as_f64().unwrap()
                    ),
                )
            })
            .collect();
        let culprit = f.ids[step - 1].clone();
        assert!(
            found.iter().any(|(c, _)| *c == culprit),
            "case {case} (step at {step}, x{size}): {t:#}"
        );
        for args in [
            vec!["detect", "value", &range, "--format", "json"],
            vec!["detect", "value", "--format", "json"],
        ] {
            let d = sizes(&f.json(&args)["change_points"]);
            for x in &found {
                assert!(d.contains(x), "case {case}: triage {x:?}, {args:?} {d:?}");
            }
        }
        // The report (its own search adds runs: a later store) states one size per step in
        // its headline, its change-point rows, its JSON and the site made from that store.
        let j = f.json(&["report", "value", &range, "--format", "json"]);
        let cps = sizes(&j["change_points"]);
        let head = &j["find"]["culprits"][0];
        let named = (
            head["commit"].as_str().unwrap().to_string(),
            format!("{:+.2}", 100.0 * head["rel_change"].as_f64().unwrap()),
        );
        assert_eq!(named.0, culprit, "case {case}: {j:#}");
        assert!(
            cps.contains(&named),
            "case {case}: headline {named:?}, rows {cps:?}"
        );
        let md = f.cmd().args(["report", "value", &range]).output().unwrap();
        let md = String::from_utf8_lossy(&md.stdout).to_string();
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| `{}`", &culprit[..10])))
            .unwrap_or_else(|| panic!("case {case}: no row: {md}"));
        assert!(
            row.contains(&format!("{} %", named.1)),
            "case {case}: {row}"
        );
        assert!(
            md.contains(&format!("**value: {} %", named.1)),
            "case {case}: {md}"
        );
        let page = site_page(&f, "value");
        assert!(
            page.contains(&format!("{} %", named.1)),
            "case {case}: {page}"
        );
        let evidence = if noisy { "p = " } else { "exact" };
        assert!(row.contains(evidence), "case {case}: {row}");
    }
}

#[test]
fn a_count_searched_on_one_run_a_commit_is_exact_in_find_as_in_every_view() {
    if !common::have_tool("valgrind", "Cachegrind counts the instructions") {
        return;
    }
    let f = Fixture::new(
        &specs(16, |i, c| {
            c.work = if i >= 11 { 2_060_000 } else { 2_000_000 };
            c.noise_pct = 0.0;
        }),
        &with_build(
            "[tests.instr]\ncommand = \"./app\"\nmetric = \"instructions\"\nthreshold = \"1%\"\n\n[measure]\ncounter = \"cachegrind\"\n",
        ),
    );
    let range = f.range();
    let found = f.json(&["find", "instr", &range, "--format", "json", "--no-why"]);
    let culprit = &found["culprits"][0];
    assert_eq!(culprit["commit"], f.ids[10].as_str(), "{found:#}");
    let size = format!("{:+.2}", 100.0 * culprit["rel_change"].as_f64().unwrap());
    let md = f.cmd().args(["report", "instr", &range]).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    let head = md.lines().find(|l| l.starts_with("**instr: ")).unwrap();
    assert!(
        head.contains(&format!("{size} %")) && head.contains("exact"),
        "{head}"
    );
    assert!(!head.contains("t test"), "{head}");
    let row = md
        .lines()
        .find(|l| l.starts_with(&format!("| `{}`", &f.ids[10][..10])))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        row.contains(&format!("{size} %")) && row.contains("| exact |"),
        "{row}"
    );
}
