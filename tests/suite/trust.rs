//! Issue 30, "Trust, second round": each defect reproduced through the real binary on a
//! generated repository (a script per commit, built by `true`), named after the defect. No
//! assertion depends on how fast the machine is: tests wait for what they can observe (a
//! file, a process), with generous caps.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{FilesCommit, Fixture};

/// A repository whose commit `i` (1-based) has `app.sh` printing `value: {value(i)}`.
fn scripts(n: usize, value: impl Fn(usize) -> String, config: &str) -> Fixture {
    let bodies: Vec<(String, String)> = (1..=n)
        // The commit's number in a comment, so commits printing the same value differ too.
        .map(|i| {
            let body = format!("#!/bin/sh\n# commit {i}\n{}\n", value(i));
            (format!("Commit {i}"), body)
        })
        .collect();
    let commits: Vec<FilesCommit<'_>> = bodies
        .iter()
        .map(|(s, b)| (s.as_str(), vec![("app.sh", b.clone())]))
        .collect();
    Fixture::with_files(&commits, config)
}

/// `[build]` of [`scripts`]: nothing to compile, the script is the artifact.
const BUILD: &str = "[build]\ncommand = \"true\"\nartifacts = [\"app.sh\"]\n";

/// A config of [`BUILD`] and one test `t` running `command`, reading `value: N`.
fn config(command: &str, extra: &str) -> String {
    format!(
        "{BUILD}\n[tests.t]\ncommand = \"{command}\"\nmetric = {{ regex = \"value: ([0-9.]+)\" }}\n{extra}"
    )
}

/// Run `args` on `f` (with `cache`), capped at ten minutes; no panic reaches the user.
fn run(f: &Fixture, cache: &Path, args: &[&str]) -> Output {
    let o = f_cmd(f, cache).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{args:?} panicked: {err}"
    );
    o
}

