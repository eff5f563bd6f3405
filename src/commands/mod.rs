//! One function per subcommand, and the dispatcher that maps outcomes to exit codes.

mod cache;
pub mod calibrate;
mod common;
mod compare;
mod config;
mod demo;
mod detect;
mod docs;
mod find;
mod guide;
mod import;
mod log;
mod merge;
mod report;
mod run;
mod show;
mod step;
mod triage;

use crate::cli::{Cli, Command, FindArgs, Global};
// For import.rs, until it names `common` itself.

use crate::base::interrupt::Interrupted;

/// Parse `args`, run the command and return the exit code.
pub fn dispatch<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    crate::base::interrupt::install();
    let g = cli.global.clone();
    let command = match (cli.command, cli.test, cli.range) {
        (Some(c), _, _) => c,
        (None, Some(test), Some(range)) => Command::Find(FindArgs {
            test,
            range,
            no_descend: cli.find.no_descend,
            jobs: cli.find.jobs.unwrap_or(1),
            format: cli.find.format.unwrap_or_default(),
            any_fingerprint: cli.find.any_fingerprint,
            plot: cli.find.plot,
            attach: cli.find.attach,
            profile: cli.find.profile,
            max_runs: cli.find.max_runs,
        }),
        _ => unreachable!("parse() refuses a command line without a command or TEST RANGE"),
    };
    if let Command::Step(args) = command {
        return step::step(&g, args);
    }
    let done = |r: anyhow::Result<()>| r.map(|()| 0);
    let result = match command {
        Command::Find(a) => find::find(&g, a),
        Command::Run(a) => done(run::run(&g, a)),
        Command::Show(a) => done(show::show(&g, a)),
        Command::Detect(a) => done(detect::detect(&g, a)),
        Command::Compare(a) => done(compare::compare(&g, a)),
        Command::Calibrate(a) => done(calibrate::calibrate(&g, a)),
        Command::Log(a) => done(log::log(&g, a)),
        Command::Import(a) => done(import::import(&g, a)),
        Command::Merge(a) => done(merge::merge(&g, a)),
        Command::Cache(a) => done(cache::cache(&g, a)),
        Command::Demo(a) => done(demo::demo(&g, a)),
        Command::Config(a) => done(config::config(&g, a)),
        Command::Completions { shell } => done(docs::completions(shell)),
        Command::Man { dir } => done(docs::man(dir.as_deref())),
        Command::Guide { page } => done(guide::guide(page.as_deref())),
        Command::Report(a) => done(report::report(&g, a)),
        Command::Triage(a) => done(triage::triage(&g, a)),
        Command::Step(_) => unreachable!("handled above"),
    };
    match result {
        Ok(code) => code,
        Err(e) if e.is::<Interrupted>() => {
            eprintln!("perfbisect: {e}");
            crate::base::interrupt::exit_code()
        }
        Err(e) => {
            crate::base::style::error(&format!("{e:#}"));
            crate::error::exit_code(&e)
        }
    }
}

/// Parse the command line with clap. The default command (`perfbisect [GLOBAL] TEST RANGE`,
/// which is `find TEST RANGE`) is clap's too: optional top-level TEST and RANGE beside the
/// subcommands. What clap cannot see is checked here and reported as clap errors (exit 2): a
/// TEST that looks like a mistyped subcommand (`fnd`, `rnu`) gets clap's "a similar
/// subcommand exists", unless the config defines a test of that name; words after RANGE, and
/// the default command's options before a subcommand, are refused.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::{CommandFactory, FromArgMatches};
    let mut cmd = Cli::command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let usage = cmd.render_usage();
    if let (None, Some(test)) = (&cli.command, &cli.test) {
        let names: Vec<&str> = cmd
            .get_subcommands()
            .flat_map(|s| std::iter::once(s.get_name()).chain(s.get_all_aliases()))
            .collect();
        // clap's own measure of "similar" (Jaro above 0.7), so the error reads as clap's.
        let similar: Vec<String> = names
            .iter()
            .filter(|n| strsim::jaro(test, n) > 0.7)
            .map(|n| n.to_string())
            .collect();
        if !similar.is_empty() && !is_configured_test(&cli.global, test) {
            let mut e = clap::Error::new(ErrorKind::InvalidSubcommand).with_cmd(&cmd);
            e.insert(
                ContextKind::InvalidSubcommand,
                ContextValue::String(test.clone()),
            );
            e.insert(
                ContextKind::SuggestedSubcommand,
                ContextValue::Strings(similar),
            );
            e.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
            return Err(e);
        }
    }
    if let Some(word) = cli.extra.first() {
        let mut e = clap::Error::new(ErrorKind::UnknownArgument).with_cmd(&cmd);
        e.insert(ContextKind::InvalidArg, ContextValue::String(word.clone()));
        e.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
        return Err(e);
    }
    if cli.command.is_some() {
        if let Some(t) = &cli.test {
            return Err(cmd.error(
                ErrorKind::ArgumentConflict,
                format!("`{t}` comes before the subcommand; TEST and RANGE without a subcommand mean `find TEST RANGE`"),
            ));
        }
        if let Some(opt) = cli.find.given() {
            return Err(cmd.error(
                ErrorKind::ArgumentConflict,
                format!("{opt} is an option of the default command (find); give it after the subcommand"),
            ));
        }
    } else if cli.test.is_none() {
        return Err(cmd.error(
            ErrorKind::MissingSubcommand,
            "a command, or TEST and RANGE (for `find`), is required",
        ));
    }
    Ok(cli)
}

