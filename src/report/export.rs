//! Exports of the stored samples for other tools: every sample with its commit, test, unit,
//! round, time and fingerprint (JSON), and Apache Otava's CSV (one row per commit, a column per
//! test) so Otava's change-point analysis can read perfbisect's measurements.

use serde::Serialize;

use super::show::{summarize, RangeSummary};
use crate::base::text::iso8601;
use crate::config::{Direction, Test};
use crate::git::CommitInfo;
use crate::pipeline::rows::{CommitRow, Status};
use crate::stats;
use crate::store::Sample;

/// One stored run, as exported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleRow {
    pub commit: String,
    pub test: String,
    pub unit: String,
    /// Which measuring round produced it (0 first; `run --again` adds one).
    pub round: u32,
    /// When the run finished, seconds since the epoch.
    pub time: u64,
    /// The same as ISO 8601 in UTC.
    pub timestamp: String,
    /// The metric; `null` for a failed run.
    pub value: Option<f64>,
    pub wall: f64,
    pub user: f64,
    pub sys: f64,
    /// Peak resident set of the run's process tree, bytes; `null` when not measured (only
    /// runs made through the launcher, those of max-rss tests, measure it).
    pub max_rss: Option<u64>,
    /// Why the run failed.
    pub error: Option<String>,
    /// What the number depends on besides the commit (machine, kernel, compiler, counter):
    /// the id of `cache/fingerprints/<id>.txt`; `null` for samples that record none.
    pub fingerprint: Option<String>,
    /// The window of time it was measured in (runs of one window were taken side by side),
    /// as 16 hex digits; `null` for an imported row.
    pub window: Option<String>,
    /// Its back-to-back group within the window: runs sharing one are one measurement.
    pub moment: u32,
    /// A run of the range's old end (`A` of `A..B`), shown before the range's commits.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub old_end: bool,
    /// For an imported number, the machine its file names (an asv `MACHINE/ENV`, a
    /// benchmark-action suite, a cron's machine column).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// For a number imported from another tool's history: the tool, its series, unit and
    /// benchmark code version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<ImportedFrom>,
    /// The spreads that tool reported around the number (never samples).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spread: Vec<SpreadRow>,
}

/// Where a number imported from another tool's history came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedFrom {
    pub source: String,
    pub series: String,
    pub unit: Option<String>,
    pub version: Option<String>,
}

/// One spread another tool reported: its kind (`plus-minus`, `plus-minus-percent`, `stddev`,
/// `ci99`, `quartiles`, `bounds`, `iqr`), `lo`, and `hi` for an interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadRow {
    pub kind: &'static str,
    pub lo: f64,
    pub hi: Option<f64>,
}

/// The origin and spreads of an imported sample, as exports write them.
fn origin_of(s: &Sample) -> (Option<ImportedFrom>, Vec<SpreadRow>) {
    let Some(i) = &s.import else {
        return (None, Vec::new());
    };
    let from = i.origin.as_ref().map(|o| ImportedFrom {
        source: o.source.to_string(),
        series: o.series.to_string(),
        unit: o.unit.as_deref().map(str::to_string),
        version: o.version.as_deref().map(str::to_string),
    });
    let spread = i
        .spread
        .iter()
        .map(|sp| SpreadRow {
            kind: sp.kind.name(),
            lo: sp.lo,
            hi: sp.kind.interval().then_some(sp.hi),
        })
        .collect();
    (from, spread)
}

/// The fingerprint a sample was measured under, as exports write it: the 16 hex digits of its
/// id (`cache/fingerprints/<id>.txt` holds what it was), or `None` when it records none.
pub fn fingerprint_of(sample: &Sample) -> Option<String> {
    (sample.fingerprint != 0).then(|| format!("{:016x}", sample.fingerprint))
}

/// Every sample of `rows`, failed runs included, in commit order then as stored: each real run
/// once, under the commit that made it (not again under commits of identical builds).
/// `old_end`: the first row is the range's old end.
pub fn samples(test: &Test, rows: &[CommitRow], old_end: bool) -> Vec<SampleRow> {
    rows.iter()
        .enumerate()
        .flat_map(|(i, r)| {
            let commit = r.commit.id.to_string();
            let old_end = old_end && i == 0;
            r.own_records().iter().map(move |s| {
                let (imported_from, spread) = origin_of(s);
                let machine = s
                    .import
                    .as_ref()
                    .and_then(|i| i.machine.as_deref().map(str::to_string));
                SampleRow {
                    commit: commit.clone(),
                    test: test.name.clone(),
                    unit: test.unit(),
                    round: s.round,
                    time: s.time,
                    timestamp: iso8601(i64::try_from(s.time).unwrap_or(i64::MAX)),
                    value: s.value,
                    wall: s.wall,
                    user: s.user,
                    sys: s.sys,
                    max_rss: (s.max_rss > 0).then_some(s.max_rss),
                    error: s.error.clone(),
                    fingerprint: fingerprint_of(s),
                    window: (s.window != 0).then(|| format!("{:016x}", s.window)),
                    moment: s.moment,
                    old_end,
                    machine,
                    imported_from,
                    spread,
                }
            })
        })
        .collect()
}

