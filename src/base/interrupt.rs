//! Ctrl-C, SIGTERM and SIGHUP: the first of them asks perfbisect to stop (after the run in
//! flight, or now for builds in flight, whose finished siblings are kept); a second one ends
//! the process at once, killing the process groups of the commands it runs (they are in
//! groups of their own, so the terminal's Ctrl-C does not reach them). Messages name the
//! signal, and the exit code is 128 + its number (130 for Ctrl-C, 143 for SIGTERM, 129 for
//! SIGHUP), as a service manager or a CI runner that sent it expects. What was kept (builds
//! cached, runs stored) is counted here, so the message at the end can say it.
//!
//! The handler only records the signal and writes its number to a pipe (all a signal handler
//! may safely do); a thread of its own reads it and does the rest.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Raised by the first SIGINT, SIGTERM or SIGHUP.
pub static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The signal that asked perfbisect to stop (0 before any came).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The write end of the pipe the handler writes signal numbers to (-1 before install).
static PIPE: AtomicI32 = AtomicI32::new(-1);

/// The signals that stop perfbisect.
const STOPPING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The name of a stopping signal as messages say it.
pub fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "Ctrl-C (SIGINT)",
    }
}

/// The signal that stopped perfbisect (SIGINT when none was recorded: an [`Interrupted`] made
/// by a test, say).
pub fn signal() -> libc::c_int {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => libc::SIGINT,
        s => s,
    }
}

/// The exit code of a stop by [`signal`]: 128 + its number (130 for Ctrl-C).
pub fn exit_code() -> i32 {
    128 + signal()
}

/// What perfbisect is doing now, for the first Ctrl-C's message.
static ACTIVITY: AtomicU8 = AtomicU8::new(Activity::Other as u8);
/// Builds cached and runs stored by this process.
static KEPT_BUILDS: AtomicUsize = AtomicUsize::new(0);
static KEPT_RUNS: AtomicUsize = AtomicUsize::new(0);

/// What is under way when Ctrl-C comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Neither building nor running a test (reading the store, git, a report).
    Other = 0,
    /// Builds are running (they are stopped at once; finished ones are kept).
    Building = 1,
    /// A test's runs are under way (the run in flight is finished and stored).
    Measuring = 2,
}

/// Marks what is under way until dropped (then what was before is restored).
pub struct Doing(u8);

impl Drop for Doing {
    fn drop(&mut self) {
        ACTIVITY.store(self.0, Ordering::SeqCst);
    }
}

/// `a` is under way until the returned guard is dropped.
pub fn doing(a: Activity) -> Doing {
    Doing(ACTIVITY.swap(a as u8, Ordering::SeqCst))
}

/// A build was cached.
pub fn kept_build() {
    KEPT_BUILDS.fetch_add(1, Ordering::SeqCst);
}

/// A run was stored.
pub fn kept_run() {
    KEPT_RUNS.fetch_add(1, Ordering::SeqCst);
}

/// What this process kept: "3 builds cached and 12 runs stored".
pub fn kept() -> String {
    let (b, r) = (
        KEPT_BUILDS.load(Ordering::SeqCst),
        KEPT_RUNS.load(Ordering::SeqCst),
    );
    format!(
        "{b} build{} cached and {r} run{} stored",
        if b == 1 { "" } else { "s" },
        if r == 1 { "" } else { "s" }
    )
}

/// The line the first stopping signal `sig` prints while `activity` is under way.
fn first_message(activity: u8, sig: libc::c_int) -> String {
    let what = match sig {
        libc::SIGINT => "interrupt received".to_string(),
        s => format!("{} received", signal_name(s)),
    };
    let again = match sig {
        libc::SIGINT => "Ctrl-C again to stop now".to_string(),
        s => format!("{} again to stop now", signal_name(s)),
    };
    match activity {
        a if a == Activity::Building as u8 => format!(
            "\nperfbisect: {what}, stopping the builds in flight (finished builds are kept; {again})"
        ),
        a if a == Activity::Measuring as u8 => {
            format!("\nperfbisect: {what}, stopping after the run in flight ({again})")
        }
        _ => format!("\nperfbisect: {what}, stopping ({again})"),
    }
}

/// Process groups of the commands running now (builds, tests, hooks).
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Install the handler once; later calls do nothing. A handler that cannot be installed is
/// reported as a warning on stderr: a signal then ends perfbisect at once, like `kill -9`
/// (what is stored stays stored, the run in flight is lost and commands it started live on).
pub fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| report_failure(try_install(), |w| eprintln!("{w}")));
}

/// Hand a failure to install the handler to `warn`.
fn report_failure(installed: std::io::Result<()>, warn: impl FnOnce(&str)) {
    if let Err(e) = installed {
        warn(&install_warning(&e));
    }
}

