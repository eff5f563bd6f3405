//! Running one shell command in its own process group: timeout that kills the whole group,
//! resource usage from `wait4`, and bounded capture of its output.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;

/// Bytes of output kept for messages about failures.
pub const TAIL_BYTES: usize = 4096;
/// Longest line the metric regex sees; longer lines are cut (their start is kept).
const MAX_LINE: usize = 64 * 1024;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    Interrupted,
}

impl Status {
    /// Exit code 0.
    pub fn success(self) -> bool {
        self == Status::Exited(0)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Exited(c) => write!(f, "exit code {c}"),
            Status::Signaled(s) => write!(f, "killed by signal {s}"),
            Status::TimedOut => write!(f, "timed out"),
            Status::Interrupted => write!(f, "interrupted"),
        }
    }
}

/// Where the output goes.
pub enum Output {
    /// Both streams appended to this file (build logs, setup and teardown).
    File(File),
    /// Both streams read here: stdout lines are matched against `regex` (first match
    /// wins), up to `keep_stdout` bytes of stdout are kept whole, and a tail of each stream.
    Capture {
        regex: Option<regex::Regex>,
        keep_stdout: usize,
    },
}

/// What to run.
pub struct Spec<'a> {
    pub command: &'a str,
    pub dir: &'a Path,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub output: Output,
    /// When set and raised, the command is killed (builds); test runs pass `None` so the
    /// run in flight finishes.
    pub interrupt: Option<&'static AtomicBool>,
    /// Kill what the command left running in its group once it exits (test runs), but not
    /// for `setup`, whose servers must outlive it.
    pub kill_leftovers: bool,
}

/// A finished command.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: Status,
    pub wall: f64,
    pub user: f64,
    pub sys: f64,
    /// Peak resident set of the process tree, bytes.
    pub max_rss: u64,
    /// Stdout as kept (up to `keep_stdout`).
    pub stdout: Vec<u8>,
    /// Stdout was longer than `keep_stdout`.
    pub stdout_truncated: bool,
    /// Capture group 1 of the first stdout line matching the regex.
    pub regex_match: Option<String>,
    /// The last bytes of stderr and stdout, for messages.
    pub tail: String,
}

/// Run `spec` to completion.
pub fn run(spec: Spec<'_>) -> anyhow::Result<Finished> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(spec.command)
        .current_dir(spec.dir)
        .stdin(Stdio::null())
        .process_group(0);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let (regex, keep_stdout, capture) = match spec.output {
        Output::File(f) => {
            let f2 = f.try_clone().context("cannot duplicate log file handle")?;
            cmd.stdout(Stdio::from(f)).stderr(Stdio::from(f2));
            (None, 0, false)
        }
        Output::Capture { regex, keep_stdout } => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            (regex, keep_stdout, true)
        }
    };
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `sh -c {}`", spec.command))?;
    let pid = child.id() as libc::pid_t;

    let out_reader = child
        .stdout
        .take()
        .map(|s| thread::spawn(move || read_stream(s, regex, keep_stdout)));
    let err_reader = child
        .stderr
        .take()
        .map(|s| thread::spawn(move || read_stream(s, None, 0)));

    // The watcher kills the group at the deadline or on interrupt.
    let timed_out = Arc::new(AtomicBool::new(false));
    let interrupted = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let deadline = start + spec.timeout;
    let watcher = {
        let timed_out = timed_out.clone();
        let interrupted = interrupted.clone();
        let flag = spec.interrupt;
        thread::spawn(move || loop {
            let now = Instant::now();
            if now >= deadline {
                timed_out.store(true, Ordering::SeqCst);
                kill_group(pid);
                return;
            }
            if flag.is_some_and(|f| f.load(Ordering::SeqCst)) {
                interrupted.store(true, Ordering::SeqCst);
                kill_group(pid);
                return;
            }
            let wait = (deadline - now).min(Duration::from_millis(50));
            match done_rx.recv_timeout(wait) {
                Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        })
    };

    let (raw_status, usage) = wait4(pid).context("waiting for the command failed")?;
    let wall = start.elapsed().as_secs_f64();
    let _ = done_tx.send(());
    let _ = watcher.join();
    if spec.kill_leftovers || capture {
        // Whatever is left in the group would keep our pipes open.
        kill_group(pid);
    }
    drop(child);

    let (stdout, stdout_truncated, regex_match, out_tail) = match out_reader {
        Some(h) => h.join().unwrap_or_default(),
        None => Default::default(),
    };
    let err_tail = match err_reader {
        Some(h) => h.join().unwrap_or_default().3,
        None => Vec::new(),
    };
    let mut tail = String::from_utf8_lossy(&err_tail).into_owned();
    let out_tail = String::from_utf8_lossy(&out_tail);
    if !out_tail.trim().is_empty() {
        if !tail.is_empty() && !tail.ends_with('\n') {
            tail.push('\n');
        }
        tail.push_str(&out_tail);
    }

    let status = if interrupted.load(Ordering::SeqCst) {
        Status::Interrupted
    } else if timed_out.load(Ordering::SeqCst) {
        Status::TimedOut
    } else if libc::WIFEXITED(raw_status) {
        Status::Exited(libc::WEXITSTATUS(raw_status))
    } else if libc::WIFSIGNALED(raw_status) {
        Status::Signaled(libc::WTERMSIG(raw_status))
    } else {
        Status::Exited(-1)
    };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Ok(Finished {
        status,
        wall,
        user: secs(usage.ru_utime),
        sys: secs(usage.ru_stime),
        max_rss: (usage.ru_maxrss.max(0) as u64) * 1024,
        stdout,
        stdout_truncated,
        regex_match,
        tail,
    })
}

/// The last `TAIL_BYTES` of a file (build logs).
pub fn file_tail(path: &Path) -> String {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES as u64)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: killpg only sends a signal; a group that is gone yields ESRCH, which is fine.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }
}

fn wait4(pid: libc::pid_t) -> std::io::Result<(libc::c_int, libc::rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; pid is our own child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Reads a stream to its end with bounded memory. Returns (kept stdout, truncated,
/// first regex match, tail).
fn read_stream(
    mut s: impl Read,
    regex: Option<regex::Regex>,
    keep: usize,
) -> (Vec<u8>, bool, Option<String>, Vec<u8>) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut found: Option<String> = None;
    let mut line: Vec<u8> = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let scan_line = |line: &[u8], found: &mut Option<String>| {
        if found.is_some() {
            return;
        }
        if let Some(re) = &regex {
            let text = String::from_utf8_lossy(line);
            if let Some(c) = re.captures(&text) {
                *found = c.get(1).map(|m| m.as_str().to_string());
            }
        }
    };
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        if kept.len() < keep {
            let take = (keep - kept.len()).min(n);
            kept.extend_from_slice(&chunk[..take]);
            truncated |= take < n;
        } else if keep > 0 {
            truncated = true;
        }
        tail.extend_from_slice(chunk);
        if tail.len() > 2 * TAIL_BYTES {
            tail.drain(..tail.len() - TAIL_BYTES);
        }
        if regex.is_some() && found.is_none() {
            for &b in chunk {
                if b == b'\n' {
                    scan_line(&line, &mut found);
                    line.clear();
                } else if line.len() < MAX_LINE {
                    line.push(b);
                }
            }
        }
    }
    if !line.is_empty() {
        scan_line(&line, &mut found);
    }
    if tail.len() > TAIL_BYTES {
        tail.drain(..tail.len() - TAIL_BYTES);
    }
    (kept, truncated, found, tail)
}
