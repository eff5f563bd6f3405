//! What a make-based build really produces, for `config init`: the repository's HEAD (or the
//! revision of `--at`) in a temporary copy, `./configure` run there when the project has one, then `make -n` (the
//! default goal, dry run) for the programs its link lines make, and `make -qp` (the rule
//! database, nothing run) for the project's own benchmark targets. The user's checkout is
//! never touched, and nothing is built.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::source::Source;

/// What the dry run showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DryRun {
    /// Programs the default goal links, relative to the top directory, in the order made;
    /// build tools the build itself runs (code generators) left out.
    pub programs: Vec<String>,
    /// Build tools: programs the default goal links and then runs.
    pub tools: Vec<String>,
    /// Targets of the Makefile named like benchmarks (`speedtest1`, `bench`, `perf-x`).
    pub bench_targets: Vec<String>,
    /// What was run, for the note on stderr (`./configure (4.1 s), make -n`).
    pub ran: String,
}

/// What runs before `make -n` in the copy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Configure {
    /// `autoreconf -fi` first (configure.ac, no tracked `configure`).
    pub bootstrap: bool,
    /// `./configure` with these options (`""`, ` --disable-maintainer-mode`); `None`: no
    /// configure script.
    pub options: Option<&'static str>,
}

/// How long `autoreconf` or `./configure` may take in the copy.
const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(180);
/// How long `make -n` and `make -qp` may take.
const MAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// Dry-run the build of `source` (`repo`'s HEAD, or a commit's tree): `./configure` first
/// when `configure` is set. An error says what failed, for the note; the caller then falls
/// back on reading the build files.
pub fn dry_run(repo: &Path, source: &Source<'_>, configure: &Configure) -> Result<DryRun, String> {
    which("make").ok_or("make is not on PATH")?;
    let tmp = tempfile::Builder::new()
        .prefix("perfbisect-init-")
        .tempdir()
        .map_err(|e| format!("no temporary directory: {e}"))?;
    let top = source.export(repo, tmp.path())?;
    let mut ran = Vec::new();
    let mut step = |what: &str, program: &str, args: &[&str]| -> Result<(), String> {
        let t0 = Instant::now();
        let out = run(&top, program, args, CONFIGURE_TIMEOUT)?;
        if !out.0 {
            let last = out.1.lines().rev().find(|l| !l.trim().is_empty());
            return Err(format!(
                "`{what}` failed in a temporary copy of {}{}",
                source.what(),
                last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
            ));
        }
        ran.push(format!("{what} ({:.1} s)", t0.elapsed().as_secs_f64()));
        Ok(())
    };
    if configure.bootstrap {
        step("autoreconf -fi", "autoreconf", &["-fi"])?;
    }
    if let Some(options) = configure.options {
        let what = format!("./configure{options}");
        let mut args = vec!["./configure"];
        args.extend(options.split_whitespace());
        step(&what, "sh", &args)?;
    }
    let (_, dry) = run(&top, "make", &["-n", "-w"], MAKE_TIMEOUT)?;
    ran.push("make -n".to_string());
    // `-q` runs nothing and `-p` prints the rules; the exit code only says "not up to date".
    let (_, db) = run(&top, "make", &["-qp"], MAKE_TIMEOUT)?;
    let (programs, tools) = linked_programs(&dry, &top);
    Ok(DryRun {
        programs,
        tools,
        bench_targets: bench_targets(&db),
        ran: ran.join(", "),
    })
}

/// Run `program args` in `dir` with stdin empty, stdout and stderr together, killed (with
/// its process group) after `timeout`: (exited 0, output).
fn run(
    dir: &Path,
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<(bool, String), String> {
    use std::os::unix::process::CommandExt as _;
    let log = tempfile::tempfile().map_err(|e| e.to_string())?;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log.try_clone().map_err(|e| e.to_string())?)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break s,
            None if Instant::now() >= deadline => {
                // SAFETY: signalling the process group the child leads.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                return Err(format!(
                    "`{program} {}` took longer than {} s in a temporary copy",
                    args.join(" "),
                    timeout.as_secs()
                ));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    use std::io::{Read as _, Seek as _};
    let mut log = log;
    let mut text = String::new();
    log.rewind().map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    log.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    text.push_str(&String::from_utf8_lossy(&bytes));
    Ok((status.success(), text))
}

/// `name` on PATH.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

/// File names that are not programs: objects, libraries, sources, headers.
fn not_a_program(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    [
        ".o", ".a", ".so", ".la", ".lo", ".dylib", ".dll", ".lib", ".c", ".h", ".cc", ".cpp", ".d",
        ".def", ".pc", ".in", ".txt",
    ]
    .iter()
    .any(|e| l.ends_with(e))
        || l.contains(".so.")
        || l.is_empty()
        || l == "/dev/null"
}

