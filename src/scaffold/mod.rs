//! `perfbisect config init`: a commented starting config for a repository, from the build
//! system found in its top directory (cargo, CMake, Meson, autotools, a plain Makefile), with
//! a wall-time test and a max-RSS test of the program it builds, and the project's own
//! benchmark programs and scripts offered as commented tests. For a make-based build the
//! program is what a dry run of the build really links (`probe`). What it prints passes
//! `perfbisect config check` as it is.
//!
//! Beside it, the rest of what helps a project start: what `config check` says beyond parsing
//! ([`lint`]), and the generated repositories of the demo and the tests ([`demo`]).

use std::path::{Path, PathBuf};

mod benches;
mod cmake;
pub mod demo;
pub mod lint;
mod probe;
mod source;
mod text;

pub use source::{checkout, Source};

use text::{q, wrap_comment};

/// A build system perfbisect recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    Cargo,
    CMake,
    Meson,
    Autotools,
    Make,
}

impl System {
    /// Its name in messages and in the config's comments.
    pub fn name(self) -> &'static str {
        match self {
            System::Cargo => "cargo",
            System::CMake => "CMake",
            System::Meson => "Meson",
            System::Autotools => "autotools",
            System::Make => "Makefile",
        }
    }
}

/// A build system found in the repository, with what it builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub system: System,
    /// The file that gave it away (`CMakeLists.txt`, ...).
    pub evidence: String,
    /// cargo: the bin targets; others: the program's path relative to the worktree after the
    /// build (`build/app`), when it could be told.
    pub programs: Vec<String>,
    /// Why the first of `programs` was taken (a Makefile's goals), when it was guessed.
    pub guess: Option<String>,
    /// cargo: bench targets (for the commented harness example).
    pub benches: Vec<String>,
    /// cargo: the benchmarks the first of `benches` defines, read from its source.
    pub bench_names: Vec<String>,
    /// cargo: the first bench uses `#![feature(test)]` (libtest's `#[bench]`, unstable).
    pub bench_unstable: bool,
    /// cargo: criterion is among the dev-dependencies (of the package with the benches).
    pub criterion: bool,
    /// cargo: the workspace member that holds the benches, when it is not a default member
    /// (it is built with `package`).
    pub bench_package: Option<String>,
    /// autotools: `configure` is tracked in git (so the recipe runs it without autoreconf).
    pub configure_tracked: bool,
    /// Targets of the build named like benchmarks (`speedtest1`), from its rule database.
    pub bench_targets: Vec<String>,
    /// Tracked scripts and sources named like benchmarks (`tool/speed-check.sh`).
    pub bench_files: Vec<String>,
    /// CMake: the benchmark programs its build files declare, with the option each needs on.
    pub cmake_benches: Vec<cmake::Bench>,
}

impl Found {
    /// The first bench target, for the test `config init` writes of it.
    fn suite(&self) -> Option<benches::Suite<'_>> {
        Some(benches::Suite {
            bench: self.benches.first()?,
            package: self.bench_package.as_deref(),
            criterion: self.criterion,
            names: &self.bench_names,
            unstable: self.bench_unstable,
        })
    }

    fn new(system: System, evidence: &str, programs: Vec<String>) -> Found {
        Found {
            system,
            evidence: evidence.into(),
            programs,
            guess: None,
            benches: Vec::new(),
            bench_names: Vec::new(),
            bench_unstable: false,
            criterion: false,
            bench_package: None,
            configure_tracked: false,
            bench_targets: Vec::new(),
            bench_files: Vec::new(),
            cmake_benches: Vec::new(),
        }
    }
}

/// The build systems that the files `has` says are at the top of a project give away, in
/// the order `init` prefers them, each with its file: cargo, CMake, Meson, autotools (a tracked
/// `configure` is one too), then a plain Makefile (autotools and CMake projects often carry
/// one as well).
pub fn systems(has: &dyn Fn(&str) -> bool, configure_tracked: bool) -> Vec<(System, &'static str)> {
    let mut out = Vec::new();
    for (system, files) in [
        (System::Cargo, &["Cargo.toml"][..]),
        (System::CMake, &["CMakeLists.txt"]),
        (System::Meson, &["meson.build"]),
        (System::Autotools, &["configure.ac", "configure.in"]),
        (System::Make, &["GNUmakefile", "makefile", "Makefile"]),
    ] {
        let found = files.iter().copied().find(|f| has(f));
        // A tracked `configure` is the project's own (autoconf's, or autosetup's as SQLite's),
        // even without configure.ac beside it.
        let found = match system {
            System::Autotools => found.or(configure_tracked.then_some("configure")),
            _ => found,
        };
        if let Some(f) = found {
            out.push((system, f));
        }
    }
    out
}

