//! `import --from` against today's CSV import of the same rows, side by side: the time and the
//! peak resident memory of the whole `perfbisect` process (from `wait4`), per million rows
//! of a benchmark-action `data.js` (40,000 entries of 25 benches, about 100 MB: one JSON
//! document, read as a stream) and for the largest real history under
//! `../shared/history/` when it is there (django-asv's results, its commits mapped onto a
//! generated repository's in order, since django's own cannot be fetched here). Each round
//! imports the CSV, then the foreign file, each into a fresh cache; rounds alternate, and the
//! medians are printed.
//! Run with `cargo bench --bench import-formats` (ROWS=N, ROUNDS=N for other sizes).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// 25 benches per entry: a project's suite of libtest benches.
const BENCHES: usize = 25;

fn main() {
    let rows: usize = env_or("ROWS", 1_000_000);
    let rounds: usize = env_or("ROUNDS", 3);
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    let specs: Vec<perfbisect::scaffold::demo::CommitSpec> = (0..2000)
        .map(|_| perfbisect::scaffold::demo::CommitSpec::default())
        .collect();
    let ids = perfbisect::scaffold::demo::create_repo(&repo, &specs).expect("repo");

    // The benchmark-action history and the same rows as CSV.
    let names: Vec<String> = (0..BENCHES).map(|b| format!("bench_{b:02}")).collect();
    let mut config = String::new();
    for n in &names {
        let _ = writeln!(
            config,
            "[tests.{n}]\ncommand = \"./app\"\nunit = \"ns/iter\"\n"
        );
    }
    let entries = rows.div_ceil(BENCHES);
    // Written as they are made: a child's peak memory as the kernel reports it includes this
    // process's own peak (the memory it was spawned from), which must stay small.
    let js_path = dir.path().join("data.js");
    let csv_path = dir.path().join("rows.csv");
    let mut js = std::io::BufWriter::new(std::fs::File::create(&js_path).expect("data.js"));
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&csv_path).expect("csv"));
    use std::io::Write as _;
    let mut line = String::new();
    csv.write_all(b"commit,test,value,timestamp,round,machine\n")
        .expect("csv");
    js.write_all(b"window.BENCHMARK_DATA = {\n  \"lastUpdate\": 1,\n  \"repoUrl\": \"https://example.invalid/r\",\n  \"entries\": {\n    \"ci\": [\n").expect("js");
    let mut n = 0;
    for e in 0..entries {
        let c = &ids[(e / 20) % ids.len()];
        let date = 1_600_000_000_000u64 + e as u64 * 60_000;
        line.clear();
        if e > 0 {
            line.push_str(",\n");
        }
        let _ = write!(
            line,
            "      {{\n        \"commit\": {{\n          \"author\": {{\"email\": \"dev@example.com\", \"name\": \"Dev One\", \"username\": \"dev\"}},\n          \"committer\": {{\"email\": \"dev@example.com\", \"name\": \"Dev One\", \"username\": \"dev\"}},\n          \"distinct\": true,\n          \"id\": \"{c}\",\n          \"message\": \"A change of the code, with a subject of a usual length (#{e})\",\n          \"timestamp\": \"2020-11-16T16:00:07-08:00\",\n          \"tree_id\": \"69d47e4e3b4989c228904304c3cb8ccbbc865e78\",\n          \"url\": \"https://example.invalid/r/commit/{c}\"\n        }},\n        \"date\": {date},\n        \"tool\": \"cargo\",\n        \"benches\": ["
        );
        let mut rows_csv = String::new();
        for (b, name) in names.iter().enumerate() {
            if n == rows {
                break;
            }
            n += 1;
            let v = 50_000 + (e * 31 + b * 7) % 997;
            if b > 0 {
                line.push(',');
            }
            let _ = write!(
                line,
                "\n          {{\"name\": \"{name}\", \"value\": {v}, \"range\": \"± {}\", \"unit\": \"ns/iter\"}}",
                v / 20
            );
            let _ = writeln!(rows_csv, "{c},{name},{v},{},ci@{date},ci", date / 1000);
        }
        line.push_str("\n        ]\n      }");
        js.write_all(line.as_bytes()).expect("js");
        csv.write_all(rows_csv.as_bytes()).expect("csv");
    }
    js.write_all(b"\n    ]\n  }\n}\n").expect("js");
    js.flush().expect("js");
    csv.flush().expect("csv");
    drop((js, csv));
    let size = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.len() as f64 / 1e6)
            .unwrap_or(0.0)
    };
    let (js_mb, csv_mb) = (size(&js_path), size(&csv_path));
    let config_path = dir.path().join("perfbisect.toml");
    std::fs::write(&config_path, &config).expect("config");
    println!(
        "== {rows} rows of {BENCHES} tests on {} commits: data.js {js_mb:.0} MB (one suite, {entries} entries), the same rows as CSV {csv_mb:.0} MB; {rounds} rounds, medians",
        ids.len()
    );
    let per_million = 1e6 / rows as f64;
    println!(
        "(time and peak resident memory of the whole perfbisect process, from wait4; this benchmark process itself peaked at {:.0} MB, not counted in them)",
        own_peak()
    );
    compare(
        dir.path(),
        &repo,
        &config_path,
        rounds,
        &[
            (
                "CSV import (today's)",
                vec!["import".into(), csv_path.display().to_string()],
            ),
            (
                "import --from benchmark-action",
                vec![
                    "import".into(),
                    "--from".into(),
                    "benchmark-action".into(),
                    js_path.display().to_string(),
                ],
            ),
        ],
        per_million,
    );

    // The largest real history, when it is there.
    let django = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/history/django-asv/results");
    if django.is_dir() {
        real_asv(dir.path(), &repo, &ids, &django, rounds);
    } else {
        println!("\n(../shared/history/django-asv is not here: the real history was not measured)");
    }
}

