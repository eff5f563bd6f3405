//! Issue 56: the machine in the model, with the real binary. A machine's state (`$FACTOR`, the
//! speed every printed value is multiplied by) moves from one command to the next, or from one
//! named machine to another; no view may state a step it could explain, and a real step that
//! runs link to its neighbours (or that each machine shows on its own) is decided.

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

/// `n` commits of `noise` % noise at 1000, `level(i)` times that from commit i (1-based).
fn fixture(n: usize, noise: f64, level: impl Fn(usize) -> f64) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.noise_pct = noise;
            c.work = 0;
            c.metric = 1000.0 * level(i);
        }),
        &with_build(MACHINE),
    )
}

/// `perfbisect ARGS` with the machine at `factor`; asserts it ran (a search may be
/// inconclusive: exit 3).
fn at(f: &Fixture, factor: f64, args: &[&str]) {
    let out = f
        .cmd()
        .args(args)
        .env("FACTOR", factor.to_string())
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The commits the JSON of `detect` or `report` decides a step at.
fn decided(j: &serde_json::Value) -> Vec<String> {
    j["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap().to_string())
        .collect()
}

/// Nothing decided by `detect` (whole store and range) nor by `report`.
fn nothing_decided(f: &Fixture) {
    let range = f.range();
    for args in [
        vec!["detect", "value", "--format", "json"],
        vec!["detect", "value", &range, "--format", "json"],
        vec!["report", "value", &range, "--format", "json"],
    ] {
        let j = f.json(&args);
        assert!(decided(&j).is_empty(), "{args:?}: {j:#}");
    }
}

/// A deterministic stream of Gaussian draws (Box-Muller over a 64-bit LCG).
struct Noise(u64);

impl Noise {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn gauss(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// `import` of cron rows (`commit,test,value,round,machine`).
fn import(f: &Fixture, rows: &str) {
    let file = f.dir.path().join("cron.csv");
    std::fs::write(&file, format!("commit,test,value,round,machine\n{rows}")).unwrap();
    let o = f.cmd().arg("import").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// One cron round a commit, `runs` rows each, on the machine `machine(i)` whose speed is
/// `speed(i)`, the code's level `level(i)` (0-based commits), `noise` relative.
fn rounds(
    f: &Fixture,
    runs: usize,
    noise: f64,
    seed: u64,
    machine_of: impl Fn(usize) -> (&'static str, f64),
    level: impl Fn(usize) -> f64,
) -> String {
    let mut g = Noise(seed);
    let mut csv = String::new();
    for (i, id) in f.ids.iter().enumerate() {
        let (machine, speed) = machine_of(i);
        for _ in 0..runs {
            let v = 1000.0 * level(i) * speed * (1.0 + noise * g.gauss());
            csv.push_str(&format!("{id},value,{v:.4},night-{i},{machine}\n"));
        }
    }
    csv
}

#[test]
fn a_search_a_sweep_and_a_rerun_on_three_machine_states_decide_nothing() {
    // No step; `find` at ×1.30, every 4th commit at ×1.00, the newest again at ×1.25.
    let f = fixture(40, 2.0, |_| 1.0);
    let range = f.range();
    at(&f, 1.3, &["find", "value", &range]);
    for i in (0..40).step_by(4) {
        at(&f, 1.0, &["run", "value", &f.ids[i]]);
    }
    at(&f, 1.25, &["run", "value", &f.ids[39], "--again"]);
    nothing_decided(&f);
}

#[test]
fn one_slow_night_is_no_step() {
    // A cron of one commit a night, 5 runs; night 12 (1-based) 10 % slow.
    let f = fixture(20, 2.0, |_| 1.0);
    for (i, id) in f.ids.iter().enumerate() {
        let factor = if i + 1 == 12 { 1.1 } else { 1.0 };
        at(&f, factor, &["run", "value", id]);
    }
    nothing_decided(&f);
}

#[test]
fn a_machine_handover_is_a_machine_difference_not_a_step() {
    // Machine A measured commits 0-19, B (10 % slower) 20-39; the code never moved.
    let f = fixture(40, 1.0, |_| 1.0);
    let csv = rounds(
        &f,
        5,
        0.01,
        7,
        |i| if i < 20 { ("A", 1.0) } else { ("B", 1.1) },
        |_| 1.0,
    );
    import(&f, &csv);
    let j = f.json(&["detect", "value", "--format", "json"]);
    let open = j["undecided"].as_array().unwrap();
    assert!(
        open.iter()
            .any(|u| u["commit"] == f.ids[20].as_str() && u["why"] == "machines"),
        "{j:#}"
    );
    let text = f.cmd().args(["detect", "value"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("measured on different machines only"),
        "{text}"
    );
    // The site says so too, and that triage leaves such a move alone.
    let site = f.dir.path().join("site");
    let o = f
        .cmd()
        .args(["report", "value", "--format", "html", "--out"])
        .arg(&site)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(site.join("value.html")).unwrap();
    assert!(
        page.contains("measured on different machines only"),
        "{page}"
    );
    assert!(page.contains("not a move only across machines"), "{page}");
    // Nor is the handover a trend: each machine's series is read on its own.
    assert!(!page.contains("a trend towards"), "{page}");
    // `report` searches the range here (a third machine): still nothing decided.
    nothing_decided(&f);
}

#[test]
fn two_machines_alternating_show_a_real_step_as_one_machine_does() {
    // A on even commits, B (10 % slower) on odd, 5 runs of 1 % noise; +8 % at commit 30.
    let f = fixture(60, 1.0, |_| 1.0);
    let csv = rounds(
        &f,
        5,
        0.01,
        11,
        |i| if i % 2 == 0 { ("A", 1.0) } else { ("B", 1.1) },
        |i| if i >= 30 { 1.08 } else { 1.0 },
    );
    import(&f, &csv);
    let range = f.range();
    for args in [
        vec!["detect", "value", "--format", "json"],
        vec!["detect", "value", &range, "--format", "json"],
    ] {
        let j = f.json(&args);
        let points = j["change_points"].as_array().unwrap();
        assert_eq!(points.len(), 1, "{args:?}: {j:#}");
        // At the step, or with a span that holds it (the machine hands over at every commit).
        let p = &points[0];
        let index = f
            .ids
            .iter()
            .position(|c| p["commit"] == c.as_str())
            .unwrap();
        let span_from = p["span"]["last_old_commit"]
            .as_str()
            .and_then(|c| f.ids.iter().position(|x| x == c))
            .unwrap_or(index - 1);
        assert!(span_from < 30 && 30 <= index, "{args:?}: {j:#}");
        let rel = p["rel_change"].as_f64().unwrap();
        assert!((0.05..0.11).contains(&rel), "{args:?}: {j:#}");
    }
}

#[test]
fn a_step_after_a_handover_is_decided_on_the_machine_that_shows_it() {
    // Machine A measured commits 0-19, B (10 % slower) 20-39; the code moved +8 % at 30, on
    // B's nights alone: ten nights of B against ten, each night its own machine state.
    let f = fixture(40, 1.0, |_| 1.0);
    let csv = rounds(
        &f,
        5,
        0.01,
        7,
        |i| if i < 20 { ("A", 1.0) } else { ("B", 1.1) },
        |i| if i >= 30 { 1.08 } else { 1.0 },
    );
    import(&f, &csv);
    let j = f.json(&["detect", "value", "--format", "json"]);
    assert_eq!(decided(&j), vec![f.ids[30].clone()], "{j:#}");
    // The handover itself stays the machines' difference.
    let open = j["undecided"].as_array().unwrap();
    assert!(
        open.iter()
            .any(|u| u["commit"] == f.ids[20].as_str() && u["why"] == "machines"),
        "{j:#}"
    );
}
