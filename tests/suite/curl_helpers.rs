//! The curl helpers of `scripts/curl/` run for real: pahole on small C objects and archives
//! built here, the memory-tracking parser on the log of a C program that allocates a known
//! amount, a local Apache httpd started and stopped, the config fragment driving `find`, and
//! shellcheck on the scripts.
//!
//! They need pahole (dwarves), apache2, curl and shellcheck (`.ci/run` installs them). A test
//! whose tool is missing says so on stderr and passes, unless `PERFBISECT_REQUIRE_TOOLS` is
//! set (as `.ci/run` does): then it fails.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn helpers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/curl")
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// True when every tool is there; otherwise skips (false) or, when required, fails.
fn tools(test: &str, needed: &[&str]) -> bool {
    let missing: Vec<&str> = needed.iter().copied().filter(|t| !have(t)).collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("PERFBISECT_REQUIRE_TOOLS").is_some() {
        panic!("{test}: {} not installed", missing.join(", "));
    }
    eprintln!(
        "SKIPPED {test}: {} not installed (set PERFBISECT_REQUIRE_TOOLS=1 to fail instead)",
        missing.join(", ")
    );
    false
}

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`{script}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn helper(name: &str, args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(helpers().join(name));
    c.args(args).current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const STRUCTS: &str = r#"
#include <stdio.h>
struct known { char name[37]; double d; int i; short s; };
struct known k;
int main(void) { printf("%zu\n", sizeof(struct known)); return 0; }
"#;

const OTHER: &str = r#"
struct other_one { int a[33]; char c; };
struct other_one o;
"#;

#[test]
fn struct_size_reads_objects_and_archives() {
    if !tools(
        "struct_size_reads_objects_and_archives",
        &["pahole", "cc", "ar"],
    ) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("known.c"), STRUCTS).unwrap();
    std::fs::write(d.join("other.c"), OTHER).unwrap();
    sh(
        d,
        "cc -g -c known.c -o known.o && cc -g -c other.c -o other.o && cc -o sizes known.o \
         && mkdir -p lib && ar rcs lib/libx.a known.o other.o && cc -c known.c -o nodebug.o",
    );
    // The compiler's own answer, not a number written here.
    let want = Command::new(d.join("sizes")).output().unwrap();
    let want = stdout(&want).trim().to_string();

    let o = helper("struct-size.sh", &["known", "known.o"], d, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("known: {want} bytes\n"));

    // From an archive (pahole cannot read one), and from its second member.
    let o = helper("struct-size.sh", &["known", "lib/libx.a"], d, &[]);
    assert_eq!(
        stdout(&o),
        format!("known: {want} bytes\n"),
        "{}",
        stderr(&o)
    );
    let o = helper("struct-size.sh", &["other_one", "lib/libx.a"], d, &[]);
    assert_eq!(stdout(&o), "other_one: 136 bytes\n", "{}", stderr(&o));
    // CMake's Debug builds call the library libx-d.a: asked for libx.a, that one is read.
    std::fs::rename(d.join("lib/libx.a"), d.join("lib/libx-d.a")).unwrap();
    let o = helper("struct-size.sh", &["other_one", "lib/libx.a"], d, &[]);
    assert_eq!(stdout(&o), "other_one: 136 bytes\n", "{}", stderr(&o));
    std::fs::rename(d.join("lib/libx-d.a"), d.join("lib/libx.a")).unwrap();

    // No such struct, or no debug info: a failure that says why, and no number.
    for (s, f) in [("nosuch", "lib/libx.a"), ("known", "nodebug.o")] {
        let o = helper("struct-size.sh", &[s, f], d, &[]);
        assert!(!o.status.success());
        assert!(stdout(&o).is_empty());
        assert!(stderr(&o).contains("no debug info"), "{}", stderr(&o));
    }
}

/// A stand-in for a debug build of the curl tool: it logs its allocations to the file named
/// by CURL_MEMDEBUG in the format of curl's lib/memdebug.c (unless built with NO_LOG, as a
/// curl without memory tracking). Known sequence: 6 allocations, at most 8006 bytes at once.
const FAKE_CURL: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static FILE *logf;
static void *m(size_t n) { void *p = malloc(n); if(logf) fprintf(logf, "MEM fake.c:1 malloc(%zu) = %p\n", n, p); return p; }
static void *c(size_t a, size_t b) { void *p = calloc(a, b); if(logf) fprintf(logf, "MEM fake.c:2 calloc(%zu,%zu) = %p\n", a, b, p); return p; }
static void *r(void *o, size_t n) { void *p = realloc(o, n); if(logf) fprintf(logf, "MEM fake.c:3 realloc(%p, %zu) = %p\n", o, n, p); return p; }
static char *s(const char *x) { char *p = strdup(x); if(logf) fprintf(logf, "MEM fake.c:4 strdup(%p) (%zu) = %p\n", (void *)x, strlen(x) + 1, (void *)p); return p; }
static void f(void *p) { if(logf) fprintf(logf, "MEM fake.c:5 free(%p)\n", p); free(p); }
int main(void) {
  const char *env = getenv("CURL_MEMDEBUG");
#ifndef NO_LOG
  if(env) logf = fopen(env, "w");
#endif
  if(logf) fprintf(logf, "FD fake.c:9 socket() = 3\n");
  char *a = m(1000);             /* 1000 */
  char *b = c(10, 100);          /* 2000 */
  a = r(a, 5000);                /* 6000 */
  char *d = s("hello");          /* 6006 */
  f(b);                          /* 5006 */
  char *e = m(3000);             /* 8006, the peak */
  f(a); f(d); f(e); f(NULL);     /* 0 */
  char *g = r(NULL, 100);        /* 100 */
  f(g);
  if(logf) fclose(logf);
  return 0;
}
"#;

#[test]
fn allocation_count_and_peak_from_a_memory_tracking_log() {
    if !tools(
        "allocation_count_and_peak_from_a_memory_tracking_log",
        &["cc"],
    ) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("fake.c"), FAKE_CURL).unwrap();
    sh(
        d,
        "cc -o fake-curl fake.c && cc -DNO_LOG -o fake-curl-nolog fake.c",
    );
    let fake = d.join("fake-curl");
    let fake = fake.to_str().unwrap();

    // The parser on the log.
    let log = d.join("mem.log");
    let o = Command::new(fake)
        .env("CURL_MEMDEBUG", &log)
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = helper("memdebug-stats.sh", &[log.to_str().unwrap()], d, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "allocations: 6\nmaxalloc: 8006 bytes\n");

    // The test command: it finds its server's port in the state folder, runs "curl" with
    // CURL_MEMDEBUG and reads the log. (The fake does not connect: no server needed.)
    let state = d.join("state");
    std::fs::create_dir_all(state.join("single-numallocs")).unwrap();
    std::fs::write(
        state.join("single-numallocs/ports"),
        "HTTP_PORT=1\nHTTPS_PORT=2\n",
    )
    .unwrap();
    let env = [
        ("CURL_PERF_STATE", state.to_str().unwrap()),
        ("PERFBISECT_TEST", "single-numallocs"),
        ("CURL", fake),
    ];
    let o = helper("single-alloc.sh", &[], d, &env);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "allocations: 6\nmaxalloc: 8006 bytes\n");

    // A curl without memory tracking writes no log: the run fails and says so.
    let nolog = d.join("fake-curl-nolog");
    let mut env2 = env.to_vec();
    env2[2] = ("CURL", nolog.to_str().unwrap());
    let o = helper("single-alloc.sh", &[], d, &env2);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no memory-tracking log"),
        "{}",
        stderr(&o)
    );

    // No server started for this test: the run fails and says so.
    let mut env3 = env.to_vec();
    env3[1] = ("PERFBISECT_TEST", "other");
    let o = helper("single-alloc.sh", &[], d, &env3);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no server"), "{}", stderr(&o));
}

fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn ports(state: &Path) -> (u16, u16) {
    let text = std::fs::read_to_string(state.join("ports")).unwrap();
    let get = |k: &str| -> u16 {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .unwrap()
            .parse()
            .unwrap()
    };
    (get("HTTP_PORT="), get("HTTPS_PORT="))
}

#[test]
fn httpd_serves_the_transfer_tests_and_stops() {
    if !tools(
        "httpd_serves_the_transfer_tests_and_stops",
        &["apache2", "openssl", "curl"],
    ) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let state = d.join("state");
    let curl = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v curl"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let env = [
        ("CURL_PERF_STATE", state.to_str().unwrap()),
        ("PERFBISECT_TEST", "h2-requests"),
        ("CURL_PERF_SCALE", "0.001"),
        ("CURL_PERF_HTTPD_TTL", "300"),
        ("CURL", curl.as_str()),
    ];
    let o = helper("httpd.sh", &["start"], d, &env);
    assert!(o.status.success(), "start failed: {}", stderr(&o));
    let dir = state.join("h2-requests");
    let (http, https) = ports(&dir);

    let head = http_get(http, "/10k");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("Content-Length: 10240"), "{head}");
    // No ETag: its length would follow the file's inode, and curl's allocations with it.
    assert!(!head.contains("ETag"), "{head}");
    // The parallel file is 500 MB times the scale.
    let head = http_get(http, "/big");
    assert!(head.contains("Content-Length: 500000\r"), "{head}");

    // Real transfers with the system's curl: 100 requests over h2, 100 uploads over h1.
    let o = helper("transfer.sh", &["requests", "h2"], d, &env);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let line = |prefix: &str| -> f64 {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {out}"))
            .trim_end_matches(" bytes")
            .parse()
            .unwrap()
    };
    assert!(line("requests/s: ") > 0.0);
    // curl's own peak RSS, not the shell's or perfbisect's: a curl is some MB, under 1 GB.
    let rss = line("max-rss: ");
    assert!(rss > 1e6 && rss < 1e9, "{out}");
    // 100 sequential requests over clear-text HTTP/1.1 (the instructions test's transfers).
    let o = helper("transfer.sh", &["sequential", "h1"], d, &env);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("requests/s: "), "{}", stdout(&o));
    let o = helper("transfer.sh", &["upload", "h1"], d, &env);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("bytes/s: "), "{}", stdout(&o));
    assert_eq!(
        std::fs::metadata(dir.join("upload/f100")).unwrap().len(),
        500_000
    );
    // A wrong protocol is a usage error, not a number.
    let o = helper("transfer.sh", &["requests", "h9"], d, &env);
    assert!(!o.status.success());
    assert!(stdout(&o).is_empty());

    let o = helper("httpd.sh", &["stop"], d, &env);
    assert!(o.status.success(), "stop failed: {}", stderr(&o));
    assert!(!dir.exists());
    for p in [http, https] {
        assert!(
            TcpStream::connect(("127.0.0.1", p)).is_err(),
            "port {p} still answers"
        );
    }
}

/// How many processes run `sleep SECS` (the watchdogs of this test's servers).
fn sleepers(secs: &str) -> usize {
    let o = Command::new("pgrep")
        .args(["-f", &format!("^sleep {secs}$")])
        .output()
        .unwrap();
    stdout(&o).lines().count()
}

/// [`sleepers`] once it is `want` (a watchdog's shell starts its sleep a moment after `start`
/// returns), or what it is after 5 s.
fn sleepers_settle(secs: &str, want: usize) -> usize {
    let t = std::time::Instant::now();
    loop {
        let n = sleepers(secs);
        if n == want || t.elapsed() > std::time::Duration::from_secs(5) {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starting and stopping a server leaves nothing running (the watchdog's sleep went with it,
/// 20 times over); two perfbisect processes at once get servers of their own and never stop
/// each other's; a folder shared on purpose (CURL_PERF_STATE) says who holds it.
#[test]
fn httpd_stop_leaves_nothing_and_two_perfbisects_keep_their_own_servers() {
    if !tools(
        "httpd_stop_leaves_nothing_and_two_perfbisects_keep_their_own_servers",
        &["apache2", "openssl", "pgrep"],
    ) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let ttl = "4321";
    let me = format!("{}-a", std::process::id());
    let env = |run: &str| {
        vec![
            ("TMPDIR".to_string(), tmp.display().to_string()),
            ("PERFBISECT_TEST".to_string(), "h1-requests".to_string()),
            ("PERFBISECT_RUN".to_string(), run.to_string()),
            ("CURL_PERF_SCALE".to_string(), "0.001".to_string()),
            ("CURL_PERF_HTTPD_TTL".to_string(), ttl.to_string()),
        ]
    };
    let call = |what: &str, run: &str, extra: &[(&str, &str)]| {
        let mut e = env(run);
        e.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let e: Vec<(&str, &str)> = e.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        helper("httpd.sh", &[what], d, &e)
    };
    // Whatever happens, no server of this test outlives it.
    struct Stop<'a>(&'a dyn Fn());
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    let other = format!("{}-b", std::os::unix::process::parent_id());
    let shared = d.join("shared");
    let stop_all = || {
        for run in [me.as_str(), other.as_str()] {
            let _ = call("stop", run, &[]);
            let _ = call(
                "stop",
                run,
                &[("CURL_PERF_STATE", shared.to_str().unwrap())],
            );
        }
    };
    let _stop = Stop(&stop_all);
    let before = sleepers(ttl);
    for _ in 0..20 {
        let o = call("start", &me, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(sleepers_settle(ttl, before + 1), before + 1);
        let o = call("stop", &me, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(
        sleepers_settle(ttl, before),
        before,
        "watchdogs left behind"
    );
    let root = tmp.join(format!("perfbisect-curl-{}", unsafe_uid()));
    assert!(!root.join(&me).exists(), "its folder stays");

    // Two perfbisect processes (this test, and its parent standing in for another live one).
    assert!(call("start", &me, &[]).status.success());
    assert!(call("start", &other, &[]).status.success());
    let (p1, _) = ports(&root.join(&me).join("h1-requests"));
    let (p2, _) = ports(&root.join(&other).join("h1-requests"));
    assert_ne!(p1, p2);
    assert!(call("stop", &me, &[]).status.success());
    assert!(
        http_get(p2, "/10k").starts_with("HTTP/1.1 200"),
        "the other server was stopped"
    );
    assert!(TcpStream::connect(("127.0.0.1", p1)).is_err());

    // One folder shared on purpose: the second says who holds it, and the first keeps serving.
    let s = shared.to_str().unwrap();
    assert!(call("start", &other, &[("CURL_PERF_STATE", s)])
        .status
        .success());
    let o = call("start", &me, &[("CURL_PERF_STATE", s)]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("in use by another running perfbisect") && stderr(&o).contains(&other),
        "{}",
        stderr(&o)
    );
    let o = call("stop", &me, &[("CURL_PERF_STATE", s)]);
    assert!(
        o.status.success() && stderr(&o).contains("left as it is"),
        "{}",
        stderr(&o)
    );
    let (p3, _) = ports(&shared.join("h1-requests"));
    assert!(http_get(p3, "/10k").starts_with("HTTP/1.1 200"));
    assert!(call("stop", &other, &[("CURL_PERF_STATE", s)])
        .status
        .success());
    assert!(call("stop", &other, &[]).status.success());
    assert_eq!(
        sleepers_settle(ttl, before),
        before,
        "watchdogs left behind"
    );
}

fn unsafe_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

#[test]
fn shellcheck_passes_on_the_helpers() {
    if !tools("shellcheck_passes_on_the_helpers", &["shellcheck"]) {
        return;
    }
    let o = Command::new("sh")
        .args(["-c", "shellcheck -x *.sh"])
        .current_dir(helpers())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "shellcheck: {}{}",
        stdout(&o),
        stderr(&o)
    );
}

/// Every test of curl's page but the HTTP/3 ones, with curl's unit and direction.
const SUITE: &[(&str, &str, &str)] = &[
    ("100G-speed", "bytes/sec", "higher"),
    ("single-numallocs", "allocs", "lower"),
    ("single-maxalloc", "bytes", "lower"),
    ("h1parallel-speed", "bytes/sec", "higher"),
    ("h2parallel-speed", "bytes/sec", "higher"),
    ("h1parallel-mem", "bytes", "lower"),
    ("h2parallel-mem", "bytes", "lower"),
    ("h1parallel-upload-speed", "bytes/sec", "higher"),
    ("h2parallel-upload-speed", "bytes/sec", "higher"),
    ("h1parallel-upload-mem", "bytes", "lower"),
    ("h2parallel-upload-mem", "bytes", "lower"),
    ("h1-requests", "requests/sec", "higher"),
    ("h2-requests", "requests/sec", "higher"),
    ("h1-req-mem", "bytes", "lower"),
    ("h2-req-mem", "bytes", "lower"),
    ("easy-handle", "bytes", "lower"),
    ("multi-handle", "bytes", "lower"),
    ("connectdata", "bytes", "lower"),
    // Not on curl's page: instructions of the same transfers.
    ("h2-requests-instr", "instructions", "lower"),
    ("h1-sequential-instr", "instructions", "lower"),
];

#[test]
fn the_fragment_holds_curls_tests_with_units_directions_and_descriptions() {
    let text = std::fs::read_to_string(helpers().join("tests.toml")).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    assert!(
        !doc.contains_key("build"),
        "the fragment must not build curl"
    );
    let tests = doc["tests"].as_table().unwrap();
    let mut names: Vec<&str> = tests.keys().map(|k| k.as_str()).collect();
    names.sort();
    let mut want: Vec<&str> = SUITE.iter().map(|s| s.0).collect();
    want.sort();
    assert_eq!(names, want);
    for (name, unit, dir) in SUITE {
        let t = tests[*name].as_table().unwrap();
        assert_eq!(t["unit"].as_str(), Some(*unit), "{name}");
        assert_eq!(t["direction"].as_str(), Some(*dir), "{name}");
        assert!(t["description"].as_str().unwrap().len() > 80, "{name}");
        let deterministic = t.get("deterministic").and_then(|v| v.as_bool()) == Some(true);
        let counted =
            name.ends_with("-handle") || *name == "connectdata" || name.starts_with("single-");
        assert_eq!(deterministic, counted, "{name}: deterministic");
        if t.get("setup").is_some() {
            assert!(
                t.get("teardown").is_some(),
                "{name}: setup without teardown"
            );
        }
        let instructions = t.get("metric").and_then(|m| m.as_str()) == Some("instructions");
        assert_eq!(instructions, name.ends_with("-instr"), "{name}: metric");
    }
    assert!(
        text.contains("HTTP/3"),
        "the fragment says why HTTP/3 is missing"
    );
}

/// The fragment as a user runs it: a project whose "libcurl.a" holds a struct Curl_easy
/// that grows at one commit, a [build] of its own, the helpers beside the config as
/// curl-helpers/; `find easy-handle` must name that commit, deterministically.
#[test]
fn find_names_the_commit_that_grew_a_struct_with_the_fragment() {
    if !tools(
        "find_names_the_commit_that_grew_a_struct_with_the_fragment",
        &["pahole", "cc", "ar", "git"],
    ) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let repo = d.join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    git(&["init", "-q", "-b", "main"]);
    let mut ids = Vec::new();
    for i in 1..=12 {
        // Commit 8 adds 24 bytes; the others touch an unrelated line.
        let pad = if i >= 8 { 64 } else { 40 };
        std::fs::write(
            repo.join("easy.c"),
            format!("/* rev {i} */\nstruct Curl_easy {{ char pad[{pad}]; long x; }};\nstruct Curl_easy e;\n"),
        )
        .unwrap();
        git(&["add", "easy.c"]);
        git(&["commit", "-q", "-m", &format!("Change {i}")]);
        ids.push(git(&["rev-parse", "HEAD"]));
    }
    let config = d.join("perfbisect.toml");
    let fragment = std::fs::read_to_string(helpers().join("tests.toml")).unwrap();
    std::fs::write(
        &config,
        format!(
            "[build]\ncommand = \"mkdir -p perf && cc -g -c easy.c -o easy.o && ar rcs perf/libcurl.a easy.o\"\nartifacts = [\"perf\"]\n\n{fragment}"
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(helpers(), d.join("curl-helpers")).unwrap();

    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .args(["--repo", repo.to_str().unwrap(), "--config"])
        .arg(&config)
        .args(["--cache"])
        .arg(d.join("cache"))
        .arg("--no-progress")
        .args(["find", "easy-handle"])
        .arg(format!("{}..{}", ids[0], ids[11]))
        .args(["--format", "json"])
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "culprit", "{v}");
    assert_eq!(v["culprit"]["commit"], ids[7].as_str(), "{v}");
    assert_eq!(v["culprit"]["before"]["median"], 48.0);
    assert_eq!(v["culprit"]["after"]["median"], 72.0);
    assert_eq!(v["culprit"]["kind"], "regression");
    assert_eq!(v["deterministic"], true);
}
