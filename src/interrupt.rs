//! Ctrl-C handling: the first SIGINT asks perfbisect to stop after the run in flight; a
//! second one ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Raised by the first SIGINT or SIGTERM.
pub static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Install the handler once; later calls do nothing.
pub fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if REQUESTED.swap(true, Ordering::SeqCst) {
                eprintln!("\nperfbisect: interrupted again, stopping now");
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

/// The run was stopped by Ctrl-C after storing what was measured: exit code 130.
#[derive(Debug, thiserror::Error)]
#[error("interrupted; everything measured so far is stored: run the same command again to resume")]
pub struct Interrupted;
