//! The JSON reference (src/guide/json.md) is what the commands print: each command's
//! `--format json` on a demo repository is held to the page's skeleton of it. A key printed
//! that the page does not list, a listed key (not marked `?`) that is not printed, or a value
//! of another type fails; so does a skeleton no command is checked against.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The page's skeletons: ```` ```json schema=NAME ```` blocks.
fn skeletons() -> Map<String, Value> {
    let text = std::fs::read_to_string(root().join("src/guide/json.md")).unwrap();
    let mut out = Map::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("```json schema=") else {
            continue;
        };
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        let v: Value = serde_json::from_str(&body.join("\n"))
            .unwrap_or_else(|e| panic!("json.md: skeleton `{name}` is not JSON: {e}"));
        assert!(
            out.insert(name.trim().to_string(), v).is_none(),
            "json.md: `{name}` twice"
        );
    }
    out
}

struct Checker<'a> {
    defs: &'a Map<String, Value>,
    used: BTreeSet<String>,
}

impl Checker<'_> {
    /// Errors of `v` against skeleton `s`, at `path`.
    fn check(&mut self, v: &Value, s: &Value, path: &str) -> Vec<String> {
        match s {
            Value::String(t) => {
                let alts: Vec<&str> = t.split('|').collect();
                let mut why = Vec::new();
                for alt in &alts {
                    let e = self.one(v, alt, path);
                    if e.is_empty() {
                        return e;
                    }
                    // The shape's own errors say more than "is not null".
                    if alt.starts_with('#') || alt.starts_with('[') || alts.len() == 1 {
                        why.extend(e);
                    }
                }
                if why.is_empty() {
                    why.push(format!("{path}: {v} is none of `{t}`"));
                }
                why
            }
            Value::Array(a) => match (v, a.first()) {
                (Value::Array(items), Some(elem)) => items
                    .iter()
                    .enumerate()
                    .flat_map(|(i, x)| self.check(x, elem, &format!("{path}[{i}]")))
                    .collect(),
                (Value::Array(_), None) => Vec::new(),
                _ => vec![format!("{path}: {v} is not an array")],
            },
            Value::Object(o) => {
                let Value::Object(got) = v else {
                    return vec![format!("{path}: {v} is not an object")];
                };
                let mut keys = Map::new();
                self.expand(o, &mut keys);
                let mut errs = Vec::new();
                for (k, sk) in &keys {
                    let (name, optional) = match k.strip_suffix('?') {
                        Some(n) => (n, true),
                        None => (k.as_str(), false),
                    };
                    match got.get(name) {
                        Some(x) => errs.extend(self.check(x, sk, &format!("{path}.{name}"))),
                        None if optional => {}
                        None => errs.push(format!("{path}.{name}: listed but not printed")),
                    }
                }
                for k in got.keys() {
                    if !keys.contains_key(k) && !keys.contains_key(&format!("{k}?")) {
                        errs.push(format!("{path}.{k}: printed but not in the reference"));
                    }
                }
                errs
            }
            other => vec![format!("{path}: skeleton {other} is not a type")],
        }
    }

    /// `o`'s keys, with those of `"...": "#name"` in place.
    fn expand(&mut self, o: &Map<String, Value>, into: &mut Map<String, Value>) {
        for (k, v) in o {
            if k == "..." {
                let name = v.as_str().and_then(|s| s.strip_prefix('#')).unwrap();
                self.used.insert(name.to_string());
                let def = self.defs[name].as_object().unwrap().clone();
                self.expand(&def, into);
            } else {
                into.insert(k.clone(), v.clone());
            }
        }
    }

    fn one(&mut self, v: &Value, t: &str, path: &str) -> Vec<String> {
        let ok = match t {
            "string" => v.is_string(),
            "number" => v.is_number(),
            "bool" => v.is_boolean(),
            "null" => v.is_null(),
            "any" => true,
            "commit" => v
                .as_str()
                .is_some_and(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())),
            t if t.starts_with('#') => {
                let name = &t[1..];
                self.used.insert(name.to_string());
                let def = self
                    .defs
                    .get(name)
                    .unwrap_or_else(|| panic!("json.md: no skeleton `{name}`"))
                    .clone();
                return self.check(v, &def, path);
            }
            t if t.starts_with('[') && t.ends_with(']') => {
                let elem = Value::String(t[1..t.len() - 1].to_string());
                return self.check(v, &Value::Array(vec![elem]), path);
            }
            other => panic!("json.md: unknown type `{other}`"),
        };
        if ok {
            Vec::new()
        } else {
            vec![format!("{path}: {v} is not {t}")]
        }
    }
}

