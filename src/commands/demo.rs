//! `perfbisect demo`: make a small repository with known regressions, then run the pipeline
//! on it and say what was found.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::base::paths::display_path;
use crate::cli::{DetectArgs, FindArgs, Format, Global, RunArgs, ShowArgs};
use crate::scaffold::demo::{create_repo, CommitSpec, CONFIG};

/// Commits in the demo repository.
const COMMITS: usize = 24;
/// 1-based commit where the printed value rises by 8 %.
const VALUE_STEP: usize = 17;
/// 1-based commit where memory grows from 20 to 60 MB.
const RSS_STEP: usize = 9;
/// 1-based commit that does not compile.
const BROKEN: usize = 5;

fn specs() -> Vec<CommitSpec> {
    (1..=COMMITS)
        .map(|n| CommitSpec {
            subject: match n {
                1 => "Initial version".into(),
                BROKEN => "Refactor parser (does not compile)".into(),
                RSS_STEP => "Keep a bigger buffer around".into(),
                VALUE_STEP => "Add a slower code path".into(),
                _ => format!("Unrelated change {n}"),
            },
            metric: if n >= VALUE_STEP { 1080.0 } else { 1000.0 },
            megabytes: if n >= RSS_STEP { 60 } else { 20 },
            broken: n == BROKEN,
            ..CommitSpec::default()
        })
        .collect()
}

/// Written into the demo's folder before anything else: only a folder holding it has a
/// `repo/`, `perfbisect.toml` and `cache/` that the demo may delete or overwrite.
const MARKER: &str = ".perfbisect-demo";

/// Make sure `root` is the demo's own folder, or new: refuse (exit 2) when it holds a `repo/`,
/// `perfbisect.toml` or `cache/` that the demo did not create. `ours` says that the folder is
/// inside perfbisect's own cache (the default), where nothing belongs to the user.
fn claim(root: &Path, ours: bool) -> anyhow::Result<()> {
    let marker = root.join(MARKER);
    if marker.is_file() {
        return Ok(());
    }
    if !ours {
        for name in ["repo", "perfbisect.toml", "cache"] {
            let p = root.join(name);
            if p.symlink_metadata().is_ok() {
                crate::usage!(
                    "{} exists and was not made by `perfbisect demo`; it is left alone: pick an \
                     empty or new --dir",
                    // The folder normalised, not the entry: a symlink is named, not followed.
                    display_path(root).trim_end_matches('/').to_string() + "/" + name
                );
            }
        }
    }
    std::fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;
    std::fs::write(
        &marker,
        "Made by `perfbisect demo`: it may delete and recreate repo/, perfbisect.toml and cache/ here.\n",
    )
    .with_context(|| format!("cannot write {}", marker.display()))?;
    Ok(())
}

