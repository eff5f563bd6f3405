//! A small launcher between perfbisect and each run of a `max-rss` test, so the peak resident
//! set measured is the test's own.
//!
//! Linux keeps a process's peak RSS across `execve` (the peak of the image it replaced is
//! folded into it), and a forked child starts with a copy of its parent's memory: so the
//! `ru_maxrss` that `wait4` reports for any child of perfbisect is at least perfbisect's own
//! peak, tens of MB once a large store is loaded. That floor would hide any change of a small
//! program's memory. The launcher does nothing but spawn the command, `wait4` for it and write
//! the child's `rusage` to a pipe: the command is then forked from a process about 2 MB small,
//! as under GNU time. It is the small `perfbisect-launch` binary installed beside
//! `perfbisect`, or, when that is missing, `perfbisect` itself in launcher mode (about 4 MB).

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// First argument that puts the binary in launcher mode.
pub const ARG: &str = "__perfbisect-launch";
/// Argument (before the program) that makes the launcher count the command's user-space
/// instructions with the hardware counter, inherited by every child, and report them.
pub const COUNT_ARG: &str = "--count-instructions";
/// The descriptor the launcher writes the child's resource usage to.
pub const FD: i32 = 3;

static LAUNCHER: OnceLock<(PathBuf, bool)> = OnceLock::new();

/// The small launcher binary, installed beside `perfbisect`.
pub const BINARY: &str = "perfbisect-launch";

/// In the perfbisect binary: runs of `max-rss` tests go through the launcher from now on.
pub fn enable() {
    if let Ok(me) = std::env::current_exe() {
        let small = me.with_file_name(BINARY);
        let _ = LAUNCHER.set(if small.is_file() {
            (small, false)
        } else {
            (me, true)
        });
    }
}

/// The launcher, when enabled (not in the library's own unit tests), and whether it needs
/// [`ARG`] first (perfbisect itself) or not (the small binary).
pub fn launcher() -> Option<(&'static Path, bool)> {
    LAUNCHER.get().map(|(p, arg)| (p.as_path(), *arg))
}

/// `perfbisect-launch PROGRAM ARGS...`: the small binary's whole `main`.
pub fn main() -> i32 {
    let rest: Vec<OsString> = std::env::args_os().skip(1).collect();
    launch(&rest)
}

/// Resource usage of the launched command, as the launcher reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub max_rss: u64,
    pub user: f64,
    pub sys: f64,
    /// With [`COUNT_ARG`]: the instructions counted, or why none could be.
    pub instructions: Option<Result<u64, String>>,
    /// The command's wall time as the launcher clocked it, from just before its spawn to its
    /// reaping: the run's own, without the launcher's exec (about 1 ms) in it.
    pub wall: Option<f64>,
}

/// Parse the launcher's report: `maxrss_kib utime_us stime_us`, then with [`COUNT_ARG`] the
/// instructions, or `error: why` on a line of its own; and a line `wall_ns N`.
pub fn parse(report: &str) -> Option<Usage> {
    let wall = report
        .lines()
        .find_map(|l| l.strip_prefix("wall_ns "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map(|ns| ns as f64 / 1e9);
    let report: String = report
        .lines()
        .filter(|l| !l.starts_with("wall_ns "))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut lines = report.lines();
    let mut it = lines
        .next()?
        .split_whitespace()
        .map(|w| w.parse::<u64>().ok());
    let (rss, user, sys) = (it.next()??, it.next()??, it.next()??);
    let instructions = match it.next() {
        Some(Some(n)) => Some(Ok(n)),
        _ => lines
            .next()
            .and_then(|l| l.strip_prefix("error: "))
            .map(|e| Err(e.to_string())),
    };
    Some(Usage {
        max_rss: rss.saturating_mul(1024),
        user: user as f64 / 1e6,
        sys: sys as f64 / 1e6,
        instructions,
        wall,
    })
}

/// In launcher mode (`ARG PROGRAM ARGS...`): run the program, report its usage on [`FD`],
/// and end the way it ended (same exit code, or the same signal). Returns otherwise.
pub fn run_if_launcher() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(std::ffi::OsStr::new(ARG)) {
        return;
    }
    let rest: Vec<OsString> = args.collect();
    std::process::exit(launch(&rest));
}

/// In a child between fork and exec: SIGKILL it when the process that forked it (`parent`)
/// dies, so a test never outlives a `kill -9` of perfbisect (or of this launcher). A parent
/// already gone before the call would never send it: then the child ends itself now.
///
/// # Safety
/// Only async-signal-safe calls: fit for a `pre_exec` hook or a forked child.
pub unsafe fn set_parent_death_signal(parent: libc::pid_t) {
    // SAFETY: prctl, getppid and kill are async-signal-safe system calls.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// Make the child `cmd` starts get SIGKILL when this process dies
/// ([`set_parent_death_signal`]). The signal follows the thread that forked: `cmd` must be
/// waited for by the thread that spawns it, as every command perfbisect runs is.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid has no failure mode.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the hook only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_death_signal(parent);
            Ok(())
        });
    }
}