/// This process's own peak resident memory, MB.
fn own_peak() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One `perfbisect` process: wall seconds, peak RSS (MB) and its stdout.
// Reaped by `wait4`, which returns its resource use: `Child::wait` would not.
#[allow(clippy::zombie_processes)]
fn run(repo: &Path, config: &Path, cache: &Path, args: &[String]) -> (f64, f64, String) {
    use std::io::Read;
    let t = Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_perfbisect"))
        .arg("--repo")
        .arg(repo)
        .arg("--config")
        .arg(config)
        .arg("--cache")
        .arg(cache)
        .arg("--no-progress")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("perfbisect");
    let (mut out, mut err) = (String::new(), String::new());
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut e = String::new();
        let _ = se.read_to_string(&mut e);
        e
    });
    let _ = so.read_to_string(&mut out);
    err.push_str(&reader.join().unwrap_or_default());
    // The child's own peak, from the kernel's accounting of it (not of this process).
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = t.elapsed().as_secs_f64();
    assert!(
        r == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "perfbisect {args:?} failed: {err}"
    );
    (secs, usage.ru_maxrss as f64 / 1024.0, out)
}

/// Each of `imports` into a fresh cache per round, rounds alternating; the medians, and the
/// ratio of each to the first.
fn compare(
    dir: &Path,
    repo: &Path,
    config: &Path,
    rounds: usize,
    imports: &[(&str, Vec<String>)],
    per_million: f64,
) {
    let mut times = vec![Vec::new(); imports.len()];
    let mut peaks = vec![Vec::new(); imports.len()];
    let mut said = vec![String::new(); imports.len()];
    for r in 0..rounds {
        for (i, (_, args)) in imports.iter().enumerate() {
            let cache: PathBuf = dir.join(format!("cache-{i}-{r}"));
            let (s, mb, out) = run(repo, config, &cache, args);
            times[i].push(s);
            peaks[i].push(mb);
            said[i] = out.trim().to_string();
            let _ = std::fs::remove_dir_all(&cache);
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (t0, p0) = (med(&mut times[0].clone()), med(&mut peaks[0].clone()));
    for (i, (what, _)) in imports.iter().enumerate() {
        let (t, p) = (med(&mut times[i]), med(&mut peaks[i]));
        println!(
            "{what:<32} {t:7.2} s ({:.2} s per million rows), peak {p:5.0} MB  -- ratio to the CSV: time {:.2}, memory {:.2}",
            t * per_million,
            t / t0,
            p / p0
        );
        println!("    {}", said[i].lines().last().unwrap_or(""));
    }
}

/// django-asv's results, their commits mapped onto the generated repository's, imported as
/// asv against the same rows as CSV.
fn real_asv(dir: &Path, repo: &Path, ids: &[String], src: &Path, rounds: usize) {
    let copy = dir.join("django-results");
    std::fs::create_dir_all(&copy).expect("dir");
    let mut map: std::collections::BTreeMap<String, String> = Default::default();
    let mut csv = String::from("commit,test,value,timestamp,round,machine\n");
    let mut series = std::collections::BTreeSet::new();
    let (mut files, mut bytes) = (0usize, 0usize);
    for m in std::fs::read_dir(src).expect("results").flatten() {
        let mdir = m.path();
        if !mdir.is_dir() {
            std::fs::copy(&mdir, copy.join(m.file_name())).ok();
            continue;
        }
        let machine = m.file_name().to_string_lossy().into_owned();
        std::fs::create_dir_all(copy.join(&machine)).expect("dir");
        let mut names: Vec<PathBuf> = std::fs::read_dir(&mdir)
            .expect("machine")
            .flatten()
            .map(|e| e.path())
            .collect();
        names.sort();
        for f in names {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&f).expect("file");
            bytes += text.len();
            if name == "machine.json" {
                std::fs::write(copy.join(&machine).join(&name), &text).expect("copy");
                continue;
            }
            files += 1;
            let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
            let old = v["commit_hash"].as_str().unwrap_or("").to_string();
            let k = map.len();
            let new = map
                .entry(old)
                .or_insert_with(|| ids[k % ids.len()].clone())
                .clone();
            v["commit_hash"] = serde_json::Value::String(new.clone());
            let env = v["env_name"].as_str().unwrap_or("").to_string();
            let stem = name.trim_end_matches(".json");
            let cols: Vec<String> =
                serde_json::from_value(v["result_columns"].clone()).unwrap_or_default();
            let col = |c: &str| cols.iter().position(|x| x == c);
            if let Some(results) = v["results"].as_object() {
                for (bench, row) in results {
                    let (Some(ri), Some(pi)) = (col("result"), col("params")) else {
                        continue;
                    };
                    let params: Vec<Vec<String>> =
                        serde_json::from_value(row[pi].clone()).unwrap_or_default();
                    let started = col("started_at")
                        .and_then(|i| row[i].as_f64())
                        .map(|ms| (ms / 1000.0) as u64);
                    let results = row[ri].as_array().cloned().unwrap_or_default();
                    for (n, r) in results.iter().enumerate() {
                        let Some(x) = r.as_f64() else { continue };
                        let mut values: Vec<&str> = vec![""; params.len()];
                        let mut rest = n;
                        for (i, p) in params.iter().enumerate().rev() {
                            values[i] = &p[rest % p.len()];
                            rest /= p.len();
                        }
                        let test = perfbisect::import::foreign::names::sanitise(
                            &perfbisect::import::foreign::names::asv_plain(bench, &values),
                        );
                        series.insert(test.clone());
                        let _ = writeln!(
                            csv,
                            "{new},{test},{x},{},{stem},{machine}/{env}",
                            started.map(|s| s.to_string()).unwrap_or_default()
                        );
                    }
                }
            }
            std::fs::write(copy.join(&machine).join(&name), v.to_string()).expect("copy");
        }
    }
    let rows = csv.lines().count() - 1;
    let csv_path = dir.join("django.csv");
    std::fs::write(&csv_path, &csv).expect("csv");
    let mut config = String::new();
    for s in &series {
        // No unit: each series keeps the one asv gives it.
        let _ = writeln!(
            config,
            "[tests.\"{s}\"]\ncommand = \"./app\"\nmetric = {{ regex = \"v: (.*)\" }}\n"
        );
    }
    let config_path = dir.join("django.toml");
    std::fs::write(&config_path, &config).expect("config");
    println!(
        "\n== the largest real history: django-asv's results ({files} files, {:.0} MB, {rows} values of {} series; its {} commits mapped onto the generated repository's)",
        bytes as f64 / 1e6,
        series.len(),
        map.len()
    );
    compare(
        dir,
        repo,
        &config_path,
        rounds,
        &[
            (
                "CSV import of the same rows",
                vec!["import".into(), csv_path.display().to_string()],
            ),
            (
                "import --from asv",
                vec![
                    "import".into(),
                    "--from".into(),
                    "asv".into(),
                    copy.display().to_string(),
                ],
            ),
        ],
        1e6 / rows as f64,
    );
}
