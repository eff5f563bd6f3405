//! A CMake project's programs, for `config init` and `config check`: every `add_executable`
//! target of CMakeLists.txt and the directories and files it reads, with whether a default
//! configure builds it ([`eval`]): a target inside `if(FUZZER)`, where `option(FUZZER "..."
//! OFF)`, is built only with `-DFUZZER=ON`; one inside `if(CMAKE_C_COMPILER_ID STREQUAL
//! "Clang")` only where the compiler is Clang. `config init` proposes what a default configure
//! builds (benchmarks first, then the project's own program, then tests, then tools);
//! `config check` warns about an artifact the build command does not build. Nothing is
//! configured or built.

mod eval;
mod parse;

use std::path::Path;

pub use eval::{Gate, Truth};

use super::text::{q, wrap_comment};

/// What a program is for, in the order `config init` prefers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Named like a benchmark (`bench_parse`, `speedtest1`, `perf-io`).
    Bench,
    /// The project's own program: named after the project, or in the top directory or a
    /// source directory (`src/`, `app/`, `cli/`).
    Main,
    /// Named like a test, or in a test directory.
    Test,
    /// Anything else (examples, helpers in `tools/`).
    Tool,
}

/// A program a CMake build declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The target's name.
    pub name: String,
    /// Where the build puts it, relative to the top directory (`build/bench/bench_parse`).
    pub path: String,
    /// The file that declares it (`bench/CMakeLists.txt`) and the line.
    pub file: String,
    pub line: usize,
    /// Its sources as written, relative to the top directory.
    pub sources: Vec<String>,
    pub kind: Kind,
    /// Whether a default configure builds it, and if not, what it takes.
    pub truth: Truth,
}

/// A benchmark program ([`Kind::Bench`]).
pub type Bench = Target;

impl Target {
    /// The option it is declared behind, off by default, when turning that option on (and
    /// nothing else) builds it: `-DNAME=ON`.
    pub fn option(&self) -> Option<&str> {
        let Truth::No(gates) = &self.truth else {
            return None;
        };
        let mut names = gates.iter().map(|g| match g {
            Gate::Set(name, true) => Some(name.as_str()),
            _ => None,
        });
        let first = names.next()??;
        names.all(|n| n.is_some()).then_some(first)
    }

    /// Where it is declared: `bench/CMakeLists.txt:12`.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// What it takes to be built, as a sentence's end: "only with `FUZZER=ON` and when
    /// `CMAKE_C_COMPILER_ID STREQUAL "Clang"`"; empty when a default configure builds it.
    pub fn needs(&self) -> String {
        let gates = self.truth.gates();
        if gates.is_empty() {
            return match self.truth {
                Truth::Yes => String::new(),
                _ => "only built on another branch of its `if`".into(),
            };
        }
        let parts: Vec<String> = gates.iter().map(Gate::describe).collect();
        format!("only built {}", parts.join(" and "))
    }
}

/// The programs of the CMake build in a directory.
#[derive(Debug, Clone, Default)]
pub struct Project {
    /// Programs with a name, in the order CMake declares them.
    pub targets: Vec<Target>,
    /// Programs whose name is made at configure time (inside a `foreach`): whether each is
    /// built by default.
    pub unnamed: Vec<Truth>,
}

/// A name that looks like a benchmark's (`bench_parse`, `parse_benchmark`, `speedtest1`,
/// `perf-io`).
fn bench_like(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("bench") || l.starts_with("speedtest") || l.starts_with("perf")
}

/// What a program named `name` is for, declared in directory `dir` (for the top directory,
/// where its first source lies says more: `fuzz/fuzzer.c`), in a project named `project`.
fn kind(name: &str, dir: &str, first_source: Option<&str>, project: Option<&str>) -> Kind {
    let norm = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let place = match (dir, first_source) {
        ("", Some(src)) if src.contains('/') => src,
        _ => dir,
    };
    let top_dir = place.split('/').next().unwrap_or("");
    let lower = name.to_ascii_lowercase();
    if bench_like(name) {
        Kind::Bench
    } else if lower.contains("test")
        || matches!(
            top_dir,
            "test" | "tests" | "testing" | "unittest" | "unittests"
        )
    {
        Kind::Test
    } else if ["fuzz", "example", "sample", "demo_"]
        .iter()
        .any(|w| lower.contains(w))
    {
        Kind::Tool
    } else if project.is_some_and(|p| norm(p) == norm(name))
        || matches!(
            top_dir,
            "" | "src" | "app" | "apps" | "cli" | "bin" | "program" | "programs"
        )
    {
        Kind::Main
    } else {
        Kind::Tool
    }
}

