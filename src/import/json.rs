//! JSON files for `import`: an array of row objects (`commit`, `test`, `value`, ...), or the
//! output of `show --format json`, read whole (exports are a few commits' worth).

use super::row::{ExportedRun, Field, Row, Rows};
use crate::error::UsageError;

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

/// Read a JSON file's rows into `sink`: an array of row objects, or `show --format json`'s
/// output (its `samples` when it has them, else its commits).
pub(crate) fn read(text: &str, file: &str, sink: &mut dyn Rows) -> anyhow::Result<()> {
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
                sink.unparsable(line, format!("not a row object: {e}"));
                continue;
            }
        };
        let Some(commit) = r.commit else {
            sink.unparsable(line, "no `commit`".into());
            continue;
        };
        let Some(test) = r.test.or(show_test) else {
            sink.unparsable(line, "no `test`".into());
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
            Some(serde_json::Value::String(s)) => Some(Field::Text(s.clone().into())),
            Some(other) => {
                sink.unparsable(line, format!("{time_column} `{other}` is not a time"));
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
                    sink.unparsable(line, format!("window `{w}` is not 16 hex digits"));
                    continue;
                }
            },
            Some(other) => {
                sink.unparsable(line, format!("window `{other}` is not 16 hex digits"));
                continue;
            }
        };
        if runs && matches!(r.value, None | Some(serde_json::Value::Null)) {
            // A failed run of an export: it has an error, no number.
            sink.failed_run();
            continue;
        }
        let values: Vec<Field> = match (&r.value, &r.values, r.median) {
            (Some(serde_json::Value::Number(n)), _, _) => {
                vec![Field::Number(n.as_f64().unwrap_or(f64::NAN))]
            }
            (Some(serde_json::Value::String(s)), _, _) => vec![Field::Text(s.clone().into())],
            (Some(serde_json::Value::Null) | None, Some(vs), _) => {
                vs.iter().map(|&v| Field::Number(v)).collect()
            }
            (Some(serde_json::Value::Null) | None, None, Some(m)) => vec![Field::Number(m)],
            // `show` lists commits without results too: nothing to import there.
            (Some(serde_json::Value::Null) | None, None, None) if show_test.is_some() => continue,
            (Some(other), _, _) => {
                sink.unparsable(line, format!("value `{other}` is not a number"));
                continue;
            }
            (None, None, None) => vec![Field::Missing],
        };
        for value in values {
            sink.row(
                Row {
                    line,
                    commit: commit.trim().into(),
                    test: test.trim().into(),
                    value,
                    timestamp: timestamp.clone(),
                    time_column,
                    round: round.as_deref().map(Into::into),
                    machine: r.machine.as_deref().map(Into::into),
                    run,
                    wall: r.wall,
                    user: r.user,
                    sys: r.sys,
                    max_rss: r.max_rss,
                    ..Row::default()
                },
                run.is_some(),
            )?;
        }
    }
    Ok(())
}

/// The 1-based line of byte `off` of `text`, counting line feeds (a CRLF file's lines too).
fn line_at(text: &str, off: usize) -> usize {
    text.as_bytes()[..off.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
