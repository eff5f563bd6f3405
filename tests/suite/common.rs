//! Shared helpers of the integration tests: generated repositories and the real binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use perfbisect::scaffold::demo::{create_repo, CommitSpec};

/// The `[build]` section most test configs share: compile the fixture's C program.
pub const BUILD: &str = r#"
[build]
command = "cc -O0 -o app app.c -lm"
artifacts = ["app"]
"#;

/// A config of the shared `[build]` section (more build keys may open `rest`) and `rest`.
pub fn with_build(rest: &str) -> String {
    format!("{BUILD}{rest}")
}

/// A generated repository with its config and cache in one temp dir.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
    pub config: PathBuf,
    pub cache: PathBuf,
    /// Commit ids, oldest first.
    pub ids: Vec<String>,
}

impl Fixture {
    pub fn new(specs: &[CommitSpec], config: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let ids = create_repo(&repo, specs).unwrap();
        let config_path = dir.path().join("perfbisect.toml");
        std::fs::write(&config_path, config).unwrap();
        let cache = dir.path().join("cache");
        Fixture {
            repo,
            config: config_path,
            cache,
            ids,
            dir,
        }
    }

    /// The demo config (tests value, rss, speed).
    pub fn with_demo_config(specs: &[CommitSpec]) -> Fixture {
        Fixture::new(specs, perfbisect::scaffold::demo::CONFIG)
    }

    /// The binary with --repo, --config and --cache set.
    pub fn cmd(&self) -> assert_cmd::Command {
        self.cmd_config(&self.config)
    }

