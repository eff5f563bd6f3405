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
mod json;
mod keys;
mod row;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anyhow::Context as _;
use gix::ObjectId;

use crate::config::Test;
use crate::error::UsageError;
use crate::pipeline::workspace::Workspace;
use crate::store::{commit_key, Appender, Import, Sample};

use keys::StoredKeys;
use row::{Field, Row, Rows};

/// A map for names read once per row: foldhash, not SipHash (the names are the file's, and a
/// file that collides them only slows its own import).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// Problems listed one by one before the rest are only counted (`-v` lists all).
pub const LISTED: usize = 50;

/// Texts longer than this (a round's or a machine's name) are refused: no name is that long,
/// and a record must stay well inside [`crate::store::MAX_RECORD`] to be readable.
const MAX_TEXT: usize = 4096;

/// The last second of the year 9999: a later timestamp (or a negative one) is no time a run
/// was measured at; in milliseconds or nanoseconds, say, it would be stored as a date
/// centuries away.
const MAX_TIME: f64 = 253_402_300_799.0;

/// Why rows were skipped, for the counts at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Why {
    UnknownCommit,
    UnknownTest,
    BadRow,
}

impl Why {
    pub fn label(self) -> &'static str {
        match self {
            Why::UnknownCommit => "unknown commit",
            Why::UnknownTest => "unknown test",
            Why::BadRow => "unparsable",
        }
    }
}

/// What an import found, and said.
#[derive(Default)]
pub struct Report {
    /// Rows skipped, with their line and why: the first [`LISTED`] (all with `keep_all`).
    pub problems: Vec<(usize, Why, String)>,
    /// Rows skipped, by why (all of them).
    pub skipped: BTreeMap<Why, usize>,
    /// Keep every problem, not only the first [`LISTED`] (`-v`).
    pub keep_all: bool,
    /// Rows that stop the import: they could only be stored wrong (line, why).
    fatal: Vec<(usize, String)>,
    /// Records that never became a [`Row`] (the rows read are these and the rows parsed).
    pub unparsed: usize,
    /// Rows parsed.
    pub rows: usize,
    /// Failed runs of an export (no value): there is no number to import.
    pub failed_runs: usize,
}

/// Why a row is not imported: it is skipped, or it stops the import.
#[derive(Debug, Clone)]
pub(crate) enum Refusal {
    Skip(String),
    Fatal(String),
}

impl Report {
    pub(crate) fn refuse(&mut self, line: usize, why: Why, r: Refusal) {
        match r {
            Refusal::Skip(reason) => self.skip(line, why, reason),
            Refusal::Fatal(reason) => self.fatal.push((line, reason)),
        }
    }

    fn skip(&mut self, line: usize, why: Why, reason: String) {
        *self.skipped.entry(why).or_default() += 1;
        if self.keep_all || self.problems.len() < LISTED {
            self.problems.push((line, why, reason));
        }
    }

    /// Rows skipped, in all.
    pub fn skipped_rows(&self) -> usize {
        self.skipped.values().sum()
    }

    /// A record that is no row at all.
    pub(crate) fn unparsable(&mut self, line: usize, reason: String) {
        self.unparsed += 1;
        self.skip(line, Why::BadRow, reason);
    }
}

/// The file formats `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
}

/// What an import did.
#[derive(Default)]
pub struct Outcome {
    pub report: Report,
    /// Samples added, and of how many tests.
    pub imported: usize,
    pub tests: usize,
    /// Commits that got samples.
    pub commits: usize,
    /// Rows found already stored.
    pub already: usize,
}

impl Outcome {
    /// Rows read: parsed or not, failed runs included.
    pub fn read(&self) -> usize {
        self.report.rows + self.report.unparsed + self.report.failed_runs
    }
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
    let mut sink = Sink {
        ws,
        recipe: ws.config.build.recipe_hash(),
        commits: FastMap::default(),
        tests: FastMap::default(),
        writers: BTreeMap::new(),
        added_commits: HashSet::new(),
        created: HashSet::new(),
        out: Outcome {
            report: Report {
                keep_all,
                ..Report::default()
            },
            ..Outcome::default()
        },
    };
    let read = match format {
        Format::Csv => csv::read(
            std::io::BufReader::with_capacity(1 << 16, f),
            &file,
            &mut sink,
        ),
        Format::Json => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut bytes)
                .map_err(|e| UsageError::err(format!("cannot read {file}: {e}")))?;
            let text = utf8(&bytes, &file)?;
            json::read(text, &file, &mut sink)
        }
    };
    // Nothing counts until every batch commits: an error drops them all (each appender cuts
    // its file back to where its batch began, and a store this import created goes).
    let refusal = match read {
        Err(e) => Some(e),
        Ok(()) if !sink.out.report.fatal.is_empty() => {
            let mut fatal = std::mem::take(&mut sink.out.report.fatal);
            Some(refused(&file, &mut fatal))
        }
        Ok(()) => None,
    };
    if let Some(e) = refusal {
        let store = ws.cache.store();
        for (name, mut w) in std::mem::take(&mut sink.writers) {
            w.appender.abort();
            drop(w);
            if sink.created.contains(&name) {
                store.remove_empty(&name);
            }
        }
        return Err(e);
    }
    let mut tests = 0;
    for (name, w) in &mut sink.writers {
        if w.added > 0 {
            tests += 1;
        }
        w.appender
            .commit()
            .with_context(|| format!("cannot add the imported samples of test `{name}`"))?;
    }
    let store = ws.cache.store();
    for name in sink.writers.keys() {
        store.refresh_index(name);
    }
    let mut out = sink.out;
    out.tests = tests;
    out.commits = sink.added_commits.len();
    Ok(out)
}

