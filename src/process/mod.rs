//! Running one shell command in its own process group: timeout that kills the whole group
//! and what left it (see [`reaper`]), resource usage from `wait4`, and bounded capture
//! of its output.

pub mod counter;
pub mod launch;
mod reaper;

pub use reaper::{end_leftovers, run_id, Leftover};

use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;

/// Bytes of output kept for messages about failures.
pub const TAIL_BYTES: usize = 4096;
/// Longest line the metric regex sees; longer lines are cut (their start is kept).
const MAX_LINE: usize = 64 * 1024;
/// How long output is still read once the command has ended (or was killed): what it wrote
/// just before is in the pipe, but a process it left behind that could not be killed must
/// not keep the run going.
const GRACE: Duration = Duration::from_millis(1500);

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
    /// Both streams read here: stdout lines are matched against each of `regexes` (for each,
    /// the first match wins), up to `keep_stdout` bytes of stdout are kept whole, and a tail
    /// of each stream.
    Capture {
        regexes: Vec<regex::Regex>,
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
    /// Asked by max-rss tests; every command runs through the launcher now when it is enabled
    /// (it ends the command's group with perfbisect), so `max_rss` is the command's own and
    /// the wall time the launcher's clock of it (without its own exec). Without the launcher
    /// (the library's unit tests) `max_rss` is 0: unknown.
    pub own_rss: bool,
    /// Instruction counting and quiet-run settings (test runs only).
    pub extra: Extra,
}

/// What a test run may add to a plain run of its command.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// Count the instructions of the process tree (see [`counter`]).
    pub count: Option<Count>,
    /// Pin the command and its children to these CPUs (`sched_setaffinity`).
    pub cpus: Option<Vec<usize>>,
    /// Turn address-space randomisation off for it (`personality(ADDR_NO_RANDOMIZE)`).
    pub no_aslr: bool,
}

/// How a run's instructions are counted.
#[derive(Debug, Clone)]
pub enum Count {
    /// The hardware counter, opened by the launcher on the command before it starts.
    Perf,
    /// Under Valgrind's Cachegrind, which writes one file per process into `dir`.
    Cachegrind { valgrind: PathBuf, dir: PathBuf },
}

/// A finished command.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: Status,
    pub wall: f64,
    pub user: f64,
    pub sys: f64,
    /// Peak resident set of the process tree, bytes, as the launcher measured it; 0 (unknown)
    /// for a command not run through it.
    pub max_rss: u64,
    /// Stdout as kept (up to `keep_stdout`).
    pub stdout: Vec<u8>,
    /// Stdout was longer than `keep_stdout`.
    pub stdout_truncated: bool,
    /// Per regex of the capture: group 1 of the first stdout line matching it.
    pub regex_matches: Vec<Option<String>>,
    /// The last bytes of stderr and stdout, for messages.
    pub tail: String,
    /// The instructions counted, or why there is no count (only when asked for).
    pub instructions: Option<Result<u64, String>>,
    /// Processes outside the command's process group that were killed because they belonged
    /// to it (started by it, left running after it ended or when it was stopped). Also said
    /// in `tail`.
    pub left_behind: usize,
}

