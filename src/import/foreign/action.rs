//! github-action-benchmark's history: `window.BENCHMARK_DATA = {...}` (`data.js`, or the
//! same object as plain JSON), `entries` by suite, each entry one run of the action on one
//! commit with its benches. The file is one JSON document that users let grow past 100 MB,
//! so it is read as a stream: each entry is parsed, handed on and dropped before the next.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::names;
use super::point::{Kind, Options, Point, Visit};
use crate::config::Direction;
use crate::error::UsageError;
use crate::import::report::Why;
use crate::store::origin::{Spread, SpreadKind};

/// What `data.js` starts with before its JSON (write.ts `SCRIPT_PREFIX`).
const PREFIX: &str = "window.BENCHMARK_DATA =";

/// One run of the action.
struct Entry {
    commit: Option<Commit>,
    /// When the action ran, milliseconds since the epoch.
    date: Option<f64>,
    tool: Option<String>,
    benches: Vec<Bench>,
}

#[derive(Deserialize)]
struct Commit {
    id: Option<String>,
}

#[derive(Deserialize)]
struct Bench {
    name: Option<String>,
    value: serde_json::Value,
    unit: Option<String>,
    range: Option<serde_json::Value>,
}

/// Read a `data.js` (or its JSON) file into `v`, streaming.
pub(super) fn read_file(path: &Path, opts: &Options, v: &mut dyn Visit) -> anyhow::Result<()> {
    let file = crate::base::paths::display_path(path);
    let f = std::fs::File::open(path)
        .map_err(|e| UsageError::err(format!("cannot read {file}: {e}")))?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    skip_prefix(&mut r, &file)?;
    let mut state = State::new(opts, v, None);
    let mut de = serde_json::Deserializer::from_reader(r);
    let res = Data { state: &mut state }.deserialize(&mut de);
    state.finish(res, &file)
}

/// Read the `data.js` text `bytes` (one version of it, from a branch's log) into `v`; entries
/// in `seen` (read from another version) are not read again.
pub(super) fn read_bytes(
    bytes: &[u8],
    label: &str,
    opts: &Options,
    v: &mut dyn Visit,
    seen: &mut HashSet<(String, String, u64)>,
) -> anyhow::Result<usize> {
    let start = json_start(bytes, label)?;
    let mut state = State::new(opts, v, Some(seen));
    let mut de = serde_json::Deserializer::from_slice(&bytes[start..]);
    let res = Data { state: &mut state }.deserialize(&mut de);
    let fresh = state.fresh;
    state.finish(res, label)?;
    Ok(fresh)
}

/// Where the JSON of a `data.js` text starts: after the prefix, or at once for plain JSON.
fn json_start(bytes: &[u8], label: &str) -> anyhow::Result<usize> {
    let Some(i) = bytes.iter().position(|&b| b == b'{') else {
        crate::usage!("{label}: not a benchmark-action data.js: no `{{` in it");
    };
    check_head(&bytes[..i], label)?;
    Ok(i)
}

/// Consume what comes before the JSON object in `r`.
fn skip_prefix(r: &mut impl BufRead, label: &str) -> anyhow::Result<()> {
    let buf = r
        .fill_buf()
        .map_err(|e| UsageError::err(format!("cannot read {label}: {e}")))?;
    let Some(i) = buf.iter().position(|&b| b == b'{') else {
        crate::usage!(
            "{label}: not a benchmark-action data.js: it does not start with `{PREFIX} {{` or `{{`"
        );
    };
    check_head(&buf[..i], label)?;
    r.consume(i);
    Ok(())
}

fn check_head(head: &[u8], label: &str) -> anyhow::Result<()> {
    let head = String::from_utf8_lossy(head);
    let head = head.trim_start_matches('\u{feff}').trim();
    if !(head.is_empty() || head == PREFIX || head.replace(' ', "") == PREFIX.replace(' ', "")) {
        crate::usage!(
            "{label}: not a benchmark-action data.js: it starts with `{}`, not `{PREFIX} {{`",
            head.chars().take(40).collect::<String>()
        );
    }
    Ok(())
}

/// What the stream's visitors share.
struct State<'a> {
    opts: &'a Options,
    v: &'a mut dyn Visit,
    /// Suites in the file, and those read (`--suite`).
    found: Vec<String>,
    chosen: Vec<String>,
    /// The first suite each bench name was seen in (suites holding the same benches are the
    /// same benchmarks on other runners: never one series).
    bench_suite: HashMap<String, String>,
    /// Entries read from other versions of the file (`--git-history`).
    seen: Option<&'a mut HashSet<(String, String, u64)>>,
    fresh: usize,
    /// Why the stream was stopped, when a visitor stopped it.
    error: Option<anyhow::Error>,
}

