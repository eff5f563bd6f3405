//! Ctrl-C handling: the first SIGINT asks perfbisect to stop (after the run in flight, or
//! now for builds in flight, whose finished siblings are kept); a second one ends the process
//! at once, killing the process groups of the commands it runs (they are in groups of their
//! own, so the terminal's Ctrl-C does not reach them). What was kept (builds cached, runs
//! stored) is counted here, so the message at the end can say it.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Raised by the first SIGINT.
pub static REQUESTED: AtomicBool = AtomicBool::new(false);

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

/// The line the first Ctrl-C prints while `activity` is under way.
fn first_message(activity: u8) -> &'static str {
    match activity {
        a if a == Activity::Building as u8 => {
            "\nperfbisect: interrupt received, stopping the builds in flight (finished builds are kept; Ctrl-C again to stop now)"
        }
        a if a == Activity::Measuring as u8 => {
            "\nperfbisect: interrupt received, stopping after the run in flight (Ctrl-C again to stop now)"
        }
        _ => "\nperfbisect: interrupt received, stopping (Ctrl-C again to stop now)",
    }
}

/// Process groups of the commands running now (builds, tests, hooks).
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Install the handler once; later calls do nothing. A handler that cannot be installed is
/// reported as a warning on stderr: Ctrl-C then ends perfbisect at once, like `kill -9`
/// (what is stored stays stored, the run in flight is lost and commands it started live on).
pub fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| report_failure(try_install(), |w| eprintln!("{w}")));
}

/// Hand a failure to install the handler to `warn`.
fn report_failure(installed: Result<(), ctrlc::Error>, warn: impl FnOnce(&str)) {
    if let Err(e) = installed {
        warn(&install_warning(&e));
    }
}

/// Set the process's Ctrl-C (and SIGTERM, SIGHUP) handler.
fn try_install() -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            eprintln!("\nperfbisect: interrupted again, stopping now");
            kill_groups();
            std::process::exit(130);
        }
        eprintln!("{}", first_message(ACTIVITY.load(Ordering::SeqCst)));
    })
}

/// What is printed when the handler cannot be installed.
fn install_warning(e: &ctrlc::Error) -> String {
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

/// The run was stopped by Ctrl-C after storing what was measured: exit code 130. Its message
/// says what this process kept.
#[derive(Debug, thiserror::Error)]
#[error(
    "interrupted; {}, everything measured so far is stored: run the same command again to resume",
    kept()
)]
pub struct Interrupted;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handler_that_cannot_be_installed_is_reported() {
        for e in [
            ctrlc::Error::MultipleHandlers,
            ctrlc::Error::System(std::io::Error::from_raw_os_error(libc::EINVAL)),
        ] {
            let cause = e.to_string();
            let mut said = Vec::new();
            report_failure(Err(e), |w| said.push(w.to_string()));
            assert_eq!(said.len(), 1);
            let w = &said[0];
            assert!(
                w.starts_with("perfbisect: warning: cannot install the Ctrl-C handler ("),
                "{w}"
            );
            assert!(w.contains(&cause), "{w}");
            assert!(w.contains("at once"), "{w}");
        }
        let mut said = Vec::new();
        report_failure(Ok(()), |w| said.push(w.to_string()));
        assert!(said.is_empty());
    }
}