pub fn demo(g: &Global, args: crate::cli::DemoArgs) -> anyhow::Result<()> {
    let root = match args.dir.clone() {
        Some(d) => d,
        None => g
            .cache
            .clone()
            .or_else(|| std::env::var_os("PERFBISECT_CACHE").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("cache"))
            .join("demo"),
    };
    claim(&root, args.dir.is_none())?;
    let repo = root.join("repo");
    let config = root.join("perfbisect.toml");
    if args.create_only {
        return create_only(&repo, &config, &args);
    }
    let ids = match crate::scaffold::demo::git(&repo, &["rev-list", "--reverse", "main"], None) {
        Ok(out) if out.lines().count() == COMMITS && repo.join("app.c").is_file() => {
            out.lines().map(str::to_string).collect::<Vec<_>>()
        }
        _ => {
            if repo.exists() {
                std::fs::remove_dir_all(&repo)?;
            }
            create_repo(&repo, &specs())?
        }
    };
    std::fs::write(&config, CONFIG)?;
    println!(
        "demo repository: {} ({COMMITS} commits of a small C program)",
        display_path(&repo)
    );
    println!(
        "known changes: commit {BROKEN} does not build; commit {RSS_STEP} ({}) grows memory 20 -> 60 MB; commit {VALUE_STEP} ({}) raises the printed value by 8 %",
        &ids[RSS_STEP - 1][..10],
        &ids[VALUE_STEP - 1][..10]
    );
    let g = Global {
        repo: Some(repo.clone()),
        config: Some(config.clone()),
        cache: Some(root.join("cache")),
        ..g.clone()
    };
    let range = format!("{}..main", &ids[0][..10]);
    // Bisection first, on an empty cache: it builds only the commits it probes.
    println!("\n$ perfbisect find value {range}");
    super::find::find(
        &g,
        FindArgs {
            test: "value".into(),
            range: range.clone(),
            no_descend: false,
            jobs: 1,
            format: Format::Text,
            any_fingerprint: false,
            plot: None,
            attach: None,
            profile: Default::default(),
            max_runs: None,
        },
    )?;
    println!("\n$ perfbisect run value,rss {range} --jobs 2");
    super::run::run(
        &g,
        RunArgs {
            tests: "value,rss".into(),
            range: range.clone(),
            gaps: false,
            again: false,
            retry_failed: false,
            jobs: 2,
            shard: None,
            build_only: false,
            format: Format::Text,
        },
    )?;
    println!("\n$ perfbisect show value {range}");
    super::show::show(
        &g,
        ShowArgs {
            test: "value".into(),
            range: Some(range.clone()),
            format: Format::Text,
            any_fingerprint: false,
            plot: None,
        },
    )?;
    for test in ["value", "rss"] {
        println!("\n$ perfbisect detect {test} {range}");
        super::detect::detect(
            &g,
            DetectArgs {
                test: Some(test.into()),
                range: Some(range.clone()),
                input: None,
                format: Format::Text,
                alpha: None,
                any_fingerprint: false,
            },
        )?;
    }
    println!(
        "\nTry it yourself: perfbisect --repo {} --config {} --cache {} show rss",
        display_path(&repo),
        display_path(&config),
        display_path(&root.join("cache"))
    );
    Ok(())
}

/// `demo --create-only`: a repository of the requested shape and the demo config.
/// `--outlier-pct P` or `P-Q` (per cent, 0 to 1000, P at most Q) as shares.
fn outlier_pct(s: &str) -> anyhow::Result<(f64, f64)> {
    let (lo, hi) = s.split_once('-').unwrap_or((s, s));
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1000.0).contains(v))
    };
    match (num(lo), num(hi)) {
        (Some(a), Some(b)) if a <= b => Ok((a / 100.0, b / 100.0)),
        _ => crate::usage!(
            "--outlier-pct {s}: write a per cent (`30`) or a range (`5-10`), from 0 to 1000"
        ),
    }
}

fn create_only(
    repo: &std::path::Path,
    config: &std::path::Path,
    a: &crate::cli::DemoArgs,
) -> anyhow::Result<()> {
    if a.commits == 0 {
        crate::usage!("--commits must be at least 1");
    }
    if let Some(k) = a.step_at {
        if k == 0 || k > a.commits {
            crate::usage!(
                "--step-at {k}: must be between 1 and --commits ({})",
                a.commits
            );
        }
    }
    if repo.exists() {
        crate::usage!("{} exists; pick another --dir", display_path(repo));
    }
    if !(a.drift_period.is_finite() && a.drift_period > 0.0 && a.drift_pct.is_finite()) {
        crate::usage!("--drift-period must be a positive number of seconds, --drift-pct a number");
    }
    let outlier_size = outlier_pct(&a.outlier_pct)?;
    let specs: Vec<CommitSpec> = (1..=a.commits)
        .map(|n| CommitSpec {
            subject: if Some(n) == a.step_at {
                format!("Change {n}: moves the value by {:+} %", a.step_pct)
            } else {
                format!("Change {n}")
            },
            metric: if a.step_at.is_some_and(|k| n >= k) {
                1000.0 * (1.0 + a.step_pct / 100.0)
            } else {
                1000.0
            },
            noise_pct: a.noise_pct,
            outlier_rate: a.outlier_rate,
            outlier_size,
            noise_seed: a.noise_seed,
            docs_only: a.docs_every > 0 && n % a.docs_every == 0 && Some(n) != a.step_at,
            drift_pct: a.drift_pct,
            drift_period: a.drift_period,
            work: if a.step_at.is_some_and(|k| n >= k) {
                (a.work as f64 * (1.0 + a.work_step_pct / 100.0)).round() as u64
            } else {
                a.work
            },
            ..CommitSpec::default()
        })
        .collect();
    let ids = create_repo(repo, &specs)?;
    std::fs::write(config, CONFIG)?;
    println!("{}", ids.join("\n"));
    Ok(())
}