/// The build systems of a commit's tree, from the paths it tracks ([`systems`]).
pub fn systems_of(paths: &[String]) -> Vec<(System, &'static str)> {
    let top = |f: &str| paths.iter().any(|p| p == f);
    systems(&top, top("configure"))
}

/// Every build system found in `dir` (the checkout, or a commit's tree written out), the one
/// `init` uses first: see [`systems`].
pub fn detect(dir: &Path, source: &Source<'_>) -> Vec<Found> {
    let tracked = source.tracked(dir);
    let configure_tracked = tracked.iter().any(|f| f == "configure");
    let has = |f: &str| dir.join(f).is_file();
    let mut out = Vec::new();
    for (system, f) in systems(&has, configure_tracked) {
        out.push(match system {
            System::Cargo => cargo(dir),
            System::CMake => {
                let benches = cmake::benches(dir);
                Found {
                    bench_targets: benches.iter().map(|b| b.name.clone()).collect(),
                    cmake_benches: benches,
                    ..Found::new(system, f, program_in(dir, f, cmake_program, "build"))
                }
            }
            System::Meson => Found::new(system, f, program_in(dir, f, meson_program, "build")),
            System::Autotools => Found {
                configure_tracked,
                ..Found::new(
                    system,
                    f,
                    program_in(dir, "Makefile.am", automake_program, ""),
                )
            },
            System::Make => {
                let text = std::fs::read_to_string(dir.join(f)).unwrap_or_default();
                let guess = make_guess(&text);
                let mut found = Found::new(system, f, guess.iter().map(|g| g.0.clone()).collect());
                found.guess = guess.map(|g| g.1);
                found
            }
        });
    }
    let bench_files = probe::bench_files(&tracked);
    for f in &mut out {
        if f.system != System::Cargo {
            f.bench_files = bench_files.clone();
        }
    }
    out
}

/// For a make-based first system (autotools with a tracked `configure`, or a Makefile): what
/// a dry run of its build in a temporary copy of `source` (HEAD, or the revision of `--at`)
/// really links, in place of what its build files suggest, and its benchmark targets.
/// `repo` is the user's repository (HEAD is copied from it). Returns what was run or why it
/// could not be, for the note on stderr.
pub fn probe(repo: &Path, source: &Source<'_>, found: &mut [Found]) -> Option<String> {
    let f = found.first_mut()?;
    let configure = match f.system {
        System::Make => false,
        System::Autotools if f.configure_tracked => true,
        System::Autotools => return Some(
            "`configure` is not tracked, so the build was not dry-run (it needs autoreconf first)"
                .into(),
        ),
        _ => return None,
    };
    let what = source.what();
    match probe::dry_run(repo, source, configure) {
        Err(why) => Some(format!(
            "{why}; the program is guessed from the build files"
        )),
        Ok(run) => {
            f.bench_targets = run.bench_targets;
            if let Some(p) = run.programs.first() {
                if f.programs.first() == Some(p) {
                    if let Some(g) = &mut f.guess {
                        *g += &format!("; a dry run of the build (`{}`) links it too", run.ran);
                    }
                } else {
                    let tools = if run.tools.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; passed over {} (built and run by the build itself)",
                            run.tools
                                .iter()
                                .map(|t| format!("`{t}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    f.guess = Some(format!(
                        "the first program the build's default goal links (`{}` in a temporary copy of {what}){tools}",
                        run.ran
                    ));
                    f.programs = run.programs.clone();
                }
            }
            Some(format!(
                "dry-ran the build in a temporary copy of {what}: {}",
                run.ran
            ))
        }
    }
}

/// The program a build file in `dir` or one directory below makes, as a path relative to
/// the worktree: `out` (the build directory, "" for in-tree builds) / subdirectory / name.
fn program_in(dir: &Path, file: &str, find: fn(&str) -> Option<String>, out: &str) -> Vec<String> {
    let mut places: Vec<PathBuf> = vec![PathBuf::new()];
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut subs: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| PathBuf::from(e.file_name()))
            .filter(|p| {
                let n = p.to_string_lossy();
                !n.starts_with('.') && !matches!(n.as_ref(), "build" | "target" | "cache")
            })
            // A folder with a configure script of its own is another package (SQLite's
            // `autoconf/`, the amalgamation tarball's), not part of this build.
            .filter(|p| {
                !["configure", "configure.ac", "configure.in"]
                    .iter()
                    .any(|c| dir.join(p).join(c).is_file())
            })
            .collect();
        subs.sort();
        // Source directories first: `src/` holds the program more often than `tests/`.
        subs.sort_by_key(|p| !matches!(p.to_str(), Some("src" | "app" | "cli" | "bin")));
        places.extend(subs);
    }
    for sub in places {
        let Ok(text) = std::fs::read_to_string(dir.join(&sub).join(file)) else {
            continue;
        };
        if let Some(name) = find(&text) {
            let p = Path::new(out).join(&sub).join(name);
            return vec![p.to_string_lossy().into_owned()];
        }
    }
    Vec::new()
}