impl<'a> State<'a> {
    fn new(
        opts: &'a Options,
        v: &'a mut dyn Visit,
        seen: Option<&'a mut HashSet<(String, String, u64)>>,
    ) -> Self {
        State {
            opts,
            v,
            found: Vec::new(),
            chosen: Vec::new(),
            bench_suite: HashMap::new(),
            seen,
            fresh: 0,
            error: None,
        }
    }

    /// The end of the stream: what stopped it, or the suites found (a `--suite` that matched
    /// none is refused).
    fn finish(self, res: Result<(), serde_json::Error>, label: &str) -> anyhow::Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let Err(e) = res {
            crate::usage!(
                "{label}:{}:{}: not a benchmark-action data.js: {e}",
                e.line(),
                e.column()
            );
        }
        if let (Some(p), true) = (&self.opts.suite, self.chosen.is_empty()) {
            if !self.found.is_empty() {
                crate::usage!(
                    "--suite `{p}` matches no suite of {label}; it has: {}",
                    self.found.join(", ")
                );
            }
        }
        self.v.configurations("suite", &self.found, &self.chosen);
        Ok(())
    }

    /// Whether suite `s` is read.
    fn wanted(&mut self, s: &str) -> bool {
        if !self.found.iter().any(|f| f == s) {
            self.found.push(s.to_string());
        }
        let want = self.opts.suite.as_deref().is_none_or(|p| names::glob(p, s));
        if want && !self.chosen.iter().any(|c| c == s) {
            self.chosen.push(s.to_string());
        }
        want
    }

    /// One entry of `suite` (`idx` from 1).
    fn entry(&mut self, suite: &str, idx: usize, e: Entry) -> anyhow::Result<()> {
        let id = e.commit.and_then(|c| c.id).unwrap_or_default();
        let date = e.date.unwrap_or(f64::NAN);
        if let Some(seen) = self.seen.as_deref_mut() {
            let key = (suite.to_string(), id.clone(), date.to_bits());
            if !seen.insert(key) {
                return Ok(());
            }
        }
        self.fresh += 1;
        let short = &id[..id.len().min(10)];
        let at: Arc<str> = Arc::from(format!("suite `{suite}` entry {idx} ({short})"));
        if id.trim().is_empty() {
            for _ in &e.benches {
                self.v
                    .skip(&at, Why::BadRow, "the entry names no commit id".into());
            }
            return Ok(());
        }
        let time = super::point::ms_to_secs(date);
        let round = match time {
            Some(_) => format!("{suite}@{}", date as u64),
            None => format!("{suite}#{idx}"),
        };
        let tool = e.tool.as_deref().unwrap_or("");
        let direction = direction(tool);
        let kind = match tool {
            "cargo" => Kind::Libtest { target: suite },
            "googlecpp" => Kind::Gbench,
            _ => Kind::Other,
        };
        let machine = self.opts.machine.as_deref().unwrap_or(suite);
        for b in &e.benches {
            let Some(name) = b.name.as_deref() else {
                self.v.skip(&at, Why::BadRow, "a bench has no name".into());
                continue;
            };
            let value = match &b.value {
                serde_json::Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
                other => {
                    self.v.skip(
                        &at,
                        Why::BadRow,
                        format!("bench `{name}`: value {other} is not a number"),
                    );
                    continue;
                }
            };
            if !value.is_finite() {
                self.v.skip(
                    &at,
                    Why::BadRow,
                    format!("bench `{name}`: value {value} is not a finite number"),
                );
                continue;
            }
            if let Some(first) = self.bench_suite.get(name) {
                if first != suite && !self.v.listing() {
                    crate::usage!(
                        "suites `{first}` and `{suite}` both hold bench `{name}`: the same \
                         benchmarks measured on other runners. One series is one \
                         configuration, never a mix; choose a suite with --suite NAME (a \
                         glob) and import each into tests of its own. Suites: {}",
                        self.found.join(", ")
                    );
                }
            } else {
                self.bench_suite.insert(name.to_string(), suite.to_string());
            }
            let series = format!("{suite}/{name}");
            let spread = b.range.as_ref().and_then(|r| r.as_str()).and_then(spread);
            self.v.point(Point {
                id: &series,
                bench: name,
                plain: name,
                commit: &id,
                value,
                samples: None,
                separate: false,
                time,
                round: &round,
                machine: Some(machine),
                at: &at,
                unit: b.unit.as_deref(),
                direction,
                version: None,
                spread: spread.into_iter().collect(),
                kind,
            })?;
        }
        Ok(())
    }
}

