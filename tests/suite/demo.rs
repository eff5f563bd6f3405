//! The README's first command: `perfbisect demo` finds what it planted.

#[test]
fn demo_finds_the_planted_changes_and_reuses_everything_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let run = || {
        let out = assert_cmd::Command::cargo_bin("perfbisect")
            .unwrap()
            .args(["--no-progress", "demo", "--dir"])
            .arg(&demo)
            .timeout(std::time::Duration::from_secs(600))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = run();
    let ids = perfbisect::scaffold::demo::git(
        &demo.join("repo"),
        &["rev-list", "--reverse", "main"],
        None,
    )
    .unwrap();
    let ids: Vec<&str> = ids.lines().collect();
    // Commit 17 raises the value, commit 9 grows memory, commit 5 does not build.
    assert!(
        first.contains(&format!("culprit: {}", &ids[16][..10])),
        "{first}"
    );
    assert!(
        first.contains(&format!("{} Keep a bigger buffer around: ", &ids[8][..10])),
        "{first}"
    );
    assert!(
        first.contains(&format!("build failed: {}", &ids[4][..10])),
        "{first}"
    );
    let second = run();
    // `find` builds nothing and reuses what is stored; its only runs are the interleaved
    // re-runs that confirm the culprit, fewer than the first time.
    let (first_find, second_find) = (spent(&first), spent(&second));
    assert_eq!(second_find.builds, 0, "{second}");
    assert!(second_find.reused > 0, "{second}");
    assert!(
        second_find.runs < first_find.runs,
        "{} runs the first time, {} the second: {second}",
        first_find.runs,
        second_find.runs
    );
    // `run` finds everything built and measured.
    let line = summary_line(&second);
    assert!(
        line.starts_with("0 built, ") && line.contains(", 0 runs (0 failed)"),
        "{second}"
    );
}

/// What `find` spent, from its line `searched RANGE (N commits): B builds (K of them pristine
/// checks), R runs in T (S stored samples reused)`.
struct Spent {
    builds: u64,
    runs: u64,
    reused: u64,
}

fn spent(out: &str) -> Spent {
    let line = out
        .lines()
        .find(|l| l.starts_with("searched "))
        .unwrap_or_else(|| panic!("no `searched` line: {out}"));
    let bad = || -> ! { panic!("unexpected `searched` line: {line}") };
    let (_, after) = line.split_once("): ").unwrap_or_else(|| bad());
    let w: Vec<&str> = after.split_whitespace().collect();
    let number = |i: usize, unit: &str| -> u64 {
        match (w.get(i).and_then(|n| n.parse().ok()), w.get(i + 1)) {
            (Some(n), Some(u)) if u.starts_with(unit) => n,
            _ => bad(),
        }
    };
    let reused = match line.split_once(" stored samples reused") {
        Some((head, _)) => head
            .rsplit('(')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| bad()),
        None => 0,
    };
    // "B builds (K of them pristine checks), R runs": the runs after the parenthesis.
    let runs_at = (2..w.len().saturating_sub(1))
        .find(|&i| w[i + 1].starts_with("run") && w[i].parse::<u64>().is_ok())
        .unwrap_or_else(|| bad());
    Spent {
        builds: number(0, "build"),
        runs: number(runs_at, "run"),
        reused,
    }
}

/// The summary line of `run` (`N built, M cached, ...`).
fn summary_line(out: &str) -> &str {
    out.lines()
        .skip_while(|l| !l.starts_with("$ perfbisect run "))
        .nth(1)
        .unwrap_or_else(|| panic!("no `run` summary: {out}"))
}
