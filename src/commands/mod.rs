//! One function per subcommand, and the dispatcher that maps outcomes to exit codes.

mod cache;
pub mod calibrate;
mod compare;
mod demo;
mod detect;
mod find;
mod log;
mod report;
mod run;
mod show;
mod step;

use clap::Parser;

use crate::cli::{Cli, Command, Format, Global};
use crate::pipeline::{Locations, Verbosity, Workspace};

pub use crate::interrupt::Interrupted;

/// Parse `args`, run the command and return the exit code.
pub fn dispatch<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = default_to_find(args.into_iter().map(Into::into).collect());
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    crate::interrupt::install();
    let g = cli.global.clone();
    let command = cli.command;
    if let Command::Step(args) = command {
        return step::step(&g, args);
    }
    let result = match command {
        Command::Find(a) => find::find(&g, a),
        Command::Run(a) => run::run(&g, a),
        Command::Show(a) => show::show(&g, a),
        Command::Detect(a) => detect::detect(&g, a),
        Command::Compare(a) => compare::compare(&g, a),
        Command::Calibrate(a) => calibrate::calibrate(&g, a),
        Command::Log(a) => log::log(&g, a),
        Command::Cache(a) => cache::cache(&g, a),
        Command::Demo(a) => demo::demo(&g, a),
        Command::Report(a) => report::report(&g, a),
        Command::Step(_) => unreachable!("handled above"),
    };
    match result {
        Ok(()) => 0,
        Err(e) if e.is::<Interrupted>() => {
            eprintln!("perfbisect: {e}");
            130
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            crate::error::exit_code(&e)
        }
    }
}

/// `perfbisect [GLOBAL] TEST RANGE` means `perfbisect [GLOBAL] find TEST RANGE`: insert `find`
/// when the first word after the global options is not a subcommand. A word that looks like a
/// mistyped subcommand (`fnd`, `rnu`) is left to clap, which refuses it (exit 2) with "a
/// similar subcommand exists", unless the config defines a test of that name.
fn default_to_find(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let names: Vec<&str> = cmd
        .get_subcommands()
        .flat_map(|s| std::iter::once(s.get_name()).chain(s.get_all_aliases()))
        .collect();
    let mut i = 1;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        if a == "--" {
            return args;
        }
        if crate::cli::GLOBAL_WITH_VALUE.contains(&a.as_ref()) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        let known = cmd
            .get_subcommands()
            .any(|s| s.get_name() == a || s.get_all_aliases().any(|x| x == a))
            || a == "help";
        // A typo of a subcommand is left to clap, unless it is a test's name.
        let typo = looks_like_subcommand(&a, &names) && !is_configured_test(&args, &a);
        if !known && !typo {
            args.insert(i, "find".into());
        }
        return args;
    }
    args
}

/// Whether `word` is close to a subcommand name, by clap's own measure (Jaro similarity above
/// 0.7), so that clap's error then suggests it.
fn looks_like_subcommand(word: &str, names: &[&str]) -> bool {
    names.iter().any(|n| strsim::jaro(word, n) > 0.7)
}

/// Whether the config that `args` would use (`--config`, else ./perfbisect.toml, else
/// REPO/perfbisect.toml) defines the test `name`; false when it cannot be read.
fn is_configured_test(args: &[std::ffi::OsString], name: &str) -> bool {
    let value = |opt: &str| {
        let mut found = None;
        for (k, a) in args.iter().enumerate() {
            let a = a.to_string_lossy();
            if a == "--" {
                break;
            }
            if a == opt {
                found = args.get(k + 1).map(std::path::PathBuf::from);
            } else if let Some(v) = a.strip_prefix(&format!("{opt}=")) {
                found = Some(v.into());
            }
        }
        found
    };
    let config = value("--config");
    let repo = match &config {
        Some(_) => None,
        None => crate::git::Repo::open(value("--repo").as_deref())
            .ok()
            .map(|r| r.dir().to_path_buf()),
    };
    crate::config::locate(config.as_deref(), repo.as_deref())
        .and_then(|p| crate::config::load(&p))
        .is_ok_and(|c| c.tests.contains_key(name))
}

fn locations(g: &Global) -> Locations {
    Locations {
        repo: g.repo.clone(),
        config: g.config.clone(),
        cache: g.cache.clone(),
    }
}

fn verbosity(g: &Global) -> Verbosity {
    Verbosity {
        quiet: g.quiet,
        verbose: g.verbose,
        progress: !g.quiet && !g.no_progress,
    }
}