/// Which way is better for numbers of benchmark-action's `tool`.
fn direction(tool: &str) -> Option<Direction> {
    match tool {
        "cargo"
        | "go"
        | "googlecpp"
        | "catch2"
        | "julia"
        | "jmh"
        | "benchmarkdotnet"
        | "benchmarkluau"
        | "customSmallerIsBetter" => Some(Direction::Lower),
        "benchmarkjs" | "pytest" | "customBiggerIsBetter" => Some(Direction::Higher),
        _ => None,
    }
}

/// A `range` as a spread: `± 8021`, `±1.23%`, `stddev: 0.0012`; none for other text.
fn spread(range: &str) -> Option<Spread> {
    let r = range.trim();
    let (kind, num) = if let Some(rest) = r.strip_prefix('±').or_else(|| r.strip_prefix("+/-")) {
        let rest = rest.trim();
        match rest.strip_suffix('%') {
            Some(p) => (SpreadKind::PlusMinusPercent, p.trim()),
            None => (SpreadKind::PlusMinus, rest),
        }
    } else if let Some(rest) = r.strip_prefix("stddev:") {
        (SpreadKind::StdDev, rest.trim())
    } else {
        return None;
    };
    let lo: f64 = num.replace(',', "").parse().ok()?;
    lo.is_finite().then_some(Spread { kind, lo, hi: 0.0 })
}

/// The top-level object: only `entries` is read.
struct Data<'s, 'a> {
    state: &'s mut State<'a>,
}

impl<'de> DeserializeSeed<'de> for Data<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Data<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object with `entries`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "entries" {
                map.next_value_seed(Suites {
                    state: &mut *self.state,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `entries`: suites by name.
struct Suites<'s, 'a> {
    state: &'s mut State<'a>,
}

impl<'de> DeserializeSeed<'de> for Suites<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Suites<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("suites by name")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(suite) = map.next_key::<String>()? {
            if self.state.wanted(&suite) {
                map.next_value_seed(Suite {
                    name: &suite,
                    state: &mut *self.state,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// One suite's entries, each handed on as it is parsed.
struct Suite<'n, 's, 'a> {
    name: &'n str,
    state: &'s mut State<'a>,
}

impl<'de> DeserializeSeed<'de> for Suite<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Suite<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut idx = 0;
        loop {
            let seed = EntrySeed {
                suite: self.name,
                seen: self.state.seen.as_deref(),
            };
            let Some(e) = seq.next_element_seed(seed)? else {
                break;
            };
            idx += 1;
            // An entry read from another version already: not parsed past its commit.
            let Some(e) = e else {
                continue;
            };
            if let Err(err) = self.state.entry(self.name, idx, e) {
                self.state.error = Some(err);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// One entry, or `None` when `seen` (the entries of the versions read before) holds it: its
/// benches are then skipped, not parsed (a branch's log holds every entry hundreds of times).
struct EntrySeed<'n, 's> {
    suite: &'n str,
    seen: Option<&'s HashSet<(String, String, u64)>>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_, '_> {
    type Value = Option<Entry>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<Entry>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_, '_> {
    type Value = Option<Entry>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an entry object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Entry>, A::Error> {
        let mut e = Entry {
            commit: None,
            date: None,
            tool: None,
            benches: Vec::new(),
        };
        let mut skipped = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "commit" => e.commit = map.next_value()?,
                "date" => e.date = map.next_value()?,
                "tool" => e.tool = map.next_value()?,
                "benches" => {
                    let id = e.commit.as_ref().and_then(|c| c.id.clone());
                    let known = match (self.seen, id, e.date) {
                        (Some(seen), Some(id), Some(d)) => {
                            seen.contains(&(self.suite.to_string(), id, d.to_bits()))
                        }
                        _ => false,
                    };
                    if known {
                        map.next_value::<IgnoredAny>()?;
                        skipped = true;
                    } else {
                        e.benches = map.next_value()?;
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((!skipped).then_some(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_become_spreads_and_other_text_none() {
        let s = spread("± 8021").unwrap();
        assert_eq!((s.kind, s.lo), (SpreadKind::PlusMinus, 8021.0));
        let s = spread("±1.23%").unwrap();
        assert_eq!((s.kind, s.lo), (SpreadKind::PlusMinusPercent, 1.23));
        let s = spread("stddev: 0.0012").unwrap();
        assert_eq!((s.kind, s.lo), (SpreadKind::StdDev, 0.0012));
        assert_eq!(spread("± 1,234").unwrap().lo, 1234.0);
        assert!(spread("1000 times\n4 procs").is_none());
    }

    #[test]
    fn the_prefix_and_plain_json_are_both_read() {
        assert_eq!(json_start(b"window.BENCHMARK_DATA = {}", "f").unwrap(), 24);
        assert_eq!(json_start(b"  {\"entries\": {}}", "f").unwrap(), 2);
        assert!(json_start(b"var x = {}", "f").is_err());
    }
}
