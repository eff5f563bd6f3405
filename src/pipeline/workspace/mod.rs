//! The workspace every command works in, and the stages every command shares: `context`
//! (the workspace itself: repository, config, cache and its lock, this machine's fingerprint,
//! notes and warnings), `samples` (load what is stored), `range` (the commits a command is
//! about), `build` (build what is missing) and `measure` (measure and store), each an
//! `impl Workspace` of its own; and `bench`, one test's handle on all of them for a search.

mod bench;
mod build;
mod context;
mod measure;
mod range;
mod samples;

pub use bench::{Bench, BuildsBeside, CheckedBeside, ChecksBeside};
pub use context::{Locations, Verbosity, Workspace};
pub use measure::{Batch, SessionSample, Visit};
