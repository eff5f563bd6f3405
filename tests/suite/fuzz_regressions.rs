//! Replays the fuzz seeds (`scripts/fuzz/seeds/`) and every input the fuzzers ever crashed on or that
//! was written to probe a parser's limits (`tests/fuzz-regressions/`) through the four
//! entry points the fuzz targets exercise: config parsing, the `detect --input` CSV reader,
//! store decoding and foreign build manifests. Every input goes through all four; none may panic, and each result
//! must satisfy the same invariants the fuzz targets assert (see `scripts/fuzz/fuzz_targets/`).

use std::path::{Path, PathBuf};

fn inputs() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["scripts/fuzz/seeds", "tests/fuzz-regressions"] {
        let Ok(targets) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for t in targets.flatten() {
            if !t.path().is_dir() {
                continue;
            }
            for f in std::fs::read_dir(t.path()).unwrap().flatten() {
                out.push((f.path(), std::fs::read(f.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The checks of the three fuzz targets on one input.
fn check(data: &[u8]) {
    check_one(data);
    // The store target also decodes the input as one frame with a correct checksum.
    if !data.is_empty() {
        let mut framed = b"PBSTORE\0\x01\0\0\0".to_vec();
        framed.extend_from_slice(&(data.len() as u32).to_le_bytes());
        framed.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
        framed.extend_from_slice(data);
        check_one(&framed);
    }
}

fn check_one(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = perfbisect::config::parse(text, Path::new("/fuzz/perfbisect.toml"));
    }
    if let Ok(series) = perfbisect::stats::read_series_csv(data) {
        assert_eq!(series.index.len(), series.samples.len());
        assert!(series.index.windows(2).all(|w| w[0] < w[1]));
        assert!(series.samples.iter().flatten().all(|v| v.is_finite()));
    }
    // The manifest target: an accepted foreign manifest names only files inside its entry.
    if let Ok(m) = perfbisect::build::carry::parse_foreign(data, "fuzz.json") {
        for f in &m.files {
            assert_eq!(
                perfbisect::base::paths::outside_reason(&f.path),
                None,
                "{:?}",
                f.path
            );
        }
    }
    let path = Path::new("fuzz.pbs");
    if let Ok(loaded) = perfbisect::store::decode_file(path, data) {
        let end = loaded.valid_end as usize;
        assert!(end <= data.len().max(12));
        if loaded.torn_tail {
            let kept = &data[..end.min(data.len())];
            let again = perfbisect::store::decode_file(path, kept).expect("kept prefix decodes");
            assert_eq!(again.samples, loaded.samples);
        }
    }
}

#[test]
fn seeds_and_past_crashes_replay_through_all_entry_points() {
    let all = inputs();
    let seeds = all
        .iter()
        .filter(|(p, _)| p.components().any(|c| c.as_os_str() == "seeds"))
        .count();
    assert!(seeds >= 10, "only {seeds} seeds found");
    for (path, data) in &all {
        let r = std::panic::catch_unwind(|| check(data));
        assert!(r.is_ok(), "{} panicked", path.display());
    }
}

#[test]
fn seeds_decode_as_their_kind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fuzz/seeds");
    let good = std::fs::read(root.join("store/runs.pbs")).unwrap();
    let l = perfbisect::store::decode_file(Path::new("runs.pbs"), &good).unwrap();
    assert_eq!(l.samples.len(), 4);
    assert!(l.warnings.is_empty());
    let csv = std::fs::read(root.join("csv/basic.csv")).unwrap();
    let s = perfbisect::stats::read_series_csv(&csv[..]).unwrap();
    assert_eq!(s.index, vec![0, 2, 5]);
    let text = std::fs::read_to_string(root.join("config/demo.toml")).unwrap();
    assert!(perfbisect::config::parse(&text, Path::new("/x/perfbisect.toml")).is_ok());
}

/// Inputs at the parsers' limits, generated rather than stored: deep nesting, huge lengths.
#[test]
fn generated_extremes_do_not_panic() {
    let mut cases: Vec<Vec<u8>> = vec![
        format!("a = {}", "[".repeat(100_000)).into_bytes(),
        format!(
            "[tests.t]\ncommand = \"x\"\nmetric = {}",
            "{ a = ".repeat(50_000)
        )
        .into_bytes(),
        format!("index,value\n{}", "0,1\n".repeat(100_000)).into_bytes(),
        b"index,value\n".to_vec(),
        b"index,value\n9223372036854775807,1\n-9223372036854775808,1\n".to_vec(),
    ];
    let mut store = b"PBSTORE\0\x01\0\0\0".to_vec();
    store.extend_from_slice(&u32::MAX.to_le_bytes());
    store.extend_from_slice(&[0; 12]);
    cases.push(store.clone());
    store.truncate(12);
    store.extend_from_slice(&1u32.to_le_bytes());
    store.extend_from_slice(&crc32fast::hash(&[1]).to_le_bytes());
    store.push(1);
    cases.push(store);
    for c in &cases {
        // A thread with a small stack, as a worker thread would have: deep nesting must be an
        // error, not a stack overflow.
        let c = c.clone();
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || check(&c))
            .unwrap()
            .join()
            .expect("panicked");
    }
}
