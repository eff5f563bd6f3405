//! `[build] cargo = {...}`: a generated Rust workspace (no dependencies, built offline) whose
//! commits change what its binary prints, measured over several commits. The executables are
//! found through `cargo metadata` and cargo's JSON messages and cached under their target
//! names: the config names no path under target/. The workspace's bench is a libtest bench
//! (`#[bench]`, on this stable toolchain through RUSTC_BOOTSTRAP=1), so this is also the
//! libtest adapter on output produced live.

use crate::common;

use common::Fixture;

const WORKSPACE: &str = "[workspace]\nmembers = [\"tool\", \"speedy\"]\nresolver = \"2\"\n";
const TOOL_TOML: &str = "[package]\nname = \"tool\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
const SPEEDY_TOML: &str = "[package]\nname = \"speedy\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bench]]\nname = \"speed\"\n";
const SPEEDY_LIB: &str = "/// The work the bench measures.\npub fn work(n: u64) -> u64 {\n    (0..n).map(|i| i ^ (i >> 3)).sum()\n}\n";
const SPEED_BENCH: &str = "#![feature(test)]\nextern crate test;\n\n#[bench]\nfn parse(b: &mut test::Bencher) {\n    b.iter(|| speedy::work(test::black_box(1000)));\n}\n";

fn main_rs(value: u32) -> String {
    format!("fn main() {{\n    println!(\"value: {{}}\", {value});\n}}\n")
}

fn config(bins: &str) -> String {
    format!(
        r#"
[build]
cargo = {{ bins = [{bins}], benches = ["speed"] }}
# No network; RUSTC_BOOTSTRAP lets libtest's #[bench] build on a stable toolchain. The bench
# carries debug information, as bench profiles with `debug = true` do.
env = {{ CARGO_NET_OFFLINE = "true", RUSTC_BOOTSTRAP = "1", CARGO_PROFILE_BENCH_DEBUG = "true", CARGO_PROFILE_BENCH_STRIP = "none" }}
timeout = "10m"

[tests.value]
command = "./tool"
metric = {{ regex = "^value: ([0-9]+)" }}
deterministic = true

[tests.speed]
command = "./speed --bench parse"
metric = {{ format = "libtest", name = "parse" }}
repeats = 2
"#
    )
}

#[test]
fn a_cargo_workspace_is_built_measured_and_bisected_without_paths() {
    let f = Fixture::with_files(
        &[
            (
                "Workspace",
                vec![
                    ("Cargo.toml", WORKSPACE.to_string()),
                    ("tool/Cargo.toml", TOOL_TOML.to_string()),
                    ("tool/src/main.rs", main_rs(100)),
                    ("speedy/Cargo.toml", SPEEDY_TOML.to_string()),
                    ("speedy/src/lib.rs", SPEEDY_LIB.to_string()),
                    ("speedy/benches/speed.rs", SPEED_BENCH.to_string()),
                    (".gitignore", "/target\nCargo.lock\n".to_string()),
                ],
            ),
            ("Refactor", vec![("README", "tool\n".to_string())]),
            ("Print more", vec![("tool/src/main.rs", main_rs(120))]),
        ],
        &config("\"tool\""),
    );
    let range = f.range();
    // A CARGO_TARGET_DIR in the environment does not take the builds out of the worktree
    // slots' own target/ (incremental builds per slot; two slots never share one).
    let user_target = f.dir.path().join("user-target");
    let out = f
        .cmd()
        .env("CARGO_TARGET_DIR", &user_target)
        .args(["run", "value,speed", &range, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("CARGO_TARGET_DIR is set in the environment"),
        "{err}"
    );
    assert!(
        !user_target.exists(),
        "cargo built into the environment's CARGO_TARGET_DIR"
    );
    let s: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(s["builds"], 2, "{s}");
    assert_eq!(s["failed_builds"].as_array().unwrap().len(), 0, "{s}");
    // Its repeats, and the runs `run` added beside a step too few runs left undecided.
    assert_eq!(
        s["runs"].as_u64().unwrap() - s["topped_up"].as_u64().unwrap(),
        2 * 3,
        "{s}"
    );
    assert_eq!(s["failed_runs"], 0, "{s}");

    // Each commit's cache entry holds the two executables under their target names.
    let ls = f.json(&["cache", "ls", "--format", "json"]);
    assert_eq!(ls["schema"], 1);
    let builds = ls["builds"].as_array().unwrap();
    assert_eq!(builds.len(), 2, "{ls}");
    for b in builds {
        let entry = f.cache.join("artifacts").join(format!(
            "{}-{}",
            b["commit"].as_str().unwrap(),
            b["recipe"].as_str().unwrap()
        ));
        for exe in ["tool", "speed"] {
            use std::os::unix::fs::PermissionsExt;
            let m = std::fs::metadata(entry.join(exe)).unwrap();
            assert!(m.permissions().mode() & 0o111 != 0, "{exe} in {entry:?}");
        }
        // The cached bench keeps its symbols but not its debug information (tens of MB a
        // commit on real projects).
        let sections = sections(&entry.join("speed"));
        assert!(
            !sections.contains(".debug_info"),
            "debug info kept: {sections}"
        );
        assert!(sections.contains(".symtab"), "symbols dropped: {sections}");
    }
    let built = walk_files(&f.cache.join("worktrees"))
        .into_iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("speed-") && !n.contains('.'))
        })
        .expect("the bench executable in a worktree's target/");
    assert!(
        sections(&built).contains(".debug_info"),
        "the build itself has debug information: {built:?}"
    );

    // What the binary prints moved at the third commit: find names it (building the first).
    let found = f.json(&["find", "value", &range, "--format", "json"]);
    assert_eq!(found["verdict"], "culprit", "{found}");
    assert_eq!(found["culprit"]["commit"], f.ids[2].as_str(), "{found}");
    assert_eq!(found["builds"], 1, "{found}");
    let show = f.json(&["show", "value", "--format", "json"]);
    assert_eq!(
        common::medians(&show),
        [Some(100.0), Some(100.0), Some(120.0)]
    );
    // The bench's own numbers, from libtest's lines.
    let speed = f.json(&["show", "speed", &range, "--format", "json"]);
    assert_eq!(speed["unit"], "ns");
    assert!(
        common::medians(&speed)
            .iter()
            .all(|m| m.is_some_and(|v| v > 0.0)),
        "{speed}"
    );

    // A target that does not exist: the build fails saying which targets there are.
    f.set_config(&config("\"tol\""));
    let out = f.cmd().args(["run", "value", &range]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no bin target `tol` in the workspace at this commit; did you mean `tool`? (bin targets: tool)"),
        "{err}"
    );
}

