//! `perfbisect completions SHELL` and `perfbisect man`: generated from the clap definitions
//! in `cli.rs`, so they list exactly the commands, options and `--format` values that exist;
//! `man --dir` also writes the guide's pages as perfbisect-guide-PAGE.7.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory;

use crate::cli::Cli;

/// Print the completion script of `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "perfbisect", &mut out);
    write_stdout(&out)
}

/// Print perfbisect(1) on stdout, or write it and a page per command into `dir`.
pub fn man(dir: Option<&Path>) -> anyhow::Result<()> {
    match dir {
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut out)
                .context("cannot render the manual page")?;
            write_stdout(&out)
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), dir)
                .with_context(|| format!("cannot write manual pages into {}", dir.display()))?;
            for p in crate::guide::PAGES {
                let file = dir.join(format!("perfbisect-guide-{}.7", p.name));
                std::fs::write(&file, crate::guide::roff::page(p.name, p.title(), p.text))
                    .with_context(|| format!("cannot write {}", file.display()))?;
            }
            let mut pages: Vec<String> = std::fs::read_dir(dir)?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("perfbisect") && (n.ends_with(".1") || n.ends_with(".7")))
                .collect();
            pages.sort();
            for p in pages {
                println!("{}", dir.join(p).display());
            }
            Ok(())
        }
    }
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(bytes)
        .and_then(|()| o.flush())
        .context("cannot write to stdout")
}