/// `perfbisect ARGS` in `dir`: its stdout as JSON (the last line of it, for `run`), and
/// whether `"schema"` is its first key.
fn json_of(dir: &Path, args: &[&str]) -> (Value, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_perfbisect"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perfbisect {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (v, raw) = match serde_json::from_str(&text) {
        Ok(v) => (v, text.as_str()),
        Err(_) => {
            let last = text.lines().last().unwrap_or("");
            let v = serde_json::from_str(last)
                .unwrap_or_else(|e| panic!("perfbisect {}: not JSON: {e}\n{text}", args.join(" ")));
            (v, last)
        }
    };
    let compact: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
    (v, compact.starts_with("{\"schema\":"))
}

#[test]
fn every_command_prints_the_json_the_reference_describes() {
    let defs = skeletons();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let out = Command::new(env!("CARGO_BIN_EXE_perfbisect"))
        .args(["demo", "--create-only", "--dir", "demo", "--step-at", "17"])
        .args(["--noise-seed", "3"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let demo = dir.join("demo");
    std::fs::write(
        demo.join("steps.csv"),
        "index,value\n1,10\n2,10\n3,10\n4,20\n5,20\n6,20\n",
    )
    .unwrap();
    // The newest index alone at a new level: an undecided step.
    std::fs::write(
        demo.join("lone.csv"),
        "index,value\n1,10\n2,10.1\n3,9.9\n4,10.05\n5,9.95\n6,10\n7,10.1\n8,9.9\n9,10\n10,20\n",
    )
    .unwrap();
    // A stake, so that `show`'s summary judges against one.
    let config = std::fs::read_to_string(demo.join("perfbisect.toml")).unwrap();
    let staked = config.replacen("[tests.value]\n", "[tests.value]\nstake = 1000\n", 1);
    assert_ne!(config, staked);
    std::fs::write(demo.join("perfbisect.toml"), staked).unwrap();
    // A cron job's rounds on a second copy, whose `find` they narrow to one gap.
    let out = Command::new(env!("CARGO_BIN_EXE_perfbisect"))
        .args(["demo", "--create-only", "--dir", "cron", "--step-at", "17"])
        .args(["--noise-seed", "3"])
        .current_dir(dir)
        .output()
        .unwrap();
    let ids: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut rounds = String::from("commit,test,value,timestamp,round,machine\n");
    for (i, n) in [1usize, 5, 9, 13, 19, 21, 24].iter().enumerate() {
        let value = if *n >= 17 { 1050 } else { 1000 };
        rounds += &format!(
            "{},value,{value},{},R{i},vm\n",
            ids[n - 1],
            1_700_000_000 + i * 600
        );
    }
    std::fs::write(dir.join("cron/rounds.csv"), rounds).unwrap();
    let cron = dir.join("cron");
    let out = Command::new(env!("CARGO_BIN_EXE_perfbisect"))
        .args(["--repo", "repo", "import", "rounds.csv"])
        .current_dir(&cron)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another tool's history of `value` (a benchmark-action data.js): its numbers carry
    // where they came from and the spread the tool reported.
    let entries: Vec<String> = [3usize, 7, 11]
        .iter()
        .map(|n| {
            format!(
                r#"{{"commit": {{"id": "{}"}}, "date": {}, "tool": "customSmallerIsBetter", "benches": [{{"name": "value", "value": 1000, "unit": "units", "range": "± 12"}}]}}"#,
                ids[n - 1],
                1_700_000_000_000u64 + *n as u64 * 1000
            )
        })
        .collect();
    std::fs::write(
        cron.join("data.js"),
        format!(
            "window.BENCHMARK_DATA = {{\"entries\": {{\"ci\": [{}]}}}}",
            entries.join(",")
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_perfbisect"))
        .args([
            "--repo",
            "repo",
            "import",
            "--from",
            "benchmark-action",
            "data.js",
        ])
        .current_dir(&cron)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = ["--repo", "repo"];
    let runs: Vec<(&str, Vec<&str>)> = vec![
        (
            "find",
            vec!["find", "value", "main~23..main", "--format", "json"],
        ),
        (
            "find_tests",
            vec!["find", "value,size", "main~23..main", "--format", "json"],
        ),
        (
            "run",
            vec!["run", "value,size", "main~5..main", "--format", "json"],
        ),
        (
            "show",
            vec!["show", "value", "main~23..main", "--format", "json"],
        ),
        (
            "report",
            vec!["report", "value", "main~23..main", "--format", "json"],
        ),
        (
            "detect",
            vec!["detect", "value", "main~23..main", "--format", "json"],
        ),
        (
            "detect",
            vec!["detect", "--input", "steps.csv", "--format", "json"],
        ),
        (
            "detect",
            vec!["detect", "--input", "lone.csv", "--format", "json"],
        ),
        (
            "compare",
            vec![
                "compare", "value", "main~1", "main", "--runs", "5", "--format", "json",
            ],
        ),
        (
            "calibrate",
            vec![
                "calibrate",
                "value",
                "main",
                "--runs",
                "5",
                "--format",
                "json",
            ],
        ),
        ("cache_ls", vec!["cache", "ls", "--format", "json"]),
        ("triage", vec!["triage", "value", "--format", "json"]),
    ];
    let mut checker = Checker {
        defs: &defs,
        used: BTreeSet::new(),
    };
    let mut errors = Vec::new();
    for (shape, args) in runs {
        let args: Vec<&str> = r.iter().copied().chain(args).collect();
        let (v, schema_first) = json_of(&demo, &args);
        assert!(
            schema_first,
            "perfbisect {}: `schema` is not the first key",
            args.join(" ")
        );
        checker.used.insert(shape.to_string());
        let e = checker.check(&v, &defs[shape], shape);
        errors.extend(
            e.into_iter()
                .map(|e| format!("perfbisect {}: {e}", args.join(" "))),
        );
    }
    let (v, _) = json_of(
        &cron,
        &[
            "--repo",
            "repo",
            "find",
            "value",
            "main~23..main",
            "--format",
            "json",
        ],
    );
    assert!(
        v["imported"].is_object(),
        "the rounds narrowed the search: {v}"
    );
    errors.extend(checker.check(&v, &defs["find"], "find (imported rounds)"));
    let (v, _) = json_of(
        &cron,
        &[
            "--repo",
            "repo",
            "show",
            "value",
            "main~23..main",
            "--format",
            "json",
        ],
    );
    assert!(
        v["samples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["imported_from"]["source"] == "benchmark-action"
                && s["spread"][0]["kind"] == "plus-minus"),
        "{v:#}"
    );
    errors.extend(checker.check(&v, &defs["show"], "show (another tool's history)"));
    // The machine changes (a `[fingerprint]` command's output): `triage` says it, with the
    // newest commit measured before and after, and `show` lists the samples before apart.
    let config = std::fs::read_to_string(demo.join("perfbisect.toml")).unwrap();
    let toolchain = format!("[fingerprint]\ncommands = [\"echo cc 13.1.0\"]\n\n{config}");
    std::fs::write(demo.join("perfbisect.toml"), toolchain).unwrap();
    for (shape, args) in [
        ("triage", vec!["triage", "value", "--format", "json"]),
        (
            "show",
            vec!["show", "value", "main~5..main", "--format", "json"],
        ),
    ] {
        let args: Vec<&str> = r.iter().copied().chain(args).collect();
        let (v, _) = json_of(&demo, &args);
        let eras = if shape == "show" {
            v["eras"]["change"].clone()
        } else {
            v["eras"][0].clone()
        };
        assert!(eras["bridge"].is_object(), "{}: {v:#}", args.join(" "));
        errors.extend(
            checker
                .check(&v, &defs[shape], shape)
                .into_iter()
                .map(|e| format!("perfbisect {} (another toolchain): {e}", args.join(" "))),
        );
    }
    assert!(
        errors.is_empty(),
        "json.md differs from the output:\n{}",
        errors.join("\n")
    );
    let unused: Vec<&String> = defs.keys().filter(|k| !checker.used.contains(*k)).collect();
    assert!(
        unused.is_empty(),
        "json.md: skeletons no output was checked against: {unused:?}"
    );
}
