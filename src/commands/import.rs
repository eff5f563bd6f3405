//! `perfbisect import FILE [--format csv|json]`: take in results measured elsewhere (a cron
//! job's rounds). Every row is checked before anything is written; rows naming an unknown
//! commit or test, or whose value or timestamp cannot be read, are reported with their line and
//! skipped. The new samples of each test are added in one atomic rewrite of its store file, so
//! a bad file or a crash never leaves half an import, and rows already imported (same commit,
//! test, value, timestamp, round and machine, counted with multiplicity) are not added again.

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

/// One row as read, before it is checked.
#[derive(Debug, Default)]
struct Row {
    line: usize,
    commit: String,
    test: String,
    value: Field,
    timestamp: Option<Field>,
    round: Option<String>,
    machine: Option<String>,
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
    /// Records that never became a [`Row`] (the rows read are these and the rows parsed).
    unparsed: usize,
}

impl Report {
    fn skip(&mut self, line: usize, why: Why, reason: String) {
        self.problems.push((line, why, reason));
    }

    /// A record that is no row at all.
    fn unparsable(&mut self, line: usize, reason: String) {
        self.unparsed += 1;
        self.skip(line, Why::BadRow, reason);
    }
}

/// The key that makes a row the same row: imported twice, it is stored once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    commit: [u8; 20],
    value: u64,
    time: u64,
    import: Import,
}

