//! What `config init` found in a repository: a build system it recognises, with the programs
//! and benchmarks it builds.

use super::{benches, cmake};

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
    /// Why the first of `programs` was taken, when the build files tell (CMake: what a default
    /// configure builds, and what was passed over).
    pub chosen: Option<String>,
    /// Why no program could be told with confidence (CMake: what the build declares, and
    /// what each needs), when none could.
    pub unsure: Option<String>,
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
    /// autotools: the options a release build is configured with and the tools it runs.
    pub autotools: Option<super::autotools::Autotools>,
    /// Targets of the build named like benchmarks (`speedtest1`), from its rule database.
    pub bench_targets: Vec<String>,
    /// Tracked scripts and sources named like benchmarks (`tool/speed-check.sh`).
    pub bench_files: Vec<String>,
    /// CMake: the benchmark programs its build files declare, with the option each needs on.
    pub cmake_benches: Vec<cmake::Bench>,
}

impl Found {
    /// The first bench target, for the test `config init` writes of it.
    pub(super) fn suite(&self) -> Option<benches::Suite<'_>> {
        Some(benches::Suite {
            bench: self.benches.first()?,
            package: self.bench_package.as_deref(),
            criterion: self.criterion,
            names: &self.bench_names,
            unstable: self.bench_unstable,
        })
    }

    pub(super) fn new(system: System, evidence: &str, programs: Vec<String>) -> Found {
        Found {
            system,
            evidence: evidence.into(),
            programs,
            guess: None,
            chosen: None,
            unsure: None,
            benches: Vec::new(),
            bench_names: Vec::new(),
            bench_unstable: false,
            criterion: false,
            bench_package: None,
            configure_tracked: false,
            autotools: None,
            bench_targets: Vec::new(),
            bench_files: Vec::new(),
            cmake_benches: Vec::new(),
        }
    }
}