/// A name that is a plain file name, and not a test program.
fn plain_program(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'))
        && !name.to_ascii_lowercase().contains("test")
}

/// `add_executable(NAME ...)` (with `${PROJECT_NAME}` resolved from `project(NAME ...)`).
fn cmake_program(text: &str) -> Option<String> {
    let project = regex::Regex::new(r"(?i)\bproject\s*\(\s*([A-Za-z0-9_.+-]+)")
        .expect("valid regex")
        .captures(text)
        .map(|c| c[1].to_string());
    let re = regex::Regex::new(r"(?i)\badd_executable\s*\(\s*([A-Za-z0-9_.+${}-]+)")
        .expect("valid regex");
    let found = re
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .map(|n| match (&project, n.as_str()) {
            (Some(p), "${PROJECT_NAME}" | "${CMAKE_PROJECT_NAME}") => p.clone(),
            _ => n,
        })
        .find(|n| plain_program(n));
    found
}

/// `executable('NAME', ...)`.
fn meson_program(text: &str) -> Option<String> {
    regex::Regex::new(r#"\bexecutable\s*\(\s*['"]([^'"]+)['"]"#)
        .expect("valid regex")
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .find(|n| plain_program(n))
}

/// `bin_PROGRAMS = NAME ...`.
fn automake_program(text: &str) -> Option<String> {
    regex::Regex::new(r"(?m)^\s*bin_PROGRAMS\s*\+?=\s*(.*)$")
        .expect("valid regex")
        .captures_iter(text)
        .flat_map(|c| {
            c[1].split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .find(|n| plain_program(n))
}

/// The program of a plain Makefile, as [`make_guess`] finds it.
#[cfg(test)]
fn make_program(text: &str) -> Option<String> {
    make_guess(text).map(|(p, _)| p)
}

/// Targets that are conventionally phony: never the program a test runs.
const PHONY: [&str; 18] = [
    "all",
    "clean",
    "install",
    "uninstall",
    "test",
    "tests",
    "check",
    "dist",
    "distclean",
    "bench",
    "benchmark",
    "format",
    "lint",
    "doc",
    "docs",
    "help",
    "run",
    "default",
];

/// A library target (`lib`, `libxxhash`, `libfoo.a`, `shared`, `static`, `*.so`): a program
/// may link it, but a test cannot run it.
fn library_target(n: &str) -> bool {
    let l = n.to_ascii_lowercase();
    l == "lib"
        || l == "libs"
        || l.starts_with("lib")
        || matches!(l.as_str(), "shared" | "static" | "dylib")
        || [".a", ".so", ".dylib", ".dll", ".lib", ".pc"]
            .iter()
            .any(|e| l.ends_with(e))
        || l.contains(".so.")
}

/// The program a plain Makefile builds, and why that one: walking the prerequisites of the
/// default goal (the first rule), then of `all`, depth first through phony and aggregate
/// targets, the first target whose rule links an executable (`-o` without `-c`); library
/// targets (`lib`, `libfoo.a`) are passed over and said so. Without such a rule, the first
/// prerequisite that is not a library, an object file or a phony name.
fn make_guess(text: &str) -> Option<(String, String)> {
    let rule = regex::Regex::new(r"^([A-Za-z0-9_./+-]+)\s*:(.*)$").expect("valid regex");
    // target -> (prerequisites, recipe lines), in file order; target-specific variables
    // (`default: CFLAGS=-O3`) are not rules.
    let mut rules: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    let mut phony: Vec<String> = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if line.starts_with('\t') {
            if let Some(i) = current {
                rules[i].2.push(line.trim().to_string());
            }
            continue;
        }
        current = None;
        let Some(c) = rule.captures(line) else {
            continue;
        };
        let (target, deps) = (c[1].to_string(), c[2].to_string());
        if deps.starts_with('=') || deps.contains('=') && !deps.contains(';') {
            continue;
        }
        let deps: Vec<String> = deps
            .split(';')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if target == ".PHONY" {
            phony.extend(deps);
            continue;
        }
        match rules.iter().position(|r| r.0 == target) {
            Some(i) => {
                rules[i].1.extend(deps);
                current = Some(i);
            }
            None => {
                rules.push((target, deps, Vec::new()));
                current = Some(rules.len() - 1);
            }
        }
    }
    let object = |n: &str| {
        [".o", ".c", ".h", ".cc", ".cpp", ".d"]
            .iter()
            .any(|ext| n.ends_with(ext))
    };
    let usable = |n: &str| {
        plain_program(n)
            && !n.starts_with('.')
            && !n.contains('%')
            && !n.contains('$')
            && !PHONY.contains(&n)
            && !phony.iter().any(|p| p == n)
            && !library_target(n)
            && !object(n)
    };
    let links = |n: &str| {
        rules.iter().any(|(t, _, recipe)| {
            t == n
                && recipe.iter().any(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    w.iter().any(|x| x.starts_with("-o")) && !w.contains(&"-c")
                })
        })
    };
    let mut roots: Vec<String> = rules.first().map(|r| r.0.clone()).into_iter().collect();
    if !roots.iter().any(|r| r == "all") && rules.iter().any(|r| r.0 == "all") {
        roots.push("all".into());
    }
    let mut passed: Vec<String> = Vec::new();
    let mut fallback: Option<(String, String)> = None;
    for root in &roots {
        let mut stack: Vec<(String, String)> = vec![(root.clone(), root.clone())];
        let mut seen: Vec<String> = Vec::new();
        while let Some((t, via)) = stack.pop() {
            if seen.contains(&t) || seen.len() > 200 {
                continue;
            }
            seen.push(t.clone());
            if library_target(&t) {
                if !passed.contains(&t) {
                    passed.push(t.clone());
                }
                continue;
            }
            if t != *root && usable(&t) && links(&t) {
                let skipped = if passed.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; passed over {} (a library, not a program)",
                        passed
                            .iter()
                            .map(|p| format!("`{p}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                let path = if via == *root {
                    format!("`{root}`")
                } else {
                    format!("`{root}` through `{via}`")
                };
                return Some((
                    t.clone(),
                    format!("the first program the Makefile's {path} builds (its rule links it with -o){skipped}"),
                ));
            }
            if t != *root && fallback.is_none() && usable(&t) {
                fallback = Some((
                    t.clone(),
                    format!("the first target of `{root}` that is not a library, object or phony name (no rule that links a program was found)"),
                ));
            }
            if let Some((_, deps, _)) = rules.iter().find(|r| r.0 == t) {
                let next = if t == *root { root.clone() } else { t.clone() };
                for d in deps.iter().rev() {
                    stack.push((d.clone(), next.clone()));
                }
            }
        }
    }
    if fallback.is_none() {
        // No goal leads to one: the first rule that links an executable, else the first usable.
        if let Some((t, _, _)) = rules.iter().find(|(t, _, _)| usable(t) && links(t)) {
            return Some((
                t.clone(),
                "the first rule of the Makefile that links a program (-o)".into(),
            ));
        }
        if let Some((t, _, _)) = rules.iter().find(|(t, _, _)| usable(t)) {
            fallback = Some((
                t.clone(),
                "the first rule's target that is not a library, object or phony name".into(),
            ));
        }
    }
    fallback
}

/// cargo: bins and benches from `cargo metadata --no-deps` (it reads manifests only), else
/// from Cargo.toml itself.
fn cargo(dir: &Path) -> Found {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    let criterion = manifest.contains("criterion");
    let from_metadata = std::process::Command::new("cargo")
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            cargo_metadata::MetadataCommand::parse(String::from_utf8_lossy(&o.stdout)).ok()
        });
    let (mut programs, mut benches) = (Vec::new(), Vec::new());
    let mut criterion = criterion;
    let mut bench_package = None;
    // Where each bench target's source is (the first one's benchmarks are read from it).
    let mut bench_sources: Vec<(String, PathBuf)> = Vec::new();
    if let Some(meta) = &from_metadata {
        for t in meta.workspace_packages().iter().flat_map(|p| &p.targets) {
            if t.is_kind(cargo_metadata::TargetKind::Bench) {
                bench_sources.push((t.name.clone(), t.src_path.clone().into_std_path_buf()));
            }
        }
    }
    match from_metadata {
        Some(meta) => {
            let defaults = meta.workspace_default_packages();
            let all = meta.workspace_packages();
            // Bin and bench targets of `pkgs`; `member`: record the package of the benches.
            let scan = |pkgs: &[&cargo_metadata::Package],
                        member: bool,
                        programs: &mut Vec<String>,
                        benches: &mut Vec<String>,
                        criterion: &mut bool,
                        bench_package: &mut Option<String>| {
                for p in pkgs {
                    for t in &p.targets {
                        let bench = t.is_kind(cargo_metadata::TargetKind::Bench);
                        let list = if t.is_kind(cargo_metadata::TargetKind::Bin) {
                            &mut *programs
                        } else if bench {
                            &mut *benches
                        } else {
                            continue;
                        };
                        if !list.contains(&t.name) {
                            list.push(t.name.clone());
                        }
                        if bench {
                            if p.dependencies.iter().any(|d| d.name == "criterion") {
                                *criterion = true;
                            }
                            if member && bench_package.is_none() {
                                *bench_package = Some(p.name.to_string());
                            }
                        }
                    }
                }
            };
            let first: Vec<&cargo_metadata::Package> = if defaults.is_empty() {
                all.clone()
            } else {
                defaults
            };
            let (p, b, c, bp) = (
                &mut programs,
                &mut benches,
                &mut criterion,
                &mut bench_package,
            );
            scan(&first, false, p, b, c, bp);
            // A workspace whose default members build no program nor bench (a library, its
            // benches in a member such as `bench/`): the members' targets.
            if programs.is_empty() && benches.is_empty() {
                let (p, b, c, bp) = (
                    &mut programs,
                    &mut benches,
                    &mut criterion,
                    &mut bench_package,
                );
                scan(&all, true, p, b, c, bp);
            }
        }
        None => {
            if let Ok(v) = manifest.parse::<toml::Table>() {
                let names = |k: &str| -> Vec<String> {
                    v.get(k)
                        .and_then(|b| b.as_array())
                        .map(|a| {
                            a.iter()
                                .filter_map(|t| t.get("name")?.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                programs = names("bin");
                benches = names("bench");
                if programs.is_empty() && dir.join("src/main.rs").is_file() {
                    if let Some(n) = v
                        .get("package")
                        .and_then(|p| p.get("name"))
                        .and_then(|n| n.as_str())
                    {
                        programs.push(n.to_string());
                    }
                }
            }
        }
    }
    // Names that cannot be cargo targets of the config (it validates them) are left out.
    let ok = |n: &String| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
    };
    programs.retain(ok);
    benches.retain(ok);
    let bench_source = benches.first().and_then(|b| {
        let src = bench_sources
            .iter()
            .find(|(n, _)| n == b)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| dir.join("benches").join(format!("{b}.rs")));
        std::fs::read_to_string(src).ok()
    });
    let bench_names = bench_source
        .as_deref()
        .map(|src| benches::benchmark_names(src, criterion))
        .unwrap_or_default();
    let bench_unstable = bench_source.as_deref().is_some_and(benches::needs_nightly);
    Found {
        benches,
        bench_names,
        bench_unstable,
        criterion,
        bench_package,
        ..Found::new(System::Cargo, "Cargo.toml", programs)
    }
}

/// A CMake `[build] command`: with `-DNAME=ON` when the tests' program is a benchmark behind
/// option NAME; else as it is, and the options of the benchmarks behind options named with
/// a commented command that turns them on.
fn cmake_build(f: &Found, program: Option<&str>) -> String {
    let needed = cmake::program_option(&f.cmake_benches, program);
    let mut o = String::new();
    if let Some(opt) = needed {
        o += &wrap_comment(&format!(
            "The tests' program is a benchmark built only with the option {opt} on (off by \
             default): -D{opt}=ON turns it on."
        ));
    }
    o += &format!(
        "command = {}\n",
        q(&cmake::command(&needed.into_iter().collect::<Vec<_>>()))
    );
    let options = cmake::options(&f.cmake_benches);
    if needed.is_none() && !options.is_empty() {
        o += &wrap_comment(&format!(
            "The project's benchmark programs (below) are built only with {} on (off by \
             default); with them:",
            options.join(", ")
        ));
        o += &format!("# command = {}\n", q(&cmake::command(&options)));
    }
    o
}

/// The project's own benchmark programs and scripts, as commented tests.
fn project_benches(f: &Found) -> String {
    if f.bench_targets.is_empty() && f.bench_files.is_empty() {
        return String::new();
    }
    let stem = |p: &str| {
        let base = p.rsplit('/').next().unwrap_or(p);
        base.split('.').next().unwrap_or(base).to_string()
    };
    let mut o = String::from(
        "# The project's own benchmarks, found in its build and its files. Each is commented out:\n\
         # build it, give it the arguments of a typical run, then uncomment its test.\n",
    );
    for t in &f.bench_targets {
        if let Some(b) = f.cmake_benches.iter().find(|b| b.name == *t) {
            if f.programs.first() != Some(&b.path) {
                o += &cmake::commented_test(b, &test_stem(t));
            }
            continue;
        }
        let source = f
            .bench_files
            .iter()
            .find(|b| stem(b) == *t)
            .map(|b| format!(" (from {b})"))
            .unwrap_or_default();
        o += "#\n";
        o += &wrap_comment(&format!(
            "`make {t}` builds the benchmark program {t}{source}. To measure it, append \
             ` && make {t}` to the build command and add \"{t}\" to artifacts."
        ));
        o += &format!(
            "# [tests.{}-wall]\n\
             # command = \"./{t}\"\n\
             # metric = \"wall\"\n\
             # repeats = 5\n",
            test_stem(t)
        );
    }
    for b in &f.bench_files {
        if f.bench_targets.iter().any(|t| stem(b) == *t)
            || f.cmake_benches.iter().any(|c| c.sources.contains(b))
        {
            continue;
        }
        let is_source = [".c", ".cc", ".cpp"].iter().any(|e| b.ends_with(e));
        o += "#\n";
        if is_source {
            o += &wrap_comment(&format!(
                "{b} looks like a benchmark's source, but no target of the build makes it: build \
                 it in the build command and add the program to artifacts to measure it."
            ));
        } else {
            o += &wrap_comment(&format!(
                "{b} is a script of the project's that measures speed: a test can run it (tests \
                 run in the commit's artifact directory: add the script, and what it runs, to \
                 artifacts)."
            ));
            o += &format!(
                "# [tests.{}]\n# command = \"sh {b}\"\n# metric = \"wall\"\n",
                test_stem(&stem(b))
            );
        }
    }
    o + "\n"
}

/// A test name made from a program's file name.
fn test_stem(program: &str) -> String {
    let base = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let s: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_start_matches('.').to_string();
    if s.is_empty() || s == "all" {
        "app".into()
    } else {
        s
    }
}

/// What `config init` says on stderr about the benchmarks a CMake build declares behind an
/// option that is off by default, if it declares any.
pub fn bench_note(found: &[Found]) -> Option<String> {
    let f = found.first().filter(|f| f.system == System::CMake)?;
    let program = f.programs.first().map(String::as_str);
    cmake::note(
        &f.cmake_benches,
        cmake::program_option(&f.cmake_benches, program),
    )
}

/// What `config init` says on stderr about the program its tests run: which one, and why
/// that one when it was a guess.
pub fn program_note(found: &[Found]) -> Option<String> {
    let f = found.first()?;
    if f.programs.is_empty() {
        if let Some(suite) = f.suite() {
            return Some(benches::note(&suite));
        }
    }
    let p = f.programs.first()?;
    Some(match &f.guess {
        Some(why) => format!("the tests run ./{p}: {why}"),
        None => format!("the tests run {p}"),
    })
}

/// The commented config for the repository in `dir`, whose build systems `found` lists; `at`
/// names the revision read when it was not the checkout (`--at`).
pub fn render(dir: &Path, found: &[Found], at: Option<&str>) -> String {
    let mut o = header(dir, found, at);
    let first = found.first();
    let system = first.map(|f| f.system);
    let program = first.and_then(|f| f.programs.first().cloned());
    if let Some(suite) = first
        .filter(|f| f.system == System::Cargo && f.programs.is_empty())
        .and_then(Found::suite)
    {
        o += &benches::bench_config(&suite);
        return o;
    }
    // The program a test runs, relative to the artifact directory (its working directory).
    let (run, guessed) = match (system, &program) {
        (Some(System::Cargo), Some(p)) => (format!("./{p}"), false),
        (_, Some(p)) if !p.contains('/') => (format!("./{p}"), false),
        (_, Some(p)) => (p.clone(), false),
        (Some(System::Cargo), None) => ("./app".into(), true),
        (Some(System::CMake | System::Meson), None) => ("build/app".into(), true),
        (_, None) => ("./app".into(), true),
    };
    let artifact = run.trim_start_matches("./").to_string();
    if let Some(why) = first.and_then(|f| f.guess.as_deref()) {
        o += &wrap_comment(&format!(
            "The tests run {run}, a guess: {why}. If another program is the one to measure, \
             put its path in the tests' commands and in `artifacts`."
        ));
        o += "\n";
    }
    o += &build_section(first, program.as_deref(), guessed, &artifact);
    let stem = test_stem(&run);
    o += &format!(
        "# Wall time of one run of {run}, in seconds. Add the arguments of a typical workload to\n\
         # `command` (sh -c in the commit's artifact directory); it must exit 0.\n\
         [tests.{stem}-wall]\n\
         command = {}\n\
         metric = \"wall\"\n\
         direction = \"lower\"        # lower is better\n\
         repeats = {}                # {}\n\
         threshold = \"2%\"           # the smallest change that matters\n\n",
        q(&run),
        benches::noisy_repeats(),
        benches::repeats_comment()
    );
    o += &format!(
        "# Peak memory of one run of {run}: max RSS of its process tree, in bytes.\n\
         [tests.{stem}-rss]\n\
         command = {}\n\
         metric = \"max-rss\"\n\
         direction = \"lower\"\n\
         repeats = {}\n\
         threshold = \"5%\"\n\n",
        q(&run),
        benches::noisy_repeats()
    );
    if let Some(f) = first {
        o += &project_benches(f);
    }
    o += &harness_example(first);
    o
}

/// The config's opening comment: whose it is, what was read, the build systems found, and
/// where to keep the file.
fn header(dir: &Path, found: &[Found], at: Option<&str>) -> String {
    let repo_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "this repository".into());
    let mut o = String::new();
    o += &format!("# perfbisect config for `{repo_name}`, written by `perfbisect config init`.\n");
    if let Some(at) = at {
        o += &wrap_comment(&format!(
            "Read from the tree of {at}, given to --at, not from the checkout."
        ));
    }
    match found.first() {
        Some(f) => {
            o += &format!("# Build system: {} ({}).", f.system.name(), f.evidence);
            if found.len() > 1 {
                let others: Vec<String> = found[1..]
                    .iter()
                    .map(|f| format!("{} ({})", f.system.name(), f.evidence))
                    .collect();
                o += &format!(" Also found: {}.", others.join(", "));
            }
            o += "\n";
        }
        None => {
            o += "# No build system recognised (cargo, CMake, Meson, autotools, Makefile): the\n\
                  # [build] section below is a guess to edit.\n"
        }
    }
    o += "#\n\
          # Keep this file outside the commits it builds (old commits do not have it): save it as\n\
          # perfbisect.toml in the repository's top directory, untracked (perfbisect keeps its\n\
          # cache in cache/ beside it: add that to .gitignore), or anywhere and pass --config FILE.\n\
          # `perfbisect config check` validates it; `perfbisect guide config` lists every key.\n\n";
    o
}

/// The `[build]` section for the first build system found (`first`), building `program`, or
/// a guess to edit (`guessed`); `artifact` is what a non-cargo build keeps.
fn build_section(
    first: Option<&Found>,
    program: Option<&str>,
    guessed: bool,
    artifact: &str,
) -> String {
    let system = first.map(|f| f.system);
    let mut o = String::from("[build]\n");
    match system {
        Some(System::Cargo) => {
            let f = first.expect("a system");
            o += "# Built with cargo in perfbisect's own worktree of each commit (never your checkout);\n\
                  # each target's executable is cached under its own name, so a test runs `./NAME`.\n";
            let bins: Vec<String> = if guessed {
                vec![q("app")]
            } else {
                f.programs.iter().map(|p| q(p)).collect()
            };
            if guessed {
                o += "# No bin target found: name the one to measure (or use `benches`).\n";
            }
            o += &format!(
                "cargo = {{ bins = [{}], profile = \"release\" }}\n",
                bins.join(", ")
            );
        }
        Some(System::CMake) => {
            o += "# sh -c in perfbisect's own worktree of each commit (never your checkout); the worktree\n\
                  # and its build/ directory are kept, so builds are incremental.\n";
            o += &cmake_build(first.expect("a system"), program);
        }
        Some(System::Meson) => {
            o += "# sh -c in perfbisect's own worktree of each commit (never your checkout); the worktree\n\
                  # and its build/ directory are kept, so builds are incremental.\n\
                  command = \"{ [ -d build ] || meson setup build --buildtype=release; } && meson compile -C build\"\n";
        }
        Some(System::Autotools) if first.is_some_and(|f| f.configure_tracked) => {
            o += "# sh -c in perfbisect's own worktree of each commit (never your checkout). The\n\
                  # repository tracks its configure script, so it runs as committed (no autoreconf).\n\
                  command = \"./configure && make -j2\"\n";
        }
        Some(System::Autotools) => {
            o += "# sh -c in perfbisect's own worktree of each commit (never your checkout). The\n\
                  # configure script is not tracked: autoreconf makes it from configure.ac.\n\
                  command = \"autoreconf -fi && ./configure && make -j2\"\n";
        }
        Some(System::Make) | None => {
            o += "# sh -c in perfbisect's own worktree of each commit (never your checkout).\n\
                  command = \"make -j2\"\n";
        }
    }
    if system != Some(System::Cargo) {
        o +=
            "# What the tests need from a build, relative to the worktree; copied into the cache\n\
              # per commit. The tests run in that copy.\n";
        if guessed {
            o += "# perfbisect could not tell which program the build makes: put its path here and\n\
                  # in the tests' commands.\n";
        }
        o += &format!("artifacts = [{}]\n", q(artifact));
    }
    o += "timeout = \"30m\"\n\n";
    o
}

/// The commented-out example of a test that reads a benchmark harness's own numbers: one of
/// the repository's cargo benches when it has one, else a generic pair.
fn harness_example(first: Option<&Found>) -> String {
    let mut o = String::from(
        "# A benchmark harness's own numbers can be read instead of timing a command, e.g.:\n",
    );
    match first {
        Some(f) if f.system == System::Cargo && !f.benches.is_empty() => {
            let b = &f.benches[0];
            o += &format!("#   (add `benches = [{}]` to `cargo` above, then)\n", q(b));
            if f.bench_unstable {
                o += "#   (its `#[bench]` is unstable: on a stable toolchain also\n\
                      #   `env = { RUSTC_BOOTSTRAP = \"1\" }` in [build])\n";
            }
            let (suffix, format, what) = if f.criterion {
                ("median", "criterion", "median, ns")
            } else {
                ("ns", "libtest", "ns/iter")
            };
            let (command, name) = match f.bench_names.first() {
                Some(n) => (benches::filtered_command(b, n, f.criterion), n.clone()),
                None => (format!("./{b} --bench FILTER"), "BENCHMARK ID".to_string()),
            };
            o += &format!(
                "# [tests.{b}-{suffix}]\n\
                 # command = {}\n\
                 # metric = {{ format = \"{format}\", name = {} }}   # {what}\n\
                 # repeats = {}\n",
                q(&command),
                q(&name),
                benches::noisy_repeats()
            );
        }
        _ => {
            o += "# [tests.parse]\n\
                  # command = \"build/bench --benchmark_format=json\"\n\
                  # metric = { format = \"gbench\", name = \"BM_Parse\" }          # real_time, its time_unit\n\
                  # [tests.startup]\n\
                  # command = 'hyperfine --runs 10 --export-json \"$PERFBISECT_OUT/h.json\" ./app'\n\
                  # metric = { format = \"hyperfine\", file = \"h.json\" }         # mean, s\n";
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_in_build_files() {
        assert_eq!(
            cmake_program("project(Demo C)\nadd_executable(unit_tests t.c)\nadd_executable(${PROJECT_NAME} main.c)\n"),
            Some("Demo".into())
        );
        assert_eq!(
            meson_program("project('x', 'c')\nexecutable('fast-tool', 'm.c')\n"),
            Some("fast-tool".into())
        );
        assert_eq!(
            automake_program("bin_PROGRAMS = curl\ncurl_SOURCES = a.c\n"),
            Some("curl".into())
        );
        assert_eq!(
            make_program("CC=cc\n.PHONY: all clean\nall: app\napp: app.o\n\t$(CC) -o $@ $^\nclean:\n\trm -f app\n"),
            Some("app".into())
        );
        assert_eq!(
            make_program("x.o: x.c\n\tcc -c x.c\nprog: x.o\n\tcc -o prog x.o\n"),
            Some("prog".into())
        );
        // xxHash's Makefile: the default goal builds the library first, then the program
        // through an aggregate target; the program wins, and the library is said passed over.
        let xxhash = ".PHONY: default\ndefault: DEBUGFLAGS=\ndefault: lib xxhsum_and_links\n\
            .PHONY: all\nall: lib xxhsum xxhsum_inlinedXXH\n\
            xxhsum: xxhash.o xxhsum.o\n\t$(CC) $(FLAGS) $^ -o $@$(EXT)\n\
            .PHONY: xxhsum_and_links\nxxhsum_and_links: xxhsum xxh32sum\n\
            xxh32sum: xxhsum\n\tln -sf $< $@\n\
            .PHONY: lib\nlib: libxxhash.a libxxhash\n";
        let (program, why) = make_guess(xxhash).unwrap();
        assert_eq!(program, "xxhsum");
        assert!(why.contains("passed over `lib`"), "{why}");
        assert!(why.contains("`xxhsum_and_links`"), "{why}");
        // Only libraries: nothing is taken for a program.
        assert_eq!(
            make_program("all: libfoo.a\nlibfoo.a: foo.o\n\tar rcs $@ $^\n"),
            None
        );
    }

    #[test]
    fn every_system_renders_a_config_that_parses() {
        for (system, programs) in [
            (System::Cargo, vec!["app".to_string()]),
            (System::Cargo, vec![]),
            (System::CMake, vec!["build/src/tool".into()]),
            (System::Meson, vec![]),
            (System::Autotools, vec!["src/curl".into()]),
            (System::Make, vec!["app".into()]),
        ] {
            let benches_only = system == System::Cargo && programs.is_empty();
            let f = Found {
                benches: vec!["speed".into()],
                criterion: true,
                bench_targets: vec!["speedtest1".into()],
                bench_files: vec!["test/speedtest1.c".into(), "tool/speed-check.sh".into()],
                ..Found::new(system, "x", programs)
            };
            let text = render(Path::new("/r/demo"), &[f], Some("`v1` (0123456789)"));
            let c = crate::config::parse(&text, Path::new("/r/perfbisect.toml"))
                .unwrap_or_else(|e| panic!("{system:?}: {e:#}\n{text}"));
            if benches_only {
                // No program: the bench, with criterion's numbers.
                assert_eq!(c.tests.len(), 1, "{text}");
                assert!(c.tests.contains_key("speed-median"), "{text}");
                continue;
            }
            assert_eq!(c.tests.len(), 2, "{text}");
            assert!(c.tests.values().any(|t| t.metric.describe() == "max-rss"));
            assert_eq!(c.build.cargo.is_some(), system == System::Cargo);
        }
        let text = render(Path::new("/r/demo"), &[], None);
        crate::config::parse(&text, Path::new("/r/perfbisect.toml")).unwrap();
    }
}
