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
    let ids = perfbisect::demo::git(&demo.join("repo"), &["rev-list", "--reverse", "main"], None)
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
    assert!(second.contains("0 built"), "{second}");
    assert!(
        second.contains("0 builds, 0 runs") || second.contains(": 0 builds"),
        "{second}"
    );
}
