//! `perfbisect config init` on repositories of each build system, and `perfbisect config
//! check` on what it prints and on configs with mistakes: exit 2 naming key and line,
//! warnings (exit 0) for programs that cannot be found, nothing built.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{files_repo, have_tool, FilesCommit};

fn perfbisect(args: &[&str]) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
    c.args(args).env("NO_COLOR", "1");
    c
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// `config init` in `repo`: (stdout, stderr).
fn init(repo: &Path) -> (String, String) {
    let out = perfbisect(&["--repo", repo.to_str().unwrap(), "config", "init"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// `config check` of `config`, from the directory that holds it (not inside this crate's own
/// repository, whose cargo workspace `[build] cargo` would be checked against).
fn check(config: &Path) -> Output {
    perfbisect(&["--config", config.to_str().unwrap(), "config", "check"])
        .current_dir(config.parent().unwrap())
        .output()
        .unwrap()
}

fn cmake_repo(dir: &Path) -> Vec<String> {
    let commits: Vec<FilesCommit<'_>> = vec![(
        "CMake project",
        vec![
            (
                "CMakeLists.txt",
                "cmake_minimum_required(VERSION 3.10)\nproject(Demo C)\nadd_executable(demo src/main.c)\nadd_executable(demo_tests tests/t.c)\n".to_string(),
            ),
            (
                "src/main.c",
                "#include <stdio.h>\nint main(void) { puts(\"value: 7\"); return 0; }\n".to_string(),
            ),
            ("tests/t.c", "int main(void) { return 0; }\n".to_string()),
        ],
    )];
    files_repo(dir, &commits)
}

#[test]
fn init_on_a_cmake_repository_then_check_accepts_it() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("demo");
    cmake_repo(&repo);
    let (config, note) = init(&repo);
    assert!(
        config.contains("# Build system: CMake (CMakeLists.txt)."),
        "{config}"
    );
    assert!(config.contains("cmake -S . -B build"), "{config}");
    assert!(config.contains("artifacts = [\"build/demo\"]"), "{config}");
    assert!(config.contains("[tests.demo-wall]") && config.contains("metric = \"wall\""));
    assert!(config.contains("[tests.demo-rss]") && config.contains("metric = \"max-rss\""));
    assert!(note.contains("found CMake"), "{note}");
    let path = d.path().join("perfbisect.toml");
    std::fs::write(&path, &config).unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(": ok; build: command; 2 tests (demo-rss, demo-wall)"),
        "{stdout}"
    );
    // Checking builds nothing: no cache appears beside the config.
    assert!(!d.path().join("cache").exists());
    // Where cmake is missing (an empty PATH here), that is the one warning, with its line;
    // the tests' program `build/demo` is among the artifacts.
    let line = config
        .lines()
        .position(|l| l.starts_with("command = \"cmake"))
        .unwrap()
        + 1;
    let empty = tempfile::tempdir().unwrap();
    let out = perfbisect(&["--config", path.to_str().unwrap(), "config", "check"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            ":{line}: key `build.command`: warning: `cmake` is not on PATH"
        )),
        "{err}"
    );
    assert!(text(&out.stdout).ends_with("; 1 warning\n"));
    if have_tool("cmake", "cmake, to build with the config init wrote") {
        let out = check(&path);
        let err = text(&out.stderr);
        assert!(err.is_empty(), "{err}");
        // The config as printed builds and measures the repository.
        let cache = d.path().join("cache");
        let out = perfbisect(&[
            "--repo",
            repo.to_str().unwrap(),
            "--config",
            path.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
            "run",
            "all",
            "HEAD",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (s["builds"].as_u64(), s["failed_runs"].as_u64()),
            (Some(1), Some(0)),
            "{s}"
        );
    }
}