/// The launcher's end when perfbisect dies: its whole process group (the launcher leads it:
/// the command and everything it started that stayed in the group) is killed, not only the
/// command's first process.
extern "C" fn end_group(_: libc::c_int) {
    // SAFETY: kill(2) is async-signal-safe; 0 is this process's group.
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
}

/// When perfbisect dies (a kill -9, under `timeout` or `setsid` or a CI runner), SIGTERM comes
/// to the launcher instead of the SIGKILL perfbisect asked for before `exec` (which would end
/// only the launcher), and ends the group ([`end_group`]). The SIGKILL stays armed until the
/// handler is in place and SIGTERM replaces it in one call, so there is no moment without one.
fn end_group_with_parent() {
    // SAFETY: installing a handler that only calls kill(2), then changing this process's
    // parent-death signal.
    unsafe {
        libc::signal(libc::SIGTERM, end_group as *const () as libc::sighandler_t);
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGTERM as libc::c_ulong,
            0,
            0,
            0,
        );
    }
}

fn launch(rest: &[OsString]) -> i32 {
    // SAFETY: FD was set up by perfbisect for this process; the command must not inherit it.
    unsafe {
        libc::fcntl(FD, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    end_group_with_parent();
    let (count, rest) = match rest.split_first() {
        Some((a, more)) if a == COUNT_ARG => (true, more),
        _ => (false, rest),
    };
    let Some((program, args)) = rest.split_first() else {
        eprintln!("perfbisect: launcher: nothing to run");
        return 127;
    };
    let started = std::time::Instant::now();
    let (pid, counter) = if count {
        match spawn_counted(program, args) {
            Ok(x) => x,
            Err(e) => {
                report_line(&format!("0 0 0\nerror: {e}"));
                return 127;
            }
        }
    } else {
        // No hook before exec, so std spawns with posix_spawn (no copy of this process): the
        // command needs no parent-death signal of its own, as the group it is in ends with
        // this launcher's ([`end_group`]), and perfbisect kills the group on a timeout.
        let mut cmd = std::process::Command::new(program);
        cmd.args(args);
        match cmd.spawn() {
            Ok(c) => (c.id() as libc::pid_t, None),
            Err(e) => {
                eprintln!(
                    "perfbisect: launcher: cannot start {}: {e}",
                    program.to_string_lossy()
                );
                return 127;
            }
        }
    };
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting for our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return 127;
        }
    }
    let wall_ns = started.elapsed().as_nanos();
    let us = |tv: libc::timeval| (tv.tv_sec.max(0) as u64) * 1_000_000 + tv.tv_usec.max(0) as u64;
    let counted = match counter {
        None => String::new(),
        Some(Ok(mut c)) => match c.read() {
            Ok(n) => format!(" {n}"),
            Err(e) => format!("\nerror: cannot read the instructions counter: {e}"),
        },
        Some(Err(e)) => format!("\nerror: {e}"),
    };
    report_line(&format!(
        "{} {} {}{counted}\nwall_ns {wall_ns}",
        usage.ru_maxrss.max(0),
        us(usage.ru_utime),
        us(usage.ru_stime)
    ));
    if libc::WIFEXITED(status) {
        return libc::WEXITSTATUS(status);
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restoring the default action and re-raising ends this process the way the
        // command ended, so perfbisect sees the same signal.
        // No core file of the launcher: the command's own, if any, is already written.
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return 128 + sig;
    }
    127
}

