//! What `config check` says beyond parsing: commands whose program cannot be found (a first
//! word not on PATH, a helper script missing beside the config, a test program that is not
//! among the build's artifacts), instructions tests nothing here can count, and what counts
//! the others.

use std::path::{Path, PathBuf};

use crate::config::Config;

/// What counts the instructions of each `metric = "instructions"` test on this machine, and
/// why (the warning when nothing can is among [`warnings`]).
pub fn counters(cfg: &Config) -> Vec<String> {
    cfg.tests
        .values()
        .filter(|t| matches!(t.metric, crate::config::Metric::Instructions))
        .filter_map(|t| {
            let s = crate::process::counter::select(t.counter).ok()?;
            Some(format!(
                "test `{}`: instructions counted by {}: {}",
                t.name,
                s.counter.describe(),
                s.why
            ))
        })
        .collect()
}

/// The directories of `PATH`.
pub fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

/// Words a shell runs by itself, or that start a compound command: nothing to find on PATH.
const SHELL_WORDS: &[&str] = &[
    "if", "then", "for", "while", "until", "case", "{", "(", "!", "[", "[[", "test", "cd", "echo",
    "printf", "true", "false", ":", ".", "source", "export", "set", "unset", "eval", "read",
    "exit", "return", "wait", "trap", "ulimit", "umask", "type", "alias",
];

/// Prefixes that run the next word (`env X=1 app`, `exec app`, `nice app`).
const WRAPPERS: &[&str] = &["exec", "env", "command", "nice", "nohup", "time"];