#[test]
fn init_detects_each_build_system_and_each_config_checks_clean() {
    let d = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, FilesCommit<'_>, &[&str])> = vec![
        (
            "rusty",
            (
                "cargo",
                vec![
                    ("Cargo.toml", "[package]\nname = \"rusty\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"rusty-cli\"\npath = \"src/main.rs\"\n".into()),
                    ("src/main.rs", "fn main() {}\n".into()),
                ],
            ),
            &[
                "# Build system: cargo (Cargo.toml).",
                "cargo = { bins = [\"rusty-cli\"], profile = \"release\" }",
                "command = \"./rusty-cli\"",
                "[tests.rusty-cli-rss]",
            ],
        ),
        (
            "mesonic",
            (
                "meson",
                vec![
                    ("meson.build", "project('mesonic', 'c')\nexecutable('fastcat', 'cat.c')\n".into()),
                    ("cat.c", "int main(void) { return 0; }\n".into()),
                ],
            ),
            &[
                "# Build system: Meson (meson.build).",
                "meson compile -C build",
                "artifacts = [\"build/fastcat\"]",
                "command = \"build/fastcat\"",
            ],
        ),
        (
            "autotooled",
            (
                "autotools",
                vec![
                    ("configure.ac", "AC_INIT([tool], [1.0])\nAM_INIT_AUTOMAKE\nAC_PROG_CC\nAC_CONFIG_FILES([Makefile src/Makefile])\nAC_OUTPUT\n".into()),
                    ("Makefile.am", "SUBDIRS = src\n".into()),
                    ("src/Makefile.am", "bin_PROGRAMS = frob\nfrob_SOURCES = frob.c\n".into()),
                    ("src/frob.c", "int main(void) { return 0; }\n".into()),
                ],
            ),
            &[
                "# Build system: autotools (configure.ac).",
                "autoreconf -fi && ./configure && make -j2",
                "artifacts = [\"src/frob\"]",
                "[tests.frob-wall]",
            ],
        ),
        (
            "plainmake",
            (
                "make",
                vec![
                    ("Makefile", "CC ?= cc\n.PHONY: all clean\nall: hello\nhello: hello.c\n\t$(CC) -O2 -o $@ $<\nclean:\n\trm -f hello\n".into()),
                    ("hello.c", "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n".into()),
                ],
            ),
            &[
                "# Build system: Makefile (Makefile).",
                "command = \"make -j2\"",
                "artifacts = [\"hello\"]",
                "command = \"./hello\"",
            ],
        ),
        (
            "nothing",
            ("empty", vec![("README", "just text\n".into())]),
            &["# No build system recognised", "[tests.app-wall]"],
        ),
    ];
    for (name, commit, expected) in cases {
        let repo = d.path().join(name);
        files_repo(&repo, &[commit]);
        let (config, _) = init(&repo);
        for e in expected {
            assert!(config.contains(e), "{name}: no `{e}` in\n{config}");
        }
        let path = d.path().join(format!("{name}.toml"));
        std::fs::write(&path, &config).unwrap();
        let out = check(&path);
        // Accepted as it is; warnings only for build tools missing on this machine.
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        for w in text(&out.stderr).lines() {
            assert!(
                w.contains("key `build.command`") && w.contains("is not on PATH"),
                "{name}: {w}"
            );
        }
    }

    // The plain Makefile's config builds and measures as printed (make and cc are here).
    let repo = d.path().join("plainmake");
    let cache = d.path().join("cache");
    let out = perfbisect(&[
        "--repo",
        repo.to_str().unwrap(),
        "--config",
        d.path().join("plainmake.toml").to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
        "run",
        "all",
        "HEAD",
        "--format",
        "json",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["builds"], 1, "{s}");
    // Each written test's repeats: enough for its rank test to decide (6 at α = 0.01).
    assert_eq!(s["runs"], 6 + 6, "{s}");
    assert_eq!(s["failed_runs"], 0, "{s}");
}

