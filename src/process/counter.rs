//! Counting the user-space instructions a run's whole process tree retires: with the CPU's
//! hardware counter (`perf_event_open`, kernel excluded, inherited by every child) where the
//! machine has one, else with Valgrind's Cachegrind (children traced, one count per process,
//! summed). Which counter made a sample is part of its fingerprint: counts of the two differ
//! (Cachegrind counts the guest's instructions exactly, the CPU counts what retired) and are
//! never compared.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::config::harness::Choice;

/// How `metric = "instructions"` is counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counter {
    /// The CPU's instructions counter through `perf_event_open` (in the launcher).
    Perf,
    /// Valgrind's Cachegrind: the program with its version banner.
    Cachegrind { valgrind: PathBuf, version: String },
}

impl Counter {
    /// A line for the fingerprint, reports and notes: `cpu instructions:u (perf_event)` or
    /// `cachegrind (valgrind-3.19.0)`.
    pub fn describe(&self) -> String {
        match self {
            Counter::Perf => "cpu instructions:u (perf_event_open)".into(),
            Counter::Cachegrind { version, .. } => format!("cachegrind ({version})"),
        }
    }

    /// The short name the config uses: `perf` or `cachegrind`.
    pub fn name(&self) -> &'static str {
        match self {
            Counter::Perf => "perf",
            Counter::Cachegrind { .. } => "cachegrind",
        }
    }
}

/// The counter chosen, and why (for the first run's note, `config check` and reports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    pub counter: Counter,
    pub why: String,
}

/// Why no counter can be used here: no hardware counter, no Valgrind. The message names the
/// Debian package.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoCounter(pub String);

/// The counter for `choice` on this machine (probed once per process).
pub fn select(choice: Choice) -> Result<Selected, NoCounter> {
    static PERF: OnceLock<Result<(), String>> = OnceLock::new();
    static VALGRIND: OnceLock<Option<(PathBuf, String)>> = OnceLock::new();
    let perf = PERF.get_or_init(probe_perf);
    let valgrind = VALGRIND.get_or_init(find_valgrind);
    let cachegrind = |why: String| {
        valgrind
            .as_ref()
            .map(|(path, version)| Selected {
                counter: Counter::Cachegrind {
                    valgrind: path.clone(),
                    version: version.clone(),
                },
                why: why.clone(),
            })
            .ok_or_else(|| {
                NoCounter(format!(
                    "{why}, and Valgrind is not installed (Debian package `valgrind`: apt-get install valgrind)"
                ))
            })
    };
    match (choice, perf) {
        (Choice::Perf, Ok(())) | (Choice::Auto, Ok(())) => Ok(Selected {
            counter: Counter::Perf,
            why: "this machine has a hardware instructions counter".into(),
        }),
        (Choice::Perf, Err(e)) => Err(NoCounter(format!(
            "`counter = \"perf\"` asks for the hardware instructions counter, and the hardware instructions counter cannot be used here ({e}); `counter = \"auto\"` falls back to Valgrind's Cachegrind"
        ))),
        (Choice::Cachegrind, _) => cachegrind("`counter = \"cachegrind\"` in the config".into()),
        (Choice::Auto, Err(e)) => cachegrind(format!("no hardware instructions counter here ({e})")),
    }
}

/// Can this process count its own user-space instructions? (A VM without a PMU cannot.)
fn probe_perf() -> Result<(), String> {
    if std::env::var_os("PERFBISECT_NO_PERF").is_some() {
        return Err("PERFBISECT_NO_PERF is set".into());
    }
    let built = perf_event::Builder::new(perf_event::events::Hardware::INSTRUCTIONS)
        .observe_self()
        .exclude_kernel(true)
        .exclude_hv(true)
        .build();
    match built {
        Ok(mut c) => {
            // Some hypervisors accept the event and never count: make sure it moves.
            c.enable().map_err(|e| format!("perf_event_open: {e}"))?;
            let mut x = 0u64;
            for i in 0..10_000u64 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            c.disable().map_err(|e| format!("perf_event_open: {e}"))?;
            let n = c.read().map_err(|e| format!("perf_event_open: {e}"))?;
            if n == 0 {
                Err("perf_event_open counts 0 instructions".into())
            } else {
                Ok(())
            }
        }
        Err(e) => Err(format!("perf_event_open: {e}")),
    }
}

