//! Every stored number is true: no test can change a build another commit measures, no stale
//! incremental build is counted, and each real run is counted once.

mod common;

use common::*;

/// A test that appends to the file it reads (as root, read-only bits stop nothing) changes
/// the content-addressed object every identical build links: no later run may see it.
#[test]
fn a_test_writing_into_its_artifact_never_changes_what_other_runs_see() {
    let data = "1\n2\n3\n4\n".to_string();
    let f = Fixture::with_files(
        &[
            ("Data", vec![("data.txt", data.clone())]),
            ("Docs 1", vec![("README", "a\n".to_string())]),
            ("Docs 2", vec![("README", "b\n".to_string())]),
            ("Docs 3", vec![("README", "c\n".to_string())]),
        ],
        r#"
[build]
artifacts = ["data.txt"]

[tests.lines]
command = "chmod u+w data.txt 2>/dev/null; printf 'lines: %s\n' $(wc -l < data.txt); echo x >> data.txt"
metric = { regex = "^lines: ([0-9]+)" }
repeats = 3
"#,
    );
    let all = format!("{}..{}", f.ids[0], f.ids[3]);
    let mut warned = String::new();
    // Twice: the second run rebuilds what the first dropped and measures it as stored.
    for _ in 0..2 {
        let out = f.cmd().args(["run", "lines", &all]).output().unwrap();
        warned.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    assert!(
        warned.contains("changed `data.txt`") && warned.contains("dropped"),
        "the run that wrote into its build is named: {warned}"
    );
    let show = f.show("lines", &all);
    let mut seen = 0;
    for c in show["commits"].as_array().unwrap() {
        for v in c["values"].as_array().into_iter().flatten() {
            assert_eq!(
                v.as_f64(),
                Some(4.0),
                "every run saw the build as stored: {show}"
            );
            seen += 1;
        }
    }
    assert!(seen >= 2, "runs were measured: {show}");
    // What is cached now holds what the build made.
    for e in std::fs::read_dir(f.cache.join("artifacts")).unwrap() {
        let p = e.unwrap().path().join("data.txt");
        if p.exists() {
            assert_eq!(
                std::fs::read_to_string(&p).unwrap(),
                data,
                "{}",
                p.display()
            );
        }
    }
}