/// The bisection knobs of a test. Only `deterministic = true` makes a metric deterministic; a
/// declared one whose stored runs of some commit differ is treated as noisy, with a warning.
fn search_params(
    test: &crate::config::Test,
    stored: &crate::pipeline::Samples,
    warn: &dyn Fn(&str),
) -> crate::bisect::Params {
    let mut deterministic = test.deterministic;
    if deterministic {
        let mut spread: Vec<_> = stored
            .by_commit
            .iter()
            .filter(|(_, recs)| {
                let vals: Vec<f64> = recs.iter().filter_map(|s| s.value).collect();
                vals.iter().any(|&v| v != vals[0])
            })
            .collect();
        spread.sort_by_key(|(k, _)| **k);
        if let Some((_, recs)) = spread.first() {
            let vals: Vec<f64> = recs.iter().filter_map(|s| s.value).collect();
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            warn(&format!(
                "test `{}` is declared deterministic, but runs of commit {} differ ({} to {}); \
                 treating it as noisy",
                test.name,
                crate::git::short(&recs[0].commit_id()),
                crate::report::fmt_num(lo),
                crate::report::fmt_num(hi)
            ));
            deterministic = false;
        }
    }
    crate::bisect::Params {
        alpha: test.alpha,
        threshold: test.threshold,
        repeats: test.repeats,
        max_repeats: test.max_repeats,
        deterministic,
    }
}

/// The global options that pick the repository, config and cache, as they must be repeated in
/// a command printed for the user to paste (absolute paths, shell-quoted, trailing space);
/// empty when all are the defaults.
fn invocation(g: &Global) -> String {
    let mut out = String::new();
    for (flag, p) in [
        ("--repo", &g.repo),
        ("--config", &g.config),
        ("--cache", &g.cache),
    ] {
        if let Some(p) = p {
            let abs = crate::pipeline::display_path(p);
            out += &format!("{flag} {} ", shell_quote(&abs));
        }
    }
    out
}

/// `s` as one word for `sh`.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Per-commit rows of `test` for `commits`: the values and records stored, and whether a
/// commit without values failed to build, failed every run, or was never measured.
fn rows(
    ws: &Workspace,
    samples: &crate::pipeline::Samples,
    commits: Vec<crate::git::CommitInfo>,
) -> Vec<crate::report::show::CommitRow> {
    use crate::build::State;
    use crate::report::show::{CommitRow, Status};
    commits
        .into_iter()
        .map(|c| {
            let records = samples.records(&c.id).to_vec();
            let values: Vec<f64> = records.iter().filter_map(|s| s.value).collect();
            let status = if !values.is_empty() {
                Status::Ok
            } else if matches!(ws.build_state(&c.id), State::Failed(_)) {
                Status::BuildFailed
            } else if !records.is_empty() {
                Status::RunFailed
            } else {
                Status::Missing
            };
            CommitRow {
                commit: c,
                values,
                records,
                status,
            }
        })
        .collect()
}

/// `detect`'s change points over `rows` with the test's threshold (a declared deterministic
/// test: every change of at least the threshold, at its exact commit).
fn change_points(
    test: &crate::config::Test,
    rows: &[crate::report::show::CommitRow],
) -> Vec<crate::stats::ChangePoint> {
    use crate::stats::changepoint;
    let series: Vec<Vec<f64>> = rows.iter().map(|r| r.values.clone()).collect();
    let opts = changepoint::Options {
        threshold: test.threshold,
        deterministic: test.deterministic,
        ..changepoint::Options::default()
    };
    crate::stats::detect(&series, &opts)
}

/// Refuse formats a command does not offer.
fn check_format(format: Format, allowed: &[Format], command: &str) -> anyhow::Result<()> {
    if !allowed.contains(&format) {
        let names: Vec<String> = allowed
            .iter()
            .map(|f| format!("{f:?}").to_lowercase())
            .collect();
        crate::usage!(
            "`{command}` cannot print --format {}; use one of: {}",
            format!("{format:?}").to_lowercase(),
            names.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod default_to_find_tests {
    use super::default_to_find;

    fn words(args: &[&str]) -> Vec<String> {
        let args = std::iter::once("perfbisect")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from)
            .collect();
        default_to_find(args)
            .into_iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_test_name_means_find_and_a_typo_is_left_to_clap() {
        fn with<'a>(rest: &[&'a str]) -> Vec<&'a str> {
            [&["--config", "/nonexistent/perfbisect.toml"][..], rest].concat()
        }
        assert_eq!(
            words(&with(&["h2-req-mem", "A..B"]))[2..],
            ["find", "h2-req-mem", "A..B"]
        );
        assert_eq!(words(&with(&["rss", "A..B"]))[2], "find");
        assert_eq!(words(&with(&["value", "A..B"]))[2], "find");
        assert_eq!(words(&with(&["run", "t", "A..B"]))[2], "run");
        for typo in ["fnd", "shw", "shwo", "comapre", "calibrat", "detcet"] {
            assert_eq!(words(&with(&[typo, "t", "A..B"]))[2], typo, "{typo}");
        }
    }

    #[test]
    fn a_configured_test_that_looks_like_a_subcommand_is_still_a_test() {
        let d = tempfile::tempdir().unwrap();
        let cfg = d.path().join("perfbisect.toml");
        std::fs::write(&cfg, "[tests.fnd]\ncommand = \"true\"\n").unwrap();
        let cfg = cfg.to_string_lossy().into_owned();
        assert_eq!(
            words(&["--config", &cfg, "fnd", "A..B"]),
            ["--config", &cfg, "find", "fnd", "A..B"]
        );
        assert_eq!(
            words(&[&format!("--config={cfg}"), "-q", "fnd", "A..B"])[2],
            "find"
        );
    }
}