/// `valgrind` on PATH with its version banner.
fn find_valgrind() -> Option<(PathBuf, String)> {
    let path = std::env::var_os("PATH")?;
    let exe = std::env::split_paths(&path)
        .map(|d| d.join("valgrind"))
        .find(|p| p.is_file())?;
    let out = std::process::Command::new(&exe)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    out.status.success().then_some((exe, version))
}

/// Valgrind's arguments before the command: Cachegrind without the cache simulation (only
/// instructions, about 10-50 times slower than a plain run), every child traced, one output
/// file per process in `dir`, Valgrind's own messages in files there too (not in the test's
/// output).
pub fn cachegrind_args(dir: &Path) -> Vec<String> {
    vec![
        "--tool=cachegrind".into(),
        "--cache-sim=no".into(),
        "--branch-sim=no".into(),
        "--trace-children=yes".into(),
        format!("--cachegrind-out-file={}/cg.%p", dir.display()),
        format!("--log-file={}/vg.%p", dir.display()),
    ]
}

/// The instructions of a run from Cachegrind's files in `dir`: the `summary:` lines of every
/// process, summed. An error says why there is no count (a process that did not finish under
/// Valgrind leaves no summary; Valgrind's own complaints are quoted).
pub fn cachegrind_total(dir: &Path) -> Result<u64, String> {
    let mut total = 0u64;
    let mut files = 0usize;
    let mut missing = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read Cachegrind's output in {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in &entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(pid) = name.strip_prefix("cg.") else {
            continue;
        };
        files += 1;
        let text = std::fs::read_to_string(p).unwrap_or_default();
        match summary_of(&text) {
            Some(n) => total = total.saturating_add(n),
            None => missing.push(pid.to_string()),
        }
    }
    if !missing.is_empty() || files == 0 {
        let log = entries
            .iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("vg."))
            })
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .flat_map(|t| {
                t.lines()
                    .filter(|l| !l.contains("warning: L3 cache") && !l.contains("LL cache"))
                    .map(|l| l.to_string())
                    .collect::<Vec<_>>()
            })
            .filter(|l| !l.trim().is_empty())
            .take(12)
            .collect::<Vec<_>>()
            .join("\n");
        return Err(if files == 0 {
            format!(
                "Cachegrind wrote no count (did the command start?){}",
                quoted(&log)
            )
        } else {
            format!(
                "Cachegrind has no count of process {} (it did not finish under Valgrind){}",
                missing.join(", "),
                quoted(&log)
            )
        });
    }
    Ok(total)
}

fn quoted(log: &str) -> String {
    if log.is_empty() {
        String::new()
    } else {
        format!("; Valgrind said:\n{log}")
    }
}

/// The `summary: N` line of one Cachegrind output file (Ir, the instructions).
fn summary_of(text: &str) -> Option<u64> {
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("summary:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_summed_and_a_missing_one_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("cg.10"),
            "desc: x\ncmd: sh\nevents: Ir\nsummary: 223369\n",
        )
        .unwrap();
        std::fs::write(d.path().join("cg.11"), "events: Ir\nsummary: 8128765\n").unwrap();
        std::fs::write(d.path().join("vg.10"), "==10== warning: L3 cache found\n").unwrap();
        assert_eq!(cachegrind_total(d.path()), Ok(223369 + 8128765));
        std::fs::write(d.path().join("cg.12"), "events: Ir\n").unwrap();
        std::fs::write(d.path().join("vg.12"), "==12== Killed by signal 9\n").unwrap();
        let e = cachegrind_total(d.path()).unwrap_err();
        assert!(
            e.contains("process 12") && e.contains("Killed by signal 9"),
            "{e}"
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(cachegrind_total(empty.path())
            .unwrap_err()
            .contains("no count"));
    }

    #[test]
    fn choices_parse() {
        assert_eq!(Choice::parse("auto"), Some(Choice::Auto));
        assert_eq!(Choice::parse("cachegrind"), Some(Choice::Cachegrind));
        assert_eq!(Choice::parse("perf"), Some(Choice::Perf));
        assert_eq!(Choice::parse("papi"), None);
    }
}
