//! A cargo project's bench targets as `config init` writes them: the benchmarks a criterion or
//! libtest suite holds, read from its source (nothing is built), and a test that runs the
//! first of them alone, with enough repeats for its rank test to decide.

use super::text::{q, wrap_comment};

/// A cargo bench target as `config init` found it.
pub struct Suite<'a> {
    /// The bench target's name.
    pub bench: &'a str,
    /// The workspace member that holds it, when it is not a default member.
    pub package: Option<&'a str>,
    /// criterion's (else libtest's).
    pub criterion: bool,
    /// Its benchmarks, read from its source ([`benchmark_names`]).
    pub names: &'a [String],
    /// It needs an unstable feature ([`needs_nightly`]).
    pub unstable: bool,
}

/// Whether a bench source uses `#![feature(test)]` (libtest's `#[bench]`): a stable toolchain
/// builds it only with `RUSTC_BOOTSTRAP=1`.
pub fn needs_nightly(src: &str) -> bool {
    let re = regex::Regex::new(r"#!\[\s*feature\s*\(([^)]*)\)").expect("valid regex");
    let src = strip_comments(src);
    let found = re
        .captures_iter(&src)
        .any(|c| c[1].split(',').any(|f| f.trim() == "test"));
    found
}

/// The `[build]` line that lets a stable toolchain build an unstable bench, with why.
pub const BOOTSTRAP_ENV: &str =
    "# The bench uses libtest's `#[bench]` (`#![feature(test)]`, unstable): RUSTC_BOOTSTRAP\n\
     # lets a stable toolchain build it (with a nightly toolchain this line can go).\n\
     env = { RUSTC_BOOTSTRAP = \"1\" }\n";

/// The runs a side `config init` writes for a noisy test: with fewer, a rank test at the
/// default α cannot decide (3 against 3 never can), and each probe of a search asks for more.
pub fn noisy_repeats() -> usize {
    crate::stats::compare::runs_to_decide(crate::config::DEFAULT_ALPHA)
}

/// The comment beside a written `repeats`.
pub fn repeats_comment() -> String {
    format!(
        "runs per commit: a rank test decides at α = {1} with {0} a side, one out of order",
        noisy_repeats(),
        crate::config::DEFAULT_ALPHA
    )
}

/// The benchmark ids a bench target's source defines, in source order: criterion's
/// `bench_function("id", ..)`, inside `benchmark_group("group")` as `group/id` (ids made at
/// run time, `BenchmarkId::new(..)`, cannot be read and are left out); libtest's `#[bench] fn
/// name` with its module path (`tests::name`), as libtest prints it.
pub fn benchmark_names(src: &str, criterion: bool) -> Vec<String> {
    let src = strip_comments(src);
    let mut names = Vec::new();
    if criterion {
        let re = regex::Regex::new(
            r#"(benchmark_group|bench_function)\(\s*"((?:[^"\\]|\\.)*)"|\.finish\(\s*\)"#,
        )
        .expect("valid regex");
        let mut group: Option<String> = None;
        for c in re.captures_iter(&src) {
            match c.get(1).map(|m| m.as_str()) {
                Some("benchmark_group") => group = Some(unescape(&c[2])),
                Some(_) => {
                    let id = match &group {
                        Some(g) => format!("{g}/{}", unescape(&c[2])),
                        None => unescape(&c[2]),
                    };
                    if !names.contains(&id) {
                        names.push(id);
                    }
                }
                None => group = None,
            }
        }
        return names;
    }
    let modules = modules(&src);
    let re = regex::Regex::new(r"#\[bench\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?fn\s+(\w+)")
        .expect("valid regex");
    for c in re.captures_iter(&src) {
        let at = c.get(0).map_or(0, |m| m.start());
        let mut path: Vec<&str> = modules
            .iter()
            .filter(|(_, open, close)| *open < at && at < *close)
            .map(|(name, _, _)| name.as_str())
            .collect();
        path.push(c.get(1).map_or("", |m| m.as_str()));
        names.push(path.join("::"));
    }
    names
}

/// A Rust string literal's common escapes undone (`\"`, `\\`).
fn unescape(s: &str) -> String {
    s.replace("\\\"", "\"").replace("\\\\", "\\")
}

/// Inline modules of `src` with the byte range of their braces (outermost first).
fn modules(src: &str) -> Vec<(String, usize, usize)> {
    let mut close_of = std::collections::HashMap::new();
    let mut open = Vec::new();
    for (i, b) in src.bytes().enumerate() {
        match b {
            b'{' => open.push(i),
            b'}' => {
                if let Some(o) = open.pop() {
                    close_of.insert(o, i);
                }
            }
            _ => {}
        }
    }
    let re = regex::Regex::new(r"\bmod\s+(\w+)\s*\{").expect("valid regex");
    re.captures_iter(src)
        .filter_map(|c| {
            let whole = c.get(0)?;
            let brace = whole.end() - 1;
            let close = *close_of.get(&brace)?;
            Some((c[1].to_string(), brace, close))
        })
        .collect()
}

/// `src` without `//` and `/* */` comments (a benchmark commented out is not one); string
/// literals are kept as they are.
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_str = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The command that runs benchmark `name` of the bench target `bench` alone: criterion takes a
/// regular expression (anchored here), libtest a name with `--exact`.
pub fn filtered_command(bench: &str, name: &str, criterion: bool) -> String {
    let arg = if criterion {
        format!("^{}$", regex::escape(name))
    } else {
        name.to_string()
    };
    let quoted = format!("'{}'", arg.replace('\'', "'\\''"));
    if criterion {
        format!("./{bench} --bench {quoted}")
    } else {
        format!("./{bench} --bench --exact {quoted}")
    }
}

