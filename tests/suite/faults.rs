//! Issue 5, "nothing is lost, nothing hangs": fault injection through the real binary.
//!
//! SIGKILL at seeded random moments, corrupted store files, two writers on one cache, builds
//! and tests that never end (or fork children that keep the pipes open), gigabytes of output,
//! Ctrl-C, and a full disk (a small tmpfs; needs root: skipped otherwise, with the reason on
//! stderr, unless `PERFBISECT_REQUIRE_ROOT_TESTS` is set, as `.ci/run` does). No assertion here
//! depends on how fast the machine is: the tests wait for what they can observe (a build log, a
//! sample count in the store, a run at a [`Gate`], a message on stderr), with generous caps, and
//! timeouts are met only by commands that hang.

use crate::common;

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
    bin_with(f, cache, &f.config)
}

/// [`bin`] with another config file.
fn bin_with(f: &Fixture, cache: &Path, config: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("perfbisect"));
    c.arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(config)
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
    (
        common::range_only(serde_json::from_str(&o.stdout).unwrap()),
        o.stderr,
    )
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

/// Stored samples of `test`, as a reader sees them while a writer appends (a torn tail or a
/// file still being created counts what is complete).
fn stored(cache: &Path, test: &str) -> usize {
    let p = store_file(cache, test);
    std::fs::read(&p)
        .ok()
        .and_then(|b| decode_file(&p, &b).ok())
        .map_or(0, |l| l.samples.len())
}

/// A turnstile for test commands, so that a test waits for a run to be in flight instead of
/// guessing how long runs take. Each run that passes [`Gate::command`] counts itself in
/// `started` and then waits until the test opens its number (0-based, in start order) or the
/// whole gate. The wait polls with a marked sleep, so [`survivors`] sees a waiting run.
struct Gate {
    started: PathBuf,
    open: PathBuf,
    sleep: PathBuf,
}

impl Gate {
    fn new(f: &Fixture, sleep: &Path) -> Gate {
        let started = f.dir.path().join("gate-started");
        let open = f.dir.path().join("gate-open");
        std::fs::write(&started, "").unwrap();
        std::fs::create_dir_all(&open).unwrap();
        Gate {
            started,
            open,
            sleep: sleep.to_path_buf(),
        }
    }

    /// Shell commands (end with `;` or a newline before the test's own) that count this run
    /// and wait for its turn.
    fn command(&self) -> String {
        format!(
            "n=$(($(wc -l < {started}))); echo run >> {started}; until [ -e {open}/$n ] || [ -e {open}/all ]; do {sleep} 0.01; done",
            started = self.started.display(),
            open = self.open.display(),
            sleep = self.sleep.display()
        )
    }

