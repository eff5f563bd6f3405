//! Nothing the user owns is deleted or overwritten: `demo --dir` over a user's folder.

fn demo(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .args(["--no-progress", "demo", "--dir"])
        .arg(dir)
        .args(extra)
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .unwrap()
}

#[test]
fn demo_refuses_a_folder_it_did_not_make_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    // A user's project: a `repo/` folder with work in it and a config of their own.
    let project = dir.path();
    std::fs::create_dir_all(project.join("repo/src")).unwrap();
    std::fs::write(
        project.join("repo/src/main.c"),
        "int main(void) { return 0; }\n",
    )
    .unwrap();
    std::fs::write(project.join("perfbisect.toml"), "# mine\n").unwrap();
    for extra in [&[][..], &["--create-only"][..]] {
        let out = demo(project, extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&project.join("repo").display().to_string()),
            "the error names the path: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(project.join("repo/src/main.c")).unwrap(),
            "int main(void) { return 0; }\n"
        );
        assert_eq!(
            std::fs::read_to_string(project.join("perfbisect.toml")).unwrap(),
            "# mine\n"
        );
        assert!(!project.join(".perfbisect-demo").exists());
    }

    // A config alone is refused too, naming it.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("perfbisect.toml"), "# mine\n").unwrap();
    let out = demo(&other, &["--create-only"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("perfbisect.toml"));
    assert_eq!(
        std::fs::read_to_string(other.join("perfbisect.toml")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn demo_may_rewrite_what_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    let out = demo(&d, &["--create-only", "--commits", "3"]);
    assert!(out.status.success(), "{out:?}");
    assert!(d.join(".perfbisect-demo").is_file());
    // Its own folder: a broken repository there is replaced by the full demo.
    std::fs::remove_dir_all(d.join("repo/.git")).unwrap();
    std::fs::write(d.join("perfbisect.toml"), "# changed\n").unwrap();
    let out = demo(&d, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(d.join("perfbisect.toml"))
        .unwrap()
        .contains("[tests.value]"));
}