#[test]
fn check_rejects_mistakes_naming_key_and_line() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("perfbisect.toml");
    let cases: &[(&str, &[&str])] = &[
        (
            "[tests.x]\ncommand = \"true\"\nrepets = 3\n",
            &[":3:", "unknown field `repets`", "did you mean `repeats`?"],
        ),
        (
            "[build]\ncargo = { bins = [\"app\"], bin = [\"x\"] }\n",
            &[":2:", "unknown field `bin`", "did you mean `bins`?"],
        ),
        (
            "[tests.x]\ncommand = \"true\"\n\nmetric = { format = \"gbenhc\", name = \"BM\" }\n",
            &[":4:", "key `tests.x.metric.format`", "did you mean `gbench`?"],
        ),
        (
            "[tests.x]\ncommand = \"true\"\nmetric = { format = \"hyperfine\", field = \"avg\" }\n",
            &[":3:", "key `tests.x.metric.field`", "mean, stddev, median"],
        ),
        (
            "[tests.x]\ncommand = \"true\"\nmetric = { format = \"bmf\", nmae = \"b\" }\n",
            &[":3:", "key `tests.x.metric.nmae` is unknown", "did you mean `name`?"],
        ),
        (
            "[tests.x]\ncommand = \"true\"\nmetric = { format = \"gbench\", file = \"/tmp/out.json\" }\n",
            &[":3:", "key `tests.x.metric.file`", "relative to the run's $PERFBISECT_OUT"],
        ),
        (
            "[tests.x]\ncommand = \"true\"\nmetric = { regex = \"value: [0-9]+\" }\n",
            &[":3:", "key `tests.x.metric.regex`", "no capture group"],
        ),
        (
            "[tests.x]\ncommand = \"true\"\nmetric = { regex = \"value: ([0-9]+\" }\n",
            &[":3:", "key `tests.x.metric.regex`", "invalid regex"],
        ),
        (
            "[tests.x]\ncommand = \"true\"\nmetric = { json = \"/a/~2\" }\n",
            &[":3:", "key `tests.x.metric.json`", "`~0` or `~1`"],
        ),
        (
            "[build]\ncommand = \"make\"\ncargo = { bins = [\"app\"] }\n",
            &[":2:", "key `build.command`", "`command` or `cargo`, not both"],
        ),
        (
            "[build]\ncargo = { bins = [\"app\"], benches = [\"app\"] }\n",
            &[":2:", "key `build.cargo.benches`", "also in `build.cargo.bins`"],
        ),
    ];
    for (config, expected) in cases {
        std::fs::write(&path, config).unwrap();
        let out = check(&path);
        assert_eq!(out.status.code(), Some(2), "{config}");
        assert!(out.stdout.is_empty(), "{config}");
        let err = text(&out.stderr);
        for e in *expected {
            assert!(err.contains(e), "{config}: no `{e}` in: {err}");
        }
    }
}

#[test]
fn check_warns_about_programs_it_cannot_find_but_accepts_the_config() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("perfbisect.toml");
    std::fs::write(d.path().join("helper.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(
        &path,
        r#"[build]
cargo = { bins = ["app"] }

[tests.ok]
command = "./app --quick"

[tests.tool]
command = "nosuch-benchmark-runner --all"
setup = "$PERFBISECT_CONFIG_DIR/helper.sh"

[tests.stray]
command = "./not-built"
metric = { format = "hyperfine", file = "h.json" }
"#,
    )
    .unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].contains(":12: key `tests.stray.command`: warning: `./not-built` is not among the build's artifacts"), "{err}");
    assert!(
        lines[1].contains(
            ":8: key `tests.tool.command`: warning: `nosuch-benchmark-runner` is not on PATH"
        ),
        "{err}"
    );
    assert!(
        lines[2].contains(":9: key `tests.tool.setup`: warning:")
            && lines[2].contains("not executable"),
        "{err}"
    );
    assert!(text(&out.stdout).contains("build: cargo (app); 3 tests (ok, stray, tool); 3 warnings"));
}

#[test]
fn check_refuses_a_config_without_tests() {
    let d = tempfile::tempdir().unwrap();
    for text in ["", "[build]\ncommand = \"make\"\nartifacts = [\"app\"]\n"] {
        let p = d.path().join("perfbisect.toml");
        std::fs::write(&p, text).unwrap();
        let out = check(&p);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no tests") && err.contains("[tests.NAME]"),
            "{err}"
        );
    }
}