/// Whether the config that `g` picks (`--config`, else ./perfbisect.toml, else
/// REPO/perfbisect.toml) defines the test `name`; false when it cannot be read.
fn is_configured_test(g: &Global, name: &str) -> bool {
    let repo = match &g.config {
        Some(_) => None,
        None => crate::git::Repo::open(g.repo.as_deref())
            .ok()
            .map(|r| r.dir().to_path_buf()),
    };
    crate::config::locate(g.config.as_deref(), repo.as_deref())
        .and_then(|p| crate::config::load(&p))
        .is_ok_and(|c| c.tests.contains_key(name))
}

#[cfg(test)]
mod parse_tests {
    use super::parse;
    use crate::cli::Command;

    fn args(rest: &[&str]) -> Vec<String> {
        ["perfbisect", "--config", "/nonexistent/perfbisect.toml"]
            .iter()
            .chain(rest)
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn a_test_name_means_find_and_a_typo_gets_clap_suggestion() {
        let c = parse(args(&["h2-req-mem", "A..B"])).unwrap();
        assert!(c.command.is_none());
        assert_eq!(
            (c.test.as_deref(), c.range.as_deref()),
            (Some("h2-req-mem"), Some("A..B"))
        );
        let c = parse(args(&["value", "A..B", "--format", "json", "-j", "3"])).unwrap();
        assert_eq!(c.find.jobs, Some(3));
        assert!(matches!(
            parse(args(&["run", "t", "A..B"])).unwrap().command,
            Some(Command::Run(_))
        ));
        for typo in ["fnd", "shw", "shwo", "comapre", "calibrat", "detcet"] {
            for rest in [&["t", "A..B"][..], &["A..B"]] {
                let e = parse(args(&[&[typo][..], rest].concat())).unwrap_err();
                assert_eq!(
                    e.kind(),
                    clap::error::ErrorKind::InvalidSubcommand,
                    "{typo}"
                );
                assert!(e.to_string().contains("similar subcommand"), "{e}");
            }
        }
        let e = parse(args(&["value", "A..B", "C"])).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
        let e = parse(args(&["--format", "json", "show", "t"])).unwrap_err();
        assert!(e.to_string().contains("after the subcommand"), "{e}");
        let e = parse(args(&["-q"])).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingSubcommand);
    }

    #[test]
    fn a_configured_test_that_looks_like_a_subcommand_is_still_a_test() {
        let d = tempfile::tempdir().unwrap();
        let cfg = d.path().join("perfbisect.toml");
        std::fs::write(&cfg, "[tests.fnd]\ncommand = \"true\"\n").unwrap();
        let cfg = cfg.to_string_lossy().into_owned();
        let c = parse(["perfbisect", "--config", &cfg, "fnd", "A..B"]).unwrap();
        assert_eq!(c.test.as_deref(), Some("fnd"));
        let c = parse([
            "perfbisect",
            &format!("--config={cfg}"),
            "-q",
            "fnd",
            "A..B",
        ])
        .unwrap();
        assert_eq!(c.test.as_deref(), Some("fnd"));
    }
}
