//! perfbisect: find which commit moved a performance metric.
//!
//! The library holds everything; `main.rs` only calls [`main_with_args`].

pub mod bisect;
pub mod build;
pub mod cli;
pub mod commands;
pub mod config;
pub mod demo;
pub mod error;
pub mod git;
pub mod interrupt;
pub mod measure;
pub mod pipeline;
pub mod progress;
pub mod report;
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
