//! `perfbisect import FILE [--format csv|json]`: take in results measured elsewhere (a cron
//! job's rounds). Every row is checked before anything is written; rows naming an unknown
//! commit or test, or whose value or timestamp cannot be read, are reported with their line and
//! skipped. Rows that could only be stored wrong stop the import (exit 2, nothing written):
//! a commit named by a position (`HEAD`, a branch) instead of an id or tag, a timestamp outside
//! 1970..=9999, a text too long for a record. The new samples of each test are added in one
//! atomic rewrite of its store file, so a bad file or a crash never leaves half an import.
//!
//! Rows already stored are not added again, counted with multiplicity: a cron row is the same
//! row when commit, value, timestamp, round and machine are; a run of an export (`show --format
//! json|csv`, which names each run's window and moment) is the same run as a stored one with
//! the same commit, window, moment, time and value, so importing an export into the cache it
//! came from adds nothing, and into an empty one exactly the runs it lists.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context as _;
use gix::ObjectId;

use crate::cli::{Global, ImportArgs, ImportFormat};
use crate::config::Test;
use crate::error::UsageError;
use crate::pipeline::Workspace;
use crate::store::{commit_key, Import, Sample};

use super::{locations, verbosity};

/// Problems listed one by one before the rest are only counted (`-v` lists all).
const LISTED: usize = 50;

/// Texts longer than this (a round's or a machine's name) are refused: no name is that long,
/// and a record must stay well inside [`crate::store::MAX_RECORD`] to be readable.
const MAX_TEXT: usize = 4096;

/// The last second of the year 9999: a later timestamp (or a negative one) is no time a run
/// was measured at; in milliseconds or nanoseconds, say, it would be stored as a date
/// centuries away.
const MAX_TIME: f64 = 253_402_300_799.0;

/// One row as read, before it is checked.
#[derive(Debug, Default)]
struct Row {
    line: usize,
    commit: String,
    test: String,
    value: Field,
    timestamp: Option<Field>,
    /// The column (or key) the timestamp was read from, for messages.
    time_column: &'static str,
    round: Option<String>,
    machine: Option<String>,
    /// A run listed by an export (`show --format json|csv`), with its window and moment.
    run: Option<ExportedRun>,
    /// Wall, user and sys seconds and the max RSS, when the file gives them (exports do).
    wall: Option<f64>,
    user: Option<f64>,
    sys: Option<f64>,
    max_rss: Option<u64>,
}

/// What an export says about one run besides its value: the window it was measured in (`None`
/// for a sample that was itself imported) and its back-to-back group there.
#[derive(Debug, Clone, Copy, Default)]
struct ExportedRun {
    window: Option<u64>,
    moment: u32,
}

/// A cell that may hold a number or text (CSV cells are text; JSON may give either).
#[derive(Debug, Clone, Default)]
enum Field {
    #[default]
    Missing,
    Text(String),
    Number(f64),
}

/// Why rows were skipped, for the counts at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Why {
    UnknownCommit,
    UnknownTest,
    BadRow,
}

impl Why {
    fn label(self) -> &'static str {
        match self {
            Why::UnknownCommit => "unknown commit",
            Why::UnknownTest => "unknown test",
            Why::BadRow => "unparsable",
        }
    }
}

/// What an import found, and said.
#[derive(Default)]
struct Report {
    problems: Vec<(usize, Why, String)>,
    /// Rows that stop the import: they could only be stored wrong (line, why).
    fatal: Vec<(usize, String)>,
    /// Records that never became a [`Row`] (the rows read are these and the rows parsed).
    unparsed: usize,
    /// Failed runs of an export (no value): there is no number to import.
    failed_runs: usize,
}

/// Why a row is not imported: it is skipped, or it stops the import.
#[derive(Debug, Clone)]
enum Refusal {
    Skip(String),
    Fatal(String),
}

