//! Where the rows of an import go, whatever file they came from: each checked (its test, its
//! commit, its value and timestamp), looked up among the samples already stored, and written
//! into its test's batch; every batch commits at the end, or none does.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::Context as _;
use gix::ObjectId;

use super::keys::{self, StoredKeys};
use super::report::{Outcome, Place, Refusal, Report, Why, LISTED};
use super::row::{Field, Row, Rows};
use crate::config::Test;
use crate::error::UsageError;
use crate::pipeline::workspace::Workspace;
use crate::store::{commit_key, Appender, Import, Sample};

/// A map for names read once per row: foldhash, not SipHash (the names are the file's, and a
/// file that collides them only slows its own import).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// Texts longer than this (a round's or a machine's name) are refused: no name is that long,
/// and a record must stay well inside [`crate::store::MAX_RECORD`] to be readable.
pub(crate) const MAX_TEXT: usize = 4096;

/// The last second of the year 9999: a later timestamp (or a negative one) is no time a run
/// was measured at; in milliseconds or nanoseconds, say, it would be stored as a date
/// centuries away.
const MAX_TIME: f64 = 253_402_300_799.0;

/// Read rows into a fresh sink over `ws` with `read`, then commit every test's batch; when
/// `read` fails or a row stops the import, nothing is written (each appender cuts its file
/// back to where its batch began, and a store this import created goes). Refused rows are a
/// [`UsageError`] naming each one's place.
pub(crate) fn run(
    ws: &Workspace,
    file: &str,
    keep_all: bool,
    read: impl FnOnce(&mut Sink<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<Outcome> {
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
    let read = read(&mut sink);
    let refusal = match read {
        Err(e) => Some(e),
        Ok(()) if !sink.out.report.fatal.is_empty() => {
            let mut fatal = std::mem::take(&mut sink.out.report.fatal);
            Some(refused(file, &mut fatal))
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
pub(crate) struct Writer {
    appender: Appender,
    stored: StoredKeys,
    added: usize,
}

/// Where rows go as they are read: checked, looked up among the stored ones, and written.
pub(crate) struct Sink<'w> {
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

impl Sink<'_> {
    /// What the import has said so far, for readers that skip rows of their own.
    pub(crate) fn report(&mut self) -> &mut Report {
        &mut self.out.report
    }
}

impl Rows for Sink<'_> {
    fn unparsable(&mut self, line: usize, why: String) {
        self.out.report.unparsable(Place::Line(line), why);
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
            report.skip(row.place(), Why::UnknownTest, why);
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
                report.refuse(row.place(), Why::UnknownCommit, why);
                return Ok(());
            }
        };
        let s = match sample(&row, test_hash, id, self.recipe) {
            Ok(s) => s,
            Err(r) => {
                report.refuse(row.place(), Why::BadRow, r);
                return Ok(());
            }
        };
        if !report.fatal.is_empty() {
            // The import stops at the end: the rest is only read for what else is wrong
            // (whatever the file holds, no record is written that a load could not read).
            if let Err(e) = crate::store::encode_frame(&s) {
                report.fatal.push((row.place(), format!("{e:#}")));
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
                self.out.report.fatal.push((row.place(), format!("{e:#}")));
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

/// The usage error (exit 2) of rows that stop an import, each named by its place.
fn refused(file: &str, fatal: &mut [(Place, String)]) -> anyhow::Error {
    fatal.sort_by(|a, b| a.0.cmp(&b.0));
    let mut msg = String::new();
    for (k, (place, why)) in fatal.iter().enumerate() {
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
        msg.push_str(&format!("{}: {why}", place.after(file)));
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
            origin: row.origin.clone(),
            spread: row.spread.clone(),
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
