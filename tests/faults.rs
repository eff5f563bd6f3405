//! Issue 5, "nothing is lost, nothing hangs": fault injection through the real binary.
//!
//! SIGKILL at seeded random moments, corrupted store files, two writers on one cache, builds
//! and tests that never end (or fork children that keep the pipes open), gigabytes of output,
//! Ctrl-C, and a full disk (a small tmpfs; needs root, skipped otherwise). No assertion here
//! depends on how fast the machine is: waits are for events, with generous caps.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{specs, with_build, Fixture};
use perfbisect::store::{decode_file, encode_frame, Loaded, Sample};

/// Planted metric of 1-based commit `i`: every commit prints its own exact value, so a sample
/// stored under the wrong commit (or measured on another commit's build) shows.
fn planted(i: usize) -> f64 {
    100.0 * i as f64
}

/// `n` commits printing `planted(i)` without noise; `broken` ones do not compile.
fn fixture(n: usize, broken: &[usize], config: &str) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.metric = planted(i);
            c.noise_pct = 0.0;
            c.broken = broken.contains(&i);
        }),
        config,
    )
}

/// xorshift64*: reproducible "random" kill moments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The binary on `f`'s repository and config with another cache.
fn bin(f: &Fixture, cache: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("perfbisect"));
    c.arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(cache)
        .arg("--no-progress")
        .current_dir(f.dir.path())
        .stdin(Stdio::null());
    c
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run to completion with a generous cap (a hang fails the test instead of blocking it).
fn output(mut cmd: Command) -> Out {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child, Duration::from_secs(300))
}