/// One test's batch being written, and what it already holds.
struct Writer {
    appender: Appender,
    stored: StoredKeys,
    added: usize,
}

/// Where rows go as they are read: checked, looked up among the stored ones, and written.
struct Sink<'w> {
    ws: &'w Workspace,
    recipe: u64,
    commits: FastMap<String, Result<ObjectId, Refusal>>,
    /// The config's tests by name, with their definition hash.
    tests: FastMap<String, Option<(&'w Test, u64)>>,
    writers: BTreeMap<String, Writer>,
    added_commits: HashSet<[u8; 20]>,
    /// Tests whose store this import created (removed again when it is refused).
    created: HashSet<String>,
    out: Outcome,
}

impl Rows for Sink<'_> {
    fn unparsable(&mut self, line: usize, why: String) {
        self.out.report.unparsable(line, why);
    }

    fn failed_run(&mut self) {
        self.out.report.failed_runs += 1;
    }

    fn row(&mut self, row: Row<'_>, export: bool) -> anyhow::Result<()> {
        let report = &mut self.out.report;
        report.rows += 1;
        let ws = self.ws;
        let test = match self.tests.get(&*row.test) {
            Some(t) => *t,
            None => {
                let t = ws.config.tests.get(&*row.test);
                let t = t.map(|t| (t, t.definition_hash()));
                self.tests.insert(row.test.to_string(), t);
                t
            }
        };
        let Some((test, test_hash)) = test else {
            let why = if row.test.is_empty() {
                "no test named".to_string()
            } else {
                format!(
                    "test `{}` is not in {}{}",
                    row.test,
                    crate::base::paths::display_path(&ws.config.path),
                    crate::error::did_you_mean(
                        &row.test,
                        ws.config.tests.keys().map(String::as_str)
                    )
                )
            };
            report.skip(row.line, Why::UnknownTest, why);
            return Ok(());
        };
        let id = match self.commits.get(&*row.commit) {
            Some(r) => r.clone(),
            None => {
                let r = resolve(ws, &row.commit);
                self.commits.insert(row.commit.to_string(), r.clone());
                r
            }
        };
        let id = match id {
            Ok(id) => id,
            Err(why) => {
                report.refuse(row.line, Why::UnknownCommit, why);
                return Ok(());
            }
        };
        let s = match sample(&row, test_hash, id, self.recipe) {
            Ok(s) => s,
            Err(r) => {
                report.refuse(row.line, Why::BadRow, r);
                return Ok(());
            }
        };
        if !report.fatal.is_empty() {
            // The import stops at the end: the rest is only read for what else is wrong
            // (whatever the file holds, no record is written that a load could not read).
            if let Err(e) = crate::store::encode_frame(&s) {
                report.fatal.push((row.line, format!("{e:#}")));
            }
            return Ok(());
        }
        let w = match self.writers.get_mut(&test.name) {
            Some(w) => w,
            None => {
                let store = ws.cache.store();
                let stored = StoredKeys::load(&store, &test.name, export).with_context(|| {
                    format!("cannot read the result store of test `{}`", test.name)
                })?;
                if !store.path(&test.name).exists() {
                    self.created.insert(test.name.clone());
                }
                let mut appender = ws.appender(test)?;
                appender.begin()?;
                self.writers.entry(test.name.clone()).or_insert(Writer {
                    appender,
                    stored,
                    added: 0,
                })
            }
        };
        // Only what is new: rows already stored (from an earlier import of the same file) are
        // not added again, counted with multiplicity so a row listed twice is stored twice.
        if w.stored.take(keys::new_row(&s, export)) {
            self.out.already += 1;
            return Ok(());
        }
        if let Err(e) = w.appender.push(&s) {
            if e.downcast_ref::<crate::store::StoreError>().is_some() {
                // Too large to read back: the import stops, nothing of it is written.
                self.out.report.fatal.push((row.line, format!("{e:#}")));
                return Ok(());
            }
            return Err(e).with_context(|| {
                format!("cannot add the imported samples of test `{}`", test.name)
            });
        }
        w.added += 1;
        self.out.imported += 1;
        self.added_commits.insert(s.commit);
        Ok(())
    }
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
    let repo = crate::base::paths::display_path(ws.repo.dir());
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
fn sample(row: &Row, test_hash: u64, id: ObjectId, recipe: u64) -> Result<Sample, Refusal> {
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
        test_hash,
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
            round: if window != 0 {
                None
            } else {
                row.round.as_deref().map(crate::store::intern)
            },
            machine: row.machine.as_deref().map(crate::store::intern),
        }),
        // An exported run keeps its window and moment: runs taken back to back stay one
        // measurement, and it stays the same run if imported again.
        window,
        moment: if window != 0 { run.moment } else { 0 },
    };
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