/// The signal handler: async-signal-safe only (an atomic store and a write).
extern "C" fn on_signal(sig: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    let fd = PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write is async-signal-safe; a full pipe drops the byte (signals keep coming).
        unsafe {
            libc::write(fd, (&b as *const u8).cast(), 1);
        }
    }
}

/// Set the handler of SIGINT, SIGTERM and SIGHUP, and start the thread that acts on them.
fn try_install() -> std::io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two fds; both close on exec, so no command inherits them.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (read, write) = (fds[0], fds[1]);
    PIPE.store(write, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("perfbisect-signals".into())
        .spawn(move || loop {
            let mut b = 0u8;
            // SAFETY: reading one byte from our own pipe.
            let n = unsafe { libc::read(read, (&mut b as *mut u8).cast(), 1) };
            if n == 1 {
                on_stop(libc::c_int::from(b));
            } else if n < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return;
            }
        })?;
    for sig in STOPPING {
        // SAFETY: a zeroed sigaction with our handler, SA_RESTART so that reads and waits
        // elsewhere go on; sigaction only changes this process's disposition.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// What a stopping signal `sig` does, on the signal thread: the first asks to stop, the next
/// ends perfbisect now with 128 + its number.
fn on_stop(sig: libc::c_int) {
    if REQUESTED.swap(true, Ordering::SeqCst) {
        eprintln!(
            "\nperfbisect: {} again, stopping now",
            match sig {
                libc::SIGINT => "interrupted".to_string(),
                s => format!("{} received", signal_name(s)),
            }
        );
        kill_groups();
        std::process::exit(128 + sig);
    }
    eprintln!("{}", first_message(ACTIVITY.load(Ordering::SeqCst), sig));
}

/// What is printed when the handler cannot be installed.
fn install_warning(e: &std::io::Error) -> String {
    format!(
        "perfbisect: warning: cannot install the Ctrl-C handler ({e}); Ctrl-C will stop perfbisect \
         at once, losing the run in flight and leaving the commands it runs behind"
    )
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// A command's process group, to be killed if perfbisect is stopped at once.
pub fn register_group(pgid: i32) {
    if let Ok(mut g) = GROUPS.lock() {
        g.push(pgid);
    }
}

/// The command of `pgid` is done (or has to outlive perfbisect, like a `setup` server).
pub fn unregister_group(pgid: i32) {
    if let Ok(mut g) = GROUPS.lock() {
        g.retain(|&p| p != pgid);
    }
}

fn kill_groups() {
    let groups = match GROUPS.lock() {
        Ok(g) => g.clone(),
        Err(e) => e.into_inner().clone(),
    };
    for pgid in groups {
        // SAFETY: killpg only sends a signal; a group that is gone yields ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// The run was stopped by Ctrl-C (or SIGTERM, SIGHUP) after storing what was measured: exit
/// code 128 + the signal's number ([`exit_code`]). Its message names the signal and says what
/// this process kept.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}; {}, everything measured so far is stored: run the same command again to resume",
    stopped_by(signal()),
    kept()
)]
pub struct Interrupted;

/// "interrupted", or which signal stopped perfbisect.
fn stopped_by(sig: libc::c_int) -> String {
    match sig {
        libc::SIGINT => "interrupted".to_string(),
        s => format!("stopped by {}", signal_name(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handler_that_cannot_be_installed_is_reported() {
        let e = std::io::Error::from_raw_os_error(libc::EINVAL);
        let cause = e.to_string();
        let mut said = Vec::new();
        report_failure(Err(e), |w| said.push(w.to_string()));
        assert_eq!(said.len(), 1);
        let w = &said[0];
        assert!(
            w.starts_with("perfbisect: warning: cannot install the Ctrl-C handler ("),
            "{w}"
        );
        assert!(w.contains(&cause) && w.contains("at once"), "{w}");
        let mut said = Vec::new();
        report_failure(Ok(()), |w| said.push(w.to_string()));
        assert!(said.is_empty());
    }

    #[test]
    fn messages_name_the_signal() {
        let m = first_message(Activity::Measuring as u8, libc::SIGTERM);
        assert!(
            m.contains("SIGTERM received") && !m.contains("Ctrl-C"),
            "{m}"
        );
        let m = first_message(Activity::Building as u8, libc::SIGHUP);
        assert!(m.contains("SIGHUP again to stop now"), "{m}");
        let m = first_message(Activity::Other as u8, libc::SIGINT);
        assert!(m.contains("Ctrl-C again"), "{m}");
        assert_eq!(stopped_by(libc::SIGTERM), "stopped by SIGTERM");
        assert_eq!(stopped_by(libc::SIGINT), "interrupted");
    }
}
