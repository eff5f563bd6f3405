//! Revisions and ranges resolve exactly as `git rev-list --first-parent` does.

mod common;

#[test]
fn ranges_match_git_rev_list_first_parent() {
    let f = common::Fixture::with_demo_config(&common::specs(6, |_, _| {}));
    // A side branch from commit 3 with two commits, merged into main, then one more commit;
    // and a tag on the side branch.
    f.git(&["checkout", "-q", "-b", "side", &f.ids[2]]);
    for i in 0..2 {
        std::fs::write(f.repo.join(format!("side{i}.txt")), "x\n").unwrap();
        f.git(&["add", "."]);
        f.git(&["commit", "-qm", &format!("Side {i}")]);
    }
    f.git(&["tag", "v-side"]);
    f.git(&["checkout", "-q", "main"]);
    f.git(&["merge", "-q", "--no-ff", "-m", "Merge side", "side"]);
    std::fs::write(f.repo.join("after.txt"), "x\n").unwrap();
    f.git(&["add", "."]);
    f.git(&["commit", "-qm", "After merge"]);
    f.git(&["tag", "v1", &f.ids[1]]);

    for spec in [
        "v1..main",
        "v-side..main",
        "main~3..main",
        "HEAD~1..@",
        "v1..side",
        "side..main",
        &format!("{}..main", &f.ids[0][..7]),
        "..main",
        "v1..",
    ] {
        let want = f.git(&["rev-list", "--first-parent", "--reverse", spec]);
        let out = f.cmd().args(["log", spec]).output().unwrap();
        let got: String = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| format!("{}\n", &l[..40]))
            .collect();
        if want.is_empty() {
            assert_eq!(out.status.code(), Some(2), "{spec}");
        } else {
            assert!(
                out.status.success(),
                "{spec}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(got, want, "{spec}");
        }
    }
    // A single revision is that one commit.
    let out = f.cmd().args(["log", "v1"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&f.ids[1]));
}
