//! A CMake project's own benchmark programs, for `config init`: the `add_executable` targets
//! named like benchmarks, read from CMakeLists.txt and the directories it adds
//! (`add_subdirectory`), with the option each is declared behind: a target inside
//! `if(BUILD_BENCHMARKS)`, where `option(BUILD_BENCHMARKS "..." OFF)`, is built only with
//! `-DBUILD_BENCHMARKS=ON`. Nothing is configured or built.

use std::path::Path;

use super::text::{q, wrap_comment};

/// A benchmark program a CMake build declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bench {
    /// The target's name.
    pub name: String,
    /// Where the build puts it, relative to the top directory (`build/bench/bench_parse`).
    pub path: String,
    /// The CMakeLists.txt that declares it, relative to the top directory.
    pub file: String,
    /// Its sources as written, relative to the top directory.
    pub sources: Vec<String>,
    /// The option it is declared behind, off by default: `-DNAME=ON` builds it.
    pub option: Option<String>,
}

/// A name that looks like a benchmark's (`bench_parse`, `parse_benchmark`, `speedtest1`,
/// `perf-io`).
fn bench_like(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("bench") || l.starts_with("speedtest") || l.starts_with("perf")
}

/// The text of a CMake file without its line comments.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| {
            // A `#` inside a quoted argument is not a comment.
            let mut quoted = false;
            let mut end = l.len();
            for (i, c) in l.char_indices() {
                match c {
                    '"' => quoted = !quoted,
                    '#' if !quoted => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            &l[..end]
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The commands of a CMake file that matter here, in order: (name lowercased, arguments).
fn commands(text: &str) -> Vec<(String, String)> {
    let re = regex::Regex::new(
        r"(?i)\b(if|elseif|else|endif|option|set|add_executable|add_subdirectory|project)\s*\(([^)]*)\)",
    )
    .expect("valid regex");
    re.captures_iter(&code(text))
        .map(|c| (c[1].to_ascii_lowercase(), c[2].trim().to_string()))
        .collect()
}

/// The options declared off by default across `files` (name, CMake text): `option(NAME
/// "doc")`, `option(NAME "doc" OFF)`, `set(NAME OFF CACHE BOOL "doc")`.
fn options_off(files: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for text in files {
        for (cmd, args) in commands(text) {
            let words = words(&args);
            let off = match cmd.as_str() {
                "option" => words.len() >= 2 && !words.get(2).is_some_and(|v| truthy(v)),
                "set" => {
                    words
                        .get(2)
                        .is_some_and(|w| w.eq_ignore_ascii_case("CACHE"))
                        && words.get(1).is_some_and(|v| !truthy(v))
                }
                _ => false,
            };
            if off && !out.contains(&words[0]) {
                out.push(words[0].clone());
            }
        }
    }
    out
}

/// CMake's true constants.
fn truthy(v: &str) -> bool {
    matches!(
        v.to_ascii_uppercase().as_str(),
        "ON" | "YES" | "TRUE" | "Y" | "1"
    )
}

/// The arguments of a command, quotes taken off.
fn words(args: &str) -> Vec<String> {
    let re = regex::Regex::new(r#""([^"]*)"|(\S+)"#).expect("valid regex");
    re.captures_iter(args)
        .map(|c| c.get(1).or(c.get(2)).map_or("", |m| m.as_str()).to_string())
        .collect()
}

/// The variables an `if(...)` condition needs on: identifiers among `options`, not after a
/// `NOT`.
fn needs(cond: &str, options: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut negated = false;
    for w in words(cond) {
        let w = w.trim_start_matches("${").trim_end_matches('}').to_string();
        if w.eq_ignore_ascii_case("NOT") {
            negated = true;
            continue;
        }
        if !negated && options.contains(&w) && !out.contains(&w) {
            out.push(w);
        }
        negated = false;
    }
    out
}

/// The benchmark programs the CMake build in `dir` declares, following `add_subdirectory`
/// from the top CMakeLists.txt, with the option each needs on.
pub fn benches(dir: &Path) -> Vec<Bench> {
    // Every CMakeLists.txt reached, read once: options are declared anywhere in them.
    let mut files: Vec<(String, String)> = Vec::new();
    let mut pending = vec![String::new()];
    while let Some(sub) = pending.pop() {
        if files.len() >= 64 || files.iter().any(|(s, _)| *s == sub) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(dir.join(&sub).join("CMakeLists.txt")) else {
            continue;
        };
        for (cmd, args) in commands(&text) {
            if cmd == "add_subdirectory" {
                if let Some(d) = words(&args).first().filter(|d| plain_dir(d)) {
                    pending.push(join(&sub, d));
                }
            }
        }
        files.push((sub, text));
    }
    let texts: Vec<String> = files.iter().map(|(_, t)| t.clone()).collect();
    let options = options_off(&texts);
    let mut out = Vec::new();
    walk(&files, "", &[], &options, &mut out, 0);
    out
}

/// A directory argument perfbisect can follow: relative, no variables.
fn plain_dir(d: &str) -> bool {
    !d.is_empty() && !d.contains('$') && !d.starts_with('/') && !d.contains("..")
}

fn join(sub: &str, d: &str) -> String {
    let d = d.trim_end_matches('/').trim_start_matches("./");
    if sub.is_empty() {
        d.to_string()
    } else {
        format!("{sub}/{d}")
    }
}

/// The benches of the CMakeLists.txt in `sub`, declared under the options `outer` (those of
/// the `if` blocks around its `add_subdirectory`).
fn walk(
    files: &[(String, String)],
    sub: &str,
    outer: &[String],
    options: &[String],
    out: &mut Vec<Bench>,
    depth: usize,
) {
    let Some((_, text)) = files.iter().find(|(s, _)| s == sub) else {
        return;
    };
    if depth > 16 {
        return;
    }
    let project = commands(text)
        .into_iter()
        .find(|(c, _)| c == "project")
        .and_then(|(_, a)| words(&a).into_iter().next());
    // The options each open `if` block needs (none in an `else` branch).
    let mut blocks: Vec<Vec<String>> = Vec::new();
    for (cmd, args) in commands(text) {
        match cmd.as_str() {
            "if" => blocks.push(needs(&args, options)),
            "elseif" | "else" => {
                if let Some(b) = blocks.last_mut() {
                    *b = if cmd == "elseif" {
                        needs(&args, options)
                    } else {
                        Vec::new()
                    };
                }
            }
            "endif" => {
                blocks.pop();
            }
            _ => {}
        }
        let gates: Vec<String> = outer
            .iter()
            .chain(blocks.iter().flatten())
            .cloned()
            .collect();
        match cmd.as_str() {
            "add_subdirectory" => {
                if let Some(d) = words(&args).first().filter(|d| plain_dir(d)) {
                    walk(files, &join(sub, d), &gates, options, out, depth + 1);
                }
            }
            "add_executable" => {
                let w = words(&args);
                let Some(name) = w.first() else { continue };
                let name = match (&project, name.as_str()) {
                    (Some(p), n) => n
                        .replace("${PROJECT_NAME}", p)
                        .replace("${CMAKE_PROJECT_NAME}", p),
                    (None, n) => n.to_string(),
                };
                if name.contains('$') || !bench_like(&name) || out.iter().any(|b| b.name == name) {
                    continue;
                }
                let sources = w[1..]
                    .iter()
                    .filter(|s| !s.contains('$') && s.contains('.'))
                    .map(|s| join(sub, s))
                    .collect();
                out.push(Bench {
                    path: format!("build/{}", join(sub, &name)),
                    file: join(sub, "CMakeLists.txt"),
                    sources,
                    option: gates.first().cloned(),
                    name,
                });
            }
            _ => {}
        }
    }
}

/// The option the config's program needs on, when it is one of the gated benches.
pub fn program_option<'a>(benches: &'a [Bench], program: Option<&str>) -> Option<&'a str> {
    let p = program?;
    benches
        .iter()
        .find(|b| b.path == p)
        .and_then(|b| b.option.as_deref())
}

/// The CMake build command, with `-DNAME=ON` for each of `options`.
pub fn command(options: &[&str]) -> String {
    let on: String = options.iter().map(|o| format!(" -D{o}=ON")).collect();
    format!(
        "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release{on} && cmake --build build --parallel 2"
    )
}

/// The options of `benches`, each once, in order.
pub fn options(benches: &[Bench]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for o in benches.iter().filter_map(|b| b.option.as_deref()) {
        if !out.contains(&o) {
            out.push(o);
        }
    }
    out
}

/// A commented test of one bench, with how to build it.
pub fn commented_test(b: &Bench, stem: &str) -> String {
    let mut o = String::from("#\n");
    o += &wrap_comment(&match &b.option {
        Some(opt) => format!(
            "CMake target {} ({}) is a benchmark program, built only with the option {opt} on \
             (off by default): to measure it, configure with -D{opt}=ON (the commented \
             `command` in [build]) and add {} to artifacts.",
            b.name,
            b.file,
            q(&b.path)
        ),
        None => format!(
            "CMake target {} ({}) is a benchmark program the build makes: to measure it, add \
             {} to artifacts.",
            b.name,
            b.file,
            q(&b.path)
        ),
    });
    o += &format!(
        "# [tests.{stem}-wall]\n# command = {}\n# metric = \"wall\"\n# repeats = 5\n",
        q(&b.path)
    );
    o
}

/// What `config init` says on stderr about benchmarks behind options, if any are.
pub fn note(benches: &[Bench], program_option: Option<&str>) -> Option<String> {
    let gated: Vec<String> = benches
        .iter()
        .filter_map(|b| {
            b.option
                .as_ref()
                .map(|o| format!("{} (-D{o}=ON, declared in {})", b.name, b.file))
        })
        .collect();
    if gated.is_empty() {
        return None;
    }
    let how = match program_option {
        Some(o) => format!("the [build] command turns {o} on, since the tests run that program"),
        None => "the config names the options, with a commented [build] command that turns \
                 them on"
            .into(),
    };
    Some(format!(
        "benchmark target{} behind an option that is off by default: {}; {how}",
        if gated.len() == 1 { "" } else { "s" },
        gated.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benchmarks_behind_an_option_are_found_with_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("CMakeLists.txt"),
            "project(fastparse CXX)\n\
             option(FASTPARSE_BENCH \"Build the benchmarks\" OFF) # not by default\n\
             option(FASTPARSE_DOCS \"docs\" ON)\n\
             add_library(fastparse src/parse.cpp)\n\
             if(FASTPARSE_BENCH AND NOT WIN32)\n  add_subdirectory(bench)\nendif()\n\
             if(NOT FASTPARSE_BENCH)\n  add_executable(perf_smoke s.cpp)\nelse()\nendif()\n\
             add_executable(${PROJECT_NAME}_bench_always b.cpp)\n",
        )
        .unwrap();
        std::fs::create_dir(d.path().join("bench")).unwrap();
        std::fs::write(
            d.path().join("bench/CMakeLists.txt"),
            "add_executable(bench_parse bench_parse.cpp)\nadd_executable(helper h.cpp)\n",
        )
        .unwrap();
        let found = benches(d.path());
        let names: Vec<(&str, Option<&str>)> = found
            .iter()
            .map(|b| (b.name.as_str(), b.option.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("bench_parse", Some("FASTPARSE_BENCH")),
                ("perf_smoke", None),
                ("fastparse_bench_always", None)
            ]
        );
        assert_eq!(found[0].path, "build/bench/bench_parse");
        assert_eq!(found[0].file, "bench/CMakeLists.txt");
        assert_eq!(found[0].sources, ["bench/bench_parse.cpp"]);
        assert_eq!(options(&found), ["FASTPARSE_BENCH"]);
        assert!(command(&["X"]).contains("-DCMAKE_BUILD_TYPE=Release -DX=ON &&"));
    }
}