/// What [`otava`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct OtavaCsv {
    pub csv: String,
    /// Commits written.
    pub rows: usize,
    /// Commits left out because some test has no value there (Otava reads a number in every
    /// cell of a row).
    pub incomplete: usize,
}

/// Apache Otava's CSV (its `type: csv` tests: `time_column: time`, `attributes: [commit]`,
/// `metrics: [<test>, ...]`): one row per commit in `commits` order, the commit's author time
/// (`2023-11-14 22:29:00 +0000`), its full hash, then per test the median of its runs there.
/// `medians[t][i]` is test `t`'s median at `commits[i]`.
pub fn otava(
    tests: &[&Test],
    commits: &[CommitInfo],
    medians: &[Vec<Option<f64>>],
) -> anyhow::Result<OtavaCsv> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header = vec!["time".to_string(), "commit".to_string()];
    header.extend(tests.iter().map(|t| t.name.clone()));
    w.write_record(&header)?;
    let (mut rows, mut incomplete) = (0, 0);
    for (i, c) in commits.iter().enumerate() {
        let values: Option<Vec<f64>> = medians
            .iter()
            .map(|m| m.get(i).copied().flatten())
            .collect();
        let Some(values) = values else {
            if medians
                .iter()
                .any(|m| m.get(i).copied().flatten().is_some())
            {
                incomplete += 1;
            }
            continue;
        };
        let (y, mo, d, h, mi, s) = crate::base::text::civil(c.time);
        let mut rec = vec![
            format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} +0000"),
            c.id.to_string(),
        ];
        rec.extend(values.iter().map(|v| v.to_string()));
        w.write_record(&rec)?;
        rows += 1;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("cannot write CSV: {e}"))?;
    Ok(OtavaCsv {
        csv: String::from_utf8(bytes)?,
        rows,
        incomplete,
    })
}

#[derive(Serialize)]
struct JsonCommit<'a> {
    commit: String,
    subject: &'a str,
    n: usize,
    min: Option<f64>,
    median: Option<f64>,
    max: Option<f64>,
    status: Status,
    /// The values of the commit's own successful runs, in stored order (what `import` reads
    /// back); runs of an identical build are listed under the commit that made them.
    values: Vec<f64>,
    /// How many of them were imported rather than measured here.
    imported: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    same_build_as: Option<String>,
    /// The range's old end (`A` of `A..B`): the first entry, before the range's commits.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    old_end: bool,
}

#[derive(Serialize)]
struct JsonShow<'a> {
    test: &'a str,
    unit: String,
    direction: Direction,
    commits: Vec<JsonCommit<'a>>,
    summary: Option<RangeSummary>,
    /// Every stored run of these commits, failed ones included.
    samples: Vec<SampleRow>,
}

/// `--format json`, one object; `old_end`: the first row is the range's old end.
pub fn json(test: &Test, rows: &[CommitRow], old_end: bool) -> anyhow::Result<String> {
    Ok(super::json::json_pretty(&json_value(test, rows, old_end)?)?)
}

/// The object `--format json` prints, for reports that add to it.
pub fn json_value(
    test: &Test,
    rows: &[CommitRow],
    old_end: bool,
) -> anyhow::Result<serde_json::Value> {
    let commits = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let s = stats::summarize(&r.values);
            JsonCommit {
                commit: r.commit.id.to_string(),
                subject: &r.commit.subject,
                n: r.values.len(),
                min: s.map(|s| s.min),
                median: s.map(|s| s.median),
                max: s.map(|s| s.max),
                status: r.status,
                values: r.own_values(),
                imported: r.imported(),
                same_build_as: r.same_build_as.map(|t| t.to_string()),
                old_end: old_end && i == 0,
            }
        })
        .collect();
    let out = JsonShow {
        test: &test.name,
        unit: test.unit(),
        direction: test.direction,
        commits,
        summary: summarize(test, rows),
        samples: samples(test, rows, old_end),
    };
    Ok(serde_json::to_value(&out)?)
}

