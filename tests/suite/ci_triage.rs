//! Issue 31, part 7: the nightly job on a real CI engine. The GitLab worked example
//! (scripts/ci/gitlab-ci-triage.yml with scripts/ci/triage.sh) runs end to end under
//! gitlab-ci-local's shell executor, as a scheduled pipeline, on a generated repository with
//! imported cron rounds, posting through the `gh` stand-in (tests/fixtures/gh-stand-in); a
//! second night posts nothing. (The GitHub Actions example is checked by actionlint in .ci/run.)

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{have, specs, with_build, Fixture};

const CONFIG: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3

[tests.value2]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "3%"
repeats = 3

[tests.rss]
command = "./app"
metric = "max-rss"
threshold = "10%"
repeats = 3
"#;

/// gitlab-ci-local: $PERFBISECT_GITLAB_CI_LOCAL (.ci/run installs it), else on PATH, else where
/// .ci/run puts it under target/.
fn gitlab_ci_local() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PERFBISECT_GITLAB_CI_LOCAL") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("gitlab-ci-local"))
            .find(|c| c.is_file())
    });
    on_path.or_else(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/ci-tools/gcl/node_modules/.bin/gitlab-ci-local");
        p.is_file().then_some(p)
    })
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_gitlab_nightly_pipeline_posts_each_culprit_once_over_two_nights() {
    let gcl = gitlab_ci_local();
    let rsync = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("rsync").is_file()));
    if !have(gcl.is_some(), "gitlab-ci-local (npm package)") || !have(rsync, "rsync") {
        return;
    }
    let gcl = gcl.unwrap();
    let f = Fixture::new(
        &specs(30, |i, c| {
            c.metric = if i >= 14 { 1080.0 } else { 1000.0 };
            c.megabytes = if i >= 22 { 8 } else { 1 };
            c.work = 0;
        }),
        &with_build(CONFIG),
    );
    let repo = &f.repo;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The project as a team sets it up: its config, the pipeline, the script, a remote.
    std::fs::copy(&f.config, repo.join("perfbisect.toml")).unwrap();
    std::fs::copy(
        root.join("scripts/ci/gitlab-ci-triage.yml"),
        repo.join(".gitlab-ci.yml"),
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("ci/perfbisect")).unwrap();
    std::fs::copy(
        root.join("scripts/ci/triage.sh"),
        repo.join("ci/perfbisect/triage.sh"),
    )
    .unwrap();
    let git = |args: &[&str]| {
        let (ok, out) = run(Command::new("git").args(args).current_dir(repo));
        assert!(ok, "git {args:?}: {out}");
    };
    git(&[
        "remote",
        "add",
        "origin",
        "https://gitlab.example.com/team/app.git",
    ]);
    // The cron job's rounds: every 4th commit, another machine's numbers.
    let mut csv = String::from("commit,test,value,timestamp,round\n");
    for (k, n) in [1usize, 5, 9, 13, 17, 21, 25, 29].iter().enumerate() {
        let value = if *n >= 14 { 1080.0 } else { 1000.0 };
        let rss = if *n >= 22 { 10_300_000.0 } else { 3_100_000.0 };
        for r in 0..3 {
            let t = 1_700_000_000 + 1200 * k + r;
            let jitter = 1.0 + 0.002 * r as f64;
            for (test, v) in [("value", value), ("value2", value), ("rss", rss)] {
                csv += &format!("{},{test},{},{t},R{k}\n", f.ids[n - 1], v * jitter);
            }
        }
    }
    std::fs::write(repo.join("rounds.csv"), csv).unwrap();
    // `gh` is the stand-in, `perfbisect` the binary under test.
    let bin = f.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(root.join("tests/fixtures/gh-stand-in"), bin.join("gh")).unwrap();
    let pb = assert_cmd::cargo::cargo_bin("perfbisect");
    std::os::unix::fs::symlink(&pb, bin.join("perfbisect")).unwrap();
    let state = f.dir.path().join("gh-state");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    let night = || {
        run(Command::new(&gcl)
            .args(["--shell-executor-no-image", "--no-color"])
            .args(["--variable", "CI_PIPELINE_SOURCE=schedule"])
            .args(["--variable", "PERF_REPO=team/app"])
            .args(["--variable", &format!("RANGE={range}")])
            .arg("perf-triage")
            .current_dir(repo)
            .env("PATH", &path)
            .env("GH_STATE", &state))
    };
    let issues = || -> Vec<serde_json::Value> {
        std::fs::read_dir(state.join("issues"))
            .map(|d| {
                d.map(|e| {
                    serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap())
                        .unwrap()
                })
                .collect()
            })
            .unwrap_or_default()
    };
    let (ok, log) = night();
    assert!(ok, "the pipeline failed:\n{log}");
    let found = issues();
    assert_eq!(found.len(), 2, "{log}\n{found:?}");
    for c in [&f.ids[13], &f.ids[21]] {
        let about: Vec<_> = found
            .iter()
            .filter(|i| i["body"].as_str().unwrap().contains(c.as_str()))
            .collect();
        assert_eq!(about.len(), 1, "one issue for {c}: {found:?}");
    }
    // The job's artifacts: the findings and the digest.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("triage.json")).unwrap()).unwrap();
    assert_eq!(j["findings"].as_array().unwrap().len(), 2, "{j:#}");
    assert!(std::fs::read_to_string(repo.join("triage.md"))
        .unwrap()
        .starts_with("## perfbisect triage"));
    // The next night: the cache came back, nothing new, nothing posted.
    let (ok, log) = night();
    assert!(ok, "the second night failed:\n{log}");
    assert_eq!(issues().len(), 2, "{log}");
    assert!(log.contains("nothing new"), "{log}");
}