/// A library whose criterion benches live in a workspace member (as BurntSushi/bstr's
/// `bench/`): init offers that bench with a criterion test, not a placeholder program, of the
/// suite's first benchmark run alone (its others listed), with repeats its rank test can
/// decide with.
#[test]
fn init_offers_a_members_criterion_bench_when_nothing_else_builds_a_program() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("lib");
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"textlib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\nmembers = [\"bench\"]\n",
        ),
        ("src/lib.rs", "pub fn f() -> u32 { 1 }\n"),
        (
            "bench/Cargo.toml",
            "[package]\nname = \"textlib-bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dev-dependencies]\ncriterion = \"0.5\"\n\n[[bench]]\nname = \"speed\"\nharness = false\n",
        ),
        ("bench/src/lib.rs", ""),
        (
            "bench/benches/speed.rs",
            "use criterion::{criterion_group, criterion_main, Criterion};\n\
             fn speed(c: &mut Criterion) {\n\
             \x20   let mut g = c.benchmark_group(\"find\");\n\
             \x20   g.bench_function(\"short\", |b| b.iter(|| 1));\n\
             \x20   g.bench_function(\"long\", |b| b.iter(|| 2));\n\
             \x20   g.finish();\n\
             }\n\
             criterion_group!(benches, speed);\ncriterion_main!(benches);\n",
        ),
    ];
    for (p, text) in files {
        let p = repo.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let (config, err) = init(&repo);
    assert!(
        config.contains("cargo = { benches = [\"speed\"], package = \"textlib-bench\" }"),
        "{config}\n{err}"
    );
    // The suite's first benchmark, run alone, with runs enough to decide; the other listed.
    assert!(
        config.contains("command = \"./speed --bench '^find/short$'\"\n")
            && config.contains("metric = { format = \"criterion\", name = \"find/short\" }")
            && config.contains("repeats = 6 ")
            && config.contains("#   \"find/long\"  \"./speed --bench '^find/long$'\""),
        "{config}"
    );
    assert!(
        err.contains("the test runs benchmark `find/short` of bench `speed` alone; its 1 other is listed commented"),
        "{err}"
    );
    assert!(
        !config.contains("./app"),
        "no placeholder program: {config}"
    );
    let path = d.path().join("perfbisect.toml");
    std::fs::write(&path, &config).unwrap();
    let out = check(&path);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A Makefile whose default goal builds a library first (`default: lib prog_and_links`, as
/// xxHash's does): init's tests run the program, not `./lib`, and init says what it guessed
/// and why; the config it printed builds and runs the program.
#[test]
fn init_on_a_makefile_picks_the_program_over_the_library_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("hashlib");
    let makefile = "CFLAGS ?= -O2\n\
        .PHONY: default\n\
        default: CFLAGS += -DNDEBUG\n\
        default: lib prog_and_links\n\n\
        .PHONY: all\n\
        all: lib prog\n\n\
        libhash.a: hash.o\n\tar rcs $@ $^\n\n\
        .PHONY: lib\n\
        lib: libhash.a\n\n\
        hash.o: hash.c\n\t$(CC) $(CFLAGS) -c hash.c -o hash.o\n\n\
        prog: main.c libhash.a\n\t$(CC) $(CFLAGS) main.c libhash.a -o $@\n\n\
        .PHONY: prog_and_links\n\
        prog_and_links: prog\n\tln -sf prog prog2\n\n\
        clean:\n\trm -f *.o *.a prog prog2\n";
    files_repo(
        &repo,
        &[(
            "a hash library and its program",
            vec![
                ("Makefile", makefile.to_string()),
                ("hash.c", "int hash(int x) { return x * 31; }\n".to_string()),
                (
                    "main.c",
                    "int hash(int);\nint main(void) { return hash(1) == 31 ? 0 : 1; }\n"
                        .to_string(),
                ),
            ],
        )],
    );
    let (config, err) = init(&repo);
    assert!(config.contains("command = \"./prog\""), "{config}");
    assert!(config.contains("artifacts = [\"prog\"]"), "{config}");
    assert!(!config.contains("./lib"), "{config}");
    // What was guessed and why, in the config and on stderr.
    let said = config.replace("\n# ", " ");
    assert!(said.contains("The tests run ./prog, a guess:"), "{config}");
    assert!(
        said.contains("passed over `lib` (a library, not a program)"),
        "{config}"
    );
    assert!(
        err.contains("the tests run ./prog: the first program the Makefile's `default`"),
        "{err}"
    );
    let path = d.path().join("perfbisect.toml");
    std::fs::write(&path, &config).unwrap();
    let out = check(&path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    if have_tool("make", "make, to build with the config init wrote")
        && have_tool("cc", "a C compiler, to build the Makefile's program")
    {
        let cache = d.path().join("cache");
        let out = perfbisect(&[
            "--repo",
            repo.to_str().unwrap(),
            "--config",
            path.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
            "run",
            "all",
            "HEAD",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (s["builds"].as_u64(), s["failed_runs"].as_u64()),
            (Some(1), Some(0)),
            "{s}"
        );
    }
}

/// An autosetup-like project as SQLite is: `configure` tracked (no configure.ac), the Makefile
/// made from Makefile.in, a code generator the build compiles and runs before the program, a
/// benchmark program that only its own target builds, a speed script, and (as SQLite's
/// `autoconf/`, the amalgamation tarball's folder) a subfolder with a configure.ac and a
/// Makefile.am of its own. `autoconf` is `true` for the older layout, with configure.ac at
/// the top beside the tracked configure.
fn autosetup_repo(dir: &Path, autoconf: bool) {
    let configure =
        "#!/bin/sh\n# Writes Makefile from Makefile.in, as autosetup's configure does.\n\
        top=$(pwd)\n\
        sed -e \"s|@CC@|${CC:-cc}|g\" -e \"s|@TOP@|$top|g\" \"$top/Makefile.in\" > Makefile\n\
        echo configured\n";
    let makefile_in = "CC = @CC@\nTOP = @TOP@\n\n\
        all: dbshell\n\n\
        $(TOP)/mkheader: tool/mkheader.c\n\t$(CC) -o $(TOP)/mkheader tool/mkheader.c\n\n\
        gen.h: $(TOP)/mkheader\n\t$(TOP)/mkheader > gen.h\n\n\
        dbshell: shell.c gen.h\n\t$(CC) -O1 -o dbshell shell.c\n\n\
        speedtest1: test/speedtest1.c\n\t$(CC) -O1 -o speedtest1 test/speedtest1.c\n\n\
        clean:\n\trm -f mkheader gen.h dbshell speedtest1\n";
    let mut files = vec![
        ("configure", configure.to_string()),
        ("Makefile.in", makefile_in.to_string()),
        (
            "tool/mkheader.c",
            "#include <stdio.h>\nint main(void) { puts(\"#define ROWS 42\"); return 0; }\n".to_string(),
        ),
        (
            "shell.c",
            "#include <stdio.h>\n#include \"gen.h\"\nint main(void) { printf(\"rows: %d\\n\", ROWS); return 0; }\n".to_string(),
        ),
        ("test/speedtest1.c", "int main(void) { return 0; }\n".to_string()),
        ("tool/speed-check.sh", "#!/bin/sh\n./speedtest1 \"$@\"\n".to_string()),
        ("autoconf/configure.ac", "AC_INIT([dbshell], [1.0])\nAM_INIT_AUTOMAKE\nAC_OUTPUT\n".to_string()),
        ("autoconf/Makefile.am", "bin_PROGRAMS = dbshell\n".to_string()),
    ];
    files.push(if autoconf {
        (
            "configure.ac",
            "AC_INIT([minidb], [1.0])\nAC_PROG_CC\nAC_OUTPUT\n".to_string(),
        )
    } else {
        (
            "auto.def",
            "# autosetup's configure reads this\n".to_string(),
        )
    });
    files_repo(dir, &[("an autosetup project", files)]);
}

/// `config init` on autotools-like projects (issue 33's trial on SQLite): the configure script
/// is tracked, so the recipe runs it without autoreconf; the program is the one a dry run of
/// the build links at the top (not the code generator it runs, nor `autoconf/dbshell`); the
/// benchmark target and script are offered as commented tests; the user's checkout is left
/// as it was; and the config builds and measures as printed.
#[test]
fn init_on_an_autosetup_project_dry_runs_its_build_and_offers_its_benchmarks() {
    if !(have_tool("make", "make, to dry-run the build") && have_tool("cc", "a C compiler")) {
        return;
    }
    for autoconf in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("minidb");
        autosetup_repo(&repo, autoconf);
        let (config, err) = init(&repo);
        let evidence = if autoconf {
            "configure.ac"
        } else {
            "configure"
        };
        assert!(
            config.contains(&format!("# Build system: autotools ({evidence}).")),
            "{config}"
        );
        assert!(
            config.contains("command = \"./configure && make -j2\""),
            "{config}"
        );
        assert!(!config.contains("autoreconf -fi"), "{config}");
        assert!(config.contains("artifacts = [\"dbshell\"]"), "{config}");
        assert!(config.contains("command = \"./dbshell\""), "{config}");
        let said = config.replace("\n# ", " ");
        assert!(
            said.contains("passed over `mkheader` (built and run by the build itself)"),
            "{config}"
        );
        assert!(
            said.contains("`make speedtest1` builds the benchmark program speedtest1 (from test/speedtest1.c)"),
            "{config}"
        );
        assert!(
            config.contains("# [tests.speedtest1-wall]\n# command = \"./speedtest1\""),
            "{config}"
        );
        assert!(
            said.contains("tool/speed-check.sh is a script of the project's"),
            "{config}"
        );
        assert!(
            err.contains("dry-ran the build in a temporary copy of HEAD: ./configure ("),
            "{err}"
        );
        assert!(err.contains("the tests run ./dbshell"), "{err}");
        // Nothing was configured or built in the user's checkout.
        let status =
            perfbisect::scaffold::demo::git(&repo, &["status", "--porcelain", "--ignored"], None)
                .unwrap();
        assert!(status.is_empty(), "{status}");
        let path = d.path().join("perfbisect.toml");
        std::fs::write(&path, &config).unwrap();
        let out = check(&path);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let cache = d.path().join("cache");
        let out = perfbisect(&[
            "--repo",
            repo.to_str().unwrap(),
            "--config",
            path.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
            "run",
            "all",
            "HEAD",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (s["builds"].as_u64(), s["failed_runs"].as_u64()),
            (Some(1), Some(0)),
            "{s}"
        );
    }
}

/// A C library as issue 52 met one: a fuzzer declared first, behind an option that is off by
/// default and a compiler check, and a benchmark program the default configure builds.
fn jsonlib_repo(dir: &Path, with_bench: bool) -> Vec<String> {
    let mut top = String::from(
        "cmake_minimum_required(VERSION 3.10)\nproject(jsonlib VERSION 1.0 LANGUAGES C)\n\
         option(JSONLIB_BUILD_FUZZER \"Build the fuzzer\" OFF)\n\
         option(JSONLIB_BUILD_TESTS \"Build the tests\" OFF)\n\
         add_library(jsonlib src/jsonlib.c)\n\
         target_include_directories(jsonlib PUBLIC src)\n\
         if(JSONLIB_BUILD_FUZZER)\n  if(CMAKE_C_COMPILER_ID STREQUAL \"Clang\")\n\
             add_executable(fuzzer fuzz/fuzzer.c)\n    target_link_libraries(fuzzer jsonlib)\n\
           endif()\nendif()\n\
         if(JSONLIB_BUILD_TESTS)\n  add_executable(test_parse test/test_parse.c)\nendif()\n",
    );
    if with_bench {
        top += "add_subdirectory(bench)\n";
    }
    let commits: Vec<FilesCommit<'_>> = vec![(
        "jsonlib",
        vec![
            ("CMakeLists.txt", top),
            (
                "src/jsonlib.h",
                "int jsonlib_count(const char *s);\n".to_string(),
            ),
            (
                "src/jsonlib.c",
                "#include \"jsonlib.h\"\nint jsonlib_count(const char *s) { int n = 0; while (*s) n += *s++ == ','; return n; }\n"
                    .to_string(),
            ),
            (
                "fuzz/fuzzer.c",
                "int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n"
                    .to_string(),
            ),
            ("test/test_parse.c", "int main(void) { return 0; }\n".to_string()),
            (
                "bench/CMakeLists.txt",
                "add_executable(bench_parse bench_parse.c)\ntarget_link_libraries(bench_parse jsonlib)\n"
                    .to_string(),
            ),
            (
                "bench/bench_parse.c",
                "#include <stdio.h>\n#include \"jsonlib.h\"\nint main(void) { long t = 0; \
                 for (int i = 0; i < 20000; i++) t += jsonlib_count(\"[1,2,3,4]\"); \
                 printf(\"%ld\\n\", t); return 0; }\n"
                    .to_string(),
            ),
        ],
    )];
    files_repo(dir, &commits)
}

/// `config check` of `config` for the project in `repo`.
fn check_at(repo: &Path, config: &Path) -> Output {
    perfbisect(&[
        "--repo",
        repo.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "config",
        "check",
    ])
    .current_dir(config.parent().unwrap())
    .output()
    .unwrap()
}

/// Issue 52: `config init` proposes what a default configure builds, not a target behind an
/// option that is off by default, and its config builds and runs unedited.
#[test]
fn init_on_cmake_proposes_the_default_benchmark_over_an_off_by_default_target() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("jsonlib");
    jsonlib_repo(&repo, true);
    let (config, note) = init(&repo);
    assert!(
        config.contains("artifacts = [\"build/bench/bench_parse\"]"),
        "{config}"
    );
    assert!(
        config.contains("[tests.bench_parse-wall]")
            && config.contains("command = \"build/bench/bench_parse\""),
        "{config}"
    );
    assert!(
        !config.contains("\nartifacts = [\"build/fuzzer\"]"),
        "{config}"
    );
    assert!(
        config.contains("# The tests run build/bench/bench_parse: the first benchmark program a")
            && config.contains("passed over fuzzer"),
        "{config}"
    );
    assert!(
        note.contains("the tests run build/bench/bench_parse"),
        "{note}"
    );
    let path = d.path().join("perfbisect.toml");
    std::fs::write(&path, &config).unwrap();
    if !have_tool("cmake", "cmake, to build with the config init wrote") {
        return;
    }
    let out = check_at(&repo, &path);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    let cache = d.path().join("cache");
    let out = perfbisect(&[
        "--repo",
        repo.to_str().unwrap(),
        "--config",
        path.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
        "run",
        "all",
        "HEAD",
        "--format",
        "json",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            s["builds"].as_u64(),
            s["failed_runs"].as_u64(),
            s["failed_builds"].as_array().map(Vec::len)
        ),
        (Some(1), Some(0), Some(0)),
        "{s}"
    );
}

