//! `perfbisect log RANGE`: the commits perfbisect would walk, first parent, oldest first.

use std::io::Write;

use crate::cli::{Global, LogArgs};
use crate::git::Repo;

pub fn log(g: &Global, args: LogArgs) -> anyhow::Result<()> {
    let repo = Repo::open(g.repo.as_deref())?;
    let (base, ids) = repo.range_ids(&args.range)?;
    if let Some(note) = repo.off_chain_note(&args.range, base, &ids)? {
        if !g.quiet {
            eprintln!("perfbisect: {note}");
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.count {
        writeln!(out, "{}", ids.len())?;
    } else {
        for id in ids {
            writeln!(out, "{id} {}", repo.info(id)?.subject)?;
        }
    }
    out.flush()?;
    Ok(())
}
