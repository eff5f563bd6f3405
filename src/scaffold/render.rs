//! The config `config init` prints: its opening comment, the `[build]` section for the build
//! system found, and the tests of the program it builds (wall time and peak memory), with the
//! project's own benchmarks and a harness's numbers as commented tests.

use std::path::Path;

use super::found::{Found, System};
use super::text::{q, wrap_comment};
use super::{benches, cmake};

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
    if let Some(why) = first.and_then(|f| f.chosen.as_deref()) {
        o += &wrap_comment(&format!(
            "The tests run {run}: {why}. If another program is the one to measure, put its \
             path in the tests' commands and in `artifacts`."
        ));
        o += "\n";
    }
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
        "# Wall time of one run of {run}, in seconds.\n\
         {}\
         [tests.{stem}-wall]\n\
         command = {}\n\
         metric = \"wall\"\n\
         direction = \"lower\"        # lower is better\n\
         repeats = {}                # {}\n\
         threshold = \"2%\"           # the smallest change that matters\n\n",
        wrap_comment(&format!(
            "PLACEHOLDER: {run} with no arguments is no workload: it measures the program's \
             start-up, and a program that wants input or arguments prints its usage and exits \
             non-zero, which fails every run. Put the arguments of a typical workload in \
             `command` (sh -c in the commit's artifact directory: files it reads go in \
             `artifacts`, or are named by $PERFBISECT_CONFIG_DIR); it must exit 0. For a \
             count that does not move run to run, `metric = \"instructions\"`."
        )),
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
        Some(System::Autotools) => {
            let f = first.expect("a system");
            let a = f.autotools.clone().unwrap_or_default();
            if f.configure_tracked {
                o += "# sh -c in perfbisect's own worktree of each commit (never your checkout). The\n\
                      # repository tracks its configure script, so it runs as committed (no autoreconf).\n";
            } else {
                o += "# sh -c in perfbisect's own worktree of each commit (never your checkout). The\n\
                      # configure script is not tracked: autoreconf makes it from configure.ac.\n";
            }
            o += &super::autotools::comment(&a);
            let bootstrap = if f.configure_tracked {
                ""
            } else {
                "autoreconf -fi && "
            };
            o += &format!(
                "command = {}\n",
                q(&format!(
                    "{bootstrap}./configure{} && make -j2",
                    a.options()
                ))
            );
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
        match first.and_then(|f| f.unsure.as_deref()) {
            Some(why) if guessed => {
                o += &wrap_comment(&format!(
                    "perfbisect could not tell which program to measure: {why}. `{artifact}` \
                     stands in for it: put the program's path here and in the tests' commands \
                     (and what builds it in `command`); `perfbisect config check` warns until \
                     then."
                ))
            }
            _ if guessed => {
                o += "# perfbisect could not tell which program the build makes: put its path here and\n\
                      # in the tests' commands.\n"
            }
            _ => {}
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
pub(super) fn test_stem(program: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
