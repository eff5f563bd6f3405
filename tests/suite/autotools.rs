//! Builds that match a developer's, on generated projects as autotools projects build: a
//! version stamped from `git describe` (the build folder is a repository at the commit, with
//! the user's tags), the build folder's path and the build's time embedded in the program
//! (a pristine check that finds other bytes measures both builds before it searches again),
//! and `config init` on a project whose maintainer mode remakes its lexer (turned off, the
//! tools named and looked for on PATH, a real autoreconf dry run at the old end).

use crate::common;

use common::*;

/// The version script of the first commits, as jq's was before 2023: without git it
/// prints `-` (an empty branch, a dash, an empty description).
const VERSION_OLD: &str = "#!/bin/sh\ncd \"$(dirname \"$0\")\"\nb=$(git rev-parse --abbrev-ref HEAD 2>/dev/null)\nc=$(git describe --tags --long 2>/dev/null)\necho \"$b-$c\" | sed 's/^HEAD-//'\n";
/// The version script after "Fix version script": `set -eu`, so without git it prints nothing.
const VERSION_NEW: &str =
    "#!/bin/sh\nset -eu\ncd \"$(dirname \"$0\")\"\ngit describe --tags --long\n";

/// The program: its number is WORK plus ten times its version string's length (a program
/// that prints its version with its output does more work for a longer one), and it embeds
/// the folder it was built in.
const APP: &str = r#"#include <stdio.h>
#include <string.h>
#include "version.h"
#include "work.h"
#include "stamp.h"
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("%s\n", VERSION);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--built-in") == 0) {
        printf("%s %s\n", BUILD_DIR, STAMP);
        return 0;
    }
    printf("value: %d\n", WORK + 10 * (int)strlen(VERSION));
    return 0;
}
"#;

/// A Makefile as automake writes them for a version header: remade on every build, replaced
/// only when the version changed; `stamp` the recipe of `stamp.h` (the build's time, or a
/// constant).
fn makefile(stamp: &str) -> String {
    format!(
        "app: app.c version.h work.h stamp.h\n\
         \tcc -O0 -g -o app app.c -DBUILD_DIR='\"$(CURDIR)\"'\n\
         version.h: FORCE\n\
         \t@v=\"$$(./version.sh || true)\"; echo \"#define VERSION \\\"$$v\\\"\" > version.h.new; \
         cmp -s version.h.new version.h || mv version.h.new version.h; rm -f version.h.new\n\
         stamp.h: work.h\n\
         \t{stamp}\n\
         FORCE:\n"
    )
}

/// Ten commits: 1 the program (tagged v1.0), 4 rewrites the version script (a false step
/// where a build has no git), 7 the real step (WORK 1000 → 1100), the others notes.
fn versioned(stamp: &str) -> Fixture {
    let mut commits: Vec<FilesCommit<'_>> = vec![(
        "Program",
        vec![
            ("app.c", APP.to_string()),
            ("work.h", "#define WORK 1000\n".to_string()),
            ("version.sh", VERSION_OLD.to_string()),
            ("Makefile", makefile(stamp)),
        ],
    )];
    for i in 2..=10 {
        let files = match i {
            4 => vec![("version.sh", VERSION_NEW.to_string())],
            7 => vec![("work.h", "#define WORK 1100\n".to_string())],
            _ => vec![("NOTES", format!("{i}\n"))],
        };
        commits.push((Box::leak(format!("Commit {i}").into_boxed_str()), files));
    }
    let f = Fixture::with_files(
        &commits,
        r#"
[build]
command = "make -s"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9]+)" }
deterministic = true
threshold = "0.5%"
"#,
    );
    f.git(&["tag", "-a", "v1.0", "-m", "release 1.0", &f.ids[0]]);
    f
}

/// The cached build of `commit` (its artifact folder).
fn cached(f: &Fixture, commit: &str) -> std::path::PathBuf {
    std::fs::read_dir(f.cache.join("artifacts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(commit))
        })
        .unwrap_or_else(|| panic!("{commit} is not cached"))
}