/// Write the report on [`FD`] (and close it), when there is one to write to: a launcher
/// started without the pipe (by hand, say) reports nothing.
fn report_line(text: &str) {
    // SAFETY: F_GETFD only reads the descriptor's flags; -1 is a descriptor not open.
    if unsafe { libc::fcntl(FD, libc::F_GETFD) } == -1 {
        return;
    }
    // SAFETY: FD is open and ours (set up by perfbisect); File takes ownership and closes it.
    let mut report = unsafe { std::fs::File::from_raw_fd(FD) };
    let _ = writeln!(report, "{text}");
}

/// Fork the command stopped before `exec`, open the instructions counter on it (user space
/// only, inherited by its children, enabled by its `exec`: what `perf stat -e instructions:u`
/// does), then let it go. The counter's error, if any, comes back for the report; the command
/// runs either way only when the counter could be opened.
#[allow(clippy::type_complexity)]
fn spawn_counted(
    program: &OsString,
    args: &[OsString],
) -> Result<(libc::pid_t, Option<Result<perf_event::Counter, String>>), String> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c =
        |s: &OsString| CString::new(s.as_bytes()).map_err(|_| "a NUL in an argument".to_string());
    let prog = c(program)?;
    let mut owned = vec![prog.clone()];
    for a in args {
        owned.push(c(a)?);
    }
    let mut argv: Vec<*const libc::c_char> = owned.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: getpid has no failure mode.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the launcher is single-threaded; the child only calls async-signal-safe
    // functions (close, prctl, getppid, kill, read, execvp, _exit) before exec.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            libc::close(w);
            set_parent_death_signal(parent);
            let mut go = 0u8;
            if libc::read(r, (&mut go as *mut u8).cast(), 1) != 1 {
                libc::_exit(127);
            }
            libc::execvp(prog.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: our end of the pipe.
    unsafe { libc::close(r) };
    let counter = perf_event::Builder::new(perf_event::events::Hardware::INSTRUCTIONS)
        .observe_pid(pid)
        .any_cpu()
        .inherit(true)
        .enable_on_exec(true)
        .exclude_kernel(true)
        .exclude_hv(true)
        .build()
        .map_err(|e| format!("cannot open the instructions counter (perf_event_open): {e}"));
    if counter.is_ok() {
        // SAFETY: writing one byte to our pipe end.
        unsafe {
            let go = 1u8;
            libc::write(w, (&go as *const u8).cast(), 1);
        }
    }
    // SAFETY: closing our end; without the byte the child exits 127 at once.
    unsafe { libc::close(w) };
    Ok((pid, Some(counter)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_parse_or_are_refused() {
        assert_eq!(
            parse("1536 2500 1000000\n"),
            Some(Usage {
                max_rss: 1536 * 1024,
                user: 0.0025,
                sys: 1.0,
                instructions: None,
                wall: None,
            })
        );
        assert_eq!(
            parse("1536 2500 1000000 77\nwall_ns 2500000\n").map(|u| (u.wall, u.instructions)),
            Some((Some(0.0025), Some(Ok(77))))
        );
        assert_eq!(
            parse("1536 2500 1000000 12126963\n").unwrap().instructions,
            Some(Ok(12_126_963))
        );
        assert_eq!(
            parse("1536 2500 1000000\nerror: no PMU\n")
                .unwrap()
                .instructions,
            Some(Err("no PMU".into()))
        );
        assert_eq!(parse(""), None);
        assert_eq!(parse("12 x 3"), None);
    }
}
