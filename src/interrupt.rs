//! Ctrl-C handling: the first SIGINT asks perfbisect to stop after the run in flight; a
//! second one ends the process at once, killing the process groups of the commands it runs
//! (they are in groups of their own, so the terminal's Ctrl-C does not reach them).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Raised by the first SIGINT.
pub static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Process groups of the commands running now (builds, tests, hooks).
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Install the handler once; later calls do nothing.
pub fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if REQUESTED.swap(true, Ordering::SeqCst) {
                eprintln!("\nperfbisect: interrupted again, stopping now");
                kill_groups();
                std::process::exit(130);
            }
            eprintln!("\nperfbisect: interrupt received, stopping after the run in flight (Ctrl-C again to stop now)");
        });
    });
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