/// Run `spec` to completion.
///
/// One thread does everything: it polls the output pipes (or, for file output, the child)
/// with a short timeout, so the deadline and the interrupt flag are checked without helper
/// threads; that keeps the overhead per run near that of a bare fork and exec.
///
/// The status is that of the command's own process. At the deadline (or on an interrupt) its
/// group and everything else of it is killed; once it has ended, a captured command's
/// leftovers are killed (they would hold the pipes open), and output is read for at most
/// [`GRACE`] more: a command that exited 0 keeps the value it printed, whatever it left
/// behind.
pub fn run(spec: Spec<'_>) -> anyhow::Result<Finished> {
    reaper::adopt_orphans();
    reaper::reap_orphans();
    let mark = reaper::new_mark();
    let perf = matches!(spec.extra.count, Some(Count::Perf));
    // Every command goes through the launcher (when enabled): besides a max-rss test's own
    // peak and the instructions counter, it ends the command's whole group when perfbisect
    // dies, whatever wraps perfbisect (`timeout`, `setsid`, a CI runner's kill -9).
    let launcher = launch::launcher();
    if perf && launcher.is_none() {
        anyhow::bail!("counting instructions with the hardware counter needs perfbisect's launcher (perfbisect-launch), which is not enabled in this process");
    }
    let mut cmd = shell_command(spec.extra.count.as_ref(), launcher, perf);
    cmd.arg("-c")
        .arg(spec.command)
        .current_dir(spec.dir)
        .stdin(Stdio::null())
        .process_group(0);
    // A `kill -9` of perfbisect takes the command with it (its group is its own, so nothing
    // else would); what the command started and left is found by the next perfbisect
    // ([`reaper::end_leftovers`]).
    launch::die_with_parent(&mut cmd);
    let report = prepare_child(&mut cmd, &spec.extra, launcher.is_some())?;
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.env(reaper::MARK_VAR, &mark);
    let (regexes, keep_stdout, capture) = connect_output(&mut cmd, spec.output)?;
    let start = Instant::now();
    let mut child = reaper::spawn(&mut cmd)
        .with_context(|| format!("cannot start `sh -c {}`", spec.command))?;
    // Only the launcher holds the write end now: its exit closes the pipe.
    let report = report.map(|(read, write)| {
        drop(write);
        read
    });
    let pid = child.id() as libc::pid_t;
    // A second Ctrl-C ends perfbisect at once; it takes this command's group with it.
    let _group = GroupGuard::register(pid);
    // A timeout too long for the clock means no deadline in practice (config caps it anyway).
    let deadline = start
        .checked_add(spec.timeout)
        .unwrap_or_else(|| start + Duration::from_secs(100 * 365 * 24 * 3600));
    let mut out = StreamReader::new(regexes, keep_stdout);
    let mut err = StreamReader::new(Vec::new(), 0);
    let mut watch = Watch::new(pid, &mark, deadline, spec.interrupt, capture);
    watch.follow(child.stdout.take(), child.stderr.take(), &mut out, &mut err)?;
    let (raw_status, usage) = match watch.ended {
        Some(r) => r,
        None => {
            let r = wait4(pid, false)?.expect("blocking wait4 returns the child");
            reaper::forget(pid);
            r
        }
    };
    // The command's own time, not that of waiting for the pipes of what it left behind.
    let mut wall = watch
        .ended_at
        .unwrap_or_else(Instant::now)
        .duration_since(start)
        .as_secs_f64();
    if (spec.kill_leftovers || capture) && !watch.cleared {
        kill_group(pid);
    }
    if capture && !watch.swept && reaper::has_children() {
        watch.left_behind += reaper::kill_tree(None, pid, &mark);
    }
    reaper::reap_orphans();
    drop(child);

    let (stdout, stdout_truncated, regex_matches, out_tail) = out.finish();
    let err_tail = err.finish().3;
    let tail = tail_text(&err_tail, &out_tail, watch.left_behind, watch.abandoned);
    let status = status_of(watch.killed, raw_status);
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    let mut user = secs(usage.ru_utime);
    let mut sys = secs(usage.ru_stime);
    // Without the launcher the command was forked from perfbisect, whose peak RSS Linux carries
    // into it across `exec` (see [`launch`]): `wait4`'s number is at least perfbisect's
    // own, not the command's, so it is not kept (0: unknown).
    let mut max_rss = 0;
    let mut instructions = None;
    // The launcher's report, when it got to write one (not when the group was killed).
    if let Some(mut read) = report {
        let mut text = String::new();
        if read.read_to_string(&mut text).is_ok() {
            if let Some(u) = launch::parse(&text) {
                (user, sys, max_rss) = (u.user, u.sys, u.max_rss);
                instructions = u.instructions;
                // The command's own wall time, without the launcher's exec.
                if let Some(w) = u.wall.filter(|w| *w > 0.0 && *w <= wall) {
                    wall = w;
                }
            }
        }
        if perf && instructions.is_none() {
            instructions = Some(Err(
                "the launcher reported no instruction count (it was killed, or the command timed out)"
                    .into(),
            ));
        }
    }
    if let Some(Count::Cachegrind { dir, .. }) = &spec.extra.count {
        instructions = Some(counter::cachegrind_total(dir));
    }
    Ok(Finished {
        status,
        wall,
        user,
        sys,
        max_rss,
        stdout,
        stdout_truncated,
        regex_matches,
        tail,
        instructions,
        left_behind: watch.left_behind,
    })
}