impl Report {
    fn refuse(&mut self, line: usize, why: Why, r: Refusal) {
        match r {
            Refusal::Skip(reason) => self.skip(line, why, reason),
            Refusal::Fatal(reason) => self.fatal.push((line, reason)),
        }
    }

    fn skip(&mut self, line: usize, why: Why, reason: String) {
        self.problems.push((line, why, reason));
    }

    /// A record that is no row at all.
    fn unparsable(&mut self, line: usize, reason: String) {
        self.unparsed += 1;
        self.skip(line, Why::BadRow, reason);
    }
}

/// What makes a row the same as a stored sample: imported twice, it is stored once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// A run of a measuring window (one perfbisect made, or the import of an export of one):
    /// the window is a random id per session, so window, moment, time and value name the run.
    Run {
        commit: [u8; 20],
        window: u64,
        moment: u32,
        time: u64,
        value: u64,
    },
    /// A cron row: everything it says.
    Row {
        commit: [u8; 20],
        value: u64,
        time: u64,
        import: Import,
    },
    /// An imported sample as an export lists it again: the round only as its number, no
    /// machine.
    Exported {
        commit: [u8; 20],
        value: u64,
        time: u64,
        round: u32,
    },
}

impl Key {
    /// The keys a stored sample answers to (none for a failed run).
    fn stored(s: &Sample) -> Vec<Key> {
        let Some(v) = s.value else {
            return Vec::new();
        };
        let (commit, value, time) = (s.commit, v.to_bits(), s.time);
        if s.window != 0 {
            return vec![Key::Run {
                commit,
                window: s.window,
                moment: s.moment,
                time,
                value,
            }];
        }
        let Some(import) = &s.import else {
            return Vec::new();
        };
        vec![
            Key::Row {
                commit,
                value,
                time,
                import: import.clone(),
            },
            Key::Exported {
                commit,
                value,
                time,
                round: s.round,
            },
        ]
    }

    /// The key an imported row's sample is looked up by.
    fn new_row(s: &Sample, exported: bool) -> Key {
        let value = s.value.map_or(0, f64::to_bits);
        if s.window != 0 {
            Key::Run {
                commit: s.commit,
                window: s.window,
                moment: s.moment,
                time: s.time,
                value,
            }
        } else if exported {
            Key::Exported {
                commit: s.commit,
                value,
                time: s.time,
                round: s.round,
            }
        } else {
            Key::Row {
                commit: s.commit,
                value,
                time: s.time,
                import: s.import.clone().unwrap_or_default(),
            }
        }
    }
}