/// The programs the CMake build in `dir` declares, configured with `defines` (the build
/// command's `-DNAME=VALUE`).
pub fn read(dir: &Path, defines: &[(String, String)]) -> Project {
    let mut r = eval::Reader::new(dir, defines);
    r.directory("", &Truth::Yes);
    let name = r.project_name();
    let mut out = Project::default();
    for d in r.targets {
        let Some(n) = d.name else {
            out.unnamed.push(d.truth);
            continue;
        };
        if out.targets.iter().any(|t| t.name == n) {
            continue;
        }
        let path = match &d.out_dir {
            Some(o) => format!("{o}/{n}"),
            None if d.dir.is_empty() => format!("build/{n}"),
            None => format!("build/{}/{n}", d.dir),
        };
        out.targets.push(Target {
            kind: kind(
                &n,
                &d.dir,
                d.sources.first().map(String::as_str),
                name.as_deref(),
            ),
            name: n,
            path,
            file: d.file,
            line: d.line,
            sources: d.sources,
            truth: d.truth,
        });
    }
    out
}

/// The benchmark programs the CMake build in `dir` declares, built by default or not.
#[cfg(test)]
pub fn benches(dir: &Path) -> Vec<Bench> {
    read(dir, &[])
        .targets
        .into_iter()
        .filter(|t| t.kind == Kind::Bench)
        .collect()
}

/// The program `config init` proposes, and why; or why none could be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// A program a default configure builds (or a benchmark its option alone turns on,
    /// which the build command then sets): its path and why it.
    Program(String, String),
    /// No program can be told with confidence: what the build declares, and what each
    /// takes.
    Unsure(String),
}

/// The program to propose: the first a default configure builds, benchmarks first, then the
/// project's own program, then tests, then tools; without one, a benchmark that one option
/// (off by default) builds, with the option on; else none, with why.
pub fn choose(p: &Project) -> Choice {
    let passed = |chosen: &str| -> String {
        let gated: Vec<String> = p
            .targets
            .iter()
            .filter(|t| t.truth != Truth::Yes && t.name != chosen)
            .take(3)
            .map(|t| format!("{} ({})", t.name, t.needs()))
            .collect();
        if gated.is_empty() {
            String::new()
        } else {
            format!("; passed over {}", gated.join(", "))
        }
    };
    let mut built: Vec<&Target> = p.targets.iter().filter(|t| t.truth == Truth::Yes).collect();
    built.sort_by_key(|t| t.kind);
    if let Some(t) = built.first() {
        let what = match t.kind {
            Kind::Bench => "the first benchmark program",
            Kind::Main => "the project's own program",
            Kind::Test => "the first test program",
            Kind::Tool => "the first program",
        };
        return Choice::Program(
            t.path.clone(),
            format!(
                "{what} a default configure builds ({}){}",
                t.place(),
                passed(&t.name)
            ),
        );
    }
    if let Some(b) = p
        .targets
        .iter()
        .find(|t| t.kind == Kind::Bench && t.option().is_some())
    {
        return Choice::Program(
            b.path.clone(),
            format!(
                "a benchmark program ({}), built with {} on, which the build command sets{}",
                b.place(),
                b.option().unwrap_or_default(),
                passed(&b.name)
            ),
        );
    }
    // Those closest to being built first (the fewest conditions), benchmarks before others.
    let mut near: Vec<&Target> = p.targets.iter().collect();
    near.sort_by_key(|t| (t.truth.gates().len(), t.kind));
    let mut found: Vec<String> = near
        .iter()
        .take(4)
        .map(|t| format!("{} ({}) is {}", t.path, t.place(), t.needs()))
        .collect();
    if p.targets.len() > 4 {
        found.push(format!("{} more", p.targets.len() - 4));
    }
    let unnamed = p.unnamed.len();
    if unnamed > 0 {
        found.push(format!(
            "{unnamed} program{} named at configure time",
            if unnamed == 1 { "" } else { "s" }
        ));
    }
    Choice::Unsure(if found.is_empty() {
        "the CMake build declares no program (add_executable)".into()
    } else {
        format!(
            "a default configure of the CMake build makes no program perfbisect can name: {}",
            found.join("; ")
        )
    })
}