/// Issue 52: where no program can be told with confidence, the config says so and `config
/// check` warns before any build, naming what the program it names needs.
#[test]
fn check_warns_before_any_build_about_a_program_only_an_option_builds() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("jsonlib");
    jsonlib_repo(&repo, false);
    let (config, note) = init(&repo);
    assert!(config.contains("artifacts = [\"build/app\"]"), "{config}");
    assert!(
        config.contains("# perfbisect could not tell which program to measure:")
            && config.contains("build/fuzzer (CMakeLists.txt:9) is only built with"),
        "{config}"
    );
    assert!(
        note.contains("`perfbisect config check` warns until then"),
        "{note}"
    );
    let path = d.path().join("perfbisect.toml");
    std::fs::write(&path, &config).unwrap();
    let out = check_at(&repo, &path);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let line = config
        .lines()
        .position(|l| l.starts_with("artifacts = "))
        .unwrap()
        + 1;
    assert!(
        err.contains(&format!(":{line}: key `build.artifacts`: warning: `build/app` is no program the CMake build makes")),
        "{err}"
    );
    // A config naming the fuzzer, as `config init` wrote before: the warning says what it needs.
    std::fs::write(&path, config.replace("build/app", "build/fuzzer")).unwrap();
    let out = check_at(&repo, &path);
    let err = text(&out.stderr);
    assert!(
        err.contains("warning: `build/fuzzer` is only built with `JSONLIB_BUILD_FUZZER=ON` and when `CMAKE_C_COMPILER_ID STREQUAL \"Clang\"` (CMake target fuzzer, CMakeLists.txt:9)"),
        "{err}"
    );
    assert!(
        !d.path().join("cache").exists(),
        "config check built nothing"
    );
}