/// The config of a cargo project that builds no program but has benches (a library whose
/// criterion benches live in a workspace member): the first bench, with its harness's numbers
/// for its first benchmark, run alone; its other benchmarks listed.
pub fn bench_config(f: &Suite<'_>) -> String {
    let b = f.bench;
    let mut o = String::new();
    o += &format!(
        "# No bin target: the bench target `{b}`{} is built (`cargo bench --no-run`) and run.\n",
        f.package
            .map(|p| format!(" of the workspace member `{p}`"))
            .unwrap_or_default()
    );
    o += "[build]\n\
          # Built with cargo in perfbisect's own worktree of each commit (never your checkout);\n\
          # the bench executable is cached under its target's name, so a test runs `./NAME`.\n";
    o += &format!(
        "cargo = {{ benches = [{}]{} }}\n",
        q(b),
        f.package
            .map(|p| format!(", package = {}", q(p)))
            .unwrap_or_default()
    );
    if f.unstable {
        o += BOOTSTRAP_ENV;
    }
    o += "timeout = \"30m\"\n\n";
    let (what, suffix, format) = if f.criterion {
        ("criterion's median", "median", "criterion")
    } else {
        ("libtest's ns/iter", "ns", "libtest")
    };
    match f.names.first() {
        Some(first) => {
            o += &wrap_comment(&format!(
                "{what} of the benchmark `{first}` of `{b}`, in ns, run alone (the filter after \
                 `--bench`){}.",
                match f.names.len() {
                    1 => String::new(),
                    n => format!(
                        ": the suite holds {n} benchmarks, the others are listed below, each a \
                         test of its own the same way"
                    ),
                }
            ));
            o += &format!(
                "[tests.{b}-{suffix}]\n\
                 command = {}\n\
                 metric = {{ format = \"{format}\", name = {} }}\n",
                q(&filtered_command(b, first, f.criterion)),
                q(first)
            );
        }
        None => {
            o += &format!(
                "# {what} of one benchmark, in ns. Name it (`name = \"ID\"`, as `./{b} --bench --list`\n\
                 # prints it) and put the same filter after `--bench`, or every run goes through\n\
                 # the whole suite: without a name the bench must run exactly one.\n\
                 [tests.{b}-{suffix}]\n\
                 command = {}\n\
                 metric = {{ format = \"{format}\" }}\n",
                q(&format!("./{b} --bench"))
            );
        }
    }
    o += &format!(
        "direction = \"lower\"\n\
         repeats = {}                # {}\n\
         threshold = \"3%\"\n",
        noisy_repeats(),
        repeats_comment()
    );
    if f.names.len() > 1 {
        o += &format!(
            "# The other benchmarks of `{b}` (name, then the command that runs it alone):\n"
        );
        for n in &f.names[1..] {
            o += &format!(
                "#   {}  {}\n",
                q(n),
                q(&filtered_command(b, n, f.criterion))
            );
        }
    }
    o
}

/// What `config init` says on stderr about the bench test it wrote.
pub fn note(f: &Suite<'_>) -> String {
    let b = f.bench;
    match f.names {
        [] => format!("the test runs bench `{b}`; name its benchmark in the test (the source names none I can read)"),
        [one] => format!("the test runs benchmark `{one}` of bench `{b}`"),
        [first, rest @ ..] => format!(
            "the test runs benchmark `{first}` of bench `{b}` alone; its {} other{} {} listed commented",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
            if rest.len() == 1 { "is" } else { "are" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_ids_are_read_with_their_group() {
        let src = r#"
use criterion::{criterion_group, criterion_main, Criterion};
fn fmt(c: &mut Criterion) {
    c.bench_function("format_u64", |b| b.iter(|| 1));
    // c.bench_function("commented_out", |b| b.iter(|| 1));
    let mut g = c.benchmark_group("parse");
    g.bench_function("small", |b| b.iter(|| 1));
    g.bench_function( "large \"x\"", |b| b.iter(|| 1));
    g.finish();
    c.bench_function("after", |b| b.iter(|| 1));
}
"#;
        assert_eq!(
            benchmark_names(src, true),
            ["format_u64", "parse/small", "parse/large \"x\"", "after"]
        );
    }

    #[test]
    fn libtest_names_carry_their_module_path() {
        let src = "#![feature(test)]\nextern crate test;\n#[bench]\nfn top(b: &mut test::Bencher) { b.iter(|| 1) }\n\
                   mod inner {\n    #[bench]\n    #[allow(unused)]\n    pub fn deep(b: &mut test::Bencher) { }\n}\n/* #[bench] fn gone() {} */\n";
        assert_eq!(benchmark_names(src, false), ["top", "inner::deep"]);
    }

    #[test]
    fn unstable_benches_are_told_by_their_feature_attribute() {
        assert!(needs_nightly("#![feature(test)]\nextern crate test;\n"));
        assert!(needs_nightly("#![feature(portable_simd, test)]\n"));
        assert!(!needs_nightly(
            "// #![feature(test)]\nuse criterion::Criterion;\n"
        ));
        assert!(!needs_nightly("#![feature(testing)]\n"));
    }

    #[test]
    fn the_filter_runs_one_benchmark_alone() {
        assert_eq!(
            filtered_command("bench", "parse/x.y", true),
            "./bench --bench '^parse/x\\.y$'"
        );
        assert_eq!(
            filtered_command("speed", "tests::it's", false),
            "./speed --bench --exact 'tests::it'\\''s'"
        );
    }
}
