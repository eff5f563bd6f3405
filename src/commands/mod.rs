//! One function per subcommand, and the dispatcher that maps outcomes to exit codes.

mod cache;
pub mod calibrate;
mod compare;
mod demo;
mod detect;
mod find;
mod log;
mod run;
mod show;
mod step;

use clap::Parser;

use crate::cli::{Cli, Command, Format, Global};
use crate::pipeline::{Locations, Verbosity};

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
/// when the first word after the global options is not a subcommand.
fn default_to_find(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let cmd = Cli::command();
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
        if !known {
            args.insert(i, "find".into());
        }
        return args;
    }
    args
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

/// The bisection knobs of a test: `repeats = 1` marks a deterministic metric.
fn search_params(test: &crate::config::Test) -> crate::bisect::Params {
    crate::bisect::Params {
        alpha: test.alpha,
        threshold: test.threshold,
        repeats: test.repeats,
        max_repeats: test.max_repeats,
        deterministic: test.repeats == 1,
    }
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
