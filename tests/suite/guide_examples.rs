//! Examples that cannot lie: every `console` block of README.md and the guide is run, in
//! order, page by page, in a fresh folder of its own, and each command's output (stdout and
//! stderr as a terminal shows them, without progress bars) is compared with the block, with
//! snapbox's elisions: `...` on a line of its own stands for any lines, `[..]` for part of a
//! line. A block of another kind whose info string says `file=PATH` (```` ```toml
//! file=perfbisect.toml ````) appends its text to that file first, as the page tells the
//! reader to. Outputs of real runs on other projects are quoted in `text` blocks, never as
//! `$ perfbisect` lines, and a test checks that no such line hides outside a `console` block.
//!
//! `GUIDE_EXAMPLES_PRINT=1` prints what each command printed, to paste into a page.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One thing a page does, in its order.
#[derive(Debug)]
enum Step {
    /// `$ command` and the output the page shows for it (line number of the command).
    Run {
        line: usize,
        command: String,
        expected: String,
    },
    /// Append `text` to `path` (relative to the folder the commands are in).
    Append { path: String, text: String },
}

/// The steps of `text`'s `console` and `file=` blocks.
fn steps(text: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((_, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let info = info.trim().to_string();
        let mut body: Vec<(usize, String)> = Vec::new();
        for (n, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push((n + 1, l.to_string()));
        }
        if info == "console" {
            let mut current: Option<(usize, String, Vec<String>)> = None;
            for (n, l) in body {
                if let Some(cmd) = l.strip_prefix("$ ") {
                    if let Some((line, command, exp)) = current.take() {
                        out.push(Step::Run {
                            line,
                            command,
                            expected: lines_text(&exp),
                        });
                    }
                    current = Some((n, cmd.to_string(), Vec::new()));
                } else if let Some(c) = &mut current {
                    c.2.push(l);
                } else {
                    panic!("line {n}: a console block starts with `$ command`, not `{l}`");
                }
            }
            if let Some((line, command, exp)) = current {
                out.push(Step::Run {
                    line,
                    command,
                    expected: lines_text(&exp),
                });
            }
        } else if let Some(path) = info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="))
        {
            let text: Vec<String> = body.into_iter().map(|(_, l)| l).collect();
            out.push(Step::Append {
                path: path.to_string(),
                text: lines_text(&text),
            });
        }
    }
    out
}

fn lines_text(lines: &[String]) -> String {
    let mut s = lines.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// Run the examples of `file` (relative to the crate) in a fresh folder.
fn run_page(file: &str) {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let steps = steps(&text);
    assert!(
        steps.iter().any(|s| matches!(s, Step::Run { .. })),
        "{file} has no console example"
    );
    let sandbox = tempfile::tempdir().unwrap();
    let mut cwd = sandbox.path().to_path_buf();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_perfbisect"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let print = std::env::var_os("GUIDE_EXAMPLES_PRINT").is_some();
    let mut failures = Vec::new();
    for step in steps {
        match step {
            Step::Append { path, text } => {
                use std::io::Write as _;
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(cwd.join(&path))
                    .unwrap_or_else(|e| panic!("{file}: cannot append to {path}: {e}"));
                f.write_all(text.as_bytes()).unwrap();
            }
            Step::Run {
                line,
                command,
                expected,
            } => {
                if let Some(dir) = command.strip_prefix("cd ") {
                    cwd = cwd.join(dir.trim());
                    assert!(cwd.is_dir(), "{file}:{line}: no folder {}", cwd.display());
                    continue;
                }
                // One pipe for both streams keeps their order, as a terminal shows it.
                let out = Command::new("sh")
                    .arg("-c")
                    .arg(format!("{{ {command}\n}} 2>&1"))
                    .current_dir(&cwd)
                    .env("PATH", &path)
                    .env("NO_COLOR", "1")
                    .env_remove("PERFBISECT_CACHE")
                    .env_remove("CLICOLOR_FORCE")
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                let actual = String::from_utf8_lossy(&out.stdout).into_owned();
                if print {
                    eprintln!("==== {file}:{line}: $ {command}\n{actual}");
                }
                if !out.status.success() {
                    failures.push(format!(
                        "{file}:{line}: `{command}` exited with {} (end a command that fails on \
                         purpose with `; echo \"exit $?\"`):\n{actual}",
                        out.status
                    ));
                    continue;
                }
                let label = format!("{file}:{line}: $ {command}");
                if let Err(e) = snapbox::Assert::new().try_eq(
                    Some(&label),
                    snapbox::Data::text(actual),
                    snapbox::Data::text(expected),
                ) {
                    failures.push(e.to_string());
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} example(s) of {file} print something else now:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The pages with console examples, each a test of its own (they run side by side).
macro_rules! pages {
    ($($name:ident => $file:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_page($file);
            }
        )*

        #[test]
        fn every_page_with_a_console_example_is_run_and_no_prompt_hides_elsewhere() {
            let run: &[&str] = &[$($file),*];
            let mut docs = vec!["README.md".to_string()];
            let mut guide: Vec<String> = std::fs::read_dir(root().join("src/guide"))
                .unwrap()
                .flatten()
                .map(|e| format!("src/guide/{}", e.file_name().to_string_lossy()))
                .filter(|f| f.ends_with(".md"))
                .collect();
            guide.sort();
            docs.extend(guide);
            for file in docs {
                let text = std::fs::read_to_string(root().join(&file)).unwrap();
                let mut info: Option<String> = None;
                let mut consoles = 0;
                for (n, line) in text.lines().enumerate() {
                    if let Some(i) = line.trim_start().strip_prefix("```") {
                        info = match info {
                            Some(_) => None,
                            None => Some(i.trim().to_string()),
                        };
                        consoles += usize::from(info.as_deref() == Some("console"));
                        continue;
                    }
                    if line.trim_start().starts_with("$ perfbisect") {
                        assert_eq!(
                            info.as_deref(),
                            Some("console"),
                            "{file}:{}: a `$ perfbisect` line outside a console block: run it \
                             in one, or quote a real run's output in a `text` block",
                            n + 1
                        );
                    }
                }
                assert!(
                    consoles == 0 || run.contains(&file.as_str()),
                    "{file} has console examples but no test runs them: add it to pages! in \
                     tests/suite/guide_examples.rs"
                );
            }
        }
    };
}

pages! {
    first_search => "src/guide/first-search.md",
    finding => "src/guide/finding.md",
    troubleshooting => "src/guide/troubleshooting.md",
}
