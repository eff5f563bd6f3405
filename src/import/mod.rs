//! Importing results measured elsewhere (a cron job's rounds, another cache's export): rows
//! are read as a stream (CSV) or whole (JSON, as `show` writes it), each checked; rows naming
//! an unknown commit or test, or whose value or timestamp cannot be read, are reported with
//! their line and skipped. Rows that could only be stored wrong stop the import (nothing is
//! written): a commit named by a position (`HEAD`, a branch) instead of an id or tag, a
//! timestamp outside 1970..=9999, a text too long for a record. The new samples of each test
//! are written as one batch of its store file, which counts once its commit marker is on
//! disk: a bad file, an error or a crash never leaves half an import. Memory stays bounded
//! whatever the file's size: rows are checked and written as they are read.
//!
//! Rows already stored are not added again, counted with multiplicity: a cron row is the same
//! row when commit, value, timestamp, round and machine are; a run of an export (`show --format
//! json|csv`, which names each run's window and moment) is the same run as a stored one with
//! the same commit, window, moment, time and value, so importing an export into the cache it
//! came from adds nothing, and into an empty one exactly the runs it lists.

mod csv;
pub mod foreign;
mod json;
mod keys;
mod report;
mod row;
mod sink;

use std::path::Path;

use crate::error::UsageError;
use crate::pipeline::workspace::Workspace;

pub use report::{Outcome, Place, Report, Why, LISTED};

/// The file formats `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
}

/// Import `path` into the workspace's store (the caller holds the cache lock). Refused rows
/// are a [`UsageError`] naming each one's line, and nothing is written.
pub fn import(
    ws: &Workspace,
    path: &Path,
    format: Option<Format>,
    keep_all: bool,
) -> anyhow::Result<Outcome> {
    let file = crate::base::paths::display_path(path);
    let mut f = std::fs::File::open(path)
        .map_err(|e| UsageError::err(format!("cannot read {file}: {e}")))?;
    let format = match format {
        Some(f) => f,
        None => guess_format(path, &mut f, &file)?,
    };
    sink::run(ws, &file, keep_all, |sink| match format {
        Format::Csv => csv::read(std::io::BufReader::with_capacity(1 << 16, f), &file, sink),
        Format::Json => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut bytes)
                .map_err(|e| UsageError::err(format!("cannot read {file}: {e}")))?;
            let text = utf8(&bytes, &file)?;
            json::read(text, &file, sink)
        }
    })
}

/// The file's text, or a usage error naming the line where it stops being UTF-8.
fn utf8<'b>(bytes: &'b [u8], file: &str) -> anyhow::Result<&'b str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        UsageError::err(format!(
            "{file}:{line}: not UTF-8 text; is this a CSV or JSON file?"
        ))
    })
}

/// `.json` files, or text that starts like JSON, are JSON; the rest CSV.
fn guess_format(path: &Path, f: &mut std::fs::File, file: &str) -> anyhow::Result<Format> {
    use std::io::{Read, Seek};
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("json") => return Ok(Format::Json),
        Some("csv") => return Ok(Format::Csv),
        _ => {}
    }
    let mut head = Vec::new();
    f.by_ref()
        .take(4096)
        .read_to_end(&mut head)
        .and_then(|_| f.rewind())
        .map_err(|e| UsageError::err(format!("cannot read {file}: {e}")))?;
    let text = String::from_utf8_lossy(&head);
    Ok(if text.trim_start().starts_with(['[', '{']) {
        Format::Json
    } else {
        Format::Csv
    })
}
