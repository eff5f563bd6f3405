//! One function per subcommand, and the dispatcher that maps outcomes to exit codes.

mod cache;
mod calibrate;
mod compare;
mod demo;
mod detect;
mod find;
mod log;
mod run;
mod show;
mod step;

use clap::Parser;

use crate::cli::{Cli, Command, FindArgs, Format, Global};
use crate::pipeline::{Locations, Verbosity};

/// The run was stopped by Ctrl-C after storing what was measured: exit code 130.
#[derive(Debug, thiserror::Error)]
#[error("interrupted; everything measured so far is stored: run the same command again to resume")]
pub struct Interrupted;

/// Parse `args`, run the command and return the exit code.
pub fn dispatch<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    crate::interrupt::install();
    let g = cli.global.clone();
    let command = match cli.command {
        Some(c) => c,
        None => match <[String; 2]>::try_from(cli.find_args) {
            Ok([test, range]) => Command::Find(FindArgs {
                test,
                range,
                format: Format::Text,
                jobs: 1,
            }),
            Err(_) => {
                eprintln!(
                    "error: expected `perfbisect TEST RANGE` or a subcommand; see `perfbisect --help`"
                );
                return 2;
            }
        },
    };
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
