//! `perfbisect config init --at REV` reads the project from REV's tree (the checkout, HEAD,
//! index and refs left as they were), a range whose ends build otherwise than the revision
//! read is warned about, and a CMake benchmark behind an option is offered with the option.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{files_repo, FilesCommit};

fn perfbisect(repo: &Path, args: &[&str]) -> Output {
    assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .arg("--repo")
        .arg(repo)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

fn git(repo: &Path, args: &[&str]) -> String {
    perfbisect::scaffold::demo::git(repo, args, None).unwrap()
}

const MAKEFILE: &str = "all: app\napp: app.c\n\tcc -o app app.c\n";
const CMAKE: &str =
    "cmake_minimum_required(VERSION 3.10)\nproject(App C)\nadd_executable(app app.c)\n";

/// Commit 1 and 2 build with a Makefile; commit 3 adds CMakeLists.txt (the Makefile stays,
/// as in many projects that moved).
fn moved_repo(dir: &Path) -> Vec<String> {
    let commits: Vec<FilesCommit<'_>> = vec![
        (
            "app with a Makefile",
            vec![
                ("Makefile", MAKEFILE.to_string()),
                ("app.c", "int main(void) { return 0; }\n".to_string()),
            ],
        ),
        (
            "faster app",
            vec![("app.c", "int main(void) { return 1 - 1; }\n".to_string())],
        ),
        (
            "build with CMake",
            vec![("CMakeLists.txt", CMAKE.to_string())],
        ),
    ];
    files_repo(dir, &commits)
}

/// What a command must not change: HEAD, the refs, the index, the worktrees git knows, the
/// checkout's status.
fn repo_state(repo: &Path) -> (String, String, Vec<u8>, String, String) {
    (
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["for-each-ref"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
        git(repo, &["worktree", "list", "--porcelain"]),
        git(repo, &["status", "--porcelain", "--untracked-files=all"]),
    )
}

#[test]
fn init_at_an_older_revision_reads_its_tree_and_leaves_the_checkout_alone() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("app");
    let ids = moved_repo(&repo);
    // The checkout has changes of its own: they are neither read nor touched.
    std::fs::write(repo.join("CMakeLists.txt"), format!("{CMAKE}# edited\n")).unwrap();
    std::fs::write(repo.join("notes.txt"), "untracked\n").unwrap();
    let before = repo_state(&repo);

    let out = perfbisect(&repo, &["config", "init", "--at", &ids[0]]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (config, err) = (text(&out.stdout), text(&out.stderr));
    assert!(
        config.contains("# Build system: Makefile (Makefile)."),
        "{config}"
    );
    assert!(config.contains("command = \"make -j2\""), "{config}");
    assert!(!config.contains("cmake"), "{config}");
    assert!(config.contains("artifacts = [\"app\"]"), "{config}");
    let short = &ids[0][..10];
    assert!(
        config.contains(&format!("Read from the tree of `{}` ({short})", ids[0])),
        "{config}"
    );
    assert!(
        err.contains("found Makefile (Makefile) in ")
            && err.contains(&format!(" at `{}` ({short})", ids[0])),
        "{err}"
    );
    assert_eq!(repo_state(&repo), before);
    assert_eq!(
        std::fs::read_to_string(repo.join("CMakeLists.txt")).unwrap(),
        format!("{CMAKE}# edited\n")
    );

    // `HEAD~2` is read as git reads it; without --at the checkout (CMake) is read.
    let out = perfbisect(&repo, &["config", "init", "--at", "HEAD~2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("command = \"make -j2\""));
    let out = perfbisect(&repo, &["config", "init"]);
    assert!(text(&out.stdout).contains("cmake -S . -B build"));
    assert_eq!(repo_state(&repo), before);
}

#[test]
fn init_warns_when_an_end_of_the_range_builds_with_another_system() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("app");
    let ids = moved_repo(&repo);
    let before = repo_state(&repo);
    let (s0, s1, s2) = (&ids[0][..10], &ids[1][..10], &ids[2][..10]);

    // Read at HEAD (CMake), for a range of the Makefile era: both ends are named.
    let range = format!("{}..{}", ids[0], ids[1]);
    let out = perfbisect(&repo, &["config", "init", &range]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("cmake -S . -B build"));
    let err = text(&out.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].contains(&format!(
            "range `{range}`: its old end `{}` ({s0}) builds with Makefile (Makefile)",
            ids[0]
        )) && warnings[0].contains(&format!(
            "read from the checkout (HEAD {s2}), which builds with CMake (CMakeLists.txt)"
        )) && warnings[0].contains(&format!("`perfbisect config init --at {}`", ids[0])),
        "{err}"
    );
    assert!(
        warnings[1].contains(&format!("its new end `{}` ({s1})", ids[1])),
        "{err}"
    );

    // Read at the range's end: nothing to warn about.
    let out = perfbisect(&repo, &["config", "init", "--at", &ids[1], &range]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("warning:"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("command = \"make -j2\""));

    // A range across the move, read at its old end: the new end is the other one.
    let out = perfbisect(&repo, &["config", "init", "--at", "HEAD~1", "HEAD~1..HEAD"]);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "range `HEAD~1..HEAD`: its new end `HEAD` ({s2}) builds with CMake (CMakeLists.txt), \
             but the config above was read from `HEAD~1` ({s1}), which builds with Makefile"
        )) && err.contains("`perfbisect config init --at HEAD`"),
        "{err}"
    );
    assert_eq!(repo_state(&repo), before);
}

