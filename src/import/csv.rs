//! CSV files for `import`, read as a stream: a cron's rows (`commit,test,value[,timestamp,
//! round,machine]`) or `show --format csv`'s runs, with every row's line for messages.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Read;
use std::rc::Rc;

use super::row::{column, opt, ExportedRun, Field, Row, Rows, COLUMNS};

/// Read a CSV file's rows one at a time into `sink`: a cron's columns or those of `show
/// --format csv`, in any order, named by the header.
pub(crate) fn read(input: impl Read, file: &str, sink: &mut dyn Rows) -> anyhow::Result<()> {
    let lines = Lines::default();
    let mut rdr = ::csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(false)
        .from_reader(Counting {
            inner: input,
            lines: lines.clone(),
            at: 0,
        });
    let mut rec = ::csv::ByteRecord::new();
    let col = header(&mut rdr, &mut rec, file)?;
    // `show --format csv` names each run's window: its rows are runs, compared as such.
    let export = col[column("window")] != usize::MAX;
    let width = rec.len();
    loop {
        let pos = rdr.position().clone();
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                if let ::csv::ErrorKind::Io(io) = e.kind() {
                    anyhow::bail!("cannot read {file}: {io}");
                }
                let off = e.position().map_or(pos.byte(), |p| p.byte());
                sink.unparsable(lines.line_of(off, false), format!("{e}"));
                continue;
            }
        }
        // From the byte offset, past the line break the reader may count as the record's
        // start: its own line count is one short in a CRLF file.
        let start = rec.position().map_or(pos.byte(), |p| p.byte());
        let line = lines.line_of(start, true);
        utf8(&rec, file, line)?;
        if rec.len() == 1
            && rec
                .get(0)
                .is_some_and(|c| c.iter().all(u8::is_ascii_whitespace))
        {
            continue; // a blank line
        }
        if rec.len() != width {
            sink.unparsable(
                line,
                format!("{} fields, the header has {width}", rec.len()),
            );
            continue;
        }
        let cells = Cells {
            rec: &rec,
            col: &col,
        };
        record(&cells, line, export, sink)?;
    }
    Ok(())
}

/// Reads the header into `rec`: the position of each of [`COLUMNS`] in it (`usize::MAX` for
/// one it lacks), in any order; the first three are required.
fn header<R: Read>(
    rdr: &mut ::csv::Reader<R>,
    rec: &mut ::csv::ByteRecord,
    file: &str,
) -> anyhow::Result<[usize; COLUMNS.len()]> {
    let mut col = [usize::MAX; COLUMNS.len()];
    match rdr.read_byte_record(rec) {
        Ok(false) => crate::usage!(
            "{file}: empty file; expected a header `commit,test,value[,timestamp,round,machine]`"
        ),
        Ok(true) => {}
        Err(e) => crate::usage!("{file}: cannot read the header: {}", why(&e)),
    }
    utf8(rec, file, 1)?;
    for (k, name) in rec.iter().enumerate() {
        let name = String::from_utf8_lossy(name).trim().to_ascii_lowercase();
        match COLUMNS.iter().position(|c| *c == name) {
            Some(i) if col[i] != usize::MAX => {
                crate::usage!("{file}:1: column `{name}` appears twice in the header")
            }
            Some(i) => col[i] = k,
            None => crate::usage!(
                "{file}:1: unknown column `{name}`{}; the header is `commit,test,value[,timestamp,round,machine]` (or that of `show --format csv`)",
                crate::error::did_you_mean(&name, COLUMNS)
            ),
        }
    }
    for (i, c) in COLUMNS.iter().take(3).enumerate() {
        if col[i] == usize::MAX {
            crate::usage!(
                "{file}:1: the header has no `{c}` column; expected `commit,test,value[,timestamp,round,machine]`"
            );
        }
    }
    Ok(col)
}

/// A record's cells, found by column name through the header's positions.
struct Cells<'a> {
    rec: &'a ::csv::ByteRecord,
    col: &'a [usize; COLUMNS.len()],
}

impl<'a> Cells<'a> {
    /// The cell of column `name`, when the header has that column.
    fn get(&self, name: &str) -> Option<&'a str> {
        let i = self.col[column(name)];
        // Every record was checked to be UTF-8 (`utf8`) before its cells are read.
        (i != usize::MAX)
            .then(|| {
                self.rec
                    .get(i)
                    .map(|b| std::str::from_utf8(b).unwrap_or_default())
            })
            .flatten()
    }

    /// The number in column `name`; none when the column is missing or the cell empty.
    fn number(&self, name: &str) -> Result<Option<f64>, String> {
        match self.get(name).map(str::trim) {
            None | Some("") => Ok(None),
            Some(t) => t
                .parse::<f64>()
                .map(Some)
                .map_err(|_| format!("{name} `{t}` is not a number")),
        }
    }
}

