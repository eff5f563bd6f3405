//! `perfbisect config init`: a commented starting config for a repository, from the build
//! system found in its top directory (cargo, CMake, Meson, autotools, a plain Makefile), with
//! a wall-time test and a max-RSS test of the program it builds, and the project's own
//! benchmark programs and scripts offered as commented tests. For a make-based build the
//! program is what a dry run of the build really links (`probe`). What it prints passes
//! `perfbisect config check` as it is.
//!
//! Its parts: the build systems (this file: which ones a repository has, and what each
//! builds, [`Found`]), their targets (`targets`: the program each build system makes;
//! `cmake`: a CMake build's programs and the options and checks they are built under;
//! `benches`: cargo's bench suites), and the tests written for them (`render`).
//!
//! Beside it, the rest of what helps a project start: what `config check` says beyond parsing
//! ([`lint`]), and the generated repositories of the demo and the tests ([`demo`]).

use std::path::Path;

pub mod autotools;
mod benches;
mod cmake;
pub mod demo;
mod found;
pub mod lint;
mod probe;
mod render;
mod source;
mod targets;
mod text;

pub use found::{Found, System};
pub use render::render;
pub use source::{checkout, Source};

use targets::{automake_program, cargo, make_guess, meson_program, program_in};

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
                // What a default configure builds, read as CMake reads the build files.
                let project = cmake::read(dir, &[]);
                let benches: Vec<cmake::Bench> = project
                    .targets
                    .iter()
                    .filter(|t| t.kind == cmake::Kind::Bench)
                    .cloned()
                    .collect();
                let (programs, chosen, unsure) = match cmake::choose(&project) {
                    cmake::Choice::Program(p, why) => (vec![p], Some(why), None),
                    cmake::Choice::Unsure(why) => (Vec::new(), None, Some(why)),
                };
                Found {
                    bench_targets: benches.iter().map(|b| b.name.clone()).collect(),
                    cmake_benches: benches,
                    chosen,
                    unsure,
                    ..Found::new(system, f, programs)
                }
            }
            System::Meson => Found::new(system, f, program_in(dir, f, meson_program, "build")),
            System::Autotools => Found {
                configure_tracked,
                autotools: Some(autotools::read(dir, &tracked, configure_tracked)),
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
    let options = f.autotools.as_ref().map_or("", |a| a.options());
    let configure = match f.system {
        System::Make => probe::Configure::default(),
        System::Autotools => {
            let missing: Vec<&str> = f
                .autotools
                .iter()
                .flat_map(|a| a.missing())
                .filter(|t| matches!(t.program, "autoreconf" | "automake" | "libtoolize"))
                .map(|t| t.program)
                .collect();
            if !missing.is_empty() {
                let names: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
                return Some(format!(
                    "`configure` is not tracked and {} {} not on PATH, so the build was not \
                     dry-run (autoreconf makes configure first)",
                    names.join(" and "),
                    if names.len() == 1 { "is" } else { "are" }
                ));
            }
            probe::Configure {
                bootstrap: !f.configure_tracked,
                options: Some(options),
            }
        }
        _ => return None,
    };
    let what = source.what();
    match probe::dry_run(repo, source, &configure) {
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

/// What `config init` says on stderr about the tools an autotools build runs that are not on
/// PATH here, if any.
pub fn tools_note(found: &[Found]) -> Option<String> {
    autotools::note(found.first()?.autotools.as_ref()?)
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
    if let Some(why) = &f.unsure {
        return Some(format!(
            "{why}; the config names build/app in its place: put the program to measure in \
             `artifacts` and in the tests' commands (`perfbisect config check` warns until then)"
        ));
    }
    let p = f.programs.first()?;
    let bare = if f.system == System::Cargo {
        ""
    } else {
        "; with no arguments, a placeholder (marked in the config) until you give them a typical workload"
    };
    Some(match (&f.guess, &f.chosen) {
        (Some(why), _) => format!("the tests run ./{p}: {why}{bare}"),
        (None, Some(why)) => format!("the tests run {p}: {why}{bare}"),
        (None, None) => format!("the tests run {p}{bare}"),
    })
}
