//! Shared helpers of the integration tests: generated repositories and the real binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use perfbisect::demo::{create_repo, CommitSpec};

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
        Fixture::new(specs, perfbisect::demo::CONFIG)
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
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `show TEST RANGE --format json`, parsed.
    pub fn show(&self, test: &str, range: &str) -> serde_json::Value {
        self.json(&["show", test, range, "--format", "json"])
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
        perfbisect::demo::git(&self.repo, args, None).unwrap()
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