pub fn import(g: &Global, args: ImportArgs) -> anyhow::Result<()> {
    let file = crate::pipeline::display_path(&args.file);
    let bytes = std::fs::read(&args.file)
        .map_err(|e| UsageError::err(format!("cannot read {file}: {e}")))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        UsageError::err(format!(
            "{file}:{line}: not UTF-8 text; is this a CSV or JSON file?"
        ))
    })?;
    let format = args
        .format
        .unwrap_or_else(|| guess_format(&args.file, text));
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let mut report = Report::default();
    let mut rows = Vec::new();
    match format {
        ImportFormat::Csv => read_csv(text, &file, &mut rows, &mut report)?,
        ImportFormat::Json => read_json(text, &file, &mut rows, &mut report)?,
    }

    let recipe = ws.config.build.recipe_hash();
    let mut commits: HashMap<&str, Result<ObjectId, Refusal>> = HashMap::new();
    let mut test_of: HashMap<&str, Option<&Test>> = HashMap::new();
    // Each sample with whether it came from an export (see `Key`).
    let mut per_test: HashMap<String, Vec<(Sample, bool)>> = HashMap::new();
    for row in &rows {
        let test = *test_of
            .entry(row.test.as_str())
            .or_insert_with(|| ws.config.tests.get(row.test.as_str()));
        let Some(test) = test else {
            let why = if row.test.is_empty() {
                "no test named".to_string()
            } else {
                format!(
                    "test `{}` is not in {}{}",
                    row.test,
                    crate::pipeline::display_path(&ws.config.path),
                    crate::error::did_you_mean(
                        &row.test,
                        ws.config.tests.keys().map(String::as_str)
                    )
                )
            };
            report.skip(row.line, Why::UnknownTest, why);
            continue;
        };
        let id = match commits
            .entry(row.commit.as_str())
            .or_insert_with(|| resolve(&ws, &row.commit))
        {
            Ok(id) => *id,
            Err(why) => {
                report.refuse(row.line, Why::UnknownCommit, why.clone());
                continue;
            }
        };
        match sample(row, test, id, recipe) {
            Ok(s) => per_test
                .entry(test.name.clone())
                .or_default()
                .push((s, row.run.is_some())),
            Err(r) => report.refuse(row.line, Why::BadRow, r),
        }
    }
    if !report.fatal.is_empty() {
        return Err(refused(&file, &mut report.fatal));
    }

    // Only what is new: rows already stored (from an earlier import of the same file) are
    // not added again, counted with multiplicity so a row listed twice is stored twice.
    let store = ws.cache.store();
    let mut imported = 0usize;
    let mut already = 0usize;
    let mut tests: Vec<&String> = per_test.keys().collect();
    tests.sort();
    let mut added_commits = std::collections::HashSet::new();
    let mut plan: Vec<(&String, Vec<Sample>)> = Vec::new();
    for name in tests {
        let loaded = store
            .load(name)
            .with_context(|| format!("cannot read the result store of test `{name}`"))?;
        let mut have: HashMap<Key, usize> = HashMap::new();
        for s in &loaded.samples {
            for k in Key::stored(s) {
                *have.entry(k).or_default() += 1;
            }
        }
        let mut new = Vec::new();
        for (s, exported) in &per_test[name] {
            let k = Key::new_row(s, *exported);
            match have.get_mut(&k) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    already += 1;
                }
                _ => {
                    added_commits.insert(s.commit);
                    new.push(s.clone());
                }
            }
        }
        imported += new.len();
        plan.push((name, new));
    }
    // Everything was checked above: now each test's file gets its new samples in one rewrite.
    for (name, new) in &plan {
        store
            .add_atomically(name, new)
            .with_context(|| format!("cannot add the imported samples of test `{name}`"))?;
    }

    print_problems(&ws, &file, &report);
    let skipped = report.problems.len();
    let mut by_why: std::collections::BTreeMap<Why, usize> = Default::default();
    for (_, w, _) in &report.problems {
        *by_why.entry(*w).or_default() += 1;
    }
    let skipped_text = if skipped == 0 {
        String::new()
    } else {
        format!(
            "; skipped {skipped} ({})",
            by_why
                .iter()
                .map(|(w, n)| format!("{n} {}", w.label()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let read = rows.len() + report.unparsed + report.failed_runs;
    let failed_text = match report.failed_runs {
        0 => String::new(),
        1 => "; 1 failed run (no value) not imported".to_string(),
        n => format!("; {n} failed runs (no value) not imported"),
    };
    println!(
        "{file}: {read} row{} read; imported {imported} sample{} of {} test{} on {} commit{}; {already} already in the store{failed_text}{skipped_text}",
        if read == 1 { "" } else { "s" },
        if imported == 1 { "" } else { "s" },
        plan.iter().filter(|(_, n)| !n.is_empty()).count(),
        if plan.iter().filter(|(_, n)| !n.is_empty()).count() == 1 { "" } else { "s" },
        added_commits.len(),
        if added_commits.len() == 1 { "" } else { "s" },
    );
    if imported + already + report.failed_runs == 0 {
        anyhow::bail!("nothing in {file} could be imported (every row was skipped)");
    }
    Ok(())
}

fn print_problems(ws: &Workspace, file: &str, report: &Report) {
    let mut problems: Vec<&(usize, Why, String)> = report.problems.iter().collect();
    problems.sort_by_key(|(line, _, _)| *line);
    let all = ws.verbosity.verbose > 0;
    for (k, (line, _, why)) in problems.iter().enumerate() {
        if !all && k == LISTED {
            ws.note(&format!(
                "perfbisect: ... and {} more skipped rows (-v lists them all)",
                problems.len() - LISTED
            ));
            break;
        }
        ws.note(&format!("{file}:{line}: skipped: {why}"));
    }
}

/// `.json` files, or text that starts like JSON, are JSON; the rest CSV.
fn guess_format(path: &Path, text: &str) -> ImportFormat {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("json") => ImportFormat::Json,
        Some("csv") => ImportFormat::Csv,
        _ if text.trim_start().starts_with(['[', '{']) => ImportFormat::Json,
        _ => ImportFormat::Csv,
    }
}

/// A commit named by a full or abbreviated id or a tag, as a commit of this repository; a
/// name of no commit is skipped. `HEAD`, branches and `HEAD~3`-like expressions stop the
/// import: a file of results names commits, not positions relative to whatever is checked out
/// when it is imported.
fn resolve(ws: &Workspace, rev: &str) -> Result<ObjectId, Refusal> {
    match resolve_name(ws, rev.trim()) {
        Ok(Some(id)) => Ok(id),
        Ok(None) => Err(Refusal::Fatal(format!(
            "commit `{}` names a position, not a commit: HEAD, a branch or an expression point \
             to another commit as the checkout moves; name the commit by its id (full or \
             abbreviated) or a tag",
            rev.trim()
        ))),
        Err(why) => Err(Refusal::Skip(why)),
    }
}

/// [`resolve`]: the commit, `None` for a position (HEAD, a branch), or why there is none.
fn resolve_name(ws: &Workspace, rev: &str) -> Result<Option<ObjectId>, String> {
    if rev.is_empty() {
        return Err("no commit named".into());
    }
    let gix = ws.repo.gix();
    let repo = crate::pipeline::display_path(ws.repo.dir());
    let unknown = || format!("unknown commit `{rev}`: no commit or tag of that name in {repo}");
    let commit_of = |spec: &str| -> Option<Result<Option<ObjectId>, String>> {
        let id = gix.rev_parse_single(spec).ok()?;
        Some(
            match id.object().ok().and_then(|o| o.peel_to_commit().ok()) {
                Some(c) => Ok(Some(c.id)),
                None => Err(format!("`{rev}` is not a commit")),
            },
        )
    };
    let hex = (4..=40).contains(&rev.len()) && rev.bytes().all(|b| b.is_ascii_hexdigit());
    if hex && rev.len() == 40 {
        let id = ObjectId::from_hex(rev.as_bytes()).map_err(|e| format!("`{rev}`: {e}"))?;
        return match gix.find_commit(id) {
            Ok(_) => Ok(Some(id)),
            Err(_) => Err(format!(
                "commit {rev} is not in {repo} (another clone, or rebased away?)"
            )),
        };
    }
    if hex {
        // An abbreviated id, looked up as one: a branch named like hex digits is not asked.
        let prefix = gix::hash::Prefix::from_hex(rev).map_err(|e| format!("`{rev}`: {e}"))?;
        return match gix.objects.lookup_prefix(prefix, None) {
            Ok(Some(Ok(id))) => commit_of(&id.to_string()).unwrap_or_else(|| Err(unknown())),
            Ok(Some(Err(()))) => Err(format!(
                "`{rev}` is ambiguous: several objects start with it; give more hex digits"
            )),
            Ok(None) | Err(_) => Err(unknown()),
        };
    }
    let expression = rev.contains(['~', '^', ':', '@', ' ']) || rev.contains("..");
    if !expression {
        if let Some(tagged) = commit_of(&format!("refs/tags/{rev}")) {
            return tagged;
        }
    }
    if expression || commit_of(rev).is_some() {
        return Ok(None);
    }
    Err(unknown())
}

/// The usage error (exit 2) of rows that stop an import, each named by its line.
fn refused(file: &str, fatal: &mut [(usize, String)]) -> anyhow::Error {
    fatal.sort_by_key(|(line, _)| *line);
    let mut msg = String::new();
    for (k, (line, why)) in fatal.iter().enumerate() {
        if k == LISTED {
            msg.push_str(&format!(
                "\n... and {} more such rows",
                fatal.len() - LISTED
            ));
            break;
        }
        if k > 0 {
            msg.push('\n');
        }
        msg.push_str(&format!("{file}:{line}: {why}"));
    }
    let n = fatal.len();
    msg.push_str(&format!(
        "\nnothing was imported: {} of {file} cannot be stored as {}",
        if n == 1 {
            "a row".to_string()
        } else {
            format!("{n} rows")
        },
        if n == 1 { "it is" } else { "they are" }
    ));
    UsageError::err(msg)
}

/// A row as an imported sample, or why it cannot be one.
fn sample(row: &Row, test: &Test, id: ObjectId, recipe: u64) -> Result<Sample, Refusal> {
    let value = match &row.value {
        Field::Missing => return Err(Refusal::Skip("no value".into())),
        Field::Number(v) => *v,
        Field::Text(t) => t
            .trim()
            .parse::<f64>()
            .map_err(|_| Refusal::Skip(format!("value `{t}` is not a number")))?,
    };
    if !value.is_finite() {
        return Err(Refusal::Skip(format!(
            "value `{value}` is not a finite number"
        )));
    }
    let col = row.time_column;
    let time = match &row.timestamp {
        None | Some(Field::Missing) => 0,
        Some(Field::Number(t)) => seconds(*t, &t.to_string(), col)?,
        Some(Field::Text(t)) => parse_time(t, col)?,
    };
    for (name, text) in [("round", &row.round), ("machine", &row.machine)] {
        if let Some(t) = text.as_deref().filter(|t| t.len() > MAX_TEXT) {
            return Err(Refusal::Fatal(format!(
                "`{name}` is {} bytes long; a name of at most {MAX_TEXT} bytes is stored",
                t.len()
            )));
        }
    }
    let round = row
        .round
        .as_deref()
        .and_then(|r| r.trim().trim_start_matches(['R', 'r']).parse::<u32>().ok())
        .unwrap_or(0);
    let run = row.run.unwrap_or_default();
    let window = run.window.unwrap_or(0);
    let s = Sample {
        commit: commit_key(&id),
        test_hash: test.definition_hash(),
        recipe_hash: recipe,
        time,
        round,
        wall: row.wall.unwrap_or(0.0),
        user: row.user.unwrap_or(0.0),
        sys: row.sys.unwrap_or(0.0),
        max_rss: row.max_rss.unwrap_or(0),
        value: Some(value),
        error: None,
        fingerprint: 0,
        import: Some(Import {
            // A run of a window has its own round number (`round` above); a cron's round
            // names its round.
            round: if window != 0 { None } else { row.round.clone() },
            machine: row.machine.clone(),
        }),
        // An exported run keeps its window and moment: runs taken back to back stay one
        // measurement, and it stays the same run if imported again.
        window,
        moment: if window != 0 { run.moment } else { 0 },
    };
    // Whatever the file holds, no record is written that a load could not read back.
    crate::store::encode_frame(&s).map_err(|e| Refusal::Fatal(format!("{e:#}")))?;
    Ok(s)
}

/// Seconds since the epoch `t` (as written: `text`) in column `col`, if it is a time.
fn seconds(t: f64, text: &str, col: &str) -> Result<u64, Refusal> {
    if !t.is_finite() {
        return Err(Refusal::Skip(format!("{col} `{text}` is not a time")));
    }
    if !(0.0..=MAX_TIME).contains(&t) {
        let hint = if t > MAX_TIME && t <= MAX_TIME * 1e9 {
            " (milliseconds or nanoseconds? the column holds seconds)"
        } else {
            ""
        };
        return Err(Refusal::Fatal(format!(
            "{col} `{text}` is out of range: seconds since 1970, before the year 10000{hint}"
        )));
    }
    Ok(t as u64)
}

/// Seconds since the epoch, or an RFC 3339 date (`2026-08-14T13:51:24Z`, `2026-08-14 13:51:24`).
fn parse_time(t: &str, col: &str) -> Result<u64, Refusal> {
    let t = t.trim();
    if t.is_empty() {
        return Ok(0);
    }
    if let Ok(n) = t.parse::<f64>() {
        if n.is_finite() {
            return seconds(n, t, col);
        }
    }
    humantime::parse_rfc3339_weak(t)
        .ok()
        .and_then(|st| st.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .ok_or_else(|| {
            Refusal::Skip(format!(
                "{col} `{t}` is neither seconds since 1970 nor a date like 2026-08-14T13:51:24Z"
            ))
        })
}

/// Empty cells are absent.
fn opt(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The columns a CSV may have: a cron's (the first six) and those `show --format csv` adds.
const COLUMNS: [&str; 16] = [
    "commit",
    "test",
    "value",
    "timestamp",
    "round",
    "machine",
    "time",
    "window",
    "moment",
    "wall",
    "user",
    "sys",
    "max_rss",
    "error",
    "unit",
    "fingerprint",
];

/// Position of a column in [`COLUMNS`].
fn column(name: &str) -> usize {
    COLUMNS
        .iter()
        .position(|c| *c == name)
        .expect("a known column")
}

/// The 1-based line of byte `off` of `text`, counting line feeds (a CRLF file's lines too).
fn line_at(text: &str, off: usize) -> usize {
    text.as_bytes()[..off.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn read_csv(
    text: &str,
    file: &str,
    rows: &mut Vec<Row>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(false)
        .from_reader(text.as_bytes());
    let mut rec = csv::ByteRecord::new();
    // The header: the columns by name, in any order; the first three are required.
    let mut col = [usize::MAX; COLUMNS.len()];
    match rdr.read_byte_record(&mut rec) {
        Ok(false) => crate::usage!(
            "{file}: empty file; expected a header `commit,test,value[,timestamp,round,machine]`"
        ),
        Ok(true) => {}
        Err(e) => crate::usage!("{file}: cannot read the header: {e}"),
    }
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
    // `show --format csv` names each run's window: its rows are runs, compared as such.
    let export = col[column("window")] != usize::MAX;
    let width = rec.len();
    let text_of = |raw: &[u8]| String::from_utf8_lossy(raw).into_owned();
    loop {
        let pos = rdr.position().clone();
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let off = e.position().map_or(pos.byte(), |p| p.byte()) as usize;
                report.unparsable(line_at(text, off), format!("{e}"));
                continue;
            }
        }
        // From the byte offset, past the line break the reader may count as the record's
        // start: its own line count is one short in a CRLF file.
        let start = rec.position().map_or(pos.byte(), |p| p.byte()) as usize;
        let skip = text.as_bytes()[start.min(text.len())..]
            .iter()
            .take_while(|b| matches!(b, b'\r' | b'\n'))
            .count();
        let line = line_at(text, start + skip);
        if rec.len() == 1
            && rec
                .get(0)
                .is_some_and(|c| c.iter().all(u8::is_ascii_whitespace))
        {
            continue; // a blank line
        }
        if rec.len() != width {
            report.unparsable(
                line,
                format!("{} fields, the header has {width}", rec.len()),
            );
            continue;
        }
        let cell = |name: &str| {
            let i = col[column(name)];
            (i != usize::MAX).then(|| rec.get(i).map(text_of)).flatten()
        };
        let value = cell("value").unwrap_or_default();
        if export && value.trim().is_empty() {
            // A failed run of an export: it has an error, no number.
            report.failed_runs += 1;
            continue;
        }
        let number = |name: &str| -> Result<Option<f64>, String> {
            match cell(name).as_deref().map(str::trim) {
                None | Some("") => Ok(None),
                Some(t) => t
                    .parse::<f64>()
                    .map(Some)
                    .map_err(|_| format!("{name} `{t}` is not a number")),
            }
        };
        let parsed = (|| -> Result<_, String> {
            let run = if export {
                let window = match cell("window").as_deref().map(str::trim) {
                    None | Some("") => None,
                    Some(w) => Some(
                        u64::from_str_radix(w, 16)
                            .map_err(|_| format!("window `{w}` is not 16 hex digits"))?,
                    )
                    .filter(|&w| w != 0),
                };
                let moment = match number("moment")? {
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
                number("wall")?,
                number("user")?,
                number("sys")?,
                number("max_rss")?,
            ))
        })();
        let (run, wall, user, sys, max_rss) = match parsed {
            Ok(p) => p,
            Err(why) => {
                report.unparsable(line, why);
                continue;
            }
        };
        // `time` (seconds) is the exact one where an export gives both.
        let (timestamp, time_column) = match cell("time") {
            Some(t) if !t.trim().is_empty() => (Some(Field::Text(t)), "time"),
            _ => (cell("timestamp").map(Field::Text), "timestamp"),
        };
        rows.push(Row {
            line,
            commit: cell("commit").unwrap_or_default().trim().to_string(),
            test: cell("test").unwrap_or_default().trim().to_string(),
            value: if value.trim().is_empty() {
                Field::Missing
            } else {
                Field::Text(value)
            },
            timestamp,
            time_column,
            round: cell("round").as_deref().and_then(opt),
            machine: cell("machine").as_deref().and_then(opt),
            run,
            wall,
            user,
            sys,
            max_rss: max_rss.filter(|m| *m >= 0.0).map(|m| m as u64),
        });
    }
    Ok(())
}

/// One object of a JSON file: a row, or a commit of `show --format json`.
#[derive(serde::Deserialize)]
struct JsonRow<'a> {
    #[serde(borrow)]
    commit: Option<&'a str>,
    #[serde(borrow)]
    test: Option<&'a str>,
    value: Option<serde_json::Value>,
    timestamp: Option<serde_json::Value>,
    round: Option<serde_json::Value>,
    machine: Option<String>,
    /// `show --format json`: the values of the commit's runs, or else its median.
    values: Option<Vec<f64>>,
    median: Option<f64>,
    /// `show --format json`'s `samples`: each run's time in seconds, window (16 hex digits,
    /// `null` for an imported sample), moment and resources.
    time: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    window: Option<serde_json::Value>,
    moment: Option<u32>,
    wall: Option<f64>,
    user: Option<f64>,
    sys: Option<f64>,
    max_rss: Option<u64>,
}

/// A key that is there, even as `null`, is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

#[derive(serde::Deserialize)]
struct ShowJson<'a> {
    #[serde(borrow)]
    test: &'a str,
    #[serde(borrow)]
    commits: Vec<&'a serde_json::value::RawValue>,
    /// Every stored run, each once: what is imported when it is there (the commits' `values`
    /// carry no times or windows, so they are read only from exports without it).
    #[serde(borrow, default)]
    samples: Option<Vec<&'a serde_json::value::RawValue>>,
}

fn read_json(
    text: &str,
    file: &str,
    rows: &mut Vec<Row>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let not_json = |e: serde_json::Error| {
        UsageError::err(format!(
            "{file}:{}:{}: not the JSON import expects (an array of objects with commit, test and value, or the output of `show --format json`): {e}",
            e.line(),
            e.column()
        ))
    };
    let line_of = |raw: &serde_json::value::RawValue| {
        line_at(text, raw.get().as_ptr() as usize - text.as_ptr() as usize)
    };
    let (items, show_test, runs): (Vec<&serde_json::value::RawValue>, Option<&str>, bool) =
        if text.trim_start().starts_with('{') {
            let show: ShowJson = serde_json::from_str(text).map_err(not_json)?;
            match show.samples {
                Some(samples) => (samples, Some(show.test), true),
                None => (show.commits, Some(show.test), false),
            }
        } else {
            (serde_json::from_str(text).map_err(not_json)?, None, false)
        };
    for raw in items {
        let line = line_of(raw);
        let r: JsonRow = match serde_json::from_str(raw.get()) {
            Ok(r) => r,
            Err(e) => {
                report.unparsable(line, format!("not a row object: {e}"));
                continue;
            }
        };
        let Some(commit) = r.commit else {
            report.unparsable(line, "no `commit`".into());
            continue;
        };
        let Some(test) = r.test.or(show_test) else {
            report.unparsable(line, "no `test`".into());
            continue;
        };
        let text_of = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let round = r.round.as_ref().and_then(text_of);
        // `time` (seconds) is the exact one where an export gives both.
        let (time, time_column) = match &r.time {
            Some(t) if !t.is_null() => (Some(t), "time"),
            _ => (r.timestamp.as_ref(), "timestamp"),
        };
        let timestamp = match time {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Number(n)) => Some(Field::Number(n.as_f64().unwrap_or(-1.0))),
            Some(serde_json::Value::String(s)) => Some(Field::Text(s.clone())),
            Some(other) => {
                report.unparsable(line, format!("{time_column} `{other}` is not a time"));
                continue;
            }
        };
        // A run of an export (a row with a `window` key, `null` or not).
        let run = match &r.window {
            None => None,
            Some(serde_json::Value::Null) => Some(ExportedRun {
                window: None,
                moment: r.moment.unwrap_or(0),
            }),
            Some(serde_json::Value::String(w)) => match u64::from_str_radix(w, 16) {
                Ok(w) => Some(ExportedRun {
                    window: Some(w).filter(|&w| w != 0),
                    moment: r.moment.unwrap_or(0),
                }),
                Err(_) => {
                    report.unparsable(line, format!("window `{w}` is not 16 hex digits"));
                    continue;
                }
            },
            Some(other) => {
                report.unparsable(line, format!("window `{other}` is not 16 hex digits"));
                continue;
            }
        };
        if runs && matches!(r.value, None | Some(serde_json::Value::Null)) {
            // A failed run of an export: it has an error, no number.
            report.failed_runs += 1;
            continue;
        }
        let values: Vec<Field> = match (&r.value, &r.values, r.median) {
            (Some(serde_json::Value::Number(n)), _, _) => {
                vec![Field::Number(n.as_f64().unwrap_or(f64::NAN))]
            }
            (Some(serde_json::Value::String(s)), _, _) => vec![Field::Text(s.clone())],
            (Some(serde_json::Value::Null) | None, Some(vs), _) => {
                vs.iter().map(|&v| Field::Number(v)).collect()
            }
            (Some(serde_json::Value::Null) | None, None, Some(m)) => vec![Field::Number(m)],
            // `show` lists commits without results too: nothing to import there.
            (Some(serde_json::Value::Null) | None, None, None) if show_test.is_some() => continue,
            (Some(other), _, _) => {
                report.unparsable(line, format!("value `{other}` is not a number"));
                continue;
            }
            (None, None, None) => vec![Field::Missing],
        };
        for value in values {
            rows.push(Row {
                line,
                commit: commit.trim().to_string(),
                test: test.trim().to_string(),
                value,
                timestamp: timestamp.clone(),
                time_column,
                round: round.clone(),
                machine: r.machine.clone(),
                run,
                wall: r.wall,
                user: r.user,
                sys: r.sys,
                max_rss: r.max_rss,
            });
        }
    }
    Ok(())
}
