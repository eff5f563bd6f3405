//! Which program each build system makes, for `config init`: the `add_executable`,
//! `executable()` or `bin_PROGRAMS` of a build file, the program a plain Makefile's default
//! goal links (and why that one), and a cargo package's bin and bench targets. Nothing is
//! configured or built here.

use std::path::{Path, PathBuf};

use super::benches;
use super::found::{Found, System};

/// The program a build file in `dir` or one directory below makes, as a path relative to
/// the worktree: `out` (the build directory, "" for in-tree builds) / subdirectory / name.
pub(super) fn program_in(
    dir: &Path,
    file: &str,
    find: fn(&str) -> Option<String>,
    out: &str,
) -> Vec<String> {
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
pub(super) fn plain_program(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'))
        && !name.to_ascii_lowercase().contains("test")
}

/// `executable('NAME', ...)`.
pub(super) fn meson_program(text: &str) -> Option<String> {
    regex::Regex::new(r#"\bexecutable\s*\(\s*['"]([^'"]+)['"]"#)
        .expect("valid regex")
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .find(|n| plain_program(n))
}

/// `bin_PROGRAMS = NAME ...`.
pub(super) fn automake_program(text: &str) -> Option<String> {
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
pub(super) fn make_guess(text: &str) -> Option<(String, String)> {
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
pub(super) fn cargo(dir: &Path) -> Found {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_in_build_files() {
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
}