fn app(dir: &std::path::Path, arg: &str) -> String {
    let o = std::process::Command::new(dir.join("app"))
        .arg(arg)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Every build stamps the version `git describe` gives the developer for its commit, so
/// the commit that rewrote the version script is no step; the one real step is found, and
/// the pristine checks of its builds (the build folder's path is in the binary) rebuild at
/// the same path and find the same bytes: one search.
#[test]
fn a_version_stamped_from_git_is_the_developers_and_the_build_path_is_no_difference() {
    if !have_tool("make", "the autotools-like builds") {
        return;
    }
    let f = versioned("echo '#define STAMP \"fixed\"' > stamp.h");
    let range = f.range();
    let out = f
        .cmd()
        .args(["find", "value", &range, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["verdict"], "culprit", "{j}\n{err}");
    // A bisection: the ends and a few probes, not every commit.
    assert!(j["builds"].as_u64().unwrap() <= 7, "{j}");
    assert_eq!(j["culprit"]["commit"], f.ids[6].as_str(), "{j}");
    // 1000 + 10 × len("v1.0-N-gXXXXXXX") on both sides: the version is the developer's.
    assert_eq!(j["culprit"]["before"]["median"], 1150.0, "{j}");
    assert_eq!(j["culprit"]["after"]["median"], 1250.0, "{j}");
    assert!(!err.contains("searching again"), "{err}");
    assert!(!err.contains("differs from a pristine build"), "{err}");
    // Measured commit by commit, the series has one step, at commit 7.
    f.run_json("value", &range, &[]);
    let d = f.json(&["detect", "value", &range, "--format", "json"]);
    let points = d["change_points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{d}");
    assert_eq!(points[0]["commit"], f.ids[6].as_str(), "{d}");
    // Each cached build says what the developer's `git describe` says of its commit, the
    // ones before and after the script's rewrite alike.
    for id in [&f.ids[2], &f.ids[3], &f.ids[6]] {
        let dir = cached(&f, id);
        let want = f.git(&["describe", "--tags", "--long", id]);
        assert_eq!(app(&dir, "--version"), want.trim(), "{id}");
    }
    // The build folder's path is in the program: a folder of perfbisect's cache.
    let built_in = app(&cached(&f, &f.ids[6]), "--built-in");
    assert!(built_in.contains("/worktrees/"), "{built_in}");
    // The user's checkout is as it was: no worktree registered, HEAD on main.
    assert!(!f.repo.join(".git/worktrees").exists());
    assert_eq!(f.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
    assert_eq!(f.git(&["status", "--porcelain"]).trim(), "");
}

/// A build that stamps its time into the program differs from any other build of its
/// commit: the pristine check says where (file, offset, section), measures both builds,
/// finds the same number, keeps the incremental build and does not search again.
#[test]
fn other_bytes_that_measure_the_same_are_said_and_cost_no_second_search() {
    if !have_tool("make", "the autotools-like builds") {
        return;
    }
    let f = versioned("echo \"#define STAMP \\\"$$(date +%s%N)\\\"\" > stamp.h");
    let range = f.range();
    let out = f
        .cmd()
        .args(["find", "value", &range, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["culprit"]["commit"], f.ids[6].as_str(), "{j}\n{err}");
    let said = err.replace('\n', " ");
    assert!(
        said.contains("differ in `app`: first at offset 0x"),
        "what differs is said: {err}"
    );
    // The stamp is a string of the program's: its read-only data.
    assert!(said.contains("`.rodata` ("), "the ELF section: {err}");
    assert!(
        said.contains("measure the same side by side"),
        "both builds measured: {err}"
    );
    assert!(!err.contains("searching again"), "one search: {err}");
    assert!(
        !f.cache.join("stale").exists() || !said.contains("set aside"),
        "{err}"
    );
    // The second time, the checked builds are not checked again.
    let out = f
        .cmd()
        .args(["find", "value", &range, "--format", "json"])
        .output()
        .unwrap();
    let again = String::from_utf8_lossy(&out.stderr);
    assert!(!again.contains("rebuilding"), "{again}");
}

/// A project whose maintainer mode is on by default and remakes its lexer with flex (not
/// installed): `config init` configures it off, names the tools, and (with autoreconf here)
/// dry-runs the build at the old end; the config's build then works at that end although the
/// checkout leaves the lexer's source newer than the lexer.
#[test]
fn config_init_turns_maintainer_mode_off_and_names_the_tools_the_build_runs() {
    if !have_tool("make", "the autotools-like builds") {
        return;
    }
    let configure_ac = "AC_INIT([demo], [1.0])\nAM_INIT_AUTOMAKE([foreign])\nAM_MAINTAINER_MODE([enable])\nAC_PROG_CC\nAC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n";
    let makefile_am = "bin_PROGRAMS = demo\ndemo_SOURCES = demo.c lexer.c\nif MAINTAINER_MODE\nlexer.c: lexer.l\n\tflex -o lexer.c lexer.l\nendif\n";
    let commits: Vec<FilesCommit<'_>> = vec![
        (
            "Demo",
            vec![
                ("configure.ac", configure_ac.to_string()),
                ("Makefile.am", makefile_am.to_string()),
                (
                    "demo.c",
                    "#include <stdio.h>\nint lex(void);\nint main(void) { printf(\"value: %d\\n\", lex()); return 0; }\n".to_string(),
                ),
                ("lexer.l", "%%\n%%\n".to_string()),
                ("lexer.c", "int lex(void) { return 7; }\n".to_string()),
            ],
        ),
        ("Notes", vec![("NOTES", "2\n".to_string())]),
        (
            "Faster lexer",
            vec![("lexer.c", "int lex(void) { return 6; }\n".to_string())],
        ),
    ];
    let f = Fixture::with_files(&commits, "");
    // PATH holds the real tools a build needs, but no flex or bison.
    let bin = f.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mut linked = Vec::new();
    for tool in [
        "sh",
        "make",
        "cc",
        "gcc",
        "git",
        "autoreconf",
        "autoconf",
        "autoheader",
        "autom4te",
        "aclocal",
        "automake",
        "m4",
        "perl",
        "sed",
        "grep",
        "cat",
        "rm",
        "mv",
        "cp",
        "mkdir",
        "ls",
        "tr",
        "expr",
        "sort",
        "uniq",
        "awk",
        "mawk",
        "gawk",
        "chmod",
        "touch",
        "cmp",
        "diff",
        "test",
        "true",
        "false",
        "basename",
        "dirname",
        "env",
        "ln",
        "wc",
        "head",
        "tail",
        "date",
        "uname",
        "hostname",
        "as",
        "ld",
        "cpp",
        "sleep",
        "find",
        "xargs",
        "install",
        "od",
        "printf",
        "echo",
        "tar",
        "readlink",
        "rmdir",
        "libtoolize",
        "tee",
    ] {
        if let Some(p) = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(tool))
                .find(|p| p.is_file())
        }) {
            std::os::unix::fs::symlink(&p, bin.join(tool)).unwrap();
            linked.push(tool);
        }
    }
    let init = |path: &std::ffi::OsStr| {
        f.cmd()
            .args(["config", "init", "--at", &f.ids[0]])
            .env("PATH", path)
            .output()
            .unwrap()
    };
    let with_autoreconf = linked.contains(&"autoreconf");
    // Without autoreconf on PATH: said, and not dry-run.
    let bare = f.dir.path().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    for tool in ["sh", "make", "cc", "git"] {
        if bin.join(tool).exists() {
            std::os::unix::fs::symlink(
                std::fs::read_link(bin.join(tool)).unwrap(),
                bare.join(tool),
            )
            .unwrap();
        }
    }
    let out = init(bare.as_os_str());
    let (config, err) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).replace('\n', " "),
    );
    assert!(out.status.success(), "{err}");
    assert!(
        config.contains(
            "command = \"autoreconf -fi && ./configure --disable-maintainer-mode && make -j2\""
        ),
        "{config}"
    );
    let said = config.replace("\n# ", " ");
    assert!(said.contains("on by default here"), "{config}");
    assert!(
        said.contains("`flex: lexer.l` only in maintainer mode"),
        "{config}"
    );
    assert!(
        said.contains("autoreconf (makes `configure` from configure.ac, which is not tracked; NOT on PATH: Debian package `autoconf`)"),
        "{config}"
    );
    assert!(
        err.contains("`autoreconf`") && err.contains("apt-get install autoconf automake"),
        "the missing tools are named: {err}"
    );
    assert!(err.contains("not dry-run"), "{err}");
    assert!(config.contains("PLACEHOLDER"), "{config}");

    if !have_tool("autoreconf", "config init's dry run of an autotools build") {
        return;
    }
    assert!(with_autoreconf);
    let out = init(bin.as_os_str());
    let (config, err) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).replace('\n', " "),
    );
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "dry-ran the build in a temporary copy of `{}`",
            f.ids[0]
        )) && err.contains("autoreconf -fi (")
            && err.contains("./configure --disable-maintainer-mode ("),
        "{err}"
    );
    assert!(config.contains("artifacts = [\"demo\"]"), "{config}");
    // The config builds the old end and the others, flex or not: maintainer mode is off.
    std::fs::write(
        &f.config,
        config.replace(
            "command = \"./demo\"\nmetric = \"wall\"",
            "command = \"./demo\"\nmetric = { regex = \"^value: ([0-9]+)\" }\ndeterministic = true",
        ),
    )
    .unwrap();
    // Each commit checked out fresh or switched leaves lexer.l written after lexer.c.
    let range = format!("{}..{}", f.ids[0], f.ids[2]);
    let out = f
        .cmd()
        .args(["run", "demo-wall", &range, "--format", "json"])
        .env("PATH", &bin)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["failed_builds"],
        serde_json::json!([]),
        "{last}\n{err}"
    );
}