/// The programs `make -n -w` output `out` links (`... -o NAME ...` without `-c`), as paths
/// relative to `top`, and apart from them the build tools it then runs itself.
pub fn linked_programs(out: &str, top: &Path) -> (Vec<String>, Vec<String>) {
    // Continuation lines joined: a recipe line may end in `\`.
    let joined = out.replace("\\\n", " ");
    let top_s = top.to_string_lossy().to_string();
    let mut dirs: Vec<String> = Vec::new();
    let mut linked: Vec<(String, usize)> = Vec::new();
    let mut run_later: Vec<(String, usize)> = Vec::new();
    let relative = |path: &str, dirs: &[String]| -> String {
        let p = path.trim_matches(|c| c == '\'' || c == '"');
        let rel = match p.strip_prefix(&top_s) {
            Some(r) => r.trim_start_matches('/').to_string(),
            None if p.starts_with('/') => return String::new(),
            None => {
                let here = dirs.last().cloned().unwrap_or_default();
                let p = p.trim_start_matches("./");
                if here.is_empty() {
                    p.to_string()
                } else {
                    format!("{here}/{p}")
                }
            }
        };
        rel
    };
    for (n, line) in joined.lines().enumerate() {
        if let Some(d) = line
            .split_once(": Entering directory '")
            .map(|(_, d)| d.trim_end_matches('\''))
        {
            let d = d.strip_prefix(&top_s).unwrap_or(d);
            dirs.push(d.trim_start_matches('/').to_string());
            continue;
        }
        if line.contains(": Leaving directory '") {
            dirs.pop();
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        // The commands of the line: its first word, and each after `&&`, `||`, `;`, `|`.
        let mut starts = vec![0];
        for (i, w) in words.iter().enumerate() {
            if matches!(*w, "&&" | "||" | ";" | "|") {
                starts.push(i + 1);
            }
        }
        for &s in &starts {
            if let Some(w) = words.get(s) {
                let r = relative(w.trim_end_matches(';'), &dirs);
                if !r.is_empty() {
                    run_later.push((r, n));
                }
            }
        }
        if words.contains(&"-c") || words.contains(&"-E") || words.contains(&"-M") {
            continue;
        }
        let inputs = words.iter().any(|w| {
            let l = w.to_ascii_lowercase();
            l.ends_with(".c")
                || l.ends_with(".o")
                || l.ends_with(".a")
                || l.ends_with(".cc")
                || l.ends_with(".cpp")
                || l.ends_with(".lo")
                || l.starts_with("-l")
        });
        if !inputs {
            continue;
        }
        for (i, w) in words.iter().enumerate() {
            let target = if *w == "-o" {
                words.get(i + 1).copied()
            } else {
                w.strip_prefix("-o").filter(|t| !t.is_empty())
            };
            if let Some(t) = target {
                let r = relative(t, &dirs);
                if !r.is_empty() && !not_a_program(&r) && !linked.iter().any(|(p, _)| *p == r) {
                    linked.push((r, n));
                }
            }
        }
    }
    let (mut programs, mut tools) = (Vec::new(), Vec::new());
    for (p, at) in linked {
        if run_later.iter().any(|(r, n)| *r == p && *n > at) {
            tools.push(p);
        } else {
            programs.push(p);
        }
    }
    (programs, tools)
}

/// Targets in `make -qp`'s rule database named like benchmarks.
pub fn bench_targets(db: &str) -> Vec<String> {
    let re =
        regex::Regex::new(r"(?i)^(speedtest|bench|perf)[A-Za-z0-9_+-]*$").expect("valid regex");
    let mut out: Vec<String> = Vec::new();
    let mut not_a_target = false;
    for line in db.lines() {
        if line.starts_with("# Not a target") {
            not_a_target = true;
            continue;
        }
        if line.starts_with('#') || line.starts_with('\t') || line.is_empty() {
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if rest.starts_with('=') || name.contains(char::is_whitespace) {
            continue;
        }
        let skip = std::mem::take(&mut not_a_target);
        let name = name.trim_start_matches("./");
        if !skip && re.is_match(name) && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Tracked files that look like the project's own benchmarks: scripts and C sources named
/// `speed*`, `bench*`, `perf*` (`tool/speed-check.sh`, `test/speedtest1.c`), at most eight.
pub fn bench_files(tracked: &[String]) -> Vec<String> {
    let re =
        regex::Regex::new(r"(?i)^(speed|bench|perf)[A-Za-z0-9_.+-]*\.(sh|py|pl|tcl|c|cc|cpp)$")
            .expect("valid regex");
    tracked
        .iter()
        .filter(|f| {
            let base = f.rsplit('/').next().unwrap_or(f);
            re.is_match(base)
        })
        .take(8)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_lines_name_the_programs_and_the_tools_the_build_runs() {
        let top = Path::new("/tmp/x/src");
        let out = "make: Entering directory '/tmp/x/src'\n\
            cc -O2 -o /tmp/x/src/mkheader tool/mkheader.c\n\
            /tmp/x/src/mkheader > gen.h\n\
            cc -O2 -c db.c -o db.o\n\
            ar rcs libdb.a db.o\n\
            cc -O2 -o dbshell shell.c \\\n  libdb.a -lm\n\
            ln -sf dbshell dbsh\n\
            make[1]: Entering directory '/tmp/x/src/tools'\n\
            gcc -o dump dump.o -lm\n\
            make[1]: Leaving directory '/tmp/x/src/tools'\n";
        let (programs, tools) = linked_programs(out, top);
        assert_eq!(programs, ["dbshell", "tools/dump"]);
        assert_eq!(tools, ["mkheader"]);
    }

    #[test]
    fn benchmark_targets_and_files_are_found_by_name() {
        let db = "# Files\nspeedtest1: test/speedtest1.c sqlite3.c\n\tcc -o $@ $^\n\n\
            # Not a target:\nbench.o:\n\nall: sqlite3\nperf-run: speedtest1\nBENCH = x\n";
        assert_eq!(bench_targets(db), ["speedtest1", "perf-run"]);
        let files: Vec<String> = [
            "tool/speed-check.sh",
            "test/speedtest1.c",
            "src/main.c",
            "bench.md",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            bench_files(&files),
            ["tool/speed-check.sh", "test/speedtest1.c"]
        );
    }
}
