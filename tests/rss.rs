//! `metric = "max-rss"` measures the test's own peak memory, not perfbisect's: Linux folds a
//! process's peak RSS across fork and exec, so every run goes through a small launcher.

mod common;

use common::{specs, Fixture};

#[test]
fn max_rss_of_a_small_program_is_its_own_not_perfbisects() {
    // Commit 1 allocates nothing, commit 2 allocates and touches 6 MB (the fixture's
    // MEGABYTES); the program itself is tiny.
    let f = Fixture::new(
        &specs(2, |i, c| {
            c.megabytes = if i == 2 { 6 } else { 0 };
            c.work = 0;
        }),
        &common::with_build(
            r#"
[tests.rss]
command = "./app"
metric = "max-rss"
repeats = 3
"#,
        ),
    );
    for rev in [&f.ids[0], &f.ids[1]] {
        f.run_json("rss", rev, &[]);
    }
    let med = |rev: &str| f.show("rss", rev)["commits"][0]["median"].as_f64().unwrap();
    let (small, big) = (med(&f.ids[0]), med(&f.ids[1]));
    const MB: f64 = 1024.0 * 1024.0;
    // perfbisect's own peak is well above 5 MB (it has loaded git and its store); the C
    // program's is about 1.5 MB, and the launcher it is forked from about 2 MB.
    assert!(
        small < 5.0 * MB,
        "a tiny program measured {:.1} MB",
        small / MB
    );
    let grew = (big - small) / MB;
    assert!(
        (5.0..7.5).contains(&grew),
        "6 MB more memory measured as {grew:.1} MB more ({small} -> {big})"
    );
}

/// Through the launcher a crash still reads as the same signal, and a non-zero exit as the
/// same exit code.
#[test]
fn the_launcher_passes_on_how_the_test_ended() {
    let f = Fixture::new(
        &specs(1, |_, _| {}),
        &common::with_build(
            r#"
[tests.crash]
command = "kill -SEGV $$"
metric = "max-rss"
repeats = 1
[tests.exit]
command = "exit 3"
metric = "max-rss"
repeats = 1
"#,
        ),
    );
    f.run_json("crash,exit", &f.ids[0], &[]);
    let out = f
        .cmd()
        .args(["show", "crash", &f.ids[0], "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.contains("signal 11"), "{csv}");
    let out = f
        .cmd()
        .args(["show", "exit", &f.ids[0], "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.contains("exit code 3"), "{csv}");
}