/// The words of a shell command up to its first operator, unquoted (a small subset of sh:
/// quotes and backslashes; `$` is kept as written).
fn words(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut started = false;
    let mut chars = cmd.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                started = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                started = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                started = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            ';' | '&' | '|' | '<' | '>' | '\n' => {
                if started {
                    out.push(cur);
                }
                return out;
            }
            '(' | ')' if !started => {
                out.push(c.to_string());
                return out;
            }
            c => {
                started = true;
                cur.push(c);
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// The program a command runs: its first word after variable assignments and wrappers.
/// `None` when that is a shell word or nothing.
fn program(cmd: &str) -> Option<String> {
    let assignment = regex::Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*=").expect("valid regex");
    for w in words(cmd) {
        if assignment.is_match(&w) || WRAPPERS.contains(&w.as_str()) || w.starts_with('-') {
            continue;
        }
        if SHELL_WORDS.contains(&w.as_str()) {
            return None;
        }
        return Some(w);
    }
    None
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where a command runs, for resolving its program.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In the worktree of a commit: relative paths are the commit's files, not checked.
    Worktree,
    /// In the artifact directory: relative paths must be among the build's artifacts.
    Artifacts,
}

/// Whether `rel` (relative to the artifact directory) is among what a build caches.
fn in_artifacts(cfg: &Config, rel: &str) -> bool {
    let rel = rel.trim_start_matches("./");
    if let Some(c) = &cfg.build.cargo {
        if c.bins.is_empty() && c.benches.is_empty() {
            // Every bin of the package: their names are only known at build time.
            return true;
        }
        if c.names().any(|n| n == rel) {
            return true;
        }
    }
    cfg.build.artifacts.iter().any(|a| {
        let a = a.trim_start_matches("./").trim_end_matches('/');
        rel == a || rel.starts_with(&format!("{a}/"))
    })
}

/// What is wrong with the program of `cmd`, if anything can be seen without building.
fn problem(cfg: &Config, cmd: &str, place: Place, path: &[PathBuf]) -> Option<String> {
    let prog = program(cmd)?;
    for var in ["$PERFBISECT_CONFIG_DIR/", "${PERFBISECT_CONFIG_DIR}/"] {
        if let Some(rest) = prog.strip_prefix(var) {
            let p = cfg.dir.join(rest);
            return if !p.exists() {
                Some(format!("`{}` does not exist", p.display()))
            } else if !executable(&p) {
                Some(format!("`{}` is not executable (chmod +x)", p.display()))
            } else {
                None
            };
        }
    }
    for var in ["$PERFBISECT_ARTIFACTS/", "${PERFBISECT_ARTIFACTS}/"] {
        if let Some(rest) = prog.strip_prefix(var) {
            return (!in_artifacts(cfg, rest)).then(|| not_an_artifact(rest));
        }
    }
    if prog.contains('$') || prog.contains('`') {
        return None;
    }
    if prog.starts_with('/') {
        return (!executable(Path::new(&prog)))
            .then(|| format!("`{prog}` is not an executable file"));
    }
    if prog.contains('/') {
        return match place {
            Place::Worktree => None,
            Place::Artifacts => (!in_artifacts(cfg, &prog)).then(|| not_an_artifact(&prog)),
        };
    }
    if path.iter().any(|d| executable(&d.join(&prog))) {
        return None;
    }
    // A bare name that is an artifact runs only as `./name` (sh looks names up on PATH).
    let hint = if place == Place::Artifacts && in_artifacts(cfg, &prog) {
        format!("; the artifact runs as `./{prog}`")
    } else {
        String::new()
    };
    Some(format!(
        "`{prog}` is not on PATH{hint} (it must be where perfbisect runs)"
    ))
}

fn not_an_artifact(rel: &str) -> String {
    format!(
        "`{rel}` is not among the build's artifacts (`build.artifacts`, or a `build.cargo` target), and tests run in the artifact directory"
    )
}

/// The warnings about what `cfg`'s build makes, read from the project in `repo` (the checkout)
/// as `FILE:LINE: key `build.artifacts`: warning: ...`: an artifact a CMake build makes only
/// with an option the build command does not set (or behind a compiler check), or no
/// program of the build at all. Nothing is configured or built.
pub fn build_warnings(cfg: &Config, repo: Option<&Path>) -> Vec<String> {
    let (Some(repo), Some(command)) = (repo, &cfg.build.command) else {
        return Vec::new();
    };
    let file = crate::base::paths::display_path(&cfg.path);
    let line = cfg
        .lines
        .get("build.artifacts")
        .map(|l| format!(":{l}"))
        .unwrap_or_default();
    super::cmake::lint(repo, command, &cfg.build.artifacts)
        .into_iter()
        .map(|(_, msg)| {
            format!(
                "{file}{line}: key `build.artifacts`: {} {msg}",
                crate::base::style::warning_prefix()
            )
        })
        .collect()
}

/// Every warning of `cfg`, as `FILE:LINE: key `K`: warning: ...`.
pub fn warnings(cfg: &Config, path: &[PathBuf]) -> Vec<String> {
    let file = crate::base::paths::display_path(&cfg.path);
    let mut out = Vec::new();
    let mut warn = |key: &str, msg: String| {
        let line = cfg
            .lines
            .get(key)
            .map(|l| format!(":{l}"))
            .unwrap_or_default();
        out.push(format!(
            "{file}{line}: key `{key}`: {} {msg}",
            crate::base::style::warning_prefix()
        ));
    };
    if let Some(c) = &cfg.build.command {
        if let Some(p) = problem(cfg, c, Place::Worktree, path) {
            warn("build.command", p);
        }
    }
    if cfg.build.cargo.is_some() && !path.iter().any(|d| executable(&d.join("cargo"))) {
        warn(
            "build.cargo",
            "`cargo` is not on PATH (it must be where perfbisect builds)".into(),
        );
    }
    for (name, t) in &cfg.tests {
        if matches!(t.metric, crate::config::Metric::Instructions) {
            if let Err(e) = crate::process::counter::select(t.counter) {
                warn(
                    &format!("tests.{name}.metric"),
                    format!("nothing here can count instructions: {e}"),
                );
            }
        }
        for (k, cmd) in [
            ("command", Some(&t.command)),
            ("setup", t.setup.as_ref()),
            ("teardown", t.teardown.as_ref()),
        ] {
            if let Some(cmd) = cmd {
                if let Some(p) = problem(cfg, cmd, Place::Artifacts, path) {
                    warn(&format!("tests.{name}.{k}"), p);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_a_command() {
        assert_eq!(program("./app --n 3").as_deref(), Some("./app"));
        assert_eq!(
            program("X=1 Y='a b' exec env Z=2 hyperfine -N x").as_deref(),
            Some("hyperfine")
        );
        assert_eq!(program("'my tool' && other").as_deref(), Some("my tool"));
        assert_eq!(program("cd sub && make").as_deref(), None);
        assert_eq!(program("wc -c < app").as_deref(), Some("wc"));
        assert_eq!(program("  ").as_deref(), None);
    }

    #[test]
    fn warnings_name_key_and_line_and_spare_what_is_found() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(d.path().join("helper.sh"), "").unwrap();
        let text = r#"[build]
command = "nosuchbuilder --all"
artifacts = ["out/app", "data"]

[tests.a]
command = "tool --x"

[tests.b]
command = "./out/app"
setup = "$PERFBISECT_CONFIG_DIR/helper.sh"

[tests.c]
command = "./elsewhere"

[tests.d]
command = "data/run.sh && echo"
teardown = "missing-cleanup"
"#;
        let cfg = crate::config::parse(text, &d.path().join("perfbisect.toml")).unwrap();
        let w = warnings(&cfg, &[bin]);
        let all = w.join("\n");
        assert_eq!(w.len(), 4, "{all}");
        assert!(
            w[0].contains(":2: key `build.command`") && w[0].contains("nosuchbuilder"),
            "{all}"
        );
        assert!(
            w[1].contains(":10: key `tests.b.setup`") && w[1].contains("not executable"),
            "{all}"
        );
        assert!(
            w[2].contains(":13: key `tests.c.command`")
                && w[2].contains("`./elsewhere` is not among"),
            "{all}"
        );
        assert!(
            w[3].contains(":17: key `tests.d.teardown`") && w[3].contains("missing-cleanup"),
            "{all}"
        );
    }
}
