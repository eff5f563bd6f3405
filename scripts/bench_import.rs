//! `perfbisect import` of 1,000,000 CSV rows (target: under 5 s), against the floor of reading
//! and parsing the same file with the csv crate alone (every row's cells split and its value
//! parsed as a number), measured in the same run. Then the same file again: every row is
//! found already stored and nothing is written.
//! Run with `cargo bench --bench import` (ROWS=N for another size).

use std::fmt::Write as _;
use std::time::Instant;

fn main() {
    let rows: usize = std::env::var("ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    // 2,000 commits: about 7 months of a project like curl, where a cron round every 20
    // minutes measures 24 tests.
    let specs: Vec<perfbisect::scaffold::demo::CommitSpec> = (0..2000)
        .map(|_| perfbisect::scaffold::demo::CommitSpec::default())
        .collect();
    let ids = perfbisect::scaffold::demo::create_repo(&repo, &specs).expect("repo");
    let config = dir.path().join("perfbisect.toml");
    std::fs::write(&config, perfbisect::scaffold::demo::CONFIG).expect("config");
    let tests = ["value", "rss", "speed", "size"];
    let mut csv = String::with_capacity(rows * 90);
    csv.push_str("commit,test,value,timestamp,round,machine\n");
    for i in 0..rows {
        let c = &ids[(i / 40) % ids.len()];
        let t = tests[i % tests.len()];
        let _ = writeln!(
            csv,
            "{c},{t},{:.3},{},R{},cron-1",
            1000.0 + (i % 997) as f64 * 0.01,
            1_700_000_000 + i / 4,
            i / 160
        );
    }
    let file = dir.path().join("rounds.csv");
    std::fs::write(&file, &csv).expect("csv");
    let mb = csv.len() as f64 / 1e6;
    drop(csv);

    // The floor: the csv crate reading the file and parsing each value.
    let t = Instant::now();
    let mut rdr = csv::Reader::from_path(&file).expect("open");
    let mut rec = csv::ByteRecord::new();
    let (mut n, mut sum) = (0usize, 0.0f64);
    while rdr.read_byte_record(&mut rec).expect("record") {
        let v: f64 = std::str::from_utf8(&rec[2]).unwrap().parse().unwrap();
        sum += v;
        n += 1;
    }
    let floor = t.elapsed().as_secs_f64();
    assert_eq!(n, rows, "{sum}");

    let import = |what: &str| {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfbisect"))
            .arg("--repo")
            .arg(&repo)
            .arg("--config")
            .arg(&config)
            .arg("--cache")
            .arg(dir.path().join("cache"))
            .arg("import")
            .arg(&file)
            .output()
            .expect("perfbisect");
        let s = t.elapsed().as_secs_f64();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "{what}: {s:.2} s, {:.0} rows/s ({:.1}x the floor) -- {}",
            rows as f64 / s,
            s / floor,
            String::from_utf8_lossy(&out.stdout).trim()
        );
    };
    println!(
        "{rows} rows ({mb:.0} MB) on {} commits; csv crate alone: {floor:.2} s, {:.0} rows/s",
        ids.len(),
        rows as f64 / floor
    );
    import("import");
    import("import again (nothing new)");
}
