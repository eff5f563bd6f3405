//! Issue 58, verdicts decided every time, on generated repositories in the issue's setting: a C
//! program whose printed value has 1 % noise of its own with 2 % outliers of +5–10 %, a 1 %
//! threshold, runs of about a millisecond and builds of a tenth of a second. `git bisect run
//! perfbisect step` names the culprit without a skip, and `find` on a range without a change
//! says "no change" (the families over hundreds of seeds are src/bisect/tests_decided.rs; the
//! rates on real repositories are scripts/bench-decided.py).

use crate::common;

use common::{specs, Fixture};

const CONFIG: &str = r#"
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "1%"
repeats = 5
"#;

/// `n` commits of the issue's noise (seeded by `seed`), the value `level(i)` at commit i.
fn repo(n: usize, seed: u64, level: impl Fn(usize) -> f64) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.metric = level(i);
            c.noise_pct = 1.0;
            c.outlier_rate = 0.02;
            c.outlier_size = (0.05, 0.10);
            c.noise_seed = seed;
        }),
        CONFIG,
    )
}

#[test]
fn git_bisect_run_names_the_culprit_of_a_noisy_step_without_a_skip() {
    for (seed, step) in [(11u64, 21usize), (12, 9), (13, 30)] {
        let f = repo(32, seed, |i| if i >= step { 1040.0 } else { 1000.0 });
        let (old, new) = (&f.ids[0], &f.ids[31]);
        f.git(&["bisect", "start", new, old]);
        let out = std::process::Command::new("git")
            .args(["bisect", "run"])
            .arg(assert_cmd::cargo::cargo_bin("perfbisect"))
            .arg("--config")
            .arg(&f.config)
            .arg("--cache")
            .arg(&f.cache)
            .args(["--no-progress", "step", "value", "--old", old])
            .current_dir(&f.repo)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        let log = f.git(&["bisect", "log"]);
        f.git(&["bisect", "reset"]);
        assert!(
            text.contains(&format!("{} is the first bad commit", f.ids[step - 1])),
            "seed {seed}: {text}\n{err}"
        );
        assert!(
            !log.contains("git bisect skip"),
            "seed {seed}: {log}\n{err}"
        );
        // Each step was placed against git bisect's bad commit too (the new side).
        assert!(err.contains("(git bisect's bad)"), "{err}");
    }
}

/// Outside a bisect, against `--old` alone: a commit at the old level is 0, one a step of
/// four times the threshold away is 1, and neither is a skip.
#[test]
fn step_against_the_old_commit_alone_answers_old_or_new() {
    let f = repo(6, 21, |i| if i >= 4 { 1040.0 } else { 1000.0 });
    for (at, want) in [(2usize, 0), (5, 1)] {
        f.git(&["checkout", "-q", &f.ids[at]]);
        let out = f
            .cmd()
            .args(["step", "value", "--old", &f.ids[0]])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(want), "commit {}: {err}", at + 1);
        assert!(!err.contains("(git bisect's bad)"), "{err}");
    }
}

#[test]
fn find_on_a_noisy_range_without_a_change_says_no_change() {
    for seed in [31u64, 32, 33] {
        let f = repo(40, seed, |_| 1000.0);
        let j = f.json(&["find", "value", &f.range(), "--format", "json"]);
        assert_eq!(j["verdict"], "no-change", "seed {seed}: {j:#}");
    }
}

/// `--max-runs` caps the runs of a commit: a range whose noise its runs cannot tell from the
/// threshold is inconclusive, and says the runs spent and the runs that would decide it.
#[test]
fn find_with_too_few_runs_says_what_was_spent_and_what_would_decide() {
    let f = repo(12, 41, |_| 1000.0);
    let out = f
        .cmd()
        .args(["find", "value", &f.range(), "--max-runs", "6"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("the 6 runs of each"), "{text}");
    assert!(text.contains("would decide it (`--max-runs "), "{text}");
    // Bad budgets are refused: none at all, or one below `max_repeats` in the config.
    let bad = f
        .cmd()
        .args(["find", "value", &f.range(), "--max-runs", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    f.set_config(&format!("{CONFIG}max_runs = 10\n"));
    let bad = f.cmd().args(["config", "check"]).output().unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("max_runs") && err.contains("max_repeats"),
        "{err}"
    );
}