    /// Runs that have reached the gate so far (waiting or through).
    fn started(&self) -> usize {
        std::fs::read_to_string(&self.started)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// Let run `n` (0-based) through.
    fn open(&self, n: usize) {
        std::fs::write(self.open.join(n.to_string()), "").unwrap();
    }

    /// Let every run through, now and later.
    fn open_all(&self) {
        std::fs::write(self.open.join("all"), "").unwrap();
    }

    /// Close the gate again (after [`Gate::open_all`]).
    fn close_all(&self) {
        let _ = std::fs::remove_file(self.open.join("all"));
    }
}

/// A spawned perfbisect whose stderr is collected as it comes, so that a test can wait for a
/// message (say, that a first Ctrl-C was handled) before its next step.
struct Running {
    child: Child,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl Running {
    fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Running {
            child,
            stderr,
            reader,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait (up to `cap`) until stderr holds `text`; false if it never does.
    fn wait_for_stderr(&self, text: &str, cap: Duration) -> bool {
        wait_until(cap, || self.stderr().contains(text))
    }

    fn finish(self, cap: Duration) -> Out {
        let mut o = finish(self.child, cap);
        self.reader.join().unwrap();
        o.stderr = self.stderr.lock().unwrap().clone();
        o
    }
}

/// The config of the SIGKILL episodes: every commit prints its planted value, and the runs of
/// the last commit first wait at `gate`, so `run` cannot finish before its kill however fast
/// the machine is.
fn crash_config(last: &str, gate: &Gate) -> String {
    with_build(&format!(
        r#"timeout = "2m"

[tests.value]
command = '''
if [ "$PERFBISECT_COMMIT" = {last} ]; then {gate}; fi
./app
'''
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 3

# The kills aim at "the samples of the commits before the gated one", which only one commit
# after the other gives; `sigkill_during_interleaved_rounds_loses_nothing` covers the rounds.
[measure]
interleave = false
"#,
        gate = gate.command()
    ))
}

/// Where a SIGKILL of `run` lands: what the test saw before it sent the kill.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Moment {
    /// 0–40 ms after the start: lock, config, plan, first checkout (or later).
    StartUp,
    /// 0–60 ms after the k-th build log appeared.
    Build,
    /// 0–3 ms after the store grew to a chosen number of samples.
    Measure,
    /// 0–3 ms after a run of the last commit started: a run in flight.
    InFlight,
}

const MOMENTS: [Moment; 4] = [
    Moment::StartUp,
    Moment::Build,
    Moment::Measure,
    Moment::InFlight,
];

/// Case 1: SIGKILL at seeded random moments of `run` (start-up, build phase, measure phase, a run
/// in flight), four times on each of ten caches, then resume: nothing stored is ever lost,
/// nothing is doubled, every sample belongs to the commit it names. Each kill waits for what it
/// aims at (a build log, a sample count in the store, a run at the gate), so every kill lands
/// whatever the machine's speed, and each episode starts at another moment so all are hit.
#[test]
fn sigkill_at_random_moments_loses_nothing() {
    // Commits 2..=5 are in the range; 4 does not compile (a failure record is written too).
    let f = fixture(5, &[4], "");
    let (sleep, marker) = marked_sleep(&f, "kill");
    let gate = Gate::new(&f, &sleep);
    std::fs::write(&f.config, crash_config(&f.ids[4], &gate)).unwrap();
    let repeats = 3u64;
    // Before the gate: the samples of commits 2 and 3; build logs: commits 2 to 5.
    let (reachable, logs_total) = (2 * repeats as usize, 4usize);
    let seed = std::env::var("PERFBISECT_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_f00d_u64);
    eprintln!("seed {seed} (set PERFBISECT_FAULT_SEED to replay another)");
    let mut rng = Rng(seed | 1);
    let (mut kills, mut by_moment, mut torn) = (0, [0usize; 4], 0);
    let mut losses = Vec::new();
    let cap = Duration::from_secs(120);
    for episode in 0..10 {
        let cache = f.dir.path().join(format!("cache-{episode}"));
        let logs = cache.join("logs");
        let mut before = vec![0u64; 4];
        for j in 0..4 {
            let mut cmd = bin(&f, &cache);
            cmd.args(["run", "value", &f.range()])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut child = cmd.spawn().unwrap();
            // What this kill aims at, unless it is behind this cache already.
            let mut moment = MOMENTS[(episode + j) % 4];
            let logs_now = dir_names(&logs).len();
            if moment == Moment::Build && logs_now >= logs_total {
                moment = Moment::Measure;
            }
            let stored_now = stored(&cache, "value");
            if moment == Moment::Measure && stored_now >= reachable {
                moment = Moment::InFlight;
            }
            let started_now = gate.started();
            let mut ended = || child.try_wait().unwrap().is_some();
            let reached = match moment {
                Moment::StartUp => {
                    std::thread::sleep(Duration::from_millis(rng.below(40)));
                    true
                }
                Moment::Build => {
                    let k = logs_now + 1 + rng.below((logs_total - logs_now) as u64) as usize;
                    let ok = wait_until(cap, || dir_names(&logs).len() >= k || ended());
                    std::thread::sleep(Duration::from_micros(rng.below(60_000)));
                    ok
                }
                Moment::Measure => {
                    let more = (reachable - stored_now).min(2) as u64;
                    let target = stored_now + 1 + rng.below(more) as usize;
                    let ok = wait_until(cap, || stored(&cache, "value") >= target || ended());
                    std::thread::sleep(Duration::from_micros(rng.below(3_000)));
                    ok
                }
                Moment::InFlight => {
                    let ok = wait_until(cap, || gate.started() > started_now || ended());
                    std::thread::sleep(Duration::from_micros(rng.below(3_000)));
                    ok
                }
            };
            let what = format!("episode {episode}, kill {j} ({moment:?})");
            assert!(
                child.try_wait().unwrap().is_none(),
                "{what}: perfbisect ended before its kill, though the last commit waits at the gate"
            );
            if !reached {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: not reached after {cap:?}");
            }
            child.kill().unwrap();
            child.wait().unwrap();
            kills += 1;
            by_moment[moment as usize] += 1;

            let (after, stderr) = show(&f, &cache, "value", &["-v"]);
            if stderr.contains("incomplete record") {
                torn += 1;
            }
            let now = counts(&after);
            for (k, (b, a)) in before.iter().zip(&now).enumerate() {
                assert!(
                    *a <= repeats,
                    "{what}: more than {repeats} samples: {now:?}"
                );
                if a < b {
                    losses.push(format!("{what}: commit {}: {b} -> {a} samples", k + 2));
                }
            }
            before = now;
        }
        // Resume: everything completes, exactly `repeats` each, every value the planted one.
        gate.open_all();
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
        // The runs a kill left waiting at the gate have gone through it and ended.
        assert_no_survivors(&marker);
        gate.close_all();
        std::fs::remove_dir_all(&cache).unwrap();
    }
    eprintln!(
        "{kills} SIGKILLs (start-up {}, build {}, measure {}, run in flight {}), {torn} torn \
         records cut, {} samples lost",
        by_moment[0],
        by_moment[1],
        by_moment[2],
        by_moment[3],
        losses.len()
    );
    assert!(
        losses.is_empty(),
        "samples lost (seed {seed}):\n{}",
        losses.join("\n")
    );
    assert!(by_moment.iter().all(|&n| n > 0), "{by_moment:?}");
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
    let next = perfbisect::store::RECORD_VERSION + 1;
    newer.extend_from_slice(&frame_with_version(&sample, next));
    newer.extend_from_slice(&encode_frame(&sample).unwrap());
    std::fs::write(&path, &newer).unwrap();
    let (s, err) = show(&f, &cache, "value", &["-v"]);
    assert_eq!(total(&s), 10, "the record after the newer one is kept");
    let at = format!("record at offset {} has version {next}", good.len());
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

/// Case 1b: SIGKILL while `run` measures in interleaved rounds (one run of each commit per
/// round, in a shuffled order), at seeded sample counts, then resume: nothing lost, nothing
/// doubled, every commit ends with exactly its repeats and its planted value.
#[test]
fn sigkill_during_interleaved_rounds_loses_nothing() {
    let f = fixture(6, &[], &small_config());
    let repeats = 3usize;
    let total = 5 * repeats;
    let cap = Duration::from_secs(120);
    let mut rng = Rng(0x1e57_ab1e);
    for episode in 0..3 {
        let cache = f.dir.path().join(format!("cache-rounds-{episode}"));
        let mut last = 0;
        for _ in 0..3 {
            let target = (last + 1 + rng.below(5) as usize).min(total - 1);
            let mut cmd = bin(&f, &cache);
            cmd.args(["run", "value", &f.range()])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut child = cmd.spawn().unwrap();
            let ended = wait_until(cap, || {
                stored(&cache, "value") >= target || child.try_wait().unwrap().is_some()
            });
            assert!(ended, "episode {episode}: {target} samples not reached");
            let _ = child.kill();
            child.wait().unwrap();
            let now = stored(&cache, "value");
            assert!(now >= last, "episode {episode}: {last} -> {now} samples");
            last = now;
        }
        run_ok(&f, &cache, "value", &[]);
        let loaded = raw(&cache, "value");
        assert!(
            loaded
                .warnings
                .iter()
                .all(|w| w.contains("incomplete record")),
            "{:?}",
            loaded.warnings
        );
        assert_eq!(
            loaded.samples.len(),
            total,
            "episode {episode}: duplicates or losses"
        );
        let (done, _) = show(&f, &cache, "value", &[]);
        for (k, c) in done["commits"].as_array().unwrap().iter().enumerate() {
            assert_eq!(c["n"], repeats as u64, "commit {}: {c}", k + 2);
            assert_eq!(c["min"].as_f64(), Some(planted(k + 2)), "{c}");
            assert_eq!(c["max"].as_f64(), Some(planted(k + 2)), "{c}");
        }
    }
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
/// store holds each run exactly once. The first holds a run at a gate until the second says it
/// waits, so the two overlap whatever the machine's speed.
#[test]
fn two_runs_on_one_cache_wait_and_stay_consistent() {
    let f = fixture(4, &[], "");
    let (sleep, marker) = marked_sleep(&f, "two");
    let gate = Gate::new(&f, &sleep);
    std::fs::write(
        &f.config,
        format!(
            r#"{}
[tests.other]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 2

# Commit by commit, so the gate holds the first `run` at a known point.
[measure]
interleave = false
"#,
            gated_config(&gate)
        ),
    )
    .unwrap();
    let cache = f.cache.clone();
    let cap = Duration::from_secs(120);
    let spawn = |tests: &str| {
        let mut c = bin(&f, &cache);
        c.args(["run", tests, &f.range(), "--format", "json"]);
        Running::spawn(c)
    };
    // The first stores commit 2's runs of both tests, then waits in commit 3's first run of
    // `value`, holding the lock.
    for n in 0..3 {
        gate.open(n);
    }
    let first = spawn("value,other");
    assert!(
        wait_until(cap, || gate.started() == 4),
        "the first run never reached commit 3: {}",
        first.stderr()
    );
    let mut second = spawn("all");
    assert!(
        second.wait_for_stderr("waiting for another perfbisect", cap),
        "the second run did not wait: {}",
        second.stderr()
    );
    // Readers do not wait for the lock: while the writers work, `show` always succeeds and
    // never sees a count go down.
    let mut seen = counts(&show(&f, &cache, "value", &[]).0);
    assert_eq!(seen, vec![3, 0, 0]);
    gate.open_all();
    let mut reads = 0;
    while second.child.try_wait().unwrap().is_none() && reads < 200 {
        let now = counts(&show(&f, &cache, "value", &[]).0);
        assert!(
            now.iter().zip(&seen).all(|(a, b)| a >= b),
            "{seen:?} -> {now:?}"
        );
        seen = now;
        reads += 1;
    }
    let second = second.finish(Duration::from_secs(300));
    let first = first.finish(Duration::from_secs(300));
    for o in [&first, &second] {
        no_panic(o);
        assert_eq!(o.code, 0, "{}", o.stderr);
    }
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
    assert_eq!(gate.started(), 9, "runs of `value`");
    assert_no_survivors(&marker);
}

/// Case 4: A build and tests that never end, some forking children that keep stdout open: killed
/// with their whole process group at the timeout, recorded as failures, and the run goes on.
/// Only the hanging commands meet the timeouts: the other builds and runs are an `echo` and a
/// `cat`, so the budgets (3 s, 2 s) are no race against the machine's speed.
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
echo "value: 7" > out.txt
'''
artifacts = ["out.txt"]
timeout = "3s"

[tests.value]
command = '''
case "$PERFBISECT_COMMIT" in
  {test_hang}) {s} 1000 & {s} 1000 ;;
  {test_bg}) {s} 1000 & cat out.txt ;;
  *) cat out.txt ;;
esac
'''
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 2
timeout = "2s"
"#
    );
    std::fs::write(&f.config, &config).unwrap();
    let cache = dir.path().join("cache");
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(&format!(
            "build failed: {} Commit 2 (build timed out after 3s)",
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
        ls.stdout.contains("failed builds (1)")
            && ls.stdout.contains(&build_hang[..10])
            && !ls.stdout.contains("another build recipe"),
        "{}",
        ls.stdout
    );
    // Once the build recipe changes, the old failure is marked as another recipe's.
    std::fs::write(
        &f.config,
        config.replace("timeout = \"3s\"", "timeout = \"4s\"\nenv = { X = \"1\" }"),
    )
    .unwrap();
    let mut ls = bin(&f, &cache);
    ls.args(["cache", "ls"]);
    let text = output(ls).stdout;
    assert!(
        text.contains("(build timed out after 3s) [another build recipe"),
        "{text}"
    );
    let mut ls = bin(&f, &cache);
    ls.args(["cache", "ls", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_str(&output(ls).stdout).unwrap();
    assert_eq!(j["failed"][0]["other_recipe"], true, "{j}");
    std::fs::write(&f.config, &config).unwrap();
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

/// Issue 19.4: a process that left the test's process group (`setsid`) and holds its output
/// pipe open does not keep the run going past its end or its timeout. Once the test's own
/// process has exited 0 its value stands and the straggler is killed; a test that hangs with
/// one is killed with it at the timeout. Nothing is left running either way. The cap of 20 s
/// against the 40 s sleeps tells whether the run waited for them, not how fast it is.
#[test]
fn stragglers_outside_the_group_end_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture(2, &[], "");
    let (sleep, marker) = marked_sleep(&f, "straggler");
    let s = sleep.display();
    let config = format!(
        r#"
[build]
command = "echo 'value: 5' > out.txt"
artifacts = ["out.txt"]

[tests.exits]
command = "setsid {s} 40 & {s} 0.2; cat out.txt"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 1
timeout = "3s"

[tests.hangs]
command = "setsid {s} 40 & cat out.txt; {s} 40"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 1
timeout = "3s"
"#
    );
    std::fs::write(&f.config, config).unwrap();
    let cache = dir.path().join("cache");
    let started = Instant::now();
    let mut c = bin(&f, &cache);
    c.args(["run", "exits,hangs", &f.ids[1]]);
    let o = output(c);
    let took = started.elapsed();
    no_panic(&o);
    assert_no_survivors(&marker);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        took < Duration::from_secs(20),
        "took {took:?}: {}",
        o.stdout
    );
    let mut csv = bin(&f, &cache);
    csv.args(["show", "exits", &f.ids[1], "--format", "csv"]);
    let csv = output(csv).stdout;
    assert!(
        csv.lines().nth(1).is_some_and(|l| l.contains(",5,")),
        "{csv}"
    );
    let mut csv = bin(&f, &cache);
    csv.args(["show", "hangs", &f.ids[1], "--format", "csv"]);
    let csv = output(csv).stdout;
    assert!(csv.contains("timed out"), "{csv}");
    assert!(
        csv.contains("killed 1 process the command left running outside its process group"),
        "{csv}"
    );
}

/// Issue 19.6: a store file that is a symbolic link is refused, not followed: neither read nor
/// appended to, with an error that says so, and the file it points to is untouched.
#[test]
fn a_store_file_that_is_a_link_is_refused() {
    let f = fixture(
        2,
        &[],
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 1
"#,
        ),
    );
    let cache = f.dir.path().join("cache");
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.ids[1]]);
    let o = output(c);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let store = store_file(&cache, "value");
    let elsewhere = f.dir.path().join("elsewhere.pbs");
    std::fs::rename(&store, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &store).unwrap();
    let before = std::fs::read(&elsewhere).unwrap();
    for args in [
        vec!["run", "value", &f.ids[1], "--again"],
        vec!["show", "value", &f.ids[1]],
    ] {
        let mut c = bin(&f, &cache);
        c.args(&args);
        let o = output(c);
        no_panic(&o);
        assert_ne!(o.code, 0, "{args:?}: {}", o.stdout);
        assert!(
            o.stderr.contains("value.pbs is a symbolic link"),
            "{args:?}: {}",
            o.stderr
        );
    }
    assert_eq!(std::fs::read(&elsewhere).unwrap(), before);
}

/// Issue 19.10: commits whose objects are missing (a partial mirror: one commit's blob, another's
/// tree deleted) are stepped around like commits that do not build, named with what is missing;
/// `run` measures the others and `find` still searches.
#[test]
fn commits_with_missing_objects_are_stepped_around() {
    let f = Fixture::new(
        &specs(6, |i, c| {
            c.metric = if i >= 5 { 200.0 } else { 100.0 };
            c.noise_pct = 0.0;
        }),
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 2
"#,
        ),
    );
    let (blob_commit, tree_commit) = (&f.ids[2], &f.ids[3]);
    let blob = f.git(&["rev-parse", &format!("{blob_commit}:params.h")]);
    let tree = f.git(&["rev-parse", &format!("{tree_commit}^{{tree}}")]);
    for id in [blob.trim(), tree.trim()] {
        std::fs::remove_file(f.repo.join(".git/objects").join(&id[..2]).join(&id[2..])).unwrap();
    }
    let mut c = bin(&f, &f.cache);
    c.args(["run", "value", &f.range()]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("2 builds failed"), "{}", o.stdout);
    for (commit, what) in [(blob_commit, "blob"), (tree_commit, "tree")] {
        assert!(
            o.stdout.contains(&format!(
                "build failed: {} Commit {}",
                &commit[..10],
                if what == "blob" { 3 } else { 4 }
            )) && o.stdout.contains(&format!("its {what} ")),
            "{}",
            o.stdout
        );
    }
    let mut c = bin(&f, &f.dir.path().join("cache2"));
    c.args(["find", "value", &f.range()]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(&format!("culprit: {}", &f.ids[4][..10])),
        "{}",
        o.stdout
    );
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

/// A test `value` whose runs wait at `gate` before they run the program.
fn gated_config(gate: &Gate) -> String {
    with_build(&format!(
        r#"
[tests.value]
command = '''
{}
./app
'''
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 3
"#,
        gate.command()
    ))
}

/// Send Ctrl-C to `p` and wait until its handler has said so on stderr: the stop is requested
/// before the test lets a run in flight finish.
fn sigint_seen(p: &Running) {
    sigint(&p.child);
    assert!(
        p.wait_for_stderr("interrupt", Duration::from_secs(60)),
        "no note of the Ctrl-C: {}",
        p.stderr()
    );
}

/// Case 5: Ctrl-C in the measure phase: the run in flight finishes and is stored, exit 130 with how
/// to resume, the store is intact, and the same command then completes.
#[test]
fn sigint_stops_after_the_run_in_flight_and_resumes() {
    let f = fixture(4, &[], "");
    let (sleep, marker) = marked_sleep(&f, "int1");
    let gate = Gate::new(&f, &sleep);
    std::fs::write(&f.config, gated_config(&gate)).unwrap();
    let cache = f.cache.clone();
    let cap = Duration::from_secs(120);
    gate.open(0);
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()]);
    let p = Running::spawn(c);
    // The first run is stored, the second is in flight (waiting at the gate).
    assert!(
        wait_until(cap, || gate.started() == 2),
        "the second run never started: {}",
        p.stderr()
    );
    assert_eq!(stored(&cache, "value"), 1);
    sigint_seen(&p);
    // The run in flight may finish now; so would any run started after it.
    for n in 1..9 {
        gate.open(n);
    }
    let o = p.finish(cap);
    no_panic(&o);
    assert_eq!(o.code, 130, "{}", o.stderr);
    assert!(
        o.stderr.contains("run the same command again to resume"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("stopping after the run in flight"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("and 2 runs stored"), "{}", o.stderr);
    let l = raw(&cache, "value");
    assert!(l.warnings.is_empty() && !l.torn_tail, "{:?}", l.warnings);
    // The run in flight was finished and stored, and nothing after it started.
    assert_eq!(gate.started(), 2, "runs started after Ctrl-C");
    assert_eq!(l.samples.len(), 2);
    assert!(l.samples.iter().all(|s| s.value.is_some()));
    assert_no_survivors(&marker);

    gate.open_all();
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
    // No run was in flight: the message says the builds are stopped, and what was kept.
    assert!(
        o.stderr.contains("stopping the builds in flight"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("run in flight"), "{}", o.stderr);
    assert!(
        o.stderr.contains("0 builds cached and 0 runs stored"),
        "{}",
        o.stderr
    );
    // The summary of the pass is printed before exit 130.
    assert!(o.stdout.contains("0 built, 0 cached"), "{}", o.stdout);
    assert_no_survivors(&marker);
    assert!(dir_names(&cache.join("artifacts")).is_empty());
    assert!(dir_names(&cache.join("failed")).is_empty());

    std::fs::write(f.dir.path().join("stamp"), "").unwrap();
    let o = run_ok(&f, &cache, "value", &[]);
    let s: serde_json::Value = serde_json::from_str(o.stdout.lines().last().unwrap()).unwrap();
    // The two commits, besides the pristine rebuilds that check the reused worktree's.
    let checks = s["pristine_checks"].as_u64().unwrap();
    assert_eq!(s["builds"].as_u64().unwrap() - checks, 2, "{s}");
    assert!(!o.stderr.contains("cannot"), "{}", o.stderr);
    assert_eq!(counts(&show(&f, &cache, "value", &[]).0), vec![2, 2]);
}

/// Case 5c: A second Ctrl-C stops at once, without waiting for the run in flight, and takes the
/// run's process group with it.
#[test]
fn second_sigint_stops_at_once() {
    let f = fixture(2, &[], "");
    let (sleep, marker) = marked_sleep(&f, "int3");
    // Never opened: the run in flight would wait forever.
    let gate = Gate::new(&f, &sleep);
    std::fs::write(&f.config, gated_config(&gate)).unwrap();
    let cache = f.cache.clone();
    let mut c = bin(&f, &cache);
    c.args(["run", "value", &f.range()]);
    let p = Running::spawn(c);
    assert!(
        wait_until(Duration::from_secs(120), || gate.started() == 1),
        "no run started: {}",
        p.stderr()
    );
    // The first one waits for the run in flight; the second, sent once the first was
    // handled, must not.
    sigint_seen(&p);
    sigint(&p.child);
    let o = p.finish(Duration::from_secs(60));
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

/// Case 5d: Ctrl-C during `calibrate` ends it as it ends `run`: the run in flight finishes and is
/// stored with the others, exit 130, and no calibration is kept from the partial runs.
#[test]
fn sigint_during_calibrate_keeps_no_calibration() {
    let f = fixture(3, &[], "");
    let (sleep, marker) = marked_sleep(&f, "int4");
    let gate = Gate::new(&f, &sleep);
    std::fs::write(&f.config, gated_config(&gate)).unwrap();
    let cache = f.cache.clone();
    let calibration = cache.join("calibration");
    let cap = Duration::from_secs(120);
    gate.open(0);
    gate.open(1);
    let calibrate = |extra: &[&str]| {
        let mut c = bin(&f, &cache);
        c.args(["calibrate", "value", &f.ids[2], "--runs", "5"])
            .args(extra);
        c
    };
    let p = Running::spawn(calibrate(&[]));
    // Two runs stored, the third in flight (waiting at the gate).
    assert!(
        wait_until(cap, || gate.started() == 3),
        "the third run never started: {}",
        p.stderr()
    );
    assert_eq!(stored(&cache, "value"), 2);
    sigint_seen(&p);
    for n in 2..5 {
        gate.open(n);
    }
    let o = p.finish(cap);
    no_panic(&o);
    assert_eq!(o.code, 130, "stdout: {}\nstderr: {}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("run the same command again to resume"),
        "{}",
        o.stderr
    );
    assert!(!o.stdout.contains("A/A runs"), "{}", o.stdout);
    assert!(
        dir_names(&calibration).is_empty(),
        "a calibration was kept from 3 of 5 runs: {:?}",
        dir_names(&calibration)
    );
    // The runs made are stored as usual; none started after the one in flight.
    assert_eq!(gate.started(), 3, "runs started after Ctrl-C");
    let l = raw(&cache, "value");
    assert!(l.warnings.is_empty() && !l.torn_tail, "{:?}", l.warnings);
    assert_eq!(l.samples.len(), 3);
    assert_no_survivors(&marker);

    // Left alone, the same command keeps its calibration where the check above looked.
    gate.open_all();
    let o = output(calibrate(&["--format", "json"]));
    no_panic(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(dir_names(&calibration), ["value.json"]);
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(calibration.join("value.json")).unwrap())
            .unwrap();
    assert_eq!(kept["runs"], 5, "{kept}");
    assert_eq!(raw(&cache, "value").samples.len(), 3 + 5);
}

/// Unmounts on drop, even when the test fails.
struct Mount(PathBuf);

/// With this set (`.ci/run` sets it; CI runs as root), a test that needs root fails instead of
/// skipping itself.
const REQUIRE_ROOT_TESTS: &str = "PERFBISECT_REQUIRE_ROOT_TESTS";

/// Say that `test` was skipped and why, on the real stderr: the test harness captures
/// `eprintln!`, which would hide the reason behind an `ok`.
fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {why} (set {REQUIRE_ROOT_TESTS}=1 to fail instead)"
    );
}

impl Mount {
    /// A tmpfs of `size` at `dir` for `test`, or None (with the reason printed) when that is
    /// impossible; with `PERFBISECT_REQUIRE_ROOT_TESTS` set that is a failure instead.
    fn tmpfs(test: &str, dir: &Path, size: &str) -> Option<Mount> {
        use std::os::unix::ffi::OsStrExt;
        let skip = |why: String| {
            if std::env::var_os(REQUIRE_ROOT_TESTS).is_some() {
                panic!("{why}, and {REQUIRE_ROOT_TESTS} is set");
            }
            skipped(test, &why);
            None
        };
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return skip("mounting a small tmpfs needs root".into());
        }
        std::fs::create_dir_all(dir).unwrap();
        let target = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        let options = std::ffi::CString::new(format!("size={size}")).unwrap();
        // SAFETY: NUL-terminated strings that outlive the call.
        let r = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                options.as_ptr().cast(),
            )
        };
        if r != 0 {
            return skip(format!(
                "cannot mount a tmpfs at {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            ));
        }
        Some(Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        use std::os::unix::ffi::OsStrExt;
        if let Ok(target) = std::ffi::CString::new(self.0.as_os_str().as_bytes()) {
            // SAFETY: a NUL-terminated path; a lazy unmount of what this test mounted.
            unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        }
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
    // The big artifact is sparse: it takes no room in the worktree (on the small disk too),
    // but its copy into the cache does. (A link to a file outside the worktree, as this test
    // once used, is refused since issue 30.)
    std::fs::write(
        &f.config,
        format!(
            r#"
[build]
command = "cc -O0 -o app app.c -lm && rm -f big && if [ -e {big_flag} ]; then truncate -s 2000000 big; else echo small > big; fi"
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
        ),
    )
    .unwrap();
    let cache = f.dir.path().join("tmpfs");
    let Some(_mount) = Mount::tmpfs("full_disk_leaves_no_half_entries", &cache, "1M") else {
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

/// `kill -9` during an import of a large file, at random moments: the store holds every row of
/// an import or none of it, whatever `show` and the next import read; the import run again
/// completes it, and again adds nothing.
#[test]
fn sigkill_during_an_import_leaves_all_or_nothing() {
    // Two tests, so the kill may fall between their batches' commits too.
    let f = fixture(
        4,
        &[],
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }

[tests.other]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
"#,
        ),
    );
    let rows_per_test = 30_000usize;
    let mut csv = String::from("commit,test,value,timestamp,round,machine\n");
    for i in 0..rows_per_test {
        for t in ["value", "other"] {
            let c = &f.ids[1 + i % 3];
            csv.push_str(&format!(
                "{c},{t},{}.5,{},R{},cron\n",
                1000 + i % 7,
                1_700_000_000 + i,
                i / 3
            ));
        }
    }
    let file = f.dir.path().join("rounds.csv");
    std::fs::write(&file, &csv).unwrap();
    let import = |cache: &Path| {
        let mut c = bin(&f, cache);
        c.arg("import").arg(&file);
        c
    };
    let mut rng = Rng(0x1337_d00d);
    let mut outcomes = [0usize; 3];
    for episode in 0..4 {
        let cache = f.dir.path().join(format!("import-{episode}"));
        let mut child = import(&cache)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if episode % 2 == 0 {
            // Somewhere in the reading, while the first batch grows.
            let grown = 1 + rng.below(1_500_000);
            wait_until(Duration::from_secs(60), || {
                std::fs::metadata(store_file(&cache, "value")).is_ok_and(|m| m.len() >= grown)
                    || child.try_wait().unwrap().is_some()
            });
            std::thread::sleep(Duration::from_micros(rng.below(20_000)));
        } else {
            // At the end: one test's batch committed, the other's maybe not.
            wait_until(Duration::from_secs(60), || {
                stored(&cache, "value") > 0 || child.try_wait().unwrap().is_some()
            });
            std::thread::sleep(Duration::from_micros(rng.below(2_000)));
        }
        let _ = child.kill();
        let _ = child.wait();
        for t in ["value", "other"] {
            let n = stored(&cache, t);
            assert!(
                n == 0 || n == rows_per_test,
                "episode {episode}: {n} samples of `{t}` after a kill, not 0 or {rows_per_test}"
            );
            outcomes[usize::from(n > 0)] += 1;
        }
        // What the binary reads agrees, and the import run again completes it.
        let o = output(import(&cache));
        no_panic(&o);
        assert_eq!(o.code, 0, "{}", o.stderr);
        for t in ["value", "other"] {
            assert_eq!(stored(&cache, t), rows_per_test, "episode {episode}, `{t}`");
        }
        let o = output(import(&cache));
        assert!(
            o.stdout
                .contains(&format!("{} already in the store", 2 * rows_per_test)),
            "{}",
            o.stdout
        );
        outcomes[2] += 1;
    }
    eprintln!("tests found empty / complete after a kill: {outcomes:?}");
}

/// The config of [`fixture`] with one test `value` whose command is `command`.
fn value_config(command: &str) -> String {
    with_build(&format!(
        "\n[tests.value]\ncommand = \"{command}\"\nmetric = {{ regex = \"^value: ([0-9.]+)\" }}\nrepeats = 2\n"
    ))
}

/// Stored values of `value` on the range's last commit, as the binary shows them, and stderr.
fn last_commit_n(f: &Fixture, cache: &Path) -> (u64, String) {
    let (j, err) = show(f, cache, "value", &[]);
    (*counts(&j).last().unwrap(), err)
}

/// Measure the range with `./app`, add two samples of the last commit of `./app && true`
/// as one batch (`add`, given the fixture, the cache and that config's file), make that the
/// config so the measured runs are stale, prune: the batch's samples still count, a later
/// append keeps them, and adding them again adds nothing.
fn prune_keeps_a_batch(add: &dyn Fn(&Fixture, &Path, &Path) -> Out) {
    let f = fixture(3, &[], &value_config("./app"));
    let cache = f.cache.clone();
    run_ok(&f, &cache, "value", &[]);
    let next = f.dir.path().join("next.toml");
    std::fs::write(&next, value_config("./app && true")).unwrap();
    let o = add(&f, &cache, &next);
    no_panic(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(raw(&cache, "value").samples.len(), 4 + 2);
    f.set_config(&value_config("./app && true"));
    let mut c = bin(&f, &cache);
    c.args(["cache", "prune"]);
    let o = output(c);
    no_panic(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("removed 4 stale samples"), "{}", o.stdout);
    let (n, err) = last_commit_n(&f, &cache);
    assert_eq!(n, 2, "the batch's samples count after the prune: {err}");
    assert!(!err.contains("batch"), "{err}");
    let kept: Vec<Vec<u8>> = raw(&cache, "value")
        .samples
        .iter()
        .map(|s| encode_frame(s).unwrap())
        .collect();
    assert_eq!(kept.len(), 2);
    // A later append (a new run) opens the file: nothing is cut.
    let o = run_ok(&f, &cache, "value", &[]);
    let after: Vec<Vec<u8>> = raw(&cache, "value")
        .samples
        .iter()
        .map(|s| encode_frame(s).unwrap())
        .collect();
    assert!(after.len() > 2, "{}", o.stderr);
    assert!(
        kept.iter().all(|k| after.contains(k)),
        "the batch survives the next append"
    );
    let o = add(&f, &cache, &next);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        raw(&cache, "value").samples.len(),
        after.len(),
        "nothing added twice"
    );
}

#[test]
fn prune_after_import_keeps_the_imported_rows() {
    prune_keeps_a_batch(&|f, cache, _| {
        let file = f.dir.path().join("rounds.csv");
        let c = f.ids.last().unwrap();
        std::fs::write(
            &file,
            format!("commit,test,value,round\n{c},value,5,R1\n{c},value,6,R2\n"),
        )
        .unwrap();
        let mut cmd = bin(f, cache);
        cmd.arg("import").arg(&file);
        output(cmd)
    });
}

#[test]
fn prune_after_merge_keeps_the_merged_samples() {
    prune_keeps_a_batch(&|f, cache, next| {
        // A shard measured the last commit with the next test definition; merged in.
        let shard = f.dir.path().join("shard");
        if !shard.exists() {
            let last = f.ids.last().unwrap();
            let prev = &f.ids[f.ids.len() - 2];
            let mut c = bin_with(f, &shard, next);
            c.args(["run", "value", &format!("{prev}..{last}")]);
            let o = output(c);
            assert_eq!(o.code, 0, "{}", o.stderr);
        }
        let mut cmd = bin(f, cache);
        cmd.arg("merge").arg(&shard);
        output(cmd)
    });
}

/// Issue 38, defect 8: perfbisect killed with SIGKILL while a test runs — under `timeout` and
/// `setsid`, as CI runners wrap it — takes the test's whole process tree with it, not only
/// the test's shell: nothing it started is left running for whatever runs next.
#[test]
fn a_test_dies_with_perfbisect_killed_under_timeout_and_setsid() {
    for tool in ["timeout", "setsid"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("{tool} is not installed: skipped");
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let f = fixture(2, &[], "");
    let (sleep, marker) = marked_sleep(&f, "orphan");
    let config = format!(
        r#"
[build]
command = "echo 'value: 5' > out.txt"
artifacts = ["out.txt"]

[tests.slow]
command = "{} 31.5; cat out.txt"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 1
"#,
        sleep.display()
    );
    std::fs::write(&f.config, config).unwrap();
    let cache = dir.path().join("cache");
    let inner = bin(&f, &cache);
    let mut c = Command::new("timeout");
    c.args(["-s", "KILL", "30", "setsid"])
        .arg(inner.get_program())
        .args(inner.get_args())
        .args(["run", "slow", &f.ids[1]])
        .current_dir(f.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    // The test is running: its sleep is there.
    assert!(
        wait_until(Duration::from_secs(60), || !survivors(&marker).is_empty()),
        "the test never started"
    );
    // perfbisect itself (setsid's program, in a session of its own), killed outright.
    let pb = survivors(&cache.display().to_string())
        .lines()
        .filter(|l| l.contains("perfbisect ") && l.contains(" run slow "))
        .filter_map(|l| l.split_whitespace().next()?.parse::<i32>().ok())
        .collect::<Vec<_>>();
    assert!(!pb.is_empty(), "perfbisect not found");
    for pid in pb {
        // SAFETY: a signal to a process this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    child.wait().unwrap();
    assert_no_survivors(&marker);
}