fn f_cmd(f: &Fixture, cache: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
    c.arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(cache)
        .arg("--no-progress")
        .current_dir(f.dir.path())
        .timeout(Duration::from_secs(600));
    c
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed ({:?}): {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one manifest of the cache at `cache`.
fn manifest(cache: &Path) -> PathBuf {
    std::fs::read_dir(cache.join("manifests"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap()
}

#[test]
fn merge_writes_nowhere_a_manifest_says_outside_the_cache() {
    let f = scripts(2, |i| format!("echo value: {i}"), &config("./app.sh", ""));
    let runner = f.dir.path().join("runner");
    ok(&run(&f, &runner, &["run", "t", &f.range()]));
    let m = manifest(&runner);
    let original = std::fs::read_to_string(&m).unwrap();
    let victim = f.dir.path().join("victim.txt");
    let escapes = [
        victim.to_string_lossy().into_owned(),
        "../../../victim.txt".to_string(),
        "./app.sh".to_string(),
    ];
    for (i, path) in escapes.iter().enumerate() {
        std::fs::write(&victim, "the user's own file\n").unwrap();
        let mut j: serde_json::Value = serde_json::from_str(&original).unwrap();
        j["files"][0]["path"] = path.as_str().into();
        std::fs::write(&m, j.to_string()).unwrap();
        let here = f.dir.path().join(format!("here-{i}"));
        let o = run(&f, &here, &["merge", &runner.to_string_lossy()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{path}: {err}");
        assert!(
            err.contains("not inside the build") && err.contains("nothing was merged"),
            "{path}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "the user's own file\n",
            "{path}: the user's file is untouched"
        );
        assert!(!here.join("artifacts").exists() || dir_is_empty(&here.join("artifacts")));
    }
    // A manifest that is a link to a file elsewhere is not read.
    std::fs::remove_file(&m).unwrap();
    std::fs::write(&victim, &original).unwrap();
    std::os::unix::fs::symlink(&victim, &m).unwrap();
    let o = run(
        &f,
        &f.dir.path().join("here-link"),
        &["merge", &runner.to_string_lossy()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

fn dir_is_empty(p: &Path) -> bool {
    std::fs::read_dir(p).map_or(true, |mut rd| rd.next().is_none())
}

/// Poll `cond` every few milliseconds until it holds or `cap` passes.
#[allow(dead_code)]
fn wait_until(cap: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < cap {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}

#[allow(dead_code)]
fn null() -> Stdio {
    Stdio::null()
}

#[allow(dead_code)]
fn std_cmd(f: &Fixture, cache: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("perfbisect"));
    c.arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(cache)
        .arg("--no-progress")
        .current_dir(f.dir.path());
    c
}

/// Ten rows per commit of six, a +97 % step at the fourth, with or without timestamps.
fn step_rows(f: &Fixture, with_time: bool) -> String {
    let mut csv = String::from(if with_time {
        "commit,test,value,timestamp\n"
    } else {
        "commit,test,value\n"
    });
    let mut seed = 7u64;
    let mut t = 1_700_000_000u64;
    for (i, c) in f.ids.iter().enumerate() {
        for _ in 0..10 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let noise = ((seed >> 33) % 400) as f64 / 10_000.0 - 0.02;
            let v = if i < 3 { 100.0 } else { 197.0 } * (1.0 + noise);
            if with_time {
                csv.push_str(&format!("{c},t,{v:.2},{t}\n"));
            } else {
                csv.push_str(&format!("{c},t,{v:.2}\n"));
            }
            t += 60;
        }
    }
    csv
}

#[test]
fn imported_rows_without_timestamps_do_not_collapse_into_one_per_commit() {
    let f = scripts(6, |i| format!("echo value: {i}"), &config("./app.sh", ""));
    for with_time in [true, false] {
        let cache = f.dir.path().join(format!("cache-{with_time}"));
        let file = f.dir.path().join(format!("rows-{with_time}.csv"));
        std::fs::write(&file, step_rows(&f, with_time)).unwrap();
        ok(&run(&f, &cache, &["import", &file.to_string_lossy()]));
        let out = ok(&run(&f, &cache, &["detect", "t", "--format", "json"]));
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let points = j["change_points"].as_array().unwrap();
        assert_eq!(points.len(), 1, "timestamps {with_time}: {j}");
        assert_eq!(points[0]["commit"], f.ids[3].as_str(), "{j}");
        assert!(points[0]["p_value"].as_f64().unwrap() < 1e-6, "{j}");
    }
    // What a row's optional columns mean is said where the command is described.
    let help = ok(&run(&f, &f.cache, &["import", "--help"]));
    assert!(help.contains("measurement of its own"), "{help}");
}

#[test]
fn a_file_a_test_adds_to_its_build_is_removed_before_the_next_run() {
    let f = scripts(
        2,
        |i| format!("echo value: {i}"),
        &config(
            "test -e warm && echo value: 1 || { touch warm; echo value: 100; }",
            "repeats = 3\n",
        ),
    );
    let o = run(&f, &f.cache, &["run", "t", &f.range()]);
    ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains("added `warm`") && err.contains("removed"),
        "{err}"
    );
    let show = f.show("t", &f.range());
    for c in show["commits"].as_array().unwrap() {
        assert_eq!(
            (c["n"].as_u64(), c["min"].as_f64(), c["max"].as_f64()),
            (Some(3), Some(100.0), Some(100.0)),
            "every run starts on the build as stored: {show}"
        );
    }
    // The entry holds the build's files again, nothing else.
    for e in std::fs::read_dir(f.cache.join("artifacts"))
        .unwrap()
        .flatten()
    {
        let names: Vec<String> = std::fs::read_dir(e.path())
            .unwrap()
            .flatten()
            .map(|x| x.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["app.sh"]);
    }
}

/// Live processes (not zombies) whose command line contains `marker`: (pid, command line).
fn processes_with(marker: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
        if cmdline.contains(marker) && !matches!(state, Some('Z') | Some('X') | None) {
            out.push((pid, cmdline.trim_end().to_string()));
        }
    }
    out
}

#[test]
fn a_test_left_running_by_a_kill_9_is_killed_and_named_by_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("pbleft-{}", std::process::id());
    let sleeper = dir.path().join(&marker);
    std::os::unix::fs::symlink("/bin/sleep", &sleeper).unwrap();
    let go = dir.path().join("go");
    // The sleep leaves the test's process group (a session of its own), so the launcher that
    // ends the group when perfbisect dies does not reach it: the next start must.
    let command = format!(
        "test -e {} && echo value: 5 || {{ setsid {} 300; echo value: 5; }}",
        go.display(),
        sleeper.display()
    );
    let f = scripts(2, |i| format!("echo value: {i}"), &config(&command, ""));
    let mut child = std_cmd(&f, &f.cache)
        .args(["run", "t", &f.range()])
        .stdin(null())
        .stdout(null())
        .stderr(null())
        .spawn()
        .unwrap();
    let started = wait_until(Duration::from_secs(300), || {
        processes_with(&marker)
            .iter()
            .any(|(_, c)| c.starts_with(&*sleeper.to_string_lossy()))
    });
    assert!(started, "the test never started");
    child.kill().unwrap();
    child.wait().unwrap();
    // The test's process group (`sh -c` and what stayed in it) dies with perfbisect; what left
    // the group lives on, re-parented.
    let shell_gone = wait_until(Duration::from_secs(60), || {
        processes_with(&marker)
            .iter()
            .all(|(_, c)| !c.starts_with("/bin/sh"))
    });
    let left = processes_with(&marker);
    assert!(shell_gone, "the test's shell outlived perfbisect: {left:?}");
    let sleep_pid = left
        .iter()
        .find(|(_, c)| c.starts_with(&*sleeper.to_string_lossy()))
        .map(|(p, _)| *p)
        .expect("the sleep the test started is left running");
    std::fs::write(&go, "").unwrap();
    let o = run(&f, &f.cache, &["run", "t", &f.range()]);
    let err = stderr(&o);
    let gone = wait_until(Duration::from_secs(60), || {
        processes_with(&marker).is_empty()
    });
    for (pid, _) in processes_with(&marker) {
        // SAFETY: ends what this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    ok(&o);
    assert!(
        err.contains(&format!("killed pid {sleep_pid} (`{}", sleeper.display())),
        "{err}"
    );
    assert!(err.contains("no longer alive"), "{err}");
    assert!(gone, "the leftover was not killed");
}

#[test]
fn one_sample_a_side_is_never_an_exact_change() {
    let f = scripts(
        4,
        |i| format!("echo value: {}", if i < 3 { 100 } else { 200 }),
        &config("./app.sh", "deterministic = true\n"),
    );
    let detect = |csv: &str| -> serde_json::Value {
        let file = f.dir.path().join("series.csv");
        std::fs::write(&file, csv).unwrap();
        let out = ok(&run(
            &f,
            &f.cache,
            &[
                "detect",
                "--input",
                &file.to_string_lossy(),
                "--format",
                "json",
            ],
        ));
        serde_json::from_str(&out).unwrap()
    };
    let mut ten_then_six = String::from("index,value\n");
    for i in 0..10 {
        ten_then_six.push_str(&format!("{i},5\n"));
    }
    ten_then_six.push_str("10,6\n");
    for csv in [ten_then_six.as_str(), "index,value\n0,100\n1,101\n"] {
        let j = detect(csv);
        for c in j["change_points"].as_array().unwrap() {
            assert!(c["p_value"].as_f64().unwrap() > 0.0, "{csv}: {j}");
        }
    }
    // Repeated equal runs are exact.
    let j = detect("index,value\n0,100\n0,100\n1,101\n1,101\n");
    assert_eq!(j["change_points"][0]["index"], 1, "{j}");
    assert_eq!(j["change_points"][0]["p_value"], 0.0, "{j}");
    // So is one run of a test declared deterministic.
    ok(&run(&f, &f.cache, &["run", "t", &f.range()]));
    let out = ok(&run(
        &f,
        &f.cache,
        &["detect", "t", &f.range(), "--format", "json"],
    ));
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["change_points"][0]["commit"], f.ids[2].as_str(), "{j}");
    assert_eq!(j["change_points"][0]["p_value"], 0.0, "{j}");
}

/// The `|` of a Markdown table row that split cells (not escaped by a backslash).
fn splitting_pipes(row: &str) -> usize {
    let mut n = 0;
    let mut backslashes = 0;
    for c in row.chars() {
        if c == '|' && backslashes % 2 == 0 {
            n += 1;
        }
        backslashes = if c == '\\' { backslashes + 1 } else { 0 };
    }
    n
}

#[test]
fn markdown_tables_keep_their_columns_and_subjects_link_nowhere() {
    if !common::have_tool("valgrind", "the profile of the culprit") {
        return;
    }
    let program = |hash: u32| {
        format!(
            "#include <stdio.h>\nstatic volatile unsigned long sink;\n\
             __attribute__((noinline)) static void hash_block(void) {{ for (unsigned long i = 0; i < {hash}; i++) sink ^= i * 31; }}\n\
             int main(void) {{ hash_block(); printf(\"done %lu\\n\", (unsigned long)sink); return 0; }}\n"
        )
    };
    let commits: Vec<FilesCommit<'_>> = vec![
        ("Program", vec![("p|q.c", program(200_000))]),
        ("Notes", vec![("NOTES", "2\n".into())]),
        (
            "Hash more, see www.evil.example/x | or not",
            vec![("p|q.c", program(260_000))],
        ),
        ("More notes", vec![("NOTES", "4\n".into())]),
    ];
    let f = Fixture::with_files(
        &commits,
        "[build]\ncommand = \"cc -O1 -g -o app 'p|q.c'\"\nartifacts = [\"app\"]\n\n\
         [measure]\ncounter = \"cachegrind\"\n\n[tests.work]\ncommand = \"./app\"\nmetric = \"instructions\"\n",
    );
    let md = ok(&run(
        &f,
        &f.cache,
        &["find", "work", &f.range(), "--format", "md"],
    ));
    assert!(md.contains("hash_block"), "{md}");
    assert!(
        !md.contains("www.evil"),
        "a bare www. host stays a live link: {md}"
    );
    // Every row of a table splits into as many cells as its header.
    let mut header = None;
    for line in md.lines() {
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        let n = splitting_pipes(line);
        match header {
            None => header = Some(n),
            Some(h) => assert_eq!(
                n, h,
                "a row with other columns than its header: {line}\n{md}"
            ),
        }
    }
    assert!(md.contains("p\\|q.c"), "{md}");
}

#[test]
fn sigterm_and_sighup_stop_with_their_own_exit_code_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let (started, go) = (dir.path().join("started"), dir.path().join("go"));
    let command = format!(
        "touch {}; while [ ! -e {} ]; do sleep 0.01; done; echo value: 5",
        started.display(),
        go.display()
    );
    let f = scripts(3, |i| format!("echo value: {i}"), &config(&command, ""));
    for (sig, name, code) in [
        (libc::SIGTERM, "SIGTERM", 143),
        (libc::SIGHUP, "SIGHUP", 129),
    ] {
        let _ = std::fs::remove_file(&started);
        let _ = std::fs::remove_file(&go);
        let mut child = std_cmd(&f, &f.dir.path().join(format!("cache-{name}")))
            .args(["run", "t", &f.range()])
            .stdin(null())
            .stdout(null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Stderr read as it comes, so the test can wait for the handler's message.
        let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let reader = {
            let said = said.clone();
            let mut pipe = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    said.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        };
        assert!(
            wait_until(Duration::from_secs(300), || started.exists()),
            "no run started"
        );
        // SAFETY: signals our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        // The run in flight ends only once the signal was taken in (its message is out).
        let heard = wait_until(Duration::from_secs(60), || {
            said.lock().unwrap().contains(&format!("{name} received"))
        });
        std::fs::write(&go, "").unwrap();
        let status = child.wait().unwrap();
        reader.join().unwrap();
        let err = said.lock().unwrap().clone();
        assert!(heard, "{name}: {err}");
        let out = Output {
            status,
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        assert_eq!(out.status.code(), Some(code), "{name}: {err}");
        assert!(
            err.contains(&format!("{name} received"))
                && err.contains(&format!("stopped by {name}")),
            "{name}: {err}"
        );
        assert!(!err.contains("Ctrl-C"), "{name}: {err}");
    }
}

/// A store file holding one record of layout 2 (before windows) of `commit`.
fn legacy_store(dir: &Path, commit: &str, value: f64) {
    let id: Vec<u8> = (0..20)
        .map(|i| u8::from_str_radix(&commit[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let v2 = perfbisect::store::SampleV2 {
        commit: id.try_into().unwrap(),
        test_hash: 1,
        recipe_hash: 2,
        time: 1_600_000_000,
        round: 0,
        wall: 0.1,
        user: 0.0,
        sys: 0.0,
        max_rss: 0,
        value: Some(value),
        error: None,
        fingerprint: 0,
        import: None,
    };
    let payload = bincode::serde::encode_to_vec(&v2, bincode::config::standard()).unwrap();
    let mut body = vec![2u8];
    body.extend(&payload);
    let mut bytes = b"PBSTORE\0".to_vec();
    bytes.extend(1u32.to_le_bytes());
    bytes.extend(((payload.len() + 1) as u32).to_le_bytes());
    bytes.extend(crc32fast::hash(&body).to_le_bytes());
    bytes.extend(body);
    std::fs::create_dir_all(dir.join("results")).unwrap();
    std::fs::write(dir.join("results/t.pbs"), bytes).unwrap();
}

/// Suspected (issue 30, 9): the made-up windows of old records (`LEGACY_WINDOW | offset`)
/// stored for good by `merge`, so that two old files' records, at the same offset, shared a
/// window and looked taken side by side. They did; now a legacy window comes from the record.
#[test]
fn merged_legacy_records_of_two_old_files_share_no_window() {
    let f = scripts(3, |i| format!("echo value: {i}"), &config("./app.sh", ""));
    let (a, b) = (f.dir.path().join("old-a"), f.dir.path().join("old-b"));
    legacy_store(&a, &f.ids[1], 10.0);
    legacy_store(&b, &f.ids[2], 20.0);
    ok(&run(
        &f,
        &f.cache,
        &["merge", &a.to_string_lossy(), &b.to_string_lossy()],
    ));
    let p = f.cache.join("results/t.pbs");
    let l = perfbisect::store::decode_file(&p, &std::fs::read(&p).unwrap()).unwrap();
    assert_eq!(l.samples.len(), 2, "{:?}", l.warnings);
    let w: Vec<u64> = l.samples.iter().map(|s| s.window).collect();
    assert!(
        w.iter().all(|w| w & perfbisect::store::LEGACY_WINDOW != 0),
        "{w:x?}"
    );
    assert_ne!(w[0], w[1], "two old files' first records share a window");
    // Merging again adds nothing: the windows are the same on every load.
    let out = ok(&run(
        &f,
        &f.cache,
        &["merge", &a.to_string_lossy(), &b.to_string_lossy()],
    ));
    assert!(out.contains("added 0 samples, 2 already here"), "{out}");
}

/// Suspected (issue 30, 9): `copy_tree` followed an artifact's symbolic links, pulling files
/// from outside the worktree into the cache. It did; a link out of the worktree is refused
/// now, one inside it is copied as what it points to.
#[test]
fn artifact_links_out_of_the_worktree_are_not_followed() {
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("key"), "secret bytes\n").unwrap();
    let build = format!(
        "[build]\ncommand = \"ln -sfn app.sh lib.sh && ln -sfn {} out\"\nartifacts = [\"app.sh\", \"lib.sh\", \"out\"]\n\n\
         [tests.t]\ncommand = \"./lib.sh\"\nmetric = {{ regex = \"value: ([0-9.]+)\" }}\n",
        secret.path().display()
    );
    let f = scripts(2, |i| format!("echo value: {i}"), &build);
    let o = run(&f, &f.cache, &["run", "t", &f.range()]);
    let err = stderr(&o);
    assert!(
        err.contains("outside the worktree") && err.contains(&*secret.path().to_string_lossy()),
        "{err}"
    );
    let leaked = walk(&f.cache)
        .into_iter()
        .any(|p| std::fs::read_to_string(&p).is_ok_and(|t| t.contains("secret bytes")));
    assert!(!leaked, "a file from outside the worktree is in the cache");
    // A link inside the worktree is fine.
    f.set_config(
        &build
            .replace(&format!(" && ln -sfn {} out", secret.path().display()), "")
            .replace(", \\\"out\\\"", "")
            .replace(", \"out\"", ""),
    );
    let o = run(&f, &f.cache, &["run", "t", &f.range(), "--retry-failed"]);
    ok(&o);
}

/// Every file under `dir`, links not followed.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}