/// Hands one record on line `line` to `sink`: a row, a failed run of an export, or why it
/// cannot be read.
fn record(cells: &Cells<'_>, line: usize, export: bool, sink: &mut dyn Rows) -> anyhow::Result<()> {
    let value = cells.get("value").unwrap_or_default();
    if export && value.trim().is_empty() {
        // A failed run of an export: it has an error, no number.
        sink.failed_run();
        return Ok(());
    }
    let (run, wall, user, sys, max_rss) = match measures(cells, export) {
        Ok(p) => p,
        Err(why) => {
            sink.unparsable(line, why);
            return Ok(());
        }
    };
    // `time` (seconds) is the exact one where an export gives both.
    let (timestamp, time_column) = match cells.get("time") {
        Some(t) if !t.trim().is_empty() => (Some(Field::Text(t.into())), "time"),
        _ => (
            cells.get("timestamp").map(|t| Field::Text(t.into())),
            "timestamp",
        ),
    };
    sink.row(
        Row {
            line,
            commit: cells.get("commit").unwrap_or_default().trim().into(),
            test: cells.get("test").unwrap_or_default().trim().into(),
            value: if value.trim().is_empty() {
                Field::Missing
            } else {
                Field::Text(value.into())
            },
            timestamp,
            time_column,
            round: cells.get("round").and_then(opt).map(Into::into),
            machine: cells.get("machine").and_then(opt).map(Into::into),
            run,
            wall,
            user,
            sys,
            max_rss: max_rss.filter(|m| *m >= 0.0).map(|m| m as u64),
            ..Row::default()
        },
        export,
    )
}

/// A record's run (an export's window and moment), then its wall, user, sys and max_rss.
type Measures = (
    Option<ExportedRun>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

/// A record's run and its wall, user, sys and max_rss columns, or why one of them cannot be
/// read.
fn measures(cells: &Cells<'_>, export: bool) -> Result<Measures, String> {
    let run = if export {
        let window = match cells.get("window").map(str::trim) {
            None | Some("") => None,
            Some(w) => Some(
                u64::from_str_radix(w, 16)
                    .map_err(|_| format!("window `{w}` is not 16 hex digits"))?,
            )
            .filter(|&w| w != 0),
        };
        let moment = match cells.number("moment")? {
            Some(m) if m >= 0.0 && m <= f64::from(u32::MAX) && m.fract() == 0.0 => m as u32,
            None => 0,
            Some(m) => return Err(format!("moment `{m}` is not a count")),
        };
        Some(ExportedRun { window, moment })
    } else {
        None
    };
    Ok((
        run,
        cells.number("wall")?,
        cells.number("user")?,
        cells.number("sys")?,
        cells.number("max_rss")?,
    ))
}

/// A record's text, or a usage error naming its line when it is not UTF-8.
fn utf8(rec: &::csv::ByteRecord, file: &str, line: usize) -> anyhow::Result<()> {
    if std::str::from_utf8(rec.as_slice()).is_err() {
        crate::usage!("{file}:{line}: not UTF-8 text; is this a CSV or JSON file?");
    }
    Ok(())
}

/// What a CSV error says, without the csv crate's own position.
fn why(e: &::csv::Error) -> String {
    e.to_string()
}

/// The line breaks the reader has passed and not yet been asked about: the offsets of the
/// `\r` and `\n` bytes read ahead (a buffer's worth at most), and the lines before them.
#[derive(Clone, Default)]
struct Lines(Rc<RefCell<LineState>>);

#[derive(Default)]
struct LineState {
    breaks: VecDeque<(u64, bool)>,
    /// Line feeds before the first offset in `breaks`.
    before: usize,
}

impl Lines {
    /// The 1-based line of byte `off` (offsets asked for never go back), counting line
    /// feeds; `past_breaks`: the line breaks at `off` (where the reader may say a record
    /// starts) belong before it.
    fn line_of(&self, off: u64, past_breaks: bool) -> usize {
        let mut st = self.0.borrow_mut();
        while let Some(&(at, lf)) = st.breaks.front() {
            if at >= off {
                break;
            }
            st.breaks.pop_front();
            st.before += usize::from(lf);
        }
        let mut line = st.before;
        if past_breaks {
            for (at, &(b, lf)) in (off..).zip(st.breaks.iter()) {
                if b != at {
                    break;
                }
                line += usize::from(lf);
            }
        }
        line + 1
    }
}

/// A reader that notes where the line breaks are as bytes go through.
struct Counting<R> {
    inner: R,
    lines: Lines,
    at: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut st = self.lines.0.borrow_mut();
        for i in memchr::memchr2_iter(b'\n', b'\r', &buf[..n]) {
            st.breaks.push_back((self.at + i as u64, buf[i] == b'\n'));
        }
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_line_feeds_and_skip_the_breaks_a_record_starts_on() {
        let text = b"a\r\nb\r\n\r\nc\nd";
        let lines = Lines::default();
        let mut r = Counting {
            inner: &text[..],
            lines: lines.clone(),
            at: 0,
        };
        let mut sink = Vec::new();
        r.read_to_end(&mut sink).unwrap();
        assert_eq!(lines.line_of(0, false), 1);
        // A record said to start at the CR of line 1's break is on line 2.
        assert_eq!(lines.line_of(1, true), 2);
        assert_eq!(lines.line_of(3, false), 2);
        // Past the blank line: line 4.
        assert_eq!(lines.line_of(6, true), 4);
        assert_eq!(lines.line_of(11, false), 5);
    }
}