/// What `config check` says about `artifacts` of a CMake `command` run in the project at
/// `dir`: (artifact, warning) for each artifact the command would not build. Artifacts
/// outside the build directory, and builds whose programs cannot all be named, are left
/// alone.
pub fn lint(dir: &Path, command: &str, artifacts: &[String]) -> Vec<(String, String)> {
    if !command.contains("cmake") || !dir.join("CMakeLists.txt").is_file() {
        return Vec::new();
    }
    let defines = defines(command);
    let p = read(dir, &defines);
    let mut out = Vec::new();
    for a in artifacts {
        let a = a.trim_start_matches("./").trim_end_matches('/');
        let Some(rest) = a.strip_prefix("build/") else {
            continue;
        };
        let file = rest.rsplit('/').next().unwrap_or(rest);
        let by_path = p.targets.iter().find(|t| t.path == a);
        let by_name = || p.targets.iter().find(|t| t.name == file);
        match by_path.or_else(by_name) {
            Some(t) if t.truth != Truth::Yes => {
                let why = match (&t.truth, t.truth.gates().first()) {
                    (Truth::Unsure(_), _) => {
                        "only configuring on this machine tells whether \
                                              the build command makes it"
                    }
                    (_, Some(Gate::Set(..))) => {
                        "`build.command` does not set that, so the \
                                                 first build would end without it"
                    }
                    _ => {
                        "so the build command does not make it, and the first build would \
                          end without it"
                    }
                };
                out.push((
                    a.to_string(),
                    format!(
                        "`{a}` is {} (CMake target {}, {}): {why}",
                        t.needs(),
                        t.name,
                        t.place()
                    ),
                ));
            }
            Some(t) if t.path != a => out.push((
                a.to_string(),
                format!(
                    "`{a}` is not where the build puts CMake target {} ({}): it is built as `{}`",
                    t.name,
                    t.place(),
                    t.path
                ),
            )),
            Some(_) => {}
            // Every program of the build known, and none of that name: nothing builds it.
            None if p.unnamed.iter().all(|t| *t != Truth::Yes) => {
                let default: Vec<&str> = p
                    .targets
                    .iter()
                    .filter(|t| t.truth == Truth::Yes)
                    .map(|t| t.path.as_str())
                    .collect();
                out.push((
                    a.to_string(),
                    format!(
                        "`{a}` is no program the CMake build makes: {}",
                        if default.is_empty() {
                            "a default configure makes none (`perfbisect config init` lists \
                             what it declares and what each needs)"
                                .to_string()
                        } else {
                            format!("a default configure makes {}", default.join(", "))
                        }
                    ),
                ));
            }
            None => {}
        }
    }
    out
}

/// The `-DNAME=VALUE` (and `-DNAME:TYPE=VALUE`) definitions of a command.
fn defines(command: &str) -> Vec<(String, String)> {
    let re = regex::Regex::new(
        r#"-D\s*([A-Za-z_][A-Za-z0-9_]*)(?::[A-Za-z]+)?=("[^"]*"|'[^']*'|[^\s"']+)"#,
    )
    .expect("valid regex");
    re.captures_iter(command)
        .map(|c| (c[1].to_string(), c[2].trim_matches(['"', '\'']).to_string()))
        .collect()
}

/// The option the config's program needs on, when it is one of the gated benches.
pub fn program_option<'a>(benches: &'a [Bench], program: Option<&str>) -> Option<&'a str> {
    let p = program?;
    benches.iter().find(|b| b.path == p).and_then(Bench::option)
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
    for o in benches.iter().filter_map(Bench::option) {
        if !out.contains(&o) {
            out.push(o);
        }
    }
    out
}

/// A commented test of one bench, with how to build it.
pub fn commented_test(b: &Bench, stem: &str) -> String {
    let mut o = String::from("#\n");
    o += &wrap_comment(&match (b.option(), &b.truth) {
        (Some(opt), _) => format!(
            "CMake target {} ({}) is a benchmark program, built only with the option {opt} on \
             (off by default): to measure it, configure with -D{opt}=ON (the commented \
             `command` in [build]) and add {} to artifacts.",
            b.name,
            b.file,
            q(&b.path)
        ),
        (None, Truth::Yes) => format!(
            "CMake target {} ({}) is a benchmark program the build makes: to measure it, add \
             {} to artifacts.",
            b.name,
            b.file,
            q(&b.path)
        ),
        (None, _) => format!(
            "CMake target {} ({}) is a benchmark program, {}: to measure it, make the build \
             make it and add {} to artifacts.",
            b.name,
            b.file,
            b.needs(),
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
            b.option()
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
mod tests;
