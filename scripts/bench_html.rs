//! Rendering the HTML site (`report all --format html --out DIR`) for 24 tests × 1,000
//! commits, as curl's cron page has them, against loading the same samples (the floor: what
//! any report must read). Target: under 3 s. Run with `cargo bench --bench html`
//! (`scripts/bench-core.sh` does); `COMMITS` and `TESTS` change the size.
//!
//! The repository is generated with `git fast-import` (perfbisect's demo generator) and the
//! stores are written directly, framed as `append` frames them, with the hashes of the
//! config's test and build definitions, so `report` takes them as measured.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use perfbisect::scaffold::demo::{create_repo, CommitSpec};
use perfbisect::store::{commit_key, encode_frame, Sample, Store};

/// curl's test names (DESIGN.md): speeds, allocations, RSS, request rates, struct sizes.
const NAMES: [&str; 24] = [
    "100G-speed",
    "single-numallocs",
    "single-maxalloc",
    "h1-par-dl-speed",
    "h2-par-dl-speed",
    "h3-par-dl-speed",
    "h1-par-ul-speed",
    "h2-par-ul-speed",
    "h3-par-ul-speed",
    "h1-par-dl-mem",
    "h2-par-dl-mem",
    "h3-par-dl-mem",
    "h1-req-rate",
    "h2-req-rate",
    "h3-req-rate",
    "h1-req-mem",
    "h2-req-mem",
    "h3-req-mem",
    "easy-handle",
    "multi-handle",
    "connectdata",
    "url-parse",
    "base64-enc",
    "printf-speed",
];

fn main() {
    let commits: usize = env("COMMITS", 1000);
    let tests: usize = env("TESTS", 24).min(NAMES.len());
    let repeats = 5usize;
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    let specs: Vec<CommitSpec> = (1..=commits)
        .map(|i| CommitSpec {
            subject: format!("Change {i}"),
            ..CommitSpec::default()
        })
        .collect();
    let t = Instant::now();
    let ids = create_repo(&repo, &specs).expect("repository");
    println!(
        "generated a {commits}-commit repository in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    // A config of `tests` tests, curl-like units, stakes and directions.
    let mut cfg = String::from("[build]\ncommand = \"true\"\nartifacts = [\"app.c\"]\n");
    for (k, name) in NAMES.iter().take(tests).enumerate() {
        let (unit, dir, level, det) = level_of(k);
        cfg += &format!(
            "\n[tests.{name}]\ncommand = \"./app {k}\"\nmetric = {{ regex = \"v: ([0-9.]+)\" }}\nunit = \"{unit}\"\ndirection = \"{dir}\"\nstake = {level}\ndeterministic = {det}\ndescription = \"{name} of the generated benchmark\"\n"
        );
    }
    let config = dir.path().join("perfbisect.toml");
    std::fs::write(&config, &cfg).expect("config");
    let parsed = perfbisect::config::load(&config).expect("config parses");
    let recipe = parsed.build.recipe_hash();
    let cache = dir.path().join("cache");
    let store = Store::new(cache.join("results"));

    // The samples: noise, a step in the middle and a slow drift, as a cron history has.
    let mut total = 0usize;
    for (k, name) in NAMES.iter().take(tests).enumerate() {
        let test = parsed.test(name).expect("test");
        let (_, _, level, det) = level_of(k);
        drop(store.appender(name).expect("store"));
        let mut bytes = std::fs::read(store.path(name)).expect("header");
        let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ k as u64;
        for (i, id) in ids.iter().enumerate() {
            let oid = gix::ObjectId::from_hex(id.as_bytes()).expect("id");
            let step = if i > commits * (k + 3) / (tests + 6) {
                1.03
            } else {
                1.0
            };
            let drift = 1.0 + i as f64 * 1e-6;
            let runs = if det { 1 } else { repeats };
            for r in 0..runs {
                let noise = if det { 0.0 } else { gauss(&mut rng) * 0.01 };
                let value = if det {
                    (level * step).round()
                } else {
                    level * step * drift * (1.0 + noise)
                };
                let s = Sample {
                    commit: commit_key(&oid),
                    test_hash: test.definition_hash(),
                    recipe_hash: recipe,
                    time: 1_700_000_000 + (i * 1200 + r) as u64,
                    round: 0,
                    wall: 1.0,
                    user: 0.5,
                    sys: 0.1,
                    max_rss: 10_000_000,
                    value: Some(value),
                    error: None,
                    fingerprint: 0,
                    import: None,
                    window: 1,
                    moment: 0,
                };
                bytes.extend_from_slice(&encode_frame(&s).expect("frame"));
                total += 1;
            }
        }
        std::fs::write(store.path(name), &bytes).expect("write store");
    }
    println!("stored {total} samples of {tests} tests");

    let bin = env!("CARGO_BIN_EXE_perfbisect");
    let run = |out: &Path| {
        let t = Instant::now();
        let st = Command::new(bin)
            .arg("--repo")
            .arg(&repo)
            .arg("--config")
            .arg(&config)
            .arg("--cache")
            .arg(&cache)
            .args(["-q", "report", "all", "--format", "html", "--out"])
            .arg(out)
            .status()
            .expect("perfbisect runs");
        assert!(st.success(), "report failed");
        t.elapsed().as_secs_f64()
    };
    // The reference: loading every test's samples, in this process.
    let load = best(5, &|| {
        let t = Instant::now();
        let mut n = 0;
        for name in NAMES.iter().take(tests) {
            n += store.load(name).expect("load").samples.len();
        }
        assert_eq!(n, total);
        t.elapsed().as_secs_f64()
    });
    let render = best(3, &|| run(&dir.path().join("site")));
    let files = std::fs::read_dir(dir.path().join("site/img"))
        .map(|d| d.count())
        .unwrap_or(0);
    println!("html site: {tests} tests × {commits} commits, {total} samples");
    println!("  load the samples (reference): {load:.3} s");
    println!(
        "  perfbisect report all --format html (whole process, {} pages, {files} charts): {render:.3} s  (target < 3 s)",
        tests + 1
    );
    println!("  ratio render / load: {:.1}", render / load);
    println!("  verdict: {}", if render < 3.0 { "PASS" } else { "FAIL" });
}

/// (unit, direction, typical value, deterministic) of the `k`th test.
fn level_of(k: usize) -> (&'static str, &'static str, f64, bool) {
    match k % 6 {
        0 => ("bytes/sec", "higher", 5.49e9, false),
        1 => ("allocs", "lower", 100.0, true),
        2 => ("bytes", "lower", 130_622.0, false),
        3 => ("req/s", "higher", 30_100.0, false),
        4 => ("bytes", "lower", 13.3e6, false),
        _ => ("bytes", "lower", 3064.0, true),
    }
}

/// A standard normal number (Box-Muller on xorshift).
fn gauss(state: &mut u64) -> f64 {
    let mut u = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        ((*state >> 11) as f64 + 0.5) / 9_007_199_254_740_992.0
    };
    let (a, b) = (u(), u());
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

fn best(n: usize, f: &dyn Fn() -> f64) -> f64 {
    (0..n).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