/// Every file under `dir`.
fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The section headers of an ELF file, as `readelf -S` lists them.
fn sections(exe: &std::path::Path) -> String {
    let out = std::process::Command::new("readelf")
        .args(["-S", "--wide"])
        .arg(exe)
        .output()
        .expect("readelf (binutils, beside the C compiler the tests need)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A crate that one of its own dev-dependencies depends on (a helper pulling another copy of
/// it, as criterion's dependencies pull serde's building blocks): `-p NAME` is ambiguous to
/// cargo, so the build names the package by the exact id `cargo metadata` gives. `config
/// check` says which package it will build, building nothing.
#[test]
fn a_crate_its_dev_dependencies_also_pull_in_is_built_by_its_exact_id() {
    const ROOT: &str = "[package]\nname = \"foo\"\nversion = \"1.0.19\"\nedition = \"2021\"\n\n[dev-dependencies]\nhelper = { path = \"helper\" }\n\n[[bench]]\nname = \"bench\"\nharness = false\n\n[workspace]\nexclude = [\"vendor\"]\n";
    const HELPER: &str = "[package]\nname = \"helper\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nfoo = { path = \"../vendor/foo\" }\n";
    const OLD_FOO: &str = "[package]\nname = \"foo\"\nversion = \"1.0.18\"\nedition = \"2021\"\n";
    let lib = |v: u32| format!("pub fn work() -> u64 {{ {v} }}\n");
    let f = Fixture::with_files(
        &[
            (
                "Crate",
                vec![
                    ("Cargo.toml", ROOT.to_string()),
                    ("src/lib.rs", lib(100)),
                    (
                        "benches/bench.rs",
                        "fn main() {\n    println!(\"value: {}\", foo::work() + helper::one());\n}\n"
                            .to_string(),
                    ),
                    ("helper/Cargo.toml", HELPER.to_string()),
                    (
                        "helper/src/lib.rs",
                        "pub fn one() -> u64 {\n    foo::work() / foo::work()\n}\n".to_string(),
                    ),
                    ("vendor/foo/Cargo.toml", OLD_FOO.to_string()),
                    ("vendor/foo/src/lib.rs", lib(1)),
                    (".gitignore", "/target\nCargo.lock\n".to_string()),
                ],
            ),
            ("Docs", vec![("README", "foo\n".to_string())]),
            ("Faster", vec![("src/lib.rs", lib(80))]),
        ],
        r#"
[build]
cargo = { benches = ["bench"] }
env = { CARGO_NET_OFFLINE = "true" }
timeout = "10m"

[tests.value]
command = "./bench"
metric = { regex = "^value: ([0-9]+)" }
deterministic = true
"#,
    );
    // What cargo would say to the package's name alone (the defect this guards).
    let ambiguous = std::process::Command::new("cargo")
        .args(["metadata", "--format-version", "1"])
        .current_dir(&f.repo)
        .env("CARGO_NET_OFFLINE", "true")
        .output()
        .unwrap();
    assert!(ambiguous.status.success());
    let all: serde_json::Value = serde_json::from_slice(&ambiguous.stdout).unwrap();
    let foos = all["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "foo")
        .count();
    assert_eq!(foos, 2, "two packages named foo in the graph");

    let out = f.cmd().args(["config", "check"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("build at the checkout: cargo bench --no-run")
            && text.contains("#foo@1.0.19' --bench bench"),
        "{text}"
    );
    assert!(!f.repo.join("target").exists(), "config check built");

    let found = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(found["verdict"], "culprit", "{found}");
    assert_eq!(found["culprit"]["commit"], f.ids[2].as_str(), "{found}");
    // A "no change" names no build: cargo's builds are not rebuilt pristine for it.
    let docs = format!("{}..{}", f.ids[0], f.ids[1]);
    let same = f.json(&["find", "value", &docs, "--format", "json"]);
    assert_eq!(same["verdict"], "no-change", "{same}");
    assert_eq!(same["pristine_checks"], 0, "{same}");
}

/// A crate as its author meets perfbisect: `config init` on a library whose libtest bench
/// (`#![feature(test)]`) holds two benchmarks writes a config that builds it on this stable
/// toolchain, runs the first benchmark alone with runs enough to decide, and `find` with that
/// config, unedited, names the commit that slowed it.
#[test]
fn config_init_on_a_crate_with_a_libtest_bench_writes_a_test_that_decides() {
    const TOML: &str = "[package]\nname = \"speedy\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    let lib = |rounds: u32| {
        format!(
            "/// The work the bench measures.\npub fn work(n: u64) -> u64 {{\n    let mut s = 0;\n    for _ in 0..{rounds} {{\n        s += (0..n).map(|i| i ^ (i >> 3)).sum::<u64>();\n    }}\n    s\n}}\n"
        )
    };
    const BENCH: &str = "#![feature(test)]\nextern crate test;\n\n#[bench]\nfn parse(b: &mut test::Bencher) {\n    b.iter(|| speedy::work(test::black_box(200)));\n}\n\nmod render {\n    #[bench]\n    fn page(b: &mut test::Bencher) {\n        b.iter(|| speedy::work(test::black_box(10)));\n    }\n}\n";
    let f = Fixture::with_files(
        &[
            (
                "Crate",
                vec![
                    ("Cargo.toml", TOML.to_string()),
                    ("src/lib.rs", lib(1)),
                    ("benches/speed.rs", BENCH.to_string()),
                    (".gitignore", "/target\nCargo.lock\n".to_string()),
                ],
            ),
            ("Slower", vec![("src/lib.rs", lib(8))]),
        ],
        "",
    );
    let out = f.cmd().args(["config", "init"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let config = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        config.contains("cargo = { benches = [\"speed\"] }")
            && config.contains("env = { RUSTC_BOOTSTRAP = \"1\" }")
            && config.contains("command = \"./speed --bench --exact 'parse'\"")
            && config.contains("metric = { format = \"libtest\", name = \"parse\" }")
            && config.contains("repeats = 6 ")
            && config.contains("\"render::page\""),
        "{config}"
    );
    assert!(
        err.contains("the test runs benchmark `parse` of bench `speed` alone; its 1 other is listed commented"),
        "{err}"
    );
    // Offline, as the other cargo tests build.
    f.set_config(&config.replace(
        "env = { RUSTC_BOOTSTRAP = \"1\" }",
        "env = { RUSTC_BOOTSTRAP = \"1\", CARGO_NET_OFFLINE = \"true\" }",
    ));
    // (One commit in the range: each run of a libtest bench takes its time.)
    let found = f.json(&["find", "speed-ns", &f.range(), "--format", "json"]);
    assert_eq!(found["verdict"], "culprit", "{found}");
    assert_eq!(found["culprit"]["commit"], f.ids[1].as_str(), "{found}");
}
