//! Revisions and ranges resolve exactly as `git rev-list --first-parent` does.

use crate::common;

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

    // The same answers from the commits' objects, from a commit-graph as `git gc` writes it,
    // and from a graph that misses the newest commit.
    for state in [
        "no commit-graph",
        "a commit-graph",
        "a commit newer than the graph",
    ] {
        match state {
            "a commit-graph" => {
                f.git(&["commit-graph", "write", "--reachable"]);
            }
            "a commit newer than the graph" => {
                std::fs::write(f.repo.join("newer.txt"), "x\n").unwrap();
                f.git(&["add", "."]);
                f.git(&["commit", "-qm", "Newer than the graph"]);
            }
            _ => {}
        }
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
                assert_eq!(out.status.code(), Some(2), "{spec} with {state}");
            } else {
                assert!(
                    out.status.success(),
                    "{spec} with {state}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_eq!(got, want, "{spec} with {state}");
            }
        }
        // Only a range with a merge on its chain has commits it does not walk.
        for (spec, note) in [
            ("v1..main", true),
            ("HEAD~1..@", false),
            ("side..main", false),
        ] {
            let out = f.cmd().args(["log", spec]).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                err.contains("2 more commits on merged branches"),
                note,
                "{spec} with {state}: {err}"
            );
        }
    }
    // A single revision is that one commit.
    let out = f.cmd().args(["log", "v1"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&f.ids[1]));
}

/// Issue 19.10: a single revision is one commit, not a range: `run` and `log` of a merge say
/// nothing about commits of merged branches left unwalked.
#[test]
fn a_single_merge_commit_has_no_note_on_merged_branches() {
    let f = common::Fixture::with_demo_config(&common::specs(3, |_, _| {}));
    f.git(&["checkout", "-q", "-b", "side", &f.ids[1]]);
    for i in 0..3 {
        std::fs::write(f.repo.join(format!("side{i}.txt")), "x\n").unwrap();
        f.git(&["add", "."]);
        f.git(&["commit", "-qm", &format!("Side {i}")]);
    }
    f.git(&["checkout", "-q", "main"]);
    f.git(&["merge", "-q", "--no-ff", "-m", "Merge side", "side"]);
    let merge = f.git(&["rev-parse", "HEAD"]).trim().to_string();
    for args in [
        vec!["run", "value", merge.as_str()],
        vec!["log", merge.as_str()],
        vec!["log", "HEAD"],
    ] {
        let out = f.cmd().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(!err.contains("merged branches"), "{args:?}: {err}");
    }
    // The range of the merge alone still says what it leaves out.
    let out = f.cmd().args(["log", "HEAD^..HEAD"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3 more commits on merged branches"), "{err}");
}

/// Issue 52: a single revision where a command searches from an old end is refused (exit 2,
/// nothing built) with the two ranges it may stand for; the commands whose help documents a
/// single revision keep taking it; an empty range says why it is empty.
#[test]
fn a_single_revision_where_a_range_is_needed_is_refused_with_the_ranges_it_may_mean() {
    let f = common::Fixture::with_demo_config(&common::specs(4, |_, _| {}));
    let short = &f.ids[2][..7];
    for args in [
        vec!["find", "value", short],
        vec!["value", short],
        vec!["report", "value", short],
        vec!["report", "value", short, "--format", "json"],
        vec!["find", "value,rss", short],
        vec!["triage", "value", short],
    ] {
        let out = f.cmd().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("`{short}` is a single revision"))
                && err.contains(&format!(
                    "`{short}^..{short}` (that commit against its parent)"
                ))
                && err.contains(&format!("`{short}..HEAD` (every commit after it")),
            "{args:?}: {err}"
        );
        assert!(err.contains("Commit 3"), "the commit is named: {err}");
    }
    assert!(!f.cache.join("worktrees").exists(), "nothing was built");
    // HEAD itself: only the range of that commit against its parent is offered.
    let out = f.cmd().args(["find", "value", "HEAD"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`HEAD^..HEAD`") && !err.contains("HEAD..HEAD"),
        "{err}"
    );
    // An unknown revision is said as such, not as a single revision.
    let out = f.cmd().args(["find", "value", "nosuch"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown revision `nosuch`"), "{err}");

    // Empty ranges: the same commit twice, and the ends in the other order.
    let same = format!("{short}..{short}");
    let out = f.cmd().args(["find", "value", &same]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("range `{same}` is empty"))
            && err.contains("are the same commit")
            && !err.contains("reversed"),
        "{err}"
    );
    let back = format!("{}..{}", f.ids[3], f.ids[1]);
    let out = f.cmd().args(["log", &back]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the ends are in the other order") && err.contains("holds 2 commits"),
        "{err}"
    );

    // Commands that document a single revision take it as that one commit.
    for args in [
        vec!["log", short],
        vec!["show", "value", short],
        vec!["detect", "value", short],
    ] {
        let out = f.cmd().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
    }
}