    /// The binary with another config file.
    pub fn cmd_config(&self, config: &Path) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
        c.arg("--repo")
            .arg(&self.repo)
            .arg("--config")
            .arg(config)
            .arg("--cache")
            .arg(&self.cache)
            .arg("--no-progress")
            .current_dir(self.dir.path())
            .timeout(std::time::Duration::from_secs(600));
        c
    }

    /// The same as a std Command (for tests that kill it).
    pub fn std_cmd(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("perfbisect"));
        c.arg("--repo")
            .arg(&self.repo)
            .arg("--config")
            .arg(&self.config)
            .arg("--cache")
            .arg(&self.cache)
            .arg("--no-progress")
            .current_dir(self.dir.path());
        c
    }

    /// Range from the first commit to the last: every commit but the first.
    pub fn range(&self) -> String {
        format!("{}..{}", self.ids[0], self.ids[self.ids.len() - 1])
    }

    /// Run the binary with `args`, assert it succeeded, and parse its stdout as one JSON value.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.cmd().args(args).output().unwrap();
        let code = out.status.code();
        // An inconclusive `find` ran and says so with its own exit code (src/guide/finding.md: exit codes).
        let v: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
        let inconclusive = v
            .as_ref()
            .is_some_and(|v| v.get("verdict").and_then(|x| x.as_str()) == Some("inconclusive"));
        let want = if inconclusive { Some(3) } else { Some(0) };
        assert_eq!(
            code,
            want,
            "{args:?}: exit code {code:?} (inconclusive: {inconclusive}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        v.unwrap_or_else(|| panic!("{args:?}: stdout is not JSON"))
    }

    /// `show TEST RANGE --format json`, parsed, the range's commits only ([`range_only`]).
    pub fn show(&self, test: &str, range: &str) -> serde_json::Value {
        range_only(self.json(&["show", test, range, "--format", "json"]))
    }

    /// `run TESTS RANGE --format json`, parsed; asserts success.
    pub fn run_json(&self, tests: &str, range: &str, extra: &[&str]) -> serde_json::Value {
        let out = self
            .cmd()
            .args(["run", tests, range, "--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(text.lines().last().unwrap()).unwrap()
    }

    pub fn git(&self, args: &[&str]) -> String {
        perfbisect::scaffold::demo::git(&self.repo, args, None).unwrap()
    }
}

/// Specs with `n` commits of a 1%-noise metric (seeded noise), changed by `f` per 1-based
/// commit number.
pub fn specs(n: usize, f: impl Fn(usize, &mut CommitSpec)) -> Vec<CommitSpec> {
    (1..=n)
        .map(|i| {
            // Reproducible noise: a test sees the same samples every time it runs.
            let mut c = CommitSpec {
                subject: format!("Commit {i}"),
                noise_seed: 1,
                ..CommitSpec::default()
            };
            f(i, &mut c);
            c
        })
        .collect()
}

/// Medians per commit from `show --format json` (None for commits without samples).
pub fn medians(show: &serde_json::Value) -> Vec<Option<f64>> {
    show["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["median"].as_f64())
        .collect()
}

/// One commit of [`Fixture::with_files`]: its subject and the files it writes (path, content).
/// A file whose content starts with `#!` is committed executable.
pub type FilesCommit<'a> = (&'a str, Vec<(&'a str, String)>);

/// A git repository in `dir` whose commits write the given files, oldest first (each commit
/// keeps the files of the ones before it). Returns the commit ids.
pub fn files_repo(dir: &Path, commits: &[FilesCommit<'_>]) -> Vec<String> {
    use perfbisect::scaffold::demo::git;
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main", "."], None).unwrap();
    for (subject, files) in commits {
        for (path, content) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, content).unwrap();
            if content.starts_with("#!") {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        git(dir, &["add", "-A"], None).unwrap();
        git(dir, &["commit", "-q", "-m", subject], None).unwrap();
    }
    let ids = git(dir, &["rev-list", "--reverse", "main"], None).unwrap();
    ids.lines().map(str::to_string).collect()
}

impl Fixture {
    /// A repository of the given commits ([`files_repo`]) with its config and cache.
    pub fn with_files(commits: &[FilesCommit<'_>], config: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let ids = files_repo(&repo, commits);
        let config_path = dir.path().join("perfbisect.toml");
        std::fs::write(&config_path, config).unwrap();
        let cache = dir.path().join("cache");
        Fixture {
            repo,
            config: config_path,
            cache,
            ids,
            dir,
        }
    }

    /// Rewrite the config file.
    pub fn set_config(&self, config: &str) {
        std::fs::write(&self.config, config).unwrap();
    }
}

/// Whether `program` is on PATH. A test that needs a tool skips itself (with a note) when it
/// is missing, unless PERFBISECT_REQUIRE_TOOLS is set (as .ci/run does, after installing it):
/// then a missing tool fails the test.
pub fn have_tool(program: &str, what: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()));
    have(found, &format!("{program} ({what})"))
}

/// [`have_tool`] for anything else a test needs (a header file, a library): `found`, or a
/// skip note, or (with PERFBISECT_REQUIRE_TOOLS) a failure naming `what`.
pub fn have(found: bool, what: &str) -> bool {
    if !found {
        assert!(
            std::env::var_os("PERFBISECT_REQUIRE_TOOLS").is_none(),
            "{what} is not installed; .ci/run installs it"
        );
        eprintln!("skipped: {what} is not installed");
    }
    found
}

/// The path of a file under tests/fixtures/.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The highest CPU this process may run on (from /proc/self/status).
pub fn last_cpu() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    list.split(',')
        .filter_map(|p| p.rsplit('-').next())
        .filter_map(|n| n.trim().parse().ok())
        .max()
        .unwrap()
}

/// `show`'s JSON with the range's commits only: the entry of the old end of an `A..B` range
/// (`"old_end": true`, first) and its samples are dropped, so `commits[i]` is the range's
/// `i`th commit.
pub fn range_only(mut show: serde_json::Value) -> serde_json::Value {
    for key in ["commits", "samples"] {
        if let Some(a) = show[key].as_array_mut() {
            a.retain(|c| c["old_end"] != true);
        }
    }
    show
}

/// The phases of `find`'s JSON `time` added up, less what ran beside the runs (`both_s`,
/// counted in building or checking and in measuring): what must equal `total_s`.
pub fn time_parts(t: &serde_json::Value) -> f64 {
    [
        "building_s",
        "checking_s",
        "measuring_s",
        "profiling_s",
        "waiting_s",
    ]
    .iter()
    .map(|k| t[k].as_f64().unwrap())
    .sum::<f64>()
        - t["both_s"].as_f64().unwrap_or(0.0)
}
