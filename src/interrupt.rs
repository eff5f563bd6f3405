//! Ctrl-C handling: the first SIGINT asks perfbisect to stop after the run in flight; a
//! second one ends the process at once, killing the process groups of the commands it runs
//! (they are in groups of their own, so the terminal's Ctrl-C does not reach them).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Raised by the first SIGINT.
pub static REQUESTED: AtomicBool = AtomicBool::new(false);

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
        eprintln!("\nperfbisect: interrupt received, stopping after the run in flight (Ctrl-C again to stop now)");
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

/// The run was stopped by Ctrl-C after storing what was measured: exit code 130.
#[derive(Debug, thiserror::Error)]
#[error("interrupted; everything measured so far is stored: run the same command again to resume")]
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