/// Wait for a spawned child (stdout and stderr piped), killing it after `cap`.
fn finish(child: Child, cap: Duration) -> Out {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(cap).is_err() {
            // SAFETY: sends a signal to our own child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            eprintln!("perfbisect (pid {pid}) still running after {cap:?}: killed");
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = tx.send(());
    watchdog.join().unwrap();
    let code = out.status.code().unwrap_or(-1);
    Out {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn no_panic(o: &Out) {
    assert!(
        !o.stderr.contains("internal error") && !o.stderr.contains("panicked"),
        "perfbisect panicked: {}",
        o.stderr
    );
}

/// `show TEST RANGE --format json` (with `extra` options): the parsed output and stderr;
/// asserts success.
fn show(f: &Fixture, cache: &Path, test: &str, extra: &[&str]) -> (serde_json::Value, String) {
    let mut c = bin(f, cache);
    c.args(extra)
        .args(["show", test, &f.range(), "--format", "json"]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 0, "show failed: {}", o.stderr);
    (serde_json::from_str(&o.stdout).unwrap(), o.stderr)
}

/// Sample count per commit of the range, oldest first.
fn counts(show: &serde_json::Value) -> Vec<u64> {
    show["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["n"].as_u64().unwrap())
        .collect()
}

/// `run TEST RANGE`; asserts exit 0.
fn run_ok(f: &Fixture, cache: &Path, test: &str, extra: &[&str]) -> Out {
    let mut c = bin(f, cache);
    c.args(["run", test, &f.range(), "--format", "json"])
        .args(extra);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 0, "run failed: {}", o.stderr);
    o
}

fn store_file(cache: &Path, test: &str) -> PathBuf {
    cache.join("results").join(format!("{test}.pbs"))
}

/// Decode a store file directly (not through the binary).
fn raw(cache: &Path, test: &str) -> Loaded {
    let p = store_file(cache, test);
    match std::fs::read(&p) {
        Ok(b) => decode_file(&p, &b).unwrap(),
        Err(_) => Loaded::default(),
    }
}

/// Poll `cond` every millisecond until it holds or `cap` passes.
fn wait_until(cap: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < cap {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    cond()
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn dir_names(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A `sleep` whose command line carries a marker unique to this test (a symlink to sleep), so
/// `pgrep -f` can tell whether any of its processes survived.
fn marked_sleep(f: &Fixture, name: &str) -> (PathBuf, String) {
    let marker = format!("pbsleep-{name}-{}", std::process::id());
    let link = f.dir.path().join(&marker);
    std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
    (link, marker)
}

/// Live processes (zombies do not count) whose command line contains `marker`, one
/// `pid cmdline` a line.
fn survivors(marker: &str) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
        if cmdline.contains(marker) && !matches!(state, Some('Z') | Some('X') | None) {
            out.push_str(&format!("{name} {cmdline}\n"));
        }
    }
    out
}

/// Leftovers may take a moment to be reaped by init after SIGKILL.
fn assert_no_survivors(marker: &str) {
    let gone = wait_until(Duration::from_secs(10), || survivors(marker).is_empty());
    let left = survivors(marker);
    if !gone {
        // Clean up what this test started before failing.
        for pid in left.lines().filter_map(|l| l.split_whitespace().next()) {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
    }
    assert!(gone, "processes left running: {left}");
}

fn sigint(child: &Child) {
    // SAFETY: sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

fn crash_config() -> String {
    with_build(
        r#"timeout = "2m"

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3
"#,
    )
}

/// Case 1: SIGKILL at seeded random moments of `run` (start-up, build phase, measure phase), several
/// times on one cache, then resume: nothing stored is ever lost, nothing is doubled, every
/// sample belongs to the commit it names.
#[test]
fn sigkill_at_random_moments_loses_nothing() {
    // Commits 2..=5 are in the range; 4 does not compile (a failure record is written too).
    let f = fixture(5, &[4], &crash_config());
    let repeats = 3u64;
    let seed = std::env::var("PERFBISECT_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_f00d_u64);
    eprintln!("seed {seed} (set PERFBISECT_FAULT_SEED to replay another)");
    let mut rng = Rng(seed | 1);
    let (mut kills, mut by_phase, mut torn, mut lost) = (0, [0usize; 3], 0, 0u64);
    let mut finished_first = 0;
    let mut episode = 0;
    while kills < 40 && episode < 30 {
        episode += 1;
        let cache = f.dir.path().join(format!("cache-{episode}"));
        let store = store_file(&cache, "value");
        let mut before = vec![0u64; 4];
        for _ in 0..4 {
            let mut cmd = bin(&f, &cache);
            cmd.args(["run", "value", &f.range()])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut child = cmd.spawn().unwrap();
            let phase = [0, 1, 1, 2, 2][rng.below(5) as usize];
            let cap = Duration::from_secs(60);
            match phase {
                // Start-up: lock, config, plan, first checkout.
                0 => std::thread::sleep(Duration::from_millis(rng.below(40))),
                // Build phase: after the k-th build log appears, a little later.
                1 => {
                    let k = 1 + rng.below(4) as usize;
                    wait_until(cap, || {
                        dir_names(&cache.join("logs")).len() >= k
                            || child.try_wait().unwrap().is_some()
                    });
                    std::thread::sleep(Duration::from_micros(rng.below(60_000)));
                }
                // Measure phase: once the store has grown past a random size.
                _ => {
                    let target = 12 + rng.below(9 * 90);
                    wait_until(cap, || {
                        file_len(&store) >= target || child.try_wait().unwrap().is_some()
                    });
                    std::thread::sleep(Duration::from_micros(rng.below(3_000)));
                }
            }
            if child.try_wait().unwrap().is_some() {
                finished_first += 1;
                break;
            }
            child.kill().unwrap();
            child.wait().unwrap();
            kills += 1;
            by_phase[phase] += 1;

            let (after, stderr) = show(&f, &cache, "value", &["-v"]);
            if stderr.contains("incomplete record") {
                torn += 1;
            }
            let now = counts(&after);
            for (b, a) in before.iter().zip(&now) {
                lost += b.saturating_sub(*a);
                assert!(a <= &repeats, "more than {repeats} samples: {now:?}");
            }
            assert!(
                now.iter().zip(&before).all(|(a, b)| a >= b),
                "samples lost: {before:?} -> {now:?}"
            );
            before = now;
        }
        // Resume: everything completes, exactly `repeats` each, every value the planted one.
        run_ok(&f, &cache, "value", &[]);
        let (done, stderr) = show(&f, &cache, "value", &["-v"]);
        assert!(!stderr.contains("warning"), "{stderr}");
        for (k, c) in done["commits"].as_array().unwrap().iter().enumerate() {
            let i = k + 2;
            if i == 4 {
                assert_eq!(c["status"], "build-failed", "{c}");
                assert_eq!(c["n"], 0, "{c}");
            } else {
                assert_eq!(c["n"], repeats, "commit {i}: {c}");
                assert_eq!(c["min"].as_f64(), Some(planted(i)), "commit {i}: {c}");
                assert_eq!(c["max"].as_f64(), Some(planted(i)), "commit {i}: {c}");
            }
        }
        let loaded = raw(&cache, "value");
        assert_eq!(
            loaded.samples.len() as u64,
            3 * repeats,
            "duplicates stored"
        );
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        // Only finished entries in the cache; scratch leftovers go with `cache gc`.
        for name in dir_names(&cache.join("failed")) {
            assert!(
                name.starts_with(&f.ids[3]) && name.ends_with(".txt"),
                "{name}"
            );
        }
        for name in dir_names(&cache.join("artifacts")) {
            assert!(
                [1, 2, 4].iter().any(|&k| name.starts_with(&f.ids[k])),
                "{name}"
            );
        }
        let mut gc = bin(&f, &cache);
        gc.args(["cache", "gc"]);
        assert_eq!(output(gc).code, 0);
        assert!(dir_names(&cache.join("tmp")).is_empty());
        std::fs::remove_dir_all(&cache).unwrap();
    }
    eprintln!(
        "{kills} SIGKILLs in {episode} episodes (start-up {}, build {}, measure {}), {torn} torn \
         records cut, {finished_first} runs finished before their kill, {lost} samples lost",
        by_phase[0], by_phase[1], by_phase[2]
    );
    assert!(kills >= 20, "only {kills} kills");
    assert_eq!(lost, 0);
}

fn small_config() -> String {
    with_build(
        r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3
"#,
    )
}

/// Offsets of the frames of an intact store file.
fn frame_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offs = Vec::new();
    let mut off = 12;
    while off + 8 <= bytes.len() {
        offs.push(off);
        let len = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        off += 8 + len;
    }
    offs
}

/// A frame in the current layout but with another record version byte (CRC recomputed).
fn frame_with_version(sample: &Sample, version: u8) -> Vec<u8> {
    let mut frame = encode_frame(sample).unwrap();
    frame[8] = version;
    let crc = crc32fast::hash(&frame[8..]);
    frame[4..8].copy_from_slice(&crc.to_le_bytes());
    frame
}

/// Case 2: Damaged store files, through the binary: detected, reported with file and offset,
/// intact records kept, never a panic; a newer format or a foreign file is a clear error that
/// leaves the file untouched.
#[test]
fn corrupt_store_files_are_reported_and_the_rest_is_kept() {
    let f = fixture(4, &[], &small_config());
    let cache = f.cache.clone();
    run_ok(&f, &cache, "value", &[]);
    let path = store_file(&cache, "value");
    let name = path.display().to_string();
    let good = std::fs::read(&path).unwrap();
    let offs = frame_offsets(&good);
    assert_eq!(offs.len(), 9);
    let total = |s: &serde_json::Value| counts(s).iter().sum::<u64>();
    let mut faults = 0;

    // Torn tail: the last record cut short.
    std::fs::write(&path, &good[..good.len() - 5]).unwrap();
    let (s, err) = show(&f, &cache, "value", &["-v"]);
    assert_eq!(total(&s), 8);
    let at = format!("incomplete record at offset {}", offs[8]);
    assert!(err.contains(&name) && err.contains(&at), "{err}");
    let o = run_ok(&f, &cache, "value", &[]);
    assert!(
        o.stderr.contains(&at),
        "run must say what it cut: {}",
        o.stderr
    );
    assert_eq!(counts(&show(&f, &cache, "value", &[]).0), vec![3, 3, 3]);
    assert!(raw(&cache, "value").warnings.is_empty());
    faults += 1;

    // Flipped bytes in the middle of the second record: it alone is skipped.
    let mut bad = good.clone();
    bad[offs[1] + 14] ^= 0x5a;
    bad[offs[1] + 15] ^= 0xa5;
    std::fs::write(&path, &bad).unwrap();
    let (s, err) = show(&f, &cache, "value", &["-v"]);
    assert_eq!(total(&s), 8);
    let at = format!("bytes {}..{} are corrupt", offs[1], offs[2]);
    assert!(err.contains(&name) && err.contains(&at), "{err}");
    let o = run_ok(&f, &cache, "value", &[]);
    assert!(o.stderr.contains(&at), "{}", o.stderr);
    assert_eq!(counts(&show(&f, &cache, "value", &[]).0), vec![3, 3, 3]);
    assert_eq!(raw(&cache, "value").samples.len(), 9);
    faults += 1;

    // A corrupt length field (a huge record) in the middle.
    let mut bad = good.clone();
    bad[offs[4] + 3] = 0x7f;
    std::fs::write(&path, &bad).unwrap();
    let (s, err) = show(&f, &cache, "value", &["-v"]);
    assert_eq!(total(&s), 8);
    assert!(err.contains(&format!("bytes {}..", offs[4])), "{err}");
    faults += 1;

    // A record written by a newer perfbisect: skipped by version, named by offset.
    let sample = raw(&cache, "value").samples[0].clone();
    let mut newer = good.clone();
    newer.extend_from_slice(&frame_with_version(&sample, 2));
    newer.extend_from_slice(&encode_frame(&sample).unwrap());
    std::fs::write(&path, &newer).unwrap();
    let (s, err) = show(&f, &cache, "value", &["-v"]);
    assert_eq!(total(&s), 10, "the record after the newer one is kept");
    let at = format!("record at offset {} has version 2", good.len());
    assert!(err.contains(&name) && err.contains(&at), "{err}");
    // A writer appends after it and keeps it (a newer perfbisect may read it).
    let o = run_ok(&f, &cache, "value", &["--again"]);
    assert!(o.stderr.contains(&at), "{}", o.stderr);
    let l = raw(&cache, "value");
    assert_eq!(l.samples.len(), 10 + 9);
    assert_eq!(l.warnings.len(), 1);
    faults += 1;

    // A file header from a newer format: a clear error, exit 1, the file untouched.
    let mut newer = good.clone();
    newer[8] = 2;
    std::fs::write(&path, &newer).unwrap();
    for args in [&["show", "value"][..], &["run", "value"][..]] {
        let mut c = bin(&f, &cache);
        c.args(args).arg(f.range());
        let o = output(c);
        no_panic(&o);
        assert_eq!(o.code, 1, "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains(&name) && o.stderr.contains("newer perfbisect"),
            "{}",
            o.stderr
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            newer,
            "{args:?} changed the file"
        );
    }
    faults += 1;

    // Garbage: not a store at all; a clear error, exit 1, never overwritten.
    let mut rng = Rng(42);
    let garbage: Vec<u8> = (0..5000).map(|_| rng.next() as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    for args in [&["show", "value"][..], &["run", "value"][..]] {
        let mut c = bin(&f, &cache);
        c.args(args).arg(f.range());
        let o = output(c);
        no_panic(&o);
        assert_eq!(o.code, 1, "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains(&name) && o.stderr.contains("not a perfbisect result file"),
            "{}",
            o.stderr
        );
        assert_eq!(std::fs::read(&path).unwrap(), garbage);
    }
    faults += 1;

    // Garbage after a valid header: every byte range reported, nothing kept, no panic.
    let mut junk = good[..12].to_vec();
    junk.extend_from_slice(&garbage);
    std::fs::write(&path, &junk).unwrap();
    let (s, err) = show(&f, &cache, "value", &["-v"]);
    assert_eq!(total(&s), 0);
    assert!(err.contains(&name), "{err}");
    faults += 1;

    // A crash while the header was being written (a prefix of it): the next writer starts
    // the file over and it stays readable.
    for cut in [0, 3, 11] {
        std::fs::write(&path, &good[..cut]).unwrap();
        let (s, _) = show(&f, &cache, "value", &[]);
        assert_eq!(total(&s), 0);
        run_ok(&f, &cache, "value", &[]);
        let l = raw(&cache, "value");
        assert_eq!(l.samples.len(), 9, "cut {cut}: {:?}", l.warnings);
        assert!(l.warnings.is_empty(), "cut {cut}: {:?}", l.warnings);
        assert_eq!(counts(&show(&f, &cache, "value", &[]).0), vec![3, 3, 3]);
        faults += 1;
    }
    eprintln!("{faults} store faults injected");
}

/// Case 2b: Skipped records are visible without `-v`, once per load.
#[test]
fn skipped_records_are_reported_without_verbose() {
    let f = fixture(2, &[], &small_config());
    let cache = f.cache.clone();
    run_ok(&f, &cache, "value", &[]);
    let path = store_file(&cache, "value");
    let mut bad = std::fs::read(&path).unwrap();
    let offs = frame_offsets(&bad);
    bad[offs[1] + 14] ^= 0x5a;
    std::fs::write(&path, &bad).unwrap();
    let (_, err) = show(&f, &cache, "value", &[]);
    assert!(
        err.contains(&path.display().to_string()) && err.contains("skipped"),
        "{err}"
    );
}

/// Case 3: Two `run`s on one cache at once: the second waits with a message, both finish, and the
/// store holds each run exactly once.
#[test]
fn two_runs_on_one_cache_wait_and_stay_consistent() {
    let f = fixture(
        4,
        &[],
        &with_build(
            r#"
[tests.value]
command = "sleep 0.05; ./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3

[tests.other]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 2
"#,
        ),
    );
    let cache = f.cache.clone();
    let spawn = |tests: &str| {
        let mut c = bin(&f, &cache);
        c.args(["run", tests, &f.range(), "--format", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let first = spawn("value,other");
    let owner = cache.join("lock.owner");
    assert!(wait_until(Duration::from_secs(60), || {
        std::fs::read_to_string(&owner).is_ok_and(|s| s.trim() == first.id().to_string())
    }));
    let mut second = spawn("all");
    // Readers do not wait for the lock: while the writers work, `show` always succeeds and
    // never sees a count go down.
    let mut seen = vec![0u64; 3];
    let mut reads = 0;
    while second.try_wait().unwrap().is_none() && reads < 200 {
        let now = counts(&show(&f, &cache, "value", &[]).0);
        assert!(
            now.iter().zip(&seen).all(|(a, b)| a >= b),
            "{seen:?} -> {now:?}"
        );
        seen = now;
        reads += 1;
    }
    let second = finish(second, Duration::from_secs(300));
    let first = finish(first, Duration::from_secs(300));
    for o in [&first, &second] {
        no_panic(o);
        assert_eq!(o.code, 0, "{}", o.stderr);
    }
    assert!(
        second.stderr.contains("waiting for another perfbisect"),
        "{}",
        second.stderr
    );
    for (test, repeats) in [("value", 3), ("other", 2)] {
        let l = raw(&cache, test);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.samples.len(), 3 * repeats, "{test}: duplicates");
        assert_eq!(
            counts(&show(&f, &cache, test, &[]).0),
            vec![repeats as u64; 3]
        );
    }
    // The second found everything done once it had the lock.
    let s: serde_json::Value = serde_json::from_str(second.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(s["runs"], 0, "{s}");
    assert_eq!(s["builds"], 0, "{s}");
}

/// Case 4: A build and tests that never end, some forking children that keep stdout open: killed
/// with their whole process group at the timeout, recorded as failures, and the run goes on.
#[test]
fn hung_builds_and_tests_are_killed_with_their_group() {
    let dir = tempfile::tempdir().unwrap();
    // The config needs the commit ids, so write it after the repository exists.
    let f = fixture(5, &[], "");
    let (sleep, marker) = marked_sleep(&f, "hang");
    let s = sleep.display();
    let (build_hang, test_hang, test_bg) = (&f.ids[1], &f.ids[2], &f.ids[3]);
    let config = format!(
        r#"
[build]
command = '''
if [ "$PERFBISECT_COMMIT" = {build_hang} ]; then {s} 1000 & {s} 1000; fi
cc -O0 -o app app.c -lm
'''
artifacts = ["app"]
timeout = "2s"

[tests.value]
command = '''
case "$PERFBISECT_COMMIT" in
  {test_hang}) {s} 1000 & {s} 1000 ;;
  {test_bg}) {s} 1000 & ./app ;;
  *) ./app ;;
esac
'''
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 2
timeout = "1s"
"#
    );
    std::fs::write(&f.config, config).unwrap();
    let cache = dir.path().join("cache");
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(&format!(
            "build failed: {} Commit 2 (build timed out after 2s)",
            &build_hang[..10]
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("1 build failed") && o.stdout.contains("6 runs (2 failed)"),
        "{}",
        o.stdout
    );
    assert_no_survivors(&marker);

    let mut ls = bin(&f, &cache);
    ls.args(["cache", "ls"]);
    let ls = output(ls);
    assert!(
        ls.stdout.contains("failed builds (1)") && ls.stdout.contains(&build_hang[..10]),
        "{}",
        ls.stdout
    );
    let failed = std::fs::read_dir(cache.join("failed"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert!(std::fs::read_to_string(failed.path())
        .unwrap()
        .contains("timed out"));

    let (s, _) = show(&f, &cache, "value", &[]);
    let status: Vec<&str> = s["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    // The background child of commit 4 must not hold the run until its timeout: its runs
    // succeed.
    assert_eq!(status, ["build-failed", "run-failed", "ok", "ok"], "{s}");
    let mut csv = bin(&f, &cache);
    csv.args(["show", "value", &f.range(), "--format", "csv"]);
    let csv = output(csv).stdout;
    let hung: Vec<&str> = csv.lines().filter(|l| l.contains(test_hang)).collect();
    assert_eq!(hung.len(), 2, "{csv}");
    assert!(hung.iter().all(|l| l.contains("timed out")), "{csv}");
}

/// Case 4b: Gigabytes of output: read with bounded memory, and the metric on the last line found.
#[test]
fn flood_of_output_is_read_with_bounded_memory() {
    let f = fixture(
        2,
        &[],
        &with_build(
            r#"
[tests.flood]
command = "head -c 1500000000 /dev/zero; echo; yes | head -c 40000000; head -c 300000000 /dev/zero >&2; echo value: 5"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 1
timeout = "10m"

[tests.longline]
command = "head -c 1000000000 /dev/zero; echo value: 6"
metric = { regex = "value: ([0-9.]+)" }
repeats = 1
timeout = "10m"

[tests.json]
command = "head -c 100000000 /dev/zero; echo '{\"v\": 1}'"
metric = { json = "/v" }
repeats = 1
"#,
        ),
    );
    let mut cmd = bin(&f, &f.cache);
    cmd.args(["run", "flood,longline,json", &f.ids[1]])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Reaped below with wait4, for its resource usage.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut { stderr }, &mut s).unwrap();
        s
    });
    // wait4 gives the peak RSS of perfbisect (and, no larger, of what it waited for).
    let mut status = 0;
    // SAFETY: plain-old-data out-parameter; our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(r, child.id() as i32);
    let err = reader.join().unwrap();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{err}"
    );
    let peak_mb = usage.ru_maxrss as f64 / 1024.0;
    eprintln!("peak RSS {peak_mb:.1} MB while reading 2.9 GB of output");
    assert!(peak_mb < 100.0, "perfbisect used {peak_mb:.1} MB");

    let mut csv = bin(&f, &f.cache);
    csv.args(["show", "flood", &f.ids[1], "--format", "csv"]);
    let csv = output(csv).stdout;
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.lines().nth(1).unwrap().contains(",5,"), "{csv}");
    // The metric at the end of a 1 GB line.
    let mut csv = bin(&f, &f.cache);
    csv.args(["show", "longline", &f.ids[1], "--format", "csv"]);
    let csv = output(csv).stdout;
    assert!(csv.lines().nth(1).unwrap().contains(",6,"), "{csv}");
    // A JSON metric over 16 MiB is a failed run that says why, not a memory blow-up.
    let mut csv = bin(&f, &f.cache);
    csv.args(["show", "json", &f.ids[1], "--format", "csv"]);
    let csv = output(csv).stdout;
    assert!(csv.contains("longer than 16 MiB"), "{csv}");
}

fn slow_config() -> String {
    with_build(
        r#"
[tests.value]
command = "SLEEP 0.3; ./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3
"#,
    )
}

/// Case 5: Ctrl-C in the measure phase: the run in flight finishes and is stored, exit 130 with how
/// to resume, the store is intact, and the same command then completes.
#[test]
fn sigint_stops_after_the_run_in_flight_and_resumes() {
    let f = fixture(4, &[], "");
    let (sleep, marker) = marked_sleep(&f, "int1");
    std::fs::write(
        &f.config,
        slow_config().replace("SLEEP", &sleep.display().to_string()),
    )
    .unwrap();
    let cache = f.cache.clone();
    let store = store_file(&cache, "value");
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    // After the first stored run, while the second is in flight.
    assert!(wait_until(Duration::from_secs(120), || file_len(&store) > 12));
    assert!(wait_until(Duration::from_secs(60), || !survivors(&marker).is_empty()));
    let stored = raw(&cache, "value").samples.len();
    sigint(&child);
    let o = finish(child, Duration::from_secs(120));
    no_panic(&o);
    assert_eq!(o.code, 130, "{}", o.stderr);
    assert!(
        o.stderr.contains("run the same command again to resume"),
        "{}",
        o.stderr
    );
    let l = raw(&cache, "value");
    assert!(l.warnings.is_empty() && !l.torn_tail, "{:?}", l.warnings);
    // The run in flight was finished and stored, and nothing after it started.
    assert!(
        (stored..=stored + 1).contains(&l.samples.len()) && l.samples.len() < 9,
        "{stored} stored before Ctrl-C, {} after",
        l.samples.len()
    );
    assert!(l.samples.iter().all(|s| s.value.is_some()));
    assert_no_survivors(&marker);

    let o = run_ok(&f, &cache, "value", &[]);
    assert!(!o.stderr.contains("cannot check out"), "{}", o.stderr);
    assert_eq!(counts(&show(&f, &cache, "value", &[]).0), vec![3, 3, 3]);
    assert_eq!(raw(&cache, "value").samples.len(), 9);
}

/// Case 5b: Ctrl-C during a build kills the build (group and all), leaves neither a cached entry nor
/// a failure record for it, and the worktree is reused by the next run.
#[test]
fn sigint_during_a_build_kills_it_and_the_worktree_is_reused() {
    let f = fixture(3, &[], "");
    let (sleep, marker) = marked_sleep(&f, "int2");
    std::fs::write(
        &f.config,
        format!(
            r#"
[build]
command = "cc -O0 -o app app.c -lm && if [ ! -e {stamp} ]; then {s} 1000 & {s} 1000; fi"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 2
"#,
            s = sleep.display(),
            stamp = f.dir.path().join("stamp").display()
        ),
    )
    .unwrap();
    let cache = f.cache.clone();
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    assert!(wait_until(Duration::from_secs(60), || !survivors(&marker).is_empty()));
    sigint(&child);
    let o = finish(child, Duration::from_secs(60));
    no_panic(&o);
    assert_eq!(o.code, 130, "{}", o.stderr);
    assert!(
        o.stderr.contains("run the same command again"),
        "{}",
        o.stderr
    );
    assert_no_survivors(&marker);
    assert!(dir_names(&cache.join("artifacts")).is_empty());
    assert!(dir_names(&cache.join("failed")).is_empty());

    std::fs::write(f.dir.path().join("stamp"), "").unwrap();
    let o = run_ok(&f, &cache, "value", &[]);
    let s: serde_json::Value = serde_json::from_str(o.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(s["builds"], 2, "{s}");
    assert!(!o.stderr.contains("cannot"), "{}", o.stderr);
    assert_eq!(counts(&show(&f, &cache, "value", &[]).0), vec![2, 2]);
}

/// Case 5c: A second Ctrl-C stops at once, without waiting for the run in flight, and takes the
/// run's process group with it.
#[test]
fn second_sigint_stops_at_once() {
    let f = fixture(2, &[], "");
    let (sleep, marker) = marked_sleep(&f, "int3");
    std::fs::write(
        &f.config,
        slow_config().replace("SLEEP 0.3", &format!("{} 1000", sleep.display())),
    )
    .unwrap();
    let cache = f.cache.clone();
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    assert!(wait_until(Duration::from_secs(120), || !survivors(&marker).is_empty()));
    sigint(&child);
    // The first one waits for the run in flight (here: forever); the handler has printed
    // its note when the second arrives.
    std::thread::sleep(Duration::from_millis(300));
    sigint(&child);
    let o = finish(child, Duration::from_secs(60));
    assert_eq!(o.code, 130, "{}", o.stderr);
    assert!(o.stderr.contains("stopping now"), "{}", o.stderr);
    assert_no_survivors(&marker);
    let l = raw(&cache, "value");
    assert!(
        l.warnings.is_empty() && l.samples.is_empty(),
        "{:?}",
        l.warnings
    );
}

/// Unmounts on drop, even when the test fails.
struct Mount(PathBuf);

impl Mount {
    /// A tmpfs of `size` at `dir`, or None (with the reason printed) when that is impossible.
    fn tmpfs(dir: &Path, size: &str) -> Option<Mount> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a small tmpfs needs root");
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .unwrap();
        if !o.status.success() {
            eprintln!(
                "skipped: cannot mount a tmpfs: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Some(Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fill the file system holding `dir` with one file; returns it.
fn fill(dir: &Path, name: &str) -> PathBuf {
    use std::io::Write;
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    let block = vec![7u8; 4096];
    while f.write_all(&block).is_ok() {}
    while f.write_all(&block[..1]).is_ok() {}
    let _ = f.sync_all();
    p
}

/// Case 6: A full disk: artifacts that do not fit and results that cannot be appended give a clear
/// error, exit 1, and leave no half entry behind.
#[test]
fn full_disk_leaves_no_half_entries() {
    let f = fixture(3, &[], "");
    let outside = f.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        &f.config,
        format!(
            r#"
[build]
command = "cc -O0 -o app app.c -lm && if [ -e {big_flag} ]; then head -c 2000000 /dev/urandom > {out}/big && ln -sf {out}/big big; else echo small > big; fi"
artifacts = ["app", "big"]

[tests.value]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 40

[tests.fresh]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 1
"#,
            big_flag = outside.join("flag").display(),
            out = outside.display()
        ),
    )
    .unwrap();
    let cache = f.dir.path().join("tmpfs");
    let Some(_mount) = Mount::tmpfs(&cache, "1M") else {
        return;
    };

    // Artifacts larger than the disk: the copy fails; no entry, no failure record, tmp clean.
    std::fs::write(outside.join("flag"), "").unwrap();
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("No space left on device") && o.stderr.contains("artifact `big`"),
        "{}",
        o.stderr
    );
    assert!(dir_names(&cache.join("artifacts")).is_empty());
    assert!(dir_names(&cache.join("failed")).is_empty());
    let mut gc = bin(&f, &cache);
    gc.args(["cache", "gc"]);
    assert_eq!(output(gc).code, 0);
    assert!(dir_names(&cache.join("tmp")).is_empty());

    // Small artifacts: fine. Then the disk fills up and results cannot be appended.
    std::fs::remove_file(outside.join("flag")).unwrap();
    run_ok(&f, &cache, "value", &[]);
    let store = store_file(&cache, "value");
    let before = raw(&cache, "value").samples.len();
    assert_eq!(before, 80);
    // (Each run rewrites lock.owner; without it there, that frees no page of the disk.)
    std::fs::remove_file(cache.join("lock.owner")).unwrap();
    let filler = fill(&cache, "filler1");
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range(), "--again"]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("No space left on device")
            && o.stderr.contains(&store.display().to_string()),
        "{}",
        o.stderr
    );
    let l = raw(&cache, "value");
    assert!(
        l.warnings.is_empty() && !l.torn_tail,
        "half a record left: {:?}",
        l.warnings
    );
    assert!(l.samples.len() >= before && l.samples.len() < 2 * before);
    // A store that cannot even get its header: an error, then fine once there is room.
    std::fs::remove_file(cache.join("lock.owner")).unwrap();
    let filler2 = fill(&cache, "filler2");
    let mut c = bin(&f, &cache);
    c.args(["run", "fresh", &f.range()]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("No space left on device"), "{}", o.stderr);

    std::fs::remove_file(filler).unwrap();
    std::fs::remove_file(filler2).unwrap();
    run_ok(&f, &cache, "fresh", &[]);
    run_ok(&f, &cache, "value", &[]);
    let (s, err) = show(&f, &cache, "fresh", &["-v"]);
    assert_eq!(counts(&s), vec![1, 1]);
    assert!(!err.contains("warning"), "{err}");
    let (_, err) = show(&f, &cache, "value", &["-v"]);
    assert!(!err.contains("warning"), "{err}");
}
