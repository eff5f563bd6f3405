//! perfbisect: find which commit moved a performance metric.
//!
//! The library holds everything; `main.rs` only calls [`main_with_args`].

pub mod base;
pub mod bisect;
pub mod build;
pub mod cli;
pub mod commands;
pub mod config;
pub mod error;
pub mod git;
pub mod guide;
pub mod import;
pub mod jobs;
pub mod measure;
pub mod pipeline;
pub mod process;
pub mod publish;
pub mod report;
pub mod scaffold;
pub mod stats;
pub mod store;

/// Parse arguments, run the command, print errors, and return the process exit code.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    commands::dispatch(args)
}

/// Process-wide settings of the binary: a closed stdout pipe (`perfbisect show | head`) ends
/// the process quietly like other Unix tools, and an internal error prints one line instead of
/// a backtrace.
pub fn install_process_defaults() {
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        std::panic::set_hook(Box::new(|info| {
            eprintln!("perfbisect: internal error: {info}; please report it (RUST_BACKTRACE=1 shows where)");
        }));
    }
}