/// The program that runs the command line: `/bin/sh`, under the launcher and/or Valgrind as
/// `count` and `launcher` ask (the caller adds `-c` and the line).
fn shell_command(
    count: Option<&Count>,
    launcher: Option<(&'static Path, bool)>,
    perf: bool,
) -> Command {
    match (count, launcher) {
        // Valgrind under the launcher too (its group ends with perfbisect), reporting nothing:
        // the counts come from Cachegrind's files.
        (Some(Count::Cachegrind { valgrind, dir }), Some((l, needs_arg))) => {
            let mut c = Command::new(l);
            if needs_arg {
                c.arg(launch::ARG);
            }
            c.arg(valgrind);
            c.args(counter::cachegrind_args(dir));
            c.arg("/bin/sh");
            c
        }
        (Some(Count::Cachegrind { valgrind, dir }), None) => {
            let mut c = Command::new(valgrind);
            c.args(counter::cachegrind_args(dir));
            c.arg("/bin/sh");
            c
        }
        (_, Some((l, needs_arg))) => {
            let mut c = Command::new(l);
            if needs_arg {
                c.arg(launch::ARG);
            }
            if perf {
                c.arg(launch::COUNT_ARG);
            }
            c.arg("/bin/sh");
            c
        }
        _ => Command::new("/bin/sh"),
    }
}

/// Sets up what the child does between fork and exec (the launcher's report pipe on its fd 3,
/// the quiet-run CPUs and personality) and returns the report pipe's two ends, when the
/// launcher runs without Valgrind.
fn prepare_child(
    cmd: &mut Command,
    extra: &Extra,
    launcher: bool,
) -> anyhow::Result<Option<(File, std::os::fd::OwnedFd)>> {
    // Quiet runs: the CPUs and the personality are inherited by every child.
    let cpuset = extra.cpus.as_ref().map(|cpus| {
        // SAFETY: a zeroed cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            // SAFETY: CPU_SET on a valid set; out-of-range CPUs were refused by the config.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        set
    });
    let no_aslr = extra.no_aslr;
    // The launcher's report comes through a pipe on its fd 3.
    let (report, wfd) = if launcher && !matches!(extra.count, Some(Count::Cachegrind { .. })) {
        let (read, write) = report_pipe()?;
        let wfd = std::os::fd::AsRawFd::as_raw_fd(&write);
        (Some((read, write)), Some(wfd))
    } else {
        (None, None)
    };
    if wfd.is_some() || cpuset.is_some() || no_aslr {
        // SAFETY: dup2, fcntl, sched_setaffinity and personality are async-signal-safe
        // system calls; fd 3 in the child is the pipe.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(wfd) = wfd {
                    if wfd == launch::FD {
                        libc::fcntl(wfd, libc::F_SETFD, 0);
                    } else if libc::dup2(wfd, launch::FD) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(set) = &cpuset {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if no_aslr {
                    let current = libc::personality(0xffff_ffff);
                    if current == -1
                        || libc::personality((current | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong)
                            == -1
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
    Ok(report)
}

/// Points the command's stdout and stderr where `output` says; returns the capture's regexes,
/// how much stdout to keep, and whether the output is captured at all.
fn connect_output(
    cmd: &mut Command,
    output: Output,
) -> anyhow::Result<(Vec<regex::Regex>, usize, bool)> {
    Ok(match output {
        Output::File(f) => {
            let f2 = f.try_clone().context("cannot duplicate log file handle")?;
            cmd.stdout(Stdio::from(f)).stderr(Stdio::from(f2));
            (Vec::new(), 0, false)
        }
        Output::Capture {
            regexes,
            keep_stdout,
        } => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            (regexes, keep_stdout, true)
        }
    })
}

/// The poll loop's view of a running command: what ends it, and what became of it.
struct Watch<'a> {
    pid: libc::pid_t,
    mark: &'a str,
    deadline: Instant,
    interrupt: Option<&'static AtomicBool>,
    capture: bool,
    /// The reaped command's raw status and resource usage.
    ended: Option<(libc::c_int, libc::rusage)>,
    ended_at: Option<Instant>,
    killed: Option<Status>,
    /// The group was killed once the command was reaped (no second signal needed).
    cleared: bool,
    /// What left the group was killed then too.
    swept: bool,
    left_behind: usize,
    /// Output is read until then at most, once the command has ended or was killed.
    stop_reading: Option<Instant>,
    /// The grace ran out with a pipe still open.
    abandoned: bool,
}

impl<'a> Watch<'a> {
    /// A command just started, nothing seen of it yet.
    fn new(
        pid: libc::pid_t,
        mark: &'a str,
        deadline: Instant,
        interrupt: Option<&'static AtomicBool>,
        capture: bool,
    ) -> Self {
        Watch {
            pid,
            mark,
            deadline,
            interrupt,
            capture,
            ended: None,
            ended_at: None,
            killed: None,
            cleared: false,
            swept: false,
            left_behind: 0,
            stop_reading: None,
            abandoned: false,
        }
    }

    /// Reads the command's output into `out` and `err` until the command has ended and its
    /// pipes are closed (or the grace after its end ran out), killing it at the deadline or on
    /// an interrupt.
    fn follow(
        &mut self,
        stdout: Option<std::process::ChildStdout>,
        stderr: Option<std::process::ChildStderr>,
        out: &mut StreamReader,
        err: &mut StreamReader,
    ) -> anyhow::Result<()> {
        use std::os::fd::AsRawFd;
        let mut fds: Vec<(libc::c_int, Box<dyn Read>, bool)> = Vec::new();
        if let Some(s) = stdout {
            fds.push((s.as_raw_fd(), Box::new(s), true));
        }
        if let Some(s) = stderr {
            fds.push((s.as_raw_fd(), Box::new(s), false));
        }
        let mut buf = vec![0u8; 64 * 1024];
        let mut idle_wait = Duration::from_micros(20);
        // A pidfd becomes readable when the child exits, so one poll waits for output,
        // exit, deadline and interrupt at once (Linux 5.3+; older kernels fall back to
        // sleeping between non-blocking reaps).
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) } as libc::c_int;
        let pidfd = (pidfd >= 0).then(|| {
            use std::os::fd::FromRawFd;
            // SAFETY: a fresh fd that nothing else owns.
            unsafe { std::os::fd::OwnedFd::from_raw_fd(pidfd) }
        });
        loop {
            let now = Instant::now();
            self.kill_if_due(now);
            if self.ended.is_some() {
                if fds.is_empty() {
                    break;
                }
                if self.stop_reading.is_some_and(|t| now >= t) {
                    self.abandoned = true;
                    break;
                }
            }
            if fds.is_empty() && pidfd.is_none() {
                match wait4(self.pid, true).context("waiting for the command failed")? {
                    Some(r) => {
                        self.ended = Some(r);
                        self.ended_at = Some(Instant::now());
                        reaper::forget(self.pid);
                        break;
                    }
                    None => {
                        let left = self.deadline.saturating_duration_since(Instant::now());
                        thread::sleep(idle_wait.min(left));
                        idle_wait = (idle_wait * 2).min(Duration::from_millis(50));
                        continue;
                    }
                }
            }
            let mut pfds: Vec<libc::pollfd> = fds
                .iter()
                .map(|(fd, _, _)| libc::pollfd {
                    fd: *fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let watch_exit = self.ended.is_none() && pidfd.is_some();
            if watch_exit {
                pfds.push(libc::pollfd {
                    fd: pidfd.as_ref().expect("checked").as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
            let timeout_ms = self.wake(Instant::now()).as_millis() as libc::c_int;
            // SAFETY: pfds is a valid array of pollfd for its length.
            let r =
                unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e).context("poll on the command's output failed");
            }
            let exited = watch_exit && pfds.last().is_some_and(|p| p.revents != 0);
            if exited || (r == 0 && self.ended.is_none() && pidfd.is_none()) {
                // The command is done (or, without a pidfd, may be): reap it.
                self.reap_if_ended()?;
            }
            if watch_exit {
                pfds.pop();
            }
            if r == 0 {
                reaper::reap_orphans();
                continue;
            }
            read_ready(&pfds, &mut fds, &mut buf, out, err);
        }
        Ok(())
    }

    /// Kills the command's group and everything else of it, once, at the deadline or when
    /// the interrupt flag is raised, unless it has already ended.
    fn kill_if_due(&mut self, now: Instant) {
        if self.killed.is_some() || self.ended.is_some() {
            return;
        }
        let why = if now >= self.deadline {
            Some(Status::TimedOut)
        } else if self.interrupt.is_some_and(|f| f.load(Ordering::SeqCst)) {
            Some(Status::Interrupted)
        } else {
            None
        };
        if let Some(why) = why {
            kill_group(self.pid);
            self.left_behind += reaper::kill_tree(Some(self.pid), self.pid, self.mark);
            self.killed = Some(why);
            self.stop_reading = Some(now + GRACE);
        }
    }

    /// How long the next poll may wait: at most 50 ms, and not past the deadline (while it
    /// still counts) or the end of the grace.
    fn wake(&self, now: Instant) -> Duration {
        let mut wake = Duration::from_millis(50);
        if self.ended.is_none() && self.killed.is_none() {
            wake = wake.min(self.deadline.saturating_duration_since(now));
        }
        if let Some(t) = self.stop_reading {
            wake = wake.min(t.saturating_duration_since(now));
        }
        wake
    }

    /// Reaps the command if it has ended. Whatever a captured command left running in its
    /// group would hold our pipes open, so that is cleared out then.
    fn reap_if_ended(&mut self) -> anyhow::Result<()> {
        if let Some(res) = wait4(self.pid, true)? {
            self.ended = Some(res);
            self.ended_at = Some(Instant::now());
            reaper::forget(self.pid);
            if self.capture {
                kill_group(self.pid);
                self.cleared = true;
                // Orphans of the command are children of ours now: none, nothing
                // is left (the common case costs one system call).
                if reaper::has_children() {
                    self.left_behind += reaper::kill_tree(None, self.pid, self.mark);
                }
                self.swept = true;
                self.stop_reading.get_or_insert(Instant::now() + GRACE);
            }
        }
        Ok(())
    }
}

/// Reads once from each pipe `poll` found ready (`pfds` in the order of `fds`), feeding
/// stdout to `out` and stderr to `err`; drops the pipes that closed.
fn read_ready(
    pfds: &[libc::pollfd],
    fds: &mut Vec<(libc::c_int, Box<dyn Read>, bool)>,
    buf: &mut [u8],
    out: &mut StreamReader,
    err: &mut StreamReader,
) {
    let mut closed = Vec::new();
    for (i, p) in pfds.iter().enumerate() {
        if p.revents == 0 {
            continue;
        }
        let (_, reader, is_out) = &mut fds[i];
        match reader.read(buf) {
            Ok(0) => closed.push(i),
            Ok(n) => {
                if *is_out {
                    out.feed(&buf[..n]);
                } else {
                    err.feed(&buf[..n]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => closed.push(i),
        }
    }
    for i in closed.into_iter().rev() {
        fds.remove(i);
    }
}

/// The tail for messages: stderr's, then stdout's when it holds more than whitespace, then a
/// line for each thing perfbisect did to the command beyond running it.
fn tail_text(err_tail: &[u8], out_tail: &[u8], left_behind: usize, abandoned: bool) -> String {
    let mut tail = String::from_utf8_lossy(err_tail).into_owned();
    let out_tail = String::from_utf8_lossy(out_tail);
    if !out_tail.trim().is_empty() {
        if !tail.is_empty() && !tail.ends_with('\n') {
            tail.push('\n');
        }
        tail.push_str(&out_tail);
    }
    let mut note = |line: String| {
        if !tail.is_empty() && !tail.ends_with('\n') {
            tail.push('\n');
        }
        tail.push_str(&line);
        tail.push('\n');
    };
    if left_behind > 0 {
        note(format!(
            "perfbisect: killed {left_behind} process{} the command left running outside its process group",
            if left_behind == 1 { "" } else { "es" }
        ));
    }
    if abandoned {
        note(format!(
            "perfbisect: stopped reading the output {} s after the command ended: a process it started still holds it open",
            GRACE.as_secs_f64()
        ));
    }
    tail
}

/// How the command ended: as perfbisect killed it, else from its `wait4` status.
fn status_of(killed: Option<Status>, raw_status: libc::c_int) -> Status {
    if let Some(k) = killed {
        k
    } else if libc::WIFEXITED(raw_status) {
        Status::Exited(libc::WEXITSTATUS(raw_status))
    } else if libc::WIFSIGNALED(raw_status) {
        Status::Signaled(libc::WTERMSIG(raw_status))
    } else {
        Status::Exited(-1)
    }
}

/// A pipe for the launcher's report: both ends close on exec (the child gets its copy on fd 3
/// through `dup2`, which clears that flag).
fn report_pipe() -> anyhow::Result<(File, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two fds on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe");
    }
    // SAFETY: fresh fds owned by nobody else.
    Ok(unsafe {
        (
            File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
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

/// Keeps a command's process group on the list a second Ctrl-C kills, while it runs.
struct GroupGuard(libc::pid_t);

impl GroupGuard {
    fn register(pgid: libc::pid_t) -> GroupGuard {
        crate::base::interrupt::register_group(pgid);
        GroupGuard(pgid)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        crate::base::interrupt::unregister_group(self.0);
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: killpg only sends a signal; a group that is gone yields ESRCH, which is fine.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }
}

/// Reap `pid` with its resource usage; `nohang` returns `None` while it still runs.
fn wait4(pid: libc::pid_t, nohang: bool) -> std::io::Result<Option<(libc::c_int, libc::rusage)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if nohang { libc::WNOHANG } else { 0 };
    loop {
        // SAFETY: valid pointers to locals; pid is our own child.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if r == pid {
            return Ok(Some((status, usage)));
        }
        if r == 0 {
            return Ok(None);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Takes a stream's bytes as they come, with bounded memory: the first `keep` bytes whole,
/// for each regex group 1 of the first line matching it, and a tail.
///
/// A line longer than `MAX_LINE` is matched on its first `MAX_LINE` bytes and, failing
/// that, on its last `MAX_LINE` bytes, so a metric printed at the end of a huge line (after
/// progress output without newlines, say) is still found.
struct StreamReader {
    regexes: Vec<regex::Regex>,
    keep: usize,
    kept: Vec<u8>,
    truncated: bool,
    found: Vec<Option<String>>,
    /// The start of the current line (up to `MAX_LINE` bytes).
    line: Vec<u8>,
    /// The bytes of the current line after `line`, of which the last `MAX_LINE + 1` count.
    line_end: Vec<u8>,
    tail: Vec<u8>,
}

impl StreamReader {
    fn new(regexes: Vec<regex::Regex>, keep: usize) -> Self {
        StreamReader {
            found: vec![None; regexes.len()],
            regexes,
            keep,
            kept: Vec::new(),
            truncated: false,
            line: Vec::new(),
            line_end: Vec::new(),
            tail: Vec::new(),
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if self.kept.len() < self.keep {
            let take = (self.keep - self.kept.len()).min(chunk.len());
            self.kept.extend_from_slice(&chunk[..take]);
            self.truncated |= take < chunk.len();
        } else if self.keep > 0 {
            self.truncated = true;
        }
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
        if self.all_found() {
            return;
        }
        let mut rest = chunk;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            self.push_line(&rest[..nl]);
            self.scan_line();
            if self.all_found() {
                return;
            }
            rest = &rest[nl + 1..];
        }
        self.push_line(rest);
    }

    /// Every regex has matched (true when there are none): later lines need no scanning.
    fn all_found(&self) -> bool {
        self.found.iter().all(Option::is_some)
    }

    /// Add a part of the current line.
    fn push_line(&mut self, part: &[u8]) {
        let take = (MAX_LINE - self.line.len().min(MAX_LINE)).min(part.len());
        self.line.extend_from_slice(&part[..take]);
        let over = &part[take..];
        if over.is_empty() {
            return;
        }
        self.line_end.extend_from_slice(over);
        if self.line_end.len() > 2 * (MAX_LINE + 1) {
            self.line_end.drain(..self.line_end.len() - (MAX_LINE + 1));
        }
    }

    /// Match the line just ended, and start a new one.
    fn scan_line(&mut self) {
        if !self.all_found() {
            let text = String::from_utf8_lossy(&self.line);
            // The end of an over-long line. Its first character is context only, so that
            // `^` cannot match in the middle of the line.
            let end = (!self.line_end.is_empty()).then(|| {
                String::from_utf8_lossy(
                    &self.line_end[self.line_end.len().saturating_sub(MAX_LINE + 1)..],
                )
            });
            for (re, found) in self.regexes.iter().zip(self.found.iter_mut()) {
                if found.is_some() {
                    continue;
                }
                *found = re
                    .captures(&text)
                    .and_then(|c| c.get(1).map(|m| m.as_str().to_string()));
                if let (None, Some(end)) = (&found, &end) {
                    if let Some((from, _)) = end.char_indices().nth(1) {
                        *found = re
                            .captures_at(end, from)
                            .and_then(|c| c.get(1).map(|m| m.as_str().to_string()));
                    }
                }
            }
        }
        self.line.clear();
        self.line_end.clear();
    }

    /// (kept bytes, truncated, first match of each regex, tail)
    fn finish(mut self) -> (Vec<u8>, bool, Vec<Option<String>>, Vec<u8>) {
        if !self.line.is_empty() {
            self.scan_line();
        }
        if self.tail.len() > TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
        (self.kept, self.truncated, self.found, self.tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matched(regex: &str, chunks: &[&[u8]]) -> Option<String> {
        let mut r = StreamReader::new(vec![regex::Regex::new(regex).unwrap()], 0);
        for c in chunks {
            r.feed(c);
        }
        r.finish().2.pop().flatten()
    }

    #[test]
    fn each_regex_finds_its_own_first_line() {
        let res = ["^a: ([0-9]+)", "^b: ([0-9]+)", "^c: ([0-9]+)"]
            .map(|r| regex::Regex::new(r).unwrap())
            .to_vec();
        let mut r = StreamReader::new(res, 0);
        r.feed(b"b: 1\na: 2\nb: 3\n");
        assert_eq!(r.finish().2, [Some("2".into()), Some("1".into()), None]);
    }

    #[test]
    fn lines_split_across_chunks_match() {
        assert_eq!(
            matched(
                "^value: ([0-9]+)",
                &[b"noise\nval", b"ue: 4", b"2\nvalue: 7\n"]
            ),
            Some("42".into())
        );
        assert_eq!(
            matched("^value: ([0-9]+)", &[b"x\nvalue: 9"]),
            Some("9".into())
        );
        assert_eq!(matched("^value: ([0-9]+)", &[b"x value: 9\n"]), None);
    }

    #[test]
    fn over_long_lines_match_at_start_or_end_only() {
        let long = vec![b'y'; 3 * MAX_LINE + 17];
        // At the end of a huge line, after it in another chunk.
        assert_eq!(
            matched("value: ([0-9]+)", &[&long, &long, b"value: 5"]),
            Some("5".into())
        );
        assert_eq!(
            matched("value: ([0-9]+)", &[&long, b"value: 6\n"]),
            Some("6".into())
        );
        // `^` never matches inside a line, whatever the window.
        let mut mid = vec![b'y'; MAX_LINE + 5];
        mid.extend_from_slice(b"value: 7");
        let tail_start = mid.len() - 8;
        assert!(tail_start > MAX_LINE);
        assert_eq!(matched("^value: ([0-9]+)", &[&mid, b"\n"]), None);
        let mut exact = vec![b'y'; MAX_LINE + MAX_LINE / 2];
        exact.extend_from_slice(b"value: 8");
        exact.extend(vec![b'z'; MAX_LINE + 1 - 8]);
        assert_eq!(matched("^value: ([0-9]+)", &[&exact, b"\n"]), None);
        assert_eq!(matched("value: ([0-9]+)", &[&exact]), None);
        let mut second = vec![b'y'; MAX_LINE + MAX_LINE / 2];
        second.extend_from_slice(b"value: 9");
        second.extend(vec![b'z'; MAX_LINE - 8]);
        assert_eq!(matched("^value: ([0-9]+)", &[&second]), None);
        assert_eq!(matched("value: ([0-9]+)", &[&second]), Some("9".into()));
        // The start of a long line still counts, and the next line after it.
        let mut start = b"value: 3".to_vec();
        start.extend_from_slice(&long);
        assert_eq!(matched("^value: ([0-9]+)", &[&start]), Some("3".into()));
        assert_eq!(
            matched("^value: ([0-9]+)", &[&long, b"\nvalue: 4\n"]),
            Some("4".into())
        );
    }
}