impl Key {
    fn of(s: &Sample) -> Option<Key> {
        Some(Key {
            commit: s.commit,
            value: s.value?.to_bits(),
            time: s.time,
            import: s.import.clone()?,
        })
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
    let mut commits: HashMap<&str, Result<ObjectId, String>> = HashMap::new();
    let mut test_of: HashMap<&str, Option<&Test>> = HashMap::new();
    let mut per_test: HashMap<String, Vec<Sample>> = HashMap::new();
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
                report.skip(row.line, Why::UnknownCommit, why.clone());
                continue;
            }
        };
        match sample(row, test, id, recipe) {
            Ok(s) => per_test.entry(test.name.clone()).or_default().push(s),
            Err(why) => report.skip(row.line, Why::BadRow, why),
        }
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
            if let Some(k) = Key::of(s) {
                *have.entry(k).or_default() += 1;
            }
        }
        let mut new = Vec::new();
        for s in &per_test[name] {
            let k = Key::of(s).expect("imported samples have a value and a provenance");
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
    let read = rows.len() + report.unparsed;
    println!(
        "{file}: {read} row{} read; imported {imported} sample{} of {} test{} on {} commit{}; {already} already in the store{skipped_text}",
        if read == 1 { "" } else { "s" },
        if imported == 1 { "" } else { "s" },
        plan.iter().filter(|(_, n)| !n.is_empty()).count(),
        if plan.iter().filter(|(_, n)| !n.is_empty()).count() == 1 { "" } else { "s" },
        added_commits.len(),
        if added_commits.len() == 1 { "" } else { "s" },
    );
    if imported + already == 0 {
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

/// A commit named by a full or short hash or a tag, as a commit of this repository.
fn resolve(ws: &Workspace, rev: &str) -> Result<ObjectId, String> {
    let rev = rev.trim();
    if rev.is_empty() {
        return Err("no commit named".into());
    }
    let gix = ws.repo.gix();
    if rev.len() == 40 {
        if let Ok(id) = ObjectId::from_hex(rev.as_bytes()) {
            return match gix.find_commit(id) {
                Ok(_) => Ok(id),
                Err(_) => Err(format!(
                    "commit {rev} is not in {} (another clone, or rebased away?)",
                    crate::pipeline::display_path(ws.repo.dir())
                )),
            };
        }
    }
    // Short hashes and tags; `HEAD~3` and the like are refused: a file of results names
    // commits, not positions relative to whatever is checked out now.
    if rev.contains(['~', '^', ':', '@', ' ']) || rev.contains("..") {
        return Err(format!("`{rev}` is not a commit hash or tag"));
    }
    match gix.rev_parse_single(rev) {
        Ok(id) => match id.object().ok().and_then(|o| o.peel_to_commit().ok()) {
            Some(c) => Ok(c.id),
            None => Err(format!("`{rev}` is not a commit")),
        },
        Err(e) if format!("{e}").to_lowercase().contains("ambiguous") => Err(format!(
            "`{rev}` is ambiguous: several objects start with it; give more hex digits"
        )),
        Err(_) => Err(format!(
            "unknown commit `{rev}`: no commit or tag of that name in {}",
            crate::pipeline::display_path(ws.repo.dir())
        )),
    }
}

/// A row as an imported sample, or why it cannot be one.
fn sample(row: &Row, test: &Test, id: ObjectId, recipe: u64) -> Result<Sample, String> {
    let value = match &row.value {
        Field::Missing => return Err("no value".into()),
        Field::Number(v) => *v,
        Field::Text(t) => t
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("value `{t}` is not a number"))?,
    };
    if !value.is_finite() {
        return Err(format!("value `{value}` is not a finite number"));
    }
    let time = match &row.timestamp {
        None | Some(Field::Missing) => 0,
        Some(Field::Number(t)) if t.is_finite() && *t >= 0.0 => *t as u64,
        Some(Field::Number(t)) => return Err(format!("timestamp `{t}` is not a time")),
        Some(Field::Text(t)) => parse_time(t)?,
    };
    let round = row
        .round
        .as_deref()
        .and_then(|r| r.trim().trim_start_matches(['R', 'r']).parse::<u32>().ok())
        .unwrap_or(0);
    Ok(Sample {
        commit: commit_key(&id),
        test_hash: test.definition_hash(),
        recipe_hash: recipe,
        time,
        round,
        wall: 0.0,
        user: 0.0,
        sys: 0.0,
        max_rss: 0,
        value: Some(value),
        error: None,
        fingerprint: 0,
        import: Some(Import {
            round: row.round.clone(),
            machine: row.machine.clone(),
        }),
        window: 0,
        moment: 0,
    })
}

/// Seconds since the epoch, or an RFC 3339 date (`2026-08-14T13:51:24Z`, `2026-08-14 13:51:24`).
fn parse_time(t: &str) -> Result<u64, String> {
    let t = t.trim();
    if t.is_empty() {
        return Ok(0);
    }
    if let Ok(n) = t.parse::<f64>() {
        if n.is_finite() && n >= 0.0 {
            return Ok(n as u64);
        }
    }
    humantime::parse_rfc3339_weak(t)
        .ok()
        .and_then(|st| st.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .ok_or_else(|| {
            format!("timestamp `{t}` is neither seconds since 1970 nor a date like 2026-08-14T13:51:24Z")
        })
}

/// Empty cells are absent.
fn opt(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

const COLUMNS: [&str; 6] = ["commit", "test", "value", "timestamp", "round", "machine"];

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
    let mut col = [usize::MAX; 6];
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
                "{file}:1: unknown column `{name}`{}; the header is `commit,test,value[,timestamp,round,machine]`",
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
    let width = rec.len();
    let text_of = |raw: &[u8]| String::from_utf8_lossy(raw).into_owned();
    loop {
        let pos = rdr.position().clone();
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(pos.line(), |p| p.line()) as usize;
                report.unparsable(line, format!("{e}"));
                continue;
            }
        }
        let line = rec.position().map_or(pos.line(), |p| p.line()) as usize;
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
        let cell = |i: usize| (i != usize::MAX).then(|| rec.get(i).map(text_of)).flatten();
        let value = cell(col[2]).unwrap_or_default();
        rows.push(Row {
            line,
            commit: cell(col[0]).unwrap_or_default().trim().to_string(),
            test: cell(col[1]).unwrap_or_default().trim().to_string(),
            value: if value.trim().is_empty() {
                Field::Missing
            } else {
                Field::Text(value)
            },
            timestamp: cell(col[3]).map(Field::Text),
            round: cell(col[4]).as_deref().and_then(opt),
            machine: cell(col[5]).as_deref().and_then(opt),
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
}

#[derive(serde::Deserialize)]
struct ShowJson<'a> {
    #[serde(borrow)]
    test: &'a str,
    #[serde(borrow)]
    commits: Vec<&'a serde_json::value::RawValue>,
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
        let off = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        text.as_bytes()[..off]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    };
    let (items, show_test): (Vec<&serde_json::value::RawValue>, Option<&str>) =
        if text.trim_start().starts_with('{') {
            let show: ShowJson = serde_json::from_str(text).map_err(not_json)?;
            (show.commits, Some(show.test))
        } else {
            (serde_json::from_str(text).map_err(not_json)?, None)
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
        let timestamp = match &r.timestamp {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Number(n)) => Some(Field::Number(n.as_f64().unwrap_or(-1.0))),
            Some(serde_json::Value::String(s)) => Some(Field::Text(s.clone())),
            Some(other) => {
                report.unparsable(line, format!("timestamp `{other}` is not a time"));
                continue;
            }
        };
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
                round: round.clone(),
                machine: r.machine.clone(),
            });
        }
    }
    Ok(())
}