#[test]
fn init_refuses_a_revision_or_range_that_does_not_exist() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("app");
    moved_repo(&repo);
    for (args, named) in [
        (
            &["config", "init", "--at", "no-such-rev"][..],
            "no-such-rev",
        ),
        (&["config", "init", "v9..HEAD"][..], "v9"),
        (&["config", "init", "--at", "HEAD~7"][..], "HEAD~7"),
    ] {
        let out = perfbisect(&repo, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("unknown revision `{named}`")),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Outside a repository --at has nothing to read.
    let plain = d.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let out = perfbisect(&plain, &["config", "init", "--at", "HEAD"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not in a git repository"));
}

#[test]
fn init_offers_a_cmake_benchmark_behind_an_option_with_the_option() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("fastparse");
    let top = "cmake_minimum_required(VERSION 3.10)\nproject(fastparse C)\n\
        option(FASTPARSE_BENCHMARKS \"Build the benchmarks\" OFF)\n\
        add_executable(fastparse src/main.c)\n\
        if(FASTPARSE_BENCHMARKS)\n  add_subdirectory(bench)\nendif()\n";
    let commits: Vec<FilesCommit<'_>> = vec![(
        "fastparse",
        vec![
            ("CMakeLists.txt", top.to_string()),
            ("src/main.c", "int main(void) { return 0; }\n".to_string()),
            (
                "bench/CMakeLists.txt",
                "add_executable(bench_parse bench_parse.c)\n".to_string(),
            ),
            (
                "bench/bench_parse.c",
                "int main(void) { return 0; }\n".to_string(),
            ),
        ],
    )];
    files_repo(&repo, &commits);
    let out = perfbisect(&repo, &["config", "init"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (config, err) = (text(&out.stdout), text(&out.stderr));
    // The program stays the project's own; the option is named, with the command that
    // turns it on, and the benchmark is a commented test.
    assert!(
        config.contains("artifacts = [\"build/fastparse\"]"),
        "{config}"
    );
    assert!(
        config.contains(
            "\n# command = \"cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
             -DFASTPARSE_BENCHMARKS=ON && cmake --build build --parallel 2\"\n"
        ),
        "{config}"
    );
    assert!(
        config.contains("CMake target bench_parse (bench/CMakeLists.txt)"),
        "{config}"
    );
    assert!(
        config.contains("# command = \"build/bench/bench_parse\""),
        "{config}"
    );
    assert!(!config.contains("no target"), "{config}");
    assert!(
        err.contains("bench_parse (-DFASTPARSE_BENCHMARKS=ON, declared in bench/CMakeLists.txt)"),
        "{err}"
    );
    let path = d.path().join("perfbisect.toml");
    std::fs::write(&path, &config).unwrap();
    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .args(["--config", path.to_str().unwrap(), "config", "check"])
        .current_dir(d.path())
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // A library whose only program is the benchmark: the build command turns the option on.
    let lib = d.path().join("fastlib");
    let top = "cmake_minimum_required(VERSION 3.10)\nproject(fastlib C)\n\
        option(FASTLIB_BENCH \"Build the benchmarks\")\n\
        add_library(fastlib lib.c)\n\
        if(FASTLIB_BENCH)\n  add_subdirectory(bench)\nendif()\n";
    let commits: Vec<FilesCommit<'_>> = vec![(
        "fastlib",
        vec![
            ("CMakeLists.txt", top.to_string()),
            ("lib.c", "int f(void) { return 0; }\n".to_string()),
            (
                "bench/CMakeLists.txt",
                "add_executable(bench_lib bench_lib.c)\n".to_string(),
            ),
            (
                "bench/bench_lib.c",
                "int main(void) { return 0; }\n".to_string(),
            ),
        ],
    )];
    files_repo(&lib, &commits);
    let out = perfbisect(&lib, &["config", "init"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let config = text(&out.stdout);
    assert!(
        config.contains(
            "\ncommand = \"cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFASTLIB_BENCH=ON && \
             cmake --build build --parallel 2\"\n"
        ),
        "{config}"
    );
    assert!(
        config.contains("artifacts = [\"build/bench/bench_lib\"]"),
        "{config}"
    );
    assert!(
        text(&out.stderr).contains("the [build] command turns FASTLIB_BENCH on"),
        "{}",
        text(&out.stderr)
    );
}
