//! Loading 1,000,000 stored samples, against reading the same file's bytes (the floor).
//! Target: under 0.5 s. Run with `cargo bench --bench store` (scripts/bench-core.sh does).

use std::time::Instant;

use perfbisect::store::{encode_frame, Sample, Store};

fn main() {
    let n: usize = std::env::var("SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::new(dir.path());
    // The header comes from a real appender; the records are framed exactly as `append`
    // frames them, written in one go instead of fsynced one by one.
    drop(store.appender("bench").expect("store"));
    let mut bytes = std::fs::read(store.path("bench")).expect("header");
    for i in 0..n {
        let s = Sample {
            commit: [(i % 30_000) as u8; 20],
            test_hash: 0x1234,
            recipe_hash: 0x5678,
            time: 1_700_000_000 + i as u64,
            round: (i % 3) as u32,
            wall: 0.5 + i as f64 * 1e-9,
            user: 0.25,
            sys: 0.125,
            max_rss: 130_000 + i as u64,
            value: Some(5.5e9 + i as f64),
            error: None,
            fingerprint: 0x9abc,
            import: None,
            window: 1,
            moment: 0,
        };
        bytes.extend_from_slice(&encode_frame(&s).expect("frame"));
    }
    std::fs::write(store.path("bench"), &bytes).expect("write");
    let mb = bytes.len() as f64 / 1e6;

    let best = |f: &dyn Fn() -> usize| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                let k = f();
                assert!(k > 0);
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let raw = best(&|| std::fs::read(store.path("bench")).unwrap().len());
    let load = best(&|| {
        let l = store.load("bench").unwrap();
        assert_eq!(l.samples.len(), n);
        l.samples.len()
    });
    println!("store load: {n} samples, {mb:.1} MB");
    println!("  read file bytes (reference): {:.4} s", raw);
    println!(
        "  Store::load (decode + checksum): {:.4} s  (target < 0.5 s)",
        load
    );
    println!("  ratio load / raw read: {:.1}", load / raw);
    println!("  verdict: {}", if load < 0.5 { "PASS" } else { "FAIL" });
}