/// `--format csv`: one row per sample, failed runs included with their whole error text.
/// Written with the `csv` crate, so quotes, commas and line breaks in an error round-trip.
/// `time` is seconds since the epoch, `timestamp` the same in ISO 8601; the columns after
/// `error` were added later and stay at the end, so readers by position keep working
/// (`old_end`, last: `true` for the runs of the range's old end, the first row when
/// `old_end`).
pub fn csv(test: &Test, rows: &[CommitRow], old_end: bool) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record([
        "commit",
        "round",
        "time",
        "value",
        "wall",
        "user",
        "sys",
        "max_rss",
        "error",
        "test",
        "unit",
        "timestamp",
        "fingerprint",
        "window",
        "moment",
        "old_end",
    ])?;
    for s in samples(test, rows, old_end) {
        w.write_record([
            s.commit,
            s.round.to_string(),
            s.time.to_string(),
            s.value.map(|v| v.to_string()).unwrap_or_default(),
            s.wall.to_string(),
            s.user.to_string(),
            s.sys.to_string(),
            s.max_rss.map(|m| m.to_string()).unwrap_or_default(),
            s.error.unwrap_or_default(),
            s.test,
            s.unit,
            s.timestamp,
            s.fingerprint.unwrap_or_default(),
            s.window.unwrap_or_default(),
            s.moment.to_string(),
            s.old_end.to_string(),
        ])?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("cannot write CSV: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otava_rows_need_every_test() {
        let cfg = crate::config::parse(
            "[build]\ncommand = \"true\"\n[tests.a]\ncommand = \"./app\"\n[tests.b]\ncommand = \"./app\"\n",
            std::path::Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        let (a, b) = (cfg.test("a").unwrap(), cfg.test("b").unwrap());
        let commits: Vec<CommitInfo> = (1..=3u8)
            .map(|i| CommitInfo {
                id: gix::ObjectId::from_bytes_or_panic(&[i; 20]),
                subject: String::new(),
                author: String::new(),
                time: 1_700_000_000 + i64::from(i),
            })
            .collect();
        let out = otava(
            &[a, b],
            &commits,
            &[
                vec![Some(1.5), Some(2.0), None],
                vec![Some(10.0), None, None],
            ],
        )
        .unwrap();
        assert_eq!(
            out.csv,
            format!(
                "time,commit,a,b\n2023-11-14 22:13:21 +0000,{},1.5,10\n",
                "01".repeat(20)
            )
        );
        assert_eq!((out.rows, out.incomplete), (1, 1));
    }

    fn test_def() -> Test {
        let cfg = crate::config::parse(
            "[build]\ncommand = \"true\"\n[tests.t]\ncommand = \"./app\"\n",
            std::path::Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        cfg.test("t").unwrap().clone()
    }

    fn sample(value: Option<f64>, error: Option<&str>) -> Sample {
        Sample {
            commit: [7; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: 1_700_000_000,
            round: 1,
            wall: 0.5,
            user: 0.25,
            sys: 0.125,
            max_rss: 4096,
            value,
            error: error.map(str::to_string),
            fingerprint: 0,
            import: None,
            window: 1,
            moment: 0,
        }
    }

    #[test]
    fn csv_round_trips_quotes_commas_and_multi_line_errors() {
        let error = "test command exited with 3\nerror: \"bad\", said the test,\r\nthen \"\"more\"\"\nlast line, with a comma";
        let row = CommitRow {
            same_build_as: None,
            own: 2,
            joins_previous: false,
            commit: CommitInfo {
                id: gix::ObjectId::from_bytes_or_panic(&[7; 20]),
                subject: "A \"quoted\", subject".into(),
                author: "x".into(),
                time: 0,
            },
            values: vec![3064.5],
            records: vec![sample(Some(3064.5), None), sample(None, Some(error))],
            status: Status::Ok,
        };
        let text = csv(&test_def(), &[row], false).unwrap();
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            r.headers().unwrap(),
            vec![
                "commit",
                "round",
                "time",
                "value",
                "wall",
                "user",
                "sys",
                "max_rss",
                "error",
                "test",
                "unit",
                "timestamp",
                "fingerprint",
                "window",
                "moment",
                "old_end"
            ]
        );
        let recs: Vec<::csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(recs.len(), 2, "{text}");
        let id = "07".repeat(20);
        assert_eq!(
            recs[0].iter().collect::<Vec<_>>(),
            vec![
                id.as_str(),
                "1",
                "1700000000",
                "3064.5",
                "0.5",
                "0.25",
                "0.125",
                "4096",
                "",
                "t",
                "s",
                "2023-11-14T22:13:20Z",
                "",
                "0000000000000001",
                "0",
                "false"
            ]
        );
        assert_eq!(&recs[1][0], id);
        assert_eq!(&recs[1][3], "", "a failed run has no value");
        assert_eq!(&recs[1][8], error, "the whole error text comes back");
    }

    #[test]
    fn a_peak_not_measured_is_absent_not_zero() {
        let mut unmeasured = sample(Some(1.5), None);
        unmeasured.max_rss = 0;
        let row = CommitRow {
            same_build_as: None,
            own: 2,
            joins_previous: false,
            commit: CommitInfo {
                id: gix::ObjectId::from_bytes_or_panic(&[7; 20]),
                subject: "s".into(),
                author: "x".into(),
                time: 0,
            },
            values: vec![1.5, 3.0],
            records: vec![unmeasured, sample(Some(3.0), None)],
            status: Status::Ok,
        };
        let text = csv(&test_def(), std::slice::from_ref(&row), true).unwrap();
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let cells: Vec<String> = r.records().map(|rec| rec.unwrap()[7].to_string()).collect();
        assert_eq!(cells, ["", "4096"], "{text}");
        let json = json_value(&test_def(), &[row], true).unwrap();
        assert!(json["samples"][0]["max_rss"].is_null(), "{json}");
        assert_eq!(json["samples"][1]["max_rss"], 4096);
        assert_eq!(json["commits"][0]["old_end"], true, "{json}");
        assert!(text.lines().skip(1).all(|l| l.ends_with(",true")), "{text}");
    }
}
